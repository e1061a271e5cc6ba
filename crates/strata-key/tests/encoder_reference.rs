//! The serde encoder (`to_key`, `to_key_into`, `to_key_with_orders`) and the dynamic
//! encoder (`NativeCodec`) write exactly the bytes of a straightforward reference encoder,
//! written here from `docs/FORMAT.md` with no shared code: integers by walking the classes
//! with `u128` arithmetic, strings byte by byte, floats from their bits. Random tuples of every
//! kind the serde mapping has (null, bool, every integer width, f32, f64, text, bytes, nested
//! tuples), with strings around the lengths where the fast encoders change strategy (7/8, 16)
//! and bytes biased to the escaped values.

use proptest::prelude::*;
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use strata_key::codec::native::{
    NativeCodec, Order, TAG_BYTES, TAG_END, TAG_F32, TAG_F64, TAG_FALSE, TAG_INT_MIN,
    TAG_NULL_FIRST, TAG_TEXT, TAG_TRUE, TAG_TUPLE,
};
use strata_key::codec::native_serde::{to_key, to_key_into, to_key_with_orders};
use strata_key::{Tuple, TupleCodec, Value};

/// One value of a key, with the serde method that writes it.
#[derive(Debug, Clone)]
enum V {
    Null,
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    I128(i128),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    /// At most `i128::MAX` (larger ones are an error, not bytes).
    U128(u128),
    F32(f32),
    F64(f64),
    Char(char),
    Text(String),
    Bytes(Vec<u8>),
    Tuple(Vec<V>),
}

impl Serialize for V {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            V::Null => s.serialize_none(),
            V::Bool(b) => s.serialize_bool(*b),
            V::I8(x) => s.serialize_i8(*x),
            V::I16(x) => s.serialize_i16(*x),
            V::I32(x) => s.serialize_i32(*x),
            V::I64(x) => s.serialize_i64(*x),
            V::I128(x) => s.serialize_i128(*x),
            V::U8(x) => s.serialize_u8(*x),
            V::U16(x) => s.serialize_u16(*x),
            V::U32(x) => s.serialize_u32(*x),
            V::U64(x) => s.serialize_u64(*x),
            V::U128(x) => s.serialize_u128(*x),
            V::F32(x) => s.serialize_f32(*x),
            V::F64(x) => s.serialize_f64(*x),
            V::Char(c) => s.serialize_char(*c),
            V::Text(t) => s.serialize_str(t),
            V::Bytes(b) => s.serialize_bytes(b),
            V::Tuple(vs) => {
                let mut seq = s.serialize_seq(Some(vs.len()))?;
                for v in vs {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
        }
    }
}

/// The same value for the dynamic codec.
fn value(v: &V) -> Value {
    match v {
        V::Null => Value::Null,
        V::Bool(b) => Value::Bool(*b),
        V::I8(x) => Value::Int((*x).into()),
        V::I16(x) => Value::Int((*x).into()),
        V::I32(x) => Value::Int((*x).into()),
        V::I64(x) => Value::Int((*x).into()),
        V::I128(x) => Value::Int(*x),
        V::U8(x) => Value::Int((*x).into()),
        V::U16(x) => Value::Int((*x).into()),
        V::U32(x) => Value::Int((*x).into()),
        V::U64(x) => Value::Int((*x).into()),
        V::U128(x) => Value::Int(*x as i128),
        V::F32(x) => Value::F32(*x),
        V::F64(x) => Value::Float(*x),
        V::Char(c) => Value::Text(c.to_string()),
        V::Text(t) => Value::Text(t.clone()),
        V::Bytes(b) => Value::Bytes(b.clone()),
        V::Tuple(vs) => Value::Tuple(Tuple(vs.iter().map(value).collect())),
    }
}

// ---------------------------------------------------------------------------------------------
// The reference encoder (docs/FORMAT.md), as plain as it can be.
// ---------------------------------------------------------------------------------------------

/// (tags, payload length) of the classes of one sign, smallest magnitudes first.
fn classes(negative: bool) -> Vec<(u128, u32)> {
    let mut c = if negative {
        vec![(8, 0), (8, 1), (4, 2)]
    } else {
        vec![(24, 0), (32, 1), (8, 2)]
    };
    c.extend((3..=16).map(|p| (1, p)));
    c
}

