//! strata-hyperdb against the reference hyperdb 3.5.0 (node, random-access-memory, native
//! sodium when installed) on the same machine, in one run.
//!
//! `cargo run --release -p strata-bench --bin hyperdb [-- --n 100000 --no-reference --no-scale]`
//!
//! The reference is looked up in `$HYPERDB_REFERENCE` (a directory with `node_modules/hyperdb`),
//! else installed once under `target/hyperdb-bench-reference` with `npm install hyperdb@3.5.0
//! random-access-memory@3.1.4 sodium-native@3.4.1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use clap::Parser;
use serde_json::Value;
use strata_hyperdb::{BatchOp, CreateOptions, Hyperdb, KeyPair, ListOptions};

fn key(i: u64) -> String {
    format!("/d{}/k{}", i % 10, i)
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn new_db() -> Hyperdb {
    Hyperdb::memory(CreateOptions {
        key_pair: Some(KeyPair::from_seed(&[9; 32])),
        content_feed: false,
    })
    .expect("in-memory database")
}

struct Times {
    put: f64,
    get: f64,
    list: f64,
    list_len: usize,
    batch: f64,
}

fn strata(n: u64) -> Times {
    let mut db = new_db();
    let t = Instant::now();
    for i in 0..n {
        db.put(&key(i), format!("value-{i}").as_bytes())
            .expect("put");
    }
    let put = t.elapsed().as_secs_f64();
    let mut rng = Rng(88172645463325252);
    let t = Instant::now();
    for _ in 0..n {
        let k = rng.below(n);
        assert!(db.get(&key(k)).expect("get").is_some());
    }
    let get = t.elapsed().as_secs_f64();
    // Each of the ten folders is listed once (one listing alone takes a few milliseconds, too
    // short to time on a busy machine); the reference does the same.
    let t = Instant::now();
    let mut list_len = 0;
    for d in 0..10 {
        list_len += db
            .snapshot()
            .list(&format!("/d{d}"), ListOptions::default())
            .expect("list")
            .len();
    }
    let list = t.elapsed().as_secs_f64();
    let mut db2 = new_db();
    let t = Instant::now();
    let mut i = 0;
    while i < n {
        let b: Vec<BatchOp> = (i..(i + 1000).min(n))
            .map(|j| BatchOp::Put {
                key: key(j),
                value: Some(format!("value-{j}").into_bytes()),
            })
            .collect();
        db2.batch(&b).expect("batch");
        i += 1000;
    }
    let batch = t.elapsed().as_secs_f64();
    Times {
        put,
        get,
        list,
        list_len,
        batch,
    }
}

fn reference_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("HYPERDB_REFERENCE") {
        return Some(PathBuf::from(d));
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/hyperdb-bench-reference");
    if !dir.join("node_modules/hyperdb/package.json").exists() {
        std::fs::create_dir_all(&dir).ok()?;
        eprintln!("installing the reference into {} ...", dir.display());
        let ok = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "hyperdb@3.5.0",
                "random-access-memory@3.1.4",
                "sodium-native@3.4.1",
            ])
            .current_dir(&dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            return None;
        }
    }
    Some(dir)
}

fn reference(n: u64) -> Option<(Times, bool)> {
    let dir = reference_dir()?;
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../strata-hyperdb/tests/reference/bench.js");
    let out = Command::new("node")
        .arg(script)
        .arg(n.to_string())
        .env("HYPERDB_NODE_MODULES", dir.join("node_modules"))
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("reference failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Some((
        Times {
            put: f("put_s"),
            get: f("get_s"),
            list: f("list_s"),
            list_len: v["list_len"].as_u64().unwrap_or(0) as usize,
            batch: f("batch_s"),
        },
        v["native"].as_bool().unwrap_or(false),
    ))
}

