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

mod decimal;
mod fixed;
mod int;
pub(crate) mod put;
mod reader;
mod string;
mod string16;

pub(crate) use crate::codec::float::{ordered_f32, ordered_f64, unordered_f32, unordered_f64};
pub(crate) use decimal::put_decimal;
pub(crate) use fixed::{put_f64, put_uuid};
pub(crate) use int::{encode_i64, encode_int, encode_u64};
pub(crate) use reader::Reader;
pub use reader::MAX_DEPTH;
#[cfg(test)]
pub(crate) use string::put_escaped;
pub(crate) use string::{put_string, put_text, SHORT_BUF};

use crate::codec::TupleCodec;
use crate::error::{DecodeError, EncodeError};
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

    /// Appends one top-level element with the given order. Fails (reporting element 0) only
    /// for tuples nested deeper than [`MAX_DEPTH`]; `out` may then hold a partial element.
    pub fn encode_element(v: &Value, order: Order, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        encode_top(v, order, out).map_err(|TooDeep| too_deep(0))
    }
}

impl TupleCodec for NativeCodec {
    fn name(&self) -> &'static str {
        CODEC
    }

    fn encode_into(&self, tuple: &[Value], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        for (i, v) in tuple.iter().enumerate() {
            let order = self.orders.get(i).copied().unwrap_or_default();
            encode_top(v, order, out).map_err(|TooDeep| too_deep(i))?;
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

/// The ascending integer element at the start of `bytes`: its value and its length in bytes.
/// `None` when `bytes` does not start with a valid ascending integer element. The stripe choice
/// of a table key reads its hash element with it, without decoding (or allocating) anything
/// else.
///
/// ```
/// use strata_key::codec::native::{int_prefix, NativeCodec};
/// use strata_key::{tuple, TupleCodec};
/// let k = NativeCodec::new().encode(&tuple!(15122, "rest")).unwrap();
/// assert_eq!(int_prefix(&k), Some((15122, 3)));
/// assert_eq!(int_prefix(&k[3..]), None);
/// ```
#[inline]
pub fn int_prefix(bytes: &[u8]) -> Option<(i128, usize)> {
    let tag = *bytes.first()?;
    if !(TAG_INT_MIN..=TAG_INT_MAX).contains(&tag) {
        return None;
    }
    let mut r = Reader::new(bytes);
    r.pos = 1;
    let v = r.int_after_tag(tag, 0).ok()?;
    Some((v, r.pos))
}

/// Appends an integer as one top-level element with `order`: the bytes
/// [`NativeCodec::encode_element`] appends for `Value::Int(v)` (without building a `Value`).
#[inline]
pub fn encode_int_element(v: i128, order: Order, out: &mut Vec<u8>) {
    let start = out.len();
    encode_int(v, out);
    if order.descending {
        complement(&mut out[start..]);
    }
}

/// Appends a text as one top-level element with `order`: the bytes
/// [`NativeCodec::encode_element`] appends for `Value::Text(s)` (without building a `Value`).
#[inline]
pub fn encode_text_element(s: &str, order: Order, out: &mut Vec<u8>) {
    let start = out.len();
    put_text(out, TAG_TEXT, s);
    if order.descending {
        complement(&mut out[start..]);
    }
}

/// Appends a byte string as one top-level element with `order`: the bytes
/// [`NativeCodec::encode_element`] appends for `Value::Bytes(b)` (without building a `Value`).
#[inline]
pub fn encode_bytes_element(b: &[u8], order: Order, out: &mut Vec<u8>) {
    let start = out.len();
    put_string(out, TAG_BYTES, b);
    if order.descending {
        complement(&mut out[start..]);
    }
}

#[inline]
fn complement(bytes: &mut [u8]) {
    for b in bytes {
        *b = !*b;
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/// A value nested deeper than [`MAX_DEPTH`].
struct TooDeep;

fn too_deep(index: usize) -> EncodeError {
    EncodeError::Invalid {
        index,
        reason: format!("tuples nested deeper than {MAX_DEPTH} levels").into(),
    }
}

fn encode_top(v: &Value, order: Order, out: &mut Vec<u8>) -> Result<(), TooDeep> {
    if !order.descending {
        encode_value(v, order.nulls_last, 0, out)
    } else {
        // Descending: the complement of the ascending encoding with the NULL placement
        // swapped (so that NULL still lands where the schema asks).
        let start = out.len();
        let r = encode_value(v, !order.nulls_last, 0, out);
        complement(&mut out[start..]);
        r
    }
}

/// Appends `v` ascending; `depth` is the number of tuples around it within its top-level
/// element.
fn encode_value(
    v: &Value,
    nulls_last: bool,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), TooDeep> {
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
        Value::Bytes(b) => put_string(out, TAG_BYTES, b),
        Value::Text(s) => put_text(out, TAG_TEXT, s),
        Value::Uuid(u) => put_uuid(out, u.as_bytes()),
        Value::Time(t) => {
            out.push(TAG_TIME);
            encode_int(t.unix_ns(), out);
            encode_int(t.offset_s() as i128, out);
        }
        Value::Tuple(t) => {
            if depth >= MAX_DEPTH {
                return Err(TooDeep);
            }
            out.push(TAG_TUPLE);
            for x in t.iter() {
                encode_value(x, false, depth + 1, out)?;
            }
            out.push(TAG_END);
        }
        Value::Decimal(d) => put_decimal(out, d),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::int::{NEG_STARTS, POS_STARTS};
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
            // Followed by 0 to 9 more bytes (the decoder reads payloads with an 8-byte load
            // only where the key has 8 bytes left), ascending and descending.
            for tail in ["", "a", "abcdefgh"] {
                for order in [Order::ASC, Order::DESC] {
                    let t = tuple!(v, tail);
                    let c = NativeCodec::with_orders(vec![order]);
                    let k = c.encode(&t).unwrap();
                    assert_eq!(c.decode(&k).unwrap(), t, "{v} {}", hex::encode(&k));
                    // Cut inside the integer: an error, never a panic or a wrong value.
                    let n = enc(&tuple!(v)).len();
                    for cut in 1..n {
                        assert!(c.decode(&k[..cut]).is_err(), "{v} cut at {cut}");
                    }
                }
            }
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
mod element_helpers {
    use super::*;
    use proptest::prelude::*;

    fn orders() -> impl Strategy<Value = Order> {
        (any::<bool>(), any::<bool>()).prop_map(|(descending, nulls_last)| Order {
            descending,
            nulls_last,
        })
    }

    fn ints() -> impl Strategy<Value = i128> {
        prop_oneof![
            any::<i128>(),
            any::<i64>().prop_map(i128::from),
            (0i128..70_000),
            (-300i128..300),
        ]
    }

    proptest! {
        /// The element helpers append exactly what `encode_element` appends for the `Value`.
        #[test]
        fn helpers_write_what_encode_element_writes(
            i in ints(),
            s in ".{0,24}",
            b in proptest::collection::vec(any::<u8>(), 0..24),
            order in orders(),
            pre in proptest::collection::vec(any::<u8>(), 0..9),
        ) {
            let want = |v: Value| {
                let mut out = pre.clone();
                NativeCodec::encode_element(&v, order, &mut out).unwrap();
                out
            };
            let mut out = pre.clone();
            encode_int_element(i, order, &mut out);
            prop_assert_eq!(&out, &want(Value::Int(i)));
            let mut out = pre.clone();
            encode_text_element(&s, order, &mut out);
            prop_assert_eq!(&out, &want(Value::Text(s.clone())));
            let mut out = pre.clone();
            encode_bytes_element(&b, order, &mut out);
            prop_assert_eq!(&out, &want(Value::Bytes(b.clone())));
        }

        /// `int_prefix` reads an ascending integer element exactly as the decoder does, and
        /// refuses whatever is not one (descending, other kinds, cut short, garbage).
        #[test]
        fn int_prefix_agrees_with_the_decoder(
            i in ints(),
            tail in proptest::collection::vec(any::<u8>(), 0..12),
            junk in proptest::collection::vec(any::<u8>(), 0..12),
        ) {
            let mut k = Vec::new();
            encode_int(i, &mut k);
            let n = k.len();
            k.extend_from_slice(&tail);
            prop_assert_eq!(int_prefix(&k), Some((i, n)));
            for cut in 0..n {
                prop_assert_eq!(int_prefix(&k[..cut]), None);
            }
            let mut d = Vec::new();
            encode_int_element(i, Order::DESC, &mut d);
            prop_assert_eq!(int_prefix(&d), None);
            // Arbitrary bytes: whenever it answers, the decoder reads the same first element.
            if let Some((v, len)) = int_prefix(&junk) {
                let mut r = Reader::new(&junk);
                let got = r.value(0).unwrap();
                prop_assert_eq!(got, Value::Int(v));
                prop_assert_eq!(r.pos, len);
            }
        }
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