fn ref_int(v: i128, out: &mut Vec<u8>) {
    let negative = v < 0;
    let mut m: u128 = if negative { !v as u128 } else { v as u128 };
    let zero: u128 = TAG_INT_MIN as u128 + classes(true).iter().map(|c| c.0).sum::<u128>();
    let mut dist = 0u128; // tags before the class, counted away from zero
    for (tags, p) in classes(negative) {
        let per_tag: u128 = if p == 0 { 1 } else { 254 << (8 * (p - 1)) };
        let size = tags * per_tag;
        if m < size {
            let (k, rem) = (m / per_tag, m % per_tag);
            let tag = if negative {
                zero - 1 - (dist + k)
            } else {
                zero + dist + k
            };
            out.push(tag as u8);
            if p > 0 {
                let mut payload = Vec::new();
                let mut q = rem / 254;
                for _ in 0..p - 1 {
                    payload.push((q % 256) as u8);
                    q /= 256;
                }
                payload.reverse();
                payload.push((rem % 254) as u8 + 1);
                for b in payload {
                    out.push(if negative { !b } else { b });
                }
            }
            return;
        }
        m -= size;
        dist += tags;
    }
    unreachable!("every i128 has a class");
}

fn ref_string(tag: u8, s: &[u8], out: &mut Vec<u8>) {
    out.push(tag);
    for &b in s {
        if b < 0xfc {
            out.push(b + 2);
        } else {
            out.push(0xfe);
            out.push(b - 0xfa);
        }
    }
    out.push(0x01);
}

fn ordered_bits(bits: u64, width: u32) -> u64 {
    let sign = 1u64 << (width - 1);
    let all = if width == 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    };
    if bits & sign != 0 {
        !bits & all
    } else {
        bits | sign
    }
}

fn ref_value(v: &V, out: &mut Vec<u8>) {
    match v {
        V::Null => out.push(TAG_NULL_FIRST),
        V::Bool(b) => out.push(if *b { TAG_TRUE } else { TAG_FALSE }),
        V::I8(x) => ref_int((*x).into(), out),
        V::I16(x) => ref_int((*x).into(), out),
        V::I32(x) => ref_int((*x).into(), out),
        V::I64(x) => ref_int((*x).into(), out),
        V::I128(x) => ref_int(*x, out),
        V::U8(x) => ref_int((*x).into(), out),
        V::U16(x) => ref_int((*x).into(), out),
        V::U32(x) => ref_int((*x).into(), out),
        V::U64(x) => ref_int((*x).into(), out),
        V::U128(x) => ref_int(*x as i128, out),
        V::F32(x) => {
            out.push(TAG_F32);
            let u = ordered_bits(x.to_bits().into(), 32) as u32;
            out.extend_from_slice(&u.to_be_bytes());
            out.push(0x01); // the trailer
        }
        V::F64(x) => {
            let u = ordered_bits(x.to_bits(), 64);
            let cap = 254u64 << 56;
            let (tag, rem) = if u >= cap {
                (TAG_F64 + 1, u - cap)
            } else {
                (TAG_F64, u)
            };
            out.push(tag);
            out.extend_from_slice(&(rem / 254).to_be_bytes()[1..]);
            out.push((rem % 254) as u8 + 1);
        }
        V::Char(c) => ref_string(TAG_TEXT, c.to_string().as_bytes(), out),
        V::Text(t) => ref_string(TAG_TEXT, t.as_bytes(), out),
        V::Bytes(b) => ref_string(TAG_BYTES, b, out),
        V::Tuple(vs) => {
            out.push(TAG_TUPLE);
            for v in vs {
                ref_value(v, out);
            }
            out.push(TAG_END);
        }
    }
}

