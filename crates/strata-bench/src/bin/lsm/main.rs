//! db_bench-style comparison of the Strata LSM with its peers, one engine per child process.
//!
//! `cargo run --release -p strata-bench --bin lsm -- [--n N] [--cache-mb MB] [--engines a,b]`
//! `strata` is the configuration `strata kv` creates (one stripe); `strata-256` the same
//! engine with 256 hash stripes (the tables' configuration).
//! (add `--features rocksdb` for RocksDB; see docs/bench/lsm.md). Workloads: fillseq,
//! fillrandom, overwrite (batches of 1,000, no fsync), fillsync (`max(N/1000, 1000)` single
//! writes, fsync each, the same count for every engine: each synced write waits for the
//! device's cache flush, whose time varies from flush to flush, so fewer writes than 1,000 —
//! 100 at 10^5 before session 15 — rank engines by a few slow flushes, not by their cost per
//! write), readrandom, seekrandom (N/10 seeks + 10 next), readseq; 16-byte keys, 100-byte
//! incompressible values, one thread, the same cache budget for every engine.
//! `LSM_BENCH_SHAPE=1`: Strata's child also prints its LSM shape (L0 files, sorted runs,
//! files per level, memtable bytes) before and after readrandom, as `note` lines.
//!
//! **fillsync runs in rotated rounds** (since session 16; `--sync-rounds R`, default 20).
//! The engines' children run one after another, each in its own process; each runs its
//! phases up to readseq exactly as before and then waits, its database open. When all wait,
//! the parent runs the fillsync phase as R rounds: in round r every engine makes its
//! `max(N/1000, 1000) / R` synced writes (the rounds differ by at most one write), one engine
//! at a time, in the engines' order rotated left by r; then each child in turn finishes
//! (fillsync notes, fillrandom) while the others wait. The row is every round's writes over
//! every round's time, per engine; a `note` per engine gives Strata's rate divided by the
//! engine's in each round. Why: a synced write costs every engine one data write and one
//! device cache flush (docs/bench/lsm.md, "Session 15"), and the host's flush time drifts
//! over seconds (~100 µs to ~4 ms here, as other processes' I/O comes and goes). Run as one
//! block per engine, tens of seconds apart, the phase ranked the engines by the drift
//! between their blocks (at 10^5: 1.08×, 0.84×, 1.05× fjall in three quiet runs). In rounds,
//! all engines' writes of a round fall within one short window (tens of ms at ~100 µs per
//! write) and a drift slower than a round is shared by every engine; the rotation moves
//! each engine through every place in the order, so none always follows the same engine's
//! flushes. The same rule for every engine. Not cancelled: bursts of other processes' I/O
//! shorter than a visit land on whichever engine writes (on a loaded machine the per-round
//! ratios' median is steadier than the row). The database stays open in the child that
//! loaded it (reopening would change the peers' state: fjall reopened pays an inode write
//! per synced write, 3.00 device writes per synced write against 2.06 in the process that
//! loaded it). The waiting children's engines may run background work while later engines
//! run their phases: a `note` gives the CPU each used while it waited (session 16: 0.00–0.02 s
//! at 10^5, sled 0.20 s at 10^6).
//! `--child E` alone runs every phase of E, fillsync inline as one round.
//!
//! Every child prints the fillsync writes' latency spread (first, quantiles, max) as a `note`.
//! `LSM_BENCH_DISKSTAT=/sys/block/<dev>/stat`: every child also prints, as a `note`, the
//! device's write requests, sectors written and cache flushes per fillsync write (the deltas
//! of that file across the engine's rounds, whole device: other processes' I/O counts too).

use std::path::PathBuf;

use clap::Parser;

mod child;
mod engines;
mod fillsync;
mod notes;
mod report;

const BATCH: usize = 1000;
const VALUE: usize = 100;
const SEEK_NEXT: usize = 10;

/// db_bench-style comparison of the Strata LSM with its peers, one engine per child process:
/// fillseq, fillrandom, overwrite, fillsync (in rotated rounds), readrandom, seekrandom,
/// readseq; 16-byte keys, 100-byte values. Environment: `LSM_BENCH_SHAPE=1` (Strata's LSM
/// shape as notes), `LSM_BENCH_NO_SEEK=1` (skip seekrandom),
/// `LSM_BENCH_DISKSTAT=/sys/block/<dev>/stat` (device counters per fillsync write).
#[derive(Parser)]
#[command(name = "lsm")]
struct Args {
    /// Entries per engine (KeystoneDB: `--kstone-n`).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    n: u64,
    /// Entries for KeystoneDB (it fsyncs every put).
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    kstone_n: u64,
    /// Block cache budget of every engine, in MiB.
    #[arg(long, value_name = "MB", default_value_t = 256)]
    cache_mb: usize,
    /// Rounds of the fillsync phase (at least 1).
    #[arg(long, value_name = "R", default_value_t = fillsync::DEFAULT_ROUNDS,
          value_parser = clap::value_parser!(u64).range(1..))]
    sync_rounds: u64,
    /// Directory of the engines' databases (relative: to the current directory).
    #[arg(long, value_name = "DIR", default_value = "target/bench-lsm")]
    dir: PathBuf,
    /// Engines, comma-separated: strata, strata-pread, strata-256, fjall, redb, lmdb, sled,
    /// rocksdb (built with `--features rocksdb`), kstone [default: all but strata-pread].
    #[arg(long, value_name = "E,E,..", value_delimiter = ',', value_parser = engine_name)]
    engines: Option<Vec<String>>,
    /// Run every phase of engine E in this process (what the parent starts for each engine;
    /// alone, fillsync runs inline as one round).
    #[arg(long, value_name = "E", value_parser = engine_name)]
    child: Option<String>,
    /// With `--child`: wait with the database open after readseq and run the fillsync rounds
    /// the parent sends on stdin.
    #[arg(long, requires = "child")]
    serve_fillsync: bool,
}

/// A clap value parser: `s` if `engines::open` knows it.
fn engine_name(s: &str) -> Result<String, String> {
    if engines::NAMES.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown engine (known: {})",
            engines::NAMES.join(", ")
        ))
    }
}

fn main() {
    let args = Args::parse();
    let n = args.n;
    let kstone_n = args.kstone_n;
    let cache = args.cache_mb << 20;
    let rounds = args.sync_rounds;
    let base = args.dir;
    if let Some(engine) = args.child {
        child::child(&engine, &base, n, cache, args.serve_fillsync);
        return;
    }
    let mut default_engines = vec!["strata", "strata-256", "fjall", "redb", "lmdb", "sled"];
    if cfg!(feature = "rocksdb") {
        default_engines.push("rocksdb");
    }
    default_engines.push("kstone");
    let engines: Vec<String> = match args.engines {
        Some(e) => e,
        None => default_engines.iter().map(|s| s.to_string()).collect(),
    };
    let exe = std::env::current_exe().expect("exe");
    let sized: Vec<(String, u64)> = engines
        .iter()
        .map(|e| (e.clone(), if e == "kstone" { kstone_n } else { n }))
        .collect();
    let out = fillsync::run(&exe, &base, &sized, cache, rounds);
    report::print(
        n,
        kstone_n,
        cache,
        &engines,
        &out.results,
        &out.wall,
        &out.notes,
    );
}
