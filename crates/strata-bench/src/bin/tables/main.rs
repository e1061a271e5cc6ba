//! Query/Scan benchmark: Strata tables vs SQLite (rusqlite, bundled; a `WITHOUT ROWID` table
//! with the same composite primary key) vs KeystoneDB (`kstone-api` 0.1.0), in one run.
//!
//! ```text
//! cargo run --release -p strata-bench --bin tables -- [PARTITIONS] [PER_PARTITION] [KSTONE_PARTITIONS] [--rounds N] [--gets N] [--memory] [--no-mmap-reads]
//! ```
//! Defaults: 10,000 partitions × 100 sort keys = 1,000,000 items for Strata and SQLite.
//! KeystoneDB 0.1.0 fsyncs every put (its batch write loops over put), so loading a million
//! items would take many minutes: it gets `KSTONE_PARTITIONS` partitions (default 200, i.e.
//! 20,000 items) and its rates are per operation on that smaller table.
//!
//! Strata runs twice: with the typed API (`put_as` / `get_as` / `query_rows_as` / `scan_rows_as` on
//! `struct Row { user: String, ts: i64, body: String, n: i64 }`, what SQLite reads per row) and
//! with the `Item` API (attribute maps), so both are visible in one run. `--memory` runs Strata
//! on its in-memory engine instead; `--no-mmap-reads` opens Strata with
//! `DbOptions::mmap_reads = false` (every block read through `pread`).
//!
//! Every database is durable on commit: Strata with `sync = true` (group commit), SQLite in WAL
//! mode with `synchronous = FULL`, KeystoneDB with its fsync per put. Bulk loads commit every
//! 1,000 items (one Strata batch, one SQLite transaction).
//!
//! **Rounds (`--rounds N`, default 3).** Every phase of one round is short (a range row is
//! 5,000 queries, well under a second), so one measurement of each swings with whatever else
//! the machine does: in the seventh round single runs of the same binary spread by 30–60%.
//! The benchmark therefore measures in rounds and pairs Strata with SQLite inside each round:
//! the bulk load runs `N` times for each database, alternating (Strata typed, Strata Item API,
//! SQLite; each round into a fresh directory, the previous round's removed), then the read rows
//! run `N` times on the last round's databases, alternating the same way. Each rate printed is
//! the median over the rounds, and each ratio is the median of the per-round ratios, with the
//! smallest and largest in brackets. KeystoneDB loads once (its fsync per put makes a load
//! slow) and reads in every round. Rows of the sixth and seventh rounds were single
//! measurements (`--rounds 1` reproduces that).

use std::path::Path;
use std::time::{Duration, Instant};

use clap::Parser;

mod kstone_run;
mod sqlite_run;
mod strata_run;

use kstone_run::KstoneRun;
use sqlite_run::SqliteRun;
use strata_run::{Api, StrataRun};

/// Queries per query row (Strata and SQLite).
const QUERIES: u64 = 5_000;

use strata_bench::tables_workload::{body, user, Row};

use strata_bench::Rng;

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

/// One round of the read rows of one database.
struct Reads {
    get: Rate,
    query: Rate,
    range: Rate,
    scan: Rate,
    scan4: Rate,
}

impl Reads {
    fn rates(&self) -> [Rate; 5] {
        [self.get, self.query, self.range, self.scan, self.scan4]
    }
}

const ROWS: [&str; 6] = [
    "bulk load (items/s)",
    "point get (ops/s)",
    "query 100 items of one partition (queries/s)",
    "query sort-key range, 20 items (queries/s)",
    "full scan (items/s)",
    "4-segment parallel scan (items/s)",
];

/// Every round's rate of every row of one database: `rows[row][round]` in ops/s.
struct Measured {
    name: &'static str,
    items: usize,
    rows: [Vec<f64>; 6],
}

