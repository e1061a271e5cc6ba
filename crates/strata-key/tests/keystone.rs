//! KeystoneDB keys: the length-prefixed format byte for byte (book chapter 5 and kstone-core
//! 0.1.0), the real stripe values, where the length-prefixed order departs from byte order, and
//! the order-preserving encoding Strata stores.

use std::num::NonZeroU32;

use proptest::prelude::*;
use strata_key::codec::native::{NativeCodec, Order};
use strata_key::keystone::{stripe, stripe_of, Key, KeystoneError, STRIPES};
use strata_key::{TupleCodec, Value};

fn part() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => proptest::collection::vec(
            prop::sample::select(vec![0x00u8, 0x01, 0x23, 0x61, 0x62, 0xfe, 0xff]),
            0..5
        ),
        1 => proptest::collection::vec(any::<u8>(), 0..20),
    ]
}

fn key() -> impl Strategy<Value = Key> {
    (part(), proptest::option::of(part())).prop_map(|(pk, sk)| Key { pk, sk })
}

/// A key as KeystoneDB stores it: a missing and an empty sort key are the same.
fn normalized(k: &Key) -> Key {
    Key {
        pk: k.pk.clone(),
        sk: k.sk.clone().filter(|s| !s.is_empty()),
    }
}

mod length_prefixed_format {
    use super::*;

    #[test]
    fn book_examples_byte_for_byte() {
        assert_eq!(
            hex::encode(Key::new("user#123").encode().unwrap()),
            "00000008757365722331323300000000"
        );
        assert_eq!(
            hex::encode(Key::with_sk("user#123", "post#001").encode().unwrap()),
            "00000008757365722331323300000008706f737423303031"
        );
        assert_eq!(Key::new("").encode().unwrap(), [0; 8]);
    }

    #[test]
    fn missing_and_empty_sort_key_are_the_same_bytes() {
        let none = Key::new("pk").encode().unwrap();
        let empty = Key::with_sk("pk", "").encode().unwrap();
        assert_eq!(none, empty);
        assert_eq!(Key::decode(&empty).unwrap(), Key::new("pk"));
    }

