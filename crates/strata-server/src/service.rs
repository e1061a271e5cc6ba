//! One HTTP request → one answer: health check, protocol checks (size, content type, target,
//! signature), then the API call on the blocking pool.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE, HOST};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::Semaphore;

use strata_dynamo::{CallContext, Dynamo};

use crate::fault::{Fault, FaultKind};
use crate::{sigv4, ServerConfig};

/// The `X-Amz-Target` prefix of DynamoDB's current API version.
pub const TARGET_PREFIX: &str = "DynamoDB_20120810.";

/// What every connection of one server shares.
pub(crate) struct Shared {
    pub(crate) dynamo: Dynamo,
    pub(crate) config: ServerConfig,
    /// One permit per API call running on the blocking pool.
    pub(crate) calls: Arc<Semaphore>,
    pub(crate) ids: RequestIds,
}

/// Request ids in the shape DynamoDB uses (52 upper-case letters and digits), unique per
/// process: a random per-process prefix and a counter.
pub(crate) struct RequestIds {
    seed: u64,
    next: AtomicU64,
}

impl RequestIds {
    pub(crate) fn new() -> RequestIds {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        RequestIds {
            seed: h.finish(),
            next: AtomicU64::new(0),
        }
    }

    fn next(&self) -> String {
        const DIGITS: &[u8; 32] = b"0123456789ABCDEFGHIJKLMNOPQRSTUV";
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut out = String::with_capacity(52);
        // Four splitmix64 outputs of (seed, counter), 13 base-32 digits each.
        for i in 0..4u64 {
            let mut z = self.seed.wrapping_add(
                n.wrapping_mul(4)
                    .wrapping_add(i)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15),
            );
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            for _ in 0..13 {
                out.push(DIGITS[(z & 31) as usize] as char);
                z >>= 5;
            }
        }
        out
    }
}

type Answer = Response<AnswerBody>;

/// Answers larger than this are sent in chunks of this size (`Transfer-Encoding: chunked`), as
/// DynamoDB streams large answers; smaller ones in one piece with `Content-Length`.
pub(crate) const CHUNK_BYTES: usize = 64 << 10;

/// The body of an answer: all of it at once, or in [`CHUNK_BYTES`] chunks.
pub(crate) struct AnswerBody {
    data: Bytes,
    chunked: bool,
}

impl AnswerBody {
    /// All the bytes of the answer.
    pub(crate) fn into_bytes(self) -> Bytes {
        self.data
    }

    fn new(data: Bytes) -> AnswerBody {
        let chunked = data.len() > CHUNK_BYTES;
        AnswerBody { data, chunked }
    }
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.data.is_empty() {
            return std::task::Poll::Ready(None);
        }
        let n = if this.chunked {
            CHUNK_BYTES.min(this.data.len())
        } else {
            this.data.len()
        };
        std::task::Poll::Ready(Some(Ok(Frame::data(this.data.split_to(n)))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        if self.chunked {
            SizeHint::default()
        } else {
            SizeHint::with_exact(self.data.len() as u64)
        }
    }
}

/// The content type of the answer: DynamoDB echoes the request's JSON flavour.
#[derive(Clone, Copy)]
enum Flavour {
    AmzJson10,
    AmzJson11,
    Json,
}

impl Flavour {
    fn of(parts: &Parts) -> Option<Flavour> {
        let Some(ct) = parts.headers.get(CONTENT_TYPE) else {
            return Some(Flavour::AmzJson10);
        };
        let ct = ct.to_str().ok()?;
        let media = ct.split(';').next().unwrap_or("").trim();
        match media.to_ascii_lowercase().as_str() {
            "application/x-amz-json-1.0" => Some(Flavour::AmzJson10),
            "application/x-amz-json-1.1" => Some(Flavour::AmzJson11),
            "application/json" => Some(Flavour::Json),
            _ => None,
        }
    }

    fn header(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Flavour::AmzJson10 => "application/x-amz-json-1.0",
            Flavour::AmzJson11 => "application/x-amz-json-1.1",
            Flavour::Json => "application/json",
        })
    }
}

