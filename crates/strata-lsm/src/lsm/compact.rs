//! Compaction: which files of a stripe to merge ([`pick_compaction`], a pure function of the
//! stripe's files and the policy, like fjall's `CompactionStrategy::choose`) and the merge
//! itself (LevelDB's `DoCompactionWork`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::flush::Unsynced;
use super::inner::Inner;
use super::round::{Done, Kind, RoundLimit};
use super::version::{overlapping, FileRef, Levels, StripeVersion};
use crate::crash_point;
use crate::engine::Direction;
use crate::error::Result;
use crate::iter::{LevelSource, MergeIter};
use crate::manifest::LEVELS;
use crate::options::LsmOptions;
use crate::sst::table::{sst_name, Source, SstWriter, Table, TableIter};
use crate::sync::read;

/// What decides when a stripe needs a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionPolicy {
    /// L0 files that trigger a compaction of L0 (into L1, or an intra-L0 merge).
    pub l0_trigger: usize,
    /// Target size of L1; each deeper level is 10 times larger.
    pub level1_bytes: u64,
    /// Intra-L0 merges (RocksDB's): when L0 reaches `l0_trigger` files holding at most this
    /// many bytes, and too few bytes for L1's turn (`l0_share`), new L0 files are merged into
    /// one L0 file instead of rewriting the L1 files they overlap. L1 is then rewritten only
    /// once L0 has grown to a share of its size, which cuts the write amplification of a
    /// stripe whose L1 stays under its target (every flush of a table stripe spans the
    /// stripe's whole key range, so every L0 → L1 job rewrites all of L1). 0 disables them.
    pub intra_l0_bytes: u64,
    /// L1's turn: L0 goes down into L1 once `l0_share` times its bytes reach the bytes of
    /// the L1 files it overlaps (2: once L0 holds half of them, so L1 grows by half at each
    /// L0 → L1 merge). Decided on bytes, not on how many files L0 holds when the job is
    /// picked, so a background thread that lags behind the flushes changes it little.
    pub l0_share: u64,
    /// Which L0 files an intra-L0 merge takes (size-tiered): the two newest, then each
    /// older one no larger than `tier_factor` times those taken together; the first larger
    /// one and every older one stay (the stripe's large old L0 file is not rewritten by each
    /// merge of a few new flushes; it goes down at L1's turn). 0: every L0 file (session 16's
    /// policy: the large file rewritten every `l0_trigger - 1` flushes).
    pub tier_factor: u64,
}

impl CompactionPolicy {
    /// The policy of these options.
    pub fn of(opts: &LsmOptions) -> CompactionPolicy {
        CompactionPolicy {
            l0_trigger: opts.l0_compaction_trigger,
            level1_bytes: opts.level1_bytes,
            // At most one output file or two (a merge cuts its outputs at this size).
            intra_l0_bytes: opts.sst_target_bytes,
            l0_share: 2,
            tier_factor: 2,
        }
    }
}

/// One compaction: `upper` (of `upper_level`) merged with the files of `lower` (of
/// `out_level`) they overlap, into new files of `out_level`.
#[derive(Debug, Clone)]
pub struct CompactionJob<T> {
    /// Input files of the upper level.
    pub upper: Vec<T>,
    /// Level of `upper`.
    pub upper_level: usize,
    /// Input files of the output level.
    pub lower: Vec<T>,
    /// Level of the outputs.
    pub out_level: usize,
    /// For a level ≥ 1 job: the new round-robin pointer of `upper_level` (the largest key of
    /// the file picked), so that the next job there starts after it.
    pub next_ptr: Option<Vec<u8>>,
}

