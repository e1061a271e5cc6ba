//! Key codec benchmark: one corpus of realistic keys (tenant, user id, name, timestamp, uuid),
//! encoded and decoded by every codec in one run.
//!
//! ```text
//! cargo run --release -p strata-bench --bin keys [-- --rows N] [--only TEXT] [--profile CODEC]
//! ```
//!
//! Prints a markdown table: ns per tuple (encode, decode, both; the thread's CPU time on Linux), MB/s of encoded output, total
//! bytes, ratios to `native`, whether the codec keeps the corpus's tuple order, and the peak RSS
//! of the process while that codec ran (the high-water mark is reset before each codec).
//!
//! `--profile CODEC` (`native-serde`, `native-value`, `storekey`, `fdb-tuple`) instead encodes
//! and decodes the corpus exactly once with one codec, in the functions `profile_encode` and
//! `profile_decode`: for repeatable instruction counts under
//! `valgrind --tool=callgrind --toggle-collect=*profile_encode*`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use clap::Parser;

use strata_key::codec::native::NativeCodec;
use strata_key::codec::native_serde::{from_key, to_key_into};
use strata_key::{Tuple, TupleCodec, Value};

/// One key of the corpus. The order of Rust's derived tuple comparison is the model.
type Row = (u16, u64, String, i64, uuid::Uuid);

/// The same key for serde codecs: the UUID as 16 bytes (serde's `Uuid` impl would write a
/// 36-character string to formats that call themselves human-readable).
type SerdeRow = (u16, u64, String, i64, Id);

/// A UUID that serializes as bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Id(uuid::Uuid);

impl serde::Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0.as_bytes())
    }
}

impl<'de> serde::Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Id;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("16 bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Id, E> {
                uuid::Uuid::from_slice(b).map(Id).map_err(E::custom)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Id, A::Error> {
                let mut b = [0u8; 16];
                for x in b.iter_mut() {
                    *x = a
                        .next_element()?
                        .ok_or_else(|| serde::de::Error::custom("short uuid"))?;
                }
                Ok(Id(uuid::Uuid::from_bytes(b)))
            }
        }
        d.deserialize_bytes(V)
    }
}

fn serde_rows(rows: &[Row]) -> Vec<SerdeRow> {
    rows.iter()
        .map(|r| (r.0, r.1, r.2.clone(), r.3, Id(r.4)))
        .collect()
}

/// A deterministic corpus: small tenant ids, user ids up to a few million, short names sharing
/// prefixes (some with NUL), millisecond timestamps, random UUIDs.
fn corpus(n: usize) -> Vec<Row> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        // splitmix64
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
            let id = uuid::Uuid::from_u64_pair(next(), next());
            (tenant, user, name, ts, id)
        })
        .collect()
}

fn row_tuple(r: &Row) -> Tuple {
    Tuple(vec![
        Value::Int(r.0.into()),
        Value::Int(r.1.into()),
        Value::Text(r.2.clone()),
        Value::Int(r.3.into()),
        Value::Uuid(r.4),
    ])
}

struct Outcome {
    name: &'static str,
    encode_ns: f64,
    decode_ns: f64,
    bytes: usize,
    misordered: usize,
    note: &'static str,
    /// Peak resident set size while this codec ran, in bytes (`None` if unknown).
    peak_rss: Option<u64>,
}

/// Resets the process's peak-RSS mark (Linux: `5` to `/proc/self/clear_refs`).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak RSS since the last reset (Linux `VmHWM`), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