fn respond(status: u16, content_type: HeaderValue, request_id: &str, body: Vec<u8>) -> Answer {
    let crc = crc32fast::hash(&body);
    let mut r = Response::new(AnswerBody::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, content_type);
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("x-amzn-requestid", v);
    }
    h.insert("x-amz-crc32", HeaderValue::from(crc));
    r
}

fn fault(f: &Fault, flavour: Flavour, request_id: &str) -> Answer {
    if f.kind == FaultKind::NotFound {
        // DynamoDB answers a wrong method/path/content type with this XML body.
        return respond(
            404,
            HeaderValue::from_static("text/xml"),
            request_id,
            b"<UnknownOperationException/>\n".to_vec(),
        );
    }
    let mut r = respond(f.status(), flavour.header(), request_id, f.body());
    if f.kind == FaultKind::RequestTooLarge {
        r.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    r
}

fn host(parts: &Parts) -> String {
    parts
        .headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))
        .unwrap_or_else(|| "localhost".into())
}

/// Reads the body up to `limit` bytes. On overflow, drains (and drops) what the client still
/// sends, up to a bound, so that it reads the 413 instead of a broken pipe.
async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, Fault> {
    let too_large = || {
        Fault::new(
            FaultKind::RequestTooLarge,
            format!("Request body exceeds the limit of {limit} bytes"),
        )
    };
    if body.size_hint().lower() > limit as u64 {
        drain(body, limit.saturating_mul(4)).await;
        return Err(too_large());
    }
    let mut body = body;
    let mut buf = BytesMut::with_capacity(body.size_hint().lower() as usize);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Fault::new(FaultKind::Serialization, e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                drain(body, limit.saturating_mul(4)).await;
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

async fn drain(mut body: Incoming, bound: usize) {
    let mut seen = 0usize;
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(d) = frame.into_data() {
            seen += d.len();
            if seen > bound {
                return;
            }
        }
    }
}

/// Answers one request from a connection: reads the body (bounded in size and time), then
/// [`answer`]. Never fails: every error becomes DynamoDB's error answer.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Answer, std::convert::Infallible> {
    let (parts, body) = req.into_parts();
    if parts.method != Method::POST || parts.uri.path() != "/" {
        return Ok(answer(&shared, &parts, Bytes::new()).await);
    }
    let read = tokio::time::timeout(
        shared.config.body_read_timeout,
        read_body(body, shared.config.max_body_bytes),
    )
    .await;
    let failed = match read {
        Ok(Ok(body)) => return Ok(answer(&shared, &parts, body).await),
        Ok(Err(f)) => f,
        Err(_) => Fault::new(
            FaultKind::Serialization,
            "Timed out reading the request body",
        ),
    };
    let flavour = Flavour::of(&parts).unwrap_or(Flavour::Json);
    Ok(fault(&failed, flavour, &shared.ids.next()))
}

/// Answers a request whose body has been read: health check, protocol checks, the API call.
pub(crate) async fn answer(shared: &Arc<Shared>, parts: &Parts, body: Bytes) -> Answer {
    let request_id = shared.ids.next();
    let not_found = || {
        fault(
            &Fault::new(FaultKind::NotFound, ""),
            Flavour::Json,
            &request_id,
        )
    };
    if parts.uri.path() != "/" {
        return not_found();
    }
    if parts.method == Method::GET || parts.method == Method::HEAD {
        let text = format!("healthy: {}", host(parts));
        return respond(
            200,
            HeaderValue::from_static("text/plain"),
            &request_id,
            text.into_bytes(),
        );
    }
    if parts.method != Method::POST {
        return not_found();
    }
    // A body in a content type other than DynamoDB's JSON: 404, as DynamoDB answers.
    let flavour = match Flavour::of(parts) {
        Some(f) => f,
        None if body.is_empty() => Flavour::Json,
        None => return not_found(),
    };
    match api(shared, parts, body).await {
        Ok(out) => respond(200, flavour.header(), &request_id, out),
        Err(Failure::Fault(f)) => fault(&f, flavour, &request_id),
        Err(Failure::Api(e)) => respond(e.status(), flavour.header(), &request_id, e.body()),
    }
}

