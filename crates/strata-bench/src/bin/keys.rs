//! Key codec benchmark: one corpus of realistic keys (tenant, user id, name, timestamp, uuid),
//! encoded and decoded by every codec in one run.
//!
//! ```text
//! cargo run --release -p strata-bench --bin keys [-- --rows N] [--only TEXT[,TEXT]]
//!     [--rounds N] [--slot-ms MS] [--profile CODEC]
//! ```
//!
//! Prints a markdown table: ns per tuple (encode, decode, both; the thread's CPU time), MB/s of
//! encoded output, total bytes, ratios to `native`, whether the codec keeps the corpus's tuple
//! order, and the peak RSS of the process while that codec's keys were built and checked (the
//! high-water mark is reset before each codec; only one codec's keys are alive then).
//!
//! **Method (interleaved rounds).** On the shared 2-vCPU VM the speed of the whole machine
//! flips between a fast and a slow phase (~1.3–1.5× apart, lasting ~0.3–2 s) that every codec
//! feels alike, so timing one codec after another (600 ms each, as this bench did until
//! session 19) let *when* a codec ran decide the ratio (storekey/native 0.73–1.34 between
//! runs). Now every codec's keys are built once, then `--rounds` rounds (default 25) each give
//! every codec one slot — encode for at least `--slot-ms` (default 25 ms), then decode as long,
//! each after a short untimed warm-up — in an order rotated by one codec per round. A codec's
//! encode and decode are the medians over its rounds; "enc+dec" and every ratio to native are
//! the **median of the per-round values**, so each ratio compares slots seconds apart, never
//! whole runs. Each slot's times go to stderr (`ms since the first slot, round, codec`).
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

/// A UUID field through `strata_key::serde_uuid`: a native Uuid element (the bytes of the
/// dynamic tuple's `Value::Uuid`), which is how a Strata user stores a UUID key field; storekey
/// and foundationdb-tuple also write UUIDs with their own UUID encodings.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
struct NativeId(#[serde(with = "strata_key::serde_uuid")] uuid::Uuid);

/// The row for native (serde) with its UUID field through `strata_key::serde_uuid`.
type NativeRow = (u16, u64, String, i64, NativeId);

fn native_rows(rows: &[Row]) -> Vec<NativeRow> {
    rows.iter()
        .map(|r| (r.0, r.1, r.2.clone(), r.3, NativeId(r.4)))
        .collect()
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

/// One codec's results: medians over the rounds, and the per-round times for the ratio rows.
struct Outcome {
    name: &'static str,
    /// Median over the rounds of the encode time, ns per tuple.
    encode_ns: f64,
    /// Median over the rounds of the decode time, ns per tuple.
    decode_ns: f64,
    /// Per round (index = round): encode + decode ns per tuple.
    both: Vec<f64>,
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

/// Nanoseconds the calling thread has run on a CPU (`CLOCK_THREAD_CPUTIME_ID`, exact to the
/// nanosecond on Linux; `/proc/thread-self/schedstat`, which this bench read before, is only
/// brought up to date at the scheduler tick — 4 ms steps on this VM — too coarse for 40 ms
/// slots). `None` where the clock is not available.
fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the duration of the call, and
    // `clock_gettime` writes nothing else. Tested by `thread_cpu_clock_is_fine_grained`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(u64::try_from(ts.tv_sec).ok()? * 1_000_000_000 + u64::try_from(ts.tv_nsec).ok()?)
}

/// Times `f` (one pass over `n` items) until at least `min` has passed; ns per item. The
/// time is the thread's CPU time where the OS reports it (time spent waiting for a CPU on a
/// loaded machine is not counted; on a quiet machine both clocks agree), else the wall clock.
/// The caller warms up.
fn per_item(n: usize, min: Duration, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let cpu0 = thread_cpu_ns();
    let mut rounds = 0u32;
    while rounds == 0 || start.elapsed() < min {
        f();
        rounds += 1;
    }
    let ns = match (cpu0, thread_cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64,
        _ => start.elapsed().as_nanos() as f64,
    };
    ns / (rounds as f64 * n as f64)
}

/// Adjacent pairs of the model-sorted corpus whose encodings are not in ascending order.
fn misordered(sorted_keys: &[Vec<u8>]) -> usize {
    sorted_keys.windows(2).filter(|w| w[0] > w[1]).count()
}

/// The median of `v` (the mean of the middle two for an even count; 0 if empty).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// A codec under test, type-erased so that the rounds can interleave all codecs.
trait Timed {
    /// The codec's row name.
    fn name(&self) -> &'static str;
    /// Untimed: encodes the corpus, checks that the first 2,000 keys round-trip, counts
    /// misordered neighbours; returns (total encoded bytes, misordered pairs). The keys are
    /// dropped again (so that peak RSS read after this call is this codec's alone).
    fn check(&mut self) -> (usize, usize);
    /// Untimed: encodes the corpus into the keys that [`Timed::slot`] decodes, kept until the
    /// codec is dropped.
    fn prepare(&mut self);
    /// One time slot: times encoding the corpus for at least `min`, then decoding the
    /// prepared keys for at least `min` (each after one untimed warm-up pass); returns
    /// (encode, decode) ns per tuple.
    fn slot(&mut self, min: Duration) -> (f64, f64);
}

/// A codec with its corpus: the typed rows, the rows in model order, and the two functions.
struct Codec<'a, R, E, D> {
    name: &'static str,
    rows: &'a [R],
    sorted: &'a [R],
    encode: E,
    decode: D,
    /// The encoded corpus (empty until [`Timed::prepare`]).
    keys: Vec<Vec<u8>>,
}

impl<R, E: FnMut(&R, &mut Vec<u8>), D> Codec<'_, R, E, D> {
    fn keys(&mut self, rows: &[R]) -> Vec<Vec<u8>> {
        rows.iter()
            .map(|r| {
                let mut b = Vec::new();
                (self.encode)(r, &mut b);
                b
            })
            .collect()
    }
}

