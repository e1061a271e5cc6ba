//! A round of compactions: jobs of several stripes, each merged (or moved) on its own, then
//! made durable together — every output synced (in parallel), ONE directory fsync and ONE
//! manifest record (one atomic group of edits: all of the round's jobs or none) — and only
//! then installed in the stripes' versions and their inputs marked obsolete.
//!
//! A bulk load makes every stripe reach its L0 trigger at about the same time (the memtables
//! of all stripes are flushed together); one record per job cost a directory fsync and a
//! manifest fsync per merge (~2,600 of each in a 10^7-row load), on the device the writers'
//! group commits wait for.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::flush::{sync_files, Unsynced};
use super::inner::Inner;
use super::maint::Maint;
use crate::crash_point;
use crate::error::{Error, Result};
use crate::manifest::Edit;
use crate::sst::table::Table;
use crate::sync::write;

/// What a job of a round did, not yet durable nor visible.
pub(super) struct Done {
    /// The job's stripe.
    pub stripe: usize,
    /// Files the job takes out, with their levels.
    pub removed: Vec<(usize, Arc<Table>)>,
    /// Files the job puts in, with their levels.
    pub added: Vec<(usize, Arc<Table>)>,
    /// The new files, written but not synced.
    pub unsynced: Vec<Unsynced>,
    /// A merge (the removed files are replaced: obsolete once the round is durable), or a
    /// trivial move (the same files go down a level: nothing becomes obsolete).
    pub kind: Kind,
}

/// How a job changed its stripe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A merge into new files (`to_l0`: an intra-L0 merge).
    Merge {
        /// The outputs went into L0.
        to_l0: bool,
    },
    /// A trivial move: files go down a level by a manifest edit, not rewritten.
    Move,
}

impl Done {
    fn edits(&self, edits: &mut Vec<Edit>) {
        let stripe = self.stripe as u32;
        for (level, t) in &self.removed {
            edits.push(Edit::RemoveFile {
                stripe,
                level: *level as u8,
                id: t.meta.id,
            });
        }
        for (level, t) in &self.added {
            edits.push(Edit::AddFile {
                stripe,
                level: *level as u8,
                meta: t.meta.clone(),
            });
        }
    }
}

/// When a round stops taking jobs (besides frozen memtables waiting for their flush).
#[derive(Clone, Copy, Debug)]
pub(super) struct RoundLimit {
    /// Jobs at most.
    pub jobs: usize,
    /// Bytes of new files at most (written but unsynced until the round ends).
    pub bytes: u64,
}

impl RoundLimit {
    /// The limit for outputs cut at `sst_target_bytes`.
    pub fn of(sst_target_bytes: u64) -> RoundLimit {
        RoundLimit {
            jobs: 64,
            bytes: sst_target_bytes.saturating_mul(32),
        }
    }

    /// True when a round that holds `done` is full.
    pub fn full(&self, done: &[Done]) -> bool {
        let bytes: u64 = done
            .iter()
            .flat_map(|d| d.added.iter())
            .map(|(_, t)| t.meta.size)
            .sum();
        done.len() >= self.jobs || bytes >= self.bytes
    }
}

impl Inner {
    /// Makes a round's jobs durable in one manifest record, then visible: syncs every new
    /// file, fsyncs the directory (when there are new files), appends and fsyncs the edits of
    /// every job, installs the new versions and marks the merged inputs obsolete (they are
    /// deleted when their last reference goes, on the reaper thread).
    pub(super) fn commit_round(&self, m: &mut Maint, mut done: Vec<Done>) -> Result<()> {
        if done.is_empty() {
            return Ok(());
        }
        let unsynced: Vec<Unsynced> = done.iter_mut().flat_map(|d| d.unsynced.drain(..)).collect();
        let new_files = !unsynced.is_empty();
        sync_files(unsynced)?;
        if new_files {
            self.fs.sync_dir(&self.dir).map_err(Error::io(&self.dir))?;
        }
        let mut edits = Vec::new();
        for d in &done {
            d.edits(&mut edits);
        }
        edits.push(Edit::NextFile(self.next_file.load(Ordering::SeqCst)));
        crash_point::reached(crash_point::COMPACT_SYNCED);
        m.log_and_apply(edits)?;
        crash_point::reached(crash_point::COMPACT_LOGGED);
        for d in &done {
            let bytes = |f: &[(usize, Arc<Table>)]| f.iter().map(|(_, t)| t.meta.size).sum();
            match d.kind {
                Kind::Merge { to_l0 } => {
                    self.written
                        .compacted(bytes(&d.removed), bytes(&d.added), to_l0)
                }
                Kind::Move => self.written.moved(bytes(&d.added)),
            }
        }
        self.written.round();
        {
            let mut st = write(&self.state);
            for d in &done {
                let mut nv = (*st.versions[d.stripe]).clone();
                for (level, t) in &d.removed {
                    nv.remove(*level, t.meta.id);
                }
                for (level, t) in &d.added {
                    nv.add(*level, Arc::clone(t));
                }
                st.versions[d.stripe] = Arc::new(nv);
            }
            self.update_l0_max(&st);
        }
        for d in done {
            if let Kind::Merge { .. } = d.kind {
                for (_, t) in d.removed {
                    t.mark_obsolete();
                }
            }
        }
        self.stall_cv.notify_all();
        m.maybe_roll(self.fs.as_ref(), &self.dir, &self.next_file)
    }
}
