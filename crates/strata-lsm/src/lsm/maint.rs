//! The manifest writer and the state it describes (LevelDB's `VersionSet`): one edit group is
//! logged (appended and fsynced) before it is applied, and the manifest is rolled to a fresh
//! snapshot when it grows large.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use crate::crash_point;
use crate::error::Result;
use crate::fs::Fs;
use crate::manifest::{self, Edit, ManifestState, ManifestWriter, LEVELS};

/// The state of flushes and compactions; held under one mutex, so they run one at a time.
pub(super) struct Maint {
    /// The live manifest.
    pub manifest: ManifestWriter,
    /// The state it describes.
    pub mstate: ManifestState,
    /// Per stripe and level: the largest key of the last file compacted down (round-robin).
    pub compact_ptr: Vec<[Vec<u8>; LEVELS]>,
    /// The stripe where the next search for a compaction starts.
    pub rr: usize,
    /// A manifest larger than this is rolled over into a fresh snapshot
    /// ([`crate::LsmOptions::manifest_roll_bytes`]).
    roll_bytes: u64,
    /// Drops what flushes and compactions leave behind off their thread.
    pub reaper: Reaper,
}

impl Maint {
    /// A fresh maintenance state over a manifest writer.
    pub fn new(manifest: ManifestWriter, mstate: ManifestState, roll_bytes: u64) -> Maint {
        let stripes = mstate.stripes as usize;
        Maint {
            manifest,
            mstate,
            compact_ptr: (0..stripes).map(|_| Default::default()).collect(),
            rr: 0,
            roll_bytes,
            reaper: Reaper::start(),
        }
    }

    /// Makes an edit group durable in the manifest, then applies it to the state.
    pub fn log_and_apply(&mut self, edits: Vec<Edit>) -> Result<()> {
        self.manifest.append(&edits)?;
        for e in edits {
            self.mstate.apply(e);
        }
        Ok(())
    }

    /// Starts a new manifest holding a snapshot of the state once the live one is large.
    pub fn maybe_roll(&mut self, fs: &dyn Fs, dir: &Path, next_file: &AtomicU64) -> Result<()> {
        if self.manifest.bytes < self.roll_bytes {
            return Ok(());
        }
        let number = next_file.fetch_add(1, Ordering::SeqCst);
        self.mstate.next_file = self.mstate.next_file.max(number + 1);
        let old = self.manifest.number;
        self.manifest = ManifestWriter::create(fs, dir, number, &self.mstate)?;
        crash_point::reached(crash_point::MANIFEST_ROLLED);
        // The old manifest is obsolete once CURRENT names the new one (synced above).
        let _ = fs.remove(&dir.join(manifest::manifest_name(old)));
        Ok(())
    }
}

/// A job of the reaper thread.
type ReapJob = Box<dyn FnOnce() + Send>;

/// A thread that drops what a compaction leaves behind — above all the last references to
/// the files it replaced, whose drop deletes them ([`crate::sst::table::Table`] marked
/// obsolete): unlinking a file and unmapping it can block for a long time (on a file system
/// mounted with `discard`, freeing a file's blocks waits for the device to discard them,
/// milliseconds per file), and the maintenance thread must not spend that time holding the
/// maintenance lock while the memtables wait for their flush. A file is deleted only once
/// nothing references it, as before; only the thread that runs the drop changes. Dropping the
/// reaper (the engine closes) runs every job it was given first.
pub(crate) struct Reaper {
    tx: Option<mpsc::Sender<ReapJob>>,
    thread: Option<JoinHandle<()>>,
}

