//! The manifest writer and the state it describes (LevelDB's `VersionSet`): one edit group is
//! logged (appended and fsynced) before it is applied, and the manifest is rolled to a fresh
//! snapshot when it grows large.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

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
        }
    }
}