/// A top-level tuple: its elements one after the other (flattened).
fn ref_key(row: &[V]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in row {
        ref_value(v, &mut out);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

/// Integers near every class boundary of both signs (the width's own edges included), and
/// anywhere.
fn int128() -> impl Strategy<Value = i128> {
    let mut edges: Vec<i128> = vec![0, i128::MAX, i128::MIN, i64::MAX.into(), i64::MIN.into()];
    for negative in [false, true] {
        let mut start = 0u128;
        for (tags, p) in classes(negative) {
            let per_tag: u128 = if p == 0 { 1 } else { 254 << (8 * (p - 1)) };
            for k in [0, 1, tags - 1] {
                let m = start.saturating_add(k * per_tag);
                if let Ok(m) = i128::try_from(m) {
                    edges.push(if negative { !m } else { m });
                }
            }
            start = start.saturating_add(tags.saturating_mul(per_tag));
        }
    }
    prop_oneof![
        any::<i128>(),
        any::<i64>().prop_map(i128::from),
        -70_000i128..70_000,
        (proptest::sample::select(edges), -2i128..=2).prop_map(|(e, d)| e.saturating_add(d)),
        (0u32..127, -1i128..=1).prop_map(|(s, d)| (1i128 << s).saturating_add(d)),
    ]
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        3 => 0x20u8..0x7f,
        2 => prop_oneof![Just(0u8), Just(1), Just(2), Just(0xfb), Just(0xfc), Just(0xfd), Just(0xfe), Just(0xff)],
        2 => any::<u8>(),
    ];
    prop_oneof![
        proptest::collection::vec(byte.clone(), 0..20),
        proptest::collection::vec(byte.clone(), 16..=16),
        proptest::collection::vec(byte, 0..40),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9]{0,18}", ".{0,18}", "[\\x00-\\x7f]{0,40}"]
}

fn scalar() -> impl Strategy<Value = V> {
    prop_oneof![
        Just(V::Null),
        any::<bool>().prop_map(V::Bool),
        any::<i8>().prop_map(V::I8),
        any::<i16>().prop_map(V::I16),
        any::<i32>().prop_map(V::I32),
        prop_oneof![any::<i64>(), int128().prop_map(|x| x as i64)].prop_map(V::I64),
        int128().prop_map(V::I128),
        any::<u8>().prop_map(V::U8),
        any::<u16>().prop_map(V::U16),
        any::<u32>().prop_map(V::U32),
        prop_oneof![any::<u64>(), int128().prop_map(|x| x as u64)].prop_map(V::U64),
        int128().prop_map(|x| V::U128(x.unsigned_abs() >> 1)),
        any::<f32>().prop_map(V::F32),
        any::<f64>().prop_map(V::F64),
        any::<char>().prop_map(V::Char),
        text().prop_map(V::Text),
        bytes().prop_map(V::Bytes),
    ]
}

fn element() -> impl Strategy<Value = V> {
    scalar().prop_recursive(3, 24, 4, |inner| {
        proptest::collection::vec(inner, 0..4).prop_map(V::Tuple)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    /// Every encoder writes the reference bytes: the ascending-only serde path (`to_key`,
    /// `to_key_into` after bytes already in the buffer), the ordered serde path (all fields
    /// ascending) and the dynamic codec.
    #[test]
    fn encoders_write_the_reference_bytes(
        row in proptest::collection::vec(element(), 0..7),
        pre in proptest::collection::vec(any::<u8>(), 0..24),
    ) {
        let want = ref_key(&row);
        prop_assert_eq!(&to_key(&row).unwrap(), &want);
        let mut out = pre.clone();
        to_key_into(&row, &[], &mut out).unwrap();
        prop_assert_eq!(&out[..pre.len()], &pre[..]);
        prop_assert_eq!(&out[pre.len()..], &want[..]);
        let asc = vec![Order::ASC; row.len()];
        prop_assert_eq!(&to_key_with_orders(&row, &asc).unwrap(), &want);
        let t: Vec<Value> = row.iter().map(value).collect();
        prop_assert_eq!(&NativeCodec::new().encode(&t).unwrap(), &want);
    }

    /// One element as the whole key (not flattened: a scalar or a tuple at the root).
    #[test]
    fn single_values_write_the_reference_bytes(v in element()) {
        let mut want = Vec::new();
        match &v {
            V::Tuple(vs) => vs.iter().for_each(|x| ref_value(x, &mut want)),
            x => ref_value(x, &mut want),
        }
        prop_assert_eq!(to_key(&v).unwrap(), want);
    }
}

/// The benchmark's row shape (`u16, u64, String, i64, 16 bytes`), at every string length from
/// 0 to 20 and every 16-byte id with one or two escaped bytes at every position.
#[test]
fn benchmark_rows_write_the_reference_bytes() {
    let mut n = 0;
    for len in 0..=20usize {
        for at in 0..16 {
            for (b1, b2) in [
                (0x00u8, None),
                (0xfc, None),
                (0xff, Some(0xfe)),
                (0x37, Some(0xfd)),
            ] {
                let name: String = (0..len)
                    .map(|i| (b'a' + (i * 7 % 26) as u8) as char)
                    .collect();
                let mut id = [0x5au8; 16];
                id[at] = b1;
                if let Some(b2) = b2 {
                    id[(at + 5) % 16] = b2;
                }
                let row = vec![
                    V::U16(len as u16 * 3),
                    V::U64(len as u64 * 1_234_567),
                    V::Text(name),
                    V::I64(1_600_000_000_000 + at as i64),
                    V::Bytes(id.to_vec()),
                ];
                assert_eq!(to_key(&row).unwrap(), ref_key(&row), "{row:?}");
                n += 1;
            }
        }
    }
    assert_eq!(n, 21 * 16 * 4);
}

/// Every integer within 3 of a class or tag boundary of either sign (and the widths' own
/// edges), through every serde integer method whose type holds it, alone and as the whole row
/// after bytes already in a buffer with no spare capacity: the reference bytes.
#[test]
fn integers_at_every_class_boundary_write_the_reference_bytes() {
    let mut xs: Vec<i128> = vec![
        0,
        i8::MIN.into(),
        i8::MAX.into(),
        u8::MAX.into(),
        i16::MIN.into(),
        i16::MAX.into(),
        u16::MAX.into(),
        i32::MIN.into(),
        i32::MAX.into(),
        u32::MAX.into(),
        i64::MIN.into(),
        i64::MAX.into(),
        u64::MAX.into(),
        i128::MIN,
        i128::MAX,
    ];
    for negative in [false, true] {
        let mut start = 0u128;
        for (tags, p) in classes(negative) {
            let per_tag: u128 = if p == 0 { 1 } else { 254 << (8 * (p - 1)) };
            for k in 0..=tags {
                let m = start.saturating_add(k.saturating_mul(per_tag));
                if let Ok(m) = i128::try_from(m) {
                    xs.push(if negative { !m } else { m });
                }
            }
            start = start.saturating_add(tags.saturating_mul(per_tag));
        }
    }
    let mut n = 0;
    for x in xs {
        for d in -3i128..=3 {
            let Some(x) = x.checked_add(d) else { continue };
            let mut vs = vec![V::I128(x)];
            vs.extend(i8::try_from(x).ok().map(V::I8));
            vs.extend(i16::try_from(x).ok().map(V::I16));
            vs.extend(i32::try_from(x).ok().map(V::I32));
            vs.extend(i64::try_from(x).ok().map(V::I64));
            vs.extend(u8::try_from(x).ok().map(V::U8));
            vs.extend(u16::try_from(x).ok().map(V::U16));
            vs.extend(u32::try_from(x).ok().map(V::U32));
            vs.extend(u64::try_from(x).ok().map(V::U64));
            vs.extend(u128::try_from(x).ok().map(V::U128));
            let mut want = Vec::new();
            ref_int(x, &mut want);
            for v in vs {
                assert_eq!(to_key(&v).unwrap(), want, "{v:?}");
                let row = vec![v.clone(), v.clone()];
                let mut out = vec![0xa5u8; 3];
                out.shrink_to_fit();
                to_key_into(&row, &[], &mut out).unwrap();
                assert_eq!(&out[..3], &[0xa5; 3]);
                assert_eq!(out[3..], [want.clone(), want.clone()].concat(), "{v:?}");
                let t = vec![value(&v)];
                assert_eq!(NativeCodec::new().encode(&t).unwrap(), want, "{v:?}");
                n += 1;
            }
        }
    }
    assert!(n > 3000, "{n}");
}