    #[test]
    fn decode_errors_name_the_offset() {
        let cases: [(&[u8], usize, &str); 6] = [
            (b"", 0, "truncated partition key length"),
            (b"\x00\x00\x01", 0, "need 4 bytes, have 3"),
            (b"\x00\x00\x00\x05ab", 4, "claims 5 bytes, only 2 remain"),
            (b"\x00\x00\x00\x01a\x00\x00", 5, "truncated sort key length"),
            (
                b"\x00\x00\x00\x01a\xff\xff\xff\xffxyz",
                9,
                "claims 4294967295 bytes",
            ),
            (b"\x00\x00\x00\x01a\x00\x00\x00\x00!", 9, "1 trailing bytes"),
        ];
        for (bytes, offset, text) in cases {
            match Key::decode(bytes) {
                Err(err @ KeystoneError::Decode { offset: o, .. }) => {
                    assert_eq!(o, offset, "{err}");
                    assert!(err.to_string().contains(text), "{err}");
                }
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
    }

    /// The order KeystoneDB's memtable and SSTs iterate in: lengths first.
    #[test]
    fn encoded_order_departs_from_byte_order() {
        let enc = |k: &Key| k.encode().unwrap();
        // Partition keys: "aa" < "b" as bytes, but "b" (length 1) sorts first encoded.
        let (b, aa) = (Key::new("b"), Key::new("aa"));
        assert!(aa < b);
        assert!(enc(&b) < enc(&aa));
        // Sort keys under one partition, KeystoneDB's probe: b, c, aa, ab instead of aa, ab, b, c.
        let mut sks: Vec<Key> = ["b", "aa", "c", "ab"]
            .iter()
            .map(|s| Key::with_sk("p", *s))
            .collect();
        sks.sort_by_key(enc);
        let order: Vec<&[u8]> = sks.iter().map(|k| k.sk.as_deref().unwrap()).collect();
        assert_eq!(order, [&b"b"[..], b"c", b"aa", b"ab"]);
        // The book's own example order holds only because the lengths are equal.
        let book = [
            Key::new("user#123"),
            Key::with_sk("user#123", "post#001"),
            Key::with_sk("user#123", "post#002"),
            Key::new("user#124"),
            Key::with_sk("user#124", "post#001"),
        ];
        assert!(book.windows(2).all(|w| enc(&w[0]) < enc(&w[1])));
        // user#99 vs user#100: bytes say 100 first, KeystoneDB says 99 first.
        assert!(Key::new("user#100") < Key::new("user#99"));
        assert!(enc(&Key::new("user#99")) < enc(&Key::new("user#100")));
    }

    proptest! {
        #[test]
        fn round_trip(k in key()) {
            let bytes = k.encode().unwrap();
            prop_assert_eq!(bytes.len(), 8 + k.pk.len() + k.sk.as_ref().map_or(0, Vec::len));
            prop_assert_eq!(Key::decode(&bytes).unwrap(), normalized(&k));
        }

        /// The exact order of the encoding: (len pk, pk, len sk, sk).
        #[test]
        fn order_is_length_first(a in key(), b in key()) {
            let model = |k: &Key| {
                let sk = k.sk.clone().unwrap_or_default();
                (k.pk.len(), k.pk.clone(), sk.len(), sk)
            };
            prop_assert_eq!(a.encode().unwrap().cmp(&b.encode().unwrap()), model(&a).cmp(&model(&b)));
        }

        #[test]
        fn decode_is_total_and_canonical(bytes in proptest::collection::vec(
            prop::sample::select(vec![0u8, 1, 2, 3, 0x61, 0xff]), 0..20)) {
            if let Ok(k) = Key::decode(&bytes) {
                prop_assert_eq!(k.encode().unwrap(), bytes);
            }
        }
    }
}

mod stripes {
    use super::*;

    #[test]
    fn real_values() {
        assert_eq!(Key::new("user#1").stripe(), 154);
        assert_eq!(Key::new("user#2").stripe(), 32);
        assert_eq!(Key::new("user#3").stripe(), 182);
        assert_eq!(crc32fast::hash(b"user#1") % 256, 154);
        assert_eq!(stripe(b"user#1"), 154);
    }

    #[test]
    fn sort_key_plays_no_part() {
        let a = Key::new("user#123");
        assert_eq!(a.stripe(), Key::with_sk("user#123", "post#001").stripe());
        assert_eq!(a.stripe(), Key::with_sk("user#123", "post#002").stripe());
    }

    #[test]
    fn ten_thousand_users_spread_over_all_stripes() {
        let mut counts = [0u32; 256];
        for i in 0..10_000 {
            counts[usize::from(stripe(format!("user#{i}").as_bytes()))] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        // Average 39; binomial spread, nothing empty or doubled.
        assert!(*min >= 15 && *max <= 70, "min {min} max {max}");
    }

    proptest! {
        #[test]
        fn stripe_of_generalizes_stripe(pk in part(), n in 1u32..1000) {
            let n = NonZeroU32::new(n).unwrap();
            prop_assert!(stripe_of(&pk, n) < n.get());
            prop_assert_eq!(stripe_of(&pk, n), crc32fast::hash(&pk) % n.get());
            let all = NonZeroU32::new(STRIPES).unwrap();
            prop_assert_eq!(stripe_of(&pk, all), u32::from(stripe(&pk)));
        }
    }
}

mod ordered_encoding {
    use super::*;

    #[test]
    fn is_the_native_tuple() {
        let codec = NativeCodec::new();
        let k = Key::with_sk("user#1", "post#1");
        assert_eq!(
            k.encode_ordered().unwrap(),
            codec
                .encode(&[
                    Value::Bytes(b"user#1".to_vec()),
                    Value::Bytes(b"post#1".to_vec())
                ])
                .unwrap()
        );
        assert_eq!(
            Key::new("user#1").encode_ordered().unwrap(),
            codec.encode(&[Value::Bytes(b"user#1".to_vec())]).unwrap()
        );
    }

    #[test]
    fn byte_order_where_keystone_used_length_order() {
        let ord = |k: Key| k.encode_ordered().unwrap();
        assert!(ord(Key::new("aa")) < ord(Key::new("b")));
        assert!(ord(Key::with_sk("p", "aa")) < ord(Key::with_sk("p", "b")));
        assert!(ord(Key::new("user#100")) < ord(Key::new("user#99")));
        // And, unlike KeystoneDB, no sort key and an empty one stay apart.
        assert!(ord(Key::new("p")) < ord(Key::with_sk("p", "")));
    }

    #[test]
    fn decode_rejects_other_tuples() {
        let codec = NativeCodec::new();
        let wrong = [
            vec![],
            vec![Value::from(1)],
            vec![Value::Bytes(vec![1]), Value::from("text")],
            vec![
                Value::Bytes(vec![]),
                Value::Bytes(vec![]),
                Value::Bytes(vec![]),
            ],
        ];
        for tuple in wrong {
            let bytes = codec.encode(&tuple).unwrap();
            assert!(
                matches!(Key::decode_ordered(&bytes), Err(KeystoneError::NotAKey(_))),
                "{tuple:?}"
            );
        }
        assert!(Key::decode_ordered(b"\xff\xff\xff").is_err());
        // A descending element is another encoding of the same bytes: refused.
        let desc = NativeCodec::with_orders(vec![Order {
            descending: true,
            nulls_last: false,
        }])
        .encode(&[Value::Bytes(b"pk".to_vec())])
        .unwrap();
        assert!(matches!(
            Key::decode_ordered(&desc),
            Err(KeystoneError::OrderedDecode(_))
        ));
    }

    proptest! {
        #[test]
        fn order_is_pk_sk_tuple_order(a in key(), b in key()) {
            prop_assert_eq!(a.encode_ordered().unwrap().cmp(&b.encode_ordered().unwrap()), a.cmp(&b));
        }

        #[test]
        fn round_trip(k in key()) {
            prop_assert_eq!(Key::decode_ordered(&k.encode_ordered().unwrap()).unwrap(), k);
        }

        /// All keys of one partition are one byte range (a Query is a prefix scan).
        #[test]
        fn partition_is_a_prefix(pk in part(), sk in part()) {
            let with_sk = Key { pk: pk.clone(), sk: Some(sk) }.encode_ordered().unwrap();
            let alone = Key::new(pk).encode_ordered().unwrap();
            prop_assert!(with_sk.starts_with(&alone));
            prop_assert!(alone < with_sk);
        }
    }
}
