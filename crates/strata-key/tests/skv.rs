//! The `skv` codec against the chogori SKV vectors (vectors/skv.json), the upstream ordering
//! assertions, and a schema-aware model order (desc, nulls last) under proptest.

use std::cmp::Ordering;

use proptest::prelude::*;
use serde_json::Value as Json;
use strata_key::codec::skv::{SchemaError, SkvCodec, SkvField, SkvSchema, SkvType};
use strata_key::{tuple, EncodeError, Time, Tuple, TupleCodec, Value};

fn vectors() -> Json {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../vectors/skv.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn codec(schema: &str) -> SkvCodec {
    SkvCodec::new(SkvSchema::parse(schema).unwrap())
}

fn enc(c: &SkvCodec, t: &Tuple) -> Vec<u8> {
    c.encode(t).unwrap()
}

#[test]
fn every_vector_both_directions() {
    let v = vectors();
    let list = v["vectors"].as_array().unwrap();
    assert_eq!(list.len(), 25);
    for vec in list {
        let name = vec["name"].as_str().unwrap();
        let mut fields = Vec::new();
        let mut values = Vec::new();
        for f in vec["fields"].as_array().unwrap() {
            let ty = SkvType::from_name(f["type"].as_str().unwrap()).unwrap();
            let mut field = SkvField::new(ty);
            field.nulls_last = f["nullLast"].as_bool().unwrap_or(false);
            fields.push(field);
            let value = if f["null"] == true {
                Value::Null
            } else if let Some(h) = f["utf8_hex"].as_str() {
                Value::Text(String::from_utf8(hex::decode(h).unwrap()).unwrap())
            } else {
                match (ty, &f["v"]) {
                    (SkvType::String, Json::String(s)) => Value::Text(s.clone()),
                    (SkvType::Bool, Json::Bool(b)) => Value::Bool(*b),
                    (_, Json::String(s)) => Value::Int(s.parse().unwrap()),
                    other => panic!("{name}: {other:?}"),
                }
            };
            values.push(value);
        }
        let c = SkvCodec::new(SkvSchema::new(fields));
        let t = Tuple(values);
        let hex = vec["hex"].as_str().unwrap();
        assert_eq!(hex::encode(enc(&c, &t)), hex, "{name}");
        assert_eq!(c.decode(&hex::decode(hex).unwrap()).unwrap(), t, "{name}");
    }
}

#[test]
fn field_type_codes_match_skv() {
    let v = vectors();
    let codes = &v["field_types"];
    for (name, ty) in [
        ("STRING", SkvType::String),
        ("INT16T", SkvType::Int16),
        ("INT32T", SkvType::Int32),
        ("INT64T", SkvType::Int64),
        ("UINT16T", SkvType::Uint16),
        ("UINT32T", SkvType::Uint32),
        ("UINT64T", SkvType::Uint64),
        ("FLOAT", SkvType::Float),
        ("DOUBLE", SkvType::Double),
        ("BOOL", SkvType::Bool),
    ] {
        assert_eq!(codes[name].as_u64().unwrap(), ty.code() as u64, "{name}");
    }
    assert_eq!(codes["NULL_T"], 0);
    assert_eq!(codes["NULL_LAST"], 255);
}

fn ascending(c: &SkvCodec, ts: &[Tuple]) {
    let e: Vec<Vec<u8>> = ts.iter().map(|t| enc(c, t)).collect();
    for (i, w) in e.windows(2).enumerate() {
        assert!(w[0] < w[1], "{} !< {}", ts[i], ts[i + 1]);
    }
}

/// The ordering assertions of chogori's test/k23si/KeyEncodingTest.cpp.
#[test]
fn upstream_order_checks() {
    let c = codec("string,string");
    ascending(&c, &[tuple!("Bo", "burns"), tuple!("Bob", "urns")]);
    let c = codec("int32");
    ascending(
        &c,
        &[
            tuple!(Value::Null),
            tuple!(0),
            tuple!(1),
            tuple!(777),
            tuple!(3000000),
        ],
    );
    for (s, lo, hi) in [
        ("int16", i16::MIN as i128, i16::MAX as i128),
        ("int32", i32::MIN as i128, i32::MAX as i128),
        ("int64", i64::MIN as i128, i64::MAX as i128),
        ("int", i128::MIN, i128::MAX),
    ] {
        let c = codec(s);
        ascending(
            &c,
            &[
                tuple!(lo),
                tuple!(-1000),
                tuple!(-1),
                tuple!(0),
                tuple!(1),
                tuple!(1000),
                tuple!(hi),
            ],
        );
    }
    let c = codec("bool");
    ascending(&c, &[tuple!(Value::Null), tuple!(false), tuple!(true)]);
    let c = codec("string,int32");
    ascending(&c, &[tuple!("TestName", 10), tuple!("TestName", 10000)]);
    let c = codec("int32:nulls_last");
    ascending(&c, &[tuple!(0), tuple!(3000000), tuple!(Value::Null)]);
    for (s, hi) in [
        ("uint16", 65535i128),
        ("uint32", u32::MAX as i128),
        ("uint64", u64::MAX as i128),
    ] {
        let c = codec(s);
        ascending(
            &c,
            &[
                tuple!(Value::Null),
                tuple!(0),
                tuple!(1),
                tuple!(300),
                tuple!(hi),
            ],
        );
    }
}

#[test]
fn descending_fields() {
    let c = codec("string:desc");
    ascending(
        &c,
        &[
            tuple!(Value::Null),
            tuple!("b"),
            tuple!("ab"),
            tuple!("a\0\0"),
            tuple!("a\0"),
            tuple!("a"),
            tuple!(""),
        ],
    );
    assert_eq!(hex::encode(enc(&c, &tuple!("a\0"))), "819eff00fffe");
    let c = codec("int32:desc:nulls_last,string");
    ascending(
        &c,
        &[
            tuple!(5, "a"),
            tuple!(5, "b"),
            tuple!(0),
            tuple!(0, "a"),
            tuple!(-7, ""),
            tuple!(i32::MIN),
            tuple!(Value::Null),
            tuple!(Value::Null, "x"),
        ],
    );
    // Same field bytes as SKV's ascending field, complemented after the type byte.
    let asc = enc(&codec("int32"), &tuple!(777));
    let desc = enc(&codec("int32:desc"), &tuple!(777));
    assert_eq!(desc[0], asc[0] | 0x80);
    assert!(asc[1..].iter().zip(&desc[1..]).all(|(a, d)| a ^ d == 0xff));
}

#[test]
fn our_types() {
    let c = codec("double,float,bytes,uuid,time,int");
    let t = tuple!(
        -0.0f64,
        Value::F32(f32::NAN),
        vec![0u8, 0xff, 0],
        uuid::Uuid::from_bytes([1; 16]),
        Time::new(-5, 7, -3600).unwrap(),
        Value::Int(i128::MIN)
    );
    let e = enc(&c, &t);
    assert_eq!(c.decode(&e).unwrap(), t);
    assert_eq!(
        hex::encode(&e[..11]),
        "097fffffffffffffff0001",
        "double -0.0: all bits flipped"
    );
    let c = codec("double");
    ascending(
        &c,
        &[
            tuple!(Value::Null),
            tuple!(Value::Float(-f64::NAN)),
            tuple!(f64::NEG_INFINITY),
            tuple!(-1.0),
            tuple!(-0.0),
            tuple!(0.0),
            tuple!(f64::MIN_POSITIVE),
            tuple!(f64::INFINITY),
            tuple!(f64::NAN),
        ],
    );
    // A float field takes an f64 only when it is exactly an f32; a double field any f32.
    let c = codec("float");
    assert_eq!(c.decode(&enc(&c, &tuple!(1.5f64))).unwrap(), tuple!(1.5f32));
    assert!(c.encode(&tuple!(0.1f64)).is_err());
    let c = codec("double");
    assert_eq!(c.decode(&enc(&c, &tuple!(1.5f32))).unwrap(), tuple!(1.5f64));
}

#[test]
fn schema_parsing() {
    let s = SkvSchema::parse(" string , int32:desc , int64:nulls_last ").unwrap();
    assert_eq!(s.to_string(), "string,int32:desc,int64:nulls_last");
    assert_eq!(s.len(), 3);
    assert_eq!(
        SkvSchema::parse("INT32T,Uint64,bool:asc:nulls_first")
            .unwrap()
            .to_string(),
        "int32,uint64,bool"
    );
    for t in SkvType::ALL {
        assert_eq!(SkvType::from_name(t.name()), Some(t));
    }
    let cases: &[(&str, usize, &str)] = &[
        ("string,int33", 1, "unknown type"),
        ("string,,int32", 1, "missing type"),
        ("int32:up", 0, "unknown modifier"),
        ("int32:desc:asc", 0, "direction given twice"),
        ("int32:nulls_last:nulls_first", 0, "null order given twice"),
        ("int32:", 0, "empty modifier"),
    ];
    for (text, field, why) in cases {
        match SkvSchema::parse(text) {
            Err(e @ SchemaError::Field { index, .. }) => {
                assert_eq!(index, *field, "{text}");
                assert!(e.to_string().contains(why), "{e}");
                assert!(e.to_string().contains(&format!("field {field}")), "{e}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    assert_eq!(SkvSchema::parse(" "), Err(SchemaError::Empty));
}

#[test]
fn encode_errors_name_the_field() {
    let c = codec("string,int16,uint32,bool");
    let check = |t: Tuple, index: usize, needle: &str| match c.encode(&t) {
        Err(e @ EncodeError::Invalid { .. }) => {
            let EncodeError::Invalid { index: i, .. } = &e else {
                unreachable!()
            };
            assert_eq!(*i, index);
            let s = e.to_string();
            assert!(
                s.contains(needle) && s.contains(&format!("field {index}")),
                "{s}"
            );
        }
        other => panic!("{other:?}"),
    };
    check(tuple!(1), 0, "expected a string value");
    check(tuple!("a", 32768), 1, "out of the int16 range");
    check(tuple!("a", -32769), 1, "out of the int16 range");
    check(tuple!("a", 1, -1), 2, "out of the uint32 range");
    check(tuple!("a", 1, 1u64 << 32), 2, "out of the uint32 range");
    check(tuple!("a", 1, 1, 1), 3, "expected a bool value");
    check(
        tuple!("a", 1, 1, strata_key::Decimal::from(1i32)),
        3,
        "the skv codec has no decimal type",
    );
    check(
        tuple!("a", 1, 1, true, 5),
        4,
        "the schema has only 4 fields",
    );
    // On error the buffer keeps nothing of the failed field.
    let mut out = Vec::new();
    assert!(c.encode_into(&tuple!("a", 1 << 20), &mut out).is_err());
    assert_eq!(hex::encode(out), "01610001");
}

#[test]
fn decode_errors_name_the_offset() {
    let c = codec("string,int16");
    let cases: &[(&str, usize)] = &[
        ("02", 0),                     // int16 type byte where a string is expected
        ("0161", 2),                   // unterminated string
        ("016100", 2),                 // escape byte at the end
        ("01610002", 3),               // bad byte after escape
        ("01ff0001", 1),               // invalid UTF-8
        ("0100010203", 4),             // truncated int16
        ("010001020400010001", 4),     // bad sign byte
        ("01000102020000ff0001", 4),   // negative of magnitude 65535
        ("0100010203800000010001", 4), // positive 32768
        ("01000102030001ff01", 7),     // bad terminator
        ("ff0001", 0),                 // NULL last in a nulls-first field
        ("0000", 1),                   // truncated NULL terminator
        ("000001000001000001", 6),     // more fields than the schema
    ];
    for (hex, off) in cases {
        let e = c.decode(&hex::decode(hex).unwrap()).unwrap_err();
        assert_eq!(e.offset, *off, "{hex}: {e}");
    }
    let c2 = codec("int16");
    let e = c2
        .decode(&hex::decode("0202ffff0001").unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("negative payload"), "{e}");
    let c3 = codec("string:desc");
    assert!(c3.decode(&hex::decode("019e0001").unwrap()).is_err()); // ascending type byte
    assert!(c3.decode(&hex::decode("819effff").unwrap()).is_err()); // bad escape
    assert_eq!(c.decode(b"").unwrap(), Tuple::new());
}

// ---- model and properties ----

/// The order a schema promises: field by field, NULL first or last, values by Strata's order
/// reversed for desc fields; a proper prefix first.
fn model_cmp(schema: &SkvSchema, a: &Tuple, b: &Tuple) -> Ordering {
    for ((x, y), f) in a.iter().zip(b.iter()).zip(schema.fields()) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if f.nulls_last {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, true) => {
                if f.nulls_last {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, false) => {
                let o = x.cmp(y);
                if f.descending {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

fn field_strategy() -> impl Strategy<Value = SkvField> {
    (
        prop::sample::select(SkvType::ALL.to_vec()),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(ty, descending, nulls_last)| SkvField {
            ty,
            descending,
            nulls_last,
        })
}

fn signed(lo: i128, hi: i128) -> impl Strategy<Value = i128> {
    prop_oneof![
        lo..=hi,
        prop::sample::select(vec![lo, lo + 1, -256, -255, -1, 0, 1, 255, 256, hi - 1, hi]),
        (-3i128..=3),
    ]
    .prop_map(move |v| v.clamp(lo, hi))
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
            f64::from_bits(1),
            f64::from_bits(0x8000_0000_0000_0001),
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
            -f32::NAN
        ]),
    ]
}

fn bytes_with_extremes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![Just(0u8), Just(0xffu8), Just(0x01u8), any::<u8>()],
        0..8,
    )
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('\0'),
            Just('\u{1}'),
            Just('\u{ff}'),
            Just('\u{10ffff}'),
            any::<char>()
        ],
        0..6,
    )
    .prop_map(|c| c.into_iter().collect())
}

fn value_of(ty: SkvType) -> BoxedStrategy<Value> {
    let v: BoxedStrategy<Value> = match ty {
        SkvType::String => text().prop_map(Value::Text).boxed(),
        SkvType::Bytes => bytes_with_extremes().prop_map(Value::Bytes).boxed(),
        SkvType::Int16 => signed(i16::MIN.into(), i16::MAX.into())
            .prop_map(Value::Int)
            .boxed(),
        SkvType::Int32 => signed(i32::MIN.into(), i32::MAX.into())
            .prop_map(Value::Int)
            .boxed(),
        SkvType::Int64 => signed(i64::MIN.into(), i64::MAX.into())
            .prop_map(Value::Int)
            .boxed(),
        SkvType::Int => prop_oneof![signed(i128::MIN, i128::MAX), any::<i128>()]
            .prop_map(Value::Int)
            .boxed(),
        SkvType::Uint16 => signed(0, u16::MAX.into()).prop_map(Value::Int).boxed(),
        SkvType::Uint32 => signed(0, u32::MAX.into()).prop_map(Value::Int).boxed(),
        SkvType::Uint64 => signed(0, u64::MAX.into()).prop_map(Value::Int).boxed(),
        SkvType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        SkvType::Float => f32_special().prop_map(Value::F32).boxed(),
        SkvType::Double => f64_special().prop_map(Value::Float).boxed(),
        SkvType::Uuid => any::<[u8; 16]>()
            .prop_map(|b| Value::Uuid(uuid::Uuid::from_bytes(b)))
            .boxed(),
        SkvType::Time => (
            prop_oneof![any::<i64>(), -3i64..3],
            prop_oneof![0u32..1_000_000_000, Just(0), Just(999_999_999)],
            -86_399i32..=86_399,
        )
            .prop_map(|(s, n, o)| Value::Time(Time::new(s, n, o).unwrap()))
            .boxed(),
    };
    prop_oneof![1 => Just(Value::Null), 5 => v].boxed()
}

/// A schema and two tuples for it that often agree on leading fields; either may be a prefix.
fn schema_and_pair() -> impl Strategy<Value = (SkvSchema, Tuple, Tuple)> {
    prop::collection::vec(field_strategy(), 1..5).prop_flat_map(|fields| {
        let per_field: Vec<_> = fields
            .iter()
            .map(|f| (value_of(f.ty), value_of(f.ty), prop::bool::weighted(0.5)))
            .collect();
        let n = fields.len();
        (
            Just(SkvSchema::new(fields)),
            per_field,
            0..=n,
            0..=n,
            prop::bool::weighted(0.7),
        )
            .prop_map(|(schema, vals, la, lb, full)| {
                let a: Vec<Value> = vals.iter().map(|(x, _, _)| x.clone()).collect();
                let b: Vec<Value> = vals
                    .iter()
                    .map(|(x, y, same)| if *same { x.clone() } else { y.clone() })
                    .collect();
                let (la, lb) = if full { (a.len(), b.len()) } else { (la, lb) };
                (schema, Tuple(a[..la].to_vec()), Tuple(b[..lb].to_vec()))
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn order_matches_model((schema, a, b) in schema_and_pair()) {
        let c = SkvCodec::new(schema.clone());
        let (ea, eb) = (enc(&c, &a), enc(&c, &b));
        prop_assert_eq!(model_cmp(&schema, &a, &b), ea.cmp(&eb), "{}: {} vs {}", schema, a, b);
    }

    #[test]
    fn round_trip_and_no_trailing_zero((schema, a, _b) in schema_and_pair()) {
        let c = SkvCodec::new(schema);
        let e = enc(&c, &a);
        prop_assert_ne!(e.last(), Some(&0u8));
        prop_assert_eq!(c.decode(&e).unwrap(), a);
    }

    /// Random bytes against a random schema: no panic; whatever decodes re-encodes to the same
    /// bytes (the decoder accepts only canonical encodings).
    #[test]
    fn random_bytes_never_panic(
        fields in prop::collection::vec(field_strategy(), 1..4),
        b in prop::collection::vec(
            prop_oneof![any::<u8>(), prop::sample::select(vec![0u8, 1, 2, 3, 0x81, 0xfe, 0xff])],
            0..40,
        ),
    ) {
        let c = SkvCodec::new(SkvSchema::new(fields));
        if let Ok(t) = c.decode(&b) {
            prop_assert_eq!(enc(&c, &t), b);
        }
    }

    #[test]
    fn mutated_keys_never_panic((schema, a, _b) in schema_and_pair(), at in any::<prop::sample::Index>(), x in any::<u8>()) {
        let c = SkvCodec::new(schema);
        let mut e = enc(&c, &a);
        if !e.is_empty() {
            let i = at.index(e.len());
            e[i] ^= x;
            if let Ok(d) = c.decode(&e) {
                prop_assert_eq!(enc(&c, &d), e);
            }
        }
    }
}
