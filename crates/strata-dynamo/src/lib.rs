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
//! * typed methods with the requests and responses of [`model`] (shaped like DynamoDB's JSON,
//!   with [`AttributeValue`] as in the AWS SDKs), for embedded users.
//!
//! ```
//! use strata_dynamo::{AttributeValue, Dynamo};
//! use strata_dynamo::model::{GetItemInput, PutItemInput};
//! let dynamo = Dynamo::memory()?;
//! dynamo.call("CreateTable", br#"{"TableName":"users","BillingMode":"PAY_PER_REQUEST",
//!     "KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],
//!     "AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}]}"#)?;
//! dynamo.put_item(PutItemInput {
//!     table_name: Some("users".into()),
//!     item: Some([("id".into(), "u1".into()), ("n".into(), AttributeValue::N("0.1".into()))].into()),
//!     ..Default::default()
//! })?;
//! let got = dynamo.call("GetItem", br#"{"TableName":"users","Key":{"id":{"S":"u1"}}}"#)?;
//! assert_eq!(got, br#"{"Item":{"id":{"S":"u1"},"n":{"N":"0.1"}}}"#);
//! let e = dynamo.call("NoSuchOperation", b"{}").unwrap_err();
//! assert_eq!(e.type_name(), "com.amazon.coral.service#UnknownOperationException");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod batch;
pub mod convert;
pub mod embedded;
pub mod error;
pub mod expr;
pub mod items;
pub mod keys;
pub mod legacy;
pub mod model;
pub mod number;
pub mod query;
pub mod tables;
pub mod transact;
pub mod types;

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use strata::Db;

pub use error::{ApiError, CancellationReason, ErrorKind};
pub use types::{AttributeMap, AttributeValue};

/// The DynamoDB API over one [`Db`]. `Send + Sync`, cheap to clone (clones share everything).
#[derive(Clone, Debug)]
pub struct Dynamo {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    db: Db,
}

/// What the HTTP layer knows about a request and [`Dynamo::call_with`] may use.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The `Host` the client addressed (`host:port`), for DescribeEndpoints.
    pub host: Option<String>,
}

/// The operations [`Dynamo::call`] knows, by `X-Amz-Target` suffix.
pub const OPERATIONS: &[&str] = &[
    "BatchGetItem",
    "BatchWriteItem",
    "CreateTable",
    "DeleteItem",
    "DeleteTable",
    "DescribeEndpoints",
    "DescribeLimits",
    "DescribeTable",
    "DescribeTimeToLive",
    "GetItem",
    "ListTables",
    "ListTagsOfResource",
    "PutItem",
    "Query",
    "Scan",
    "TagResource",
    "TransactGetItems",
    "TransactWriteItems",
    "UntagResource",
    "UpdateItem",
    "UpdateTable",
    "UpdateTimeToLive",
];

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        &b"{}"[..]
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| ApiError::from_json_error(&e))
}

fn json<T: Serialize>(r: Result<T, ApiError>) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(&r?).map_err(|e| ApiError::internal(format!("response: {e}")))
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
    /// request `body`; returns the JSON response body (empty for TagResource and
    /// UntagResource, as DynamoDB answers).
    pub fn call(&self, op: &str, body: &[u8]) -> Result<Vec<u8>, ApiError> {
        self.call_with(op, body, &CallContext::default())
    }

    /// [`Dynamo::call`] with what the HTTP layer knows of the request.
    pub fn call_with(&self, op: &str, body: &[u8], ctx: &CallContext) -> Result<Vec<u8>, ApiError> {
        match op {
            "CreateTable" => json(self.create_table(parse(body)?)),
            "DescribeTable" => json(self.describe_table(parse(body)?)),
            "DeleteTable" => json(self.delete_table(parse(body)?)),
            "ListTables" => json(self.list_tables(parse(body)?)),
            "UpdateTable" => json(self.update_table(parse(body)?)),
            "PutItem" => json(self.put_item(parse(body)?)),
            "GetItem" => json(self.get_item(parse(body)?)),
            "DeleteItem" => json(self.delete_item(parse(body)?)),
            "UpdateItem" => json(self.update_item(parse(body)?)),
            "Query" => json(self.query(parse(body)?)),
            "Scan" => json(self.scan(parse(body)?)),
            "BatchGetItem" => json(self.batch_get_item(parse(body)?)),
            "BatchWriteItem" => json(self.batch_write_item(parse(body)?)),
            "TransactWriteItems" => json(self.transact_write_items(parse(body)?)),
            "TransactGetItems" => json(self.transact_get_items(parse(body)?)),
            "TagResource" => self.tag_resource(parse(body)?).map(|()| Vec::new()),
            "UntagResource" => self.untag_resource(parse(body)?).map(|()| Vec::new()),
            "ListTagsOfResource" => json(self.list_tags_of_resource(parse(body)?)),
            "DescribeEndpoints" => json(Ok(model::DescribeEndpointsOutput {
                endpoints: vec![model::Endpoint {
                    address: ctx.host.clone().unwrap_or_else(|| "localhost:8000".into()),
                    cache_period_in_minutes: 1440,
                }],
            })),
            "DescribeLimits" => json(Ok(serde_json::json!({
                "AccountMaxReadCapacityUnits": 80000,
                "AccountMaxWriteCapacityUnits": 80000,
                "TableMaxReadCapacityUnits": 40000,
                "TableMaxWriteCapacityUnits": 40000,
            }))),
            "DescribeTimeToLive" => {
                let input: model::TableNameInput = parse(body)?;
                self.table(input.table_name.as_deref())?;
                json(Ok(serde_json::json!({
                    "TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}
                })))
            }
            "UpdateTimeToLive" => {
                let input: model::TableNameInput = parse(body)?;
                self.table(input.table_name.as_deref())?;
                Err(ApiError::validation(
                    "UpdateTimeToLive: time to live is not supported by Strata yet",
                ))
            }
            _ => Err(ApiError::new(
                ErrorKind::UnknownOperation,
                format!("Unknown operation {op}"),
            )),
        }
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
