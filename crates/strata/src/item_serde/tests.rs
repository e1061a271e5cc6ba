//! Typed items agree with [`Item`]s byte for byte, and bad bytes never panic.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use strata_key::Value;

use super::{from_item_bytes, to_item_bytes};
use crate::error::Error;
use crate::item::{Attr, Item};
use crate::item_codec::tests::arb_item;
use crate::item_codec::{decode_item, encode_item, MAX_DEPTH};

#[path = "../../tests/common/dyn_attr.rs"]
#[allow(dead_code)]
mod dyn_attr;
use dyn_attr::Dyn;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Mood {
    Calm,
    Loud(i32),
    Pair(i8, bool),
    Named { x: u16, why: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Inner {
    z: u64,
    a: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Rich {
    user: String,
    ts: i64,
    n: Option<i32>,
    flag: bool,
    ratio: f64,
    small: f32,
    tags: Vec<String>,
    scores: BTreeMap<String, i128>,
    inner: Inner,
    moods: Vec<Mood>,
    pair: (u8, char),
    #[serde(with = "serde_bytes_like")]
    blob: Vec<u8>,
    unit: (),
}

/// Bytes as serde bytes (what `serde_bytes` does), without the dependency.
mod serde_bytes_like {
    pub fn serialize<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(b)
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
        }
        d.deserialize_bytes(V)
    }
}

fn mood_attr(m: &Mood) -> Attr {
    match m {
        Mood::Calm => Attr::from("Calm"),
        Mood::Loud(i) => Attr::Map(Item::new().with("Loud", *i)),
        Mood::Pair(a, b) => {
            Attr::Map(Item::new().with("Pair", Attr::List(vec![Attr::from(*a), Attr::from(*b)])))
        }
        Mood::Named { x, why } => Attr::Map(Item::new().with(
            "Named",
            Attr::Map(Item::new().with("x", *x).with("why", why.as_str())),
        )),
    }
}

/// The `Item` a `Rich` is specified to be (see the module docs).
fn rich_item(r: &Rich) -> Item {
    let opt = |o: &Option<String>| o.as_deref().map_or(Attr::from(Value::Null), Attr::from);
    Item::new()
        .with("user", r.user.as_str())
        .with("ts", r.ts)
        .with("n", r.n.map_or(Attr::from(Value::Null), Attr::from))
        .with("flag", r.flag)
        .with("ratio", r.ratio)
        .with("small", Value::F32(r.small))
        .with(
            "tags",
            Attr::List(r.tags.iter().map(|t| Attr::from(t.as_str())).collect()),
        )
        .with(
            "scores",
            Attr::Map(r.scores.iter().map(|(k, v)| (k.clone(), *v)).collect()),
        )
        .with(
            "inner",
            Attr::Map(Item::new().with("z", r.inner.z).with("a", opt(&r.inner.a))),
        )
        .with("moods", Attr::List(r.moods.iter().map(mood_attr).collect()))
        .with(
            "pair",
            Attr::List(vec![Attr::from(r.pair.0), Attr::from(r.pair.1.to_string())]),
        )
        .with("blob", Value::Bytes(r.blob.clone()))
        .with("unit", Value::Null)
}

fn arb_mood() -> impl Strategy<Value = Mood> {
    prop_oneof![
        Just(Mood::Calm),
        any::<i32>().prop_map(Mood::Loud),
        (any::<i8>(), any::<bool>()).prop_map(|(a, b)| Mood::Pair(a, b)),
        (any::<u16>(), ".{0,4}").prop_map(|(x, why)| Mood::Named { x, why }),
    ]
}

prop_compose! {
    fn arb_rich()(
        user in ".{0,8}", ts in any::<i64>(), n in any::<Option<i32>>(), flag in any::<bool>(),
        ratio in any::<f64>().prop_filter("NaN != NaN", |f| !f.is_nan()),
        small in any::<f32>().prop_filter("NaN != NaN", |f| !f.is_nan()),
        tags in proptest::collection::vec(".{0,3}", 0..4),
        scores in proptest::collection::btree_map("[a-dé]{0,3}", any::<i128>(), 0..4),
        z in any::<u64>(), a in proptest::option::of(".{0,3}"),
        moods in proptest::collection::vec(arb_mood(), 0..3),
        pair in (any::<u8>(), any::<char>()),
        blob in proptest::collection::vec(any::<u8>(), 0..6),
    ) -> Rich {
        Rich { user, ts, n, flag, ratio, small, tags, scores, inner: Inner { z, a }, moods, pair, blob, unit: () }
    }
}

proptest! {
    /// A struct serializes to exactly the bytes of its equivalent `Item`, and both decoders
    /// read those bytes back to the same thing.
    #[test]
    fn structs_encode_like_their_items(r in arb_rich()) {
        let item = rich_item(&r);
        let bytes = to_item_bytes(&r).unwrap();
        prop_assert_eq!(&bytes, &encode_item(&item).unwrap());
        prop_assert_eq!(from_item_bytes::<Rich>(&bytes).unwrap(), r);
        prop_assert_eq!(decode_item(&bytes).unwrap(), item);
    }

    /// Any item decodes through serde to what the `Item` decoder gives, converted; and every
    /// item serde can express serializes back to its own bytes.
    #[test]
    fn any_item_decodes_like_the_item_decoder(item in arb_item()) {
        let bytes = encode_item(&item).unwrap();
        prop_assert_eq!(from_item_bytes::<Dyn>(&bytes).unwrap(), Dyn::of_item(&item));
        if Dyn::expressible(&item) {
            prop_assert_eq!(to_item_bytes(&Dyn::of_item(&item)).unwrap(), bytes);
        }
    }

    /// Typed decoding of garbage, truncated or bit-flipped items returns errors, never panics;
    /// whatever it accepts from a valid item's mutation is the item decoder's reading too.
    #[test]
    fn bad_bytes_never_panic(r in arb_rich(), item in arb_item(), at in any::<usize>(), b in any::<u8>(), cut in any::<usize>(), junk in proptest::collection::vec(any::<u8>(), 0..48)) {
        let _ = from_item_bytes::<Rich>(&junk);
        let _ = from_item_bytes::<Dyn>(&junk);
        for mut bytes in [to_item_bytes(&r).unwrap(), encode_item(&item).unwrap()] {
            let i = at % bytes.len();
            bytes[i] = b;
            let _ = from_item_bytes::<Rich>(&bytes);
            let typed = from_item_bytes::<Dyn>(&bytes);
            if let Ok(it) = decode_item(&bytes) {
                prop_assert_eq!(typed.unwrap(), Dyn::of_item(&it));
            }
            bytes.truncate(cut % (bytes.len() + 1));
            let _ = from_item_bytes::<Rich>(&bytes);
            let _ = from_item_bytes::<Dyn>(&bytes);
        }
    }
}

#[derive(Debug, PartialEq, Deserialize)]
struct Row {
    user: String,
    ts: i64,
    body: String,
    n: i64,
}

fn type_error(e: Error) -> (String, usize, String) {
    match e {
        Error::ItemType {
            attr,
            offset,
            reason,
            ..
        } => (attr, offset, reason),
        other => panic!("not a type error: {other}"),
    }
}

#[test]
fn unknown_attributes_are_skipped_and_missing_ones_named() {
    let item = Item::new()
        .with("a_extra", Attr::List(vec![Attr::from(1), Attr::from("x")]))
        .with("body", "b")
        .with("n", 7)
        .with("ts", 3)
        .with("user", "u")
        .with("zz", Attr::Map(Item::new().with("q", 1)));
    let bytes = encode_item(&item).unwrap();
    assert_eq!(
        from_item_bytes::<Row>(&bytes).unwrap(),
        Row {
            user: "u".into(),
            ts: 3,
            body: "b".into(),
            n: 7
        }
    );
    let mut short = item.clone();
    short.remove("ts");
    let e = from_item_bytes::<Row>(&encode_item(&short).unwrap()).unwrap_err();
    assert!(e.to_string().contains("missing field `ts`"), "{e}");
    assert!(e.to_string().contains("Row"), "{e}");
}

#[test]
fn ill_typed_attributes_are_named_with_their_offset() {
    let item = Item::new()
        .with("body", "b")
        .with("n", 7)
        .with("ts", "three")
        .with("user", "u");
    let bytes = encode_item(&item).unwrap();
    let (attr, offset, reason) = type_error(from_item_bytes::<Row>(&bytes).unwrap_err());
    assert_eq!(attr, "ts");
    // 0x01, count, "body" (1+4) + text (1+1+1), "n" (1+1) + int (2), then "ts" (1+2): the
    // value's tag is at byte 17.
    assert_eq!(offset, 17);
    assert_eq!(bytes[offset], crate::item_codec::T_TEXT);
    assert!(
        reason.contains("invalid type: string \"three\""),
        "{reason}"
    );

    // Nested: the path names every level.
    let r = Item::new().with(
        "inner",
        Attr::Map(Item::new().with("z", -1).with("a", Value::Null)),
    );
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        inner: Inner,
    }
    let bytes = encode_item(&r).unwrap();
    let (attr, offset, reason) = type_error(from_item_bytes::<Outer>(&bytes).unwrap_err());
    assert_eq!(attr, "inner.z");
    assert_eq!(bytes[offset], crate::item_codec::T_INT);
    assert!(reason.contains("invalid value: integer `-1`"), "{reason}");

    // Corrupt bytes are corruption, with the attribute too.
    let good = item.clone().with("ts", 3);
    let mut bad = encode_item(&good).unwrap();
    let at = bad.len() - 2; // the last text's length byte: now longer than what is left
    bad[at] = 0x7f;
    match from_item_bytes::<Row>(&bad).unwrap_err() {
        Error::Corrupt { reason, .. } => assert!(reason.contains("\"user\""), "{reason}"),
        other => panic!("{other}"),
    }
}

