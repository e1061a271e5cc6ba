//! The `centidb` codec against the vectors of the original (vectors/centidb-keylib.json,
//! produced by centidb/acid keylib on CPython 2.7) and against the model order.

use std::cmp::Ordering;

use proptest::prelude::*;
use serde_json::Value as Json;
use strata_key::codec::centidb::{self, kind_rank, CentidbCodec};
use strata_key::json::tuple_from_json;
use strata_key::{tuple, EncodeError, Time, Tuple, TupleCodec, Value};

fn vectors() -> Json {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../vectors/centidb-keylib.json"
    );
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
    assert_eq!(list.len(), 52);
    let codec = CentidbCodec::new();
    let mut lists = 0;
    for vec in list {
        let name = vec["name"].as_str().unwrap();
        let hex = vec["hex"].as_str().unwrap();
        let bytes = hex::decode(hex).unwrap();
        if vec["input_is_list_of_tuples"].as_bool().unwrap() {
            lists += 1;
            let tuples: Vec<Tuple> = vec["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| tuple_from_json(t).unwrap())
                .collect();
            assert_eq!(
                hex::encode(codec.encode_list(&tuples).unwrap()),
                hex,
                "{name}"
            );
            assert_eq!(codec.decode_list(&bytes).unwrap(), tuples, "{name}");
            // The single-tuple API refuses it and says what to use.
            let e = codec.decode(&bytes).unwrap_err();
            assert!(e.to_string().contains("decode_list"), "{e}");
        } else {
            let t = tuple_from_json(&vec["input"]).unwrap();
            assert_eq!(hex::encode(codec.encode(&t).unwrap()), hex, "{name}");
            assert_eq!(codec.decode(&bytes).unwrap(), t, "{name}");
            assert_eq!(codec.decode_list(&bytes).unwrap(), vec![t], "{name}");
        }
    }
    assert_eq!(lists, 1);
}

