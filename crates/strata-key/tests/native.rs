//! Property tests of the native codec against the obvious model: `Tuple`'s own order.

use std::cmp::Ordering;

use proptest::prelude::*;
use strata_key::codec::native::{decode_with_orders, prefix_len, NativeCodec, Order};
use strata_key::json::{key_from_json, key_to_json};
use strata_key::{Decimal, Time, Tuple, TupleCodec, Value};

fn int_strategy() -> impl Strategy<Value = i128> {
    let boundaries: Vec<i128> = {
        let mut v = vec![
            0,
            1,
            -1,
            i128::MIN,
            i128::MAX,
            23,
            24,
            8151,
            8152,
            528_343,
            528_344,
            -8,
            -9,
            -2040,
            -2041,
        ];
        for sh in [7u32, 8, 15, 16, 31, 32, 63, 64, 65, 100, 126] {
            let x = 1i128 << sh;
            v.extend([x - 1, x, x + 1, -x - 1, -x, -x + 1]);
        }
        v.push(u64::MAX as i128);
        v.push(-(u64::MAX as i128));
        v
    };
    prop_oneof![
        3 => -40i128..40,
        2 => proptest::sample::select(boundaries),
        1 => any::<i64>().prop_map(i128::from),
        1 => any::<i128>(),
    ]
}

fn f64_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![
        proptest::sample::select(vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            1.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::from_bits(1),
            f64::from_bits(0xffff_ffff_ffff_ffff),
        ]),
        any::<u64>().prop_map(f64::from_bits),
    ]
}

fn bytes_strategy() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            proptest::sample::select(vec![0u8, 1, 2, 0xfd, 0xfe, 0xff, b'a']),
            any::<u8>()
        ],
        0..6,
    )
}

fn text_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::sample::select(vec![
            '\0',
            '\u{1}',
            '\u{2}',
            'a',
            'b',
            'é',
            '\u{ffff}',
            '\u{10ffff}',
        ]),
        0..5,
    )
    .prop_map(|c| c.into_iter().collect())
}

fn decimal_strategy() -> impl Strategy<Value = Decimal> {
    (
        any::<bool>(),
        prop_oneof![
            0u128..200,
            any::<u64>().prop_map(u128::from),
            0u128..10u128.pow(38)
        ],
        prop_oneof![-3i32..3, -70i32..70, -1_000_036i32..=999_999],
    )
        .prop_filter_map("out of range", |(n, c, e)| {
            Decimal::from_parts(n, c, e).ok()
        })
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        decimal_strategy().prop_map(Value::Decimal),
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        int_strategy().prop_map(Value::Int),
        f64_strategy().prop_map(|f| Value::F32(f as f32)),
        any::<u32>().prop_map(|b| Value::F32(f32::from_bits(b))),
        f64_strategy().prop_map(Value::Float),
        bytes_strategy().prop_map(Value::Bytes),
        text_strategy().prop_map(Value::Text),
        proptest::sample::select(vec![[0u8; 16], [0xff; 16], [1; 16]])
            .prop_map(|b| Value::Uuid(uuid::Uuid::from_bytes(b))),
        any::<[u8; 16]>().prop_map(|b| Value::Uuid(uuid::Uuid::from_bytes(b))),
        (
            -3i64..3,
            proptest::sample::select(vec![0u32, 1, 999_999_999]),
            proptest::sample::select(vec![0i32, -3600, 19_800, 86_399])
        )
            .prop_map(|(s, n, o)| Value::Time(Time::new(s, n, o).unwrap())),
        (any::<i64>(), 0u32..1_000_000_000, -86_399i32..=86_399)
            .prop_map(|(s, n, o)| Value::Time(Time::new(s, n, o).unwrap())),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 12, 4, |inner| {
        proptest::collection::vec(inner, 0..4).prop_map(|v| Value::Tuple(Tuple(v)))
    })
}

fn tuple() -> impl Strategy<Value = Tuple> {
    proptest::collection::vec(value(), 0..5).prop_map(Tuple)
}

fn orders() -> impl Strategy<Value = Vec<Order>> {
    proptest::collection::vec(
        (any::<bool>(), any::<bool>()).prop_map(|(descending, nulls_last)| Order {
            descending,
            nulls_last,
        }),
        0..5,
    )
}

