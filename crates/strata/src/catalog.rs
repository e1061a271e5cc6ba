//! The catalog: what tables exist, kept inside the database under the reserved element `0`
//! (see [`crate::keys`]).
//!
//! | key | value |
//! |---|---|
//! | `(0, "meta", "format")` | `strata-tables/1` (UTF-8) |
//! | `(0, "meta", "next_id")` | next collection id, decimal UTF-8 |
//! | `(0, "table", name)` | JSON `{"kind":"table","id":N,"schema":{…}}`, plus `"meta":{…}` when a layer above keeps metadata |
//! | `(0, "dropping", id)` | empty: a dropped table whose data is still being deleted |
//!
//! Entries are JSON objects with a `kind`, so that later kinds of collection (record-store
//! collections without a declared key schema, indexes, counters) can sit beside tables: a
//! reader skips kinds it does not know.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::schema::TableSchema;

/// The format marker this version writes and accepts.
pub const FORMAT_MARKER: &[u8] = b"strata-tables/1";

/// One catalog entry of kind `table`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableEntry {
    /// Always `"table"`.
    pub kind: String,
    /// Collection id (≥ 1), the first element of every key of the table.
    pub id: u64,
    /// The key schema.
    pub schema: TableSchema,
    /// Metadata kept for the layers above (e.g. the DynamoDB API's table description under
    /// `"dynamodb"`); absent for plain tables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

impl TableEntry {
    /// The entry of a table.
    pub fn new(id: u64, schema: TableSchema) -> TableEntry {
        TableEntry {
            kind: "table".into(),
            id,
            schema,
            meta: None,
        }
    }

    /// The stored bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Parses stored bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<TableEntry> {
        let e: TableEntry = serde_json::from_slice(bytes).map_err(|e| Error::Corrupt {
            what: "catalog entry".into(),
            offset: e.column().saturating_sub(1),
            reason: e.to_string(),
        })?;
        if e.kind != "table" || e.id == 0 {
            return Err(Error::Corrupt {
                what: "catalog entry".into(),
                offset: 0,
                reason: format!("kind {:?} id {} is not a table entry", e.kind, e.id),
            });
        }
        e.schema.validate()?;
        Ok(e)
    }
}

/// Parses the `next_id` counter.
pub fn parse_counter(bytes: &[u8]) -> Result<u64> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Error::Corrupt {
            what: "catalog counter next_id".into(),
            offset: 0,
            reason: "not a decimal number".into(),
        })
}
