//! A profiling loop for the native serde codec (no peer crates, so it builds in seconds):
//! the corpus of `strata-bench --bin keys`, encoded and decoded repeatedly.
//!
//! ```text
//! cargo run --release -p strata-key --example native_serde_loop [-- ROWS SECONDS [enc|dec|tail]]
//! perf record -g target/release/examples/native_serde_loop 200000 5 dec
//! ```
//!
//! Prints ns per tuple for encode and decode (CPU time of the thread where Linux reports it). The side-by-side comparison with the peers is
//! `strata-bench --bin keys`; this loop is for perf and quick before/after checks.

use std::hint::black_box;
use std::time::{Duration, Instant};

use strata_key::codec::native_serde::{from_key, to_key, to_key_into};

/// The bench's serde row: tenant, user, name, timestamp, UUID bytes.
type Row = (u16, u64, String, i64, Id);

/// A key ending in an integer (mode `tail`): tenant, name, user.
type Tail = (u16, String, u64);

/// 16 UUID bytes that serialize as a bytes element.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Id([u8; 16]);

impl serde::Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("16 bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Id, E> {
                <[u8; 16]>::try_from(b).map(Id).map_err(E::custom)
            }
        }
        d.deserialize_bytes(V)
    }
}

/// The same deterministic corpus as `strata-bench --bin keys`.
fn corpus(n: usize) -> Vec<Row> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let names = [
        "ann", "anna", "annabel", "bob", "bobby", "carol", "dave", "eve", "mallory", "trent",
    ];
    (0..n)
        .map(|_| {
            let tenant = (next() % 40) as u16;
            let user = match next() % 4 {
                0 => next() % 1000,
                1 => next() % 100_000,
                _ => next() % 5_000_000,
            };
            let mut name = names[(next() % names.len() as u64) as usize].to_string();
            match next() % 20 {
                0 => name.push('\0'),
                1..=6 => name.push_str(&format!("{}", next() % 100)),
                _ => {}
            }
            let ts = 1_600_000_000_000 + (next() % 200_000_000_000) as i64;
            let (a, b) = (next(), next());
            let mut id = [0u8; 16];
            id[..8].copy_from_slice(&a.to_be_bytes());
            id[8..].copy_from_slice(&b.to_be_bytes());
            (tenant, user, name, ts, Id(id))
        })
        .collect()
}

/// Runs `f` over the corpus until `secs` have passed; ns per item. Not inlined: callgrind
/// counts it with `--toggle-collect=*per_item*`.
#[inline(never)]
fn per_item(n: usize, secs: f64, mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    let cpu0 = cpu_ns();
    let mut rounds = 0u32;
    while start.elapsed() < Duration::from_secs_f64(secs) {
        f();
        rounds += 1;
    }
    eprintln!("{} passes", rounds + 1);
    let ns = match (cpu0, cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64,
        _ => start.elapsed().as_nanos() as f64,
    };
    ns / (f64::from(rounds.max(1)) * n as f64)
}

/// Nanoseconds this thread has run on a CPU (Linux `/proc/thread-self/schedstat`), if known:
/// on a loaded machine, a steadier clock than the wall clock.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// A profiling loop for the native serde codec on the corpus of `strata-bench --bin keys`:
/// ns per tuple for encode and decode.
#[derive(clap::Parser)]
#[command(name = "native_serde_loop")]
struct Args {
    /// Tuples in the corpus.
    #[arg(value_name = "ROWS", default_value_t = 200_000)]
    n: usize,
    /// Seconds each measured loop runs at least.
    #[arg(value_name = "SECONDS", default_value_t = 1.0)]
    secs: f64,
    /// Only encode (`enc`), only decode (`dec`), or decode keys ending in an integer (`tail`)
    /// [default: encode and decode].
    #[arg(value_name = "MODE", value_parser = ["enc", "dec", "tail"])]
    which: Option<String>,
}

fn main() {
    let Args { n, secs, which } = clap::Parser::parse();
    let which = which.unwrap_or_default();
    let rows = corpus(n);
    let keys: Vec<Vec<u8>> = rows
        .iter()
        .map(|r| {
            let mut b = Vec::new();
            to_key_into(r, &[], &mut b).expect("encode");
            b
        })
        .collect();
    for (k, r) in keys.iter().zip(&rows) {
        assert_eq!(&from_key::<Row>(k).expect("decode"), r);
    }
    let mut buf = Vec::with_capacity(128);
    let enc = if which == "dec" {
        0.0
    } else {
        per_item(n, secs, || {
            for r in &rows {
                buf.clear();
                to_key_into(black_box(r), &[], &mut buf).expect("encode");
                black_box(&buf);
            }
        })
    };
    let dec = if which == "enc" {
        0.0
    } else {
        per_item(n, secs, || {
            for k in &keys {
                black_box(from_key::<Row>(black_box(k)).expect("decode"));
            }
        })
    };
    // `tail`: keys that end in an integer, `(tenant, name, user)` of the same rows (the
    // decoder's near-end integer case), decoded only.
    if which == "tail" {
        let tails: Vec<Vec<u8>> = rows
            .iter()
            .map(|r| to_key(&(r.0, &r.2, r.1)).expect("encode"))
            .collect();
        let ns = per_item(n, secs, || {
            for k in &tails {
                black_box(from_key::<Tail>(black_box(k)).expect("decode"));
            }
        });
        println!("{n} keys ending in an integer: decode {ns:.1} ns/key");
        return;
    }
    let bytes: usize = keys.iter().map(Vec::len).sum();
    println!(
        "{n} tuples, {bytes} bytes: encode {enc:.1} ns, decode {dec:.1} ns, enc+dec {:.1} ns/tuple",
        enc + dec
    );
}
