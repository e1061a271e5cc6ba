//! [`LsmEngine`]: the striped LSM.
//!
//! The engine is split by concern, as LevelDB splits `db_impl` / `version_set` / `builder`:
//!
//! | module | holds |
//! |---|---|
//! | `inner` | the shared state of an open engine (`Inner`) and key routing |
//! | `version` | the files of one stripe ([`StripeVersion`]) and point lookups in them |
//! | `write` | the write path: conditions, WAL append, group commit, stalls, freezing memtables |
//! | `flush` | writing frozen memtables as L0 SSTs and retiring old WALs |
//! | `maint` | the manifest writer and its state: applying and logging edits, rolling |
//! | `compact` | picking compactions (a pure function) and running them |
//! | `round` | committing a round of compaction jobs: one directory fsync, one manifest record |
//! | `snapshot` | consistent read views and their iterators |
//! | `recover` | opening a directory: manifest, SSTs, WAL replay |
//! | `background` | the background flush/compaction thread |
//!
//! Write path: a writer takes the commit lock, checks its batch's conditions against the
//! latest state, appends one WAL record (to the OS), inserts into the memtables of the
//! stripes it touches and releases the lock; with [`SyncMode::Always`] it then waits until a
//! sync covers its record. Whoever finds no sync running becomes the syncer and fsyncs for
//! everyone queued behind it (group commit). Readers see a batch only once it is
//! acknowledged-durable (`visible` sequence number).
//!
//! When the memtables hold half the budget, they are frozen together and the WAL rotates;
//! a background thread writes one L0 SST per stripe, records them in the manifest, then
//! deletes the old WAL. Writes stall while a frozen set is still being written and the new
//! memtables fill the other half, or while some stripe has too many L0 files. Files that a
//! compaction replaced are dropped (hence deleted) on a reaper thread, off the maintenance
//! lock (`maint::Reaper`).

mod background;
mod compact;
mod concat;
mod flush;
mod inner;
mod maint;
mod recover;
mod round;
mod snapshot;
mod version;
mod write;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::engine::{Cursor, Direction, Engine, KeyRange, KvIter, Snapshot, WriteBatch};
use crate::error::{Error, Result};
use crate::manifest::LEVELS;
use crate::options::{LsmOptions, SyncMode};
use crate::partition::Partitioner;
use crate::sync::{lock, read};
use crate::wal;

pub use compact::{pick_compaction, CompactionJob, CompactionPolicy};
use inner::Inner;
pub use maint::{process_written, Written};
pub(crate) use recover::resolve_partitioner;
pub use version::{FileRef, Levels, StripeVersion};

/// The striped LSM engine. See the module documentation and `docs/format/lsm.md`.
pub struct LsmEngine {
    inner: Arc<Inner>,
    bg: Mutex<Option<JoinHandle<()>>>,
}

/// Sizes and counts of a database, for `strata kv stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Number of stripes.
    pub stripes: u32,
    /// Number of SST files per level (all stripes).
    pub files_per_level: Vec<usize>,
    /// Bytes of SST files per level.
    pub bytes_per_level: Vec<u64>,
    /// Bytes of all SST files.
    pub sst_bytes: u64,
    /// Bytes charged to memtables (active and being flushed).
    pub memtable_bytes: usize,
    /// Bytes of live WAL files.
    pub wal_bytes: u64,
    /// Last sequence number.
    pub last_seq: u64,
    /// The most L0 files one stripe has (a point read may probe each of them).
    pub max_l0_files: usize,
    /// The most sorted runs one stripe has (its L0 files plus its non-empty deeper levels):
    /// the files a point read of a missing key may probe.
    pub max_sorted_runs: usize,
    /// Sorted runs of all stripes together (divide by `stripes` for the mean).
    pub total_sorted_runs: usize,
    /// Bytes written by flushes and compactions since the engine was opened; write
    /// amplification is [`Written::amplification`].
    pub written: Written,
}

/// What [`LsmEngine::verify`] checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// SST files verified.
    pub files: usize,
    /// Entries read back.
    pub entries: u64,
}

