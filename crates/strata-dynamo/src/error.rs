//! [`ApiError`]: a DynamoDB error, with its `__type`, HTTP status and JSON body.

use serde_json::{json, Value as Json};

/// The kinds of error DynamoDB answers with (the part of `__type` after `#`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A malformed or invalid request (bad parameter, bad expression, type mismatch, limit).
    Validation,
    /// The request body is not the JSON the operation takes (wrong JSON type of a field).
    Serialization,
    /// The table (or index) does not exist.
    ResourceNotFound,
    /// The table exists already, or is being created/deleted.
    ResourceInUse,
    /// A condition of PutItem/UpdateItem/DeleteItem did not hold.
    ConditionalCheckFailed,
    /// TransactWriteItems/TransactGetItems was cancelled; see the cancellation reasons.
    TransactionCanceled,
    /// Another transaction holds one of the items.
    TransactionConflict,
    /// The `X-Amz-Target` operation does not exist.
    UnknownOperation,
    /// A limit of the account or table (e.g. too many tables).
    LimitExceeded,
    /// Bad or missing credentials (HTTP layer).
    UnrecognizedClient,
    /// A signature that does not verify (HTTP layer).
    InvalidSignature,
    /// A request without authentication (HTTP layer).
    MissingAuthenticationToken,
    /// A failure of the server or its storage; the request may be retried.
    InternalServerError,
}

impl ErrorKind {
    /// The exception name, e.g. `ValidationException`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Validation => "ValidationException",
            ErrorKind::Serialization => "SerializationException",
            ErrorKind::ResourceNotFound => "ResourceNotFoundException",
            ErrorKind::ResourceInUse => "ResourceInUseException",
            ErrorKind::ConditionalCheckFailed => "ConditionalCheckFailedException",
            ErrorKind::TransactionCanceled => "TransactionCanceledException",
            ErrorKind::TransactionConflict => "TransactionConflictException",
            ErrorKind::UnknownOperation => "UnknownOperationException",
            ErrorKind::LimitExceeded => "LimitExceededException",
            ErrorKind::UnrecognizedClient => "UnrecognizedClientException",
            ErrorKind::InvalidSignature => "InvalidSignatureException",
            ErrorKind::MissingAuthenticationToken => "MissingAuthenticationTokenException",
            ErrorKind::InternalServerError => "InternalServerError",
        }
    }

    /// The namespace DynamoDB puts before `#` in `__type`.
    fn namespace(self) -> &'static str {
        match self {
            ErrorKind::Validation => "com.amazon.coral.validate",
            ErrorKind::Serialization | ErrorKind::UnknownOperation => "com.amazon.coral.service",
            ErrorKind::UnrecognizedClient
            | ErrorKind::InvalidSignature
            | ErrorKind::MissingAuthenticationToken => "com.amazon.coral.service",
            _ => "com.amazonaws.dynamodb.v20120810",
        }
    }

    /// The HTTP status DynamoDB answers with.
    pub fn status(self) -> u16 {
        match self {
            ErrorKind::InternalServerError => 500,
            ErrorKind::UnrecognizedClient
            | ErrorKind::InvalidSignature
            | ErrorKind::MissingAuthenticationToken => 400,
            _ => 400,
        }
    }
}

/// Why one action of a cancelled transaction failed (`CancellationReasons[i]`).
#[derive(Debug, Clone, PartialEq)]
pub struct CancellationReason {
    /// `None`, `ConditionalCheckFailed`, `TransactionConflict`, `ValidationError`, ...
    pub code: String,
    /// A message, absent for `None`.
    pub message: Option<String>,
    /// The item, when `ReturnValuesOnConditionCheckFailure` is `ALL_OLD`.
    pub item: Option<Json>,
}

impl CancellationReason {
    /// The reason of an action that did not fail.
    pub fn none() -> CancellationReason {
        CancellationReason {
            code: "None".into(),
            message: None,
            item: None,
        }
    }

    fn to_json(&self) -> Json {
        let mut o = serde_json::Map::new();
        o.insert("Code".into(), Json::String(self.code.clone()));
        if let Some(m) = &self.message {
            o.insert("Message".into(), Json::String(m.clone()));
        }
        if let Some(i) = &self.item {
            o.insert("Item".into(), i.clone());
        }
        Json::Object(o)
    }
}

