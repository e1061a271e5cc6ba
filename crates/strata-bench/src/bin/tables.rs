//! Query/Scan benchmark: Strata tables vs SQLite (rusqlite, bundled; a `WITHOUT ROWID` table
//! with the same composite primary key) vs KeystoneDB (`kstone-api` 0.1.0), in one run.
//!
//! ```text
//! cargo run --release -p strata-bench --bin tables -- [PARTITIONS] [PER_PARTITION] [KSTONE_PARTITIONS]
//! ```
//! Defaults: 10,000 partitions × 100 sort keys = 1,000,000 items for Strata and SQLite.
//! KeystoneDB 0.1.0 fsyncs every put (its batch write loops over put), so loading a million
//! items would take many minutes: it gets `KSTONE_PARTITIONS` partitions (default 200, i.e.
//! 20,000 items) and its rates are per operation on that smaller table.
//!
//! Strata runs twice: with the typed API (`put_as` / `get_as` / `query_rows_as` / `scan_rows_as` on
//! `struct Row { user: String, ts: i64, body: String, n: i64 }`, what SQLite reads per row) and
//! with the `Item` API (attribute maps), so both are visible in one run. `--memory` runs Strata
//! on its in-memory engine instead.
//!
//! Every database is durable on commit: Strata with `sync = true` (group commit), SQLite in WAL
//! mode with `synchronous = FULL`, KeystoneDB with its fsync per put. Bulk loads commit every
//! 1,000 items (one Strata batch, one SQLite transaction).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use strata::{Batch, Db, DbOptions, Item, Key, KeyField, Query, Scan, SortCondition, TableSchema};
use strata_key::{Kind, Value};

const BODY_LEN: usize = 64;

/// One row as the typed API reads and writes it (the columns SQLite returns per row).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Row {
    user: String,
    ts: i64,
    body: String,
    n: i64,
}