#[test]
fn serializing_refuses_what_an_item_cannot_hold() {
    assert!(to_item_bytes(&5i32).is_err());
    assert!(to_item_bytes(&vec![1, 2]).is_err());
    let mut m = BTreeMap::new();
    m.insert(1, 2);
    let e = to_item_bytes(&m).unwrap_err().to_string();
    assert!(e.contains("attribute names are text"), "{e}");
    let e = to_item_bytes(&[("big", u128::MAX)].into_iter().collect::<BTreeMap<_, _>>())
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"big\"") && e.contains("out of range"), "{e}");
    // Two fields renamed to one attribute name.
    #[derive(Serialize)]
    struct Twice {
        a: i32,
        #[serde(rename = "a")]
        b: i32,
    }
    let e = to_item_bytes(&Twice { a: 1, b: 2 })
        .unwrap_err()
        .to_string();
    assert!(e.contains("appears twice"), "{e}");
    // The nesting limit is the Item encoder's.
    let nest = |n: usize| {
        let mut d = Dyn::Int(1);
        for _ in 0..n {
            d = Dyn::List(vec![d]);
        }
        Dyn::Map(vec![("x".into(), d)])
    };
    let ok = to_item_bytes(&nest(MAX_DEPTH)).unwrap();
    assert_eq!(from_item_bytes::<Dyn>(&ok).unwrap(), nest(MAX_DEPTH));
    assert!(to_item_bytes(&nest(MAX_DEPTH + 1))
        .unwrap_err()
        .to_string()
        .contains("nested deeper"));
}

