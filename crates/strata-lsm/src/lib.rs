//! # strata-lsm
//!
//! The storage engine under Strata: the [`Engine`] trait (point reads, atomic conditional
//! write batches, ordered range iteration over consistent snapshots) and its implementations:
//! [`MemEngine`] (in memory) and [`LsmEngine`], the striped LSM of seed 05 done properly.

mod batch;
pub mod check;
pub mod coding;
pub mod crash_point;
pub mod engine;
pub mod error;
pub mod filename;
pub mod fs;
mod hint;
pub mod iter;
pub mod lock;
pub mod lsm;
pub mod manifest;
pub mod mem;
pub mod memtable;
pub mod options;
pub mod partition;
pub mod record;
pub mod repair;
mod spare;
pub mod sst;
mod sync;
pub mod wal;

pub use check::{check, CheckReport, Problem};
pub use engine::{
    BatchLimits, Condition, Cursor, CursorPairs, Direction, Engine, KeyRange, KvIter, KvPair, Op,
    Ops, RangeCursor, RangeSource, Snapshot, WriteBatch,
};
pub use error::{Error, FormatError, Result};
pub use fs::{FaultFs, Fs, RealFs};
pub use lsm::{process_written, LsmEngine, Stats, VerifyReport, Written};
pub use mem::MemEngine;
pub use options::{LsmOptions, SyncMode};
pub use partition::Partitioner;
pub use repair::{repair, RepairReport};
