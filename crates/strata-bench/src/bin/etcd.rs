//! Strata over etcd: the `strata-etcd` engine side by side with the raw `etcd-client` doing the
//! same requests on the same bytes (the adapter's overhead as a ratio), and with the local LSM
//! engine; then Strata tables on etcd and on the LSM; at several table sizes.
//!
//! ```text
//! cargo run --release -p strata-bench --bin etcd -- [--sizes 10000,100000] [--ops 200]
//!     [--endpoints H:P,H:P,H:P] [--naive-max 100000] [--tables-max 100000] [--timeout 5]
//! ```
//! `--timeout` is the engine's bound of one call in seconds (its default is 5; on a loaded
//! machine the first page of a range over 10^6 keys can take longer: etcd counts the rest of
//! a limited range).
//! Without `--endpoints` it starts a private three-member cluster on 127.0.0.1 with
//! `scripts/etcd-cluster.sh` (ports 42379.., data in a temporary directory) and removes it at
//! the end. Keys are laid out like table keys: a 2-byte hash of the partition, the partition,
//! the sort key; 100 items per partition, 100-byte values. Every write is durable on return
//! (etcd: on a quorum; LSM: fsync). Results: markdown tables on stdout, progress on stderr.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use etcd_client::{Compare, CompareOp, GetOptions, SortOrder, SortTarget, Txn, TxnOp};
use strata::{Batch, Db, DbOptions, Item, KeyField, Query, Scan, TableSchema};
use strata_etcd::{EtcdEngine, EtcdOptions};
use strata_key::{Kind, Value};
use strata_lsm::{
    Condition, Direction, Engine, KeyRange, LsmEngine, LsmOptions, SyncMode, WriteBatch,
};

const PER_PARTITION: usize = 100;
const VALUE: usize = 100;

/// Strata over etcd: the `strata-etcd` engine beside the raw `etcd-client` doing the same
/// requests and beside the local LSM engine, then Strata tables on etcd and on the LSM, at
/// several table sizes. Without `--endpoints`: a private three-member cluster on 127.0.0.1
/// (`scripts/etcd-cluster.sh`, ports 42379..), removed at the end. Results: markdown tables on
/// stdout, progress on stderr. Counts may group digits with `_` (`1_000_000`).
#[derive(Parser)]
#[command(name = "etcd")]
struct Args {
    /// Table sizes (pairs / items), comma-separated.
    #[arg(long, value_name = "N,N,..", value_delimiter = ',',
          default_values_t = [10_000, 100_000], value_parser = strata_bench::count_with_underscores)]
    sizes: Vec<usize>,
    /// Timed operations per row.
    #[arg(long, value_name = "K", default_value_t = 200,
          value_parser = strata_bench::count_with_underscores)]
    ops: usize,
    /// An existing cluster's endpoints, comma-separated `HOST:PORT`s (no private cluster).
    #[arg(long, value_name = "H:P,H:P,..")]
    endpoints: Option<String>,
    /// Largest size at which the naive rows run (the raw client's paged full scans and the
    /// scans without windows); 0: never.
    #[arg(long, value_name = "N", default_value_t = 100_000,
          value_parser = strata_bench::count_with_underscores)]
    naive_max: usize,
    /// Largest size at which the tables section runs; 0: never.
    #[arg(long, value_name = "N", default_value_t = 100_000,
          value_parser = strata_bench::count_with_underscores)]
    tables_max: usize,
    /// The engine's bound of one call, in seconds (a limited range's first page over 10^6
    /// keys can take longer than 5 on a loaded machine).
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    timeout: f64,
}

/// A private cluster, removed on drop.
struct Cluster {
    dir: tempfile::TempDir,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/etcd-cluster.sh")
}

