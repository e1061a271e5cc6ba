use super::*;
use crate::codec::native::put_escaped;
use crate::codec::native::NativeCodec;
use crate::{tuple, TupleCodec, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The ASCII fast path of text decoding (which skips UTF-8 validation) agrees with
/// `String::from_utf8` for every byte value at every position of strings of 0 to 19 bytes,
/// ascending and descending, followed by an element whose bytes have the high bit set
/// (so the lanes past the string are never taken for content).
#[test]
fn text_ascii_fast_path_validates() {
    let follow = "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}".to_string();
    for len in 1..20 {
        for at in 0..len {
            for b in 0..=255u8 {
                let mut s: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                s[at] = b;
                for desc in [false, true] {
                    let mut k = vec![TAG_TEXT];
                    put_escaped(&mut k, &s);
                    if desc {
                        k.iter_mut().for_each(|x| *x = !*x);
                    }
                    k.extend(to_key(&(follow.as_str(),)).unwrap());
                    let got = from_key::<(String, String)>(&k);
                    match String::from_utf8(s.clone()) {
                        Ok(want) => assert_eq!(got.unwrap(), (want, follow.clone())),
                        Err(_) => assert!(got.is_err(), "{s:?} decoded"),
                    }
                }
            }
        }
    }
    assert_eq!(from_key::<String>(&to_key(&"").unwrap()).unwrap(), "");
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
enum Kind {
    A,
    B(i32),
    C { x: String, y: Option<u8> },
    D(u8, u8),
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
struct Key {
    tenant: u16,
    name: String,
    ts: i64,
    id: Option<u64>,
    inner: (bool, f64),
    kind: Kind,
    tags: Vec<String>,
    map: BTreeMap<String, i32>,
}

fn sample(kind: Kind) -> Key {
    Key {
        tenant: 3,
        name: "a\0\u{1}b".into(),
        ts: -5,
        id: None,
        inner: (true, -0.0),
        kind,
        tags: vec!["x".into(), "".into()],
        map: [("k".to_string(), 1)].into_iter().collect(),
    }
}

#[test]
fn round_trip_structs_enums_maps() {
    for kind in [
        Kind::A,
        Kind::B(-7),
        Kind::C {
            x: "q".into(),
            y: Some(2),
        },
        Kind::D(1, 2),
    ] {
        let k = sample(kind);
        let bytes = to_key(&k).unwrap();
        assert_eq!(from_key::<Key>(&bytes).unwrap(), k);
        // The dynamic decoder reads the same bytes.
        let t = NativeCodec::new().decode(&bytes).unwrap();
        assert_eq!(t.len(), 8);
    }
}

#[test]
fn same_bytes_as_dynamic_tuples() {
    let k = to_key(&(1u8, "x", Some(2i64), None::<i64>, (3u8, "y"))).unwrap();
    let t = tuple!(1, "x", 2, Value::Null, tuple!(3, "y"));
    assert_eq!(k, NativeCodec::new().encode(&t).unwrap());
}

#[test]
fn descending_fields_round_trip() {
    let o = [
        Order::DESC,
        Order {
            descending: true,
            nulls_last: true,
        },
        Order::DESC,
    ];
    let v = (5u32, None::<String>, (1u8, "z".to_string()));
    let k = to_key_with_orders(&v, &o).unwrap();
    let codec = NativeCodec::with_orders(o.to_vec());
    assert_eq!(
        codec
            .encode(&tuple!(5, Value::Null, tuple!(1, "z")))
            .unwrap(),
        k
    );
    assert_eq!(
        from_key::<(u32, Option<String>, (u8, String))>(&k).unwrap(),
        v
    );
    let k2 = to_key_with_orders(&(6u32, None::<String>, (1u8, "z".to_string())), &o).unwrap();
    assert!(k2 < k);
}

#[test]
fn borrowed_strings_and_errors() {
    let k = to_key(&("plain", 1u8)).unwrap();
    let (s, _): (String, u8) = from_key(&k).unwrap();
    assert_eq!(s, "plain");
    assert!(from_key::<(String, u8, u8)>(&k).is_err());
    assert!(matches!(
        from_key::<String>(&k).map_err(KeySerdeError::into_kind),
        Err(KeySerdeErrorKind::Trailing(_))
    ));
    assert!(from_key::<(u8, u8)>(&k).is_err());
    assert!(from_key::<(i8,)>(&to_key(&(300u16,)).unwrap()).is_err());
}

/// Integer elements: errors say what and where (bad start byte, wrong kind, missing,
/// cut-off payload, out of range), and directions are read per element (a descending
/// `Option` before an ascending integer leaves no mask behind).
#[test]
fn integer_errors_say_what_and_where() {
    fn err(bytes: &[u8]) -> DecodeError {
        match from_key::<(u16, u64)>(bytes).map_err(KeySerdeError::into_kind) {
            Err(KeySerdeErrorKind::Decode(e)) => e,
            other => panic!("{bytes:02x?}: {other:?}"),
        }
    }
    let k = to_key(&(7u16, 300_000u64)).unwrap();
    assert_eq!(from_key::<(u16, u64)>(&k).unwrap(), (7, 300_000));
    let second = to_key(&(7u16,)).unwrap().len();
    for bad in [0x00u8, 0x01, 0xfe, 0xff] {
        let mut b = k.clone();
        b[second] = bad;
        let e = err(&b);
        assert_eq!(e.offset, second, "{e}");
        assert!(e.reason.contains("cannot start an element"), "{e}");
    }
    // A missing element is serde's "invalid length".
    let mut b = k[..second].to_vec();
    assert!(
        matches!(from_key::<(u16, u64)>(&b).map_err(KeySerdeError::into_kind), Err(KeySerdeErrorKind::Message(m)) if m.contains("invalid length 1"))
    );
    to_key_into(&"x", &[], &mut b).unwrap();
    let e = err(&b);
    assert_eq!(e.offset, second, "{e}");
    assert!(
        e.reason.contains("expected an integer, found tag 0x79"),
        "{e}"
    );
    for cut in second + 1..k.len() {
        let e = err(&k[..cut]);
        assert!(e.offset >= second && e.offset <= k.len(), "{e}");
    }
    let big = to_key(&(70_000u32, 1u64)).unwrap();
    let e = err(&big);
    assert_eq!(e.offset, 0, "{e}");
    assert!(e.reason.contains("out of range for u16"), "{e}");
    // Descending fields, also after a descending Option.
    let o = [Order::DESC, Order::ASC, Order::DESC];
    for v in [
        (Some(-5i32), 9u64, 3i64),
        (None, 0, -1),
        (Some(i32::MIN), u64::MAX, i64::MIN),
    ] {
        let k = to_key_with_orders(&v, &o).unwrap();
        assert_eq!(from_key::<(Option<i32>, u64, i64)>(&k).unwrap(), v);
    }
}

/// The ordered serializer with no orders: the plain path that [`to_key`] used for every key
/// before the ascending-only serializer.
fn ordered_path<T: Serialize + ?Sized>(v: &T) -> Result<Vec<u8>> {
    let mut out = vec![0xaa]; // appends after what is there
    let mut s = KeySerializer {
        out: &mut out,
        orders: &[],
        index: 0,
        level: 0,
        top_start: None,
    };
    v.serialize(&mut s)?;
    Ok(out.split_off(1))
}

mod asc_equivalence {
    use super::*;
    use proptest::prelude::*;

    /// Bytes biased to the escaped bytes (≥ 0xfc) and the code bytes, lengths around 8 and 16.
    fn bytes() -> impl Strategy<Value = serde_bytes_like::Bytes> {
        let byte = prop_oneof![
            3 => 0x20u8..0x7f,
            2 => prop_oneof![Just(0u8), Just(1), Just(2), Just(0xfb), Just(0xfc), Just(0xfd), Just(0xfe), Just(0xff)],
            1 => any::<u8>(),
        ];
        prop_oneof![
            proptest::collection::vec(byte.clone(), 0..20),
            proptest::collection::vec(byte, 0..40),
        ]
        .prop_map(serde_bytes_like::Bytes)
    }

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
        let edges: Vec<i64> = edges
            .into_iter()
            .flat_map(|e| [e, !e]) // positive start, negative start (magnitude !x)
            .collect();
        prop_oneof![
            any::<i64>(),
            -300i64..300,
            (proptest::sample::select(edges), -2i64..=2).prop_map(|(e, d)| e.saturating_add(d)),
            (0u32..63, -1i64..=1).prop_map(|(s, d)| (1i64 << s).wrapping_add(d)),
        ]
    }

    #[derive(Serialize, Debug, Clone)]
    enum E {
        Unit,
        New(i64),
        Tup(u8, String),
        Rec {
            a: Option<i32>,
            b: serde_bytes_like::Bytes,
        },
    }

    fn e() -> impl Strategy<Value = E> {
        prop_oneof![
            Just(E::Unit),
            int().prop_map(E::New),
            (any::<u8>(), ".{0,9}").prop_map(|(a, b)| E::Tup(a, b)),
            (proptest::option::of(any::<i32>()), bytes()).prop_map(|(a, b)| E::Rec { a, b }),
        ]
    }

    type Row = (
        u16,
        u64,
        String,
        i64,
        serde_bytes_like::Bytes,
        Option<(i8, Option<u32>, Vec<(bool, char)>)>,
        E,
        (f32, f64, (), Option<i128>),
        BTreeMap<String, Vec<i16>>,
    );

    fn row() -> impl Strategy<Value = Row> {
        (
            any::<u16>(),
            prop_oneof![any::<u64>(), int().prop_map(|x| x as u64)],
            ".{0,20}",
            int(),
            bytes(),
            proptest::option::of((
                any::<i8>(),
                proptest::option::of(any::<u32>()),
                proptest::collection::vec((any::<bool>(), any::<char>()), 0..3),
            )),
            e(),
            (
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
            ),
        )
            .prop_map(|(a, b, c, d, e, f, g, (h, i))| (a, b, c, d, e, f, g, h, i))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// The ascending-only serializer (`to_key`, `to_key_into` without orders) writes
        /// exactly what the ordered serializer writes with no orders and with all-ascending
        /// orders: for a whole row, for each of its fields as the root value, and appended
        /// after bytes already in the buffer.
        #[test]
        fn asc_serializer_writes_what_the_ordered_one_writes(r in row(), pre in proptest::collection::vec(any::<u8>(), 0..20)) {
            let fast = to_key(&r).unwrap();
            prop_assert_eq!(&fast, &ordered_path(&r).unwrap());
            prop_assert_eq!(&fast, &to_key_with_orders(&r, &[Order::ASC; 9]).unwrap());
            let mut out = pre.clone();
            to_key_into(&r, &[], &mut out).unwrap();
            prop_assert_eq!(&out[..pre.len()], &pre[..]);
            prop_assert_eq!(&out[pre.len()..], &fast[..]);
            macro_rules! field {
                ($($i:tt)*) => {$(
                    prop_assert_eq!(to_key(&r.$i).unwrap(), ordered_path(&r.$i).unwrap());
                    prop_assert_eq!(to_key(&(&r.$i,)).unwrap(), ordered_path(&(&r.$i,)).unwrap());
                    prop_assert_eq!(to_key(&((&r.$i,),)).unwrap(), ordered_path(&((&r.$i,),)).unwrap());
                )*};
            }
            field!(0 1 2 3 4 5 6 7 8);
        }
    }

    /// A tuple nested `d` levels deep (a newtype around a sequence).
    #[derive(Serialize, Debug, Clone)]
    struct N(Vec<N>);

    fn nest(d: usize) -> N {
        (0..d).fold(N(vec![]), |inner, _| N(vec![inner]))
    }

    /// Depth limits and errors are those of the ordered serializer (same `Result`, bytes or
    /// error message), at the root and as a field.
    #[test]
    fn asc_serializer_depth_and_errors_match() {
        for d in (0..4).chain(crate::MAX_DEPTH - 3..crate::MAX_DEPTH + 3) {
            let n = nest(d);
            assert_eq!(to_key(&n), ordered_path(&n), "{d}");
            assert_eq!(to_key(&(1u8, &n)), ordered_path(&(1u8, &n)), "{d}");
            assert_eq!(to_key(&((&n,),)), ordered_path(&((&n,),)), "{d}");
        }
        assert!(to_key(&nest(crate::MAX_DEPTH + 2)).is_err());
        let big = u128::MAX;
        assert!(to_key(&(1u8, big)).is_err());
        assert_eq!(to_key(&(1u8, big)), ordered_path(&(1u8, big)));
        assert_eq!(to_key(&big), ordered_path(&big));
        let d = crate::Decimal::from(-12i32);
        assert_eq!(to_key(&(&d, (&d,))), ordered_path(&(&d, (&d,))));
    }
}

/// A byte string that serde writes as bytes (not as a sequence of integers).
mod serde_bytes_like {
    #[derive(Debug, Clone)]
    pub(super) struct Bytes(pub(super) Vec<u8>);

    impl serde::Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&self.0)
        }
    }
}

