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
mod tests;