impl<R, E, D> Timed for Codec<'_, R, E, D>
where
    R: PartialEq + std::fmt::Debug,
    E: FnMut(&R, &mut Vec<u8>),
    D: FnMut(&[u8]) -> R,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn check(&mut self) -> (usize, usize) {
        let keys = self.keys(self.rows);
        for (k, r) in keys.iter().zip(self.rows).take(2000) {
            assert_eq!(&(self.decode)(k), r, "{} does not round-trip", self.name);
        }
        let bytes = keys.iter().map(Vec::len).sum();
        drop(keys);
        (bytes, misordered(&self.keys(self.sorted)))
    }

    fn prepare(&mut self) {
        self.keys = self.keys(self.rows);
    }

    fn slot(&mut self, min: Duration) -> (f64, f64) {
        let rows = self.rows;
        let keys = &self.keys;
        let warm = rows.len().min(WARM_UP);
        let encode = &mut self.encode;
        let mut buf = Vec::with_capacity(128);
        let mut encode_all = |rows: &[R]| {
            for r in rows {
                buf.clear();
                encode(black_box(r), &mut buf);
                black_box(&buf);
            }
        };
        encode_all(&rows[..warm]);
        let encode_ns = per_item(rows.len(), min, || encode_all(rows));
        let decode = &mut self.decode;
        let mut decode_all = |keys: &[Vec<u8>]| {
            for k in keys {
                black_box(decode(black_box(k)));
            }
        };
        decode_all(&keys[..warm]);
        let decode_ns = per_item(rows.len(), min, || decode_all(keys));
        (encode_ns, decode_ns)
    }
}

/// Items of the untimed warm-up pass before each timed loop of a slot (code, branch
/// predictors and the allocator's free lists of this codec, not the whole corpus).
const WARM_UP: usize = 5_000;

/// Boxes a codec for [`run_rounds`].
fn codec<'a, R, E, D>(
    name: &'static str,
    note: &'static str,
    rows: &'a [R],
    sorted: &'a [R],
    encode: E,
    decode: D,
) -> (&'static str, Box<dyn Timed + 'a>)
where
    R: PartialEq + std::fmt::Debug,
    E: FnMut(&R, &mut Vec<u8>) + 'a,
    D: FnMut(&[u8]) -> R + 'a,
{
    (
        note,
        Box::new(Codec {
            name,
            rows,
            sorted,
            encode,
            decode,
            keys: Vec::new(),
        }),
    )
}