/// Which Strata API a run uses.
#[derive(Clone, Copy, PartialEq)]
enum Api {
    /// `put_as` / `get_as` / `query_rows_as` / `scan_rows_as` with [`Row`].
    Typed,
    /// [`Item`]s.
    Items,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn user(p: usize) -> String {
    format!("user{p:06}")
}

fn body(p: usize, s: usize) -> String {
    let mut b = format!("body of {p}/{s} ");
    while b.len() < BODY_LEN {
        b.push((b'a' + (b.len() % 26) as u8) as char);
    }
    b
}

/// One measured row: operations done and the time they took.
#[derive(Clone, Copy, Default)]
struct Rate {
    ops: u64,
    secs: f64,
}

impl Rate {
    fn per_sec(&self) -> f64 {
        if self.secs > 0.0 {
            self.ops as f64 / self.secs
        } else {
            0.0
        }
    }
}

fn timed(ops: u64, f: impl FnOnce()) -> Rate {
    let t = Instant::now();
    f();
    Rate {
        ops,
        secs: t.elapsed().as_secs_f64(),
    }
}

struct Results {
    name: &'static str,
    items: usize,
    load: Rate,
    get: Rate,
    query: Rate,
    range: Rate,
    scan: Rate,
    scan4: Rate,
}

const ROWS: [&str; 6] = [
    "bulk load (items/s)",
    "point get (ops/s)",
    "query 100 items of one partition (queries/s)",
    "query sort-key range, 20 items (queries/s)",
    "full scan (items/s)",
    "4-segment parallel scan (items/s)",
];

impl Results {
    fn rates(&self) -> [Rate; 6] {
        [
            self.load, self.get, self.query, self.range, self.scan, self.scan4,
        ]
    }
}

fn bench_strata(
    dir: &std::path::Path,
    parts: usize,
    per: usize,
    memory: bool,
    api: Api,
) -> Results {
    let db = if memory {
        Db::memory().expect("memory db")
    } else {
        Db::open_with(dir, DbOptions::default()).expect("open strata")
    };
    let t = db
        .create_table(
            TableSchema::new("items", vec![KeyField::new("user", Kind::Text)])
                .with_sort(vec![KeyField::new("ts", Kind::Int)]),
        )
        .expect("create table");
    let n = parts * per;
    let before_load = strata_lsm::process_written();
    let load = timed(n as u64, || {
        let mut batch = Batch::new();
        for p in 0..parts {
            for s in 0..per {
                if api == Api::Typed {
                    let row = Row {
                        user: user(p),
                        ts: s as i64,
                        body: body(p, s),
                        n: (p * per + s) as i64,
                    };
                    batch.put_as(&t, &row).expect("put");
                } else {
                    let item = Item::new()
                        .with("user", user(p))
                        .with("ts", s as i64)
                        .with("body", body(p, s))
                        .with("n", (p * per + s) as i64);
                    batch.put(&t, &item).expect("put");
                }
                if batch.len() == 1000 {
                    db.write(std::mem::take(&mut batch)).expect("write");
                }
            }
        }
        db.write(batch).expect("write");
    });
    // Let the LSM reach a steady state before the reads (flush the memtables, then compact),
    // so that reads do not race background compaction; reported apart from the load.
    let loaded = strata_lsm::process_written();
    let settle = Instant::now();
    db.compact().expect("compact");
    eprintln!(
        "strata: flush + compaction after the load took {:?}",
        settle.elapsed()
    );
    if !memory {
        // Flush + compaction bytes of the load (background work done during it), then of
        // the full compaction after it: SST bytes written per byte flushed.
        let w = loaded.since(&before_load);
        let all = strata_lsm::process_written().since(&before_load);
        eprintln!(
            "strata: write amplification of the load {:.2} (flushed {} MB, compacted {} MB in {} merges, moved {} MB in {} moves); with the final full compaction {:.2}",
            w.amplification(),
            w.flushed_bytes / 1_000_000,
            w.compacted_bytes / 1_000_000,
            w.compactions,
            w.moved_bytes / 1_000_000,
            w.moves,
            all.amplification()
        );
    }
    let mut rng = Rng(7);
    let gets = 100_000.min(n * 2);
    let get = timed(gets as u64, || {
        for _ in 0..gets {
            let (p, s) = (rng.below(parts), rng.below(per));
            let k = Key::new(vec![Value::from(user(p))], vec![Value::Int(s as i128)]);
            if api == Api::Typed {
                let row: Row = t.get_as(&k).expect("get").expect("present");
                debug_assert_eq!(row.n as usize, p * per + s);
            } else {
                let it = t.get(&k).expect("get").expect("present");
                debug_assert_eq!(it.value("n"), Some(&Value::Int((p * per + s) as i128)));
            }
        }
    });
    // Items a query returns, read through the API under test: each row decoded and dropped
    // in turn (`Rows`), as SQLite steps its statement and as the scans below read. Until the
    // sixth round this collected a page (`query_as` / `query`), which keeps every row of the
    // page alive at once; rows of earlier rounds were measured that way.
    let query_count = |q: &Query| -> usize {
        match api {
            Api::Typed => t
                .query_rows_as::<Row>(q)
                .expect("query")
                .map(|r| r.map(|_row: Row| ()).expect("row"))
                .count(),
            Api::Items => t
                .query_rows(q)
                .expect("query")
                .map(|r| r.map(|_item: Item| ()).expect("row"))
                .count(),
        }
    };
    let queries = 5_000;
    let query = timed(queries, || {
        for _ in 0..queries {
            let q = Query::new(vec![Value::from(user(rng.below(parts)))]).limit(100);
            assert_eq!(query_count(&q), per.min(100));
        }
    });
    let range = timed(queries, || {
        for _ in 0..queries {
            let q = Query::new(vec![Value::from(user(rng.below(parts)))]).sort(
                SortCondition::Between(vec![Value::Int(20)], vec![Value::Int(39)]),
            );
            assert_eq!(query_count(&q), 20.min(per.saturating_sub(20)));
        }
    });
    // A scan streams its segment from one snapshot, each row decoded and dropped in turn, as
    // SQLite steps one statement over the range (`Rows`: bounded memory, no pages).
    let scan_segment = |seg: u32, of: u32| -> usize {
        let s = Scan::segment(seg, of);
        let mut count = 0;
        match api {
            Api::Typed => {
                for r in t.scan_rows_as::<Row>(&s).expect("scan") {
                    let _row: Row = r.expect("row");
                    count += 1;
                }
            }
            Api::Items => {
                for r in t.scan_rows(&s).expect("scan") {
                    let _item: Item = r.expect("row");
                    count += 1;
                }
            }
        }
        count
    };
    let scan = timed(n as u64, || assert_eq!(scan_segment(0, 1), n));
    let scan4 = timed(n as u64, || {
        let total: usize = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|i| sc.spawn(move || scan_segment(i, 4)))
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).sum()
        });
        assert_eq!(total, n);
    });
    db.close().expect("close");
    Results {
        name: match (memory, api) {
            (false, Api::Typed) => "Strata",
            (false, Api::Items) => "Strata (Item API)",
            (true, Api::Typed) => "Strata (memory)",
            (true, Api::Items) => "Strata (memory, Item API)",
        },
        items: n,
        load,
        get,
        query,
        range,
        scan,
        scan4,
    }
}

