//! Partitioners: which stripe a key lives in.
//!
//! A partitioner is part of the database, not of the program that opens it: a key filed in
//! the wrong stripe is invisible to lookups. So a partitioner is a *named kind* (see
//! [`Partitioner::name`]) recorded in the manifest when the database is created, and every
//! opener rebuilds it from that record; an opener that asks for another kind is refused
//! ([`crate::Error::PartitionerMismatch`]).
//!
//! Adding a kind: add a variant, give it a name in [`Partitioner::name`] and
//! [`Partitioner::parse`], and say how it routes in [`Partitioner::stripe`] and which of its
//! partitions are *closed* in [`Partitioner::closed_partition`]. Databases recording a kind an
//! older program does not know are refused by that program (never re-filed).

use std::fmt;
use std::ops::Bound;

use crate::engine::KeyRange;

/// How keys are spread over stripes (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Partitioner {
    /// The whole key is the partition: `stripe = crc32(key) % stripes`. Name `whole-key`.
    #[default]
    WholeKey,
    /// The first `n` bytes of the key (all of it when shorter) are the partition. Name
    /// `fixed-prefix:N`.
    FixedPrefix(u32),
    /// The first `n` elements of a key encoded with Strata's native tuple codec are the
    /// partition; a key with fewer elements (or that is not a tuple) has the empty partition.
    /// Name `native-tuple:N`. Strata's tables use `native-tuple:2` (table id, partition hash).
    NativeTuplePrefix(u32),
    /// Stripes laid out in key order under a 16-bit hash: the first `n` elements of a native
    /// tuple are the partition, and element `n` (counting from 1) is an ascending integer
    /// `h` in `0..65536` that picks the stripe, `(h × stripes) >> 16` — for 256 stripes, the
    /// high byte of `h`. Name `native-hash:N`. Strata's tables use `native-hash:2` (table id,
    /// `h` = the high 16 bits of the crc32 of the partition fields), so one table's keys run
    /// through stripe 0, then 1, …: a scan reads the stripes one after another instead of
    /// merging them (see [`Partitioner::stripe_span`]). Keys whose element `n` is not such an
    /// integer go to the stripe their bytes fall in among the stripes' first keys (so the
    /// order still holds): see [`Partitioner::stripe`].
    NativeTupleHash(u32),
}

/// Number of values of the hash element of [`Partitioner::NativeTupleHash`].
const HASH_SPACE: u64 = 1 << 16;

impl Partitioner {
    /// The name recorded in the manifest, e.g. `native-tuple:2`.
    pub fn name(&self) -> String {
        match self {
            Partitioner::WholeKey => "whole-key".into(),
            Partitioner::FixedPrefix(n) => format!("fixed-prefix:{n}"),
            Partitioner::NativeTuplePrefix(n) => format!("native-tuple:{n}"),
            Partitioner::NativeTupleHash(n) => format!("native-hash:{n}"),
        }
    }

