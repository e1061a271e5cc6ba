//! The centidb record store: put and get rates, and bytes on disk with and without batch
//! compression (zlib, zstd, lz4), beside the same documents in a plain Strata table and in
//! SQLite, in one run. Each configuration runs in its own child process, which reports its
//! peak RSS.
//!
//! ```text
//! cargo run --release -p strata-bench --bin centidb -- [RECORDS]
//! ```
//! Default 1,000,000 records: web-server log lines as JSON documents (~230 bytes each; key
//! `id`, secondary fields repeat as in real logs). Every database is durable on commit
//! (Strata `sync`, SQLite WAL + `synchronous = FULL`); loads commit 1,000 records at a time.
//! After the load (and after batching) the LSM is compacted, then the directory size is
//! taken; "logical bytes" is the sum of key and value lengths the engine holds.
//!
//! The seed (and centidb's `docs/perf.rst`) claims batch compression saves space: 777
//! records of ~1.5 KB took 1168 KB plain, 665 KB zlib per record (1.76×), 523 KB in zlib
//! batches of 8 (2.23×), 452 KB in batches of 64 (2.59×). The `zlib/1`, `zlib/8` and
//! `zlib/64` rows check that on this corpus.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use serde_json::{json, Value as Json};
use strata_centidb::{
    codec::pyjson::JsonEncoder, BatchOptions, CollectionOptions, Doc, FnSpec, PutOptions, Query,
    Store,
};
use strata_key::{tuple, Value};
use strata_lsm::{Direction, Engine, KeyRange, LsmEngine, LsmOptions};

use strata_bench::Rng;

const PATHS: [&str; 8] = [
    "/api/v1/users/{}/orders",
    "/api/v1/users/{}",
    "/static/js/app.{}.js",
    "/api/v1/search?q=item{}",
    "/login",
    "/api/v1/cart/{}/items",
    "/health",
    "/images/products/{}.jpg",
];
const AGENTS: [&str; 4] = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) Mobile/15E148",
    "curl/8.4.0",
    "Go-http-client/1.1",
];

/// Log line `i` as a document.
fn doc(i: usize) -> Doc {
    let mut r = Rng(i as u64 * 0x9e37_79b9_7f4a_7c15 + 1);
    let status = [200, 200, 200, 200, 304, 404, 500, 201][r.below(8)];
    let path = PATHS[r.below(8)].replace("{}", &(r.below(50_000)).to_string());
    let t = |s: &str| Doc::Text(s.to_owned());
    Doc::Dict(vec![
        (t("id"), Doc::Int(i as i128)),
        (t("ts"), Doc::Int(1_700_000_000_000 + i as i128 * 37)),
        (t("host"), t(&format!("web-{:02}", r.below(12)))),
        (t("level"), t(if status >= 500 { "ERROR" } else { "INFO" })),
        (
            t("method"),
            t(["GET", "GET", "GET", "POST", "PUT", "DELETE"][r.below(6)]),
        ),
        (t("path"), t(&path)),
        (t("status"), Doc::Int(status)),
        (t("bytes"), Doc::Int(r.below(60_000) as i128)),
        (t("ms"), Doc::Int(r.below(900) as i128 + 1)),
        (t("ua"), t(AGENTS[r.below(4)])),
        (
            t("ip"),
            t(&format!(
                "10.{}.{}.{}",
                r.below(4),
                r.below(256),
                r.below(256)
            )),
        ),
    ])
}

fn json_text(d: &Doc) -> String {
    use strata_centidb::codec::Encoder;
    String::from_utf8(JsonEncoder.pack(d).expect("json")).expect("utf8")
}

fn dir_size(p: &Path) -> u64 {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            let m = e.metadata().expect("metadata");
            n += if m.is_dir() {
                dir_size(&e.path())
            } else {
                m.len()
            };
        }
    }
    n
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn rate(n: usize, t: Instant) -> f64 {
    n as f64 / t.elapsed().as_secs_f64()
}

