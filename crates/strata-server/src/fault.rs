//! [`Fault`]: the errors the HTTP layer answers by itself, before a request reaches the API
//! (no target, unparsable JSON, bad signature, body too large), in DynamoDB's shapes.

/// Which protocol-level error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The body is not JSON (or is empty).
    Serialization,
    /// No `X-Amz-Target`, or not `DynamoDB_20120810.<Op>`.
    UnknownOperation,
    /// Auth required and no `Authorization` header.
    MissingAuthenticationToken,
    /// An `Authorization` header that is not a complete SigV4 header.
    IncompleteSignature,
    /// A signature that does not verify (or an expired one).
    InvalidSignature,
    /// An access key id the server does not know.
    UnrecognizedClient,
    /// The body is larger than the server's limit (HTTP 413).
    RequestTooLarge,
    /// A wrong method, path or content type (HTTP 404, as DynamoDB answers).
    NotFound,
    /// A failure in the server itself (HTTP 500).
    Internal,
}

/// A protocol-level error: kind and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Which error.
    pub kind: FaultKind,
    /// What went wrong (empty: the body carries no `message`, like DynamoDB's
    /// `SerializationException` for a body that is not JSON).
    pub message: String,
}

impl Fault {
    /// A fault of `kind` saying `message`.
    pub fn new(kind: FaultKind, message: impl Into<String>) -> Fault {
        Fault {
            kind,
            message: message.into(),
        }
    }

    /// DynamoDB's `__type`.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            FaultKind::Serialization => "com.amazon.coral.service#SerializationException",
            FaultKind::UnknownOperation => "com.amazon.coral.service#UnknownOperationException",
            FaultKind::MissingAuthenticationToken => {
                "com.amazon.coral.service#MissingAuthenticationTokenException"
            }
            FaultKind::IncompleteSignature => {
                "com.amazon.coral.service#IncompleteSignatureException"
            }
            FaultKind::InvalidSignature => "com.amazon.coral.service#InvalidSignatureException",
            FaultKind::UnrecognizedClient => "com.amazon.coral.service#UnrecognizedClientException",
            FaultKind::RequestTooLarge => "com.amazon.coral.service#RequestEntityTooLarge",
            FaultKind::NotFound => "com.amazon.coral.service#UnknownOperationException",
            FaultKind::Internal => "com.amazonaws.dynamodb.v20120810#InternalServerError",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self.kind {
            FaultKind::RequestTooLarge => 413,
            FaultKind::NotFound => 404,
            FaultKind::Internal => 500,
            _ => 400,
        }
    }

    /// The JSON body: `{"__type": ..., "message": ...}` (no `message` when it is empty).
    pub fn body(&self) -> Vec<u8> {
        let mut o = serde_json::Map::new();
        o.insert("__type".into(), self.type_name().into());
        if !self.message.is_empty() {
            o.insert("message".into(), self.message.clone().into());
        }
        serde_json::Value::Object(o).to_string().into_bytes()
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.type_name(), self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let f = Fault::new(FaultKind::Serialization, "");
        assert_eq!(
            f.body(),
            br#"{"__type":"com.amazon.coral.service#SerializationException"}"#
        );
        let f = Fault::new(FaultKind::InvalidSignature, "say \"no\"");
        let v: serde_json::Value = serde_json::from_slice(&f.body()).unwrap();
        assert_eq!(v["message"], "say \"no\"");
        assert_eq!(f.status(), 400);
        assert_eq!(Fault::new(FaultKind::RequestTooLarge, "").status(), 413);
    }
}
