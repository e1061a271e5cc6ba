//! The level-typed deserializer ([`from_key`]) against the plain one it replaced
//! ([`from_key_plain`], one run-time level tested per element): the same `Result` — value, or
//! error kind, message and offset — for valid keys of every element kind at every nesting
//! level (both directions, both NULL placements), for the same keys damaged (cut short, bytes
//! set to the escape and tag bytes, bytes inserted or removed), and for keys read as the wrong
//! type.

use super::plain_de::from_key_plain;
use super::*;
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A byte string that serde reads and writes as bytes.
#[derive(Debug, Clone, PartialEq)]
struct Bytes(Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Bytes, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> std::result::Result<Bytes, E> {
                Ok(Bytes(b.to_vec()))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// Whatever `deserialize_any` reports, as a tree.
#[derive(Debug, Clone, PartialEq)]
enum Dyn {
    Unit,
    Bool(bool),
    I64(i64),
    U64(u64),
    I128(i128),
    F32(u32),
    F64(u64),
    Str(String),
    Bytes(Vec<u8>),
    Some(Box<Dyn>),
    Seq(Vec<Dyn>),
    Map(Vec<(Dyn, Dyn)>),
}

impl<'de> Deserialize<'de> for Dyn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Dyn, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Dyn;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("anything")
            }
            fn visit_unit<E>(self) -> std::result::Result<Dyn, E> {
                Ok(Dyn::Unit)
            }
            fn visit_none<E>(self) -> std::result::Result<Dyn, E> {
                Ok(Dyn::Unit)
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<Dyn, E> {
                Ok(Dyn::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<Dyn, E> {
                Ok(Dyn::I64(v))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Dyn, E> {
                Ok(Dyn::U64(v))
            }
            fn visit_i128<E>(self, v: i128) -> std::result::Result<Dyn, E> {
                Ok(Dyn::I128(v))
            }
            fn visit_f32<E>(self, v: f32) -> std::result::Result<Dyn, E> {
                Ok(Dyn::F32(v.to_bits()))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<Dyn, E> {
                Ok(Dyn::F64(v.to_bits()))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Dyn, E> {
                Ok(Dyn::Str(v.to_string()))
            }
            fn visit_bytes<E>(self, v: &[u8]) -> std::result::Result<Dyn, E> {
                Ok(Dyn::Bytes(v.to_vec()))
            }
            fn visit_some<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> std::result::Result<Dyn, D::Error> {
                Ok(Dyn::Some(Box::new(Dyn::deserialize(d)?)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Dyn, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Dyn::Seq(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> std::result::Result<Dyn, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = a.next_key()? {
                    v.push((k, a.next_value()?));
                }
                Ok(Dyn::Map(v))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
enum E {
    Unit,
    New(i64),
    Tup(u8, String),
    Rec { a: Option<i32>, b: Bytes },
}

/// A recursive type: each level is one nested tuple.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Nest(Vec<Nest>);

fn nest(d: usize) -> Nest {
    (0..d).fold(Nest(vec![]), |inner, _| Nest(vec![inner]))
}

/// Every element kind at the top level and nested.
type Row = (
    u16,
    u64,
    String,
    i64,
    Bytes,
    Option<(i8, Option<u32>, Vec<(bool, char)>)>,
    E,
    (f32, f64, (), Option<i128>),
    BTreeMap<String, Vec<i16>>,
    Option<String>,
);

/// The bench's row.
type BenchRow = (u16, u64, String, i64, Bytes);

/// Integers at and around every class boundary of both signs, and anywhere.
fn int() -> impl Strategy<Value = i64> {
    let mut edges: Vec<i64> = vec![0, 24, 8];
    let (mut p, mut n) = (24 + 32 * 254, 8 + 8 * 254);
    edges.extend([p, n]);
    p += 8 * 254 * 256;
    n += 4 * 254 * 256;
    edges.extend([p, n]);
    let mut per = 254i64 * 256 * 256;
    for _ in 3..9 {
        p = p.saturating_add(per);
        n = n.saturating_add(per);
        edges.extend([p, n]);
        per = per.saturating_mul(256);
    }
    let edges: Vec<i64> = edges.into_iter().flat_map(|e| [e, !e]).collect();
    prop_oneof![
        any::<i64>(),
        -300i64..300,
        (proptest::sample::select(edges), -2i64..=2).prop_map(|(e, d)| e.saturating_add(d)),
    ]
}

/// Bytes biased to the escaped bytes (≥ 0xfc) and the code bytes, lengths around 8 and 16.
fn bytes() -> impl Strategy<Value = Bytes> {
    let byte = prop_oneof![
        3 => 0x20u8..0x7f,
        2 => proptest::sample::select(vec![0u8, 1, 2, 0xfb, 0xfc, 0xfd, 0xfe, 0xff]),
        1 => any::<u8>(),
    ];
    prop_oneof![
        proptest::collection::vec(byte.clone(), 0..20),
        proptest::collection::vec(byte, 0..40),
    ]
    .prop_map(Bytes)
}

fn e() -> impl Strategy<Value = E> {
    prop_oneof![
        Just(E::Unit),
        int().prop_map(E::New),
        (any::<u8>(), ".{0,9}").prop_map(|(a, b)| E::Tup(a, b)),
        (proptest::option::of(any::<i32>()), bytes()).prop_map(|(a, b)| E::Rec { a, b }),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    (
        (any::<u16>(), int().prop_map(|x| x as u64), ".{0,20}", int()),
        bytes(),
        proptest::option::of((
            any::<i8>(),
            proptest::option::of(any::<u32>()),
            proptest::collection::vec((any::<bool>(), any::<char>()), 0..3),
        )),
        e(),
        (
            any::<f32>(),
            any::<f64>(),
            Just(()),
            proptest::option::of(any::<i128>()),
        ),
        proptest::collection::btree_map(
            ".{0,3}",
            proptest::collection::vec(any::<i16>(), 0..3),
            0..3,
        ),
        proptest::option::of(".{0,3}"),
    )
        .prop_map(|((a, b, c, d), e, f, g, h, i, j)| (a, b, c, d, e, f, g, h, i, j))
}

/// Up to ten orders, any direction and NULL placement.
fn orders() -> impl Strategy<Value = Vec<Order>> {
    proptest::collection::vec(
        (any::<bool>(), any::<bool>()).prop_map(|(descending, nulls_last)| Order {
            descending,
            nulls_last,
        }),
        0..11,
    )
}

/// One damage to a key: none, cut short, a byte set (biased to escape and tag bytes), a byte
/// inserted or removed.
#[derive(Debug, Clone)]
enum Damage {
    None,
    Cut(usize),
    Set(usize, u8),
    Insert(usize, u8),
    Remove(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    let b = prop_oneof![
        proptest::sample::select(vec![
            0u8, 1, 2, 3, 4, 5, 0x74, 0x75, 0x76, 0x78, 0x79, 0x7a, 0x7d, 0x7f, 0x80, 0x82, 0x86,
            0xfd, 0xfe, 0xff
        ]),
        any::<u8>(),
    ];
    prop_oneof![
        Just(Damage::None),
        any::<usize>().prop_map(Damage::Cut),
        (any::<usize>(), b.clone()).prop_map(|(i, b)| Damage::Set(i, b)),
        (any::<usize>(), b).prop_map(|(i, b)| Damage::Insert(i, b)),
        any::<usize>().prop_map(Damage::Remove),
    ]
}

fn apply(mut k: Vec<u8>, d: &Damage) -> Vec<u8> {
    let n = k.len();
    match *d {
        Damage::None => {}
        Damage::Cut(i) => k.truncate(i % (n + 1)),
        Damage::Set(i, b) if n > 0 => k[i % n] = b,
        Damage::Insert(i, b) => k.insert(i % (n + 1), b),
        Damage::Remove(i) if n > 0 => {
            k.remove(i % n);
        }
        _ => {}
    }
    k
}

/// Both deserializers give the same `Result` for `k` read as `T` (compared as debug text, so
/// that a NaN equals itself).
fn same<'de, T>(k: &'de [u8]) -> std::result::Result<(), TestCaseError>
where
    T: Deserialize<'de> + std::fmt::Debug,
{
    let new = format!("{:?}", from_key::<T>(k));
    let plain = format!("{:?}", from_key_plain::<T>(k));
    prop_assert_eq!(
        new,
        plain,
        "{} bytes {:02x?}",
        std::any::type_name::<T>(),
        k
    );
    Ok(())
}

/// Reads `k` as every test type.
fn all_types(k: &[u8]) -> std::result::Result<(), TestCaseError> {
    same::<Row>(k)?;
    same::<BenchRow>(k)?;
    same::<Dyn>(k)?;
    same::<(Dyn,)>(k)?;
    same::<(u16, Dyn, (Dyn,))>(k)?;
    same::<serde::de::IgnoredAny>(k)?;
    same::<E>(k)?;
    same::<(u16, E)>(k)?;
    same::<((E,),)>(k)?;
    same::<Option<(u16, u64)>>(k)?;
    same::<(Option<u16>, Option<(Option<u64>,)>)>(k)?;
    same::<Vec<Dyn>>(k)?;
    same::<BTreeMap<u16, Dyn>>(k)?;
    same::<(String, Bytes, char)>(k)?;
    same::<Bytes>(k)?;
    same::<String>(k)?;
    same::<Option<u64>>(k)?;
    same::<(u8, (u8, (u8, i128)), u128)>(k)?;
    same::<(Nest,)>(k)?;
    same::<Nest>(k)?;
    same::<crate::Decimal>(k)?;
    same::<(u16, crate::Decimal, (crate::Decimal,))>(k)?;
    same::<(f32, f64, (), bool)>(k)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, ..ProptestConfig::default() })]

    /// Keys of random rows, with random orders, intact and damaged.
    #[test]
    fn level_typed_deserializer_matches_the_plain_one(
        r in row(),
        o in orders(),
        d in damage(),
        d2 in damage(),
    ) {
        let k = to_key_with_orders(&r, &o).unwrap();
        all_types(&k)?;
        let k1 = apply(k, &d);
        all_types(&k1)?;
        all_types(&apply(k1, &d2))?;
    }

    /// Random bytes built from tag, escape and plain bytes.
    #[test]
    fn level_typed_deserializer_matches_the_plain_one_on_noise(
        k in proptest::collection::vec(prop_oneof![
            proptest::sample::select(vec![
                1u8, 2, 3, 4, 5, 0x10, 0x20, 0x74, 0x75, 0x76, 0x78, 0x79, 0x7a, 0x7d, 0x7e, 0x7f,
                0x80, 0x82, 0x86, 0xfd, 0xfe, 0xff, 0
            ]),
            any::<u8>(),
        ], 0..40),
    ) {
        all_types(&k)?;
    }
}

/// Nesting at and around the depth limit, at the root, as a field and as a descending field,
/// intact and cut short.
#[test]
fn level_typed_deserializer_matches_the_plain_one_at_the_depth_limit() {
    for d in (0..4).chain(crate::MAX_DEPTH - 2..crate::MAX_DEPTH + 3) {
        let n = nest(d);
        let mut keys = vec![];
        keys.extend(to_key(&n));
        keys.extend(to_key(&(1u8, &n)));
        keys.extend(to_key_with_orders(&(1u8, &n), &[Order::ASC, Order::DESC]));
        keys.extend(to_key(&((&n,),)));
        // Deeper than any encoder writes: tuple tags around nothing.
        let mut raw = vec![TAG_TUPLE; d + 2];
        raw.extend(vec![TAG_END; d + 2]);
        keys.push(raw);
        for k in keys {
            for cut in [k.len(), k.len().saturating_sub(1), k.len() / 2] {
                all_types(&k[..cut]).unwrap();
            }
        }
    }
}

/// `De::text`'s inline case (`text_short`: at most 16 plain ASCII bytes) against the plain
/// deserializer, which reads every text through `Reader::escaped_vec`: strings of 0 to 20
/// bytes with ASCII, control, escaped, UTF-8 and invalid UTF-8 bytes at one position, at the
/// root, as a top-level element followed by another and as a nested one, both directions,
/// followed by 0 to 16 more bytes; intact, cut short at every length and with any byte
/// replaced by a tag, escape or plain value.
/// The keys one element `el` (ascending encoding) is tested in, each followed by `junk`: at
/// the root or top level followed by the ascending integer element `int`, alone, and nested
/// in a tuple with `int`; `el` (and the tuple) in ascending or (`desc`) descending order.
fn placements(el: &[u8], int: &[u8], junk: &[u8], desc: bool) -> Vec<Vec<u8>> {
    let flip = |mut v: Vec<u8>| {
        if desc {
            v.iter_mut().for_each(|b| *b = !*b);
        }
        v
    };
    // (The integer after a top-level element stays ascending: elements have their own order.)
    let top = [flip(el.to_vec()).as_slice(), int].concat();
    let alone = flip(el.to_vec());
    let nested = flip([&[TAG_TUPLE][..], el, int, &[TAG_END]].concat());
    [top, alone, nested]
        .into_iter()
        .map(|k| [k.as_slice(), junk].concat())
        .collect()
}

#[test]
fn text_short_agrees_with_text_general() {
    /// The text element: tag, escaped content, terminator.
    fn text(s: &[u8]) -> Vec<u8> {
        let mut k = vec![TAG_TEXT];
        crate::codec::native::put_escaped(&mut k, s);
        k
    }
    fn check(k: &[u8]) {
        let r = same::<String>(k)
            .and_then(|_| same::<(String, u16)>(k))
            .and_then(|_| same::<((String, u16),)>(k))
            .and_then(|_| same::<(u8, char)>(k))
            .and_then(|_| same::<(Dyn,)>(k));
        if let Err(e) = r {
            panic!("{e}");
        }
    }
    let int = to_key(&(7u16,)).unwrap();
    let mut decoded = 0;
    for len in 0..=20usize {
        for (k, odd) in [b'q', 0x00, 0x01, 0x7f, 0x80, 0xc3, 0xfc, 0xff]
            .into_iter()
            .enumerate()
        {
            let mut s: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            if len > 0 {
                s[(k * 3) % len] = odd;
            }
            if odd == 0xc3 && len >= 2 {
                // A valid two-byte UTF-8 character.
                s[(k * 3) % (len - 1) + 1] = 0xa9;
                s[(k * 3) % (len - 1)] = 0xc3;
            }
            for tail in [0usize, 1, 8, 16] {
                let junk: Vec<u8> = (0..tail).map(|i| 0x41 + i as u8).collect();
                for desc in [false, true] {
                    for key in placements(&text(&s), &int, &junk, desc) {
                        // Read whole, or up to the junk after it.
                        let read = |r: Result<()>| match r {
                            Ok(()) => true,
                            Err(e) => matches!(e.kind(), KeySerdeErrorKind::Trailing(_)),
                        };
                        if read(from_key::<(String, u16)>(&key).map(drop))
                            || read(from_key::<((String, u16),)>(&key).map(drop))
                        {
                            decoded += 1;
                        }
                        check(&key);
                        for cut in 0..key.len() {
                            check(&key[..cut]);
                        }
                        for at in 0..key.len() {
                            for v in [
                                0x00u8, 0x01, 0x02, 0x05, 0x78, 0x79, 0x7f, 0x80, 0x86, 0xfd, 0xfe,
                                0xff,
                            ] {
                                let mut bad = key.clone();
                                bad[at] = v;
                                check(&bad);
                            }
                        }
                    }
                }
            }
        }
    }
    // The intact keys of valid text decode (so the inline case is exercised).
    assert!(decoded > 1000, "{decoded}");
}

/// `De::int64`'s inline case (`int_fast`: a magnitude that fits a `u64`, at least 8 bytes
/// after the tag) and its near-end case (`Reader::int_fast_at_end`, tried first in
/// `int_general`: fewer than 8 bytes after the tag, as for the `u16` that ends most of these
/// keys) against the plain deserializer, which reads every integer through
/// `Reader::int_after_tag_masked` and an `i128`: integers at and around every class and tag
/// boundary of both signs up to the `i128` limits, and around every type's limits; at the
/// root, as a top-level element followed by another and by 0, 1 or 9 more bytes, and nested;
/// both directions; intact, cut short at every length and with any byte replaced by a tag,
/// escape or plain value; read as every integer type of at most 64 bits before a `u16`, at
/// the top level and nested, and as an `Option<u64>`.
#[test]
fn int_fast_agrees_with_int_general() {
    fn check(k: &[u8]) {
        macro_rules! each {
            ($($t:ty),*) => {
                $(
                    same::<($t, u16)>(k)
                        .and_then(|_| same::<(($t, u16),)>(k))
                        .unwrap_or_else(|e| panic!("{e}"));
                )*
            };
        }
        each!(i8, i16, i32, i64, u8, u16, u32, u64);
        same::<Option<u64>>(k).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut values: Vec<i128> = vec![0, 1, -1, 2, -2];
    for t in [
        i8::MIN as i128,
        i8::MAX as i128,
        u8::MAX as i128,
        i16::MIN as i128,
        i16::MAX as i128,
        u16::MAX as i128,
        i32::MIN as i128,
        i32::MAX as i128,
        u32::MAX as i128,
        i64::MIN as i128,
        i64::MAX as i128,
        u64::MAX as i128,
        i128::MIN,
        i128::MAX,
    ] {
        for d in -2i128..=2 {
            values.push(t.saturating_add(d));
        }
    }
    // Class starts and every tag boundary within the multi-tag classes, both signs.
    let (mut p, mut n) = (24i128, 8i128);
    values.extend([p, !p, n, !n]);
    for k in 0..=32i128 {
        values.extend([p + k * 254, !(n + k.min(8) * 254)]);
    }
    p += 32 * 254;
    n += 8 * 254;
    for k in 0..=8i128 {
        values.extend([p + k * 254 * 256, !(n + k.min(4) * 254 * 256)]);
    }
    p += 8 * 254 * 256;
    n += 4 * 254 * 256;
    let mut per = 254i128 * 256 * 256;
    for _ in 3..17 {
        values.extend([p, !p, n, !n]);
        p = p.saturating_add(per);
        n = n.saturating_add(per);
        per = per.saturating_mul(256);
    }
    let mut values: Vec<i128> = values
        .into_iter()
        .flat_map(|v| [v.saturating_sub(1), v, v.saturating_add(1)])
        .collect();
    values.sort_unstable();
    values.dedup();
    let int = to_key(&(7u16,)).unwrap();
    let mut fast = 0;
    for &v in &values {
        let el = to_key(&(v,)).unwrap();
        for tail in [0usize, 1, 9] {
            let junk: Vec<u8> = (0..tail).map(|i| 0x41 + i as u8).collect();
            for desc in [false, true] {
                for key in placements(&el, &int, &junk, desc) {
                    let read = match from_key::<(i64, u16)>(&key) {
                        Ok(_) => true,
                        Err(e) => matches!(e.kind(), KeySerdeErrorKind::Trailing(_)),
                    };
                    if read {
                        fast += 1;
                    }
                    check(&key);
                    for cut in 0..key.len() {
                        check(&key[..cut]);
                    }
                    for at in 0..key.len() {
                        for b in [0x00u8, 0x01, 0x05, 0x3c, 0x74, 0xff] {
                            let mut bad = key.clone();
                            bad[at] = b;
                            check(&bad);
                        }
                    }
                }
            }
        }
    }
    // Many intact keys decode as `(i64, u16)` (so the inline case is exercised).
    assert!(fast > 1000, "{fast}");
}

/// Keys shorter than 8 bytes (and up to 16): `Reader::int_fast_at_end` reads their integers
/// from the key zero-extended into one word (a key of fewer than 8 bytes used to take the
/// byte-by-byte general path). Keys of one and two integers (small magnitudes of both signs around class and tag
/// boundaries, and some wide ones), every direction of each field, read as several integer
/// tuples, against the plain deserializer: intact, cut at every length, and with every byte
/// replaced (by every value for one integer; by tag, escape and neighbouring values for two).
#[test]
fn short_keys_agree_with_int_general() {
    fn check(k: &[u8]) {
        same::<(i64,)>(k)
            .and_then(|_| same::<(u64,)>(k))
            .and_then(|_| same::<(i8,)>(k))
            .and_then(|_| same::<(u16, u64)>(k))
            .and_then(|_| same::<(i64, i32)>(k))
            .and_then(|_| same::<(u16, u64, u8)>(k))
            .and_then(|_| same::<Option<u64>>(k))
            .and_then(|_| same::<i64>(k))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let values: Vec<i64> = vec![
        0,
        1,
        23,
        24,
        25,
        277,
        278,
        8151,
        8152,
        8153,
        40_000,
        528_343,
        528_344,
        5_000_000,
        1 << 31,
        1 << 40,
        1_700_000_000_000,
        i64::MAX,
        -1,
        -7,
        -8,
        -9,
        -2040,
        -2041,
        -300_000,
        -(1 << 33),
        i64::MIN,
    ];
    let asc = Order::ASC;
    let desc = Order::DESC;
    let mut short = 0;
    for &a in &values {
        for o in [asc, desc] {
            let k = to_key_with_orders(&(a,), &[o]).unwrap();
            short += usize::from(k.len() < 8);
            check(&k);
            for cut in 0..k.len() {
                check(&k[..cut]);
            }
            for at in 0..k.len() {
                for v in 0..=255u8 {
                    let mut bad = k.clone();
                    bad[at] = v;
                    check(&bad);
                }
            }
        }
        for &b in &values {
            for (oa, ob) in [(asc, asc), (asc, desc), (desc, asc), (desc, desc)] {
                let k = to_key_with_orders(&(a, b), &[oa, ob]).unwrap();
                if k.len() > 16 {
                    continue;
                }
                short += usize::from(k.len() < 8);
                check(&k);
                for cut in 0..k.len() {
                    check(&k[..cut]);
                }
                for at in 0..k.len() {
                    for v in [
                        0x00u8, 0x01, 0x02, 0x05, 0x3c, 0x74, 0x7f, 0x80, 0x86, 0xfd, 0xfe, 0xff,
                    ] {
                        let mut bad = k.clone();
                        bad[at] = v;
                        check(&bad);
                        bad[at] = k[at].wrapping_add(1);
                        check(&bad);
                    }
                }
            }
        }
    }
    // Many keys are shorter than 8 bytes (so the short-key read is exercised).
    assert!(short > 200, "{short}");
}