/// One configuration, in this (child) process: prints its results as one JSON line.
fn run_child(cfg: &str, n: usize, dir: &Path) -> Json {
    let gets = 100_000.min(n);
    let mut out = json!({"cfg": cfg});
    match cfg {
        "sqlite" => {
            use rusqlite::{params, Connection};
            let path = dir.join("bench.sqlite");
            let mut c = Connection::open(&path).expect("open");
            c.pragma_update(None, "journal_mode", "WAL").expect("wal");
            c.pragma_update(None, "synchronous", "FULL").expect("sync");
            c.execute_batch("CREATE TABLE logs (id INTEGER PRIMARY KEY, doc TEXT NOT NULL)")
                .expect("create");
            let t = Instant::now();
            let mut i = 0;
            while i < n {
                let tx = c.transaction().expect("tx");
                {
                    let mut st = tx
                        .prepare_cached("INSERT INTO logs VALUES (?1, ?2)")
                        .expect("prep");
                    for j in i..(i + 1000).min(n) {
                        st.execute(params![j as i64, json_text(&doc(j))])
                            .expect("insert");
                    }
                }
                tx.commit().expect("commit");
                i += 1000;
            }
            out["put"] = json!(rate(n, t));
            c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .expect("checkpoint");
            out["disk"] = json!(dir_size(dir));
            let mut r = Rng(7);
            let t = Instant::now();
            {
                let mut st = c
                    .prepare_cached("SELECT doc FROM logs WHERE id = ?1")
                    .expect("prep");
                for _ in 0..gets {
                    let s: String = st
                        .query_row(params![r.below(n) as i64], |row| row.get(0))
                        .expect("get");
                    assert!(!s.is_empty());
                }
            }
            out["get"] = json!(rate(gets, t));
            let t = Instant::now();
            let mut st = c
                .prepare("SELECT id, doc FROM logs ORDER BY id")
                .expect("prep");
            let mut rows = st.query([]).expect("scan");
            let mut count = 0;
            while let Some(row) = rows.next().expect("row") {
                let _: (i64, String) = (row.get(0).expect("col"), row.get(1).expect("col"));
                count += 1;
            }
            assert_eq!(count, n);
            out["scan"] = json!(rate(n, t));
        }
        "table" => {
            use strata::{Batch, Db, Item, Key, KeyField, TableSchema};
            let db = Db::open(dir).expect("open");
            let tbl = db
                .create_table(TableSchema::new(
                    "logs",
                    vec![KeyField::new("id", strata_key::Kind::Int)],
                ))
                .expect("create");
            let item = |d: &Doc| -> Item {
                let Doc::Dict(kv) = d else { unreachable!() };
                let mut it = Item::new();
                for (k, v) in kv {
                    let Doc::Text(k) = k else { unreachable!() };
                    it = match v {
                        Doc::Int(i) => it.with(k.as_str(), Value::Int(*i)),
                        Doc::Text(s) => it.with(k.as_str(), Value::Text(s.clone())),
                        _ => it,
                    };
                }
                it
            };
            let t = Instant::now();
            let mut b = Batch::new();
            for i in 0..n {
                b.put(&tbl, &item(&doc(i))).expect("put");
                if b.len() == 1000 {
                    db.write(std::mem::take(&mut b)).expect("write");
                }
            }
            db.write(b).expect("write");
            out["put"] = json!(rate(n, t));
            db.compact().expect("compact");
            out["disk"] = json!(dir_size(dir));
            let mut r = Rng(7);
            let t = Instant::now();
            for _ in 0..gets {
                let k = Key::new(vec![Value::Int(r.below(n) as i128)], vec![]);
                tbl.get(&k).expect("get").expect("present");
            }
            out["get"] = json!(rate(gets, t));
            let t = Instant::now();
            let mut s = strata::Scan::all().limit(10_000);
            let mut count = 0;
            loop {
                let page = tbl.scan(&s).expect("scan");
                count += page.items.len();
                match page.last_key {
                    Some(k) => s.after = Some(k),
                    None => break,
                }
            }
            assert_eq!(count, n);
            out["scan"] = json!(rate(n, t));
            db.close().expect("close");
        }
        _ => {
            // "centidb[/PACKER/BATCH]"
            let parts: Vec<&str> = cfg.split('/').collect();
            // One stripe, as `strata centidb` creates its databases: every read is a seek,
            // and a seek over 256 stripes (no partitioner) merges 256 trees.
            // CENTIDB_STRIPES=256 measures that.
            let stripes: u32 = std::env::var("CENTIDB_STRIPES")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(1);
            let engine = Arc::new(
                LsmEngine::open(
                    dir,
                    LsmOptions {
                        stripes,
                        ..LsmOptions::default()
                    },
                )
                .expect("open"),
            );
            let dynengine: Arc<dyn Engine> = engine.clone();
            let store = Store::open(Arc::clone(&dynengine), b"").expect("store");
            let c = store
                .add_collection(
                    "logs",
                    CollectionOptions::new()
                        .key_fn(FnSpec::Field { name: "id".into() }.to_fn())
                        .encoder(Arc::new(JsonEncoder)),
                )
                .expect("collection");
            // Records written one per put go with the packer given for size 1.
            let single_packer = (parts.len() == 3 && parts[2] == "1").then(|| parts[1].to_owned());
            let opts = PutOptions {
                packer: single_packer.clone(),
                ..Default::default()
            };
            let t = Instant::now();
            let mut chunk = Vec::with_capacity(1000);
            for i in 0..n {
                chunk.push(doc(i));
                if chunk.len() == 1000 {
                    c.put_all(&chunk, &opts).expect("put");
                    chunk.clear();
                }
            }
            c.put_all(&chunk, &opts).expect("put");
            out["put"] = json!(rate(n, t));
            if parts.len() == 3 && parts[2] != "1" {
                let size: usize = parts[2].parse().expect("batch size");
                let t = Instant::now();
                let rep = c
                    .batch(&BatchOptions {
                        max_recs: Some(size),
                        packer: Some(parts[1].to_owned()),
                        ..Default::default()
                    })
                    .expect("batch");
                out["batch"] = json!(rate(n, t));
                assert_eq!(
                    rep.found,
                    n - n % size + if n % size > 1 { n % size } else { 0 }
                );
            }
            engine.compact().expect("compact");
            out["disk"] = json!(dir_size(dir));
            let logical: u64 = engine
                .range(KeyRange::all(), Direction::Forward)
                .expect("range")
                .map(|kv| {
                    let (k, v) = kv.expect("pair");
                    (k.len() + v.len()) as u64
                })
                .sum();
            out["logical"] = json!(logical);
            let mut r = Rng(7);
            let t = Instant::now();
            for _ in 0..gets {
                let id = r.below(n) as i64;
                let d = c.get(&tuple!(id)).expect("get").expect("present");
                debug_assert!(d.field("id").is_some());
            }
            out["get"] = json!(rate(gets, t));
            let t = Instant::now();
            let mut count = 0;
            for r in c.items(&Query::all()).expect("items") {
                r.expect("item");
                count += 1;
            }
            assert_eq!(count, n);
            out["scan"] = json!(rate(n, t));
            drop(c);
            drop(store);
            drop(dynengine);
            engine.close().expect("close");
        }
    }
    out["rss_kib"] = json!(peak_rss_kib());
    out
}

