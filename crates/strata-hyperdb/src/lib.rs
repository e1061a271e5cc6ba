//! # strata-hyperdb
//!
//! hyperdb 3.5.0 (DEP-0004) in Rust: path-like keys over an append-only hypercore@6 feed,
//! byte-compatible with the reference JavaScript implementation, block for block and file for
//! file. Single writer; multi-writer and replication are not implemented (the node format
//! keeps clocks and feed indexes so they can be added).
//!
//! ```
//! use strata_hyperdb::{CreateOptions, Hyperdb};
//! let mut db = Hyperdb::memory(CreateOptions::default()).unwrap();
//! db.put("/a/b", b"24").unwrap();
//! assert_eq!(db.get("a/b").unwrap().unwrap().value.as_deref(), Some(&b"24"[..]));
//! ```

pub mod cache;
pub mod db;
#[cfg(test)]
mod durability_tests;
pub mod error;
pub mod iter;
mod lock;
pub mod messages;
pub mod node;
pub mod path;
pub mod sleep;
pub mod snapshot;
pub mod trie;
pub mod trie_view;
pub mod varint;
pub mod wire;

pub use db::{BatchOp, CreateOptions, Hyperdb, PutOptions};
pub use error::{Error, Result};
pub use iter::{ListIter, ListOptions, Nodes};
pub use node::Node;
pub use sleep::KeyPair;
pub use snapshot::{DiffItem, Snapshot};
