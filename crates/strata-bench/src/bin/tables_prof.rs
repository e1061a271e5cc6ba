//! Read-path profiling harness for Strata tables (not a peer comparison): builds the
//! `tables` benchmark's table (PARTS partitions × PER items: user text partition, ts int sort
//! key, a 64-byte body and an int), compacts it, then runs one workload in a function of its
//! own, so that `valgrind --tool=callgrind --toggle-collect='*prof_*'` counts only that
//! workload's instructions.
//!
//! ```text
//! tables_prof --dir D [--parts P] [--per N] --phase load|compact|get|query|range|scan|scan4 --ops K [--typed]
//!             [--lt] [--pages]
//!             [--cache-mb M] [--warm G]
//! ```
//! `--typed` uses the typed API (`put_as` / `get_as` / `query_as` / `scan_as` with `Row`)
//! instead of `Item`s. `--lt` makes the range phase's condition `ts < 20` instead of
//! `ts between 20 and 39` (both 20 items). Queries stream their rows (`query_rows_as` /
//! `query_rows`, each row dropped in turn, as the `tables` benchmark reads); `--pages` collects
//! each query's page instead (`query_as` / `query`, what this harness did before session 9).
//! `--cache-mb` sets the block cache (default
//! 64 MiB); `--warm G` runs G random gets first (as the benchmark's get phase does before its queries), not profiled.
//! `compact` flushes and fully compacts the database in `D` (as the `tables` benchmark does after
//! its load; a `load` leaves what background compaction reached). `scan4` scans the table as
//! 4 segments on 4 threads (the benchmark's 4-segment scan; callgrind counts the main thread).
//! The database in `D` is built on first use and reused (delete `D` to rebuild); `load`
//! always builds a fresh one in `D`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;

use strata::{
    Batch, Db, DbOptions, Item, Key, KeyField, Query, Scan, SortCondition, Table, TableSchema,
};
use strata_key::{Kind, Value};

use strata_bench::tables_workload::{body, user, Row};

use strata_bench::Rng;

fn schema() -> TableSchema {
    TableSchema::new("items", vec![KeyField::new("user", Kind::Text)])
        .with_sort(vec![KeyField::new("ts", Kind::Int)])
}

/// This thread's time on a CPU and waiting for one, in ns (`/proc/thread-self/schedstat`).
fn thread_sched() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

#[inline(never)]
fn prof_load(db: &Db, t: &Table, parts: usize, per: usize, typed: bool) {
    let mut batch = Batch::new();
    for p in 0..parts {
        for s in 0..per {
            if typed {
                let row = Row {
                    user: user(p),
                    ts: s as i64,
                    body: body(p, s),
                    n: (p * per + s) as i64,
                };
                batch.put_as(t, &row).expect("put");
                if batch.len() == 1000 {
                    db.write(std::mem::take(&mut batch)).expect("write");
                }
                continue;
            }
            let item = Item::new()
                .with("user", user(p))
                .with("ts", s as i64)
                .with("body", body(p, s))
                .with("n", (p * per + s) as i64);
            batch.put(t, &item).expect("put");
            if batch.len() == 1000 {
                db.write(std::mem::take(&mut batch)).expect("write");
            }
        }
    }
    db.write(batch).expect("write");
}

#[inline(never)]
fn prof_get(t: &Table, parts: usize, per: usize, ops: usize, typed: bool) -> usize {
    let mut rng = Rng(7);
    let mut n = 0;
    for _ in 0..ops {
        let (p, s) = (rng.below(parts), rng.below(per));
        let k = Key::new(vec![Value::from(user(p))], vec![Value::Int(s as i128)]);
        n += if typed {
            t.get_as::<Row>(&k)
                .expect("get")
                .map_or(0, |r| r.body.len())
        } else {
            t.get(&k).expect("get").map_or(0, |i| i.len())
        };
    }
    n
}

