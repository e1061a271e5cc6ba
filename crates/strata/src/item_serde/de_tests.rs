//! The typed decoder's scalar fast paths (`deserialize_i64`, `deserialize_str`, …) against
//! the general path (`deserialize_any` for every attribute) and against the `Item` decoder:
//! random items with attributes in any order, missing, extra and ill-typed ones, into types
//! that share a field set, with aliases, borrowed fields and nested structs; and damaged bytes.

use std::fmt::Debug;

use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use strata_key::Value;

use super::de::GENERAL_ONLY;
use super::from_item_bytes;
use crate::item::{Attr, Item};
use crate::item_codec::tests::arb_attr;
use crate::item_codec::{decode_item, encode_item};

#[derive(Debug, PartialEq, Deserialize)]
struct A {
    a: i64,
    b: String,
    c: bool,
}

/// The field set of `A`, declared in another order.
#[derive(Debug, PartialEq, Deserialize)]
struct B {
    c: bool,
    b: String,
    a: i64,
}

#[derive(Debug, PartialEq, Deserialize)]
struct C {
    a: Option<i32>,
    b: Option<String>,
    #[serde(default)]
    c: Option<bool>,
    n: Option<u8>,
    d: Option<Vec<i16>>,
}

#[derive(Debug, PartialEq, Deserialize)]
struct D {
    #[serde(alias = "z")]
    a: u64,
    n: i8,
    #[serde(rename = "b")]
    text: Box<str>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct E {
    a: i64,
    b: String,
    c: bool,
    d: Vec<i64>,
    n: u16,
}

#[derive(Debug, PartialEq, Deserialize)]
struct F {
    a: i128,
    n: u32,
    c: bool,
}

#[derive(Debug, PartialEq, Deserialize)]
struct G {
    m: A,
    n: i64,
    #[serde(default)]
    z: Option<C>,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Br<'a> {
    b: &'a str,
    a: i16,
}

/// Resets the reference switch however the closure ends.
struct General;

impl General {
    fn on() -> General {
        GENERAL_ONLY.with(|g| g.set(true));
        General
    }
}

impl Drop for General {
    fn drop(&mut self) {
        GENERAL_ONLY.with(|g| g.set(false));
    }
}

/// The decode of `bytes` into `T` with the fast paths and without, as printed (values and
/// errors, with their attribute paths and offsets).
fn both<T: DeserializeOwned + Debug>(bytes: &[u8]) -> (String, String) {
    let fast = format!("{:?}", from_item_bytes::<T>(bytes));
    let _g = General::on();
    let general = format!("{:?}", from_item_bytes::<T>(bytes));
    (fast, general)
}

fn both_borrowed(bytes: &[u8]) -> (String, String) {
    let fast = format!("{:?}", from_item_bytes::<Br<'_>>(bytes));
    let _g = General::on();
    let general = format!("{:?}", from_item_bytes::<Br<'_>>(bytes));
    (fast, general)
}

/// What `A` (and `B`) must be, read from the decoded `Item`.
fn a_of(item: &Item) -> Option<(i64, String, bool)> {
    let a = match item.get("a")? {
        Attr::Value(Value::Int(i)) => i64::try_from(*i).ok()?,
        _ => return None,
    };
    let b = match item.get("b")? {
        Attr::Value(Value::Text(s)) => s.clone(),
        // Scalars serde has no type for arrive as their text form (see the module docs).
        Attr::Value(v @ (Value::Uuid(_) | Value::Time(_) | Value::Decimal(_))) => v.to_string(),
        _ => return None,
    };
    let c = match item.get("c")? {
        Attr::Value(Value::Bool(c)) => *c,
        _ => return None,
    };
    Some((a, b, c))
}

fn arb_int() -> impl Strategy<Value = Attr> {
    prop_oneof![
        3 => (-300i64..300).prop_map(Attr::from),
        3 => any::<i64>().prop_map(Attr::from),
        1 => prop_oneof![
            Just(i64::MIN), Just(i64::MAX), Just(-(1 << 62)), Just((1 << 62) - 1),
            Just(1 << 62), Just(-(1 << 62) - 1), Just(u8::MAX as i64 + 1), Just(-129),
        ].prop_map(Attr::from),
        1 => any::<i128>().prop_map(|i| Attr::Value(Value::Int(i))),
        1 => any::<u64>().prop_map(|u| Attr::Value(Value::Int(u.into()))),
    ]
}

/// Mostly the attribute a name's field wants, sometimes anything else.
fn arb_for(name: &'static str) -> BoxedStrategy<Attr> {
    let fitting: BoxedStrategy<Attr> = match name {
        "a" | "n" | "z" => arb_int().boxed(),
        "b" => ".{0,12}".prop_map(|s| Attr::from(s.as_str())).boxed(),
        "c" => any::<bool>().prop_map(Attr::from).boxed(),
        "d" => proptest::collection::vec(arb_int(), 0..4)
            .prop_map(Attr::List)
            .boxed(),
        _ => arb_attr().boxed(),
    };
    prop_oneof![
        6 => fitting,
        1 => Just(Attr::Value(Value::Null)),
        1 => arb_attr(),
    ]
    .boxed()
}

/// Items over the names the types use (each present or not) plus extra ones.
fn arb_flat() -> impl Strategy<Value = Item> {
    let names = ["a", "b", "c", "d", "n", "z"];
    let parts: Vec<_> = names
        .iter()
        .map(|&n| proptest::option::weighted(0.8, arb_for(n)).prop_map(move |a| (n, a)))
        .collect();
    (
        parts,
        proptest::collection::btree_map("[a-e]{2,3}|x[0-9]", arb_attr(), 0..3),
    )
        .prop_map(|(parts, extra)| {
            let mut item: Item = extra.into_iter().collect();
            for (n, a) in parts {
                if let Some(a) = a {
                    item.insert(n.to_owned(), a);
                }
            }
            item
        })
}

fn arb_typed_item() -> impl Strategy<Value = Item> {
    (arb_flat(), arb_flat(), proptest::option::of(arb_flat())).prop_map(|(mut top, m, z)| {
        top.insert("m".to_owned(), Attr::Map(m));
        if let Some(z) = z {
            top.insert("z".to_owned(), Attr::Map(z));
        }
        top
    })
}

fn check_all(bytes: &[u8]) -> Result<(), TestCaseError> {
    macro_rules! agree {
        ($($t:ty),*) => {$(
            let (fast, general) = both::<$t>(bytes);
            prop_assert_eq!(fast, general, "type {}", stringify!($t));
        )*};
    }
    agree!(A, B, C, D, E, F, G);
    let (fast, general) = both_borrowed(bytes);
    prop_assert_eq!(fast, general, "type Br");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Every type reads every random item exactly as the general path does, and `A`/`B`
    /// (one field set, two declaration orders) read what the `Item` decoder says.
    #[test]
    fn fast_paths_decode_like_the_general_path(top in arb_flat(), nested in arb_typed_item()) {
        for item in [&top, &nested] {
            let bytes = encode_item(item).expect("encodable");
            check_all(&bytes)?;
            let want = a_of(&decode_item(&bytes).expect("decodes"));
            let a = from_item_bytes::<A>(&bytes).ok().map(|A { a, b, c }| (a, b, c));
            let b = from_item_bytes::<B>(&bytes).ok().map(|B { c, b, a }| (a, b, c));
            prop_assert_eq!(&a, &want);
            prop_assert_eq!(&b, &want);
        }
    }

    /// Damaged bytes (a byte changed, a cut, bytes appended) fail or decode the same way with
    /// and without the fast paths.
    #[test]
    fn damaged_items_decode_like_the_general_path(
        item in arb_typed_item(),
        at in any::<usize>(),
        b in any::<u8>(),
        cut in any::<usize>(),
        junk in proptest::collection::vec(any::<u8>(), 0..4),
    ) {
        let bytes = encode_item(&item).expect("encodable");
        let mut flipped = bytes.clone();
        let i = at % flipped.len();
        flipped[i] = b;
        check_all(&flipped)?;
        check_all(&bytes[..cut % (bytes.len() + 1)])?;
        let mut longer = bytes.clone();
        longer.extend_from_slice(&junk);
        check_all(&longer)?;
    }
}

/// Every int width sees its range limits through the fast path as through the general one,
/// including varints of 9 and 10 bytes and overlong forms.
#[test]
fn int_limits_agree() {
    let mut values: Vec<i128> = vec![0, 1, -1, 63, 64, -64, -65, i128::MIN, i128::MAX];
    for bits in [7, 8, 15, 16, 31, 32, 62, 63, 64] {
        let p = 1i128 << bits;
        values.extend([p - 1, p, p + 1, -p - 1, -p, -p + 1]);
    }
    for v in values {
        let item = Item::new()
            .with("a", Value::Int(v))
            .with("b", "x")
            .with("c", true)
            .with("n", Value::Int(v));
        let bytes = encode_item(&item).unwrap();
        let (fast, general) = both::<A>(&bytes);
        assert_eq!(fast, general, "{v}");
        let (fast, general) = both::<C>(&bytes);
        assert_eq!(fast, general, "{v}");
        let (fast, general) = both::<F>(&bytes);
        assert_eq!(fast, general, "{v}");
        assert_eq!(
            from_item_bytes::<A>(&bytes).ok().map(|a| a.a as i128),
            i64::try_from(v).ok().map(i128::from),
            "{v}"
        );
    }
    // An overlong varint for `a` (0x80 0x00): refused by both paths, at the same offset.
    let item = Item::new().with("a", 0i64).with("b", "x").with("c", true);
    let bytes = encode_item(&item).unwrap();
    let pos = bytes.windows(3).position(|w| w == [1, b'a', 0x03]).unwrap() + 3;
    let mut long = bytes[..pos].to_vec();
    long.extend([0x80, 0x00]);
    long.extend(&bytes[pos + 1..]);
    let (fast, general) = both::<A>(&long);
    assert_eq!(fast, general);
    assert!(fast.contains("overlong"), "{fast}");
}

/// Items of one struct type with an alias, and std's `Duration` (a `Deserialize` of serde's own
/// whose field visitor takes names only): `deserialize_struct`'s `FIELDS` lists aliases next to
/// the names (`D`: `a`, `z`, `n`, `b`) while a derived field visitor numbers fields without
/// them (`visit_u64(2)` is `b` there, not `n`), so the decoder hands field names to the visitor,
/// never positions in `FIELDS`.
#[test]
fn fields_after_an_alias_and_std_structs_decode() {
    let want = D {
        a: 1,
        n: 2,
        text: "t".into(),
    };
    for first in ["a", "z"] {
        let item = Item::new().with(first, 1i64).with("n", 2i64).with("b", "t");
        let bytes = encode_item(&item).unwrap();
        assert_eq!(from_item_bytes::<D>(&bytes).unwrap(), want, "{first}");
        let (fast, general) = both::<D>(&bytes);
        assert_eq!(fast, general);
    }
    #[derive(Debug, PartialEq, Deserialize)]
    struct W {
        d: std::time::Duration,
        n: i64,
    }
    let item = Item::new()
        .with("n", 5i64)
        .with("d", Item::new().with("secs", 3i64).with("nanos", 4i64));
    let bytes = encode_item(&item).unwrap();
    let w = from_item_bytes::<W>(&bytes).unwrap();
    assert_eq!(
        w,
        W {
            d: std::time::Duration::new(3, 4),
            n: 5
        }
    );
}