thread_local! {
    /// `--only NAME`: time only the codecs whose name contains NAME (for profiling).
    static ONLY: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Nanoseconds the calling thread has run on a CPU (Linux `/proc/thread-self/schedstat`).
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Times `f` over the corpus until at least `min` has passed; ns per item. The time is the
/// thread's CPU time where Linux reports it (time spent waiting for a CPU on a loaded machine
/// is not counted; on a quiet machine both clocks agree), else the wall clock.
fn per_item(n: usize, min: Duration, mut f: impl FnMut()) -> f64 {
    f(); // warm up
    let start = Instant::now();
    let cpu0 = thread_cpu_ns();
    let mut rounds = 0u32;
    while start.elapsed() < min {
        f();
        rounds += 1;
    }
    let ns = match (cpu0, thread_cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64,
        _ => start.elapsed().as_nanos() as f64,
    };
    ns / (rounds.max(1) as f64 * n as f64)
}

/// Adjacent pairs of the model-sorted corpus whose encodings are not in ascending order.
fn misordered(sorted_keys: &[Vec<u8>]) -> usize {
    sorted_keys.windows(2).filter(|w| w[0] > w[1]).count()
}

#[allow(clippy::too_many_arguments)]
fn bench_codec<R, E, D>(
    name: &'static str,
    note: &'static str,
    rows: &[R],
    sorted: &[R],
    min: Duration,
    mut encode: E,
    mut decode: D,
) -> Outcome
where
    R: PartialEq + std::fmt::Debug,
    E: FnMut(&R, &mut Vec<u8>),
    D: FnMut(&[u8]) -> R,
{
    let skip = ONLY.with(|o| {
        o.borrow()
            .as_ref()
            .is_some_and(|x| !name.contains(x.as_str()))
    });
    let min = if skip { Duration::ZERO } else { min };
    reset_peak_rss();
    let keys: Vec<Vec<u8>> = rows
        .iter()
        .map(|r| {
            let mut b = Vec::new();
            encode(r, &mut b);
            b
        })
        .collect();
    for (k, r) in keys.iter().zip(rows).take(2000) {
        assert_eq!(&decode(k), r, "{name} does not round-trip");
    }
    let bytes = keys.iter().map(Vec::len).sum();
    let mut buf = Vec::with_capacity(128);
    let encode_ns = per_item(rows.len(), min, || {
        for r in rows {
            buf.clear();
            encode(black_box(r), &mut buf);
            black_box(&buf);
        }
    });
    let decode_ns = per_item(rows.len(), min, || {
        for k in &keys {
            black_box(decode(black_box(k)));
        }
    });
    let sorted_keys: Vec<Vec<u8>> = sorted
        .iter()
        .map(|r| {
            let mut b = Vec::new();
            encode(r, &mut b);
            b
        })
        .collect();
    Outcome {
        name,
        encode_ns,
        decode_ns,
        bytes,
        misordered: misordered(&sorted_keys),
        note,
        peak_rss: peak_rss(),
    }
}

/// Key codec benchmark: one corpus of realistic keys (tenant, user id, name, timestamp, uuid)
/// encoded and decoded by every codec; a markdown table on stdout.
#[derive(Parser)]
#[command(name = "keys")]
struct Args {
    /// Tuples in the corpus.
    #[arg(long, value_name = "N", default_value_t = 200_000)]
    rows: usize,
    /// Time only the codecs whose name contains this text (the others are not timed).
    #[arg(long, value_name = "TEXT")]
    only: Option<String>,
    /// Instead of the table: encode and decode the corpus exactly once with one codec, in
    /// `profile_encode` / `profile_decode` (for callgrind).
    #[arg(long, value_name = "CODEC",
          value_parser = ["native-serde", "native-value", "storekey", "fdb-tuple"])]
    profile: Option<String>,
}