/// Picks the next compaction of one stripe, or `None` when it needs none:
/// - when L0 has `l0_trigger` files: L0 → L1 (every L0 file and the L1 files they overlap)
///   when that is a trivial move, or L0 holds more than `intra_l0_bytes`, or `l0_share`
///   times L0's bytes reach those L1 files' bytes ("L1's turn"); else an intra-L0 merge
///   (`lower` empty, `out_level` 0) of the newest L0 files [`intra_l0_pick`] chooses;
/// - else Ln → Ln+1 for the first level over its target size (`level1_bytes · 10^(n-1)`): the
///   first file of Ln after `ptrs[n]` (round-robin by key; wraps around) and the Ln+1 files
///   it overlaps.
pub fn pick_compaction<T: FileRef>(
    v: &Levels<T>,
    policy: &CompactionPolicy,
    ptrs: &[Vec<u8>; LEVELS],
) -> Option<CompactionJob<T>> {
    if !v.levels[0].is_empty() && v.levels[0].len() >= policy.l0_trigger {
        let upper = v.levels[0].clone();
        let lo = upper.iter().map(|t| &t.meta().smallest).min()?.clone();
        let hi = upper.iter().map(|t| &t.meta().largest).max()?.clone();
        let lower = overlapping(&v.levels[1], &lo, &hi);
        let l0_bytes = v.bytes(0);
        let lower_bytes: u64 = lower.iter().map(|t| t.meta().size).sum();
        let moves = lower.is_empty() && disjoint(&upper);
        let l1_turn = moves
            || l0_bytes > policy.intra_l0_bytes
            || l0_bytes.saturating_mul(policy.l0_share.max(1)) >= lower_bytes;
        if !l1_turn {
            if let Some(n) = intra_l0_pick(&upper, policy) {
                return Some(CompactionJob {
                    upper: upper[..n].to_vec(),
                    upper_level: 0,
                    lower: Vec::new(),
                    out_level: 0,
                    next_ptr: None,
                });
            }
        }
        return Some(CompactionJob {
            upper,
            upper_level: 0,
            lower,
            out_level: 1,
            next_ptr: None,
        });
    }
    let mut target = policy.level1_bytes.max(1);
    for (level, ptr) in ptrs.iter().enumerate().take(LEVELS - 1).skip(1) {
        if v.bytes(level) > target {
            let files = &v.levels[level];
            let pick = files
                .iter()
                .find(|t| t.meta().smallest > *ptr)
                .or(files.first())?;
            let m = pick.meta();
            let lower = overlapping(&v.levels[level + 1], &m.smallest, &m.largest);
            return Some(CompactionJob {
                upper: vec![pick.clone()],
                upper_level: level,
                lower,
                out_level: level + 1,
                next_ptr: Some(m.largest.clone()),
            });
        }
        target = target.saturating_mul(10);
    }
    None
}

/// True when no two of `files` share a key (their ranges are disjoint).
pub fn disjoint<T: FileRef>(files: &[T]) -> bool {
    let mut r: Vec<(&[u8], &[u8])> = files
        .iter()
        .map(|t| (t.meta().smallest.as_slice(), t.meta().largest.as_slice()))
        .collect();
    r.sort_unstable();
    r.windows(2).all(|w| w[0].1 < w[1].0)
}

/// How many of the newest L0 files (`l0`, newest first) an intra-L0 merge takes, or `None`
/// when no merge would lower the L0 file count for sure. `tier_factor` 0: every file (when
/// there are 3 or more). Else size-tiered: the two newest, then each older file no larger
/// than `tier_factor` times the files taken so far (the first larger one, and every older
/// one, stay). A merge of two files only when they hold at most half of `intra_l0_bytes`
/// (its output is then one file: outputs are cut at `intra_l0_bytes`), so that every
/// intra-L0 merge lowers the count and the stripe's compactions end.
fn intra_l0_pick<T: FileRef>(l0: &[T], policy: &CompactionPolicy) -> Option<usize> {
    let n = if policy.tier_factor == 0 {
        l0.len()
    } else {
        let mut taken = 0u64;
        let mut n = 0;
        for t in l0 {
            let size = t.meta().size;
            if n >= 2 && size > taken.saturating_mul(policy.tier_factor) {
                break;
            }
            taken = taken.saturating_add(size);
            n += 1;
        }
        if n == 2 && taken > policy.intra_l0_bytes / 2 {
            return None;
        }
        n
    };
    (n >= 3 || (n == 2 && policy.tier_factor != 0)).then_some(n)
}

/// True when a job may drop tombstones: no file below its output level, and, for an
/// intra-L0 merge, no older L0 file outside the job (it may hold a value a tombstone of the
/// job's files hides).
fn drops_tombstones<T: FileRef>(v: &Levels<T>, job: &CompactionJob<T>) -> bool {
    let below_empty = (job.out_level + 1..LEVELS).all(|l| v.levels[l].is_empty());
    let l0_all_in = job.out_level > 0 || job.upper.len() == v.levels[0].len();
    below_empty && l0_all_in
}

