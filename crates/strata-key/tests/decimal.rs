//! Property tests of [`Decimal`] and of its native key encoding, against an independent model:
//! exact big-integer arithmetic on `coefficient × 10^exponent`.

use std::cmp::Ordering;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use num_bigint::BigInt;
use proptest::prelude::*;
use strata_key::codec::native::{decode_with_orders, NativeCodec, Order};
use strata_key::{Decimal, DecimalError, Tuple, TupleCodec, Value};

/// Coefficients: short and long (up to 38 digits), with shared leading digits and zeros inside.
fn coefficient() -> impl Strategy<Value = u128> {
    prop_oneof![
        3 => 0u128..30,
        2 => proptest::sample::select(vec![
            1u128, 9, 10, 11, 15, 99, 100, 101, 105, 12345, 123450, 1_000_001,
            10u128.pow(37), 10u128.pow(38) - 1, 10u128.pow(37) + 1, 99_999_999_999_999_999_999,
            12_345_678_901_234_567_890_123_456_789_012_345_678,
        ]),
        2 => any::<u64>().prop_map(u128::from),
        2 => (1u32..=38).prop_flat_map(|n| 10u128.pow(n - 1)..10u128.pow(n)),
    ]
}

/// Exponents of the last digit: around zero, around the inline/escape boundary of the native
/// class byte (scientific exponent ±62/63), and at the type's limits.
fn exponent() -> impl Strategy<Value = i32> {
    prop_oneof![
        4 => -6i32..6,
        2 => -140i32..140,
        1 => proptest::sample::select(vec![
            -100, -99, -98, -64, -63, -62, -61, 60, 61, 62, 63, 64, 125, -130,
            999_999, 999_990, -999_999, -1_000_036, -999_990, 999_962,
        ]),
        1 => -1_000_036i32..=999_999,
    ]
}

fn decimal() -> impl Strategy<Value = Decimal> {
    (any::<bool>(), coefficient(), exponent()).prop_filter_map("out of range", |(n, c, e)| {
        Decimal::from_parts(n, c, e).ok()
    })
}

/// Pairs that are often close: equal scientific exponents, one a digit-extension of the other.
fn close_pair() -> impl Strategy<Value = (Decimal, Decimal)> {
    (decimal(), 0u32..4, 0u128..1000, any::<bool>()).prop_filter_map(
        "out of range",
        |(a, k, extra, flip)| {
            let c = a
                .coefficient()
                .checked_mul(10u128.pow(k))?
                .checked_add(extra)?;
            let b = Decimal::from_parts(
                a.is_negative() != flip,
                c,
                a.exponent().checked_sub(k as i32)?,
            )
            .ok()?;
            Some((a, b))
        },
    )
}

/// The model: the exact rational `±c × 10^e`, compared with big integers. Exponents further
/// apart than 38 decide by themselves (a 38-digit coefficient stays below 10^38).
fn model_cmp(a: &Decimal, b: &Decimal) -> Ordering {
    let sign = |d: &Decimal| -> i32 {
        if d.coefficient() == 0 {
            0
        } else if d.is_negative() {
            -1
        } else {
            1
        }
    };
    let (sa, sb) = (sign(a), sign(b));
    if sa != sb || sa == 0 {
        return sa.cmp(&sb);
    }
    let (ea, eb) = (i64::from(a.exponent()), i64::from(b.exponent()));
    let mag = if ea - eb >= 38 {
        Ordering::Greater
    } else if eb - ea >= 38 {
        Ordering::Less
    } else {
        let lo = ea.min(eb);
        let x = BigInt::from(a.coefficient()) * BigInt::from(10).pow((ea - lo) as u32);
        let y = BigInt::from(b.coefficient()) * BigInt::from(10).pow((eb - lo) as u32);
        x.cmp(&y)
    };
    if sa < 0 {
        mag.reverse()
    } else {
        mag
    }
}

fn model_value(d: &Decimal) -> (BigInt, i64) {
    let c = BigInt::from(d.coefficient());
    (
        if d.is_negative() { -c } else { c },
        i64::from(d.exponent()),
    )
}

fn hash(d: &Decimal) -> u64 {
    let mut h = DefaultHasher::new();
    d.hash(&mut h);
    h.finish()
}

fn enc(v: &Decimal, o: Order) -> Vec<u8> {
    NativeCodec::with_orders(vec![o])
        .encode(&[Value::Decimal(*v)])
        .unwrap()
}