enum Failure {
    Fault(Fault),
    Api(strata_dynamo::ApiError),
}

impl From<Fault> for Failure {
    fn from(f: Fault) -> Failure {
        Failure::Fault(f)
    }
}

/// The target operation, or DynamoDB's error for a missing/foreign one.
fn operation<'a>(parts: &'a Parts, body: &[u8]) -> Result<&'a str, Fault> {
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|t| t.to_str().ok())
        .unwrap_or("");
    match target.strip_prefix(TARGET_PREFIX) {
        Some(op) if !op.is_empty() && !op.contains('.') => Ok(op),
        _ => {
            // DynamoDB looks at the JSON before the target.
            if !body.is_empty() && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
                return Err(Fault::new(FaultKind::Serialization, ""));
            }
            Err(Fault::new(FaultKind::UnknownOperation, ""))
        }
    }
}

async fn api(shared: &Arc<Shared>, parts: &Parts, body: Bytes) -> Result<Vec<u8>, Failure> {
    let op = operation(parts, &body)?;
    if let Some(creds) = &shared.config.credentials {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        sigv4::verify(parts, &body, creds, now)?;
    }
    let op = op.to_string();
    // DescribeEndpoints answers with the address the client used.
    let ctx = CallContext {
        host: Some(host(parts)),
    };
    let permit = shared
        .calls
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| Fault::new(FaultKind::Internal, "The server is shutting down"))?;
    let dynamo = shared.dynamo.clone();
    let call = tokio::task::spawn_blocking(move || {
        let r = dynamo.call_with(&op, &body, &ctx);
        drop(permit);
        r
    });
    match call.await {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(e)) => {
            if e.status() >= 500 {
                eprintln!("strata serve: {e}");
            }
            Err(Failure::Api(e))
        }
        Err(join) => {
            eprintln!("strata serve: request handler failed: {join}");
            Err(Failure::Fault(Fault::new(
                FaultKind::Internal,
                "Internal server error",
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_unique_and_shaped() {
        let ids = RequestIds::new();
        let a = ids.next();
        let b = ids.next();
        assert_eq!(a.len(), 52);
        assert_ne!(a, b);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()));
    }

    #[tokio::test]
    async fn large_answers_are_chunked() {
        let small = AnswerBody::new(Bytes::from(vec![1u8; CHUNK_BYTES]));
        assert_eq!(small.size_hint().exact(), Some(CHUNK_BYTES as u64));
        let big = AnswerBody::new(Bytes::from(vec![2u8; 2 * CHUNK_BYTES + 1]));
        assert_eq!(big.size_hint().exact(), None);
        let frames: Vec<usize> = {
            let mut b = big;
            let mut out = Vec::new();
            while let Some(f) = b.frame().await {
                out.push(f.unwrap().into_data().unwrap().len());
            }
            out
        };
        assert_eq!(frames, vec![CHUNK_BYTES, CHUNK_BYTES, 1]);
    }

    #[test]
    fn operation_from_target() {
        let p = |t: Option<&str>| {
            let mut b = Request::post("/");
            if let Some(t) = t {
                b = b.header("x-amz-target", t);
            }
            b.body(()).unwrap().into_parts().0
        };
        assert_eq!(
            operation(&p(Some("DynamoDB_20120810.PutItem")), b"{}"),
            Ok("PutItem")
        );
        for bad in [
            None,
            Some("PutItem"),
            Some("DynamoDB_20120810."),
            Some("Foo.PutItem"),
        ] {
            let e = operation(&p(bad), b"{}").unwrap_err();
            assert_eq!(e.kind, FaultKind::UnknownOperation, "{bad:?}");
            let e = operation(&p(bad), b"{").unwrap_err();
            assert_eq!(e.kind, FaultKind::Serialization, "{bad:?}");
        }
    }
}
