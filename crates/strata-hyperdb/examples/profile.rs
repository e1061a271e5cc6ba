//! A profiling driver for the benchmark's workload (`docs/bench/hyperdb.md`), one phase at a
//! time, so that `valgrind --tool=callgrind --toggle-collect='*phase_*'` counts only that phase.
//!
//! `cargo run --release -p strata-hyperdb --example profile -- <put|get|list|batch> [keys] [puts]`
//!
//! The database is built with 1,000-op batches (`keys` keys, default 100,000), then the phase
//! runs: `put` `puts` single puts (default 2,000), `get` 20,000 random gets, `list` a listing of each of the ten folders (`puts` / 1,000 times), `batch`
//! `keys` puts in 1,000-op batches into a fresh database.

use strata_hyperdb::{BatchOp, CreateOptions, Hyperdb, KeyPair, ListOptions};

fn key(i: u64) -> String {
    format!("/d{}/k{}", i % 10, i)
}

fn new_db() -> Hyperdb {
    Hyperdb::memory(CreateOptions {
        key_pair: Some(KeyPair::from_seed(&[9; 32])),
        content_feed: false,
    })
    .expect("in-memory database")
}

fn fill(db: &mut Hyperdb, from: u64, to: u64) {
    let mut i = from;
    while i < to {
        let b: Vec<BatchOp> = (i..(i + 1000).min(to))
            .map(|j| BatchOp::Put {
                key: key(j),
                value: Some(format!("value-{j}").into_bytes()),
            })
            .collect();
        db.batch(&b).expect("batch");
        i += 1000;
    }
}

#[inline(never)]
fn phase_put(db: &mut Hyperdb, n: u64, count: u64) {
    for j in 0..count {
        db.put(&key(n + j), format!("value-{j}").as_bytes())
            .expect("put");
    }
}

#[inline(never)]
fn phase_get(db: &Hyperdb, n: u64) -> usize {
    let mut x: u64 = 88172645463325252;
    let mut found = 0;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        found += usize::from(db.get(&key(x % n)).expect("get").is_some());
    }
    found
}

#[inline(never)]
fn phase_list(db: &Hyperdb, rounds: u64) -> usize {
    (0..10 * rounds)
        .map(|d| {
            db.snapshot()
                .list(&format!("/d{}", d % 10), ListOptions::default())
                .expect("list")
                .len()
        })
        .sum()
}

#[inline(never)]
fn phase_batch(n: u64) -> u64 {
    let mut db = new_db();
    fill(&mut db, 0, n);
    db.len()
}

/// CPU time of this thread (less disturbed than wall time on a loaded machine).
fn cpu_time() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// A profiling driver for the hyperdb benchmark's workload, one phase at a time, for
/// `valgrind --tool=callgrind --toggle-collect='*phase_*'`.
#[derive(clap::Parser)]
#[command(name = "profile")]
struct Args {
    /// `put`: PUTS single puts; `get`: 20,000 random gets; `list`: a listing of each of the ten
    /// folders PUTS / 1,000 times; `batch`: KEYS puts in 1,000-op batches into a fresh database.
    #[arg(value_name = "PHASE", default_value = "get",
          value_parser = ["put", "get", "list", "batch"])]
    phase: String,
    /// Keys the database is built with (1,000-op batches) before the phase.
    #[arg(value_name = "KEYS", default_value_t = 100_000)]
    n: u64,
    /// The `put` phase's puts (and the `list` phase's listings × 1,000).
    #[arg(value_name = "PUTS", default_value_t = 2000)]
    count: u64,
}

fn main() {
    let Args { phase, n, count } = clap::Parser::parse();
    if phase == "batch" {
        let t = std::time::Instant::now();
        let cpu = cpu_time();
        println!("batch: {} blocks", phase_batch(n));
        eprintln!(
            "batch: {:.3} s wall, {:.3} s cpu",
            t.elapsed().as_secs_f64(),
            cpu_time() - cpu
        );
        return;
    }
    let mut db = new_db();
    fill(&mut db, 0, n);
    let t = std::time::Instant::now();
    let cpu = cpu_time();
    match phase.as_str() {
        "put" => phase_put(&mut db, n, count),
        "get" => println!("get: {} found", phase_get(&db, n)),
        "list" => println!("list: {} keys", phase_list(&db, count / 1000)),
        other => panic!("unknown phase {other}"),
    }
    eprintln!(
        "{phase}: {:.3} s wall, {:.3} s cpu",
        t.elapsed().as_secs_f64(),
        cpu_time() - cpu
    );
}
