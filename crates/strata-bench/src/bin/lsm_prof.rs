//! Read-path profiling harness for the Strata LSM (not a peer comparison): builds a database
//! like `lsm`'s main one (N sequential puts, then N random overwrites, 16-byte keys, 100-byte
//! values), then runs one read workload in a function of its own, so that
//! `valgrind --tool=callgrind --toggle-collect='*prof_*'` counts only that workload's
//! instructions (perf counters are not available on every machine).
//!
//! ```text
//! lsm_prof --dir D --n N [--stripes S] [--settle] [--cold] [--cache-mib M] --ops K \
//!          --phase readrandom|readmissing|getwith|seekrandom|rangeseek|readseq|cursorseq \
//!          [--repeat R]
//! ```
//! `--cold` skips the warming reads (the cache holds only what the build left in it).
//! `--cache-mib` sets the block cache (default 256 MiB, as the `lsm` bench).
//! The database in `D` is built on first use and reused (delete `D` to rebuild).

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

use strata_lsm::{
    Cursor, Direction, Engine, KeyRange, LsmEngine, LsmOptions, SyncMode, WriteBatch,
};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

fn build(e: &LsmEngine, n: u64) {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let value = |rng: &mut Rng| {
        let mut v = Vec::with_capacity(104);
        while v.len() < 100 {
            v.extend_from_slice(&rng.next().to_le_bytes());
        }
        v.truncate(100);
        v
    };
    for random in [false, true] {
        let mut b = WriteBatch::new();
        for i in 0..n {
            let k = if random { key(rng.next() % n) } else { key(i) };
            b.put(k, value(&mut rng));
            if b.op_count() == 1000 {
                e.write(std::mem::take(&mut b)).expect("write");
            }
        }
        e.write(b).expect("write");
    }
}

#[inline(never)]
fn prof_readrandom(e: &LsmEngine, n: u64, ops: u64) -> u64 {
    let mut rng = Rng(42);
    let mut found = 0;
    for _ in 0..ops {
        if e.get(&key(rng.next() % n)).expect("get").is_some() {
            found += 1;
        }
    }
    found
}

/// Point reads of absent keys inside the key range (each a present key with one byte more),
/// which the files' filters answer.
#[inline(never)]
fn prof_readmissing(e: &LsmEngine, n: u64, ops: u64) -> u64 {
    let mut rng = Rng(42);
    let mut found = 0;
    for _ in 0..ops {
        let k = [key(rng.next() % n).as_slice(), b"x"].concat();
        if e.get(&k).expect("get").is_some() {
            found += 1;
        }
    }
    found
}

/// Point reads that borrow the value (`LsmEngine::get_with`, what the `lsm` bench uses).
#[inline(never)]
fn prof_getwith(e: &LsmEngine, n: u64, ops: u64) -> u64 {
    let mut rng = Rng(42);
    let mut found = 0;
    for _ in 0..ops {
        if e.get_with(&key(rng.next() % n), |v| v.len())
            .expect("get")
            .is_some()
        {
            found += 1;
        }
    }
    found
}

/// Seeks through the cursor API, then 10 steps (borrowed pairs).
#[inline(never)]
fn prof_seekrandom(e: &LsmEngine, n: u64, ops: u64) -> u64 {
    let mut rng = Rng(43);
    let mut seen = 0;
    for _ in 0..ops {
        let r = KeyRange {
            start: std::ops::Bound::Included(key(rng.next() % n)),
            end: std::ops::Bound::Unbounded,
        };
        let mut c = e.cursor(r, Direction::Forward).expect("cursor");
        for _ in 0..10 {
            if !c.valid() {
                break;
            }
            seen += c.value().len() as u64;
            c.next().expect("next");
        }
    }
    seen
}

/// Seeks as `range(k..).take(10)` (owned pairs; the API older builds have).
#[inline(never)]
fn prof_rangeseek(e: &LsmEngine, n: u64, ops: u64) -> u64 {
    let mut rng = Rng(43);
    let mut seen = 0;
    for _ in 0..ops {
        let r = KeyRange {
            start: std::ops::Bound::Included(key(rng.next() % n)),
            end: std::ops::Bound::Unbounded,
        };
        seen += e
            .range(r, Direction::Forward)
            .expect("range")
            .take(10)
            .map(|p| p.expect("pair").1.len() as u64)
            .sum::<u64>();
    }
    seen
}

/// A full scan as owned pairs.
#[inline(never)]
fn prof_readseq(e: &LsmEngine) -> u64 {
    e.range(KeyRange::all(), Direction::Forward)
        .expect("range")
        .map(|p| p.expect("pair").1.len() as u64)
        .sum()
}