/// The vectors where centidb's own decoders fail are exactly the ones we must fix.
#[test]
fn original_decoder_bugs_are_covered() {
    let v = vectors();
    let broken: Vec<&str> = v["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["roundtrip_python"] == false || x["roundtrip_c"] == false)
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    for name in [
        "int_neg_16777216",
        "uuid_nil",
        "uuid_fixed",
        "time_1969_utc",
    ] {
        assert!(broken.contains(&name), "{name} missing from {broken:?}");
    }
}

#[test]
fn order_check_groups() {
    let v = vectors();
    let codec = CentidbCodec::new();
    let groups = v["order_checks"].as_array().unwrap();
    assert_eq!(groups.len(), 4);
    for (g, group) in groups.iter().enumerate() {
        assert_eq!(group["ascending"], true);
        let items = group["items"].as_array().unwrap();
        let mut prev: Option<(Tuple, Vec<u8>)> = None;
        for item in items {
            let t = tuple_from_json(&item["input"]).unwrap();
            let enc = codec.encode(&t).unwrap();
            assert_eq!(
                hex::encode(&enc),
                item["hex"].as_str().unwrap(),
                "group {g}"
            );
            assert_eq!(codec.decode(&enc).unwrap(), t);
            if let Some((pt, pe)) = &prev {
                assert!(pe < &enc, "group {g}: bytes not ascending at {t}");
                assert_eq!(model_cmp(pt, &t), Ordering::Less, "group {g}: model at {t}");
            }
            prev = Some((t, enc));
        }
    }
}

#[test]
fn kind_rank_is_centidbs_kind_order() {
    let mut v = [
        Value::from(Time::from_unix_ms(0, 0).unwrap()),
        Value::Uuid(uuid::Uuid::nil()),
        Value::from("a"),
        Value::from(vec![1u8]),
        Value::Bool(false),
        Value::Int(5),
        Value::Null,
    ];
    v.sort_by_key(kind_rank);
    let c = CentidbCodec::new();
    let enc: Vec<Vec<u8>> = v
        .iter()
        .map(|x| c.encode(std::slice::from_ref(x)).unwrap())
        .collect();
    assert!(enc.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn refuses_what_it_cannot_keep_exactly() {
    let c = CentidbCodec::new();
    let unsupported = |v: Value| match c.encode(&[Value::Null, v]) {
        Err(EncodeError::Unsupported {
            index: 1,
            codec: "centidb",
            ..
        }) => {}
        other => panic!("{other:?}"),
    };
    unsupported(Value::Float(1.0));
    unsupported(Value::F32(1.0));
    unsupported(Value::Tuple(tuple!(1)));
    unsupported(Value::Decimal(strata_key::Decimal::from(1i32)));
    let invalid = |v: Value, needle: &str| match c.encode(&[v]) {
        Err(e @ EncodeError::Invalid { index: 0, .. }) => {
            assert!(e.to_string().contains(needle), "{e}")
        }
        other => panic!("{other:?}"),
    };
    invalid(Value::Int(u64::MAX as i128 + 1), "beyond");
    invalid(Value::Int(-(u64::MAX as i128) - 1), "beyond");
    invalid(Value::Time(Time::new(0, 1, 0).unwrap()), "sub-millisecond");
    invalid(Value::Time(Time::new(0, 0, 60).unwrap()), "quarter hours");
    invalid(Value::Time(Time::new(0, 0, 16 * 3600).unwrap()), "−16:00");
    invalid(
        Value::Time(Time::new(0, 0, -16 * 3600 - 900).unwrap()),
        "−16:00",
    );
    invalid(
        Value::Time(Time::new(i64::MAX / 1000, 0, 0).unwrap()),
        "range",
    );
    // The extremes that fit.
    for v in [
        Value::Int(u64::MAX as i128),
        Value::Int(-(u64::MAX as i128)),
        Value::Time(Time::new(0, 0, -16 * 3600).unwrap()),
        Value::Time(Time::new(-1, 999_000_000, 15 * 3600 + 2700).unwrap()),
    ] {
        let e = c.encode(std::slice::from_ref(&v)).unwrap();
        assert_eq!(c.decode(&e).unwrap(), tuple!(v));
    }
    // Lists: empty refused, element errors name the tuple.
    assert!(c.encode_list(&[]).is_err());
    let e = c.encode_list(&[tuple!(1), tuple!(1.5)]).unwrap_err();
    assert!(e.to_string().contains("tuple 1"), "{e}");
}

#[test]
fn decode_errors_name_the_offset() {
    let c = CentidbCodec::new();
    let cases: &[(&str, usize)] = &[
        ("150d01", 2),               // unknown kind 0x01
        ("15", 1),                   // missing varint
        ("15f1", 1),                 // truncated 2-byte varint
        ("15f100", 1),               // 240 in two bytes: non-canonical
        ("14ff", 0),                 // negative zero
        ("1e02", 1),                 // bool 2
        ("5a0011", 1),               // short UUID
        ("28b0c1", 2),               // padding bits set
        ("28808080808080808080", 1), // 9 packed bytes: no string has that length
        ("32ffc0", 0),               // 0xff alone is not UTF-8
        ("5bff", 0),                 // NEG_TIME of magnitude 0
    ];
    for (hex, off) in cases {
        let e = c.decode(&hex::decode(hex).unwrap()).unwrap_err();
        assert_eq!(e.offset, *off, "{hex}: {e}");
        assert_eq!(e.codec, "centidb");
    }
    assert_eq!(c.decode(b"").unwrap(), Tuple::new());
    assert_eq!(c.decode_list(b"").unwrap(), vec![Tuple::new()]);
    assert_eq!(
        c.decode_list(&[0x66]).unwrap(),
        vec![Tuple::new(), Tuple::new()]
    );
}

fn boundary_int() -> impl Strategy<Value = i128> {
    let max = u64::MAX as i128;
    prop_oneof![
        any::<i64>().prop_map(i128::from),
        (0u32..=64, -2i128..=2, any::<bool>()).prop_map(|(k, d, neg)| {
            let v = (1i128 << k) + d;
            if neg {
                -v
            } else {
                v
            }
        }),
        prop::sample::select(vec![
            0i128, 240, 241, 2287, 2288, 67823, 67824, -240, -241, -2287, -2288, -67823, -67824,
        ]),
    ]
    .prop_map(move |v| v.clamp(-max, max))
}

fn bytes_with_extremes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            Just(0u8),
            Just(0xffu8),
            Just(0x80u8),
            Just(0x7f),
            any::<u8>()
        ],
        0..20,
    )
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('\0'),
            Just('\u{7f}'),
            Just('\u{ff}'),
            Just('\u{10ffff}'),
            any::<char>()
        ],
        0..10,
    )
    .prop_map(|c| c.into_iter().collect())
}