    /// The partitioner a recorded name stands for.
    pub fn parse(name: &str) -> Result<Partitioner, String> {
        let (kind, arg) = match name.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (name, None),
        };
        let number = |a: Option<&str>| -> Result<u32, String> {
            let a = a.ok_or_else(|| format!("partitioner {name:?} needs a number"))?;
            if a.is_empty() || !a.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("partitioner {name:?}: {a:?} is not a number"));
            }
            a.parse()
                .map_err(|_| format!("partitioner {name:?}: {a:?} is too large"))
        };
        match kind {
            "whole-key" if arg.is_none() => Ok(Partitioner::WholeKey),
            "fixed-prefix" => Ok(Partitioner::FixedPrefix(number(arg)?)),
            "native-tuple" => Ok(Partitioner::NativeTuplePrefix(number(arg)?)),
            "native-hash" => match number(arg)? {
                0 => Err(format!("partitioner {name:?}: N must be at least 1")),
                n => Ok(Partitioner::NativeTupleHash(n)),
            },
            _ => Err(format!(
                "unknown partitioner {name:?} (known: whole-key, fixed-prefix:N, native-tuple:N, \
                 native-hash:N)"
            )),
        }
    }

    /// The partition of `key`: the prefix that picks its stripe.
    pub fn partition<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        match self {
            Partitioner::WholeKey => key,
            Partitioner::FixedPrefix(n) => &key[..key.len().min(*n as usize)],
            Partitioner::NativeTuplePrefix(n) | Partitioner::NativeTupleHash(n) => {
                let len = strata_key::codec::native::prefix_len(key, *n as usize).unwrap_or(0);
                &key[..len.min(key.len())]
            }
        }
    }

    /// The stripe of `key` among `stripes`.
    ///
    /// `native-hash:N`: with `P` the first `N − 1` elements of the key and `R` the rest, the
    /// stripe is the last `s` whose first bound `B(s) <= R`, where `B(0)` is empty and `B(s)`
    /// is the native encoding of the integer `⌈s × 65536 / stripes⌉`. For an `R` that starts
    /// with an integer `h` in `0..65536` this is `(h × stripes) >> 16`; for any other `R` it
    /// keeps the stripe non-decreasing in key order under `P`. A key with fewer than `N − 1`
    /// elements (or not a tuple) goes to stripe 0.
    pub fn stripe(&self, key: &[u8], stripes: u32) -> u32 {
        if stripes <= 1 {
            // One stripe (`strata kv`'s default): nothing to hash.
            return 0;
        }
        match self {
            Partitioner::NativeTupleHash(n) => {
                if let Some(s) = hash_stripe_fast(key, *n as usize - 1, stripes) {
                    return s;
                }
                match strata_key::codec::native::prefix_len(key, *n as usize - 1) {
                    Some(p) => hashed_stripe(&key[p.min(key.len())..], stripes),
                    None => 0,
                }
            }
            _ => crc32fast::hash(self.partition(key)) % stripes,
        }
    }

    /// The stripes a range visits in key order, when this partitioner lays stripes out in key
    /// order over the whole range (`native-hash:N`, for a range inside one prefix of `N − 1`
    /// elements): a cursor can then read the stripes one after another instead of merging
    /// them. `None` for other kinds and ranges.
    pub fn stripe_span(&self, range: &KeyRange, stripes: u32) -> Option<StripeSpan> {
        let Partitioner::NativeTupleHash(n) = self else {
            return None;
        };
        let stripes = stripes.max(1);
        let outer = *n as usize - 1;
        let prefix: &[u8] = match &range.start {
            Bound::Included(k) | Bound::Excluded(k) => {
                &k[..strata_key::codec::native::prefix_len(k, outer)?]
            }
            Bound::Unbounded if outer == 0 => &[],
            Bound::Unbounded => return None,
        };
        let end = strata_key::range::prefix_end(prefix);
        let inside = match (&range.end, &end) {
            (_, None) => true,
            (Bound::Excluded(e), Some(pe)) => e <= pe,
            (Bound::Included(e), Some(pe)) => e < pe,
            (Bound::Unbounded, Some(_)) => false,
        };
        if !inside {
            return None;
        }
        let span = StripeSpan {
            prefix: prefix.to_vec(),
            end,
            stripes,
            first: 0,
            last: stripes - 1,
        };
        let first = match &range.start {
            Bound::Included(k) | Bound::Excluded(k) => span.locate(k).unwrap_or(0),
            Bound::Unbounded => 0,
        };
        let last = match &range.end {
            Bound::Included(k) | Bound::Excluded(k) => match span.place(k) {
                Place::In(s) => s,
                Place::Before => first,
                Place::After => stripes - 1,
            },
            Bound::Unbounded => stripes - 1,
        };
        Some(StripeSpan {
            first,
            last: last.max(first),
            ..span
        })
    }

    /// The one stripe of a `native-hash:N` range whose two bounds start with the same
    /// integer elements `(outer…, h)` (the first `N − 1` and the hash, `h` in `0..65536`):
    /// a table Query's range. Every key `k` of the range lies between the bounds, so it starts
    /// with those same bytes (were `k` to leave them at some byte, it would fall below the
    /// lower bound or above the upper one), and [`Partitioner::stripe`] reads its stripe from
    /// them: `(h × stripes) >> 16`. No allocation and no search (unlike
    /// [`Partitioner::stripe_span`], which answers the same for such a range). `None` for
    /// other kinds, unbounded ranges and bounds that do not share such a prefix.
    #[inline]
    pub fn hashed_single_stripe(&self, range: &KeyRange, stripes: u32) -> Option<u32> {
        let Partitioner::NativeTupleHash(n) = self else {
            return None;
        };
        let (Bound::Included(lo) | Bound::Excluded(lo)) = &range.start else {
            return None;
        };
        let (Bound::Included(hi) | Bound::Excluded(hi)) = &range.end else {
            return None;
        };
        let (h, len) = hash_prefix(lo, *n as usize - 1)?;
        if hi.get(..len)? != &lo[..len] {
            return None;
        }
        Some(if stripes <= 1 {
            0
        } else {
            ((h * stripes as u64) >> 16) as u32
        })
    }

    /// The partition of `key` when it is *closed*: every key that starts with it has this
    /// same partition (so a range inside `[p, successor(p))` lies in one stripe). `None` when
    /// the kind cannot promise that for this key.
    pub fn closed_partition<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        match self {
            Partitioner::WholeKey => None,
            Partitioner::FixedPrefix(n) => key.get(..*n as usize),
            Partitioner::NativeTuplePrefix(n) | Partitioner::NativeTupleHash(n) => {
                // The native codec is self-delimiting: any key starting with the encoding of
                // n elements has those n elements first.
                let len = strata_key::codec::native::prefix_len(key, *n as usize)?;
                Some(&key[..len.min(key.len())])
            }
        }
    }

    /// The one stripe every key of `range` lives in, when the partitioner can tell.
    pub fn single_stripe(&self, range: &KeyRange, stripes: u32) -> Option<u32> {
        if let Some(span) = self.stripe_span(range, stripes) {
            if span.first == span.last {
                return Some(span.first);
            }
        }
        if let (Bound::Included(s), Bound::Included(e)) = (&range.start, &range.end) {
            if s == e {
                return Some(self.stripe(s, stripes));
            }
        }
        let start = match &range.start {
            Bound::Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => return None,
        };
        let part = self.closed_partition(start)?;
        if part.is_empty() {
            return None;
        }
        let inside = match (&range.end, strata_key::range::prefix_end(part)) {
            (_, None) => true,
            (Bound::Excluded(e), Some(pe)) => *e <= pe,
            (Bound::Included(e), Some(pe)) => *e < pe,
            (Bound::Unbounded, Some(_)) => false,
        };
        inside.then(|| self.stripe(start, stripes))
    }
}