impl Reaper {
    /// Starts the thread; without one (spawning failed), jobs run on the caller's thread.
    fn start() -> Reaper {
        let (tx, rx) = mpsc::channel::<ReapJob>();
        let spawned = std::thread::Builder::new()
            .name("strata-lsm-reap".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            });
        match spawned {
            Ok(thread) => Reaper {
                tx: Some(tx),
                thread: Some(thread),
            },
            Err(_) => Reaper {
                tx: None,
                thread: None,
            },
        }
    }

    /// Drops `x` on the reaper thread (on this one when there is none).
    pub fn bury<T: Send + 'static>(&self, x: T) {
        self.run(Box::new(move || drop(x)));
    }

    /// Returns once every job given so far has run (so that `compact` returns with the
    /// disk space of the files it replaced freed, when nothing else holds them).
    pub fn drain(&self) {
        let (done, wait) = mpsc::channel::<()>();
        self.run(Box::new(move || {
            let _ = done.send(());
        }));
        let _ = wait.recv();
    }

    fn run(&self, job: ReapJob) {
        let job = match &self.tx {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                // The thread is gone (a job panicked): run it here.
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        job();
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Bytes written by flushes and compactions, counted per engine (since it was opened) and
/// for the whole process (see [`process_written`]): what write amplification is made of.
#[derive(Debug, Default)]
pub(super) struct WriteCounters {
    flushed_bytes: AtomicU64,
    compacted_bytes: AtomicU64,
    compaction_input_bytes: AtomicU64,
    compactions: AtomicU64,
    l0_merges: AtomicU64,
    moved_bytes: AtomicU64,
    moves: AtomicU64,
    rounds: AtomicU64,
}

/// The bytes written by flushes and compactions (a snapshot of the counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Bytes of L0 files written from memtables (flushes, and WAL replay at open).
    pub flushed_bytes: u64,
    /// Bytes of files written by compactions (merges).
    pub compacted_bytes: u64,
    /// Bytes of the files those compactions read (their inputs).
    pub compaction_input_bytes: u64,
    /// Compactions that merged files (each one job).
    pub compactions: u64,
    /// Of those, intra-L0 merges (L0 files merged into one L0 file).
    pub l0_merges: u64,
    /// Bytes of files moved down a level by a manifest edit, without being rewritten.
    pub moved_bytes: u64,
    /// Trivial moves (each one job, one or more files).
    pub moves: u64,
    /// Manifest records written for compactions and moves: one per round of jobs (each
    /// round one directory fsync and one manifest fsync), so `compactions + moves` over
    /// `compaction_rounds` is the jobs per round.
    pub compaction_rounds: u64,
}

impl Written {
    /// Bytes written to SSTs per byte flushed: `(flushed + compacted) / flushed` (1.0 when
    /// nothing was compacted; 0.0 when nothing was flushed). WAL bytes are not counted.
    pub fn amplification(&self) -> f64 {
        if self.flushed_bytes == 0 {
            return 0.0;
        }
        (self.flushed_bytes + self.compacted_bytes) as f64 / self.flushed_bytes as f64
    }

    /// What was written between `earlier` and `self`.
    pub fn since(&self, earlier: &Written) -> Written {
        Written {
            flushed_bytes: self.flushed_bytes - earlier.flushed_bytes,
            compacted_bytes: self.compacted_bytes - earlier.compacted_bytes,
            compaction_input_bytes: self.compaction_input_bytes - earlier.compaction_input_bytes,
            compactions: self.compactions - earlier.compactions,
            l0_merges: self.l0_merges - earlier.l0_merges,
            moved_bytes: self.moved_bytes - earlier.moved_bytes,
            moves: self.moves - earlier.moves,
            compaction_rounds: self.compaction_rounds - earlier.compaction_rounds,
        }
    }
}

static PROCESS: WriteCounters = WriteCounters {
    flushed_bytes: AtomicU64::new(0),
    compacted_bytes: AtomicU64::new(0),
    compaction_input_bytes: AtomicU64::new(0),
    compactions: AtomicU64::new(0),
    l0_merges: AtomicU64::new(0),
    moved_bytes: AtomicU64::new(0),
    moves: AtomicU64::new(0),
    rounds: AtomicU64::new(0),
};

/// What every engine of this process has written by flushes and compactions so far (for
/// benchmarks that reach the engine only through a higher layer: take the difference of two
/// snapshots with [`Written::since`]).
pub fn process_written() -> Written {
    PROCESS.snapshot()
}

impl WriteCounters {
    fn both(&self, f: impl Fn(&WriteCounters)) {
        f(self);
        f(&PROCESS);
    }

    /// A flush wrote an L0 file of `bytes`.
    pub fn flushed(&self, bytes: u64) {
        self.both(|c| {
            c.flushed_bytes.fetch_add(bytes, Ordering::Relaxed);
        });
    }

    /// A compaction read `input` bytes and wrote `output` bytes (into L0 when `to_l0`).
    pub fn compacted(&self, input: u64, output: u64, to_l0: bool) {
        self.both(|c| {
            c.compaction_input_bytes.fetch_add(input, Ordering::Relaxed);
            c.compacted_bytes.fetch_add(output, Ordering::Relaxed);
            c.compactions.fetch_add(1, Ordering::Relaxed);
            if to_l0 {
                c.l0_merges.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// A trivial move took `bytes` of files down a level.
    pub fn moved(&self, bytes: u64) {
        self.both(|c| {
            c.moved_bytes.fetch_add(bytes, Ordering::Relaxed);
            c.moves.fetch_add(1, Ordering::Relaxed);
        });
    }

    /// A round of compaction jobs was made durable by one manifest record.
    pub fn round(&self) {
        self.both(|c| {
            c.rounds.fetch_add(1, Ordering::Relaxed);
        });
    }

    /// The counters now.
    pub fn snapshot(&self) -> Written {
        Written {
            flushed_bytes: self.flushed_bytes.load(Ordering::Relaxed),
            compacted_bytes: self.compacted_bytes.load(Ordering::Relaxed),
            compaction_input_bytes: self.compaction_input_bytes.load(Ordering::Relaxed),
            compactions: self.compactions.load(Ordering::Relaxed),
            l0_merges: self.l0_merges.load(Ordering::Relaxed),
            moved_bytes: self.moved_bytes.load(Ordering::Relaxed),
            moves: self.moves.load(Ordering::Relaxed),
            compaction_rounds: self.rounds.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Reaper;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// Sets its flag when dropped, after a pause (a slow file deletion).
    struct SlowDrop(Arc<AtomicBool>, Option<mpsc::Sender<String>>);

    impl Drop for SlowDrop {
        fn drop(&mut self) {
            std::thread::sleep(Duration::from_millis(100));
            if let Some(tx) = &self.1 {
                let name = std::thread::current().name().unwrap_or("").to_string();
                let _ = tx.send(name);
            }
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn buried_values_drop_on_the_reaper_thread_and_drain_waits_for_them() {
        let r = Reaper::start();
        let done = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        r.bury(SlowDrop(Arc::clone(&done), Some(tx)));
        r.drain();
        assert!(
            done.load(Ordering::SeqCst),
            "drain returned before the drop ran"
        );
        assert_eq!(rx.recv().unwrap(), "strata-lsm-reap");
    }

    #[test]
    fn dropping_the_reaper_runs_every_job_first() {
        let r = Reaper::start();
        let flags: Vec<_> = (0..3).map(|_| Arc::new(AtomicBool::new(false))).collect();
        for f in &flags {
            r.bury(SlowDrop(Arc::clone(f), None));
        }
        drop(r);
        assert!(flags.iter().all(|f| f.load(Ordering::SeqCst)));
    }
}
