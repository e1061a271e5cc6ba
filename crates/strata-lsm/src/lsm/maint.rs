//! The manifest writer and the state it describes (LevelDB's `VersionSet`): one edit group is
//! logged (appended and fsynced) before it is applied, and the manifest is rolled to a fresh
//! snapshot when it grows large.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::fs::Fs;
use crate::manifest::{self, Edit, ManifestState, ManifestWriter, LEVELS};

/// A manifest larger than this is rolled over into a fresh snapshot.
const ROLL_BYTES: u64 = 4 << 20;

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
}

impl Maint {
    /// A fresh maintenance state over a manifest writer.
    pub fn new(manifest: ManifestWriter, mstate: ManifestState) -> Maint {
        let stripes = mstate.stripes as usize;
        Maint {
            manifest,
            mstate,
            compact_ptr: (0..stripes).map(|_| Default::default()).collect(),
            rr: 0,
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
        if self.manifest.bytes < ROLL_BYTES {
            return Ok(());
        }
        let number = next_file.fetch_add(1, Ordering::SeqCst);
        self.mstate.next_file = self.mstate.next_file.max(number + 1);
        let old = self.manifest.number;
        self.manifest = ManifestWriter::create(fs, dir, number, &self.mstate)?;
        // The old manifest is obsolete once CURRENT names the new one (synced above).
        let _ = fs.remove(&dir.join(manifest::manifest_name(old)));
        Ok(())
    }
}
