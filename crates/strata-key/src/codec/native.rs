//! The `native` codec: Strata's own order-preserving tuple format, the default everywhere.
//!
//! Properties (each proven by the tests in `tests/native.rs`):
//! * `memcmp` order of encodings = tuple order (kinds in [`Kind`](crate::Kind) order, then
//!   values), for mixed kinds and nested tuples, under any per-field [`Order`] (descending,
//!   nulls last);
//! * self-describing and exactly decodable (direction and NULL placement included);
//! * a tuple prefix is a byte prefix (so prefix scans are byte-prefix scans);
//! * no encoding ever ends in `0x00` (nor does a descending element);
//! * compact: `(613, 15122, 5124324, 13)` takes 10 bytes.
//!
//! The byte format, with the reasons for each choice, is in `docs/FORMAT.md` (section
//! "native"). In short: every element starts with a tag byte; ascending elements use tags
//! `0x02..=0x7f`; a descending element is the bitwise complement of the ascending encoding (with
//! the NULL placement swapped), so its tag is in `0x80..=0xfd` and the decoder knows the
//! direction. Integers fold their length into the tag; string bytes are shifted by 2 (a prefix-free code) and end
//! with `0x01`; f64 and UUID payloads end in a base-254 digit (a second tag pays for it).

pub(crate) use crate::codec::float::{ordered_f32, ordered_f64, unordered_f32, unordered_f64};
pub(crate) use crate::codec::native_decimal::put_decimal;
use crate::codec::TupleCodec;
use crate::error::{DecodeError, EncodeError};
use crate::time::Time;
use crate::value::{Tuple, Value};

const CODEC: &str = "native";

/// End of a nested tuple.
pub const TAG_END: u8 = 0x01;
/// NULL when nulls sort first.
pub const TAG_NULL_FIRST: u8 = 0x02;
/// `false`.
pub const TAG_FALSE: u8 = 0x03;
/// `true`.
pub const TAG_TRUE: u8 = 0x04;
/// First integer tag.
pub const TAG_INT_MIN: u8 = 0x05;
/// Last integer tag.
pub const TAG_INT_MAX: u8 = 0x74;
/// 32-bit float.
pub const TAG_F32: u8 = 0x75;
/// 64-bit float (two tags: `0x76`, `0x77`; the tag carries the top of the payload).
pub const TAG_F64: u8 = 0x76;
/// Second f64 tag.
pub const TAG_F64_HI: u8 = 0x77;
/// Bytes.
pub const TAG_BYTES: u8 = 0x78;
/// UTF-8 text.
pub const TAG_TEXT: u8 = 0x79;
/// UUID (two tags: `0x7a`, `0x7b`).
pub const TAG_UUID: u8 = 0x7a;
/// Second UUID tag.
pub const TAG_UUID_HI: u8 = 0x7b;
/// Time.
pub const TAG_TIME: u8 = 0x7c;
/// Nested tuple.
pub const TAG_TUPLE: u8 = 0x7d;
/// Decimal number (see [`Decimal`](crate::Decimal)).
pub const TAG_DECIMAL: u8 = 0x7e;
/// NULL when nulls sort last.
pub const TAG_NULL_LAST: u8 = 0x7f;

/// String terminator: below every byte a string's content is written with.
const STR_END: u8 = 0x01;
/// Content bytes `00..fb` are written `+2` (`02..fd`); `fc..ff` are written `fe` then
/// `02..05`. `ff` never appears in a string.
const STR_SHIFT: u8 = 2;
/// Lead byte of the two-byte codes of `fc..ff`.
const STR_HIGH: u8 = 0xfe;
/// Trailer of fixed-width payloads (floats, UUIDs): keeps the last byte non-zero.
pub(crate) const TRAILER: u8 = 0x01;

/// Sort order of one key field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Order {
    /// Descending instead of ascending.
    pub descending: bool,
    /// NULL sorts after every value instead of before.
    pub nulls_last: bool,
}

impl Order {
    /// Ascending, nulls first (the default).
    pub const ASC: Order = Order {
        descending: false,
        nulls_last: false,
    };
    /// Descending, nulls first.
    pub const DESC: Order = Order {
        descending: true,
        nulls_last: false,
    };
}

/// Strata's native tuple codec.
///
/// Without orders ([`NativeCodec::new`]) every field is ascending with nulls first, and the
/// decoder accepts any valid key. With orders ([`NativeCodec::with_orders`]) field `i` is
/// encoded with `orders[i]` (fields beyond the list: ascending, nulls first), and the decoder
/// checks that each field's direction and NULL placement match.
///
/// ```
/// use strata_key::codec::native::{NativeCodec, Order};
/// use strata_key::{tuple, TupleCodec};
/// let c = NativeCodec::new();
/// let k = c.encode(&tuple!(613, 15122, 5124324, 13)).unwrap();
/// assert_eq!(k.len(), 10);
/// assert_eq!(c.decode(&k).unwrap(), tuple!(613, 15122, 5124324, 13));
///
/// // Newest first within a user:
/// let c = NativeCodec::with_orders(vec![Order::ASC, Order::DESC]);
/// let a = c.encode(&tuple!("ann", 2)).unwrap();
/// let b = c.encode(&tuple!("ann", 1)).unwrap();
/// assert!(a < b);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NativeCodec {
    orders: Vec<Order>,
}

