//! # strata-etcd
//!
//! Strata's [`Engine`](strata_lsm::Engine) over an etcd v3 cluster, for users who need their
//! data to survive the loss of a machine, or several processes on several machines to share
//! one database, without a home-made cluster: the same tables, queries and key-value API, on
//! a Raft-replicated, linearizable store.
//!
//! - Every key is stored under the namespace `PREFIX:` (one cluster holds many databases).
//! - `write` is one etcd transaction: the batch reduced to its last op per key, its conditions
//!   as compares (Absent → version = 0, Present → version > 0, Equals(k, v) → value = v,
//!   Equals(k, None) → version = 0). A failed compare is `ConditionFailed`, naming the
//!   condition. Batches beyond the server's limits (`--max-txn-ops`, `--max-request-bytes`)
//!   are refused whole, never split.
//! - A snapshot is an etcd revision; its reads pass it. Ranges are read page by page in
//!   bounded windows of the key space, both directions.
//! - A write whose answer never comes is reported as *outcome unknown*, never as a failure;
//!   reads are retried until the timeout; writes only when they surely did nothing, or when
//!   their own conditions keep them from applying twice.
//!
//! Not sharded: the data is bounded by one member's disk and etcd's quota. See `docs/etcd.md`.
//!
//! ```no_run
//! use strata_lsm::Engine;
//! let e = strata_etcd::EtcdEngine::open_url("etcd://127.0.0.1:2379/mydb?timeout=3")?;
//! strata_lsm::engine::put(&e, b"k", b"v")?;
//! assert_eq!(e.get(b"k")?, Some(b"v".to_vec()));
//! # Ok::<(), strata_lsm::Error>(())
//! ```

mod call;
mod cursor;
mod delete;
mod engine;
mod error;
pub mod options;
mod range;
mod runtime;
mod snapshot;
mod txn;

pub use delete::DELETE_CHUNK;
pub use engine::{ClusterStatus, EtcdEngine};
pub use options::{EtcdOptions, ReadConsistency};
pub use range::RangeStats;
pub use snapshot::EtcdSnapshot;
