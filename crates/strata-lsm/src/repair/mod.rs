//! [`repair`]: recovers what can be recovered from a damaged database. It never deletes a
//! file: whatever it cannot use is moved into a `repair-<time>` directory inside the database
//! directory, and the report says what that costs.
//!
//! 1. The manifest: every intact record is applied in order. A damaged record whose header is
//!    intact is *salvaged* only when everything in it checks out against the disk: each file
//!    it adds exists (once) and verifies (its size, entry count and key range are then taken
//!    from the file itself), each file it removes is listed, and the edits have the shape of
//!    a flush (level-0 files, one per stripe) or of a compaction (one output level); its
//!    scalar fields (log number, next file, last sequence) are not trusted. Otherwise its
//!    edits are lost.
//! 2. The SSTs: every listed file is read in full; a damaged one is moved aside and its
//!    entries are reported lost (its keys then read as older files have them, if any do). An intact SST that the manifest does not list (its record was
//!    lost) is put back only where its place cannot matter — its key range meets no other
//!    file of its stripe, so no key has two versions to order — at the deepest level; others
//!    are moved aside, with their key ranges and entry counts in the report. (SSTs carry no
//!    sequence numbers, so no other placement can be proven.)
//! 3. The stripe count and partitioner: the recorded ones if every file lies where they put
//!    it; otherwise inferred the way an old database's are (see `docs/format/lsm.md`).
//! 4. The WALs the manifest does not cover are replayed in order up to the first damaged
//!    record; the damaged WAL and every later one are moved aside (their records after the
//!    damage are reported, not replayed: replaying them would skip the damaged batch and make
//!    a state that never existed).
//! 5. A new manifest is written, the old one moved aside, and a normal open replays the WALs
//!    into SSTs.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::check::{check, Problem};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::filename::FileKind;
use crate::fs::{Fs, RealFs};
use crate::lock::{LockError, LockMode};
use crate::lsm::LsmEngine;
use crate::manifest::{self, ManifestState, ManifestWriter};
use crate::options::LsmOptions;
use crate::sst::cache::BlockCache;
use crate::sst::table::{FileMeta, Source, Table, TableIter};

/// What [`repair`] did and what it could not save.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The problems found before the repair (by [`check`]).
    pub problems: Vec<Problem>,
    /// What was done, in order.
    pub actions: Vec<String>,
    /// What could not be recovered; empty when nothing was lost.
    pub lost: Vec<String>,
    /// Where files were moved (`None`: nothing was moved).
    pub moved_to: Option<PathBuf>,
}

impl RepairReport {
    /// True when the database was sound and nothing was changed.
    pub fn nothing_to_do(&self) -> bool {
        self.problems.is_empty() && self.actions.is_empty()
    }
}

/// Repairs the database in `dir` (see the module documentation). `options` give the file
/// system layer, and the stripe count and partitioner to assume when the damage erased them.
/// A sound database is left untouched.
pub fn repair(dir: &Path, options: LsmOptions) -> Result<RepairReport> {
    let fs: Arc<dyn Fs> = options.fs.clone().unwrap_or_else(|| Arc::new(RealFs));
    let before = check(dir, Some(Arc::clone(&fs)))?;
    let mut r = RepairReport {
        problems: before.problems,
        ..RepairReport::default()
    };
    if r.problems.is_empty() {
        return Ok(r);
    }
    {
        let _lock = fs.lock_dir(dir, LockMode::Exclusive).map_err(|e| match e {
            LockError::Held(holder) => Error::Locked {
                dir: dir.to_path_buf(),
                holder,
            },
            LockError::Io(path, source) => Error::Io { path, source },
        })?;
        let mut job = Job {
            fs: Arc::clone(&fs),
            dir: dir.to_path_buf(),
            names: fs.list(dir).map_err(Error::io(dir))?,
            cache: Arc::new(BlockCache::new(1 << 20)),
            aside: None,
            loss_point: None,
            r: &mut r,
        };
        let mut state = job.salvage_manifest()?;
        job.settle_ssts(&mut state)?;
        job.settle_layout(&mut state, &options)?;
        job.salvage_wals(&mut state)?;
        job.write_manifest(state)?;
    }
    // A normal open replays the WALs into SSTs and records the result.
    let engine = LsmEngine::open(
        dir,
        LsmOptions {
            partitioner: None,
            background: false,
            ..options
        },
    )?;
    engine.close()?;
    r.actions
        .push("opened the repaired database: WALs replayed into SSTs".into());
    Ok(r)
}