fn fmt_rate(r: Option<f64>) -> String {
    match r {
        None => "–".into(),
        Some(r) if r >= 100_000.0 => format!("{:.0}k", r / 1000.0),
        Some(r) if r >= 10_000.0 => format!("{:.1}k", r / 1000.0),
        Some(r) => format!("{r:.0}"),
    }
}

fn mib(b: Option<u64>) -> String {
    b.map_or("–".into(), |b| {
        format!("{:.1}", b as f64 / (1 << 20) as f64)
    })
}

/// The centidb record store: put and get rates and bytes on disk with and without batch
/// compression, beside a plain Strata table and SQLite; each configuration in a child process
/// of its own. Results: a markdown table on stdout, progress on stderr.
#[derive(Parser)]
#[command(name = "centidb")]
struct Args {
    /// Records (JSON log lines of ~230 bytes) per configuration.
    #[arg(value_name = "RECORDS", default_value_t = 1_000_000)]
    n: usize,
    /// Internal: run configuration CFG alone in DIR and print its result as JSON (what the
    /// parent starts for each configuration: `--child CFG RECORDS DIR`).
    #[arg(long, value_name = "CFG", requires = "dir")]
    child: Option<String>,
    /// With `--child`: the configuration's database directory.
    #[arg(value_name = "DIR", requires = "child")]
    dir: Option<PathBuf>,
}