/// Collect each query's page (`query_as` / `query`) instead of streaming its rows
/// (`query_rows_as` / `query_rows`, as the `tables` benchmark reads since its sixth round).
static PAGES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[inline(never)]
/// Items of a query, through the API under test.
fn query_len(t: &Table, q: &Query, typed: bool) -> usize {
    let pages = PAGES.load(std::sync::atomic::Ordering::Relaxed);
    match (typed, pages) {
        (true, true) => t.query_as::<Row>(q).expect("query").items.len(),
        (false, true) => t.query(q).expect("query").items.len(),
        (true, false) => t
            .query_rows_as::<Row>(q)
            .expect("query")
            .map(|r| r.map(|_row: Row| ()).expect("row"))
            .count(),
        (false, false) => t
            .query_rows(q)
            .expect("query")
            .map(|r| r.map(|_item: Item| ()).expect("row"))
            .count(),
    }
}

#[inline(never)]
fn prof_query(t: &Table, parts: usize, ops: usize, typed: bool) -> usize {
    let mut rng = Rng(8);
    let mut n = 0;
    for _ in 0..ops {
        let q = Query::new(vec![Value::from(user(rng.below(parts)))]).limit(100);
        n += query_len(t, &q, typed);
    }
    n
}

#[inline(never)]
fn prof_range(t: &Table, parts: usize, ops: usize, typed: bool, lt: bool) -> usize {
    let mut rng = Rng(9);
    let mut n = 0;
    for _ in 0..ops {
        // 20 items: ts in [20, 39], or with `--lt` ts < 20.
        let c = if lt {
            SortCondition::Lt(vec![Value::Int(20)])
        } else {
            SortCondition::Between(vec![Value::Int(20)], vec![Value::Int(39)])
        };
        let q = Query::new(vec![Value::from(user(rng.below(parts)))]).sort(c);
        n += query_len(t, &q, typed);
    }
    n
}

#[inline(never)]
fn prof_scan(t: &Table, typed: bool) -> usize {
    prof_scan_segment(t, &Scan::all(), typed)
}

/// One segment of a scan, streamed as the `tables` benchmark scans (one snapshot, each row
/// dropped in turn).
#[inline(never)]
fn prof_scan_segment(t: &Table, s: &Scan, typed: bool) -> usize {
    let mut n = 0;
    if typed {
        for r in t.scan_rows_as::<Row>(s).expect("scan") {
            n += r.expect("row").body.len().min(1);
        }
    } else {
        for r in t.scan_rows(s).expect("scan") {
            n += r.expect("row").len().min(1);
        }
    }
    n
}

/// The benchmark's 4-segment scan: segment `i` of 4 on thread `i`.
#[inline(never)]
fn prof_scan4(t: &Table, typed: bool) -> usize {
    strata_bench::parallel_sum(4, |i| prof_scan_segment(t, &Scan::segment(i, 4), typed))
}

/// Random point gets that fill the block cache (outside the profiled functions).
#[inline(never)]
fn warm(t: &Table, parts: usize, per: usize, ops: usize) {
    let mut rng = Rng(77);
    for _ in 0..ops {
        let (p, s) = (rng.below(parts), rng.below(per));
        let k = Key::new(vec![Value::from(user(p))], vec![Value::Int(s as i128)]);
        t.get(&k).expect("get");
    }
}

fn open(dir: &Path, cache_mb: Option<usize>) -> (Db, Table) {
    let mut o = DbOptions::default();
    if let Some(mb) = cache_mb {
        o.block_cache_bytes = mb << 20;
    }
    let db = Db::open_with(dir, o).expect("open");
    let t = match db.table("items") {
        Ok(t) => t,
        Err(_) => db.create_table(schema()).expect("create"),
    };
    (db, t)
}

