//! Snapshots: an etcd revision, pinned so that this engine's compaction stays below it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use strata_lsm::{Direction, KeyRange, KvIter, Result, Snapshot};

use crate::engine::Inner;
use crate::range::RangeIter;

/// The revisions pinned by every engine of this process: (cluster id, revision) → count.
/// Compaction by any of them stays at or below the oldest pin of its cluster.
static PINS: Mutex<BTreeMap<(u64, i64), usize>> = Mutex::new(BTreeMap::new());

/// Held shared while a revision is being read and pinned, exclusively by compaction while it
/// picks its target: compaction never passes a revision that is about to be pinned.
static GATE: RwLock<()> = RwLock::new(());

pub(crate) fn gate_shared() -> RwLockReadGuard<'static, ()> {
    GATE.read().unwrap_or_else(|p| p.into_inner())
}

pub(crate) fn gate_exclusive() -> RwLockWriteGuard<'static, ()> {
    GATE.write().unwrap_or_else(|p| p.into_inner())
}

fn pins() -> std::sync::MutexGuard<'static, BTreeMap<(u64, i64), usize>> {
    PINS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The oldest revision pinned in this process on `cluster`.
pub(crate) fn oldest_pin(cluster: u64) -> Option<i64> {
    pins()
        .range((cluster, i64::MIN)..=(cluster, i64::MAX))
        .next()
        .map(|((_, r), _)| *r)
}

/// A pinned revision. While any `Pin` of a revision lives, no [`strata_lsm::Engine::compact`]
/// of this process compacts past it.
pub(crate) struct Pin {
    pub inner: Arc<Inner>,
    cluster: u64,
    pub rev: i64,
}

impl Pin {
    pub fn new(inner: Arc<Inner>, cluster: u64, rev: i64) -> Arc<Pin> {
        *pins().entry((cluster, rev)).or_insert(0) += 1;
        Arc::new(Pin {
            inner,
            cluster,
            rev,
        })
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut pins = pins();
        let k = (self.cluster, self.rev);
        if let Some(n) = pins.get_mut(&k) {
            *n -= 1;
            if *n == 0 {
                pins.remove(&k);
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