fn main() {
    let Args {
        rows: n,
        only,
        profile: codec,
    } = Args::parse();
    if let Some(codec) = codec {
        profile(&codec, n);
        return;
    }
    ONLY.with(|o| *o.borrow_mut() = only);
    let min = Duration::from_millis(600);
    let rows = corpus(n);
    let mut sorted = rows.clone();
    sorted.sort();
    let srows = serde_rows(&rows);
    let ssorted = serde_rows(&sorted);
    let mut out = Vec::new();

    out.push(bench_codec(
        "strata native (serde)",
        "to_key / from_key",
        &srows,
        &ssorted,
        min,
        |r, b| to_key_into(r, &[], b).expect("encode"),
        |k| from_key::<SerdeRow>(k).expect("decode"),
    ));

    let native = NativeCodec::new();
    out.push(bench_codec(
        "strata native (Value)",
        "dynamic Tuple",
        &rows,
        &sorted,
        min,
        |r, b| native.encode_into(&row_tuple(r), b).expect("encode"),
        |k| tuple_row(&native.decode(k).expect("decode")),
    ));

    extra_codecs(&rows, &sorted, min, &mut out);

    out.push(bench_codec(
        "storekey 0.11",
        "own traits",
        &rows,
        &sorted,
        min,
        |r, b| storekey::encode(&mut *b, r).expect("encode"),
        |k| storekey::decode::<_, Row>(k).expect("decode"),
    ));
    out.push(bench_codec(
        "memcomparable 0.2",
        "serde",
        &srows,
        &ssorted,
        min,
        |r, b| {
            let mut s = memcomparable::Serializer::new(std::mem::take(b));
            serde::Serialize::serialize(r, &mut s).expect("encode");
            *b = s.into_inner();
        },
        |k| memcomparable::from_slice::<SerdeRow>(k).expect("decode"),
    ));
    out.push(bench_codec(
        "foundationdb-tuple 0.11",
        "own traits",
        &rows,
        &sorted,
        min,
        |r, b| {
            foundationdb_tuple::pack_into(r, b);
        },
        |k| foundationdb_tuple::unpack::<Row>(k).expect("decode"),
    ));
    out.push(bench_codec(
        "ordcode 0.2",
        "serde",
        &srows,
        &ssorted,
        min,
        |r, b| *b = ordcode::ser_to_vec_ordered(r, ordcode::Order::Ascending).expect("encode"),
        |k| ordcode::de_from_bytes_asc::<_, SerdeRow>(k).expect("decode"),
    ));
    out.push(bench_codec(
        "bytekey2 0.4",
        "serde",
        &srows,
        &ssorted,
        min,
        |r, b| *b = bytekey2::serialize(r).expect("encode"),
        |k| {
            bytekey2::deserialize::<SerdeRow>(k)
                .unwrap_or_else(|_| (0, 0, String::new(), 0, Id(uuid::Uuid::nil())))
        },
    ));

    print_table(n, &out);
    seed_counterexamples();
}

/// Encodes every row once into a reused buffer; returns the total length (so nothing is
/// optimised away).
#[inline(never)]
fn profile_encode<R>(rows: &[R], mut encode: impl FnMut(&R, &mut Vec<u8>)) -> usize {
    let mut buf = Vec::with_capacity(128);
    let mut total = 0;
    for r in rows {
        buf.clear();
        encode(black_box(r), &mut buf);
        total += black_box(&buf).len();
    }
    total
}

/// Decodes every key once.
#[inline(never)]
fn profile_decode<R>(keys: &[Vec<u8>], mut decode: impl FnMut(&[u8]) -> R) -> usize {
    let mut n = 0;
    for k in keys {
        black_box(decode(black_box(k)));
        n += 1;
    }
    n
}

fn profile_codec<R>(
    rows: &[R],
    mut encode: impl FnMut(&R, &mut Vec<u8>),
    decode: impl FnMut(&[u8]) -> R,
) {
    let keys: Vec<Vec<u8>> = rows
        .iter()
        .map(|r| {
            let mut b = Vec::new();
            encode(r, &mut b);
            b
        })
        .collect();
    let bytes = profile_encode(rows, &mut encode);
    let n = profile_decode(&keys, decode);
    println!("{n} tuples, {bytes} bytes");
}

/// `--profile CODEC`: one encode pass and one decode pass, nothing else timed.
fn profile(codec: &str, n: usize) {
    let rows = corpus(n);
    match codec {
        "native-serde" => profile_codec(
            &serde_rows(&rows),
            |r, b| to_key_into(r, &[], b).expect("encode"),
            |k| from_key::<SerdeRow>(k).expect("decode"),
        ),
        "native-value" => {
            let native = NativeCodec::new();
            profile_codec(
                &rows,
                |r, b| native.encode_into(&row_tuple(r), b).expect("encode"),
                |k| tuple_row(&native.decode(k).expect("decode")),
            )
        }
        "storekey" => profile_codec(
            &rows,
            |r, b| storekey::encode(&mut *b, r).expect("encode"),
            |k| storekey::decode::<_, Row>(k).expect("decode"),
        ),
        "fdb-tuple" => profile_codec(
            &rows,
            |r, b| {
                foundationdb_tuple::pack_into(r, b);
            },
            |k| foundationdb_tuple::unpack::<Row>(k).expect("decode"),
        ),
        other => {
            eprintln!("unknown codec {other:?} (native-serde, native-value, storekey, fdb-tuple)")
        }
    }
}