impl Measured {
    fn new(name: &'static str, items: usize) -> Self {
        Measured {
            name,
            items,
            rows: Default::default(),
        }
    }
    fn add_reads(&mut self, r: &Reads) {
        for (i, rate) in r.rates().iter().enumerate() {
            self.rows[i + 1].push(rate.per_sec());
        }
    }
    fn median(&self, row: usize) -> f64 {
        median(&self.rows[row])
    }
    /// Median, smallest and largest of the per-round ratios `self / other` of one row.
    fn ratio(&self, other: &Measured, row: usize) -> (f64, f64, f64) {
        let (a, b) = (&self.rows[row], &other.rows[row]);
        let r: Vec<f64> = if a.len() == b.len() {
            a.iter().zip(b).map(|(x, y)| x / y).collect()
        } else {
            // KeystoneDB loads once: compare with the median of the other side.
            let m = median(b);
            a.iter().map(|x| x / m).collect()
        };
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.iter().copied().fold(0.0, f64::max);
        (median(&r), lo, hi)
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
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

fn fmt_ratio((m, lo, hi): (f64, f64, f64), rounds: usize) -> String {
    if rounds > 1 {
        format!("{m:.2}× ({lo:.2}–{hi:.2})")
    } else {
        format!("{m:.2}×")
    }
}

fn remove(dir: &Path) {
    if dir.exists() {
        std::fs::remove_dir_all(dir).expect("remove an earlier round's database");
    }
}

/// Strata tables against SQLite and KeystoneDB 0.1.0: bulk load, get, query, range and scan
/// rates, measured in rounds (rates: medians over the rounds; ratios: medians of the per-round
/// ratios). Results: markdown tables on stdout, progress on stderr.
#[derive(Parser)]
#[command(name = "tables")]
struct Args {
    /// Partitions of the Strata and SQLite tables.
    #[arg(value_name = "PARTITIONS", default_value_t = 10_000)]
    parts: usize,
    /// Sort keys (items) per partition, for every database.
    #[arg(value_name = "PER_PARTITION", default_value_t = 100)]
    per: usize,
    /// Partitions of the KeystoneDB table (it fsyncs every put, so it gets a smaller table).
    #[arg(value_name = "KSTONE_PARTITIONS", default_value_t = 200)]
    kparts: usize,
    /// Rounds of every phase (each rate is the median over the rounds); at least 1.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = strata_bench::count_at_least_one)]
    rounds: usize,
    /// Run Strata on its in-memory engine instead of on disk.
    #[arg(long)]
    memory: bool,
    /// Open Strata with `DbOptions::mmap_reads = false` (every block read through `pread`).
    #[arg(long = "no-mmap-reads", action = clap::ArgAction::SetFalse)]
    mmap_reads: bool,
    /// Random point gets per round of the get row, for Strata and SQLite (at most twice the
    /// items). The default 100,000 reads a 10^7 table's blocks mostly for the first time
    /// (checksum, page faults); 1,000,000 measures the steady state (`README.md`, growth).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    gets: usize,
}

fn main() {
    let Args {
        parts,
        per,
        kparts,
        rounds,
        memory,
        mmap_reads,
        gets,
    } = Args::parse();
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let n = parts * per;
    let (sname, iname) = if memory {
        ("Strata (memory)", "Strata (memory, Item API)")
    } else {
        ("Strata", "Strata (Item API)")
    };
    let mut strata = Measured::new(sname, n);
    let mut items = Measured::new(iname, n);
    let mut sqlite = Measured::new("SQLite", n);
    let mut kstone = Measured::new("KeystoneDB 0.1.0", kparts * per);
    let mut runs: Option<(StrataRun, StrataRun, SqliteRun)> = None;
    for round in 0..rounds {
        if let Some((a, b, c)) = runs.take() {
            a.close();
            b.close();
            drop(c);
            for d in ["strata", "strata-items", "sqlite"] {
                remove(&dir.path().join(format!("{d}-{}", round - 1)));
            }
        }
        eprintln!(
            "round {}/{rounds}: loading {parts} partitions x {per} items ...",
            round + 1
        );
        let at = |d: &str| dir.path().join(format!("{d}-{round}"));
        let (a, ra) = StrataRun::load(&at("strata"), parts, per, memory, Api::Typed, mmap_reads);
        let (b, rb) = StrataRun::load(
            &at("strata-items"),
            parts,
            per,
            memory,
            Api::Items,
            mmap_reads,
        );
        let (c, rc) = SqliteRun::load(&at("sqlite"), parts, per);
        strata.rows[0].push(ra.per_sec());
        items.rows[0].push(rb.per_sec());
        sqlite.rows[0].push(rc.per_sec());
        runs = Some((a, b, c));
    }
    eprintln!("kstone: {kparts} partitions x {per} items ...");
    let (k, rk) = KstoneRun::load(dir.path(), kparts, per);
    kstone.rows[0].push(rk.per_sec());
    let (a, b, c) = runs.expect("at least one round");
    for round in 0..rounds {
        eprintln!("round {}/{rounds}: reads ...", round + 1);
        strata.add_reads(&a.reads(gets));
        items.add_reads(&b.reads(gets));
        sqlite.add_reads(&c.reads(gets));
        kstone.add_reads(&k.reads());
    }
    a.close();
    b.close();
    println!(
        "| operation | {} ({} items) | {} ({} items) | {} ({} items) | {} ({} items) | Strata / SQLite | Strata (Item API) / SQLite | Strata / KeystoneDB |",
        strata.name, strata.items, items.name, items.items, sqlite.name, sqlite.items, kstone.name, kstone.items
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (i, row) in ROWS.iter().enumerate() {
        println!(
            "| {row} | {} | {} | {} | {} | {} | {} | {} |",
            fmt_rate(strata.median(i)),
            fmt_rate(items.median(i)),
            fmt_rate(sqlite.median(i)),
            fmt_rate(kstone.median(i)),
            fmt_ratio(strata.ratio(&sqlite, i), rounds),
            fmt_ratio(items.ratio(&sqlite, i), rounds),
            fmt_ratio(strata.ratio(&kstone, i), rounds),
        );
    }
    eprintln!(
        "total {:?} ({rounds} rounds)",
        Duration::from_secs_f64(started.elapsed().as_secs_f64())
    );
}
