//! # strata-lsm
//!
//! The storage engine under Strata: the [`Engine`] trait (point reads, atomic conditional
//! write batches, ordered range iteration over consistent snapshots) and its implementations:
//! [`MemEngine`] (in memory) and the striped LSM (seed 05, done properly).

pub mod engine;
pub mod error;
pub mod mem;

pub use engine::{
    Condition, Direction, Engine, KeyRange, KvIter, KvPair, Op, Snapshot, WriteBatch,
};
pub use error::{Error, Result};
pub use mem::MemEngine;