/// Compaction inputs are read without filling the block cache: their blocks are dead once
/// the job ends, and would evict the blocks readers use.
fn whole(t: &Arc<Table>) -> Box<dyn Source> {
    Box::new(TableIter::uncached(Arc::clone(t)))
}

fn whole_level(files: &[Arc<Table>]) -> Box<dyn Source> {
    Box::new(LevelSource::uncached(files.to_vec()))
}

impl Inner {
    /// Runs one round of compaction jobs (see [`super::round`]): at most one job per stripe,
    /// stripes taken round-robin, until the round is full or frozen memtables wait for their
    /// flush; all of them made durable by one manifest record. False when no stripe needs
    /// a compaction.
    pub fn compact_one(&self) -> Result<bool> {
        self.with_maint(|m| {
            let versions = read(&self.state).versions.clone();
            let policy = CompactionPolicy::of(&self.opts);
            let limit = RoundLimit::of(self.opts.sst_target_bytes);
            let n = versions.len();
            let first = m.rr;
            let mut done: Vec<Done> = Vec::new();
            let mut r = Ok(());
            for i in 0..n {
                if !done.is_empty()
                    && (limit.full(&done) || self.has_frozen.load(Ordering::Acquire))
                {
                    break;
                }
                let s = (first + i) % n;
                let Some(job) = pick_compaction(&versions[s], &policy, &m.compact_ptr[s]) else {
                    continue;
                };
                m.rr = (s + 1) % n;
                if let Some(p) = job.next_ptr.clone() {
                    m.compact_ptr[s][job.upper_level] = p;
                }
                match self.run_job(s, &versions[s], job) {
                    Ok(d) => done.push(d),
                    Err(e) => {
                        r = Err(e);
                        break;
                    }
                }
                crash_point::reached(crash_point::COMPACT_JOB_WRITTEN);
            }
            let any = !done.is_empty();
            let r = r.and_then(|()| self.commit_round(m, done));
            // The replaced files' last references are often these (deleting them can
            // block): dropped on the reaper thread, not under the lock.
            m.reaper.bury(versions);
            if let Err(e) = &r {
                self.poison(e);
            }
            r.map(|()| any)
        })
    }

    /// Merges (or moves) the job's inputs into files of the output level, not yet synced
    /// nor in the manifest.
    fn run_job(&self, s: usize, v: &StripeVersion, job: CompactionJob<Arc<Table>>) -> Result<Done> {
        let removed: Vec<(usize, Arc<Table>)> = job
            .upper
            .iter()
            .map(|t| (job.upper_level, Arc::clone(t)))
            .chain(job.lower.iter().map(|t| (job.out_level, Arc::clone(t))))
            .collect();
        if job.lower.is_empty() && job.out_level > job.upper_level && disjoint(&job.upper) {
            // A trivial move (LevelDB's): files that overlap nothing of the output level nor
            // each other go down by a manifest edit (remove at `from`, add at `to`, same
            // file), without being rewritten. Sequential loads then write each key once
            // more, not once per level. Tombstones go down with their file (a merge at the
            // bottom would have dropped them).
            let added = job.upper.into_iter().map(|t| (job.out_level, t)).collect();
            return Ok(Done {
                stripe: s,
                removed,
                added,
                unsynced: Vec::new(),
                kind: Kind::Move,
            });
        }
        let bottom = drops_tombstones(v, &job);
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        if job.upper_level == 0 {
            sources.extend(job.upper.iter().map(whole));
        } else {
            sources.push(whole_level(&job.upper));
        }
        sources.push(whole_level(&job.lower));
        self.merge_job(s, sources, bottom, job.out_level, removed)
    }

    /// Merges `sources` into new files of `out_level` of stripe `s`, which replace the
    /// `removed` files once the round is committed.
    fn merge_job(
        &self,
        s: usize,
        sources: Vec<Box<dyn Source>>,
        bottom: bool,
        out_level: usize,
        removed: Vec<(usize, Arc<Table>)>,
    ) -> Result<Done> {
        let (outputs, unsynced) = self.write_merged(s as u32, sources, bottom)?;
        Ok(Done {
            stripe: s,
            removed,
            added: outputs.into_iter().map(|t| (out_level, t)).collect(),
            unsynced,
            kind: Kind::Merge {
                to_l0: out_level == 0,
            },
        })
    }

