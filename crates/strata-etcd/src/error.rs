//! What an etcd failure means for the caller: whether a request surely did nothing (so it may
//! be retried), may have been applied (a write's outcome is then unknown), or failed for good.

use etcd_client::Error as EtcdError;
use tonic_code::Code;

/// The etcd errors a caller must tell apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Class {
    /// The request surely had no effect and may work if repeated (connection refused, no
    /// leader, too many requests, a member behind the asked revision).
    NotApplied,
    /// The request may or may not have taken effect (timeout, connection lost after sending,
    /// leader changed while it was in flight).
    Unknown,
    /// The asked revision was compacted away.
    Compacted,
    /// Beyond the server's limits (`--max-request-bytes`, `--max-txn-ops`).
    TooLarge,
    /// The cluster's storage quota is exhausted (NOSPACE alarm): writes are refused.
    NoSpace,
    /// Anything else (bad request, permission, internal error): retrying will not help.
    Permanent,
}

mod tonic_code {
    /// gRPC status codes, as numbers (the `tonic` version is `etcd-client`'s business).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Code {
        Cancelled,
        InvalidArgument,
        DeadlineExceeded,
        ResourceExhausted,
        FailedPrecondition,
        OutOfRange,
        Unavailable,
        Other,
    }
}

fn code_of(s: &etcd_client::Error) -> Option<(Code, String)> {
    if let EtcdError::GRpcStatus(st) = s {
        let code = match st.code() as i32 {
            1 => Code::Cancelled,
            3 => Code::InvalidArgument,
            4 => Code::DeadlineExceeded,
            8 => Code::ResourceExhausted,
            9 => Code::FailedPrecondition,
            11 => Code::OutOfRange,
            14 => Code::Unavailable,
            _ => Code::Other,
        };
        return Some((code, st.message().to_owned()));
    }
    None
}

/// Classifies an error of the client.
pub(crate) fn classify(e: &EtcdError) -> Class {
    let text = e.to_string();
    let has = |s: &str| text.contains(s);
    if has("required revision has been compacted") {
        return Class::Compacted;
    }
    if has("required revision is a future revision") {
        return Class::NotApplied;
    }
    if has("request is too large") || has("too many operations in txn request") {
        return Class::TooLarge;
    }
    if has("database space exceeded") {
        return Class::NoSpace;
    }
    // Refused before any effect: no leader (checked before proposing, as the client requires
    // a leader), overload, and connections that were never made.
    if has("etcdserver: no leader")
        || has("too many requests")
        || has("not capable")
        || has("tcp connect error")
        || has("Connection refused")
        || has("error trying to connect")
    {
        return Class::NotApplied;
    }
    match code_of(e) {
        Some((Code::ResourceExhausted, m)) if m.contains("message length too large") => {
            Class::TooLarge
        }
        Some((Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled, _)) => Class::Unknown,
        Some((Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange, _)) => {
            Class::Permanent
        }
        Some(_) => {
            // A transport error (the connection broke, e.g. its member was killed) may come
            // after the request was sent: its outcome is unknown, never "refused".
            if has("request timed out")
                || has("leader changed")
                || has("timeout")
                || has("transport error")
            {
                Class::Unknown
            } else {
                Class::Permanent
            }
        }
        None => match e {
            EtcdError::TransportError(_) | EtcdError::IoError(_) => Class::Unknown,
            _ => Class::Permanent,
        },
    }
}

/// The message of an etcd error on one line, without the client's wrapping words.
pub(crate) fn detail(e: &EtcdError) -> String {
    let s = match e {
        EtcdError::GRpcStatus(st) => {
            let m = st.message();
            if m.is_empty() {
                format!("{:?}", st.code())
            } else {
                m.to_owned()
            }
        }
        other => other.to_string(),
    };
    s.replace('\n', " ")
}
