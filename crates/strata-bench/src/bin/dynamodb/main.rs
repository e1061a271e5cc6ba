//! `dynamodb`: the DynamoDB API, Strata against the local DynamoDB-compatible servers that
//! install here — PutItem, GetItem, Query (100 items), UpdateItem with a condition and
//! BatchWriteItem (25 puts), requests/s and p99 latency at 1, 8 and 64 concurrent clients over
//! loopback, all in one run: Strata embedded (`Dynamo::call`), `strata serve`, dynalite (npm,
//! LevelDB) and moto (PyPI, in memory).
//!
//! ```text
//! crates/strata-bench/peers/install-dynamodb-peers.sh     # once: dynalite + moto
//! cargo build --release -p strata-cli -p strata-bench --bin strata --bin dynamodb
//! target/release/dynamodb [--secs 3] [--clients 1,8,64] [--targets embedded,strata,dynalite,moto] [--sync none|always] [--ops PutItem,..]
//! ```
//! Peers that are not installed are skipped with a notice saying how to install them.

mod target;
mod workload;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use target::{HttpTarget, Target};
use workload::Op;

/// Requests/s and latency of one (target, operation, clients) cell.
#[derive(Clone, Copy, Debug, Default)]
struct Cell {
    rate: f64,
    p99_us: f64,
    errors: u64,
}

/// The DynamoDB API: Strata (embedded and `strata serve`) against dynalite and moto —
/// PutItem, GetItem, Query, UpdateItem, BatchWriteItem requests/s and p99 latency at several
/// client counts over loopback. `strata serve` is `$STRATA_BIN` or `strata` beside this binary;
/// the peers are looked up in `$STRATA_BENCH_PEERS` (default `~/.cache/strata-bench-peers`,
/// `peers/install-dynamodb-peers.sh`); peers not installed are skipped with a notice.
#[derive(Parser)]
#[command(name = "dynamodb")]
struct Options {
    /// Measured seconds per cell (after a 300 ms warm-up).
    #[arg(long, value_name = "SECONDS", default_value_t = 3.0)]
    secs: f64,
    /// Concurrent clients, comma-separated (one column each).
    #[arg(long, value_name = "N,N,..", value_delimiter = ',', default_values_t = [1, 8, 64])]
    clients: Vec<usize>,
    /// Systems to measure, comma-separated, in this order.
    #[arg(long, value_name = "T,T,..", value_delimiter = ',',
          value_parser = ["embedded", "strata", "dynalite", "moto"],
          default_values = ["embedded", "strata", "dynalite", "moto"])]
    targets: Vec<String>,
    /// Strata's durability: `none` (OS buffers) or `always` (fsync every write).
    #[arg(long, default_value = "none", value_parser = ["none", "always"])]
    sync: String,
    /// Operations to measure, comma-separated (any case).
    #[arg(long, value_name = "OP,OP,..", value_delimiter = ',', value_parser = op_named,
          default_values = ["PutItem", "GetItem", "Query", "UpdateItem", "BatchWriteItem"])]
    ops: Vec<Op>,
}

/// A clap value parser: the operation named `s` (any case).
fn op_named(s: &str) -> Result<Op, String> {
    Op::ALL
        .into_iter()
        .find(|op| op.name().eq_ignore_ascii_case(s))
        .ok_or_else(|| {
            let names: Vec<&str> = Op::ALL.iter().map(|op| op.name()).collect();
            format!("unknown op (known: {})", names.join(", "))
        })
}

fn summarize(mut lat: Vec<u32>, elapsed: Duration, errors: u64) -> Cell {
    lat.sort_unstable();
    let q = |p: f64| -> f64 {
        if lat.is_empty() {
            return f64::NAN;
        }
        lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)] as f64
    };
    Cell {
        rate: lat.len() as f64 / elapsed.as_secs_f64(),
        p99_us: q(0.99),
        errors,
    }
}