fn bench_sqlite(dir: &std::path::Path, parts: usize, per: usize) -> Results {
    use rusqlite::{params, Connection};
    let path = dir.join("bench.sqlite");
    let open = || {
        let c = Connection::open(&path).expect("open sqlite");
        c.pragma_update(None, "journal_mode", "WAL").expect("wal");
        c.pragma_update(None, "synchronous", "FULL").expect("sync");
        c
    };
    let mut c = open();
    c.execute_batch(
        "CREATE TABLE items (user TEXT NOT NULL, ts INTEGER NOT NULL, body TEXT, n INTEGER, PRIMARY KEY (user, ts)) WITHOUT ROWID",
    )
    .expect("create");
    let n = parts * per;
    let load = timed(n as u64, || {
        let mut i = 0;
        while i < n {
            let tx = c.transaction().expect("tx");
            {
                let mut st = tx
                    .prepare_cached("INSERT OR REPLACE INTO items VALUES (?1, ?2, ?3, ?4)")
                    .expect("prep");
                for j in i..(i + 1000).min(n) {
                    let (p, s) = (j / per, j % per);
                    st.execute(params![user(p), s as i64, body(p, s), j as i64])
                        .expect("insert");
                }
            }
            tx.commit().expect("commit");
            i += 1000;
        }
    });
    let mut rng = Rng(7);
    let gets = 100_000.min(n * 2);
    let get = timed(gets as u64, || {
        let mut st = c
            .prepare_cached("SELECT user, ts, body, n FROM items WHERE user = ?1 AND ts = ?2")
            .expect("prep");
        for _ in 0..gets {
            let (p, s) = (rng.below(parts), rng.below(per));
            let row: (String, i64, String, i64) = st
                .query_row(params![user(p), s as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .expect("get");
            debug_assert_eq!(row.3 as usize, p * per + s);
        }
    });
    type Row = (String, i64, String, i64);
    /// Reads every row into owned values (as the other databases return owned items).
    fn count(mut rows: rusqlite::Rows<'_>) -> usize {
        let mut c = 0;
        while let Some(r) = rows.next().expect("row") {
            let _row: Row = (
                r.get(0).expect("col"),
                r.get(1).expect("col"),
                r.get(2).expect("col"),
                r.get(3).expect("col"),
            );
            c += 1;
        }
        c
    }
    let queries = 5_000;
    let query = timed(queries, || {
        let mut st = c
            .prepare_cached(
                "SELECT user, ts, body, n FROM items WHERE user = ?1 ORDER BY ts LIMIT 100",
            )
            .expect("prep");
        for _ in 0..queries {
            let rows = st.query(params![user(rng.below(parts))]).expect("query");
            assert_eq!(count(rows), per.min(100));
        }
    });
    let range = timed(queries, || {
        let mut st = c
            .prepare_cached("SELECT user, ts, body, n FROM items WHERE user = ?1 AND ts BETWEEN 20 AND 39 ORDER BY ts")
            .expect("prep");
        for _ in 0..queries {
            let rows = st.query(params![user(rng.below(parts))]).expect("query");
            assert_eq!(count(rows), 20.min(per.saturating_sub(20)));
        }
    });
    let scan_range = |conn: &Connection, lo: usize, hi: usize| -> usize {
        let mut st = conn
            .prepare("SELECT user, ts, body, n FROM items WHERE user >= ?1 AND user < ?2 ORDER BY user, ts")
            .expect("prep");
        let rows = st.query(params![user(lo), user(hi)]).expect("scan");
        count(rows)
    };
    let scan = timed(n as u64, || assert_eq!(scan_range(&c, 0, parts), n));
    let scan4 = timed(n as u64, || {
        let total: usize = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|i| {
                    let open = &open;
                    let scan_range = &scan_range;
                    sc.spawn(move || {
                        let conn = open();
                        scan_range(&conn, parts * i / 4, parts * (i + 1) / 4)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).sum()
        });
        assert_eq!(total, n);
    });
    Results {
        name: "SQLite",
        items: n,
        load,
        get,
        query,
        range,
        scan,
        scan4,
    }
}

fn bench_kstone(dir: &std::path::Path, parts: usize, per: usize) -> Results {
    use kstone_api::{Database, KeystoneValue as KV, Query as KQuery, Scan as KScan};
    let db = Database::create(dir.join("kstone")).expect("create kstone");
    let n = parts * per;
    // Sort keys as 4-byte big-endian integers so that KeystoneDB's byte order is numeric order.
    let sk = |s: usize| (s as u32).to_be_bytes();
    let load = timed(n as u64, || {
        for p in 0..parts {
            for s in 0..per {
                let mut item: HashMap<String, KV> = HashMap::new();
                item.insert("body".into(), KV::S(body(p, s)));
                item.insert("n".into(), KV::N((p * per + s).to_string()));
                db.put_with_sk(user(p).as_bytes(), &sk(s), item)
                    .expect("put");
            }
        }
    });
    let mut rng = Rng(7);
    let gets = 20_000.min(n * 2);
    let get = timed(gets as u64, || {
        for _ in 0..gets {
            let (p, s) = (rng.below(parts), rng.below(per));
            db.get_with_sk(user(p).as_bytes(), &sk(s))
                .expect("get")
                .expect("present");
        }
    });
    let queries = 2_000;
    let query = timed(queries, || {
        for _ in 0..queries {
            let r = db
                .query(KQuery::new(user(rng.below(parts)).as_bytes()).limit(100))
                .expect("query");
            assert_eq!(r.items.len(), per.min(100));
        }
    });
    let range = timed(queries, || {
        for _ in 0..queries {
            let r = db
                .query(KQuery::new(user(rng.below(parts)).as_bytes()).sk_between(&sk(20), &sk(39)))
                .expect("query");
            assert_eq!(r.items.len(), 20.min(per.saturating_sub(20)));
        }
    });
    let scan = timed(n as u64, || {
        let r = db.scan(KScan::new()).expect("scan");
        assert_eq!(r.items.len(), n);
    });
    let scan4 = timed(n as u64, || {
        let total: usize = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|i| {
                    let db = &db;
                    sc.spawn(move || {
                        db.scan(KScan::new().segment(i, 4))
                            .expect("scan")
                            .items
                            .len()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).sum()
        });
        assert_eq!(total, n);
    });
    Results {
        name: "KeystoneDB 0.1.0",
        items: n,
        load,
        get,
        query,
        range,
        scan,
        scan4,
    }
}

fn fmt_rate(r: f64) -> String {
    if r >= 100_000.0 {
        format!("{:.0}k", r / 1000.0)
    } else if r >= 10_000.0 {
        format!("{:.1}k", r / 1000.0)
    } else {
        format!("{r:.0}")
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let memory = std::env::args().any(|a| a == "--memory");
    let parts = args.first().copied().unwrap_or(10_000);
    let per = args.get(1).copied().unwrap_or(100);
    let kparts = args.get(2).copied().unwrap_or(200);
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    eprintln!("strata: {parts} partitions x {per} items ...");
    let strata = bench_strata(&dir.path().join("strata"), parts, per, memory, Api::Typed);
    eprintln!("strata (Item API) ...");
    let items = bench_strata(
        &dir.path().join("strata-items"),
        parts,
        per,
        memory,
        Api::Items,
    );
    eprintln!("sqlite ...");
    let sqlite = bench_sqlite(dir.path(), parts, per);
    eprintln!("kstone: {kparts} partitions x {per} items ...");
    let kstone = bench_kstone(dir.path(), kparts, per);
    let all = [&strata, &items, &sqlite, &kstone];
    println!(
        "| operation | {} ({} items) | {} ({} items) | {} ({} items) | {} ({} items) | Strata / SQLite | Strata (Item API) / SQLite | Strata / KeystoneDB |",
        strata.name, strata.items, items.name, items.items, sqlite.name, sqlite.items, kstone.name, kstone.items
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (i, row) in ROWS.iter().enumerate() {
        let r: Vec<f64> = all.iter().map(|x| x.rates()[i].per_sec()).collect();
        println!(
            "| {row} | {} | {} | {} | {} | {:.2}× | {:.2}× | {:.2}× |",
            fmt_rate(r[0]),
            fmt_rate(r[1]),
            fmt_rate(r[2]),
            fmt_rate(r[3]),
            r[0] / r[2],
            r[1] / r[2],
            r[0] / r[3]
        );
    }
    eprintln!(
        "total {:?}",
        Duration::from_secs_f64(started.elapsed().as_secs_f64())
    );
}
