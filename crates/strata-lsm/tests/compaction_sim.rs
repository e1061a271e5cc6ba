//! A simulator of the compaction policy alone ([`pick_compaction`], a pure function of one
//! stripe's files): flush files into one stripe, run every job the policy picks, and count
//! the bytes rewritten. It judges a policy without the real engine, and checks what any
//! policy must keep true: no byte is lost or duplicated, levels below 0 stay disjoint and
//! sorted, and a sequential load is all trivial moves.
//!
//! Model: a stripe's keys are `u64`s (8 bytes big-endian); a merge's outputs hold exactly its
//! inputs' bytes (a bulk load has no overwrites), cut into `sst_target` files that split the
//! merged key range evenly. A job whose lower inputs are empty and whose upper inputs are
//! disjoint is a trivial move (as `run_job` does it), which writes nothing.

use strata_lsm::lsm::{pick_compaction, CompactionPolicy, Levels};
use strata_lsm::manifest::LEVELS;
use strata_lsm::sst::table::FileMeta;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

fn key(k: u64) -> Vec<u8> {
    k.to_be_bytes().to_vec()
}

fn unkey(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// Bytes written while loading one stripe.
#[derive(Debug, Default, Clone, Copy)]
struct Written {
    flushed: u64,
    compacted: u64,
    moved_files: u64,
    jobs: u64,
    max_l0: usize,
    /// L0 files after each flush settled, summed (mean = `l0_sum / flushes`).
    l0_sum: u64,
    flushes: u64,
}

impl Written {
    /// Bytes written per byte of user data (flush + compaction).
    fn amplification(&self) -> f64 {
        (self.flushed + self.compacted) as f64 / self.flushed.max(1) as f64
    }

    /// Mean L0 files a point read meets (sampled after each flush's compactions).
    fn mean_l0(&self) -> f64 {
        self.l0_sum as f64 / self.flushes.max(1) as f64
    }
}

struct Sim {
    v: Levels<FileMeta>,
    ptrs: [Vec<u8>; LEVELS],
    policy: CompactionPolicy,
    /// A candidate change, judged here before it goes into `pick_compaction`: `Some((ratio,
    /// max))` defers an L0 → L1 job while L0 holds fewer than `max` files and
    /// `ratio · bytes(L0) < bytes(L1)` (a tiered L0: L1 is rewritten only when L0 has grown
    /// to a fair share of it).
    defer_l0: Option<(u64, usize)>,
    /// A candidate: `Some(ratio)` replaces an L0 → L1 job by an L0 → L0 merge of every L0
    /// file into one (RocksDB's intra-L0 compaction) while `ratio · bytes(L0) < bytes(L1)`:
    /// L0 keeps at most `l0_trigger` files, and L1 is rewritten only when L0 has grown to a
    /// `1/ratio` share of it.
    intra_l0: Option<u64>,
    sst_target: u64,
    /// Compactions run after every `lag` flushes (1: the background thread keeps up; more:
    /// it lags behind and finds more L0 files when it picks a job).
    lag: u64,
    next_id: u64,
    w: Written,
}

impl Sim {
    fn new(policy: CompactionPolicy, sst_target: u64) -> Sim {
        Sim {
            v: Levels::default(),
            ptrs: Default::default(),
            policy,
            defer_l0: None,
            intra_l0: None,
            sst_target,
            lag: 1,
            next_id: 1,
            w: Written::default(),
        }
    }

    fn file(&mut self, lo: u64, hi: u64, size: u64) -> FileMeta {
        let id = self.next_id;
        self.next_id += 1;
        FileMeta {
            id,
            size,
            entries: 1,
            smallest: key(lo),
            largest: key(hi),
        }
    }

    /// A flush of `size` bytes with keys in `[lo, hi]`, then every compaction it triggers.
    fn flush(&mut self, lo: u64, hi: u64, size: u64) {
        let f = self.file(lo, hi, size);
        self.v.add(0, f);
        self.w.flushed += size;
        self.w.max_l0 = self.w.max_l0.max(self.v.levels[0].len());
        if (self.w.flushes + 1).is_multiple_of(self.lag) {
            self.settle();
        }
        self.w.l0_sum += self.v.levels[0].len() as u64;
        self.w.flushes += 1;
    }

    fn settle(&mut self) {
        for _ in 0..100_000 {
            let Some(mut job) = pick_compaction(&self.v, &self.policy, &self.ptrs) else {
                return;
            };
            if let Some(ratio) = self.intra_l0 {
                if job.upper_level == 0 && ratio * self.v.bytes(0) < self.v.bytes(1) {
                    job.lower.clear();
                    job.out_level = 0;
                }
            }
            if let Some((ratio, max)) = self.defer_l0 {
                let l0 = &self.v.levels[0];
                if job.upper_level == 0
                    && l0.len() < max
                    && ratio * self.v.bytes(0) < self.v.bytes(1)
                {
                    return;
                }
            }
            self.w.jobs += 1;
            if let Some(p) = job.next_ptr.clone() {
                self.ptrs[job.upper_level] = p;
            }
            let inputs: Vec<(usize, FileMeta)> = job
                .upper
                .iter()
                .map(|f| (job.upper_level, f.clone()))
                .chain(job.lower.iter().map(|f| (job.out_level, f.clone())))
                .collect();
            for (level, f) in &inputs {
                self.v.remove(*level, f.id);
            }
            if job.lower.is_empty() && job.out_level > job.upper_level && disjoint(&job.upper) {
                self.w.moved_files += job.upper.len() as u64;
                for f in job.upper {
                    self.v.add(job.out_level, f);
                }
            } else {
                let bytes: u64 = inputs.iter().map(|(_, f)| f.size).sum();
                let lo = inputs
                    .iter()
                    .map(|(_, f)| unkey(&f.smallest))
                    .min()
                    .unwrap();
                let hi = inputs.iter().map(|(_, f)| unkey(&f.largest)).max().unwrap();
                self.w.compacted += bytes;
                let n = bytes.div_ceil(self.sst_target).max(1);
                let span = (hi - lo) / n;
                for i in 0..n {
                    let a = lo + i * span + u64::from(i > 0);
                    let b = if i + 1 == n { hi } else { lo + (i + 1) * span };
                    let size = bytes / n + u64::from(i < bytes % n);
                    let f = self.file(a, b, size);
                    self.v.add(job.out_level, f);
                }
            }
            self.check();
        }
        panic!("the policy never settles");
    }

    /// Levels below 0 sorted and disjoint; every flushed byte still in exactly one file.
    fn check(&self) {
        for level in 1..LEVELS {
            let files = &self.v.levels[level];
            for w in files.windows(2) {
                assert!(
                    w[0].largest < w[1].smallest,
                    "level {level}: files {} and {} overlap",
                    w[0].id,
                    w[1].id
                );
            }
        }
        let held: u64 = (0..LEVELS).map(|l| self.v.bytes(l)).sum();
        assert_eq!(held, self.w.flushed, "bytes lost or duplicated");
    }
}

fn disjoint(files: &[FileMeta]) -> bool {
    let mut r: Vec<(&[u8], &[u8])> = files
        .iter()
        .map(|f| (f.smallest.as_slice(), f.largest.as_slice()))
        .collect();
    r.sort_unstable();
    r.windows(2).all(|w| w[0].1 < w[1].0)
}

/// The engine's defaults (`CompactionPolicy::of(&LsmOptions::default())`).
const DEFAULT: CompactionPolicy = CompactionPolicy {
    l0_trigger: 4,
    level1_bytes: 8 * MIB,
    intra_l0_bytes: SST_TARGET,
    l0_share: 2,
    tier_factor: 2,
};
/// Session 16's policy: an intra-L0 merge takes every L0 file (the large old one too) while
/// L0 holds fewer bytes than L1.
const SESSION16: CompactionPolicy = CompactionPolicy {
    l0_share: 1,
    tier_factor: 0,
    ..DEFAULT
};
/// The defaults before session 7: plain leveled, no intra-L0 merges.
const LEVELED: CompactionPolicy = CompactionPolicy {
    intra_l0_bytes: 0,
    ..DEFAULT
};
const SST_TARGET: u64 = 4 * MIB;

/// One stripe of a table load: every flush file spans the stripe's whole key range (table
/// keys start with the partition hash), `flushes` files of `flush` bytes.
fn spread_load(policy: CompactionPolicy, flush: u64, flushes: u64) -> Written {
    spread_load_deferred(policy, None, flush, flushes)
}

fn spread_load_deferred(
    policy: CompactionPolicy,
    defer_l0: Option<(u64, usize)>,
    flush: u64,
    flushes: u64,
) -> Written {
    spread_load_with(policy, defer_l0, None, flush, flushes)
}

fn spread_load_with(
    policy: CompactionPolicy,
    defer_l0: Option<(u64, usize)>,
    intra_l0: Option<u64>,
    flush: u64,
    flushes: u64,
) -> Written {
    let mut s = Sim::new(policy, SST_TARGET);
    s.defer_l0 = defer_l0;
    s.intra_l0 = intra_l0;
    for i in 0..flushes {
        // Each flush's keys spread over the whole range, a little different each time.
        s.flush(i % 7, u64::MAX / 2 - i % 5, flush);
    }
    s.w
}

/// One stripe of a sequential load: each flush file holds the next key range.
fn sequential_load(policy: CompactionPolicy, flush: u64, flushes: u64) -> Written {
    let mut s = Sim::new(policy, SST_TARGET);
    for i in 0..flushes {
        s.flush(i * 1000, i * 1000 + 999, flush);
    }
    s.w
}

#[test]
fn a_sequential_load_is_all_trivial_moves() {
    for flushes in [1, 4, 50, 500] {
        let w = sequential_load(DEFAULT, 4 * MIB, flushes);
        assert_eq!(w.compacted, 0, "{flushes} flushes: {w:?}");
    }
}

#[test]
fn one_flush_file_per_compaction_input_is_never_lost() {
    // Many small spread flushes: exercises L0 → L1 merges with overlapping L1 files and the
    // deeper round-robin jobs; `check` runs after every job.
    let w = spread_load(DEFAULT, 512 * KIB, 2000);
    assert!(w.jobs > 100, "{w:?}");
    assert!(w.max_l0 <= DEFAULT.l0_trigger, "{w:?}");
}

/// Write amplification of one stripe of the tables bulk load (256 stripes; the memtables
/// freeze at half of the 64 MiB budget, so a flush writes ~128 KiB per stripe), at 10^6 rows
/// (~150 MB, ~0.6 MB per stripe) and 10^7 rows (~1.5 GB, ~6 MB per stripe). Printed with
/// `cargo test -p strata-lsm --release --test compaction_sim -- --nocapture`.
#[test]
fn write_amplification_of_a_table_load_grows_with_the_stripe() {
    let flush = 128 * KIB;
    let small = spread_load(LEVELED, flush, 5);
    let large = spread_load(LEVELED, flush, 47);
    println!(
        "10^6 rows, one stripe: {small:?} amplification {:.2}",
        small.amplification()
    );
    println!(
        "10^7 rows, one stripe: {large:?} amplification {:.2}",
        large.amplification()
    );
    for trigger in [4, 8, 12] {
        for l1 in [MIB, 8 * MIB] {
            let p = CompactionPolicy {
                l0_trigger: trigger,
                level1_bytes: l1,
                ..LEVELED
            };
            let w = spread_load(p, flush, 47);
            println!(
                "l0_trigger {trigger:2} level1 {:2} MiB: amplification {:.2} (jobs {}, max L0 {})",
                l1 / MIB,
                w.amplification(),
                w.jobs,
                w.max_l0
            );
        }
    }
    for (ratio, max) in [(1, 8), (1, 12), (2, 12), (4, 12)] {
        let w = spread_load_deferred(LEVELED, Some((ratio, max)), flush, 47);
        let w6 = spread_load_deferred(LEVELED, Some((ratio, max)), flush, 5);
        println!(
            "defer L0 -> L1 while {ratio}*L0 < L1 and L0 < {max} files: amplification {:.2} at 10^7, {:.2} at 10^6 (max L0 {})",
            w.amplification(),
            w6.amplification(),
            w.max_l0
        );
    }
    for ratio in [1, 2, 4] {
        for trigger in [4, 6] {
            let p = CompactionPolicy {
                l0_trigger: trigger,
                ..LEVELED
            };
            let w = spread_load_with(p, None, Some(ratio), flush, 47);
            let w6 = spread_load_with(p, None, Some(ratio), flush, 5);
            println!(
                "intra-L0 merge while {ratio}*L0 < L1, l0_trigger {trigger}: amplification {:.2} at 10^7, {:.2} at 10^6 (max L0 {}, mean L0 {:.2})",
                w.amplification(),
                w6.amplification(),
                w.max_l0,
                w.mean_l0()
            );
        }
    }
    println!(
        "leveled (before session 7): mean L0 {:.2} at 10^7, {:.2} at 10^6",
        large.mean_l0(),
        small.mean_l0()
    );
    // The stripe's L1 stays under its target, so each L0 → L1 job rewrites all of it: the
    // cost per byte grows with the stripe's size (quadratic total), not with log(size).
    // This pins the DEFAULT policy's known defect (issue 9, the 10^7 bulk load): a policy
    // that fixes it makes this fail on purpose; then replace it with the new bound.
    assert!(large.amplification() > 2.0 * small.amplification());
}

/// The engine's policy (intra-L0 merges while L0 is smaller than the L1 files it overlaps):
/// the same L0 bound as plain leveled (`l0_trigger` files), a third less written at 10^7.
#[test]
fn intra_l0_merges_cut_the_write_amplification_of_a_large_stripe() {
    let flush = 128 * KIB;
    for (rows, flushes) in [("10^5", 1), ("10^6", 5), ("10^7", 47), ("10^8", 470)] {
        let new = spread_load(DEFAULT, flush, flushes);
        let old = spread_load(LEVELED, flush, flushes);
        println!(
            "{rows} rows, one stripe: amplification {:.2} (leveled {:.2}), max L0 {} ({}), mean L0 {:.2} ({:.2}), jobs {} ({})",
            new.amplification(),
            old.amplification(),
            new.max_l0,
            old.max_l0,
            new.mean_l0(),
            old.mean_l0(),
            new.jobs,
            old.jobs
        );
        assert!(new.max_l0 <= DEFAULT.l0_trigger, "{new:?}");
        assert!(new.amplification() <= old.amplification() + 1e-9, "{rows}");
    }
    let new = spread_load(DEFAULT, flush, 47);
    assert!(new.amplification() < 4.5, "{new:?}");
    assert!(new.mean_l0() < 2.0, "{new:?}");
    // A single-stripe kv store flushes 32 MiB files: larger than `intra_l0_bytes`, so its
    // policy is plain leveled.
    let kv = spread_load(DEFAULT, 32 * MIB, 30);
    let kv_old = spread_load(LEVELED, 32 * MIB, 30);
    assert_eq!(kv.compacted, kv_old.compacted);
}

/// One stripe of a table load with `flushes` flush files of `flush` bytes, its compactions run
/// after every `lag` flushes.
fn lagged_load(policy: CompactionPolicy, flush: u64, flushes: u64, lag: u64) -> Written {
    let mut s = Sim::new(policy, SST_TARGET);
    s.lag = lag;
    for i in 0..flushes {
        s.flush(i % 7, u64::MAX / 2 - i % 5, flush);
    }
    s.settle();
    s.w
}

/// The 10^7-row typed load as measured (`tables_prof --phase load --typed --parts 100000
/// --per 100`): 1,143 MB flushed into 256 stripes, ~62 flushes of ~72 KiB per stripe (10^6:
/// ~5). Session 16's policy wrote 2.4–4.3 times the flushed bytes depending on whether the
/// background thread kept up (it merged exactly `l0_trigger` files, rewriting the large old
/// L0 file every three flushes) or lagged (more files per merge). The policy now: L1's turn
/// by bytes, size-tiered intra-L0 merges that leave the large old L0 file alone.
#[test]
fn the_10e7_table_load_writes_less_and_depends_less_on_timing() {
    let flush = 72 * KIB;
    let lags = [1, 2, 3, 4, 6, 8];
    let mut spread = Vec::new();
    for (name, p) in [("session 16", SESSION16), ("now", DEFAULT)] {
        let w: Vec<Written> = lags.iter().map(|&l| lagged_load(p, flush, 62, l)).collect();
        let amp: Vec<f64> = w.iter().map(Written::amplification).collect();
        let lo = amp.iter().cloned().fold(f64::MAX, f64::min);
        let hi = amp.iter().cloned().fold(0.0, f64::max);
        println!(
            "10^7-like stripe (62 x 72 KiB), {name}: amplification by lag {lags:?}: {:.2?}; mean L0 {:.2?}; jobs {:?}",
            amp,
            w.iter().map(Written::mean_l0).collect::<Vec<_>>(),
            w.iter().map(|w| w.jobs).collect::<Vec<_>>()
        );
        spread.push((amp[0], w[0].mean_l0(), lo, hi));
    }
    let (old, new) = (spread[0], spread[1]);
    assert!(new.0 < 0.9 * old.0, "keeping up: {new:?} against {old:?}");
    assert!(new.1 < 2.0, "mean L0 files when keeping up: {new:?}");
    assert!(new.3 <= old.3, "the worst lag: {new:?} against {old:?}");
    assert!(
        new.3 / new.2 < old.3 / old.2,
        "spread over lags: {new:?} against {old:?}"
    );
    for flushes in [5, 31, 47, 62, 93] {
        let w = lagged_load(DEFAULT, flush, flushes, 1);
        let o = lagged_load(SESSION16, flush, flushes, 1);
        println!(
            "{flushes} flushes of 72 KiB: amplification {:.2} (session 16 {:.2}), mean L0 {:.2} ({:.2})",
            w.amplification(),
            o.amplification(),
            w.mean_l0(),
            o.mean_l0()
        );
        assert!(w.mean_l0() < 2.0, "{flushes} flushes: {w:?}");
    }
}