impl LsmEngine {
    /// Opens (creating if needed) the database in directory `path` for reading and writing:
    /// takes the directory's lock exclusively, reads the manifest, replays the WALs it does
    /// not cover, writes what they held as L0 files, and starts a fresh WAL and manifest.
    ///
    /// Fails at once with [`Error::Locked`] when another engine (in any process) has the
    /// directory open, with [`Error::PartitionerMismatch`] when `options.partitioner` differs
    /// from the database's, and with [`Error::Corruption`] (file and offset) when a manifest
    /// or WAL record is damaged (a torn tail — an incomplete last record — is not damage).
    pub fn open(path: &Path, options: LsmOptions) -> Result<LsmEngine> {
        LsmEngine::start(path, options, recover::Mode::ReadWrite)
    }

    /// Opens the existing database in `path` for reading only. It takes the directory's lock
    /// shared (other read-only engines may open it too, a writer may not) and never writes a
    /// byte: the WALs are replayed into memory, nothing is created, renamed or deleted, so it
    /// works on a read-only file system and on a full disk. Writes, flushes and compactions
    /// fail with [`Error::ReadOnly`].
    pub fn open_read_only(path: &Path, options: LsmOptions) -> Result<LsmEngine> {
        LsmEngine::start(path, options, recover::Mode::ReadOnly)
    }

    fn start(path: &Path, options: LsmOptions, mode: recover::Mode) -> Result<LsmEngine> {
        let inner = Arc::new(recover::open(path, options, mode)?);
        let bg = if inner.opts.background && !inner.read_only {
            let i2 = Arc::clone(&inner);
            Some(
                std::thread::Builder::new()
                    .name("strata-lsm-bg".into())
                    .spawn(move || background::run(i2))
                    .map_err(Error::io(path))?,
            )
        } else {
            None
        };
        Ok(LsmEngine {
            inner,
            bg: Mutex::new(bg),
        })
    }

    /// Reads every block of every live SST and checks its checksum and key order (the WALs
    /// and the manifest were checked when the database was opened).
    pub fn verify(&self) -> Result<VerifyReport> {
        self.inner.check_open()?;
        let versions = read(&self.inner.state).versions.clone();
        let mut r = VerifyReport::default();
        for v in versions {
            for t in v.files() {
                let n = t.verify()?;
                if n != t.meta.entries {
                    return Err(Error::corruption(
                        t.path(),
                        0,
                        format!("{n} entries, the manifest says {}", t.meta.entries),
                    ));
                }
                r.files += 1;
                r.entries += n;
            }
        }
        Ok(r)
    }

    /// Sizes and counts.
    pub fn stats(&self) -> Result<Stats> {
        let i = &self.inner;
        i.check_open()?;
        let versions = read(&i.state).versions.clone();
        let mut s = Stats {
            stripes: i.stripes,
            files_per_level: vec![0; LEVELS],
            bytes_per_level: vec![0; LEVELS],
            memtable_bytes: {
                // Frozen first: a freeze moves bytes from active to frozen, so this order
                // never counts them twice.
                let frozen = i.frozen_bytes.load(Ordering::SeqCst);
                frozen + i.active_bytes.load(Ordering::SeqCst)
            },
            last_seq: lock(&i.commit).last_seq,
            written: i.written.snapshot(),
            ..Stats::default()
        };
        for v in versions {
            let runs = v.levels[0].len() + v.levels[1..].iter().filter(|l| !l.is_empty()).count();
            s.max_l0_files = s.max_l0_files.max(v.levels[0].len());
            s.max_sorted_runs = s.max_sorted_runs.max(runs);
            s.total_sorted_runs += runs;
            for (l, files) in v.levels.iter().enumerate() {
                s.files_per_level[l] += files.len();
                let b: u64 = files.iter().map(|t| t.meta.size).sum();
                s.bytes_per_level[l] += b;
                s.sst_bytes += b;
            }
        }
        for n in i.fs.list(&i.dir).map_err(Error::io(&i.dir))? {
            if wal::parse_wal_name(&n).is_some() {
                if let Ok(f) = i.fs.open(&i.dir.join(&n)) {
                    s.wal_bytes += f.len();
                }
            }
        }
        Ok(s)
    }