/// An error answered to a DynamoDB request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", kind.name())]
pub struct ApiError {
    /// Which exception.
    pub kind: ErrorKind,
    /// The message DynamoDB would give.
    pub message: String,
    /// For [`ErrorKind::TransactionCanceled`]: one reason per action, in request order.
    pub cancellation_reasons: Vec<CancellationReason>,
    /// For [`ErrorKind::ConditionalCheckFailed`] with `ReturnValuesOnConditionCheckFailure`
    /// `ALL_OLD`: the item as it was (DynamoDB JSON).
    pub item: Option<Json>,
}

impl ApiError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ApiError {
        ApiError {
            kind,
            message: message.into(),
            cancellation_reasons: Vec::new(),
            item: None,
        }
    }

    /// A `ValidationException`.
    pub fn validation(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorKind::Validation, message)
    }

    /// A `ResourceNotFoundException` for a table.
    pub fn table_not_found(table: &str) -> ApiError {
        ApiError::new(
            ErrorKind::ResourceNotFound,
            format!("Requested resource not found: Table: {table} not found"),
        )
    }

    /// The `ConditionalCheckFailedException` of a failed condition.
    pub fn condition_failed() -> ApiError {
        ApiError::new(
            ErrorKind::ConditionalCheckFailed,
            "The conditional request failed",
        )
    }

    /// An `InternalServerError` (storage failure and the like).
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorKind::InternalServerError, message)
    }

    /// DynamoDB's `__type`, e.g. `com.amazon.coral.validate#ValidationException`.
    pub fn type_name(&self) -> String {
        format!("{}#{}", self.kind.namespace(), self.kind.name())
    }

    /// The HTTP status code of the answer.
    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    /// The JSON body of the answer: `{"__type": ..., "message": ...}`, plus
    /// `CancellationReasons` or `Item` where they apply.
    pub fn body_json(&self) -> Json {
        let mut o = serde_json::Map::new();
        o.insert("__type".into(), Json::String(self.type_name()));
        o.insert("message".into(), Json::String(self.message.clone()));
        if self.kind == ErrorKind::TransactionCanceled {
            o.insert(
                "CancellationReasons".into(),
                Json::Array(
                    self.cancellation_reasons
                        .iter()
                        .map(CancellationReason::to_json)
                        .collect(),
                ),
            );
        }
        if let Some(i) = &self.item {
            o.insert("Item".into(), i.clone());
        }
        Json::Object(o)
    }

    /// [`ApiError::body_json`] serialized.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&self.body_json()).unwrap_or_else(|_| {
            json!({"__type": self.type_name(), "message": "error"})
                .to_string()
                .into_bytes()
        })
    }
}

impl ApiError {
    /// The error of a request body that does not deserialize: a `ValidationException` for the
    /// problems DynamoDB reports so (bad attribute values, bad base64), a
    /// `SerializationException` for the rest (not JSON, a field of the wrong JSON type).
    pub fn from_json_error(e: &serde_json::Error) -> ApiError {
        let msg = e.to_string();
        if let Some(at) = msg.find(crate::types::VALIDATION_MARK) {
            let rest = &msg[at + crate::types::VALIDATION_MARK.len()..];
            let rest = match rest.rfind(" at line ") {
                Some(cut) => &rest[..cut],
                None => rest,
            };
            ApiError::validation(rest)
        } else {
            ApiError::new(ErrorKind::Serialization, msg)
        }
    }
}

impl From<strata::Error> for ApiError {
    fn from(e: strata::Error) -> ApiError {
        match e {
            strata::Error::TableNotFound(t) => ApiError::table_not_found(&t),
            e if e.is_invalid_input() => ApiError::validation(e.to_string()),
            e => ApiError::internal(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_shapes() {
        let e = ApiError::validation("bad");
        assert_eq!(
            e.type_name(),
            "com.amazon.coral.validate#ValidationException"
        );
        assert_eq!(e.status(), 400);
        let b: Json = serde_json::from_slice(&e.body()).unwrap();
        assert_eq!(b["message"], "bad");
        let e = ApiError::internal("disk");
        assert_eq!(e.status(), 500);
        let mut e = ApiError::new(ErrorKind::TransactionCanceled, "cancelled");
        e.cancellation_reasons = vec![CancellationReason::none()];
        let b = e.body_json();
        assert_eq!(b["CancellationReasons"][0]["Code"], "None");
        assert_eq!(
            b["__type"],
            "com.amazonaws.dynamodb.v20120810#TransactionCanceledException"
        );
    }
}