/// `B(s)` of [`Partitioner::stripe`] for `native-hash`: the encoding of `⌈s × 65536 / stripes⌉`.
fn stripe_bound(s: u32, stripes: u32) -> Vec<u8> {
    let h = (s as u64 * HASH_SPACE).div_ceil(stripes as u64);
    let mut out = Vec::with_capacity(4);
    // An integer never fails to encode (only tuples nested too deep do).
    let _ = strata_key::codec::native::NativeCodec::encode_element(
        &strata_key::Value::Int(h as i128),
        strata_key::codec::native::Order::default(),
        &mut out,
    );
    out
}

/// The native encodings of the integers `0..=65536`, each at most 4 bytes (`(bytes, len)`),
/// built once: they are in increasing byte order, so the stripe of a key is found by a binary
/// search over them without decoding (or allocating) anything.
fn hash_encodings() -> &'static [([u8; 4], u8)] {
    static TABLE: std::sync::OnceLock<Vec<([u8; 4], u8)>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut out = Vec::with_capacity(HASH_SPACE as usize + 1);
        let mut buf = Vec::with_capacity(8);
        for h in 0..=HASH_SPACE {
            buf.clear();
            // An integer never fails to encode (only tuples nested too deep do).
            let _ = strata_key::codec::native::NativeCodec::encode_element(
                &strata_key::Value::Int(h as i128),
                strata_key::codec::native::Order::default(),
                &mut buf,
            );
            let mut e = [0u8; 4];
            let n = buf.len().min(4);
            e[..n].copy_from_slice(&buf[..n]);
            out.push((e, n as u8));
        }
        out
    })
}