/// Runs the benchmark: every codec's check, then `rounds` rounds; in each round every timed
/// codec gets one slot ([`Timed::slot`], `min` for encode and `min` for decode), the order
/// rotated by one codec per round (round r starts with codec r mod n), so that each codec's
/// rounds are spread over the whole run and a slow phase of the machine falls on all codecs
/// alike. Each slot's times go to stderr (with ms since the first slot). Codecs whose name
/// contains none of `only`'s comma-separated texts (if given) are checked but not timed (their
/// times are 0).
fn run_rounds(
    codecs: Vec<(&'static str, Box<dyn Timed + '_>)>,
    rounds: usize,
    min: Duration,
    only: Option<&str>,
) -> Vec<Outcome> {
    let mut out = Vec::new();
    let mut timed = Vec::new();
    for (note, mut c) in codecs {
        reset_peak_rss();
        let (bytes, misordered) = c.check();
        let peak_rss = peak_rss();
        let name = c.name();
        out.push(Outcome {
            name,
            encode_ns: 0.0,
            decode_ns: 0.0,
            both: vec![0.0; rounds],
            bytes,
            misordered,
            note,
            peak_rss,
        });
        let on = only.is_none_or(|x| x.split(',').any(|p| name.contains(p)));
        timed.push((c, on));
    }
    for (c, on) in &mut timed {
        if *on {
            c.prepare();
        }
    }
    let n = timed.len();
    let mut enc = vec![Vec::new(); n];
    let mut dec = vec![Vec::new(); n];
    let t0 = Instant::now();
    for round in 0..rounds {
        for i in (0..n).map(|j| (j + round) % n) {
            let (c, on) = &mut timed[i];
            if !*on {
                continue;
            }
            let (e, d) = c.slot(min);
            let o = &mut out[i];
            eprintln!(
                "{:>6} ms round {round} {}: encode {e:.1} decode {d:.1}",
                t0.elapsed().as_millis(),
                o.name
            );
            enc[i].push(e);
            dec[i].push(d);
            o.both[round] = e + d;
        }
    }
    for (i, o) in out.iter_mut().enumerate() {
        o.encode_ns = median(&enc[i]);
        o.decode_ns = median(&dec[i]);
    }
    out
}

/// Key codec benchmark: one corpus of realistic keys (tenant, user id, name, timestamp, uuid)
/// encoded and decoded by every codec; a markdown table on stdout.
#[derive(Parser)]
#[command(name = "keys")]
struct Args {
    /// Tuples in the corpus.
    #[arg(long, value_name = "N", default_value_t = 200_000)]
    rows: usize,
    /// Time only the codecs whose name contains this text, or one of several texts separated
    /// by commas (the others are checked but not timed).
    #[arg(long, value_name = "TEXT")]
    only: Option<String>,
    /// Instead of the table: encode and decode the corpus exactly once with one codec, in
    /// `profile_encode` / `profile_decode` (for callgrind).
    #[arg(long, value_name = "CODEC",
          value_parser = ["native-serde", "native-serde-uuid", "native-value", "storekey", "fdb-tuple"])]
    profile: Option<String>,
    /// Rounds: each round times every codec once (encode, then decode), in a rotated order.
    #[arg(long, value_name = "N", default_value_t = 25,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
    /// Minimum time of one codec's encode (and of its decode) in one round, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 25)]
    slot_ms: u64,
    /// Hidden (profiling): time (or with `--profile`, profile) only native (serde) and
    /// storekey on one part of the row: `ints` (u16, u64), `text` (String,), `i64` (i64,),
    /// `uuid` (the UUID alone, not in a tuple); or on the whole row (`row`) or the row without
    /// one part (`-ints`, `-text`, `-i64`, `-uuid`: a part's cost inside a row-length key is
    /// the row's minus the row's without it).
    #[arg(long, value_name = "PART", hide = true, allow_hyphen_values = true,
          value_parser = ["ints", "text", "i64", "uuid", "row", "-ints", "-text", "-i64", "-uuid"])]
    row: Option<String>,
}