    /// Writes the merge of `sources` as SSTs of `sst_target_bytes` each (not synced: the
    /// round syncs them); drops tombstones when the outputs are the bottom of the stripe.
    fn write_merged(
        &self,
        stripe: u32,
        sources: Vec<Box<dyn Source>>,
        bottom: bool,
    ) -> Result<(Vec<Arc<Table>>, Vec<Unsynced>)> {
        let mut merge = MergeIter::new(sources, Direction::Forward);
        if !bottom {
            merge = merge.keep_tombstones();
        }
        let mut outputs: Vec<Arc<Table>> = Vec::new();
        let mut unsynced: Vec<Unsynced> = Vec::new();
        let mut w: Option<SstWriter> = None;
        let mut finish = |w: SstWriter, outputs: &mut Vec<Arc<Table>>| -> Result<()> {
            let (meta, file) = w.finish_unsynced()?;
            let path = self.dir.join(sst_name(stripe, meta.id));
            unsynced.push((path.clone(), file));
            outputs.push(Arc::new(
                Table::open(Arc::clone(&self.fs), &path, meta, Arc::clone(&self.cache))?
                    .with_mapped_reads(self.opts.mmap_reads),
            ));
            Ok(())
        };
        while let Some((k, v)) = merge.next_entry()? {
            let cur = match &mut w {
                Some(cur) => cur,
                None => {
                    let id = self.next_file.fetch_add(1, Ordering::SeqCst);
                    w.insert(SstWriter::create(
                        self.fs.as_ref(),
                        &self.dir.join(sst_name(stripe, id)),
                        id,
                        self.opts.block_bytes,
                    )?)
                }
            };
            cur.add(&k, v.as_deref())?;
            if cur.estimated_size() >= self.opts.sst_target_bytes {
                if let Some(done) = w.take() {
                    finish(done, &mut outputs)?;
                }
            }
        }
        if let Some(done) = w.take() {
            finish(done, &mut outputs)?;
        }
        Ok((outputs, unsynced))
    }