mod logs;
mod salvage;
mod ssts;

/// One repair under way: the directory, what it held when the repair began, and the report.
struct Job<'a> {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    names: Vec<String>,
    cache: Arc<BlockCache>,
    aside: Option<PathBuf>,
    /// The manifest's next file number where its first lost record was: files numbered below
    /// it that the manifest does not list are obsolete. `None`: nothing was lost, so every
    /// unlisted file is obsolete.
    loss_point: Option<u64>,
    r: &'a mut RepairReport,
}

/// What an SST on disk holds, read in full.
struct Summary {
    entries: u64,
    size: u64,
    smallest: Vec<u8>,
    largest: Vec<u8>,
}

impl Job<'_> {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Moves `name` into the repair directory (created on first use).
    fn move_aside(&mut self, name: &str) -> Result<()> {
        let aside = match &self.aside {
            Some(a) => a.clone(),
            None => {
                let secs = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let a = self.dir.join(format!("repair-{secs}"));
                self.fs.create_dir_all(&a).map_err(Error::io(&a))?;
                // The new directory's entry is durable before any file moves into it.
                self.fs.sync_dir(&self.dir).map_err(Error::io(&self.dir))?;
                self.r.moved_to = Some(a.clone());
                self.aside = Some(a.clone());
                a
            }
        };
        let to = aside.join(name);
        self.fs
            .rename(&self.path(name), &to)
            .map_err(Error::io(&to))?;
        // The file's new entry is durable before anything syncs the database directory (which
        // makes the old entry's removal durable): a power loss never leaves it under no name.
        self.fs.sync_dir(&aside).map_err(Error::io(&aside))?;
        self.names.retain(|n| n != name);
        self.r
            .actions
            .push(format!("moved {name} to {}", to.display()));
        Ok(())
    }

    /// Reads an SST in full: `None` when it is damaged (the reason goes to `why`).
    fn summarize(&self, name: &str, id: u64, why: &mut String) -> Option<Summary> {
        let path = self.path(name);
        let size = self.fs.open(&path).map(|f| f.len()).unwrap_or(0);
        let probe = FileMeta {
            id,
            size,
            entries: 0,
            smallest: Vec::new(),
            largest: Vec::new(),
        };
        let t = match Table::open(Arc::clone(&self.fs), &path, probe, Arc::clone(&self.cache)) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                *why = e.to_string();
                return None;
            }
        };
        let entries = match t.verify() {
            Ok(n) => n,
            Err(e) => {
                *why = e.to_string();
                return None;
            }
        };
        let edge = |reverse: bool| -> Result<Option<Vec<u8>>> {
            let mut it =
                TableIter::new(Arc::clone(&t), Bound::Unbounded, Bound::Unbounded, reverse);
            Ok(it.next_entry()?.map(|(k, _)| k))
        };
        match (edge(false), edge(true)) {
            (Ok(Some(smallest)), Ok(Some(largest))) => Some(Summary {
                entries,
                size,
                smallest,
                largest,
            }),
            (Err(e), _) | (_, Err(e)) => {
                *why = e.to_string();
                None
            }
            _ => {
                *why = "holds no entry".into();
                None
            }
        }
    }

    /// Step 5: the new manifest, then the old ones moved aside.
    fn write_manifest(&mut self, mut state: ManifestState) -> Result<()> {
        let number = state.next_file;
        state.next_file += 1;
        ManifestWriter::create(self.fs.as_ref(), &self.dir, number, &state)?;
        self.r.actions.push(format!(
            "wrote {} ({} SSTs) and made it current",
            manifest::manifest_name(number),
            state.live_files().count()
        ));
        let old: Vec<String> = self
            .names
            .iter()
            .filter(|n| matches!(FileKind::parse(n), Some(FileKind::Manifest(m)) if m != number))
            .cloned()
            .collect();
        for n in old {
            self.move_aside(&n)?;
        }
        Ok(())
    }
}
