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
//! Every child prints the fillsync writes' latency spread (first, quantiles, max) as a `note`.
//! `LSM_BENCH_DISKSTAT=/sys/block/<dev>/stat`: every child also prints, as a `note`, the
//! device's write requests, sectors written and cache flushes per fillsync write (the deltas
//! of that file across the phase, whole device: other processes' I/O counts too).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

mod child;
mod engines;
mod notes;
mod report;

const BATCH: usize = 1000;
const VALUE: usize = 100;
const SEEK_NEXT: usize = 10;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let n: u64 = arg("--n")
        .map(|s| s.parse().expect("--n N"))
        .unwrap_or(1_000_000);
    let kstone_n: u64 = arg("--kstone-n")
        .map(|s| s.parse().expect("--kstone-n N"))
        .unwrap_or(20_000);
    let cache = arg("--cache-mb")
        .map(|s| s.parse::<usize>().expect("--cache-mb MB"))
        .unwrap_or(256)
        << 20;
    let base = PathBuf::from(arg("--dir").unwrap_or_else(|| "target/bench-lsm".into()));
    if let Some(engine) = arg("--child") {
        child::child(&engine, &base, n, cache);
        return;
    }
    let mut default_engines = vec!["strata", "strata-256", "fjall", "redb", "lmdb", "sled"];
    if cfg!(feature = "rocksdb") {
        default_engines.push("rocksdb");
    }
    default_engines.push("kstone");
    let engines: Vec<String> = match arg("--engines") {
        Some(s) => s.split(',').map(str::to_string).collect(),
        None => default_engines.iter().map(|s| s.to_string()).collect(),
    };
    let exe = std::env::current_exe().expect("exe");
    // results[engine][phase] = (ops, seconds)
    let mut results = report::Results::new();
    let mut notes = Vec::new();
    let mut wall = BTreeMap::new();
    for e in &engines {
        let en = if e == "kstone" { kstone_n } else { n };
        eprintln!("running {e} with {en} entries ...");
        let t = Instant::now();
        let out = Command::new(&exe)
            .args([
                "--child",
                e,
                "--n",
                &en.to_string(),
                "--cache-mb",
                &(cache >> 20).to_string(),
            ])
            .arg("--dir")
            .arg(&base)
            .output()
            .expect("spawn child");
        wall.insert(e.clone(), t.elapsed().as_secs_f64());
        if !out.status.success() {
            eprintln!("{e} failed: {}", String::from_utf8_lossy(&out.stderr));
            continue;
        }
        let r = results.entry(e.clone()).or_default();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if parts.first() == Some(&"note") {
                notes.push(format!("{e}: {}", parts[1..].join(" ")));
                continue;
            }
            if let [phase, ops, secs] = parts[..] {
                r.insert(
                    phase.to_string(),
                    (ops.parse().unwrap_or(0), secs.parse().unwrap_or(0.0)),
                );
            }
        }
    }
    report::print(n, kstone_n, cache, &engines, &results, &wall, &notes);
}