fn main() {
    let Args {
        rows: n,
        only,
        profile: codec_name,
        rounds,
        slot_ms,
        row,
    } = Args::parse();
    if let Some(part) = row {
        part_bench(
            &part,
            n,
            codec_name.as_deref(),
            rounds as usize,
            Duration::from_millis(slot_ms),
        );
        return;
    }
    if let Some(codec_name) = codec_name {
        profile(&codec_name, n);
        return;
    }
    let min = Duration::from_millis(slot_ms);
    let rows = corpus(n);
    let mut sorted = rows.clone();
    sorted.sort();
    let srows = serde_rows(&rows);
    let ssorted = serde_rows(&sorted);
    let nrows = native_rows(&rows);
    let nsorted = native_rows(&sorted);
    let native = NativeCodec::new();
    let fdb = strata_key::codec::fdb::FdbCodec::new();
    let centidb = strata_key::codec::centidb::CentidbCodec::new();
    let codecs = vec![
        codec(
            "strata native (serde)",
            "to_key / from_key",
            &srows,
            &ssorted,
            |r, b| to_key_into(r, &[], b).expect("encode"),
            |k| from_key::<SerdeRow>(k).expect("decode"),
        ),
        codec(
            "strata native (serde, serde_uuid)",
            "UUID as a Uuid element",
            &nrows,
            &nsorted,
            |r, b| to_key_into(r, &[], b).expect("encode"),
            |k| from_key::<NativeRow>(k).expect("decode"),
        ),
        codec(
            "strata native (Value)",
            "dynamic Tuple",
            &rows,
            &sorted,
            |r, b| native.encode_into(&row_tuple(r), b).expect("encode"),
            |k| tuple_row(&native.decode(k).expect("decode")),
        ),
        codec(
            "strata fdb (Value)",
            "FoundationDB-identical bytes",
            &rows,
            &sorted,
            |r, b| fdb.encode_into(&row_tuple(r), b).expect("encode"),
            |k| tuple_row(&fdb.decode(k).expect("decode")),
        ),
        codec(
            "strata centidb (Value)",
            "centidb-identical bytes",
            &rows,
            &sorted,
            |r, b| centidb.encode_into(&row_tuple(r), b).expect("encode"),
            |k| tuple_row(&centidb.decode(k).expect("decode")),
        ),
        codec(
            "storekey 0.11",
            "own traits",
            &rows,
            &sorted,
            |r, b| storekey::encode(&mut *b, r).expect("encode"),
            |k| storekey::decode::<_, Row>(k).expect("decode"),
        ),
        codec(
            "memcomparable 0.2",
            "serde",
            &srows,
            &ssorted,
            |r, b| {
                let mut s = memcomparable::Serializer::new(std::mem::take(b));
                serde::Serialize::serialize(r, &mut s).expect("encode");
                *b = s.into_inner();
            },
            |k| memcomparable::from_slice::<SerdeRow>(k).expect("decode"),
        ),
        codec(
            "foundationdb-tuple 0.11",
            "own traits",
            &rows,
            &sorted,
            |r, b| {
                foundationdb_tuple::pack_into(r, b);
            },
            |k| foundationdb_tuple::unpack::<Row>(k).expect("decode"),
        ),
        codec(
            "ordcode 0.2",
            "serde",
            &srows,
            &ssorted,
            |r, b| *b = ordcode::ser_to_vec_ordered(r, ordcode::Order::Ascending).expect("encode"),
            |k| ordcode::de_from_bytes_asc::<_, SerdeRow>(k).expect("decode"),
        ),
        codec(
            "bytekey2 0.4",
            "serde",
            &srows,
            &ssorted,
            |r, b| *b = bytekey2::serialize(r).expect("encode"),
            |k| {
                bytekey2::deserialize::<SerdeRow>(k)
                    .unwrap_or_else(|_| (0, 0, String::new(), 0, Id(uuid::Uuid::nil())))
            },
        ),
    ];
    let out = run_rounds(codecs, rounds as usize, min, only.as_deref());
    print_table(n, rounds as usize, slot_ms, &out);
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
        "native-serde-uuid" => profile_codec(
            &native_rows(&rows),
            |r, b| to_key_into(r, &[], b).expect("encode"),
            |k| from_key::<NativeRow>(k).expect("decode"),
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
            eprintln!(
            "unknown codec {other:?} (native-serde, native-serde-uuid, native-value, storekey, fdb-tuple)"
        )
        }
    }
}