/// The stripe of the rest `r` of a `native-hash` key (after its outer prefix): with `g` the
/// largest `h` in `0..=65536` whose encoding is `<= r`, stripe 0 when there is none, the last
/// stripe when `g = 65536`, else `(g × stripes) >> 16`. This is [`Partitioner::stripe`]'s
/// "last `s` with `B(s) <= r`", since `B(s) <= r` exactly when `⌈s × 65536 / stripes⌉ <= g`.
fn hashed_stripe(r: &[u8], stripes: u32) -> u32 {
    let table = hash_encodings();
    let below = table.partition_point(|(e, n)| &e[..*n as usize] <= r);
    match below.checked_sub(1) {
        None => 0,
        Some(g) if g as u64 >= HASH_SPACE => stripes - 1,
        Some(g) => ((g as u64 * stripes as u64) >> 16) as u32,
    }
}

/// The stripe of a `native-hash` key whose first `outer` elements and hash element are all
/// ascending integers (every table key: `(id, h, …)`), with `h` in `0..65536`: then
/// `(h × stripes) >> 16`, read with one integer decode per element instead of decoding the
/// prefix and a binary search over the hash encodings. `None` for any other key (the general
/// path answers; both agree wherever this one answers, see the tests).
#[inline]
fn hash_stripe_fast(key: &[u8], outer: usize, stripes: u32) -> Option<u32> {
    let (h, _) = hash_prefix(key, outer)?;
    Some(((h * stripes as u64) >> 16) as u32)
}

/// The hash `h` of a key whose first `outer` elements and hash element are ascending integers
/// with `h` in `0..65536`, and the length of those `outer + 1` elements' bytes.
#[inline]
fn hash_prefix(key: &[u8], outer: usize) -> Option<(u64, usize)> {
    let mut at = 0;
    for _ in 0..outer {
        let (_, len) = strata_key::codec::native::int_prefix(key.get(at..)?)?;
        at += len;
    }
    let (h, len) = strata_key::codec::native::int_prefix(key.get(at..)?)?;
    let h = u64::try_from(h).ok().filter(|h| *h < HASH_SPACE)?;
    Some((h, at + len))
}

/// [`hashed_stripe`] by its definition (the last `s` with `B(s) <= r`), for tests.
#[cfg(test)]
fn hashed_stripe_by_bounds(r: &[u8], stripes: u32) -> u32 {
    (0..stripes)
        .rev()
        .find(|&s| s == 0 || stripe_bound(s, stripes).as_slice() <= r)
        .unwrap_or(0)
}

/// The stripes of a range in key order (see [`Partitioner::stripe_span`]): every key of the
/// range starts with `prefix`, and the keys of stripe `s` under it are those of
/// [`StripeSpan::piece`]`(s)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripeSpan {
    prefix: Vec<u8>,
    /// The first key after every key that starts with `prefix` (`None`: no such key).
    end: Option<Vec<u8>>,
    stripes: u32,
    /// The stripe of the range's first key.
    pub first: u32,
    /// The stripe of the range's last key (`>= first`).
    pub last: u32,
}

impl StripeSpan {
    /// The stripe of `key` under the span's prefix; `None` when `key` is not under it.
    pub fn locate(&self, key: &[u8]) -> Option<u32> {
        key.strip_prefix(self.prefix.as_slice())
            .map(|r| hashed_stripe(r, self.stripes))
    }

    /// Where `key` falls: before the prefix's keys, in stripe `s`, or after them.
    pub fn place(&self, key: &[u8]) -> Place {
        match self.locate(key) {
            Some(s) => Place::In(s),
            None if key < self.prefix.as_slice() => Place::Before,
            None => Place::After,
        }
    }

