//! # strata
//!
//! The Strata database: a catalog of **tables** with typed partition and sort keys (each
//! field ascending or descending, NULL first or last), **items** (attribute maps of typed
//! values, lists and maps), put / get / delete / conditional put / atomic batches /
//! optimistic transactions, **Query** (one partition, a sort-key condition, either
//! direction, paginated) and **Scan** (whole table or one of N segments, paginated), over
//! any [`strata_lsm::Engine`]: the striped LSM on disk ([`Db::open`]) or memory
//! ([`Db::memory`]).
//!
//! ```
//! use strata::{Db, Item, KeyField, Query, SortCondition, TableSchema};
//! use strata_key::{Kind, Value};
//!
//! let db = Db::memory()?;
//! let posts = db.create_table(
//!     TableSchema::new("posts", vec![KeyField::new("user", Kind::Text)])
//!         .with_sort(vec![KeyField::new("ts", Kind::Int).desc()]),
//! )?;
//! for ts in 1..=5 {
//!     posts.put(&Item::new().with("user", "u1").with("ts", ts).with("body", "hi"))?;
//! }
//! let page = posts.query(
//!     &Query::new(vec![Value::from("u1")]).sort(SortCondition::Le(vec![Value::Int(3)])).limit(2),
//! )?;
//! // `le 3` compares values (ts ≤ 3); results come in the table's order: newest first.
//! let ts: Vec<_> = page.items.iter().map(|i| i.value("ts").cloned()).collect();
//! assert_eq!(ts, vec![Some(Value::Int(3)), Some(Value::Int(2))]);
//! assert!(page.last_key.is_some());
//! # Ok::<(), strata::Error>(())
//! ```
//!
//! Byte formats (keys, items, catalog) are specified in `docs/format/tables.md`.

// Test support shared with the integration tests names the crate `strata`.
#[cfg(test)]
extern crate self as strata;

pub mod batch;
pub mod catalog;
pub mod db;
pub mod error;
#[cfg(feature = "etcd")]
mod etcd;
pub mod item;
pub mod item_codec;
#[cfg(test)]
mod item_codec_decode_tests;
pub mod item_serde;
pub mod json;
pub mod keys;
mod lsm;
pub mod query;
pub mod rows;
pub mod schema;
pub mod table;

pub use batch::{Batch, Transaction};
pub use db::{Db, DbOptions};
pub use error::{Error, Result};
pub use item::{Attr, Item, Set, SetError};
pub use item_serde::{from_item_bytes, to_item_bytes};
pub use query::{Page, Query, Rows, Scan, SortCondition};
pub use schema::{Direction, KeyField, Nulls, TableSchema};
#[cfg(feature = "etcd")]
pub use strata_etcd::{EtcdEngine, EtcdOptions};
pub use table::{ItemVersion, Key, Table};