impl Cluster {
    fn run(&self, cmd: &str) -> String {
        let out = Command::new("bash")
            .arg(script())
            .arg(cmd)
            .env("STRATA_ETCD_DIR", self.dir.path())
            .env("STRATA_ETCD_PORT", "42379")
            .output()
            .expect("run etcd-cluster.sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Peak resident memory of each member, in MiB.
    fn member_rss(&self) -> Vec<f64> {
        (1..=3)
            .filter_map(|n| {
                let pid =
                    std::fs::read_to_string(self.dir.path().join(format!("m{n}.pid"))).ok()?;
                let s = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).ok()?;
                let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
                let kb: f64 = l.split_whitespace().nth(1)?.parse().ok()?;
                Some(kb / 1024.0)
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("clean")
            .env("STRATA_ETCD_DIR", self.dir.path())
            .env("STRATA_ETCD_PORT", "42379")
            .status();
    }
}

fn self_rss() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

use strata_bench::Rng;

fn key(p: usize, s: usize) -> Vec<u8> {
    let mut k = partition(p);
    k.extend_from_slice(&(s as u32).to_be_bytes());
    k
}

fn partition(p: usize) -> Vec<u8> {
    let h = (crc(p as u32) >> 16) as u16;
    let mut k = h.to_be_bytes().to_vec();
    k.extend_from_slice(&(p as u32).to_be_bytes());
    k
}

fn crc(i: u32) -> u32 {
    let mut z = i.wrapping_add(0x9e37_79b9);
    z = (z ^ (z >> 16)).wrapping_mul(0x85eb_ca6b);
    z = (z ^ (z >> 13)).wrapping_mul(0xc2b2_ae35);
    z ^ (z >> 16)
}

fn value(seed: u64) -> Vec<u8> {
    let mut r = Rng(seed | 1);
    (0..VALUE).map(|_| r.next() as u8).collect()
}

/// The raw client: the same requests on the same (namespaced) bytes, from a current-thread
/// runtime on the calling thread (the leanest way to call it from synchronous code).
struct Raw {
    rt: tokio::runtime::Runtime,
    kv: etcd_client::KvClient,
    ns: Vec<u8>,
}

impl Raw {
    fn connect(eps: &[String], ns: Vec<u8>) -> Raw {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let urls: Vec<String> = eps.iter().map(|e| format!("http://{e}")).collect();
        let c = rt
            .block_on(etcd_client::Client::connect(&urls, None))
            .unwrap();
        let kv = c.kv_client().max_decoding_message_size(256 << 20);
        Raw { rt, kv, ns }
    }
    fn k(&self, k: &[u8]) -> Vec<u8> {
        [self.ns.as_slice(), k].concat()
    }
    fn end(&self) -> Vec<u8> {
        let mut e = self.ns.clone();
        *e.last_mut().unwrap() += 1;
        e
    }
    fn put(&mut self, k: &[u8], v: &[u8]) {
        let k = self.k(k);
        let mut kv = self.kv.clone();
        self.rt.block_on(kv.put(k, v.to_vec(), None)).unwrap();
    }
    fn get(&mut self, k: &[u8]) -> bool {
        let k = self.k(k);
        let mut kv = self.kv.clone();
        !self.rt.block_on(kv.get(k, None)).unwrap().kvs().is_empty()
    }
    fn query(&mut self, prefix: &[u8], n: usize, reverse: bool) -> usize {
        let k = self.k(prefix);
        let mut o = GetOptions::new().with_prefix().with_limit(n as i64);
        if reverse {
            o = o.with_sort(SortTarget::Key, SortOrder::Descend);
        }
        let mut kv = self.kv.clone();
        self.rt.block_on(kv.get(k, Some(o))).unwrap().kvs().len()
    }
    fn txn(&mut self, t: Txn) -> bool {
        let mut kv = self.kv.clone();
        self.rt.block_on(kv.txn(t)).unwrap().succeeded()
    }
    /// Plain paging: each request asks for the rest of the range with a limit (forward) or
    /// sorted descending (reverse); what a client does without windows.
    fn scan_paged(&mut self, page: usize, reverse: bool) -> usize {
        let (mut lo, mut hi) = (self.ns.clone(), self.end());
        let mut total = 0;
        let mut kv = self.kv.clone();
        loop {
            let mut o = GetOptions::new()
                .with_range(hi.clone())
                .with_limit(page as i64);
            if reverse {
                o = o.with_sort(SortTarget::Key, SortOrder::Descend);
            }
            let r = self.rt.block_on(kv.get(lo.clone(), Some(o))).unwrap();
            let kvs = r.kvs();
            total += kvs.len();
            if !r.more() || kvs.is_empty() {
                return total;
            }
            let last = kvs[kvs.len() - 1].key().to_vec();
            if reverse {
                hi = last;
            } else {
                lo = [last.as_slice(), &[0]].concat();
            }
        }
    }
    /// One request for the whole range (unbounded memory; the lower bound of any scan).
    fn scan_once(&mut self) -> usize {
        let o = GetOptions::new().with_range(self.end());
        let mut kv = self.kv.clone();
        self.rt
            .block_on(kv.get(self.ns.clone(), Some(o)))
            .unwrap()
            .kvs()
            .len()
    }
}

/// Mean microseconds per call of `f` over `n` calls.
fn per_op(n: usize, mut f: impl FnMut(usize)) -> f64 {
    f(0); // warm up
    let t = Instant::now();
    for i in 0..n {
        f(i + 1);
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

/// Mean microseconds per call of `a` and of `b`, called alternately `n` times each, so that
/// both see the same machine load (the ratio stays fair on a busy machine).
fn paired(n: usize, mut a: impl FnMut(usize), mut b: impl FnMut(usize)) -> (f64, f64) {
    a(0);
    b(0);
    let (mut ta, mut tb) = (Duration::ZERO, Duration::ZERO);
    for i in 1..=n {
        let t = Instant::now();
        a(i);
        ta += t.elapsed();
        let t = Instant::now();
        b(i);
        tb += t.elapsed();
    }
    (
        ta.as_secs_f64() * 1e6 / n as f64,
        tb.as_secs_f64() * 1e6 / n as f64,
    )
}

fn secs(f: impl FnOnce() -> usize) -> (f64, usize) {
    let t = Instant::now();
    let n = f();
    (t.elapsed().as_secs_f64(), n)
}

struct Row {
    op: String,
    adapter: f64,
    raw: Option<f64>,
    local: Option<f64>,
    unit: &'static str,
}

fn fmt(x: Option<f64>) -> String {
    match x {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "–".into(),
    }
}

/// How many times `a` costs `b`: the ratio of times, or the inverse ratio of rates (`…/s`).
fn cost_ratio(unit: &str, a: f64, b: f64) -> f64 {
    if unit.ends_with("/s") {
        b / a
    } else {
        a / b
    }
}

fn print_rows(title: &str, rows: &[Row]) {
    println!("\n{title}\n");
    println!(
        "| operation | unit | strata-etcd | raw etcd-client | adapter cost / raw | local LSM |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    for r in rows {
        let ratio = r
            .raw
            .map(|raw| format!("{:.2}×", cost_ratio(r.unit, r.adapter, raw)))
            .unwrap_or_else(|| "–".into());
        println!(
            "| {} | {} | {} | {} | {ratio} | {} |",
            r.op,
            r.unit,
            fmt(Some(r.adapter)),
            fmt(r.raw),
            fmt(r.local)
        );
    }
}

fn load_engine(e: &dyn Engine, n: usize) -> f64 {
    let limit = e.batch_limits().max_ops.min(1000);
    let t = Instant::now();
    let mut b = WriteBatch::new();
    for i in 0..n {
        b.put(key(i / PER_PARTITION, i % PER_PARTITION), value(i as u64));
        if b.op_count() == limit {
            e.write(std::mem::take(&mut b)).unwrap();
        }
    }
    if b.op_count() > 0 {
        e.write(b).unwrap();
    }
    n as f64 / t.elapsed().as_secs_f64()
}

/// Engine options for the benchmark: the cluster, a namespace and the call timeout.
fn etcd_options(eps: &[String], prefix: &str, timeout: f64) -> EtcdOptions {
    let mut o = EtcdOptions::new(eps.to_vec(), prefix);
    o.timeout = Duration::from_secs_f64(timeout);
    o
}

fn bench_engine(eps: &[String], n: usize, a: &Args) -> Vec<Row> {
    let prefix = format!("bench/{}/{n}", std::process::id());
    let e = EtcdEngine::connect(etcd_options(eps, &prefix, a.timeout)).unwrap();
    let mut raw = Raw::connect(eps, e.options().namespace());
    let dir = tempfile::tempdir().unwrap();
    let local = LsmEngine::open(
        dir.path(),
        LsmOptions {
            sync: SyncMode::Always,
            ..LsmOptions::default()
        },
    )
    .unwrap();
    let parts = n / PER_PARTITION;
    eprintln!("  loading {n} pairs into etcd ...");
    let load_rate = load_engine(&e, n);
    let local_load = load_engine(&local, n);
    let mut rows = vec![Row {
        op: "load (batches of 128; local: 1000)".into(),
        adapter: load_rate,
        raw: None,
        local: Some(local_load),
        unit: "pairs/s",
    }];
    // Raw batched load rate on 50 batches of 128 into a scratch range.
    let t = Instant::now();
    for b in 0..50 {
        let ops: Vec<TxnOp> = (0..128)
            .map(|i| {
                let k = raw.k(&[
                    b"~scratch".as_slice(),
                    &((b * 128 + i) as u32).to_be_bytes(),
                ]
                .concat());
                TxnOp::put(k, value(i as u64), None)
            })
            .collect();
        raw.txn(Txn::new().and_then(ops));
    }
    let raw_load = 50.0 * 128.0 / t.elapsed().as_secs_f64();
    rows[0].raw = Some(raw_load);
    // The adapter's rate on the same 50 batches, measured apart from the bulk load.
    let t = Instant::now();
    for b in 0..50u32 {
        let mut wb = WriteBatch::new();
        for i in 0..128u32 {
            wb.put(
                [b"~scratch".as_slice(), &(b * 128 + i).to_be_bytes()].concat(),
                value(i as u64),
            );
        }
        e.write(wb).unwrap();
    }
    rows[0].adapter = 50.0 * 128.0 / t.elapsed().as_secs_f64();
    rows[0].op = "batched put (128 per txn)".into();
    rows.insert(
        0,
        Row {
            op: format!("bulk load of {n} (adapter; local batches of 1000)"),
            adapter: load_rate,
            raw: None,
            local: Some(local_load),
            unit: "pairs/s",
        },
    );
    let mut rng = Rng(42);
    let mut pick = move || (rng.below(parts), rng.below(PER_PARTITION));
    let ops = a.ops;
    let mut keys: Vec<(usize, usize)> = (0..=ops).map(|_| pick()).collect();
    let (put_a, put_r) = paired(
        ops,
        |i| {
            let (p, s) = keys[i];
            strata_lsm::engine::put(&e, &key(p, s), &value(i as u64 + 7)).unwrap()
        },
        |i| {
            let (p, s) = keys[i];
            raw.put(&key(p, s), &value(i as u64 + 9))
        },
    );
    let put_l = per_op(ops, |i| {
        let (p, s) = keys[i];
        strata_lsm::engine::put(&local, &key(p, s), &value(i as u64)).unwrap()
    });
    rows.push(Row {
        op: "put (one key, durable)".into(),
        adapter: put_a,
        raw: Some(put_r),
        local: Some(put_l),
        unit: "µs/op",
    });
    keys.iter_mut().for_each(|k| *k = pick());
    let gets = ops * 3;
    let gkeys: Vec<(usize, usize)> = (0..=gets).map(|_| pick()).collect();
    let (get_a, get_r) = paired(
        gets,
        |i| assert!(e.get(&key(gkeys[i].0, gkeys[i].1)).unwrap().is_some()),
        |i| assert!(raw.get(&key(gkeys[i].0, gkeys[i].1))),
    );
    let get_l = per_op(gets, |i| {
        assert!(local.get(&key(gkeys[i].0, gkeys[i].1)).unwrap().is_some())
    });
    rows.push(Row {
        op: "get (linearizable)".into(),
        adapter: get_a,
        raw: Some(get_r),
        local: Some(get_l),
        unit: "µs/op",
    });
    for reverse in [false, true] {
        let dir = if reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        };
        let q = |eng: &dyn Engine, p: usize| {
            eng.range(KeyRange::prefix(&partition(p)), dir)
                .unwrap()
                .take(100)
                .inspect(|r| {
                    if let Err(e) = r {
                        panic!("a range failed: {e}")
                    }
                })
                .count()
        };
        let (qa, qr) = paired(
            ops,
            |i| assert_eq!(q(&e, gkeys[i].0), 100),
            |i| assert_eq!(raw.query(&partition(gkeys[i].0), 100, reverse), 100),
        );
        let ql = per_op(ops, |i| assert_eq!(q(&local, gkeys[i].0), 100));
        let name = if reverse {
            "query 100 items, reverse"
        } else {
            "query 100 items"
        };
        rows.push(Row {
            op: name.into(),
            adapter: qa,
            raw: Some(qr),
            local: Some(ql),
            unit: "µs/op",
        });
    }
    // Conditional batch: a counter compared and bumped with 10 puts, all or nothing.
    let counter = b"~counter".to_vec();
    let cb = |eng: &dyn Engine, i: usize| {
        let mut b = WriteBatch::new();
        let old = if i == 0 {
            None
        } else {
            Some(i.to_string().into_bytes())
        };
        b.require(Condition::Equals(counter.clone(), old));
        b.put(counter.clone(), (i + 1).to_string());
        for j in 0..10 {
            b.put(key(gkeys[(i + j) % gets].0, j), value(j as u64));
        }
        eng.write(b).unwrap();
    };
    let ns_counter = raw.k(b"~raw-counter");
    let (ca, cr) = paired(
        ops,
        |i| cb(&e, i),
        |i| {
            let cmp = if i == 0 {
                Compare::version(ns_counter.clone(), CompareOp::Equal, 0)
            } else {
                Compare::value(ns_counter.clone(), CompareOp::Equal, i.to_string())
            };
            let mut t = vec![TxnOp::put(ns_counter.clone(), (i + 1).to_string(), None)];
            for j in 0..10 {
                t.push(TxnOp::put(
                    raw.k(&key(gkeys[(i + j) % gets].0, j)),
                    value(j as u64),
                    None,
                ));
            }
            assert!(raw.txn(Txn::new().when(vec![cmp]).and_then(t)));
        },
    );
    let cl = per_op(ops, |i| cb(&local, i));
    rows.push(Row {
        op: "conditional batch (1 compare + 11 puts)".into(),
        adapter: ca,
        raw: Some(cr),
        local: Some(cl),
        unit: "µs/op",
    });
    // Full scans.
    let count = |eng: &dyn Engine, dir| {
        eng.range(KeyRange::all(), dir)
            .unwrap()
            .inspect(|r| {
                if let Err(e) = r {
                    panic!("a range failed: {e}")
                }
            })
            .count()
    };
    let total = n + 2 + 50 * 128;
    // Best of three, alternating.
    let (mut sa, mut sr) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        let (t, c) = secs(|| count(&e, Direction::Forward));
        assert_eq!(c, total);
        sa = sa.min(t);
        let (t, c) = secs(|| raw.scan_once());
        assert_eq!(c, total);
        sr = sr.min(t);
    }
    let (sl, _) = secs(|| count(&local, Direction::Forward));
    rows.push(Row {
        op: "full scan (raw: one unpaged request)".into(),
        adapter: sa * 1e3,
        raw: Some(sr * 1e3),
        local: Some(sl * 1e3),
        unit: "ms",
    });
    let (ra, c) = secs(|| count(&e, Direction::Reverse));
    assert_eq!(c, total);
    let (rl, _) = secs(|| count(&local, Direction::Reverse));
    let mut rev_row = Row {
        op: "full reverse scan (raw: paged, descending sort)".into(),
        adapter: ra * 1e3,
        raw: None,
        local: Some(rl * 1e3),
        unit: "ms",
    };
    if n <= a.naive_max {
        let (pf, c) = secs(|| raw.scan_paged(1000, false));
        assert_eq!(c, total);
        rows.push(Row {
            op: "full scan (raw: paged by 1000, no windows)".into(),
            adapter: sa * 1e3,
            raw: Some(pf * 1e3),
            local: None,
            unit: "ms",
        });
        let (pr, c) = secs(|| raw.scan_paged(1000, true));
        assert_eq!(c, total);
        rev_row.raw = Some(pr * 1e3);
    }
    rows.push(rev_row);
    // Page sizes and windows.
    for (page, windows) in [(100, true), (1000, true), (10_000, true), (1000, false)] {
        if !windows && n > a.naive_max {
            continue;
        }
        let mut o = etcd_options(eps, &prefix, a.timeout);
        o.page_items = page;
        o.windows = windows;
        let e2 = EtcdEngine::connect(o).unwrap();
        let (f, _) = secs(|| count(&e2, Direction::Forward));
        let (r, _) = secs(|| count(&e2, Direction::Reverse));
        let w = if windows { "windows" } else { "no windows" };
        rows.push(Row {
            op: format!("scan forward, page {page}, {w}"),
            adapter: f * 1e3,
            raw: None,
            local: None,
            unit: "ms",
        });
        rows.push(Row {
            op: format!("scan reverse, page {page}, {w}"),
            adapter: r * 1e3,
            raw: None,
            local: None,
            unit: "ms",
        });
    }
    e.delete_all().unwrap();
    rows
}

fn bench_tables(eps: &[String], n: usize, ops: usize, timeout: f64) -> Vec<Row> {
    let schema = TableSchema::new("posts", vec![KeyField::new("user", Kind::Int)])
        .with_sort(vec![KeyField::new("ts", Kind::Int)]);
    let prefix = format!("bench-tables/{}/{n}", std::process::id());
    let edb = Db::open_etcd_with(etcd_options(eps, &prefix, timeout)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ldb = Db::open_with(dir.path(), DbOptions::default()).unwrap();
    let item = |p: usize, s: usize| {
        Item::new()
            .with("user", p as i64)
            .with("ts", s as i64)
            .with("body", Value::Bytes(value((p * 1000 + s) as u64)))
    };
    let parts = n / PER_PARTITION;
    let mut out: Vec<Vec<f64>> = Vec::new();
    for db in [&edb, &ldb] {
        let t = db.create_table(schema.clone()).unwrap();
        let limits = db.engine().batch_limits();
        let start = Instant::now();
        let mut b = Batch::new();
        for i in 0..n {
            let it = item(i / PER_PARTITION, i % PER_PARTITION);
            let len = t.encoded_len(&it).unwrap();
            if !b.is_empty() && !limits.admits(b.len() + 1, b.payload_bytes() + len) {
                db.write(std::mem::take(&mut b)).unwrap();
            }
            b.put(&t, &it).unwrap();
            if b.len() == 1000 {
                db.write(std::mem::take(&mut b)).unwrap();
            }
        }
        db.write(b).unwrap();
        let load = n as f64 / start.elapsed().as_secs_f64();
        let mut rng = Rng(7);
        let picks: Vec<(usize, usize)> = (0..=ops * 3)
            .map(|_| (rng.below(parts), rng.below(PER_PARTITION)))
            .collect();
        let put = per_op(ops, |i| t.put(&item(picks[i].0, picks[i].1)).unwrap());
        let get = per_op(ops * 3, |i| {
            let k = strata::Key::new(
                vec![Value::Int(picks[i].0 as i128)],
                vec![Value::Int(picks[i].1 as i128)],
            );
            assert!(t.get(&k).unwrap().is_some())
        });
        let query = per_op(ops, |i| {
            let q = Query::new(vec![Value::Int(picks[i].0 as i128)]).limit(100);
            assert_eq!(t.query(&q).unwrap().items.len(), 100)
        });
        let cond = per_op(ops, |i| {
            let mut b = Batch::new();
            for j in 0..10 {
                b.put_if_not_exists(&t, &item(parts + i, j)).unwrap();
            }
            db.write(b).unwrap();
        });
        let (scan, c) = secs(|| {
            let mut total = 0;
            let mut s = Scan::all().limit(10_000);
            loop {
                let page = t.scan(&s).unwrap();
                total += page.items.len();
                match page.last_key {
                    Some(k) => s = s.after(Some(k)),
                    None => return total,
                }
            }
        });
        assert!(c >= n);
        out.push(vec![load, put, get, query, cond, scan * 1e3]);
    }
    let names = [
        ("bulk load (batches fit the engine)", "items/s"),
        ("put item", "µs/op"),
        ("get item", "µs/op"),
        ("query 100 items", "µs/op"),
        ("batch of 10 put-if-not-exists", "µs/op"),
        ("full table scan (pages of 10,000)", "ms"),
    ];
    if let Ok(e) = edb
        .engine()
        .clone()
        .range(KeyRange::all(), Direction::Forward)
    {
        drop(e);
    }
    names
        .iter()
        .enumerate()
        .map(|(i, (op, unit))| Row {
            op: op.to_string(),
            adapter: out[0][i],
            raw: None,
            local: Some(out[1][i]),
            unit,
        })
        .collect()
}

fn main() {
    let a = Args::parse();
    let started = Instant::now();
    let (eps, cluster) = match &a.endpoints {
        Some(e) => (e.split(',').map(str::to_owned).collect::<Vec<_>>(), None),
        None => {
            let c = Cluster {
                dir: tempfile::tempdir().unwrap(),
            };
            eprintln!("{}", c.run("start"));
            let eps = c.run("endpoints");
            (eps.split(',').map(str::to_owned).collect(), Some(c))
        }
    };
    println!(
        "etcd benchmark: 3 members on 127.0.0.1, {} timed ops per row",
        a.ops
    );
    for &n in &a.sizes {
        eprintln!("size {n}: engine ...");
        let rows = bench_engine(&eps, n, &a);
        print_rows(&format!("### Engine, {n} pairs"), &rows);
        if n <= a.tables_max {
            eprintln!("size {n}: tables ...");
            let rows = bench_tables(&eps, n, a.ops, a.timeout);
            println!("\n### Tables, {n} items (strata-etcd column: tables on etcd)\n");
            println!(
                "| operation | unit | tables on etcd | tables on local LSM | etcd cost / local |"
            );
            println!("|---|---|---:|---:|---:|");
            for r in &rows {
                let l = r.local.unwrap_or(f64::NAN);
                println!(
                    "| {} | {} | {} | {} | {:.2}× |",
                    r.op,
                    r.unit,
                    fmt(Some(r.adapter)),
                    fmt(Some(l)),
                    cost_ratio(r.unit, r.adapter, l)
                );
            }
        }
        if let Some(c) = &cluster {
            let rss: Vec<String> = c.member_rss().iter().map(|m| format!("{m:.0}")).collect();
            println!(
                "\npeak RSS after {n}: bench process {:.0} MiB; etcd members {} MiB",
                self_rss(),
                rss.join(" / ")
            );
        }
    }
    eprintln!("total {:.1}s", started.elapsed().as_secs_f64());
    drop(cluster);
}