/// `clients` threads calling `Dynamo::call` in a loop for `secs` (after a warm-up).
fn run_embedded(d: &strata_dynamo::Dynamo, op: Op, clients: usize, secs: f64, run: u32) -> Cell {
    let warm = Duration::from_millis(300);
    let measure = Duration::from_secs_f64(secs);
    let errors = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let d = d.clone();
            let errors = errors.clone();
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let mut seq = 0u64;
                loop {
                    let now = Instant::now();
                    if now >= start + warm + measure {
                        return lat;
                    }
                    let body = op.body(run, c, seq);
                    seq += 1;
                    let t = Instant::now();
                    let ok = match d.call(op.name(), body.as_bytes()) {
                        Ok(out) => op.complete(&out),
                        Err(_) => false,
                    };
                    let us = t.elapsed().as_micros() as u32;
                    if t >= start + warm {
                        if ok {
                            lat.push(us);
                        } else {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    let lat: Vec<u32> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    summarize(lat, measure, errors.load(Ordering::Relaxed))
}

/// `clients` tasks, each with its own keep-alive connection, for `secs` (after a warm-up).
async fn run_http(t: &Arc<HttpTarget>, op: Op, clients: usize, secs: f64, run: u32) -> Cell {
    let warm = Duration::from_millis(300);
    let measure = Duration::from_secs_f64(secs);
    let errors = Arc::new(AtomicU64::new(0));
    let first_error = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let t = t.clone();
            let errors = errors.clone();
            let first_error = first_error.clone();
            tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut seq = 0u64;
                loop {
                    if Instant::now() >= start + warm + measure {
                        return lat;
                    }
                    let body = op.body(run, c, seq);
                    seq += 1;
                    let at = Instant::now();
                    let r = t.call(op.name(), body).await;
                    let us = at.elapsed().as_micros() as u32;
                    let ok = matches!(&r, Ok((200, b)) if op.complete(b));
                    if !ok && !first_error.swap(true, Ordering::Relaxed) {
                        eprintln!("  {} {}: first error: {:?}", t.name, op.name(), r);
                    }
                    if at >= start + warm {
                        if ok {
                            lat.push(us);
                        } else {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    let mut lat = Vec::new();
    for task in tasks {
        lat.extend(task.await.unwrap());
    }
    summarize(lat, measure, errors.load(Ordering::Relaxed))
}

/// Creates the table and loads the items Get/Update/Query read.
async fn prepare(t: &Target) -> Result<(), String> {
    let mut bodies = vec![("CreateTable", workload::create_table())];
    bodies.extend(
        workload::preload()
            .into_iter()
            .map(|b| ("BatchWriteItem", b)),
    );
    for (op, body) in bodies {
        if op == "BatchWriteItem" {
            wait_active(t).await?;
        }
        match t {
            Target::Embedded { dynamo, .. } => {
                dynamo
                    .call(op, body.as_bytes())
                    .map_err(|e| format!("{op}: {e}"))?;
            }
            Target::Http(h) => match h.call(op, body).await? {
                (200, _) => {}
                (s, b) => return Err(format!("{op}: {s} {}", String::from_utf8_lossy(&b))),
            },
        }
    }
    Ok(())
}

/// Waits until DescribeTable says ACTIVE (dynalite creates tables asynchronously).
async fn wait_active(t: &Target) -> Result<(), String> {
    let body = format!(r#"{{"TableName":"{}"}}"#, workload::TABLE);
    for _ in 0..600 {
        let answer = match t {
            Target::Embedded { dynamo, .. } => dynamo
                .call("DescribeTable", body.as_bytes())
                .map_err(|e| e.to_string())?,
            Target::Http(h) => h.call("DescribeTable", body.clone()).await?.1.to_vec(),
        };
        if answer.windows(8).any(|w| w == b"\"ACTIVE\"") {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err("the table did not become ACTIVE".into())
}

fn fmt_cell(c: &Cell) -> String {
    if c.rate == 0.0 && c.errors > 0 {
        return format!("failed ({} errors)", c.errors);
    }
    if c.rate == 0.0 {
        return "none finished in the window".into();
    }
    let rate = if c.rate >= 10_000.0 {
        format!("{:.1}k/s", c.rate / 1000.0)
    } else {
        format!("{:.0}/s", c.rate)
    };
    let p99 = if c.p99_us >= 10_000.0 {
        format!("{:.0} ms", c.p99_us / 1000.0)
    } else {
        format!("{:.2} ms", c.p99_us / 1000.0)
    };
    let err = if c.errors > 0 {
        format!(" ({} errors)", c.errors)
    } else {
        String::new()
    };
    format!("{rate} · p99 {p99}{err}")
}

fn ratio(a: Option<&Cell>, b: Option<&Cell>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b.rate > 0.0 && a.rate > 0.0 => format!("{:.1}×", a.rate / b.rate),
        _ => "–".into(),
    }
}

fn main() {
    let o = Options::parse();
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // results[target][op][clients]
    let mut names: Vec<String> = Vec::new();
    let mut results: Vec<Vec<Vec<Cell>>> = Vec::new();
    let mut memory: Vec<String> = Vec::new();
    let sync = o.sync == "always";
    for (run, which) in o.targets.iter().enumerate() {
        let run = run as u32;
        let path = dir.path().join(which);
        let t = rt.block_on(async {
            match which.as_str() {
                "embedded" => target::embedded(&path, sync),
                "strata" => target::strata_http(&path, &o.sync)
                    .await
                    .map(|h| Target::Http(Box::new(h))),
                "dynalite" => target::dynalite(&path)
                    .await
                    .map(|h| Target::Http(Box::new(h))),
                "moto" => target::moto().await.map(|h| Target::Http(Box::new(h))),
                other => Err(format!("unknown target {other}")),
            }
        });
        let t = match t {
            Ok(t) => t,
            Err(e) => {
                eprintln!("notice: {which} skipped: {e}");
                continue;
            }
        };
        eprintln!("{}: loading ...", t.name());
        if let Err(e) = rt.block_on(prepare(&t)) {
            eprintln!("notice: {} skipped: {e}", t.name());
            continue;
        }
        let mut rows = Vec::new();
        let t = match t {
            Target::Http(h) => Err(Arc::new(*h)),
            Target::Embedded { name, dynamo } => Ok((name, dynamo)),
        };
        for &op in &o.ops {
            let mut row = Vec::new();
            for &c in &o.clients {
                let cell = match &t {
                    Ok((_, d)) => run_embedded(d, op, c, o.secs, run),
                    Err(h) => rt.block_on(run_http(h, op, c, o.secs, run)),
                };
                eprintln!("  {:<26} {c:>3} clients: {}", op.label(), fmt_cell(&cell));
                row.push(cell);
            }
            rows.push(row);
        }
        let (name, mem) = match &t {
            Ok((name, _)) => (name.clone(), "in the benchmark process".to_string()),
            Err(h) => (
                h.name.clone(),
                h.peak_rss()
                    .map(|b| format!("{:.0} MiB", b as f64 / (1 << 20) as f64))
                    .unwrap_or_else(|| "?".into()),
            ),
        };
        memory.push(format!("{name}: {mem}"));
        names.push(name);
        results.push(rows);
    }
    print_table(&o, &names, &results);
    println!();
    println!(
        "Peak resident memory of the server processes: {}.",
        memory.join("; ")
    );
}

fn print_table(o: &Options, names: &[String], results: &[Vec<Vec<Cell>>]) {
    let find = |prefix: &str| names.iter().position(|n| n.starts_with(prefix));
    let (emb, http, dyn_, moto) = (
        find("Strata embedded"),
        find("strata serve"),
        find("dynalite"),
        find("moto"),
    );
    print!("| operation | clients |");
    for n in names {
        print!(" {n} |");
    }
    println!(" serve ÷ dynalite | serve ÷ moto | embedded ÷ serve |");
    print!("|---|---:|");
    for _ in names {
        print!("---:|");
    }
    println!("---:|---:|---:|");
    for (i, op) in o.ops.iter().enumerate() {
        for (j, c) in o.clients.iter().enumerate() {
            let cell = |t: Option<usize>| t.map(|t| &results[t][i][j]);
            print!("| {} | {c} |", op.label());
            for r in results {
                print!(" {} |", fmt_cell(&r[i][j]));
            }
            println!(
                " {} | {} | {} |",
                ratio(cell(http), cell(dyn_)),
                ratio(cell(http), cell(moto)),
                ratio(cell(emb), cell(http))
            );
        }
    }
}