/// Read-path profiling harness for Strata tables: builds the `tables` benchmark's table in
/// `--dir` (on first use; reused after), then runs one phase in a function of its own, for
/// `valgrind --tool=callgrind --toggle-collect='*prof_*'`.
#[derive(Parser)]
#[command(name = "tables_prof")]
struct Args {
    /// The database directory (built on first use and reused; `load` always builds afresh).
    #[arg(long, value_name = "D")]
    dir: PathBuf,
    /// Partitions of the table.
    #[arg(long, value_name = "P", default_value_t = 1000)]
    parts: usize,
    /// Items per partition.
    #[arg(long, value_name = "N", default_value_t = 100)]
    per: usize,
    /// Operations of the phase.
    #[arg(long, value_name = "K", default_value_t = 1000)]
    ops: usize,
    /// The phase: load, compact, get, query, range, scan or scan4.
    #[arg(long, default_value = "query")]
    phase: String,
    /// The typed API (`put_as` / `get_as` / `query_as` / `scan_as` with `Row`), not `Item`s.
    #[arg(long)]
    typed: bool,
    /// The range phase's condition `ts < 20` instead of `ts between 20 and 39`.
    #[arg(long)]
    lt: bool,
    /// Collect each query's page (`query_as` / `query`) instead of streaming its rows.
    #[arg(long)]
    pages: bool,
    /// Block cache, MiB [default: `DbOptions`' 64].
    #[arg(long, value_name = "M")]
    cache_mb: Option<usize>,
    /// Run G random gets first (not profiled), as the benchmark's get phase does.
    #[arg(long, value_name = "G")]
    warm: Option<usize>,
}

fn main() {
    let args = Args::parse();
    let dir = args.dir;
    let parts = args.parts;
    let per = args.per;
    let ops = args.ops;
    let phase = args.phase;
    let typed = args.typed;
    PAGES.store(args.pages, std::sync::atomic::Ordering::Relaxed);
    if phase == "load" {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let fresh = !dir.exists();
    let cache_mb = args.cache_mb;
    let (db, t) = open(&dir, cache_mb);
    if fresh && phase != "load" {
        let t0 = Instant::now();
        prof_load(&db, &t, parts, per, false);
        db.compact().expect("compact");
        eprintln!("built {} items in {:?}", parts * per, t0.elapsed());
    }
    if let Some(w) = args.warm {
        // As the `tables` benchmark's get phase before its queries (not profiled).
        let t0 = Instant::now();
        warm(&t, parts, per, w);
        eprintln!("warmed with {w} gets in {:?}", t0.elapsed());
    }
    let t0 = Instant::now();
    let sched0 = thread_sched();
    let written0 = strata_lsm::process_written();
    let r = match phase.as_str() {
        "load" => {
            prof_load(&db, &t, parts, per, typed);
            parts * per
        }
        "get" => prof_get(&t, parts, per, ops, typed),
        "query" => prof_query(&t, parts, ops, typed),
        "range" => prof_range(&t, parts, ops, typed, args.lt),
        "scan" => prof_scan(&t, typed),
        "scan4" => prof_scan4(&t, typed),
        "compact" => {
            db.compact().expect("compact");
            0
        }
        other => panic!("unknown phase {other}"),
    };
    let wall = t0.elapsed().as_secs_f64();
    println!("{phase} ops={ops} result={r} secs={wall:.3}");
    if phase == "load" {
        // Flush and compaction bytes of the load (background work done during it).
        let w = strata_lsm::process_written().since(&written0);
        println!(
            "written: amplification {:.2}, flushed {} MB, compacted {} MB (read {} MB) in {} merges ({} into L0), moved {} MB in {} moves",
            w.amplification(),
            w.flushed_bytes / 1_000_000,
            w.compacted_bytes / 1_000_000,
            w.compaction_input_bytes / 1_000_000,
            w.compactions,
            w.l0_merges,
            w.moved_bytes / 1_000_000,
            w.moves
        );
    }
    if let (Some((run0, wait0)), Some((run1, wait1))) = (sched0, thread_sched()) {
        // Where the measuring thread's wall time went: on a CPU, waiting for one (other
        // processes' load), or blocked (fsync, write stalls, locks).
        let (run, wait) = ((run1 - run0) as f64 / 1e9, (wait1 - wait0) as f64 / 1e9);
        println!(
            "thread: on-cpu {run:.3}s, runqueue {wait:.3}s, blocked {:.3}s",
            (wall - run - wait).max(0.0)
        );
    }
    db.close().expect("close");
}