/// The error is one pointer, so that the decoder's and encoder's small results (`()`, an
/// integer, `Option<u64>`) return in registers (`docs/bench/keys.md`, session 22: a 56-byte
/// error cost the row decode 85 instructions of 640).
#[test]
fn the_error_is_one_pointer() {
    use std::mem::size_of;
    assert_eq!(size_of::<KeySerdeError>(), size_of::<usize>());
    assert_eq!(size_of::<Result<()>>(), size_of::<usize>());
    assert_eq!(size_of::<Result<Option<u64>>>(), 2 * size_of::<usize>());
    let e = from_key::<(u8,)>(&[]).unwrap_err();
    assert!(e.to_string().contains("invalid length 0"), "{e}");
}

/// `strata_key::serde_uuid` fields are native Uuid elements: the bytes of the dynamic tuple
/// (so the Uuid order, in either direction), read back by both deserializers; a bytes element
/// of 16 bytes (a key written through `Uuid`'s own serde impl) reads too, other elements do not.
mod serde_uuid_fields {
    use super::*;
    use crate::codec::native::Order;
    use proptest::prelude::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
    struct K {
        t: u16,
        #[serde(with = "crate::serde_uuid")]
        id: uuid::Uuid,
        n: i64,
    }

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Nested {
        a: (u8, K),
    }

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Root(#[serde(with = "crate::serde_uuid")] uuid::Uuid);

    fn ids() -> impl Strategy<Value = uuid::Uuid> {
        prop_oneof![
            any::<u128>(),
            // First byte 0xfe / 0xff: the second Uuid tag.
            any::<u128>().prop_map(|x| x | (0xfe << 120)),
            Just(0u128),
            Just(u128::MAX),
        ]
        .prop_map(uuid::Uuid::from_u128)
    }

    proptest! {
        #[test]
        fn uuid_fields_are_uuid_elements(id in ids(), t: u16, n: i64, desc: bool) {
            let k = K { t, id, n };
            let orders = [Order::ASC, if desc { Order::DESC } else { Order::ASC }];
            let bytes = to_key_with_orders(&k, &orders).unwrap();
            let want = NativeCodec::with_orders(orders.to_vec())
                .encode(&tuple!(t, Value::Uuid(id), n))
                .unwrap();
            prop_assert_eq!(&bytes, &want);
            if !desc {
                prop_assert_eq!(&to_key(&k).unwrap(), &want);
            }
            prop_assert_eq!(from_key::<K>(&bytes).unwrap(), k.clone());
            prop_assert_eq!(plain_de::from_key_plain::<K>(&bytes).unwrap(), k.clone());
            // Nested, and at the root.
            let nb = to_key(&Nested { a: (1, k.clone()) }).unwrap();
            prop_assert_eq!(from_key::<Nested>(&nb).unwrap(), Nested { a: (1, k.clone()) });
            prop_assert_eq!(plain_de::from_key_plain::<Nested>(&nb).unwrap(), Nested { a: (1, k) });
            let rb = to_key(&Root(id)).unwrap();
            prop_assert_eq!(&rb, &NativeCodec::new().encode(&tuple!(Value::Uuid(id))).unwrap());
            prop_assert_eq!(from_key::<Root>(&rb).unwrap(), Root(id));
            prop_assert_eq!(plain_de::from_key_plain::<Root>(&rb).unwrap(), Root(id));
        }

        /// Damaged keys: both deserializers agree (value or error), and nothing panics.
        #[test]
        fn uuid_fields_on_noise(id in ids(), at in 0usize..40, b: u8, cut in 0usize..40) {
            let mut bytes = to_key(&K { t: 3, id, n: -5 }).unwrap();
            let i = at % bytes.len();
            bytes[i] = b;
            bytes.truncate(cut.max(1).min(bytes.len()));
            let fast = from_key::<K>(&bytes);
            let plain = plain_de::from_key_plain::<K>(&bytes);
            prop_assert_eq!(fast, plain);
        }
    }

    #[test]
    fn uuid_fields_read_16_byte_bytes_elements_and_refuse_others() {
        let id = uuid::Uuid::from_u128(0xfeed_0000_1111_2222_3333_4444_5555_6666);
        struct AsBytes<'a>(u16, &'a [u8], i64);
        impl Serialize for AsBytes<'_> {
            fn serialize<S: serde::Serializer>(
                &self,
                s: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                use serde::ser::SerializeTuple;
                struct B<'a>(&'a [u8]);
                impl Serialize for B<'_> {
                    fn serialize<S: serde::Serializer>(
                        &self,
                        s: S,
                    ) -> std::result::Result<S::Ok, S::Error> {
                        s.serialize_bytes(self.0)
                    }
                }
                let mut t = s.serialize_tuple(3)?;
                t.serialize_element(&self.0)?;
                t.serialize_element(&B(self.1))?;
                t.serialize_element(&self.2)?;
                t.end()
            }
        }
        let written = to_key(&AsBytes(9, id.as_bytes(), 1)).unwrap();
        let k = K { t: 9, id, n: 1 };
        assert_eq!(from_key::<K>(&written).unwrap(), k);
        assert_eq!(plain_de::from_key_plain::<K>(&written).unwrap(), k);
        let short = to_key(&AsBytes(9, &id.as_bytes()[..15], 1)).unwrap();
        assert!(from_key::<K>(&short).is_err());
        let text = to_key(&(9u16, "not a uuid", 1i64)).unwrap();
        let e = from_key::<K>(&text).unwrap_err();
        assert!(e.to_string().contains("expected bytes"), "{e}");
        // Other formats: a newtype struct around the 16 bytes.
        let j = serde_json::to_string(&k).unwrap();
        assert_eq!(serde_json::from_str::<K>(&j).unwrap(), k);
    }
}
