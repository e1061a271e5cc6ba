//! The parent's report: one markdown table of every engine's phases, then the notes.

use std::collections::BTreeMap;

use crate::BATCH;

/// Every engine's results: `results[engine][phase] = (ops, seconds)`; `size` and `rss` carry
/// bytes in the ops field.
pub type Results = BTreeMap<String, BTreeMap<String, (u64, f64)>>;

const PHASES: [&str; 7] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "fillsync",
    "readrandom",
    "seekrandom",
    "readseq",
];

/// Prints the table (engines in `engines` order, those that ran), the ratio legend and the
/// children's notes.
pub fn print(
    n: u64,
    kstone_n: u64,
    cache: usize,
    engines: &[String],
    results: &Results,
    wall: &BTreeMap<String, f64>,
    notes: &[String],
) {
    let names: Vec<&String> = results.keys().collect();
    let order: Vec<&String> = engines.iter().filter(|e| names.contains(e)).collect();
    println!("N = {n} (kstone: {kstone_n}), 16-byte keys, 100-byte random values, batches of {BATCH}, cache {} MiB, one thread", cache >> 20);
    println!();
    print!("| workload |");
    for e in &order {
        print!(" {e} |");
    }
    println!();
    print!("|---|");
    for _ in &order {
        print!("---:|");
    }
    println!();
    let strata = results.get("strata").cloned().unwrap_or_default();
    for p in PHASES {
        print!("| {p} |");
        for e in &order {
            match results[*e].get(p) {
                Some(&(ops, s)) if s > 0.0 => {
                    let rate = ops as f64 / s;
                    let us = s * 1e6 / ops as f64;
                    match strata.get(p) {
                        Some(&(sops, ss)) if *e != "strata" && ss > 0.0 => {
                            let srate = sops as f64 / ss;
                            print!(" {rate:.0} ops/s, {us:.2} µs ({:.2}×) |", srate / rate);
                        }
                        _ => print!(" {rate:.0} ops/s, {us:.2} µs |"),
                    }
                }
                _ => print!(" n/a |"),
            }
        }
        println!();
    }
    print!("| on-disk after run |");
    for e in &order {
        match results[*e].get("size") {
            Some(&(b, _)) => print!(" {:.1} MB |", b as f64 / 1e6),
            None => print!(" n/a |"),
        }
    }
    println!();
    print!("| peak RSS |");
    for e in &order {
        match results[*e].get("rss") {
            Some(&(b, _)) if b > 0 => print!(" {:.0} MB |", b as f64 / 1e6),
            _ => print!(" n/a |"),
        }
    }
    println!();
    print!("| final sync |");
    for e in &order {
        match results[*e].get("sync") {
            Some(&(_, s)) => print!(" {:.1} ms |", s * 1e3),
            None => print!(" n/a |"),
        }
    }
    println!();
    print!("| process wall time |");
    for e in &order {
        print!(" {:.1} s |", wall.get(*e).copied().unwrap_or(0.0));
    }
    println!();
    println!();
    println!("(×) = Strata's throughput divided by the engine's: above 1 Strata is faster.");
    for note in notes {
        println!("note: {note}");
    }
}