impl NativeCodec {
    /// Ascending, nulls first everywhere; decodes any valid key.
    pub fn new() -> NativeCodec {
        NativeCodec::default()
    }

    /// One [`Order`] per leading field.
    pub fn with_orders(orders: Vec<Order>) -> NativeCodec {
        NativeCodec { orders }
    }

    /// The per-field orders.
    pub fn orders(&self) -> &[Order] {
        &self.orders
    }

    /// Appends one top-level element with the given order.
    pub fn encode_element(v: &Value, order: Order, out: &mut Vec<u8>) {
        encode_top(v, order, out)
    }
}

impl TupleCodec for NativeCodec {
    fn name(&self) -> &'static str {
        CODEC
    }

    fn encode_into(&self, tuple: &[Value], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        for (i, v) in tuple.iter().enumerate() {
            let order = self.orders.get(i).copied().unwrap_or_default();
            encode_top(v, order, out);
        }
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Tuple, DecodeError> {
        let mut r = Reader::new(bytes);
        let mut items = Vec::with_capacity(8);
        while !r.at_end() {
            let i = items.len();
            let (v, order) = r.top_element()?;
            if let Some(want) = self.orders.get(i) {
                let null_mismatch = v.is_null() && want.nulls_last != order.nulls_last;
                if want.descending != order.descending || null_mismatch {
                    return Err(DecodeError::new(
                        CODEC,
                        r.elem_start,
                        format!(
                            "element {i} is {} but the schema says {}",
                            describe(order, v.is_null()),
                            describe(*want, v.is_null())
                        ),
                    ));
                }
            }
            items.push(v);
        }
        Ok(Tuple(items))
    }
}

fn describe(o: Order, null: bool) -> String {
    let dir = if o.descending {
        "descending"
    } else {
        "ascending"
    };
    if null {
        format!(
            "{dir} with nulls {}",
            if o.nulls_last { "last" } else { "first" }
        )
    } else {
        dir.to_owned()
    }
}

/// Decodes a key and reports the [`Order`] each top-level element was written with.
pub fn decode_with_orders(bytes: &[u8]) -> Result<Vec<(Value, Order)>, DecodeError> {
    let mut r = Reader::new(bytes);
    let mut items = Vec::new();
    while !r.at_end() {
        items.push(r.top_element()?);
    }
    Ok(items)
}

/// Length in bytes of the first `n` top-level elements of a native key, or `None` when the key
/// has fewer than `n` elements or they are malformed. Used to find the partition part of a
/// table key without decoding it.
///
/// ```
/// use strata_key::codec::native::{prefix_len, NativeCodec};
/// use strata_key::{tuple, TupleCodec};
/// let k = NativeCodec::new().encode(&tuple!("a", 1, 2)).unwrap();
/// let p = NativeCodec::new().encode(&tuple!("a")).unwrap();
/// assert_eq!(prefix_len(&k, 1), Some(p.len()));
/// assert_eq!(prefix_len(&k, 4), None);
/// ```
pub fn prefix_len(key: &[u8], n: usize) -> Option<usize> {
    let mut r = Reader::new(key);
    for _ in 0..n {
        if r.at_end() {
            return None;
        }
        r.skip_top().ok()?;
    }
    Some(r.pos)
}

// ---------------------------------------------------------------------------------------------
// Integers
// ---------------------------------------------------------------------------------------------

/// A class of integer encodings: `tags` consecutive tags, each followed by `p` payload bytes.
#[derive(Clone, Copy)]
struct IntClass {
    /// Payload bytes after the tag (0: the value is in the tag).
    p: u8,
    /// Number of tags of the class.
    tags: u8,
}

/// Positive classes, smallest magnitudes first: 24 one-byte values, 32 tags × 254 two-byte
/// values, 8 tags × 65,024 three-byte values, then one tag per payload length 3..=16.
const POS_CLASSES: [IntClass; 17] = int_classes(24, 32, 8);
/// Negative classes, smallest magnitudes first (−1 is magnitude 0).
const NEG_CLASSES: [IntClass; 17] = int_classes(8, 8, 4);

const fn int_classes(small: u8, k1: u8, k2: u8) -> [IntClass; 17] {
    let mut c = [IntClass { p: 0, tags: 1 }; 17];
    c[0] = IntClass { p: 0, tags: small };
    c[1] = IntClass { p: 1, tags: k1 };
    c[2] = IntClass { p: 2, tags: k2 };
    let mut i = 3;
    while i < 17 {
        c[i] = IntClass {
            p: i as u8,
            tags: 1,
        };
        i += 1;
    }
    c
}

