//! The `fdb` codec against the vectors of the official Python binding
//! (vectors/fdb-tuple.json), against the Rust crate `foundationdb-tuple` 0.11 as an oracle,
//! and against the model order.

use std::borrow::Cow;
use std::cmp::Ordering;

use foundationdb_tuple::{Bytes, Element};
use num_bigint::BigInt;
use proptest::prelude::*;
use serde_json::Value as Json;
use strata_key::codec::fdb::{kind_rank, FdbCodec, MAX_DEPTH};
use strata_key::json::tuple_from_json;
use strata_key::{tuple, EncodeError, Time, Tuple, TupleCodec, Value};

fn vectors() -> Json {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../vectors/fdb-tuple.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn model_cmp(a: &Tuple, b: &Tuple) -> Ordering {
    a.cmp_by_rank(b, &kind_rank)
}

#[test]
fn every_vector_both_directions() {
    let v = vectors();
    let list = v["vectors"].as_array().unwrap();
    assert_eq!(list.len(), v["count"].as_u64().unwrap() as usize);
    assert_eq!(list.len(), 41);
    let c = FdbCodec::new();
    for vec in list {
        let name = vec["name"].as_str().unwrap();
        let hex = vec["hex"].as_str().unwrap();
        let t = tuple_from_json(&vec["input"]).unwrap();
        assert_eq!(hex::encode(c.encode(&t).unwrap()), hex, "{name}");
        assert_eq!(c.decode(&hex::decode(hex).unwrap()).unwrap(), t, "{name}");
    }
}

#[test]
fn spec_and_edge_cases() {
    let c = FdbCodec::new();
    let cases: Vec<(Tuple, &str)> = vec![
        (tuple!(), ""),
        (tuple!(Value::Null), "00"),
        (tuple!(Value::Null, Value::Null), "0000"),
        (tuple!(tuple!(Value::Null)), "0500ff00"),
        (
            tuple!(tuple!(tuple!(Value::Null), Value::Null)),
            "050500ff0000ff00",
        ),
        (tuple!(256), "160100"),
        (tuple!(-256), "12feff"),
        (tuple!(Value::Int(i64::MIN as i128)), "0c7fffffffffffffff"),
        (
            tuple!(Value::Int(u64::MAX as i128 - 1)),
            "1cfffffffffffffffe",
        ),
        (
            tuple!(Value::Int(-(u64::MAX as i128) + 1)),
            "0c0000000000000001",
        ),
        (tuple!(Value::Int(-(1i128 << 64))), "0bf6feffffffffffffffff"),
        (
            tuple!(Value::Int(i128::MAX)),
            "1d107fffffffffffffffffffffffffffffff",
        ),
        (
            tuple!(Value::Int(i128::MIN)),
            "0bef7fffffffffffffffffffffffffffffff",
        ),
        (tuple!(Value::F32(-42.0)), "203dd7ffff"),
        (tuple!(Value::Float(-0.0)), "217fffffffffffffff"),
        (tuple!(Value::Float(f64::NAN)), "21fff8000000000000"),
        (
            tuple!(Value::Uuid(uuid::Uuid::from_bytes([0xab; 16]))),
            "30abababababababababababababababab",
        ),
    ];
    for (t, hex) in cases {
        assert_eq!(hex::encode(c.encode(&t).unwrap()), hex, "{t}");
        assert_eq!(c.decode(&hex::decode(hex).unwrap()).unwrap(), t, "{hex}");
    }
}

#[test]
fn lenient_integer_forms_decode() {
    let c = FdbCodec::new();
    // 2^64-1 as the Java binding and the Rust crate write it (the Python binding uses 1d).
    assert_eq!(
        c.decode(&hex::decode("1cffffffffffffffff").unwrap())
            .unwrap(),
        tuple!(Value::Int(u64::MAX as i128))
    );
    assert_eq!(
        c.decode(&hex::decode("0c0000000000000000").unwrap())
            .unwrap(),
        tuple!(Value::Int(-(u64::MAX as i128)))
    );
    // Non-minimal forms, as FoundationDB's decoders accept them.
    assert_eq!(
        c.decode(&hex::decode("160001").unwrap()).unwrap(),
        tuple!(1)
    );
    assert_eq!(
        c.decode(&hex::decode("1d0101").unwrap()).unwrap(),
        tuple!(1)
    );
}

#[test]
fn refusals_and_errors() {
    let c = FdbCodec::new();
    match c.encode(&[
        Value::Int(1),
        Value::Time(Time::from_unix_ms(0, 0).unwrap()),
    ]) {
        Err(EncodeError::Unsupported {
            index: 1,
            codec: "fdb",
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    match c.encode(&[Value::Decimal(strata_key::Decimal::from(1i32))]) {
        Err(e @ EncodeError::Invalid { index: 0, .. }) => {
            assert!(e.to_string().contains("no standard decimal"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    let mut deep = tuple!(1);
    for _ in 0..=MAX_DEPTH {
        deep = tuple!(deep);
    }
    assert!(matches!(
        c.encode(&deep),
        Err(EncodeError::Invalid { index: 0, .. })
    ));
    let cases: &[(&str, usize)] = &[
        ("0161", 2),                                     // unterminated bytes
        ("02ff00", 1),                                   // invalid UTF-8
        ("0502c3", 3),                                   // unterminated string inside nested
        ("0515", 2),   // truncated int inside nested (code at 1, bytes at 2)
        ("050101", 3), // unterminated nested
        ("1d11010000000000000000000000000000000000", 0), // 17-byte big int
        ("1d1080000000000000000000000000000000", 0), // 2^127 > i128::MAX
        ("0bef7ffffffffffffffffffffffffffffffe", 0), // -(2^127+1)
        ("1d05", 2),   // truncated big int
        ("0b", 1),     // missing length
        ("20000000", 1), // short float
        ("33", 0),     // versionstamp
        ("25", 0),     // deprecated true
        ("0300", 0),   // deprecated nested
        ("00ff", 1),   // escaped null at top level
    ];
    for (hex, off) in cases {
        let e = c.decode(&hex::decode(hex).unwrap()).unwrap_err();
        assert_eq!(e.offset, *off, "{hex}: {e}");
    }
    // Nesting deeper than MAX_DEPTH is an error, not a stack overflow.
    let mut b = vec![0x05u8; 100_000];
    b.extend(vec![0u8; 100_000]);
    assert!(c.decode(&b).is_err());
    // Big integers beyond the i128 range decode to an error, whatever their length.
    let mut big = vec![0x1d, 0xff];
    big.extend(vec![0x01; 255]);
    assert!(c.decode(&big).is_err());
}

// ---- oracle: foundationdb-tuple 0.11 ----

fn to_element(v: &Value) -> Element<'static> {
    match v {
        Value::Null => Element::Nil,
        Value::Bool(b) => Element::Bool(*b),
        Value::Int(i) => match i64::try_from(*i) {
            Ok(x) => Element::Int(x),
            Err(_) => Element::BigInt(BigInt::from(*i)),
        },
        Value::F32(f) => Element::Float(*f),
        Value::Float(f) => Element::Double(*f),
        Value::Bytes(b) => Element::Bytes(Bytes(Cow::Owned(b.clone()))),
        Value::Text(s) => Element::String(Cow::Owned(s.clone())),
        Value::Uuid(u) => Element::Uuid(*u),
        Value::Tuple(t) => Element::Tuple(t.iter().map(to_element).collect()),
        Value::Time(_) | Value::Decimal(_) => unreachable!("no FDB type"),
    }
}

fn from_element(e: &Element<'_>) -> Value {
    match e {
        Element::Nil => Value::Null,
        Element::Bool(b) => Value::Bool(*b),
        Element::Int(i) => Value::Int(*i as i128),
        Element::BigInt(b) => Value::Int(i128::try_from(b).unwrap()),
        Element::Float(f) => Value::F32(*f),
        Element::Double(f) => Value::Float(*f),
        Element::Bytes(b) => Value::Bytes(b.0.to_vec()),
        Element::String(s) => Value::Text(s.to_string()),
        Element::Uuid(u) => Value::Uuid(*u),
        Element::Tuple(t) => Value::Tuple(t.iter().map(from_element).collect()),
        other => panic!("unexpected element {other:?}"),
    }
}

/// Ints of magnitude 2^64−1: the crate writes the 8-byte form, the Python binding (the
/// reference) the big-integer form.
fn has_magnitude_2_64_minus_1(t: &[Value]) -> bool {
    t.iter().any(|v| match v {
        Value::Int(i) => i.unsigned_abs() == u64::MAX as u128,
        Value::Tuple(t) => has_magnitude_2_64_minus_1(t),
        _ => false,
    })
}

#[test]
fn oracle_agrees_on_the_vectors() {
    let v = vectors();
    for vec in v["vectors"].as_array().unwrap() {
        let t = tuple_from_json(&vec["input"]).unwrap();
        let els: Vec<Element> = t.iter().map(to_element).collect();
        let theirs = foundationdb_tuple::pack(&els);
        if !has_magnitude_2_64_minus_1(&t) {
            assert_eq!(hex::encode(theirs), vec["hex"].as_str().unwrap());
        }
    }
}

fn boundary_int() -> impl Strategy<Value = i128> {
    prop_oneof![
        any::<i64>().prop_map(i128::from),
        any::<i128>(),
        (0u32..127, -2i128..=2, any::<bool>()).prop_map(|(k, d, neg)| {
            let v = (1i128 << k) + d;
            if neg {
                -v
            } else {
                v
            }
        }),
        (1u32..=16, -1i128..=1, any::<bool>()).prop_map(|(n, d, neg)| {
            // 2^(8n) - 1 + d: the edges of each integer length.
            let v = if n == 16 {
                i128::MAX
            } else {
                (1i128 << (8 * n)) - 1 + d
            };
            if neg {
                -v
            } else {
                v
            }
        }),
        Just(i128::MIN),
        Just(i128::MAX),
        Just(u64::MAX as i128),
        Just(-(u64::MAX as i128)),
    ]
}

fn f64_special() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        prop::sample::select(vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xfff0_0000_0000_0001),
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            f64::MIN,
        ]),
    ]
}

fn f32_special() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        prop::sample::select(vec![
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(1),
            f32::from_bits(0x8000_0001),
        ]),
    ]
}

fn bytes_with_extremes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![Just(0u8), Just(0xffu8), Just(0x01u8), any::<u8>()],
        0..12,
    )
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('\0'),
            Just('\u{ff}'),
            Just('\u{10ffff}'),
            any::<char>()
        ],
        0..8,
    )
    .prop_map(|c| c.into_iter().collect())
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        boundary_int().prop_map(Value::Int),
        f32_special().prop_map(Value::F32),
        f64_special().prop_map(Value::Float),
        bytes_with_extremes().prop_map(Value::Bytes),
        text().prop_map(Value::Text),
        any::<[u8; 16]>().prop_map(|b| Value::Uuid(uuid::Uuid::from_bytes(b))),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 16, 4, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(|v| Value::Tuple(Tuple(v)))
    })
}