/// The model: tuple order under per-field orders.
fn model_cmp(a: &Tuple, b: &Tuple, orders: &[Order]) -> Ordering {
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        let o = orders.get(i).copied().unwrap_or_default();
        let c = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            // NULL's place is absolute in the field's output order.
            (true, false) => {
                return if o.nulls_last {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, true) => {
                return if o.nulls_last {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, false) => x.cmp(y),
        };
        let c = if o.descending { c.reverse() } else { c };
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn round_trip_and_never_ends_in_zero(t in tuple(), o in orders()) {
        let c = NativeCodec::with_orders(o.clone());
        let k = c.encode(&t).unwrap();
        prop_assert_ne!(k.last(), Some(&0u8));
        let back = c.decode(&k).unwrap();
        prop_assert_eq!(&back, &t);
        // Self-describing: a codec without schema decodes it too, and reports the orders.
        let with = decode_with_orders(&k).unwrap();
        for (i, (v, got)) in with.iter().enumerate() {
            let want = o.get(i).copied().unwrap_or_default();
            prop_assert_eq!(v, &t[i]);
            prop_assert_eq!(got.descending, want.descending);
            if v.is_null() { prop_assert_eq!(got.nulls_last, want.nulls_last); }
        }
    }

    #[test]
    fn byte_order_is_tuple_order(a in tuple(), b in tuple(), o in orders()) {
        let c = NativeCodec::with_orders(o.clone());
        let (ka, kb) = (c.encode(&a).unwrap(), c.encode(&b).unwrap());
        prop_assert_eq!(ka.cmp(&kb), model_cmp(&a, &b, &o), "{} vs {}", a, b);
    }

    #[test]
    fn byte_order_is_tuple_order_on_shared_prefixes(p in tuple(), a in tuple(), b in tuple(), o in orders()) {
        let c = NativeCodec::with_orders(o.clone());
        let mut x = p.clone(); x.extend(a.iter().cloned());
        let mut y = p.clone(); y.extend(b.iter().cloned());
        let (kx, ky) = (c.encode(&x).unwrap(), c.encode(&y).unwrap());
        prop_assert_eq!(kx.cmp(&ky), model_cmp(&x, &y, &o));
    }

    #[test]
    fn tuple_prefix_is_byte_prefix(t in tuple(), o in orders()) {
        let c = NativeCodec::with_orders(o);
        let k = c.encode(&t).unwrap();
        for n in 0..=t.len() {
            let p = c.encode(&t[..n]).unwrap();
            prop_assert!(k.starts_with(&p));
            prop_assert_eq!(prefix_len(&k, n), Some(p.len()));
        }
        prop_assert_eq!(prefix_len(&k, t.len() + 1), None);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        if let Ok(t) = NativeCodec::new().decode(&bytes) {
            // Canonical: what decodes re-encodes to the same bytes.
            let orders: Vec<Order> = decode_with_orders(&bytes).unwrap().into_iter().map(|(_, o)| o).collect();
            prop_assert_eq!(NativeCodec::with_orders(orders).encode(&t).unwrap(), bytes.clone());
        }
        let _ = prefix_len(&bytes, 2);
    }
}

#[test]
fn schema_mismatch_is_reported() {
    let k = NativeCodec::with_orders(vec![Order::DESC])
        .encode(&[Value::Int(1)])
        .unwrap();
    let e = NativeCodec::with_orders(vec![Order::ASC])
        .decode(&k)
        .unwrap_err();
    assert!(e.reason.contains("descending"), "{e}");
    assert_eq!(
        NativeCodec::new().decode(&k).unwrap(),
        Tuple(vec![Value::Int(1)])
    );
}

#[test]
fn cross_kind_order_matches_value_order() {
    let vals = [
        Value::Null,
        Value::Bool(false),
        Value::Int(-5),
        Value::F32(1.0),
        Value::Float(f64::NEG_INFINITY),
        Value::Bytes(vec![]),
        Value::Text(String::new()),
        Value::Uuid(uuid::Uuid::nil()),
        Value::Time(Time::new(0, 0, 0).unwrap()),
        Value::Tuple(Tuple::new()),
        Value::Decimal(Decimal::from(-1i32)),
    ];
    let keys: Vec<Vec<u8>> = vals
        .iter()
        .map(|v| NativeCodec::new().encode(std::slice::from_ref(v)).unwrap())
        .collect();
    for w in keys.windows(2) {
        assert!(w[0] < w[1]);
    }
}

type Typed = (u16, String, Option<i64>, bool, (i8, String), Vec<u32>);

fn typed() -> impl Strategy<Value = Typed> {
    (
        0u16..4,
        text_strategy(),
        proptest::option::of(prop_oneof![-3i64..3, any::<i64>()]),
        any::<bool>(),
        (any::<i8>(), text_strategy()),
        proptest::collection::vec(0u32..3, 0..3),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// serde keys: byte order == Rust's derived tuple order, round trip, and the same bytes as
    /// the dynamic codec.
    #[test]
    fn serde_keys_order_and_round_trip(a in typed(), b in typed()) {
        let (ka, kb) = (strata_key::to_key(&a).unwrap(), strata_key::to_key(&b).unwrap());
        prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
        prop_assert_eq!(strata_key::from_key::<Typed>(&ka).unwrap(), a.clone());
        let t = NativeCodec::new().decode(&ka).unwrap();
        prop_assert_eq!(NativeCodec::new().encode(&t).unwrap(), ka);
    }
}

#[test]
fn descending_string_prefixes() {
    let c = NativeCodec::with_orders(vec![Order::DESC, Order::DESC]);
    for (a, b) in [("a", "a\0"), ("a", "a\u{1}"), ("", "\0")] {
        let ka = c.encode(&[Value::from(a)]).unwrap();
        let kb = c.encode(&[Value::from(b)]).unwrap();
        assert!(
            kb < ka,
            "desc: {a:?} must sort after {b:?}: {} vs {}",
            hex::encode(&ka),
            hex::encode(&kb)
        );
        let ka = c.encode(&[Value::from(a), Value::Int(1)]).unwrap();
        let kb = c.encode(&[Value::from(b), Value::Int(1)]).unwrap();
        assert!(kb < ka, "desc with a following element: {a:?} vs {b:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Strings where one extends the other (the case a non-prefix-free string code gets wrong
    /// under a descending order), followed or not by another element.
    #[test]
    fn string_extensions_keep_order(a in bytes_strategy(), ext in bytes_strategy(), t in text_strategy(),
                                    text_ext in text_strategy(), tail in proptest::option::of(leaf()), o in orders()) {
        let mut b = a.clone();
        b.extend(&ext);
        let mut u = t.clone();
        u.push_str(&text_ext);
        let c = NativeCodec::with_orders(o.clone());
        for (x, y) in [(Value::Bytes(a.clone()), Value::Bytes(b.clone())), (Value::Text(t.clone()), Value::Text(u.clone()))] {
            let mut tx = Tuple(vec![x]);
            let mut ty = Tuple(vec![y]);
            if let Some(v) = &tail { tx.push(v.clone()); ty.push(v.clone()); }
            let (kx, ky) = (c.encode(&tx).unwrap(), c.encode(&ty).unwrap());
            prop_assert_eq!(kx.cmp(&ky), model_cmp(&tx, &ty, &o));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// decode → key JSON → text → parse → encode is the identity on every valid key: descending
    /// fields, nulls-last NULLs and nested tuples included, in both JSON forms.
    #[test]
    fn key_json_round_trip_is_the_identity(t in tuple(), o in orders(), typed in any::<bool>()) {
        let k = NativeCodec::with_orders(o).encode(&t).unwrap();
        let text = key_to_json(&decode_with_orders(&k).unwrap(), typed).to_string();
        let (back, flags) = key_from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        let orders: Vec<Order> = flags.iter().map(|f| f.over(Order::ASC)).collect();
        prop_assert_eq!(NativeCodec::with_orders(orders).encode(&back).unwrap(), k, "{}", text);
    }

    /// The same from random bytes: whatever decodes comes back byte for byte.
    #[test]
    fn key_json_round_trip_from_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        if let Ok(items) = decode_with_orders(&bytes) {
            for typed in [false, true] {
                let text = key_to_json(&items, typed).to_string();
                let (back, flags) = key_from_json(&serde_json::from_str(&text).unwrap()).unwrap();
                let orders: Vec<Order> = flags.iter().map(|f| f.over(Order::ASC)).collect();
                prop_assert_eq!(NativeCodec::with_orders(orders).encode(&back).unwrap(), bytes.clone());
            }
        }
    }
}

#[test]
fn key_json_flags_are_checked() {
    let bad = [
        r#"[{"t":"int","v":"1","desc":"yes"}]"#,
        r#"[{"t":"null","nulls":"middle"}]"#,
        r#"[{"t":"tuple","items":[{"t":"int","v":"1","desc":true}]}]"#,
        r#"[[{"t":"null","nulls":"last"}]]"#,
    ];
    for b in bad {
        assert!(
            key_from_json(&serde_json::from_str(b).unwrap()).is_err(),
            "{b}"
        );
    }
    // tuple_from_json (no orders) refuses the flags rather than dropping them.
    assert!(strata_key::json::tuple_from_json(
        &serde_json::from_str(r#"[{"t":"int","v":"1","desc":true}]"#).unwrap()
    )
    .is_err());
}