#[test]
fn unsized_sequences_get_their_count() {
    struct Unsized(Vec<i32>);
    impl Serialize for Unsized {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.iter().filter(|_| true))
        }
    }
    #[derive(Serialize)]
    struct W {
        l: Unsized,
    }
    let v: Vec<i32> = (0..200).collect();
    let bytes = to_item_bytes(&W {
        l: Unsized(v.clone()),
    })
    .unwrap();
    let want = Item::new().with("l", Attr::List(v.into_iter().map(Attr::from).collect()));
    assert_eq!(bytes, encode_item(&want).unwrap());
}

#[test]
fn typed_decoding_shares_the_nesting_limit() {
    // A set adds no level: one inside lists nested to the limit is a valid item.
    let mut a = Attr::Set(crate::item::Set::new(vec![Value::from(1)]).unwrap());
    for _ in 0..MAX_DEPTH {
        a = Attr::List(vec![a]);
    }
    let item = Item::new().with("s", a);
    let bytes = encode_item(&item).unwrap();
    assert_eq!(decode_item(&bytes).unwrap(), item);
    assert_eq!(from_item_bytes::<Dyn>(&bytes).unwrap(), Dyn::of_item(&item));
    // One more list level is refused by both decoders, as corruption.
    let mut deep = vec![0x01, 0x01, 0x01, b's'];
    for _ in 0..=MAX_DEPTH {
        deep.extend_from_slice(&[crate::item_codec::T_LIST, 0x01]);
    }
    deep.push(crate::item_codec::T_NULL);
    assert!(decode_item(&deep).is_err());
    match from_item_bytes::<Dyn>(&deep).unwrap_err() {
        Error::Corrupt { reason, .. } => assert!(reason.contains("nesting"), "{reason}"),
        other => panic!("{other}"),
    }
}