fn main() {
    let Args { n, child, dir } = Args::parse();
    if let (Some(cfg), Some(dir)) = (child, dir) {
        let r = run_child(&cfg, n, &dir);
        println!("{r}");
        return;
    }
    let configs = [
        "centidb",
        "centidb/zlib/1",
        "centidb/zlib/8",
        "centidb/zlib/64",
        "centidb/zstd/64",
        "centidb/lz4/64",
        "table",
        "sqlite",
    ];
    let raw: usize = (0..n.min(100_000))
        .map(|i| json_text(&doc(i)).len())
        .sum::<usize>()
        * n
        / n.min(100_000);
    eprintln!("{n} records, about {} bytes of JSON each", raw / n.max(1));
    let me = std::env::current_exe().expect("exe");
    let base = tempfile::tempdir().expect("tempdir");
    let mut results: Vec<Json> = Vec::new();
    for cfg in configs {
        let dir: PathBuf = base.path().join(cfg.replace('/', "-"));
        std::fs::create_dir_all(&dir).expect("dir");
        let t = Instant::now();
        let o = Command::new(&me)
            .args(["--child", cfg, &n.to_string()])
            .arg(&dir)
            .output()
            .expect("child");
        assert!(
            o.status.success(),
            "{cfg}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let line = String::from_utf8_lossy(&o.stdout);
        let j: Json = serde_json::from_str(line.trim()).expect("child output");
        eprintln!("{cfg}: {:.1?} {j}", t.elapsed());
        std::fs::remove_dir_all(&dir).ok();
        results.push(j);
    }
    let plain_disk = results[0]["disk"].as_u64();
    let sqlite_disk = results
        .iter()
        .find(|r| r["cfg"] == "sqlite")
        .and_then(|r| r["disk"].as_u64());
    println!(
        "| configuration | put (records/s) | batch (records/s) | get (records/s) | scan (records/s) | logical MiB | on disk MiB | space saved vs plain | SQLite's bytes ÷ these | peak RSS MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &results {
        let disk = r["disk"].as_u64();
        let ratio = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) if a > 0 => format!("{:.2}×", b as f64 / a as f64),
            _ => "–".into(),
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} |",
            r["cfg"].as_str().unwrap_or("?"),
            fmt_rate(r["put"].as_f64()),
            fmt_rate(r["batch"].as_f64()),
            fmt_rate(r["get"].as_f64()),
            fmt_rate(r["scan"].as_f64()),
            mib(r["logical"].as_u64()),
            mib(disk),
            ratio(disk, plain_disk),
            ratio(disk, sqlite_disk),
            r["rss_kib"].as_u64().unwrap_or(0) as f64 / 1024.0
        );
    }
    println!(
        "\n{n} records; raw JSON {:.1} MiB.",
        raw as f64 / (1 << 20) as f64
    );
}
