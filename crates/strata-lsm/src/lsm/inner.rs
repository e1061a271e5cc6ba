//! The shared state of an open engine, and how keys are routed to stripes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use super::maint::{Maint, WriteCounters};
use super::version::StripeVersion;
use crate::engine::KeyRange;
use crate::error::{Error, Result};
use crate::fs::{FileSyncer, Fs};
use crate::lock::DirLock;
use crate::memtable::Memtable;
use crate::options::LsmOptions;
use crate::partition::{Partitioner, StripeSpan};
use crate::sst::cache::BlockCache;
use crate::sync::lock;
use crate::wal::WalWriter;

/// Memtables frozen together, being written as L0 files.
pub(super) struct Frozen {
    /// One memtable per stripe.
    pub mems: Vec<Arc<Memtable>>,
    /// The WAL started when they were frozen: older WALs are obsolete once they are written.
    pub next_log: u64,
    /// The last sequence number they hold.
    pub last_seq: u64,
}

/// What readers look at: memtables and files of every stripe.
pub(super) struct State {
    /// The memtables taking writes, one per stripe.
    pub active: Vec<Arc<Memtable>>,
    /// The memtables being flushed.
    pub frozen: Option<Arc<Frozen>>,
    /// The files of each stripe.
    pub versions: Vec<Arc<StripeVersion>>,
}

/// Held by a writer while it appends to the WAL and the memtables.
pub(super) struct Commit {
    /// The live WAL (`None` when the engine is read-only).
    pub wal: Option<WalWriter>,
    /// The last sequence number given out.
    pub last_seq: u64,
}

impl Commit {
    /// The live WAL, or [`Error::ReadOnly`].
    pub fn wal(&mut self) -> Result<&mut WalWriter> {
        self.wal.as_mut().ok_or(Error::ReadOnly)
    }
}

/// Group commit: who is syncing the WAL, and how far it is synced.
#[derive(Default)]
pub(super) struct SyncState {
    /// Every batch up to this sequence number is durable.
    pub synced_seq: u64,
    /// A writer (or the sync thread) is running an fsync for everyone.
    pub syncing: bool,
    /// The newest fsync a writer asked the sync thread for (see `Inner::request_sync`): the
    /// thread syncs while the writer fills the memtables.
    pub request: Option<SyncRequest>,
    /// The sync thread stops (the engine is closing).
    pub stop: bool,
    /// The last failed fsync: the batches up to this sequence number were not made durable,
    /// with the file and the OS error (kind, text) to report to their writers.
    pub failed: Option<(u64, PathBuf, std::io::ErrorKind, String)>,
}

/// A writer's request to the sync thread: make every batch up to `seq` durable by syncing the
/// WAL it was appended to. The WAL is handed over (its syncer and number) so that the thread
/// need not take the commit lock, which the writer holds while it fills the memtables.
#[derive(Clone)]
pub(super) struct SyncRequest {
    /// The batch to make durable (and every one before it).
    pub seq: u64,
    /// The WAL holding batch `seq`.
    pub syncer: Arc<dyn FileSyncer>,
    /// That WAL's file number (for errors).
    pub wal: u64,
}

/// Requests to the background thread.
#[derive(Default)]
pub(super) struct Work {
    /// A flush or compaction may be needed.
    pub pending: bool,
    /// The engine is closing.
    pub shutdown: bool,
}

/// Everything an open engine shares between its handle, its background thread and its
/// snapshots.
pub(super) struct Inner {
    pub dir: PathBuf,
    pub fs: Arc<dyn Fs>,
    pub opts: LsmOptions,
    /// The database's partitioner (as recorded on disk).
    pub partitioner: Partitioner,
    pub stripes: u32,
    /// Opened read-only: nothing is ever written.
    pub read_only: bool,
    /// The directory lock, released by `close`.
    pub lock: Mutex<Option<DirLock>>,
    pub cache: Arc<BlockCache>,
    pub state: RwLock<State>,
    pub commit: Mutex<Commit>,
    pub sync: Mutex<SyncState>,
    pub sync_cv: Condvar,
    /// The sync thread waits here for a request (or `stop`); writers wait on `sync_cv`, so
    /// that a writer's own fsync does not wake the sync thread for nothing.
    pub sync_thread_cv: Condvar,
    /// Readers see batches up to this sequence number.
    pub visible: AtomicU64,
    pub poisoned: AtomicBool,
    pub poison_msg: Mutex<String>,
    pub closed: AtomicBool,
    pub active_bytes: AtomicUsize,
    pub frozen_bytes: AtomicUsize,
    pub has_frozen: AtomicBool,
    /// The most L0 files any stripe has.
    pub l0_max: AtomicUsize,
    /// The next unused file number.
    pub next_file: AtomicU64,
    /// Bytes written by flushes and compactions.
    pub written: WriteCounters,
    /// The manifest and compaction state; `None` once closed.
    pub maint: Mutex<Option<Maint>>,
    pub work: Mutex<Work>,
    pub work_cv: Condvar,
    pub stall_cv: Condvar,
}

impl Inner {
    /// The stripe of `key`.
    pub fn stripe_of(&self, key: &[u8]) -> usize {
        self.partitioner.stripe(key, self.stripes) as usize
    }

    /// The one stripe a range can touch, when the range lies inside one partition.
    pub fn single_stripe(&self, range: &KeyRange) -> Option<usize> {
        self.partitioner
            .single_stripe(range, self.stripes)
            .map(|s| s as usize)
    }

    /// The stripes of `range` in key order, when the partitioner lays them out so.
    pub fn stripe_span(&self, range: &KeyRange) -> Option<StripeSpan> {
        self.partitioner.stripe_span(range, self.stripes)
    }

    /// The consecutive stripes `(first, last)` every key of `range` lives in, when the
    /// partitioner can tell (a reader snapshots only those).
    pub fn stripes_of(&self, range: &KeyRange) -> Option<(usize, usize)> {
        match self.stripe_span(range) {
            Some(span) => Some((span.first as usize, span.last as usize)),
            None => self.single_stripe(range).map(|s| (s, s)),
        }
    }

    /// Disables writes after a failed write or fsync; the first reason is kept.
    pub fn poison(&self, why: &Error) {
        let mut m = lock(&self.poison_msg);
        if !self.poisoned.swap(true, Ordering::SeqCst) {
            *m = why.to_string();
        }
        drop(m);
        self.sync_cv.notify_all();
        self.stall_cv.notify_all();
    }

    /// Fails once the engine is closed.
    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// Fails once the engine is closed or poisoned, and always when it is read-only.
    pub fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(Error::Poisoned(lock(&self.poison_msg).clone()));
        }
        Ok(())
    }

    /// Wakes the background thread.
    pub fn signal_work(&self) {
        lock(&self.work).pending = true;
        self.work_cv.notify_all();
    }

    /// Publishes the largest L0 file count (writers stall on it).
    pub fn update_l0_max(&self, st: &State) {
        let max = st
            .versions
            .iter()
            .map(|v| v.levels[0].len())
            .max()
            .unwrap_or(0);
        self.l0_max.store(max, Ordering::Relaxed);
    }

    /// Runs `f` on the manifest state; [`Error::ReadOnly`] or [`Error::Closed`] when there
    /// is none.
    pub fn with_maint<T>(&self, f: impl FnOnce(&mut Maint) -> Result<T>) -> Result<T> {
        let mut mg = lock(&self.maint);
        let Some(m) = mg.as_mut() else {
            return Err(if self.read_only {
                Error::ReadOnly
            } else {
                Error::Closed
            });
        };
        f(m)
    }
}