/// Map entries in any order (as struct fields come), many or few, names sharing long prefixes
/// or differing only past byte 8 or in a trailing NUL, nested maps, unknown-length maps: the
/// serializer writes them in name order, byte for byte the `Item` encoding, and refuses a
/// name given twice.
#[test]
fn entries_in_any_order_encode_like_their_items() {
    /// A map serialized in the given order, with or without its length up front.
    struct InOrder(Vec<(String, Attr)>, bool);
    impl Serialize for InOrder {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut m = s.serialize_map(self.1.then_some(self.0.len()))?;
            for (k, v) in &self.0 {
                match v {
                    Attr::Map(inner) => m.serialize_entry(
                        k,
                        &InOrder(
                            inner
                                .iter()
                                .map(|(a, b)| (a.clone(), b.clone()))
                                .rev()
                                .collect(),
                            !self.1,
                        ),
                    )?,
                    Attr::Value(Value::Int(i)) => m.serialize_entry(k, &(*i as i64))?,
                    _ => m.serialize_entry(k, &())?,
                }
            }
            m.end()
        }
    }
    let name = prop_oneof![
        "[a-c]{0,3}",
        "(abcdefgh|abcdefg|abcdefgh\u{0}|abcdefghij)[a-c\u{0}]{0,2}",
        "\u{0}{0,3}",
        "(é|ü)[a-b]{0,10}",
    ];
    let attr = prop_oneof![
        any::<i64>().prop_map(|i| Attr::Value(Value::Int(i.into()))),
        Just(Attr::Value(Value::Null)),
        proptest::collection::btree_map(
            "[a-b]{0,9}",
            any::<i64>().prop_map(|i| Attr::Value(Value::Int(i.into()))),
            0..4
        )
        .prop_map(|m| Attr::Map(Item(m))),
    ];
    let mut runner =
        proptest::test_runner::TestRunner::new(proptest::test_runner::Config::with_cases(500));
    runner
        .run(
            &(
                proptest::collection::vec((name, attr), 0..24),
                any::<bool>(),
            ),
            |(entries, sized)| {
                let row = InOrder(entries.clone(), sized);
                let got = to_item_bytes(&row);
                let mut item = BTreeMap::new();
                let mut dup = None;
                for (k, v) in &entries {
                    if item.insert(k.clone(), v.clone()).is_some() && dup.is_none() {
                        dup = Some(k.clone());
                    }
                }
                match dup {
                    Some(_) => {
                        let e = got.unwrap_err().to_string();
                        prop_assert!(e.contains("appears twice"), "{}", e);
                    }
                    None => prop_assert_eq!(got.unwrap(), encode_item(&Item(item)).unwrap()),
                }
                Ok(())
            },
        )
        .unwrap();
}

/// Maps of the same size one after another, as rows of one type come, but with other names or
/// the same names in another order: each is written in name order (the serializer tries the
/// previous map's order first and must notice when it does not fit), and a repeated name is
/// still refused after a map whose order it would fit.
#[test]
fn consecutive_maps_of_one_size_each_get_their_own_order() {
    struct Seq(Vec<(String, i64)>);
    impl Serialize for Seq {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut m = s.serialize_map(Some(self.0.len()))?;
            for (k, v) in &self.0 {
                m.serialize_entry(k, v)?;
            }
            m.end()
        }
    }
    let name = prop_oneof!["[a-d]{0,2}", "(abcdefgh|abcdefghi)[a-b]{0,1}"];
    let rows =
        proptest::collection::vec(proptest::collection::vec((name, any::<i64>()), 2..6), 1..12);
    let mut runner =
        proptest::test_runner::TestRunner::new(proptest::test_runner::Config::with_cases(300));
    runner
        .run(&(rows, any::<u64>()), |(rows, seed)| {
            // Each row, then (from the seed) the same names rotated: same size, other order.
            let mut all = Vec::new();
            for (i, r) in rows.into_iter().enumerate() {
                let mut rot = r.clone();
                rot.rotate_left((seed as usize + i) % r.len());
                all.push(r);
                all.push(rot);
            }
            for r in &all {
                let got = to_item_bytes(&Seq(r.clone()));
                let mut item = BTreeMap::new();
                let mut dup = false;
                for (k, v) in r {
                    dup |= item
                        .insert(k.clone(), Attr::Value(Value::Int((*v).into())))
                        .is_some();
                }
                if dup {
                    let e = got.unwrap_err().to_string();
                    prop_assert!(e.contains("appears twice"), "{}", e);
                } else {
                    prop_assert_eq!(got.unwrap(), encode_item(&Item(item)).unwrap());
                }
            }
            Ok(())
        })
        .unwrap();
}