    /// Merges every file of every stripe into the last level, dropping tombstones.
    pub fn compact_all(&self) -> Result<()> {
        self.with_maint(|m| {
            for s in 0..self.stripes as usize {
                let v = Arc::clone(&read(&self.state).versions[s]);
                let files = v.file_count();
                if files == 0
                    || (files == 1 && v.levels[0].is_empty() && !v.levels[LEVELS - 1].is_empty())
                {
                    continue;
                }
                let mut sources: Vec<Box<dyn Source>> = v.levels[0].iter().map(whole).collect();
                let mut removed: Vec<(usize, Arc<Table>)> =
                    v.levels[0].iter().map(|t| (0, Arc::clone(t))).collect();
                for level in 1..LEVELS {
                    sources.push(whole_level(&v.levels[level]));
                    removed.extend(v.levels[level].iter().map(|t| (level, Arc::clone(t))));
                }
                let r = self
                    .merge_job(s, sources, true, LEVELS - 1, removed)
                    .and_then(|d| self.commit_round(m, vec![d]));
                m.reaper.bury(v);
                if let Err(e) = &r {
                    self.poison(e);
                }
                r?;
            }
            // The replaced files are deleted (unless a reader still holds them) by the time
            // a full compaction returns.
            m.reaper.drain();
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::table::FileMeta;

    fn f(id: u64, lo: &str, hi: &str, size: u64) -> FileMeta {
        FileMeta {
            id,
            size,
            entries: 1,
            smallest: lo.as_bytes().to_vec(),
            largest: hi.as_bytes().to_vec(),
        }
    }

    const POLICY: CompactionPolicy = CompactionPolicy {
        l0_trigger: 4,
        level1_bytes: 100,
        intra_l0_bytes: 0,
        l0_share: 2,
        tier_factor: 2,
    };

    /// The engine's policy (intra-L0 merges allowed while L0 holds at most 1000 bytes).
    const TIERED: CompactionPolicy = CompactionPolicy {
        intra_l0_bytes: 1000,
        ..POLICY
    };

    fn ids(files: &[FileMeta]) -> Vec<u64> {
        files.iter().map(|f| f.id).collect()
    }

    fn no_ptrs() -> [Vec<u8>; LEVELS] {
        Default::default()
    }

    #[test]
    fn nothing_to_do_below_every_trigger() {
        let mut v = Levels::default();
        for i in 0..3 {
            v.add(0, f(i, "a", "z", 1000));
        }
        v.add(1, f(10, "a", "m", 60));
        v.add(1, f(11, "n", "z", 40));
        assert!(pick_compaction(&v, &POLICY, &no_ptrs()).is_none());
        assert!(pick_compaction(&Levels::<FileMeta>::default(), &POLICY, &no_ptrs()).is_none());
    }

    #[test]
    fn l0_trigger_takes_every_l0_file_and_the_overlapping_l1_files() {
        let mut v = Levels::default();
        v.add(0, f(1, "c", "e", 1));
        v.add(0, f(2, "d", "g", 1));
        v.add(0, f(3, "b", "c", 1));
        v.add(0, f(4, "e", "f", 1));
        v.add(1, f(5, "a", "a", 1));
        v.add(1, f(6, "a", "b", 1));
        v.add(1, f(7, "f", "h", 1));
        v.add(1, f(8, "x", "z", 1));
        let job = pick_compaction(&v, &POLICY, &no_ptrs()).unwrap();
        assert_eq!((job.upper_level, job.out_level), (0, 1));
        assert_eq!(ids(&job.upper), vec![4, 3, 2, 1], "newest first");
        assert_eq!(ids(&job.lower), vec![6, 7]);
        assert_eq!(job.next_ptr, None);
    }

    #[test]
    fn l0_wins_over_an_oversized_level() {
        let mut v = Levels::default();
        for i in 0..4 {
            v.add(0, f(i, "a", "b", 1));
        }
        v.add(1, f(9, "a", "z", 10_000));
        let job = pick_compaction(&v, &POLICY, &no_ptrs()).unwrap();
        assert_eq!(job.upper_level, 0);
    }

    #[test]
    fn oversized_level_goes_round_robin_by_key() {
        let mut v = Levels::default();
        v.add(1, f(1, "a", "c", 60));
        v.add(1, f(2, "d", "f", 60));
        v.add(1, f(3, "g", "i", 60));
        v.add(2, f(4, "a", "b", 1));
        v.add(2, f(5, "c", "e", 1));
        v.add(2, f(6, "h", "z", 1));
        let mut ptrs = no_ptrs();
        let mut picked = Vec::new();
        for _ in 0..4 {
            let job = pick_compaction(&v, &POLICY, &ptrs).unwrap();
            assert_eq!((job.upper_level, job.out_level), (1, 2));
            picked.push((ids(&job.upper), ids(&job.lower)));
            ptrs[1] = job.next_ptr.unwrap();
        }
        assert_eq!(
            picked,
            vec![
                (vec![1], vec![4, 5]),
                (vec![2], vec![5]),
                (vec![3], vec![6]),
                (vec![1], vec![4, 5]),
            ]
        );
    }

    #[test]
    fn deeper_levels_have_ten_times_the_target() {
        let mut v = Levels::default();
        v.add(1, f(1, "a", "b", 100)); // exactly the target: not over
        v.add(2, f(2, "a", "b", 999));
        assert!(pick_compaction(&v, &POLICY, &no_ptrs()).is_none());
        v.add(2, f(3, "c", "d", 2));
        let job = pick_compaction(&v, &POLICY, &no_ptrs()).unwrap();
        assert_eq!((job.upper_level, job.out_level), (2, 3));
        assert_eq!(ids(&job.upper), vec![2]);
        assert!(job.lower.is_empty());
    }

    #[test]
    fn the_last_level_is_never_compacted_down() {
        let mut v = Levels::default();
        v.add(LEVELS - 1, f(1, "a", "z", u64::MAX / 2));
        assert!(pick_compaction(&v, &POLICY, &no_ptrs()).is_none());
    }

    /// A table stripe: one large old L0 file, three new flushes, all spanning the stripe's
    /// range, over a large L1.
    fn stripe_with_large_old_l0(l1: u64) -> Levels<FileMeta> {
        let mut v = Levels::default();
        v.add(0, f(1, "a", "z", 300));
        for id in 2..5 {
            v.add(0, f(id, "a", "z", 20));
        }
        v.add(1, f(10, "a", "m", l1 / 2));
        v.add(1, f(11, "n", "z", l1 - l1 / 2));
        v
    }

    #[test]
    fn an_intra_l0_merge_leaves_the_large_old_l0_file() {
        let v = stripe_with_large_old_l0(1000);
        let job = pick_compaction(&v, &TIERED, &no_ptrs()).unwrap();
        assert_eq!((job.upper_level, job.out_level), (0, 0));
        assert_eq!(ids(&job.upper), vec![4, 3, 2], "the new files, not file 1");
        assert!(job.lower.is_empty());
        // Session 16's policy (`tier_factor` 0) merged every L0 file.
        let all = CompactionPolicy {
            tier_factor: 0,
            ..TIERED
        };
        assert_eq!(
            ids(&pick_compaction(&v, &all, &no_ptrs()).unwrap().upper),
            vec![4, 3, 2, 1]
        );
    }

    #[test]
    fn an_intra_l0_merge_keeps_tombstones_while_older_l0_files_stay() {
        // Nothing below L0, so a merge of every L0 file is the bottom of the stripe...
        let mut v = Levels::default();
        v.add(0, f(1, "a", "z", 300));
        for id in 2..5 {
            v.add(0, f(id, "a", "z", 20));
        }
        let job = |upper: Vec<FileMeta>| CompactionJob {
            upper,
            upper_level: 0,
            lower: Vec::new(),
            out_level: 0,
            next_ptr: None,
        };
        assert!(drops_tombstones(&v, &job(v.levels[0].clone())));
        // ...but a merge of the new files is not: the old L0 file may hold what a tombstone
        // of theirs hides.
        assert!(!drops_tombstones(&v, &job(v.levels[0][..3].to_vec())));
        v.add(2, f(9, "a", "b", 1));
        assert!(!drops_tombstones(&v, &job(v.levels[0].clone())));
    }

    #[test]
    fn size_tiered_intra_l0_merges_take_older_files_up_to_the_factor() {
        let sizes = |s: &[u64]| -> Vec<FileMeta> {
            // Newest first, as L0 holds them.
            s.iter()
                .enumerate()
                .map(|(i, &b)| f(i as u64, "a", "z", b))
                .collect()
        };
        // 10 + 10, then 40 <= 2·20, then 60 <= 2·60, then 300 > 2·120: stops.
        assert_eq!(
            intra_l0_pick(&sizes(&[10, 10, 40, 60, 300]), &TIERED),
            Some(4)
        );
        // The two newest always; the third when no larger than twice them.
        assert_eq!(intra_l0_pick(&sizes(&[10, 30, 81, 5]), &TIERED), Some(2));
        // Two files holding more than half of `intra_l0_bytes` might make two outputs: no
        // merge (L0 → L1 instead), so every intra-L0 merge lowers the L0 file count.
        assert_eq!(intra_l0_pick(&sizes(&[300, 300, 5000]), &TIERED), None);
        let all = CompactionPolicy {
            tier_factor: 0,
            ..TIERED
        };
        assert_eq!(intra_l0_pick(&sizes(&[10, 10, 5000]), &all), Some(3));
        assert_eq!(intra_l0_pick(&sizes(&[10, 10]), &all), None);
    }

    #[test]
    fn l0_goes_down_once_it_holds_its_share_of_l1() {
        // L0 holds 360 bytes: with `l0_share` 2, L1's turn comes at an L1 of 720 bytes or less.
        let v = stripe_with_large_old_l0(721);
        assert_eq!(
            pick_compaction(&v, &TIERED, &no_ptrs()).unwrap().out_level,
            0
        );
        let v = stripe_with_large_old_l0(720);
        let job = pick_compaction(&v, &TIERED, &no_ptrs()).unwrap();
        assert_eq!((job.upper_level, job.out_level), (0, 1));
        assert_eq!(ids(&job.upper), vec![4, 3, 2, 1]);
        assert_eq!(ids(&job.lower), vec![10, 11]);
        assert!(drops_tombstones(&v, &job), "nothing below L1");
        // More than `intra_l0_bytes` in L0: L1's turn whatever L1 holds.
        let big = CompactionPolicy {
            intra_l0_bytes: 359,
            ..TIERED
        };
        let v = stripe_with_large_old_l0(100_000);
        assert_eq!(pick_compaction(&v, &big, &no_ptrs()).unwrap().out_level, 1);
    }
}