fn tuple_strategy() -> impl Strategy<Value = Tuple> {
    prop::collection::vec(value(), 0..4).prop_map(Tuple)
}

fn tuple_pair() -> impl Strategy<Value = (Tuple, Tuple)> {
    (tuple_strategy(), tuple_strategy(), tuple_strategy()).prop_map(|(p, a, b)| {
        let mut x = p.clone();
        x.extend(a.0);
        let mut y = p;
        y.extend(b.0);
        (x, y)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn order_matches_model((a, b) in tuple_pair()) {
        let c = FdbCodec::new();
        let (ea, eb) = (c.encode(&a).unwrap(), c.encode(&b).unwrap());
        prop_assert_eq!(model_cmp(&a, &b), ea.cmp(&eb), "{} vs {}", a, b);
    }

    #[test]
    fn round_trip(t in tuple_strategy()) {
        let c = FdbCodec::new();
        let e = c.encode(&t).unwrap();
        prop_assert_eq!(c.decode(&e).unwrap(), t);
    }

    /// Byte-identical to foundationdb-tuple (except the documented 2^64−1 form, where both
    /// decoders agree), and each side decodes the other's bytes.
    #[test]
    fn oracle(t in tuple_strategy()) {
        let c = FdbCodec::new();
        let ours = c.encode(&t).unwrap();
        let els: Vec<Element> = t.iter().map(to_element).collect();
        let theirs = foundationdb_tuple::pack(&els);
        if !has_magnitude_2_64_minus_1(&t) {
            prop_assert_eq!(hex::encode(&ours), hex::encode(&theirs));
        }
        prop_assert_eq!(c.decode(&theirs).unwrap(), t.clone());
        let back: Vec<Element> = foundationdb_tuple::unpack(&ours).unwrap();
        prop_assert_eq!(Tuple(back.iter().map(from_element).collect()), t);
    }

    #[test]
    fn random_bytes_never_panic(b in prop::collection::vec(
        prop_oneof![any::<u8>(), prop::sample::select(vec![0u8, 0x01, 0x02, 0x05, 0x0b, 0x14, 0x1d, 0x20, 0x21, 0xff])],
        0..48,
    )) {
        let c = FdbCodec::new();
        if let Ok(t) = c.decode(&b) {
            let e = c.encode(&t).unwrap();
            prop_assert_eq!(c.decode(&e).unwrap(), t);
        }
    }

    #[test]
    fn mutated_keys_never_panic(t in tuple_strategy(), at in any::<prop::sample::Index>(), x in any::<u8>()) {
        let c = FdbCodec::new();
        let mut e = c.encode(&t).unwrap();
        if !e.is_empty() {
            let i = at.index(e.len());
            e[i] ^= x;
            if let Ok(d) = c.decode(&e) {
                let again = c.encode(&d).unwrap();
                prop_assert_eq!(c.decode(&again).unwrap(), d);
            }
        }
    }
}

#[test]
fn kind_rank_is_fdb_type_code_order() {
    let c = FdbCodec::new();
    let mut v = [
        Value::Uuid(uuid::Uuid::nil()),
        Value::Bool(false),
        Value::Float(f64::NEG_INFINITY),
        Value::F32(f32::NEG_INFINITY),
        Value::Int(i128::MIN),
        Value::Tuple(tuple!()),
        Value::from(""),
        Value::from(Vec::<u8>::new()),
        Value::Null,
    ];
    v.sort_by_key(kind_rank);
    let enc: Vec<Vec<u8>> = v
        .iter()
        .map(|x| c.encode(std::slice::from_ref(x)).unwrap())
        .collect();
    assert!(enc.windows(2).all(|w| w[0] < w[1]));
}
