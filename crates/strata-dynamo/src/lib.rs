//! # strata-dynamo
//!
//! The DynamoDB API over Strata: DynamoDB tables **are** Strata tables (one catalog, so
//! `strata table list` shows them), items are Strata items, and every operation is atomic where
//! DynamoDB's is (a conditional write is one engine batch conditioned on the bytes it read).
//!
//! Two front doors:
//! * [`Dynamo::call`]: an operation name (the `X-Amz-Target` suffix, e.g. `PutItem`) and
//!   DynamoDB's JSON request body in, the JSON response body or an [`ApiError`] out. This is
//!   what `strata serve` puts on HTTP.
//! * typed methods for embedded users (see the operation modules).
//!
//! ```
//! use strata_dynamo::Dynamo;
//! let dynamo = Dynamo::memory()?;
//! let e = dynamo.call("NoSuchOperation", b"{}").unwrap_err();
//! assert_eq!(e.type_name(), "com.amazon.coral.service#UnknownOperationException");
//! # Ok::<(), strata::Error>(())
//! ```

pub mod error;
pub mod expr;

use std::sync::Arc;

use strata::Db;

pub use error::{ApiError, CancellationReason, ErrorKind};

/// The DynamoDB API over one [`Db`]. `Send + Sync`, cheap to clone (clones share everything).
#[derive(Clone, Debug)]
pub struct Dynamo {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    db: Db,
}

impl Dynamo {
    /// The API over `db`.
    pub fn new(db: Db) -> Dynamo {
        Dynamo {
            inner: Arc::new(Inner { db }),
        }
    }

    /// The API over a fresh in-memory database.
    pub fn memory() -> strata::Result<Dynamo> {
        Ok(Dynamo::new(Db::memory()?))
    }

    /// The database underneath.
    pub fn db(&self) -> &Db {
        &self.inner.db
    }

    /// Runs operation `op` (the `X-Amz-Target` suffix after `DynamoDB_20120810.`) on the JSON
    /// request `body`; returns the JSON response body.
    pub fn call(&self, op: &str, body: &[u8]) -> Result<Vec<u8>, ApiError> {
        let _ = body;
        Err(ApiError::new(
            ErrorKind::UnknownOperation,
            format!("Unknown operation {op}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}

    #[test]
    fn dynamo_is_shareable() {
        assert_send_sync::<Dynamo>();
    }

    #[test]
    fn unknown_operation() {
        let d = Dynamo::memory().unwrap();
        let e = d.call("Frobnicate", b"{}").unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnknownOperation);
        assert_eq!(e.status(), 400);
    }
}