/// Values one tag of a class holds: 1 without payload, else 254 × 256^(p−1).
const fn per_tag(p: u8) -> u128 {
    if p == 0 {
        1
    } else {
        254u128 << (8 * (p as u32 - 1))
    }
}

const fn class_starts(classes: &[IntClass; 17]) -> [u128; 18] {
    let mut s = [0u128; 18];
    let mut i = 0;
    while i < 17 {
        // Saturate: the last classes reach beyond 2^127, which no i128 magnitude needs.
        let size = (classes[i].tags as u128).saturating_mul(per_tag(classes[i].p));
        s[i + 1] = s[i].saturating_add(size);
        i += 1;
    }
    s
}

const POS_STARTS: [u128; 18] = class_starts(&POS_CLASSES);
const NEG_STARTS: [u128; 18] = class_starts(&NEG_CLASSES);

const fn total_tags(classes: &[IntClass; 17]) -> u32 {
    let mut t = 0u32;
    let mut i = 0;
    while i < 17 {
        t += classes[i].tags as u32;
        i += 1;
    }
    t
}

const NEG_TAGS: u32 = total_tags(&NEG_CLASSES);
const POS_TAGS: u32 = total_tags(&POS_CLASSES);
/// Tag of integer 0: negative tags come first.
const TAG_ZERO: u8 = TAG_INT_MIN + NEG_TAGS as u8;
const _: () = assert!(TAG_INT_MIN as u32 + NEG_TAGS + POS_TAGS == TAG_INT_MAX as u32 + 1);

/// Decoding table for integer tags: (negative, class index, tag index within the class).
const INT_TAGS: [(bool, u8, u8); 256] = int_tag_table();

const fn int_tag_table() -> [(bool, u8, u8); 256] {
    let mut t = [(false, 0u8, 0u8); 256];
    // Positive: ascending tags from TAG_ZERO, classes in order.
    let mut tag = TAG_ZERO as usize;
    let mut c = 0;
    while c < 17 {
        let mut k = 0;
        while k < POS_CLASSES[c].tags {
            t[tag] = (false, c as u8, k);
            tag += 1;
            k += 1;
        }
        c += 1;
    }
    // Negative: descending tags from TAG_ZERO - 1 (magnitude grows as tags shrink).
    let mut tag = TAG_ZERO as usize - 1;
    let mut c = 0;
    while c < 17 {
        let mut k = 0;
        while k < NEG_CLASSES[c].tags {
            t[tag] = (true, c as u8, k);
            tag -= 1;
            k += 1;
        }
        c += 1;
    }
    t
}

fn class_of(m: u128, starts: &[u128; 18]) -> usize {
    let mut c = 0;
    while c < 16 && m >= starts[c + 1] {
        c += 1;
    }
    c
}

/// Appends the payload of offset `rem` in a `p`-byte class: `rem / 254` big-endian in `p − 1`
/// bytes, then `rem % 254 + 1`, so the last byte is never 0x00 or 0xff.
#[inline]
fn put_payload(out: &mut Vec<u8>, rem: u128, p: usize, invert: bool) {
    let mask = if invert { 0xff } else { 0 };
    let (q, r) = if let Ok(small) = u64::try_from(rem) {
        ((small / 254) as u128, (small % 254) as u8)
    } else {
        (rem / 254, (rem % 254) as u8)
    };
    let qb = q.to_be_bytes();
    out.extend(qb[16 - (p - 1)..].iter().map(|b| b ^ mask));
    out.push((r + 1) ^ mask);
}

/// Class starts and first-tag offsets as `u64`, for the classes that 64-bit values use (the
/// fast path; `p ≤ 8`).
const fn starts64(s: &[u128; 18]) -> [u64; 10] {
    let mut r = [0u64; 10];
    let mut i = 0;
    while i < 10 {
        r[i] = s[i] as u64;
        i += 1;
    }
    r
}
const POS_STARTS64: [u64; 10] = starts64(&POS_STARTS);
const NEG_STARTS64: [u64; 10] = starts64(&NEG_STARTS);
const _: () = assert!(POS_STARTS[9] <= u64::MAX as u128 && NEG_STARTS[9] <= u64::MAX as u128);

const fn tag_offsets(classes: &[IntClass; 17]) -> [u32; 17] {
    let mut r = [0u32; 17];
    let mut i = 1;
    while i < 17 {
        r[i] = r[i - 1] + classes[i - 1].tags as u32;
        i += 1;
    }
    r
}
const POS_TAG_OFFSETS: [u32; 17] = tag_offsets(&POS_CLASSES);
const NEG_TAG_OFFSETS: [u32; 17] = tag_offsets(&NEG_CLASSES);