/// `--row PART`: native (serde) and storekey on one part of the corpus's rows, timed like the
/// table (interleaved rounds, per-slot log on stderr) or, with `--profile CODEC`, profiled once.
fn part_bench(part: &str, n: usize, profile: Option<&str>, rounds: usize, min: Duration) {
    let rows = corpus(n);
    let mut sorted = rows.clone();
    sorted.sort();
    macro_rules! run {
        ($nat:ty, $nproj:expr, $sk:ty, $sproj:expr) => {{
            let nrows: Vec<$nat> = rows.iter().map($nproj).collect();
            let nsorted: Vec<$nat> = sorted.iter().map($nproj).collect();
            let srows: Vec<$sk> = rows.iter().map($sproj).collect();
            let ssorted: Vec<$sk> = sorted.iter().map($sproj).collect();
            match profile {
                Some("native-serde") => profile_codec(
                    &nrows,
                    |r, b| to_key_into(r, &[], b).expect("encode"),
                    |k| from_key::<$nat>(k).expect("decode"),
                ),
                Some("storekey") => profile_codec(
                    &srows,
                    |r, b| storekey::encode(&mut *b, r).expect("encode"),
                    |k| storekey::decode::<_, $sk>(k).expect("decode"),
                ),
                Some(other) => eprintln!("--row profiles native-serde or storekey, not {other}"),
                None => {
                    let codecs = vec![
                        codec(
                            "strata native (serde)",
                            "to_key / from_key",
                            &nrows,
                            &nsorted,
                            |r, b| to_key_into(r, &[], b).expect("encode"),
                            |k| from_key::<$nat>(k).expect("decode"),
                        ),
                        codec(
                            "storekey 0.11",
                            "own traits",
                            &srows,
                            &ssorted,
                            |r, b| storekey::encode(&mut *b, r).expect("encode"),
                            |k| storekey::decode::<_, $sk>(k).expect("decode"),
                        ),
                    ];
                    let out = run_rounds(codecs, rounds, min, None);
                    print_table(n, rounds, min.as_millis() as u64, &out);
                }
            }
        }};
    }
    match part {
        "ints" => run!((u16, u64), |r| (r.0, r.1), (u16, u64), |r| (r.0, r.1)),
        "text" => run!((String,), |r| (r.2.clone(),), (String,), |r| (r.2.clone(),)),
        "i64" => run!((i64,), |r| (r.3,), (i64,), |r| (r.3,)),
        "row" => run!(
            SerdeRow,
            |r| (r.0, r.1, r.2.clone(), r.3, Id(r.4)),
            Row,
            Row::clone
        ),
        "-ints" => run!(
            (String, i64, Id),
            |r| (r.2.clone(), r.3, Id(r.4)),
            (String, i64, uuid::Uuid),
            |r| (r.2.clone(), r.3, r.4)
        ),
        "-text" => run!(
            (u16, u64, i64, Id),
            |r| (r.0, r.1, r.3, Id(r.4)),
            (u16, u64, i64, uuid::Uuid),
            |r| (r.0, r.1, r.3, r.4)
        ),
        "-i64" => run!(
            (u16, u64, String, Id),
            |r| (r.0, r.1, r.2.clone(), Id(r.4)),
            (u16, u64, String, uuid::Uuid),
            |r| (r.0, r.1, r.2.clone(), r.4)
        ),
        "-uuid" => run!(
            (u16, u64, String, i64),
            |r| (r.0, r.1, r.2.clone(), r.3),
            (u16, u64, String, i64),
            |r| (r.0, r.1, r.2.clone(), r.3)
        ),
        _ => run!(Id, |r| Id(r.4), uuid::Uuid, |r| r.4),
    }
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

/// Prints the table. Times are medians over the rounds; "enc+dec" and every ratio to native are
/// the median of the per-round values (each round's ratio compares codecs timed seconds apart,
/// not whole runs apart).
fn print_table(n: usize, rounds: usize, slot_ms: u64, out: &[Outcome]) {
    let native = &out[0];
    let per_round = |f: &dyn Fn(usize) -> f64| median(&(0..rounds).map(f).collect::<Vec<_>>());
    let peers: Vec<&Outcome> = out
        .iter()
        .filter(|o| !o.name.starts_with("strata") && o.misordered == 0)
        .filter(|o| o.both.iter().all(|&t| t > 0.0))
        .collect();
    let ratio_to = |o: &Outcome| -> Vec<f64> {
        (0..rounds)
            .map(|r| {
                let fastest = peers
                    .iter()
                    .map(|p| p.both[r])
                    .fold(f64::INFINITY, f64::min);
                fastest / o.both[r]
            })
            .collect()
    };
    let peer_ratio = ratio_to(native);
    println!("corpus: {n} tuples (u16 tenant, u64 user, text name, i64 ms timestamp, uuid)");
    println!(
        "times: {} per tuple; {rounds} rounds, each timing every codec's encode and decode for \
         >= {slot_ms} ms in a rotated order; medians over the rounds, ratios are medians of \
         per-round ratios\n",
        if thread_cpu_ns().is_some() {
            "CPU time of the benchmark thread"
        } else {
            "wall clock"
        }
    );
    println!("| codec | encode ns/tuple | decode ns/tuple | enc+dec ns | enc MB/s | total bytes | bytes vs native | time vs native | order kept | peak RSS MB | notes |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|");
    for o in out {
        let mbs = (o.bytes as f64 / n as f64) / o.encode_ns * 1e3;
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {:.2}× | {:.2}× | {} | {} | {} |",
            o.name,
            o.encode_ns,
            o.decode_ns,
            median(&o.both),
            mbs,
            o.bytes,
            o.bytes as f64 / native.bytes as f64,
            per_round(&|r| o.both[r] / native.both[r]),
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
        median(&peer_ratio)
    );
    let mut sorted = peer_ratio.clone();
    sorted.sort_by(f64::total_cmp);
    let list: Vec<String> = sorted.iter().map(|x| format!("{x:.2}")).collect();
    println!("per round, sorted: {}", list.join(" "));
    if let Some(u) = out
        .iter()
        .find(|o| o.name == "strata native (serde, serde_uuid)")
        .filter(|o| o.both.iter().all(|&t| t > 0.0))
    {
        let mut r = ratio_to(u);
        println!(
            "fastest order-keeping peer / strata native (serde, serde_uuid), encode+decode: {:.2}×",
            median(&r)
        );
        r.sort_by(f64::total_cmp);
        let list: Vec<String> = r.iter().map(|x| format!("{x:.2}")).collect();
        println!("per round, sorted: {}", list.join(" "));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread CPU clock advances with work, and in steps far below the 4 ms scheduler
    /// tick that `/proc/thread-self/schedstat` moves in (a 25 ms slot needs that resolution).
    #[test]
    fn thread_cpu_clock_is_fine_grained() {
        let a = thread_cpu_ns().expect("thread CPU clock");
        let mut x = 0u64;
        let mut b = a;
        let mut steps = Vec::new();
        while b - a < 20_000_000 {
            for i in 0..1000u64 {
                x = black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            let c = thread_cpu_ns().expect("thread CPU clock");
            assert!(c >= b, "the clock went back");
            if c > b {
                steps.push(c - b);
            }
            b = c;
        }
        steps.sort_unstable();
        let median = steps[steps.len() / 2];
        assert!(median < 1_000_000, "median step {median} ns: tick-grained");
        black_box(x);
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}