    /// The keys under the prefix that live in stripe `s`: `[prefix ++ B(s), prefix ++ B(s+1))`
    /// (from the prefix itself for the first stripe, to the prefix's end for the last).
    pub fn piece(&self, s: u32) -> KeyRange {
        let with = |s: u32| {
            let mut k = self.prefix.clone();
            k.extend_from_slice(&stripe_bound(s, self.stripes));
            k
        };
        let start = if s == 0 {
            Bound::Included(self.prefix.clone())
        } else {
            Bound::Included(with(s))
        };
        let end = if s + 1 >= self.stripes {
            self.end.clone().map_or(Bound::Unbounded, Bound::Excluded)
        } else {
            Bound::Excluded(with(s + 1))
        };
        KeyRange { start, end }
    }
}

/// Where a key falls relative to a [`StripeSpan`]'s prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Below every key under the prefix.
    Before,
    /// Under the prefix, in this stripe.
    In(u32),
    /// Above every key under the prefix.
    After,
}

impl fmt::Display for Partitioner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for Partitioner {
    type Err = String;
    fn from_str(s: &str) -> Result<Partitioner, String> {
        Partitioner::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;
    use strata_key::codec::native::NativeCodec;
    use strata_key::{TupleCodec, Value};

    #[test]
    fn names_round_trip() {
        for p in [
            Partitioner::WholeKey,
            Partitioner::FixedPrefix(4),
            Partitioner::NativeTuplePrefix(2),
        ] {
            assert_eq!(Partitioner::parse(&p.name()), Ok(p));
        }
        for bad in [
            "",
            "whole-key:1",
            "fixed-prefix",
            "fixed-prefix:",
            "native-tuple:x",
            "hash",
        ] {
            assert!(Partitioner::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stripes_match_the_historic_routing() {
        // Before partitioners were recorded: crc32(partition) % stripes, with the table
        // partitioner cutting after two native elements and 0 for shorter keys.
        let key = NativeCodec::new()
            .encode(&[Value::Int(3), Value::Int(77), Value::from("x")])
            .unwrap();
        let two = strata_key::codec::native::prefix_len(&key, 2).unwrap();
        let p = Partitioner::NativeTuplePrefix(2);
        assert_eq!(p.stripe(&key, 256), crc32fast::hash(&key[..two]) % 256);
        assert_eq!(p.stripe(b"not a tuple", 256), crc32fast::hash(b"") % 256);
        assert_eq!(
            Partitioner::WholeKey.stripe(b"abc", 256),
            crc32fast::hash(b"abc") % 256
        );
    }

    #[test]
    fn only_closed_partitions_make_single_stripe_ranges() {
        let f = Partitioner::FixedPrefix(2);
        assert_eq!(
            f.single_stripe(&KeyRange::prefix(b"ab"), 16),
            Some(f.stripe(b"ab", 16))
        );
        // "a" is shorter than the prefix: keys starting with it live in many stripes.
        assert_eq!(f.single_stripe(&KeyRange::prefix(b"a"), 16), None);
        assert_eq!(
            Partitioner::WholeKey.single_stripe(&KeyRange::prefix(b"ab"), 16),
            None
        );
        let point = KeyRange {
            start: Bound::Included(b"k".to_vec()),
            end: Bound::Included(b"k".to_vec()),
        };
        assert_eq!(
            Partitioner::WholeKey.single_stripe(&point, 16),
            Some(Partitioner::WholeKey.stripe(b"k", 16))
        );
    }

    fn enc(t: &[Value]) -> Vec<u8> {
        NativeCodec::new().encode(t).unwrap()
    }

    #[test]
    fn hashed_names_round_trip_and_need_one_element() {
        let p = Partitioner::NativeTupleHash(2);
        assert_eq!(p.name(), "native-hash:2");
        assert_eq!(Partitioner::parse("native-hash:2"), Ok(p));
        assert!(Partitioner::parse("native-hash:0").is_err());
        assert!(Partitioner::parse("native-hash").is_err());
    }

    #[test]
    fn hashed_stripe_is_the_high_byte_of_the_hash() {
        let p = Partitioner::NativeTupleHash(2);
        for h in [
            0i128, 1, 23, 24, 255, 256, 8151, 8152, 0x1234, 0xff00, 0xffff,
        ] {
            let k = enc(&[Value::Int(7), Value::Int(h), Value::from("x")]);
            assert_eq!(p.stripe(&k, 256), (h >> 8) as u32, "h {h}");
            assert_eq!(p.stripe(&k, 4), (h >> 14) as u32, "h {h}");
            assert_eq!(p.stripe(&k, 1), 0);
            let two = strata_key::codec::native::prefix_len(&k, 2).unwrap();
            assert_eq!(p.partition(&k), &k[..two]);
            assert_eq!(p.closed_partition(&k), Some(&k[..two]));
        }
        // Not hash values: below every hash value, stripe 0; above, the last stripe.
        assert_eq!(p.stripe(&enc(&[Value::Int(7)]), 256), 0);
        assert_eq!(p.stripe(&enc(&[Value::Int(7), Value::Int(-1)]), 256), 0);
        assert_eq!(
            p.stripe(&enc(&[Value::Int(7), Value::Int(65536)]), 256),
            255
        );
        assert_eq!(p.stripe(b"", 256), 0);
    }

    #[test]
    fn hash_encodings_are_every_hash_value_in_order() {
        let t = hash_encodings();
        assert_eq!(t.len(), HASH_SPACE as usize + 1);
        for (h, (e, n)) in t.iter().enumerate() {
            let want = enc(&[Value::Int(h as i128)]);
            assert_eq!(&e[..*n as usize], want.as_slice(), "h {h}");
        }
        assert!(t
            .windows(2)
            .all(|w| w[0].0[..w[0].1 as usize] < w[1].0[..w[1].1 as usize]));
        for h in [0i128, 1, 23, 24, 8151, 8152, 40000, 65535] {
            let r = enc(&[Value::Int(h), Value::from("tail")]);
            for stripes in [1, 3, 4, 7, 256] {
                assert_eq!(
                    hashed_stripe(&r, stripes),
                    ((h as u64 * stripes as u64) >> 16) as u32
                );
                assert_eq!(
                    hashed_stripe(&r, stripes),
                    hashed_stripe_by_bounds(&r, stripes)
                );
            }
        }
    }

    #[test]
    fn hashed_spans_cover_a_table_and_its_segments() {
        let p = Partitioner::NativeTupleHash(2);
        let table = enc(&[Value::Int(7)]);
        let all = p.stripe_span(&KeyRange::prefix(&table), 256).unwrap();
        assert_eq!((all.first, all.last), (0, 255));
        let seg = KeyRange::half_open(
            enc(&[Value::Int(7), Value::Int(0x4000)]),
            enc(&[Value::Int(7), Value::Int(0x8000)]),
        );
        let s = p.stripe_span(&seg, 256).unwrap();
        assert_eq!((s.first, s.last), (0x40, 0x80));
        assert_eq!(p.single_stripe(&seg, 256), None);
        let one = KeyRange::half_open(
            enc(&[Value::Int(7), Value::Int(0x4000)]),
            enc(&[Value::Int(7), Value::Int(0x40ff)]),
        );
        assert_eq!(p.single_stripe(&one, 256), Some(0x40));
        // Across table ids, or unbounded: no span (the stripes are not in key order).
        assert_eq!(p.stripe_span(&KeyRange::all(), 256), None);
        let two_tables = KeyRange::half_open(table.clone(), enc(&[Value::Int(9)]));
        assert_eq!(p.stripe_span(&two_tables, 256), None);
        assert_eq!(
            Partitioner::NativeTuplePrefix(2).stripe_span(&KeyRange::prefix(&table), 256),
            None
        );
    }

    /// Keys under the prefix `(7)`: table-like keys with hash values and others, and raw bytes.
    fn hashed_key() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let second = prop_oneof![
            (-3i128..70000).prop_map(Value::Int),
            Just(Value::Null),
            Just(Value::from("t")),
            proptest::collection::vec(any::<u8>(), 0..3).prop_map(Value::Bytes),
        ];
        prop_oneof![
            3 => (second, 0i128..3, 1usize..3).prop_map(|(h, t, n)| {
                let v = [Value::Int(7), h, Value::Int(t)];
                enc(&v[..1 + n])
            }),
            1 => proptest::collection::vec(any::<u8>(), 0..4).prop_map(|rest| {
                let mut k = enc(&[Value::Int(7)]);
                k.extend(rest);
                k
            }),
        ]
    }

    /// Keys of one table (prefix `(7)`) and a few others, with few hash values (shared by
    /// many keys, at stripe edges and outside `0..65536`), some cut or extended by raw bytes.
    fn near_key() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let id = prop_oneof![4 => Just(7i128), 1 => Just(8i128)];
        let h = prop_oneof![
            Just(Value::Int(0)),
            Just(Value::Int(255)),
            Just(Value::Int(256)),
            Just(Value::Int(65535)),
            Just(Value::Int(65536)),
            Just(Value::Int(-1)),
            Just(Value::Null),
            Just(Value::from("t")),
        ];
        let tail = proptest::collection::vec(
            prop_oneof![(0i128..4).prop_map(Value::Int), Just(Value::from("x"))],
            0..3,
        );
        (
            id,
            h,
            tail,
            proptest::collection::vec(any::<u8>(), 0..3),
            0usize..4,
        )
            .prop_map(|(id, h, tail, raw, cut)| {
                let mut v = vec![Value::Int(id), h];
                v.extend(tail);
                let mut k = enc(&v);
                match cut {
                    0 => k.truncate(k.len().saturating_sub(raw.len())),
                    1 => k.extend(raw),
                    _ => {}
                }
                k
            })
    }

    /// The general path of [`Partitioner::stripe`] for `native-hash:N` (no fast path).
    fn stripe_by_search(key: &[u8], n: usize, stripes: u32) -> u32 {
        match strata_key::codec::native::prefix_len(key, n - 1) {
            Some(p) => hashed_stripe(&key[p.min(key.len())..], stripes),
            None => 0,
        }
    }

    /// The fast path and the search agree for every hash value, at both ends of the key space
    /// of table ids, for stripe counts that divide 65536 and ones that do not.
    #[test]
    fn stripe_fast_path_agrees_for_every_hash() {
        for id in [1i128, 23, 24, 1_000_000] {
            for h in 0..HASH_SPACE as i128 {
                let k = enc(&[Value::Int(id), Value::Int(h), Value::from("p")]);
                for stripes in [256, 3] {
                    let p = Partitioner::NativeTupleHash(2);
                    assert_eq!(
                        p.stripe(&k, stripes),
                        stripe_by_search(&k, 2, stripes),
                        "{id} {h}"
                    );
                }
            }
        }
    }

    proptest::proptest! {
        /// The integer fast path of the stripe choice answers exactly like the search over the
        /// hash encodings: table keys of 1 to 3 outer elements with any hash value (inside and
        /// outside `0..65536`, negative), other kinds, cut keys and raw bytes.
        #[test]
        fn stripe_fast_path_agrees_with_the_search(
            outer in proptest::collection::vec(
                proptest::prop_oneof![
                    (0i128..1_000_000).prop_map(Value::Int),
                    (-5i128..0).prop_map(Value::Int),
                    proptest::prelude::Just(Value::from("t")),
                ],
                0..3,
            ),
            h in proptest::prop_oneof![0i128..65536, -300i128..70000, proptest::prelude::any::<i64>().prop_map(i128::from)],
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..6),
            cut in proptest::prelude::any::<proptest::sample::Index>(),
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8),
            stripes in proptest::prop_oneof![1u32..9, proptest::prelude::Just(256u32)],
        ) {
            let n = outer.len() + 1;
            let p = Partitioner::NativeTupleHash(n as u32);
            let mut vals = outer.clone();
            vals.push(Value::Int(h));
            let mut k = enc(&vals);
            k.extend_from_slice(&tail);
            proptest::prop_assert_eq!(p.stripe(&k, stripes), stripe_by_search(&k, n, stripes));
            let c = &k[..cut.index(k.len() + 1)];
            proptest::prop_assert_eq!(p.stripe(c, stripes), stripe_by_search(c, n, stripes));
            proptest::prop_assert_eq!(p.stripe(&raw, stripes), stripe_by_search(&raw, n, stripes));
            if (0..65536).contains(&h) && outer.iter().all(|v| matches!(v, Value::Int(_))) {
                proptest::prop_assert_eq!(p.stripe(&k, stripes), ((h as u64 * stripes as u64) >> 16) as u32);
            }
        }

        /// A range whose bounds share `(outer…, h)` gets one stripe from
        /// [`Partitioner::hashed_single_stripe`], and every key inside the range (bounds
        /// included) is filed there by [`Partitioner::stripe`]; where the stripe span also
        /// names one stripe, it is the same.
        #[test]
        fn hashed_single_stripe_holds_every_key_of_the_range(
            keys in proptest::collection::vec(near_key(), 2..40),
            (i, j) in (0usize..40, 0usize..40),
            (inc_lo, inc_hi) in (proptest::prelude::any::<bool>(), proptest::prelude::any::<bool>()),
            n in 1u32..3,
            stripes in proptest::prop_oneof![1u32..9, proptest::prelude::Just(256u32)],
        ) {
            let p = Partitioner::NativeTupleHash(n);
            let (lo, hi) = (keys[i % keys.len()].clone(), keys[j % keys.len()].clone());
            let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
            let range = KeyRange {
                start: if inc_lo { Bound::Included(lo.clone()) } else { Bound::Excluded(lo.clone()) },
                end: if inc_hi { Bound::Included(hi.clone()) } else { Bound::Excluded(hi.clone()) },
            };
            let Some(s) = p.hashed_single_stripe(&range, stripes) else {
                return Ok(());
            };
            proptest::prop_assert!(s < stripes.max(1));
            for k in keys.iter().chain([&lo, &hi]) {
                if range.contains(k) {
                    proptest::prop_assert_eq!(p.stripe(k, stripes), s, "{:?} in {:?}", k, range);
                }
            }
            // The bounds' own stripes, whether or not they are inside the range.
            proptest::prop_assert_eq!(p.stripe(&lo, stripes), s);
            if let Some(span) = p.stripe_span(&range, stripes) {
                if span.first == span.last && lo < hi {
                    proptest::prop_assert_eq!(span.first, s);
                }
            }
        }

        /// Under one prefix, stripes never decrease in key order, every key lies in its
        /// stripe's piece, and the pieces are consecutive.
        #[test]
        fn hashed_stripes_follow_key_order(
            mut keys in proptest::collection::vec(hashed_key(), 1..40),
            stripes in 1u32..9,
        ) {
            let p = Partitioner::NativeTupleHash(2);
            keys.sort();
            let span = p.stripe_span(&KeyRange::prefix(&enc(&[Value::Int(7)])), stripes).unwrap();
            proptest::prop_assert_eq!((span.first, span.last), (0, stripes - 1));
            let mut last = 0;
            for k in &keys {
                let s = p.stripe(k, stripes);
                proptest::prop_assert!(s >= last, "stripe {} after {} at {:?}", s, last, k);
                last = s;
                proptest::prop_assert!(span.piece(s).contains(k), "{:?} not in piece {}", k, s);
                proptest::prop_assert_eq!(span.place(k), Place::In(s));
                let rest = &k[span.prefix.len()..];
                proptest::prop_assert_eq!(hashed_stripe(rest, stripes), hashed_stripe_by_bounds(rest, stripes));
                proptest::prop_assert_eq!(s, hashed_stripe(rest, stripes));
            }
            for s in 1..stripes {
                proptest::prop_assert_eq!(&span.piece(s - 1).end, &match span.piece(s).start {
                    Bound::Included(k) => Bound::Excluded(k),
                    other => other,
                });
            }
        }
    }
}