/// Encodes a magnitude `m < 2^64` of one side: returns the tag's distance from zero's tag, the
/// payload length, and writes nothing. `q`/`r` are the payload's quotient and digit.
#[inline(always)]
fn split_u64(
    m: u64,
    classes: &[IntClass; 17],
    starts: &[u64; 10],
    offsets: &[u32; 17],
) -> (u32, usize, u64, u8) {
    let small = classes[0].tags as u64;
    if m < small {
        return (m as u32, 0, 0, 0);
    }
    if m < starts[2] {
        let off = m - starts[1];
        return (offsets[1] + (off / 254) as u32, 1, 0, (off % 254) as u8);
    }
    if m < starts[3] {
        let off = m - starts[2];
        let k = off / (254 * 256);
        let rem = off % (254 * 256);
        return (offsets[2] + k as u32, 2, rem / 254, (rem % 254) as u8);
    }
    let mut c = 3;
    while c < 9 && m >= starts[c + 1] {
        c += 1;
    }
    let rem = m - starts[c];
    (offsets[c], c, rem / 254, (rem % 254) as u8)
}

/// Appends an integer.
#[inline]
pub(crate) fn encode_int(v: i128, out: &mut Vec<u8>) {
    if let Ok(x) = i64::try_from(v) {
        encode_i64(x, out);
        return;
    }
    encode_int_wide(v, out)
}

/// The 64-bit fast path: the element is built in a stack buffer and appended once.
#[inline]
pub(crate) fn encode_i64(x: i64, out: &mut Vec<u8>) {
    let neg = x < 0;
    // One's complement of a negative gives its magnitude class index: -1 -> 0.
    let m = (x ^ (x >> 63)) as u64;
    let (dist, p, q, r) = if neg {
        split_u64(m, &NEG_CLASSES, &NEG_STARTS64, &NEG_TAG_OFFSETS)
    } else {
        split_u64(m, &POS_CLASSES, &POS_STARTS64, &POS_TAG_OFFSETS)
    };
    let tag = if neg {
        TAG_ZERO as u32 - 1 - dist
    } else {
        TAG_ZERO as u32 + dist
    };
    if p == 0 {
        out.push(tag as u8);
        return;
    }
    // [tag][q as p-1 big-endian bytes][r+1], built as one 16-byte word.
    let mask: u64 = if neg { u64::MAX } else { 0 };
    let mut buf = [0u8; 10];
    buf[0] = tag as u8;
    // p = 1 has no quotient bytes (a shift by 64 would overflow).
    let shifted = (q ^ mask).checked_shl(8 * (9 - p) as u32).unwrap_or(0);
    buf[1..9].copy_from_slice(&shifted.to_be_bytes());
    buf[p] = (r + 1) ^ (mask as u8);
    out.extend_from_slice(&buf[..p + 1]);
}

/// Integers beyond `i64`: the general `u128` path (one code for both signs: negatives use
/// the mirrored classes, descending tags and complemented payloads).
fn encode_int_wide(v: i128, out: &mut Vec<u8>) {
    let neg = v < 0;
    // Negatives: the distance below -1 (-1 -> 0, -2 -> 1, ...); never overflows.
    let (m, classes, starts) = if neg {
        (!v as u128, &NEG_CLASSES, &NEG_STARTS)
    } else {
        (v as u128, &POS_CLASSES, &POS_STARTS)
    };
    let c = class_of(m, starts);
    let class = classes[c];
    let off = m - starts[c];
    let pt = per_tag(class.p);
    let (k, rem) = if class.tags == 1 {
        (0, off)
    } else {
        (off / pt, off % pt)
    };
    let dist = class_tag_offset(classes, c) + k as u32;
    let tag = if neg {
        TAG_ZERO as u32 - 1 - dist
    } else {
        TAG_ZERO as u32 + dist
    };
    out.push(tag as u8);
    if class.p > 0 {
        put_payload(out, rem, class.p as usize, neg);
    }
}

