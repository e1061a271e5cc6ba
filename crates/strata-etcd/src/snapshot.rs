//! Snapshots: an etcd revision, pinned so that this engine's compaction stays below it.

use std::sync::Arc;

use strata_lsm::{Direction, KeyRange, KvIter, Result, Snapshot};

use crate::engine::Inner;
use crate::range::RangeIter;

/// A pinned revision. While any `Pin` of a revision lives, [`strata_lsm::Engine::compact`]
/// of the engine keeps that revision readable.
pub(crate) struct Pin {
    pub inner: Arc<Inner>,
    pub rev: i64,
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut pins = self.inner.pins.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = pins.get_mut(&self.rev) {
            *n -= 1;
            if *n == 0 {
                pins.remove(&self.rev);
            }
        }
    }
}

/// A consistent view of the database at one etcd revision. Reads pass the revision, so they
/// see exactly the state of that moment, on any member. Iterators keep the revision pinned
/// after the snapshot is dropped.
pub struct EtcdSnapshot {
    pub(crate) pin: Arc<Pin>,
}

impl EtcdSnapshot {
    /// The etcd revision this snapshot reads.
    pub fn revision(&self) -> i64 {
        self.pin.rev
    }
}

impl Snapshot for EtcdSnapshot {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.pin.inner.get_at(key, Some(self.pin.rev))
    }

    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        self.pin.inner.check_open()?;
        Ok(Box::new(RangeIter::new(
            Arc::clone(&self.pin.inner),
            Some(Arc::clone(&self.pin)),
            &range,
            direction,
        )))
    }
}