/// Strata's byte-compatible codecs of other systems (dynamic values, like `native (Value)`).
fn extra_codecs(rows: &[Row], sorted: &[Row], min: Duration, out: &mut Vec<Outcome>) {
    let fdb = strata_key::codec::fdb::FdbCodec::new();
    out.push(bench_codec(
        "strata fdb (Value)",
        "FoundationDB-identical bytes",
        rows,
        sorted,
        min,
        |r, b| fdb.encode_into(&row_tuple(r), b).expect("encode"),
        |k| tuple_row(&fdb.decode(k).expect("decode")),
    ));
    let centidb = strata_key::codec::centidb::CentidbCodec::new();
    out.push(bench_codec(
        "strata centidb (Value)",
        "centidb-identical bytes",
        rows,
        sorted,
        min,
        |r, b| centidb.encode_into(&row_tuple(r), b).expect("encode"),
        |k| tuple_row(&centidb.decode(k).expect("decode")),
    ));
}

fn tuple_row(t: &Tuple) -> Row {
    let int = |v: &Value| match v {
        Value::Int(i) => *i,
        _ => panic!("not an int: {v}"),
    };
    let text = match &t[2] {
        Value::Text(s) => s.clone(),
        v => panic!("not text: {v}"),
    };
    let id = match &t[4] {
        Value::Uuid(u) => *u,
        v => panic!("not a uuid: {v}"),
    };
    (
        int(&t[0]) as u16,
        int(&t[1]) as u64,
        text,
        int(&t[3]) as i64,
        id,
    )
}

fn print_table(n: usize, out: &[Outcome]) {
    let native = &out[0];
    let fastest_peer = out
        .iter()
        .filter(|o| !o.name.starts_with("strata") && o.misordered == 0)
        .map(|o| o.encode_ns + o.decode_ns)
        .fold(f64::INFINITY, f64::min);
    println!("corpus: {n} tuples (u16 tenant, u64 user, text name, i64 ms timestamp, uuid)");
    println!(
        "times: {} per tuple\n",
        if thread_cpu_ns().is_some() {
            "CPU time of the benchmark thread"
        } else {
            "wall clock"
        }
    );
    println!("| codec | encode ns/tuple | decode ns/tuple | enc+dec ns | enc MB/s | total bytes | bytes vs native | time vs native | order kept | peak RSS MB | notes |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|");
    for o in out {
        let both = o.encode_ns + o.decode_ns;
        let mbs = (o.bytes as f64 / n as f64) / o.encode_ns * 1e3;
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {:.2}× | {:.2}× | {} | {} | {} |",
            o.name,
            o.encode_ns,
            o.decode_ns,
            both,
            mbs,
            o.bytes,
            o.bytes as f64 / native.bytes as f64,
            both / (native.encode_ns + native.decode_ns),
            if o.misordered == 0 {
                "yes".to_string()
            } else {
                format!("**no** ({} adjacent pairs)", o.misordered)
            },
            o.peak_rss
                .map_or("?".to_string(), |b| format!("{:.0}", b as f64 / 1048576.0)),
            o.note
        );
    }
    println!(
        "\nfastest order-keeping peer / strata native (serde), encode+decode: {:.2}×",
        fastest_peer / (native.encode_ns + native.decode_ns)
    );
}

/// The research notes' counterexamples: ordcode and bytekey2 mis-order simple tuples.
fn seed_counterexamples() {
    let a = ("ab".to_string(), "c".to_string());
    let b = ("abc".to_string(), String::new());
    let oa = ordcode::ser_to_vec_ordered(&a, ordcode::Order::Ascending).expect("encode");
    let ob = ordcode::ser_to_vec_ordered(&b, ordcode::Order::Ascending).expect("encode");
    println!(
        "\nordcode: {:?} < {:?} but bytes {} {} {}",
        a,
        b,
        hex(&oa),
        if oa < ob { "<" } else { ">" },
        hex(&ob)
    );
    let c = ("a\0".to_string(), 1u8);
    let d = ("a".to_string(), 2u8);
    let kc = bytekey2::serialize(&c).expect("encode");
    let kd = bytekey2::serialize(&d).expect("encode");
    println!(
        "bytekey2: {:?} > {:?} but bytes {} {} {}; decoding the first: {:?}",
        c,
        d,
        hex(&kc),
        if kc < kd { "<" } else { ">" },
        hex(&kd),
        bytekey2::deserialize::<(String, u8)>(&kc).map_err(|e| e.to_string())
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