fn time() -> impl Strategy<Value = Time> {
    let lim = 1i64 << 50;
    (
        prop_oneof![
            -lim..lim,
            -3000i64..3000,
            Just(-(1i64 << 57) + 1),
            Just((1i64 << 57) - 1)
        ],
        -64i32..=63,
    )
        .prop_map(|(ms, q)| Time::from_unix_ms(ms, q * 900).unwrap())
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        boundary_int().prop_map(Value::Int),
        bytes_with_extremes().prop_map(Value::Bytes),
        text().prop_map(Value::Text),
        any::<[u8; 16]>().prop_map(|b| Value::Uuid(uuid::Uuid::from_bytes(b))),
        time().prop_map(Value::Time),
    ]
}

fn tuple_strategy() -> impl Strategy<Value = Tuple> {
    prop::collection::vec(value(), 0..5).prop_map(Tuple)
}

/// Pairs that share a prefix, so that comparisons reach later elements.
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
        let c = CentidbCodec::new();
        let (ea, eb) = (c.encode(&a).unwrap(), c.encode(&b).unwrap());
        prop_assert_eq!(model_cmp(&a, &b), ea.cmp(&eb), "{} vs {}", a, b);
    }

    #[test]
    fn round_trip(t in tuple_strategy()) {
        let c = CentidbCodec::new();
        let e = c.encode(&t).unwrap();
        prop_assert_eq!(c.decode(&e).unwrap(), t);
    }

    #[test]
    fn list_round_trip(ts in prop::collection::vec(tuple_strategy(), 1..4)) {
        let c = CentidbCodec::new();
        let e = c.encode_list(&ts).unwrap();
        prop_assert_eq!(c.decode_list(&e).unwrap(), ts);
    }

    /// Arbitrary bytes: no panic; whatever decodes re-encodes to the same bytes (the decoder
    /// accepts only canonical encodings).
    #[test]
    fn random_bytes_never_panic(b in prop::collection::vec(
        prop_oneof![any::<u8>(), prop::sample::select(vec![0x0fu8, 0x14, 0x15, 0x1e, 0x28, 0x32, 0x5a, 0x5b, 0x5c, 0x66, 0x80, 0xff])],
        0..48,
    )) {
        let c = CentidbCodec::new();
        if let Ok(ts) = c.decode_list(&b) {
            prop_assert_eq!(c.encode_list(&ts).unwrap(), b.clone());
        }
        if let Ok(t) = c.decode(&b) {
            prop_assert_eq!(c.encode(&t).unwrap(), b);
        }
    }

    /// Flipping one byte of a valid key: no panic, and a successful decode is canonical.
    #[test]
    fn mutated_keys_never_panic(t in tuple_strategy(), at in any::<prop::sample::Index>(), x in any::<u8>()) {
        let c = CentidbCodec::new();
        let mut e = c.encode(&t).unwrap();
        if !e.is_empty() {
            let i = at.index(e.len());
            e[i] ^= x;
            if let Ok(d) = c.decode_list(&e) {
                prop_assert_eq!(c.encode_list(&d).unwrap(), e);
            }
        }
    }
}

#[test]
fn constants_match_the_vector_file() {
    let v = vectors();
    let k = &v["kinds"];
    for (name, byte) in [
        ("NULL", centidb::KIND_NULL),
        ("NEG_INTEGER", centidb::KIND_NEG_INTEGER),
        ("INTEGER", centidb::KIND_INTEGER),
        ("BOOL", centidb::KIND_BOOL),
        ("BLOB", centidb::KIND_BLOB),
        ("TEXT", centidb::KIND_TEXT),
        ("UUID", centidb::KIND_UUID),
        ("NEG_TIME", centidb::KIND_NEG_TIME),
        ("TIME", centidb::KIND_TIME),
        ("SEP", centidb::KIND_SEP),
    ] {
        assert_eq!(k[name].as_str().unwrap(), format!("{byte:02x}"), "{name}");
    }
}