fn any_order() -> impl Strategy<Value = Order> {
    (any::<bool>(), any::<bool>()).prop_map(|(descending, nulls_last)| Order {
        descending,
        nulls_last,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn order_is_numeric_and_eq_hash_agree(a in decimal(), b in decimal()) {
        prop_assert_eq!(a.cmp(&b), model_cmp(&a, &b), "{} vs {}", a, b);
        prop_assert_eq!(a == b, a.cmp(&b) == Ordering::Equal);
        if a == b { prop_assert_eq!(hash(&a), hash(&b)); }
    }

    #[test]
    fn close_pairs_order((a, b) in close_pair(), o in any_order()) {
        prop_assert_eq!(a.cmp(&b), model_cmp(&a, &b), "{} vs {}", a, b);
        let want = if o.descending { model_cmp(&a, &b).reverse() } else { model_cmp(&a, &b) };
        prop_assert_eq!(enc(&a, o).cmp(&enc(&b, o)), want, "{} vs {}", a, b);
    }

    #[test]
    fn byte_order_is_numeric_order(a in decimal(), b in decimal(), o in any_order(),
                                   tail_a in any::<i8>(), tail_b in any::<i8>()) {
        let want = if o.descending { model_cmp(&a, &b).reverse() } else { model_cmp(&a, &b) };
        let (ka, kb) = (enc(&a, o), enc(&b, o));
        prop_assert_eq!(ka.cmp(&kb), want, "{} vs {}: {} {}", a, b, hex(&ka), hex(&kb));
        // With a following element: the decimal decides unless equal (prefix-free).
        let c = NativeCodec::with_orders(vec![o]);
        let ta = c.encode(&[Value::Decimal(a), Value::from(tail_a)]).unwrap();
        let tb = c.encode(&[Value::Decimal(b), Value::from(tail_b)]).unwrap();
        let want = want.then(tail_a.cmp(&tail_b));
        prop_assert_eq!(ta.cmp(&tb), want);
    }

    #[test]
    fn round_trip_canonical_and_never_ends_in_zero(a in decimal(), o in any_order()) {
        let k = enc(&a, o);
        prop_assert_ne!(k.last(), Some(&0u8));
        prop_assert!(k.len() <= 2 + 5 + 19, "{} takes {} bytes", a, k.len());
        let back = NativeCodec::with_orders(vec![o]).decode(&k).unwrap();
        prop_assert_eq!(&back[0], &Value::Decimal(a));
        prop_assert_eq!(decode_with_orders(&k).unwrap()[0].1.descending, o.descending);
        // Inside a nested tuple too.
        let t = Tuple(vec![Value::Tuple(Tuple(vec![Value::Decimal(a), Value::Null]))]);
        let k = NativeCodec::with_orders(vec![o]).encode(&t).unwrap();
        prop_assert_eq!(NativeCodec::new().decode(&k).unwrap(), t);
        // And through serde.
        let k = strata_key::to_key(&(a, 7u8)).unwrap();
        prop_assert_eq!(&k, &NativeCodec::new().encode(&[Value::Decimal(a), Value::from(7u8)]).unwrap());
        prop_assert_eq!(strata_key::from_key::<(Decimal, u8)>(&k).unwrap(), (a, 7));
    }

    #[test]
    fn text_round_trip(a in decimal()) {
        let s = a.to_string();
        prop_assert_eq!(s.parse::<Decimal>().unwrap(), a);
        // Other spellings of the same number parse to the same value.
        let (c, e) = model_value(&a);
        prop_assert_eq!(format!("{c}e{e}").parse::<Decimal>().unwrap(), a);
        prop_assert_eq!(format!("{c}000E{}", e - 3).parse::<Decimal>().unwrap(), a);
    }

    #[test]
    fn addition_is_exact_or_refused(a in decimal(), b in decimal()) {
        let (ca, ea) = model_value(&a);
        let (cb, eb) = model_value(&b);
        // The exact sum, as a (coefficient, exponent) pair with a bounded exponent gap.
        if (ea - eb).abs() > 200 { return Ok(()); }
        let lo = ea.min(eb);
        let exact = ca * BigInt::from(10).pow((ea - lo) as u32) + cb * BigInt::from(10).pow((eb - lo) as u32);
        let text = format!("{exact}e{lo}");
        match (a.checked_add(b), text.parse::<Decimal>()) {
            (Ok(s), Ok(want)) => prop_assert_eq!(s, want),
            (Err(DecimalError::TooManyDigits { .. }), Err(DecimalError::TooManyDigits { .. })) => {}
            (Err(x), Err(y)) => prop_assert_eq!(std::mem::discriminant(&x), std::mem::discriminant(&y)),
            (x, y) => prop_assert!(false, "{} + {}: {:?} vs model {:?}", a, b, x, y),
        }
        prop_assert_eq!(a.checked_sub(b).ok(), b.checked_add(-a).ok().map(|x| -x));
    }

    #[test]
    fn mixed_with_other_kinds(a in decimal(), other in prop_oneof![
        Just(Value::Null), any::<i64>().prop_map(Value::from), any::<f64>().prop_map(Value::Float),
        ".{0,3}".prop_map(Value::Text), Just(Value::Tuple(Tuple::new())),
        Just(Value::Tuple(Tuple(vec![Value::Int(1)]))),
    ], o in any_order()) {
        let c = NativeCodec::with_orders(vec![o]);
        let (kd, ko) = (c.encode(&[Value::Decimal(a)]).unwrap(), c.encode(std::slice::from_ref(&other)).unwrap());
        let va = Value::Decimal(a);
        let want = if other.is_null() {
            if o.nulls_last { Ordering::Less } else { Ordering::Greater }
        } else if o.descending {
            va.cmp(&other).reverse()
        } else {
            va.cmp(&other)
        };
        prop_assert_eq!(kd.cmp(&ko), want);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn decimal_sorts_after_every_other_kind() {
    let d = Value::Decimal(Decimal::from(-5i32));
    for v in [
        Value::Int(i128::MAX),
        Value::Float(f64::NAN),
        Value::Text("zzz".into()),
        Value::Tuple(Tuple(vec![Value::Int(9)])),
    ] {
        assert!(v < d);
        let c = NativeCodec::new();
        assert!(c.encode(&[v]).unwrap() < c.encode(std::slice::from_ref(&d)).unwrap());
    }
    // Int 5 and Decimal 5 are different keys.
    assert_ne!(Value::Int(5), Value::Decimal(Decimal::from(5i32)));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6000, ..ProptestConfig::default() })]

    /// Untrusted bytes after a decimal tag (ascending or descending): no panic, and whatever
    /// decodes is the canonical encoding of its value.
    #[test]
    fn random_decimal_bytes(tag in proptest::sample::select(vec![0x7eu8, 0x81]),
                            body in proptest::collection::vec(prop_oneof![
                                any::<u8>(),
                                proptest::sample::select(vec![0x00u8, 0x7f, 0x80, 0x81, 0xfe, 0xff, 0x14, 0xc0, 0x3f]),
                            ], 0..24)) {
        let mut bytes = vec![tag];
        bytes.extend(&body);
        if let Ok(items) = decode_with_orders(&bytes) {
            let orders = items.iter().map(|(_, o)| *o).collect();
            let t: Vec<Value> = items.into_iter().map(|(v, _)| v).collect();
            prop_assert_eq!(NativeCodec::with_orders(orders).encode(&t).unwrap(), bytes);
        }
    }

    /// One byte of a valid encoding changed: the result is an error or another canonical key.
    #[test]
    fn mutated_encodings(a in decimal(), o in any_order(), at in any::<prop::sample::Index>(), x in any::<u8>()) {
        let mut k = enc(&a, o);
        let i = at.index(k.len());
        k[i] = x;
        if let Ok(items) = decode_with_orders(&k) {
            let orders = items.iter().map(|(_, o)| *o).collect();
            let t: Vec<Value> = items.into_iter().map(|(v, _)| v).collect();
            prop_assert_eq!(NativeCodec::with_orders(orders).encode(&t).unwrap(), k);
        }
    }
}

#[test]
fn non_canonical_bytes_are_refused() {
    let c = NativeCodec::new();
    for (bytes, why) in [
        (&[0x7e, 0x7f][..], "class 7f"),
        (&[0x7e, 0xc0][..], "no digits"),
        (&[0x7e, 0xc0, 0x15][..], "unterminated digits"),
        (&[0x7e, 0xc0, 0x00][..], "digits 00"),
        (&[0x7e, 0xc0, 0x02][..], "leading zero digit"),
        (&[0x7e, 0xc0, 0x15, 0x00][..], "trailing zero pair"),
        (&[0x7e, 0xc0, 0xc8][..], "digit byte above c7"),
        (
            &[0x7e, 0xff, 0x26, 0x14][..],
            "escape class with an inline exponent",
        ),
        (
            &[0x7e, 0x81, 0x27, 0x14][..],
            "small escape with a non-negative integer",
        ),
    ] {
        assert!(c.decode(bytes).is_err(), "{why}: {}", hex(bytes));
    }
    // 39 digits.
    let mut k = vec![0x7e, 0xc0];
    k.extend([0x15; 19]);
    k.push(0x14);
    assert!(c.decode(&k).is_err());
    k.truncate(k.len() - 2);
    k.push(0x14);
    assert_eq!(
        c.decode(&k).unwrap()[0],
        Value::Decimal(format!("1.{}", "01".repeat(18)).parse().unwrap())
    );
}