/// Put, get and list cost at growing sizes (built with 1000-op batches).
fn scaling(sizes: &[u64]) {
    println!("\n| keys | put (µs/op, 1,000 single puts) | get (µs/op, 10,000 random) | list of one folder (µs/key) |");
    println!("|---:|---:|---:|---:|");
    for &size in sizes {
        let mut db = new_db();
        let mut i = 0;
        while i < size {
            let b: Vec<BatchOp> = (i..(i + 1000).min(size))
                .map(|j| BatchOp::Put {
                    key: key(j),
                    value: Some(format!("value-{j}").into_bytes()),
                })
                .collect();
            db.batch(&b).expect("batch");
            i += 1000;
        }
        let t = Instant::now();
        for j in 0..1000 {
            db.put(&key(size + j), b"extra").expect("put");
        }
        let put = t.elapsed().as_secs_f64() / 1000.0;
        let mut rng = Rng(1234567);
        let t = Instant::now();
        for _ in 0..10_000 {
            assert!(db.get(&key(rng.below(size))).expect("get").is_some());
        }
        let get = t.elapsed().as_secs_f64() / 10_000.0;
        let t = Instant::now();
        let len = db
            .snapshot()
            .list("/d3", ListOptions::default())
            .expect("list")
            .len();
        let list = t.elapsed().as_secs_f64() / len.max(1) as f64;
        println!(
            "| {size} | {:.1} | {:.2} | {:.2} |",
            put * 1e6,
            get * 1e6,
            list * 1e6
        );
    }
}

/// strata-hyperdb against the reference hyperdb 3.5.0 (node) on the same workload: put, get,
/// list and batch rates as a markdown table, then strata-hyperdb alone at 10^4..10^6 keys.
/// The reference is looked up in `$HYPERDB_REFERENCE`, else installed once under
/// `target/hyperdb-bench-reference` (npm).
#[derive(Parser)]
#[command(name = "hyperdb")]
struct Args {
    /// Keys of the comparison.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    n: u64,
    /// Skip the reference hyperdb (strata-hyperdb's column only).
    #[arg(long = "no-reference", action = clap::ArgAction::SetFalse)]
    with_reference: bool,
    /// Skip the scaling table (strata-hyperdb at 10^4, 10^5 and 10^6 keys).
    #[arg(long = "no-scale", action = clap::ArgAction::SetFalse)]
    with_scale: bool,
}

fn main() {
    let Args {
        n,
        with_reference,
        with_scale,
    } = Args::parse();
    eprintln!("strata-hyperdb, {n} keys ...");
    let s = strata(n);
    let r = if with_reference {
        eprintln!("reference hyperdb 3.5.0 (node), {n} keys ...");
        reference(n)
    } else {
        None
    };
    println!("hyperdb, {n} keys `/d<i%10>/k<i>` (in-memory storage, every append signed)\n");
    println!(
        "| operation | strata-hyperdb | reference hyperdb 3.5.0{} | ratio |",
        match &r {
            Some((_, true)) => " (sodium-native)",
            Some((_, false)) => " (pure-JS sodium)",
            None => "",
        }
    );
    println!("|---|---:|---:|---:|");
    let row = |name: &str, ops: f64, ours: f64, theirs: Option<f64>| {
        let ours_rate = ops / ours;
        match theirs {
            Some(t) => {
                let theirs_rate = ops / t;
                println!(
                    "| {name} | {ours_rate:.0} ops/s | {theirs_rate:.0} ops/s | {:.1}× |",
                    ours_rate / theirs_rate
                );
            }
            None => println!("| {name} | {ours_rate:.0} ops/s | – | – |"),
        }
    };
    let rt = r.as_ref().map(|(t, _)| t);
    row(
        &format!("put ({n}, one at a time)"),
        n as f64,
        s.put,
        rt.map(|t| t.put),
    );
    row(
        &format!("get ({n} random)"),
        n as f64,
        s.get,
        rt.map(|t| t.get),
    );
    row(
        &format!("list each of the ten folders ({} keys)", s.list_len),
        s.list_len as f64,
        s.list,
        rt.map(|t| t.list),
    );
    row(
        &format!("batch put ({n} in 1,000-op batches)"),
        n as f64,
        s.batch,
        rt.map(|t| t.batch),
    );
    if let Some(t) = rt {
        if t.list_len != s.list_len {
            println!(
                "\nWARNING: list lengths differ (reference {}, strata {})",
                t.list_len, s.list_len
            );
        }
    }
    if with_scale {
        scaling(&[10_000, 100_000, 1_000_000]);
    }
}