/// A full scan through a cursor (borrowed pairs).
#[inline(never)]
fn prof_cursorseq(e: &LsmEngine) -> u64 {
    let mut c = e
        .cursor(KeyRange::all(), Direction::Forward)
        .expect("cursor");
    let mut seen = 0;
    while c.valid() {
        seen += c.value().len() as u64;
        c.next().expect("next");
    }
    seen
}

/// Read-path profiling harness for the Strata LSM: builds a database like `lsm`'s main one in
/// `--dir` (on first use; reused after), then runs one read phase in a function of its own,
/// for `valgrind --tool=callgrind --toggle-collect='*prof_*'`.
#[derive(Parser)]
#[command(name = "lsm_prof")]
struct Args {
    /// The database directory (built on first use and reused: delete it to rebuild).
    #[arg(long, value_name = "D")]
    dir: PathBuf,
    /// Entries (N sequential puts, then N random overwrites).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    n: u64,
    /// Hash stripes of the engine.
    #[arg(long, value_name = "S", default_value_t = 256)]
    stripes: u32,
    /// Operations of the phase [default: N].
    #[arg(long, value_name = "K")]
    ops: Option<u64>,
    /// The phase: readrandom, readmissing (absent keys), getwith, seekrandom, rangeseek,
    /// readseq or cursorseq.
    #[arg(long, default_value = "readrandom")]
    phase: String,
    /// Block cache, MiB (as the `lsm` bench).
    #[arg(long, value_name = "M", default_value_t = 256)]
    cache_mib: usize,
    /// After building: flush and wait for compactions to finish.
    #[arg(long)]
    settle: bool,
    /// No warming reads (the cache holds only what the build left in it).
    #[arg(long)]
    cold: bool,
    /// Runs of the phase in this process: each run's seconds go to stderr, and the line
    /// printed gives the fastest and the median run. On a VM whose speed flips between a
    /// fast and a slow phase, the fastest of many short runs compares two binaries better
    /// than one long run each.
    #[arg(long, value_name = "R", default_value_t = 1)]
    repeat: u32,
}

fn main() {
    let args = Args::parse();
    let dir = args.dir;
    let n = args.n;
    let stripes = args.stripes;
    let ops = args.ops.unwrap_or(n);
    let phase = args.phase;
    let cache_mib = args.cache_mib;
    let fresh = !dir.exists();
    let opts = LsmOptions {
        stripes,
        sync: SyncMode::None,
        block_cache_bytes: cache_mib << 20,
        ..LsmOptions::default()
    };
    let e = LsmEngine::open(&dir, opts).expect("open");
    if fresh {
        let t = Instant::now();
        build(&e, n);
        if args.settle {
            e.flush().expect("flush");
            e.wait_for_compactions().expect("settle");
        }
        eprintln!("built {n} in {:?}", t.elapsed());
    }
    // `--cold`: no warming (as the `lsm` bench's readrandom, which starts on the cache the
    // writes left; at 10^7 most reads miss the cache anyway).
    let cold = args.cold;
    // Warm the block cache (outside the measured function): read everything once.
    let warm = if cold {
        0
    } else {
        e.range(KeyRange::all(), Direction::Forward)
            .expect("range")
            .count()
    };
    eprintln!("warmed {warm} pairs");
    if !cold && (phase == "readrandom" || phase == "getwith" || phase == "readmissing") {
        // One point read per ~16 keys (every block), outside the measured function: the
        // point-read structures built on a block's first point read exist before measuring.
        let got = (0..n)
            .step_by(16)
            .filter(|&i| e.get_with(&key(i), |_| ()).expect("get").is_some())
            .count();
        eprintln!("warmed {got} point reads");
    }
    let mut runs = Vec::new();
    let mut r = 0;
    for run in 0..args.repeat.max(1) {
        let t = Instant::now();
        r = match phase.as_str() {
            "readrandom" => prof_readrandom(&e, n, ops),
            "readmissing" => prof_readmissing(&e, n, ops),
            "getwith" => prof_getwith(&e, n, ops),
            "seekrandom" => prof_seekrandom(&e, n, ops),
            "rangeseek" => prof_rangeseek(&e, n, ops),
            "readseq" => prof_readseq(&e),
            "cursorseq" => prof_cursorseq(&e),
            other => panic!("unknown phase {other}"),
        };
        let secs = t.elapsed().as_secs_f64();
        eprintln!("run {run}: {secs:.3} s");
        runs.push(secs);
    }
    runs.sort_by(f64::total_cmp);
    let (secs, median) = (runs[0], runs[runs.len() / 2]);
    if runs.len() == 1 {
        println!("{phase} ops={ops} result={r} secs={secs:.3}");
    } else {
        println!(
            "{phase} ops={ops} result={r} secs={secs:.3} (fastest of {}; median {median:.3})",
            runs.len()
        );
    }
    e.close().expect("close");
}