    /// Waits until no flush or compaction is pending (for benchmarks and tests).
    pub fn wait_for_compactions(&self) -> Result<()> {
        let i = &self.inner;
        loop {
            i.check_open()?;
            if i.read_only {
                return Ok(());
            }
            if i.has_frozen.load(Ordering::Acquire) {
                i.flush_frozen()?;
                continue;
            }
            if !i.compact_one()? {
                // The files compactions replaced are deleted on the reaper thread.
                return i.with_maint(|m| {
                    m.reaper.drain();
                    Ok(())
                });
            }
        }
    }

    /// Applies a batch like [`Engine::write`], with this durability instead of the one in
    /// the options. (A batch acknowledged with [`SyncMode::None`] makes earlier unsynced
    /// batches visible too: visibility follows acknowledgement order.)
    pub fn write_with_sync(&self, batch: WriteBatch, sync: SyncMode) -> Result<()> {
        self.inner.write(batch, sync)
    }

    /// Makes every acknowledged write durable (one WAL fsync). When the WAL ends at its last
    /// record (after big batches), it is first extended with zeros, so that the small synced
    /// writes that follow are written in place and change no file size.
    pub fn sync_wal(&self) -> Result<()> {
        self.inner.sync_wal()
    }

    /// The stripe of a key.
    pub fn stripe_of(&self, key: &[u8]) -> u32 {
        self.inner.stripe_of(key) as u32
    }

    /// The number of stripes (as recorded on disk).
    pub fn stripes(&self) -> u32 {
        self.inner.stripes
    }

    /// The database's partitioner (as recorded on disk, or inferred for a database written
    /// before it was recorded).
    pub fn partitioner(&self) -> &Partitioner {
        &self.inner.partitioner
    }

    /// [`Engine::get`] without copying the value: `f` borrows it (from the memtable or the
    /// cached block) and its result is returned; `Ok(None)` when the key has no value.
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.inner.check_open()?;
        self.inner.get_at_with(key, None, f)
    }

    /// True when the engine was opened with [`LsmEngine::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }
}

impl Engine for LsmEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.check_open()?;
        self.inner.get_at(key, None)
    }

    fn get_borrowed(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.get_with(key, f)?.is_some())
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.write(batch, self.inner.opts.sync)
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        self.inner.check_open()?;
        Ok(Arc::new(self.inner.snapshot_of(None)))
    }

    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        self.inner.check_open()?;
        let only = self.inner.stripes_of(&range);
        self.inner.snapshot_of(only).range(range, direction)
    }

    fn cursor(&self, range: KeyRange, direction: Direction) -> Result<Box<dyn Cursor>> {
        self.inner.check_open()?;
        self.inner.cursor(range, direction)
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn compact(&self) -> Result<()> {
        self.inner.flush()?;
        self.inner.compact_all()
    }

    fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        {
            lock(&self.inner.work).shutdown = true;
            self.inner.work_cv.notify_all();
        }
        if let Some(h) = lock(&self.bg).take() {
            let _ = h.join();
        }
        self.inner.stall_cv.notify_all();
        let r = self.sync_on_close();
        // Released only now: no write can reach the files any more (writers check `closed`
        // under the commit lock). Snapshots still open keep their files open and readable.
        *lock(&self.inner.lock) = None;
        r
    }
}

impl LsmEngine {
    /// Stops the engine the way a crash would (for crash tests): background work stops and
    /// the directory lock is released, but nothing more is synced or written — unsynced WAL
    /// bytes stay unsynced (see [`crate::FaultFs::crash`]).
    pub fn kill(self) {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        lock(&self.inner.work).shutdown = true;
        self.inner.work_cv.notify_all();
        if let Some(h) = lock(&self.bg).take() {
            let _ = h.join();
        }
        self.inner.stall_cv.notify_all();
        *lock(&self.inner.maint) = None;
        *lock(&self.inner.lock) = None;
    }

    fn sync_on_close(&self) -> Result<()> {
        let mut c = lock(&self.inner.commit);
        *lock(&self.inner.maint) = None;
        if self.inner.poisoned.load(Ordering::SeqCst) {
            return Ok(());
        }
        let Some(w) = c.wal.as_mut() else {
            return Ok(());
        };
        let number = w.number();
        w.sync()
            .map_err(Error::io(self.inner.dir.join(wal::wal_name(number))))
    }
}

impl Drop for LsmEngine {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