fn class_tag_offset(classes: &[IntClass; 17], c: usize) -> u32 {
    classes[..c].iter().map(|x| x.tags as u32).sum()
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

fn encode_top(v: &Value, order: Order, out: &mut Vec<u8>) {
    if !order.descending {
        encode_value(v, order.nulls_last, out)
    } else {
        // Descending: the complement of the ascending encoding with the NULL placement
        // swapped (so that NULL still lands where the schema asks).
        let start = out.len();
        encode_value(v, !order.nulls_last, out);
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

fn encode_value(v: &Value, nulls_last: bool, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(if nulls_last {
            TAG_NULL_LAST
        } else {
            TAG_NULL_FIRST
        }),
        Value::Bool(b) => out.push(if *b { TAG_TRUE } else { TAG_FALSE }),
        Value::Int(i) => encode_int(*i, out),
        Value::F32(f) => {
            out.push(TAG_F32);
            out.extend_from_slice(&ordered_f32(*f).to_be_bytes());
            out.push(TRAILER);
        }
        Value::Float(f) => put_f64(out, *f),
        Value::Bytes(b) => {
            out.push(TAG_BYTES);
            put_escaped(out, b);
        }
        Value::Text(s) => {
            out.push(TAG_TEXT);
            put_escaped(out, s.as_bytes());
        }
        Value::Uuid(u) => put_uuid(out, u.as_bytes()),
        Value::Time(t) => {
            out.push(TAG_TIME);
            encode_int(t.unix_ns(), out);
            encode_int(t.offset_s() as i128, out);
        }
        Value::Tuple(t) => {
            out.push(TAG_TUPLE);
            for x in t.iter() {
                encode_value(x, false, out);
            }
            out.push(TAG_END);
        }
        Value::Decimal(d) => put_decimal(out, d),
    }
}

/// Payload capacity of one f64 tag: 254 × 256^7 (the last byte is a digit `01..fe`).
const F64_CAP: u64 = 254 << 56;

/// An f64: tag `0x76` or `0x77` (the tag holds whether the ordered bits are ≥ [`F64_CAP`]),
/// then 8 bytes: `rem / 254` big-endian in 7 bytes and `rem % 254 + 1`.
#[inline]
pub(crate) fn put_f64(out: &mut Vec<u8>, f: f64) {
    let u = ordered_f64(f);
    let hi = u >= F64_CAP;
    let rem = if hi { u - F64_CAP } else { u };
    out.push(TAG_F64 + hi as u8);
    let q = (rem / 254).to_be_bytes();
    out.extend_from_slice(&q[1..]);
    out.push((rem % 254) as u8 + 1);
}

/// A UUID: tag `0x7a` or `0x7b` (whether the 128-bit value is ≥ 254 × 256^15), then 16 bytes:
/// the rest divided by 254 in 15 bytes, and the remainder + 1.
#[inline]
pub(crate) fn put_uuid(out: &mut Vec<u8>, b: &[u8; 16]) {
    // 254 × 256^15 ≤ u < 256^16 exactly when the first byte is 0xfe or 0xff.
    let hi = b[0] >= 0xfe;
    let mut u = u128::from_be_bytes(*b);
    if hi {
        u -= 0xfe << 120;
    }
    // u / 254 with three 64-bit divisions by a constant (each a multiply), not a u128 division.
    let (h, l) = ((u >> 64) as u64, u as u64);
    let (qh, rh) = (h / 254, h % 254);
    let x = (rh << 32) | (l >> 32);
    let (q1, r1) = (x / 254, x % 254);
    let y = (r1 << 32) | (l & 0xffff_ffff);
    let (q2, r) = (y / 254, y % 254);
    let q = ((qh as u128) << 64) | ((q1 as u128) << 32) | q2 as u128;
    let mut buf = [0u8; 17];
    buf[0] = TAG_UUID + hi as u8;
    // q < 256^15: its first byte is 0 and is not written.
    buf[1..16].copy_from_slice(&q.to_be_bytes()[1..]);
    buf[16] = r as u8 + 1;
    out.extend_from_slice(&buf);
}

/// A string: each byte `b < 0xfc` as `b + 2`, each byte `b ≥ 0xfc` as `fe, b − 0xfa`, then
/// the terminator `01`. The code is prefix-free (no content byte is below `02`), keeps byte
/// order, and never ends in `00` or `ff`. UTF-8 text never has a byte `≥ 0xf8`, so text costs
/// exactly `len + 2`.
#[inline]
pub(crate) fn put_escaped(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 1);
    if s.iter().all(|&b| b < 0xfc) {
        out.extend(s.iter().map(|&b| b + STR_SHIFT));
    } else {
        for &b in s {
            if b < 0xfc {
                out.push(b + STR_SHIFT);
            } else {
                out.push(STR_HIGH);
                out.push(b - 0xfa);
            }
        }
    }
    out.push(STR_END);
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// Nested tuples deeper than this are refused (bounded recursion on untrusted input).
pub const MAX_DEPTH: usize = 64;

pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pub(crate) pos: usize,
    /// 0x00 for ascending elements, 0xff for descending ones (bytes are complemented).
    pub(crate) mask: u8,
    /// Start of the current top-level element (for error offsets).
    elem_start: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            pos: 0,
            mask: 0,
            elem_start: 0,
        }
    }

    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub(crate) fn err(
        &self,
        at: usize,
        reason: impl Into<std::borrow::Cow<'static, str>>,
    ) -> DecodeError {
        DecodeError::new(CODEC, at, reason)
    }

    #[inline]
    pub(crate) fn byte(&mut self) -> Result<u8, DecodeError> {
        match self.bytes.get(self.pos) {
            Some(b) => {
                self.pos += 1;
                Ok(b ^ self.mask)
            }
            None => Err(self.err(self.pos, "unexpected end of key")),
        }
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        match self.bytes.get(self.pos..self.pos + n) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.err(
                self.pos,
                format!(
                    "unexpected end of key: {n} payload bytes needed, {} left",
                    self.bytes.len() - self.pos
                ),
            )),
        }
    }

    /// Reads a top-level element: its direction comes from its first byte.
    fn top_element(&mut self) -> Result<(Value, Order), DecodeError> {
        self.elem_start = self.pos;
        let raw = self.bytes[self.pos];
        let descending = match raw {
            0x02..=0x7f => false,
            0x80..=0xfd => true,
            _ => {
                return Err(self.err(
                    self.pos,
                    format!("byte 0x{raw:02x} cannot start an element"),
                ))
            }
        };
        self.mask = if descending { 0xff } else { 0 };
        let v = self.value(0)?;
        self.mask = 0;
        let tag = raw ^ if descending { 0xff } else { 0 };
        // Stored null placement is swapped for descending fields (see encode_top).
        let nulls_last = (tag == TAG_NULL_LAST) != descending;
        Ok((
            v,
            Order {
                descending,
                nulls_last,
            },
        ))
    }

    fn skip_top(&mut self) -> Result<(), DecodeError> {
        self.top_element().map(|_| ())
    }

    pub(crate) fn value(&mut self, depth: usize) -> Result<Value, DecodeError> {
        let at = self.pos;
        let tag = self.byte()?;
        Ok(match tag {
            TAG_NULL_FIRST => Value::Null,
            // Inside nested tuples NULL always sorts first: the other tag would be a second
            // encoding of the same key.
            TAG_NULL_LAST if depth == 0 => Value::Null,
            TAG_NULL_LAST => return Err(self.err(at, "a nulls-last NULL inside a nested tuple")),
            TAG_FALSE => Value::Bool(false),
            TAG_TRUE => Value::Bool(true),
            TAG_INT_MIN..=TAG_INT_MAX => Value::Int(self.int_after_tag(tag, at)?),
            TAG_F32 => {
                let b = self.take(4)?;
                let u = u32::from_be_bytes([b[0], b[1], b[2], b[3]])
                    ^ u32::from_ne_bytes([self.mask; 4]);
                self.trailer()?;
                Value::F32(unordered_f32(u))
            }
            TAG_F64 | TAG_F64_HI => Value::Float(self.f64_after_tag(tag)?),
            TAG_BYTES => Value::Bytes(self.escaped()?),
            TAG_TEXT => {
                let start = self.pos;
                let b = self.escaped()?;
                match String::from_utf8(b) {
                    Ok(s) => Value::Text(s),
                    Err(e) => {
                        return Err(self.err(
                            start,
                            format!("text is not valid UTF-8: {}", e.utf8_error()),
                        ))
                    }
                }
            }
            TAG_UUID | TAG_UUID_HI => {
                Value::Uuid(uuid::Uuid::from_bytes(self.uuid_after_tag(tag)?))
            }
            TAG_TIME => {
                let ns_at = self.pos;
                let ns = self.sub_int()?;
                let off_at = self.pos;
                let off = self.sub_int()?;
                let off =
                    i32::try_from(off).map_err(|_| self.err(off_at, "time offset out of range"))?;
                let t = Time::from_unix_ns(ns, off)
                    .ok_or_else(|| self.err(ns_at, "time out of range"))?;
                if t.offset_s() != off {
                    return Err(self.err(off_at, "time offset out of range"));
                }
                Value::Time(t)
            }
            TAG_TUPLE => {
                if depth >= MAX_DEPTH {
                    return Err(self.err(at, format!("tuples nested deeper than {MAX_DEPTH}")));
                }
                let mut items = Vec::new();
                loop {
                    match self.bytes.get(self.pos).map(|b| b ^ self.mask) {
                        Some(TAG_END) => {
                            self.pos += 1;
                            break;
                        }
                        Some(_) => items.push(self.value(depth + 1)?),
                        None => return Err(self.err(self.pos, "nested tuple without its end byte")),
                    }
                }
                Value::Tuple(Tuple(items))
            }
            TAG_DECIMAL => Value::Decimal(self.decimal_after_tag()?),
            TAG_END => return Err(self.err(at, "end of tuple outside a nested tuple")),
            other => return Err(self.err(at, format!("unknown tag 0x{other:02x}"))),
        })
    }

    /// The last payload byte of a base-254 payload: a digit `01..fe`.
    fn digit(&mut self) -> Result<u8, DecodeError> {
        let at = self.pos;
        match self.byte()? {
            d @ 0x01..=0xfe => Ok(d - 1),
            d => Err(self.err(at, format!("payload ends in 0x{d:02x}"))),
        }
    }

    pub(crate) fn f64_after_tag(&mut self, tag: u8) -> Result<f64, DecodeError> {
        let b = self.take(7)?;
        let mut a = [0u8; 8];
        for (d, s) in a[1..].iter_mut().zip(b) {
            *d = s ^ self.mask;
        }
        let r = self.digit()?;
        let q = u64::from_be_bytes(a);
        let mut u = q * 254 + r as u64;
        if tag == TAG_F64_HI {
            u = u
                .checked_add(F64_CAP)
                .ok_or_else(|| self.err(self.pos - 8, "f64 payload out of range"))?;
        }
        Ok(unordered_f64(u))
    }

    pub(crate) fn uuid_after_tag(&mut self, tag: u8) -> Result<[u8; 16], DecodeError> {
        let at = self.pos;
        let b = self.take(15)?;
        let mut q = [0u8; 15];
        for (d, s) in q.iter_mut().zip(b) {
            *d = s ^ self.mask;
        }
        let r = self.digit()?;
        let mut qb = [0u8; 16];
        qb[1..].copy_from_slice(&q);
        // q < 256^15, so q × 254 + r < 254 × 256^15: no overflow.
        let mut u = u128::from_be_bytes(qb) * 254 + r as u128;
        if tag == TAG_UUID_HI {
            u = u
                .checked_add(0xfe << 120)
                .ok_or_else(|| self.err(at, "uuid payload out of range"))?;
        }
        Ok(u.to_be_bytes())
    }

    pub(crate) fn sub_int(&mut self) -> Result<i128, DecodeError> {
        let at = self.pos;
        let tag = self.byte()?;
        if !(TAG_INT_MIN..=TAG_INT_MAX).contains(&tag) {
            return Err(self.err(at, format!("expected an integer tag, found 0x{tag:02x}")));
        }
        self.int_after_tag(tag, at)
    }

    pub(crate) fn trailer(&mut self) -> Result<(), DecodeError> {
        let at = self.pos;
        match self.byte()? {
            TRAILER => Ok(()),
            b => Err(self.err(at, format!("bad trailer 0x{b:02x} (expected 0x01)"))),
        }
    }

    pub(crate) fn int_after_tag(&mut self, tag: u8, at: usize) -> Result<i128, DecodeError> {
        let (neg, c, k) = INT_TAGS[tag as usize];
        if c <= 8 {
            // Fast path: the magnitude fits a u64.
            let (classes, starts) = if neg {
                (&NEG_CLASSES, &NEG_STARTS64)
            } else {
                (&POS_CLASSES, &POS_STARTS64)
            };
            let p = classes[c as usize].p as usize;
            let mut m = starts[c as usize] + k as u64 * per_tag(p as u8) as u64;
            if p > 0 {
                let payload = self.take(p)?;
                let invert = if neg { 0xff } else { 0 } ^ self.mask;
                let last = payload[p - 1] ^ invert;
                if last == 0 || last == 0xff {
                    return Err(self.err(
                        self.pos - 1,
                        format!("integer payload ends in 0x{last:02x}"),
                    ));
                }
                let mut qb = [0u8; 8];
                qb[9 - p..].copy_from_slice(&payload[..p - 1]);
                let mut q = u64::from_be_bytes(qb);
                if invert != 0 {
                    // Only the payload's bytes are complemented, not the zero padding.
                    q ^= u64::MAX.checked_shr(8 * (9 - p) as u32).unwrap_or(0);
                }
                m += q * 254 + (last - 1) as u64;
            }
            return Ok(if neg { !(m as i128) } else { m as i128 });
        }
        let (classes, starts) = if neg {
            (&NEG_CLASSES, &NEG_STARTS)
        } else {
            (&POS_CLASSES, &POS_STARTS)
        };
        let p = classes[c as usize].p as usize;
        let mut rem: u128 = 0;
        if p > 0 {
            let payload = self.take(p)?;
            let invert = if neg { 0xff } else { 0 } ^ self.mask;
            let last = payload[p - 1] ^ invert;
            if last == 0 || last == 0xff {
                return Err(self.err(
                    self.pos - 1,
                    format!("integer payload ends in 0x{last:02x}"),
                ));
            }
            let mut q: u128 = 0;
            for b in &payload[..p - 1] {
                q = (q << 8) | (b ^ invert) as u128;
            }
            rem = q * 254 + (last - 1) as u128;
        }
        let m = starts[c as usize]
            .checked_add(k as u128 * per_tag(p as u8))
            .and_then(|x| x.checked_add(rem))
            .filter(|m| *m <= i128::MAX as u128)
            .ok_or_else(|| self.err(at, "integer out of range"))?;
        Ok(if neg { !(m as i128) } else { m as i128 })
    }

    /// A string up to and including its terminator (see [`put_escaped`]).
    pub(crate) fn escaped(&mut self) -> Result<Vec<u8>, DecodeError> {
        let end = STR_END ^ self.mask;
        let rest = &self.bytes[self.pos..];
        let Some(n) = memchr::memchr(end, rest) else {
            return Err(self.err(self.bytes.len(), "string without its terminator"));
        };
        let body = &rest[..n];
        let mask = self.mask;
        // Fast path (ascending, no two-byte code, no invalid byte): one vectorizable pass.
        if mask == 0 && body.iter().all(|&b| (0x02..=0xfd).contains(&b)) {
            self.pos += n + 1;
            return Ok(body.iter().map(|&b| b - STR_SHIFT).collect());
        }
        let mut out = Vec::with_capacity(n);
        let mut i = 0;
        while i < body.len() {
            let b = body[i] ^ mask;
            match b {
                0x02..=0xfd => out.push(b - STR_SHIFT),
                STR_HIGH => {
                    let c = body.get(i + 1).map(|x| x ^ mask);
                    match c {
                        Some(c @ 0x02..=0x05) => out.push(c + 0xfa),
                        _ => {
                            return Err(self.err(self.pos + i + 1, "bad two-byte code in a string"))
                        }
                    }
                    i += 1;
                }
                other => {
                    return Err(self.err(
                        self.pos + i,
                        format!("byte 0x{other:02x} cannot appear in a string"),
                    ))
                }
            }
            i += 1;
        }
        self.pos += n + 1;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple;

    fn enc(t: &Tuple) -> Vec<u8> {
        NativeCodec::new().encode(t).unwrap()
    }

    #[test]
    fn doc_example_is_ten_bytes() {
        let k = enc(&tuple!(613, 15122, 5124324, 13));
        assert_eq!(k.len(), 10, "{}", hex::encode(&k));
    }

    #[test]
    fn int_boundaries_round_trip_in_order() {
        let mut vals: Vec<i128> = vec![i128::MIN, i128::MAX, 0, -1, 1];
        for s in POS_STARTS.iter().chain(NEG_STARTS.iter()) {
            for d in [-1i128, 0, 1] {
                if let Ok(x) = i128::try_from(*s) {
                    vals.push(x.saturating_add(d));
                    vals.push((-x).saturating_add(d));
                }
            }
        }
        for sh in 0..127 {
            vals.push(1i128 << sh);
            vals.push(-(1i128 << sh));
        }
        vals.sort();
        vals.dedup();
        let mut prev: Option<Vec<u8>> = None;
        for v in vals {
            let k = enc(&tuple!(v));
            assert_ne!(k.last(), Some(&0), "{v}");
            assert_eq!(
                NativeCodec::new().decode(&k).unwrap(),
                tuple!(v),
                "{v} {}",
                hex::encode(&k)
            );
            if let Some(p) = prev {
                assert!(p < k, "{v}");
            }
            prev = Some(k);
        }
    }

    #[test]
    fn errors_have_offsets() {
        let c = NativeCodec::new();
        let e = c.decode(&[TAG_TEXT, b'a']).unwrap_err();
        assert_eq!(e.offset, 2);
        let e = c.decode(&[TAG_INT_MAX, 1, 2]).unwrap_err();
        assert!(e.reason.contains("end of key"), "{e}");
        let e = c.decode(&[0xfe]).unwrap_err();
        assert_eq!(e.offset, 0);
        let e = c.decode(&[TAG_DECIMAL]).unwrap_err();
        assert_eq!(e.offset, 1);
        assert!(c.decode(&[0x00]).is_err());
        assert!(c.decode(&[TAG_TUPLE; 100]).is_err());
        // Found by the fuzzer: a nulls-last NULL inside a nested tuple is a second encoding.
        assert!(c.decode(&[TAG_TUPLE, TAG_NULL_LAST, TAG_END]).is_err());
        assert!(c.decode(&[TAG_NULL_LAST]).is_ok());
    }
}

#[cfg(test)]
mod format_doc_examples {
    use super::*;

    /// The examples printed in docs/FORMAT.md.
    #[test]
    fn documented_bytes() {
        for (v, h) in [
            (0i128, "27"),
            (13, "34"),
            (23, "3e"),
            (24, "3f01"),
            (613, "4152"),
            (8152, "5f0001"),
            (15122, "5f1b71"),
            (5124324, "6746ae69"),
            (1_700_000_000_000, "6a008decb8c9bb"),
            (-1, "26"),
            (-9, "1efe"),
            (-2041, "16fffe"),
        ] {
            let mut out = Vec::new();
            encode_int(v, &mut out);
            assert_eq!(hex::encode(out), h, "{v}");
        }
        let t = crate::tuple!(613, 15122, 5124324, 13);
        assert_eq!(
            hex::encode(NativeCodec::new().encode(&t).unwrap()),
            "41525f1b716746ae6934"
        );
        let t = crate::tuple!(Value::Null, "a\0", Value::Bytes(vec![1]), crate::tuple!());
        assert_eq!(
            hex::encode(NativeCodec::new().encode(&t).unwrap()),
            "027963 02 01 78 03 01 7d01".replace(' ', "")
        );
    }
}