/// Struct types written one after another in any mix (more types than the serializer keeps
/// field orders for, of the same field count and name lengths, in name order or not, nested,
/// with a field skipped, with a name given twice): each is written exactly as the map of its
/// attributes (the serializer reuses a type's field order only for the very same field list).
#[test]
fn struct_types_in_any_mix_encode_like_their_maps() {
    #[derive(Serialize)]
    struct Ba {
        b: i64,
        a: i64,
    }
    #[derive(Serialize)]
    struct Cd {
        c: i64,
        d: i64,
    }
    #[derive(Serialize)]
    struct Dc {
        d: i64,
        c: i64,
    }
    #[derive(Serialize)]
    struct Row4 {
        user: String,
        ts: i64,
        body: String,
        n: i64,
    }
    #[derive(Serialize)]
    struct Nest {
        z: Ba,
        y: Cd,
        x: i64,
    }
    #[derive(Serialize)]
    struct Skips {
        q: i64,
        #[serde(skip_serializing_if = "Option::is_none")]
        p: Option<i64>,
        o: i64,
    }
    #[derive(Serialize)]
    struct Twice {
        b: i64,
        #[serde(rename = "b")]
        a: i64,
    }
    fn map(pairs: &[(&str, Attr)]) -> Vec<u8> {
        let m: BTreeMap<String, Attr> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        encode_item(&Item(m)).unwrap()
    }
    let int = |v: i64| Attr::Value(Value::Int(v.into()));
    let text = |s: &str| Attr::Value(Value::from(s));
    let sub = |pairs: &[(&str, Attr)]| {
        Attr::Map(Item(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        ))
    };
    let mut runner =
        proptest::test_runner::TestRunner::new(proptest::test_runner::Config::with_cases(300));
    runner
        .run(
            &proptest::collection::vec((0u8..8, any::<i64>(), any::<bool>()), 1..40),
            |steps| {
                for (kind, v, some) in steps {
                    let (got, want) = match kind {
                        0 => (
                            to_item_bytes(&Ba { b: v, a: 1 }),
                            map(&[("b", int(v)), ("a", int(1))]),
                        ),
                        1 => (
                            to_item_bytes(&Cd { c: v, d: 2 }),
                            map(&[("c", int(v)), ("d", int(2))]),
                        ),
                        2 => (
                            to_item_bytes(&Dc { d: v, c: 3 }),
                            map(&[("d", int(v)), ("c", int(3))]),
                        ),
                        3 => (
                            to_item_bytes(&Row4 {
                                user: "u".into(),
                                ts: v,
                                body: "x".repeat(70),
                                n: 4,
                            }),
                            map(&[
                                ("user", text("u")),
                                ("ts", int(v)),
                                ("body", text(&"x".repeat(70))),
                                ("n", int(4)),
                            ]),
                        ),
                        4 => (
                            to_item_bytes(&Nest {
                                z: Ba { b: 5, a: v },
                                y: Cd { c: v, d: 6 },
                                x: 7,
                            }),
                            map(&[
                                ("z", sub(&[("b", int(5)), ("a", int(v))])),
                                ("y", sub(&[("c", int(v)), ("d", int(6))])),
                                ("x", int(7)),
                            ]),
                        ),
                        5 | 6 => {
                            let p = some.then_some(v);
                            let mut want = vec![("q", int(8)), ("o", int(9))];
                            if let Some(p) = p {
                                want.push(("p", int(p)));
                            }
                            (to_item_bytes(&Skips { q: 8, p, o: 9 }), map(&want))
                        }
                        _ => {
                            let e = to_item_bytes(&Twice { b: v, a: 1 })
                                .unwrap_err()
                                .to_string();
                            prop_assert!(e.contains("appears twice"), "{}", e);
                            continue;
                        }
                    };
                    prop_assert_eq!(got.unwrap(), want, "kind {}", kind);
                }
                Ok(())
            },
        )
        .unwrap();
}
