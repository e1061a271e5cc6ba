//! The namespace schemes: the vectors of `vectors/namespaces.json` byte for byte, and for each
//! scheme a module named after the properties of the key-namespacing note that it has
//! (1 any length and bytes, 2 collision resistance, 3 order within a namespace, 4 order of
//! namespaces, 5 multi-level). Each claimed property is a property test against an obvious
//! model; each missing one is shown by a concrete counterexample.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use strata_key::namespace::{
    from_asciihex, join, namespace_with_key, to_asciihex, to_length_prefixed,
    to_length_prefixed_nested, unjoin, AsciiHex, Escaped, LengthPrefixed, NamespaceError,
    Namespaced, Namespacing,
};

type Path = Vec<Vec<u8>>;

fn refs(path: &[Vec<u8>]) -> Vec<&[u8]> {
    path.iter().map(Vec::as_slice).collect()
}

fn enc(scheme: &dyn Namespacing, path: &[Vec<u8>], key: &[u8]) -> Vec<u8> {
    scheme.encode(&refs(path), key).unwrap()
}

/// Bytes that make collisions and prefix relations likely: 0x00, the separator and escape
/// bytes, two letters; sometimes any byte.
fn component() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => proptest::collection::vec(
            prop::sample::select(vec![0x00u8, 0x01, 0x02, 0x30, 0x61, 0x62, 0xfe, 0xff]),
            0..4
        ),
        1 => proptest::collection::vec(any::<u8>(), 0..12),
    ]
}

fn path(max_depth: usize) -> impl Strategy<Value = Path> {
    proptest::collection::vec(component(), 0..=max_depth)
}

/// The list `[n1, …, nm, key]`: the order that the self-delimiting schemes embed.
fn as_list(path: &[Vec<u8>], key: &[u8]) -> Vec<Vec<u8>> {
    let mut list = path.to_vec();
    list.push(key.to_vec());
    list
}

fn split_list(mut list: Vec<Vec<u8>>) -> (Path, Vec<u8>) {
    let key = list.pop().unwrap_or_default();
    (list, key)
}

/// A list `[n1, …, nm, key]` (m ≥ 1) and a second one at the same depth made by moving bytes
/// across one boundary (`foo:bar` → `fo:obar`). Random pairs rarely collide; these are the
/// pairs a weak scheme confuses.
fn shifted_pair(max_depth: usize) -> impl Strategy<Value = ((Path, Vec<u8>), (Path, Vec<u8>))> {
    (
        proptest::collection::vec(component(), 2..=max_depth + 1),
        any::<usize>(),
        any::<usize>(),
        any::<bool>(),
    )
        .prop_map(|(list, i, n, leftwards)| {
            let i = i % (list.len() - 1);
            let mut other = list.clone();
            if leftwards {
                let n = n % (other[i + 1].len() + 1);
                let moved: Vec<u8> = other[i + 1].drain(..n).collect();
                other[i].extend(moved);
            } else {
                let n = n % (other[i].len() + 1);
                let at = other[i].len() - n;
                let moved: Vec<u8> = other[i].drain(at..).collect();
                other[i + 1].splice(0..0, moved);
            }
            (split_list(list), split_list(other))
        })
}

/// A list and a second one, one level shallower, made by merging two neighbours with bytes
/// between them that look like a separator of some scheme (`[a, b, c]` → `[a, "b\0\x01c"]`).
fn merged_pair(max_depth: usize) -> impl Strategy<Value = ((Path, Vec<u8>), (Path, Vec<u8>))> {
    let junk: Vec<&'static [u8]> = vec![
        b"",
        b"\x00",
        b"\x00\x01",
        b"\x00\xff",
        b"\x01",
        b"\x00\x00",
        b"00",
        b"\x00\x02",
    ];
    (
        proptest::collection::vec(component(), 2..=max_depth + 1),
        any::<usize>(),
        prop::sample::select(junk),
    )
        .prop_map(|(list, i, junk)| {
            let i = i % (list.len() - 1);
            let mut other = list.clone();
            let next = other.remove(i + 1);
            other[i].extend_from_slice(junk);
            other[i].extend(next);
            (split_list(list), split_list(other))
        })
}

/// Decodes a byte string taken from JSON hex.
fn unhex(s: &serde_json::Value) -> Vec<u8> {
    hex::decode(s.as_str().unwrap()).unwrap()
}

mod vectors {
    use super::*;

    fn load() -> serde_json::Value {
        serde_json::from_str(include_str!("../../../vectors/namespaces.json")).unwrap()
    }

    fn cases<'a>(
        v: &'a serde_json::Value,
        group: &str,
    ) -> impl Iterator<Item = (Path, Vec<u8>, Vec<u8>)> + 'a {
        let list = v[group].as_array().unwrap();
        assert!(!list.is_empty(), "no vectors in {group}");
        list.iter().map(|case| {
            let path: Path = case["namespaces"]
                .as_array()
                .unwrap()
                .iter()
                .map(unhex)
                .collect();
            (path, unhex(&case["key"]), unhex(&case["hex"]))
        })
    }

    #[test]
    fn length_prefixed_u16be_both_directions() {
        let v = load();
        let mut n = 0;
        for (path, key, bytes) in cases(&v, "length_prefixed_u16be") {
            let scheme = LengthPrefixed::new(path.len());
            assert_eq!(enc(&scheme, &path, &key), bytes, "encode {path:?} {key:?}");
            assert_eq!(namespace_with_key(&refs(&path), &key).unwrap(), bytes);
            let decoded = scheme.decode(&bytes).unwrap();
            assert_eq!(
                decoded,
                Namespaced {
                    namespaces: path,
                    key
                },
                "decode"
            );
            n += 1;
        }
        assert_eq!(n, 7);
    }

    #[test]
    fn asciihex_00_both_directions() {
        let v = load();
        let mut n = 0;
        for (path, key, bytes) in cases(&v, "asciihex_00") {
            assert_eq!(enc(&AsciiHex, &path, &key), bytes);
            let decoded = AsciiHex.decode(&bytes).unwrap();
            assert_eq!(
                decoded,
                Namespaced {
                    namespaces: path,
                    key
                }
            );
            n += 1;
        }
        assert_eq!(n, 2);
    }

    #[test]
    fn join_00_both_directions() {
        let v = load();
        let list = v["join_00"].as_array().unwrap();
        assert_eq!(list.len(), 3);
        for case in list {
            let parts: Vec<Vec<u8>> = case["parts"]
                .as_array()
                .unwrap()
                .iter()
                .map(unhex)
                .collect();
            let bytes = unhex(&case["hex"]);
            assert_eq!(join(&refs(&parts)).unwrap(), bytes);
            let back: Vec<Vec<u8>> = unjoin(&bytes).into_iter().map(<[u8]>::to_vec).collect();
            assert_eq!(back, parts);
        }
    }

    #[test]
    fn cosmwasm_repo_tests() {
        assert_eq!(to_length_prefixed(b"").unwrap(), [0, 0]);
        assert_eq!(to_length_prefixed(b"a").unwrap(), [0, 1, b'a']);
        assert_eq!(to_length_prefixed(&[0; 256]).unwrap()[..2], [1, 0]);
        assert_eq!(to_length_prefixed(&[0; 30000]).unwrap()[..2], [0x75, 0x30]);
        assert_eq!(to_length_prefixed(&[0; 12345]).unwrap()[..2], [0x30, 0x39]);
        assert_eq!(to_length_prefixed(&[7; 0xffff]).unwrap()[..2], [0xff, 0xff]);
        assert_eq!(
            to_length_prefixed_nested(&[b"a", b"ab", b"abc"]).unwrap(),
            b"\x00\x01a\x00\x02ab\x00\x03abc"
        );
        // cw-storage-plus map.rs: triple/(john, 8u8, pedro).
        assert_eq!(
            namespace_with_key(&[b"triple", b"john", &[8]], b"pedro").unwrap(),
            b"\x00\x06triple\x00\x04john\x00\x01\x08pedro"
        );
    }

    #[test]
    fn asciihex_repo_tests() {
        assert_eq!(to_asciihex(&[0xa0, 0x0a]), b"a00a");
        assert_eq!(from_asciihex(b"a00a").unwrap(), [0xa0, 0x0a]);
        assert!(from_asciihex(b"A00A").is_err());
        assert!(from_asciihex(b"a0a").is_err());
        assert_eq!(join(&[]).unwrap(), b"");
        assert_eq!(join(&[b""]).unwrap(), b"");
        assert_eq!(
            join(&[b"a\x00"]),
            Err(NamespaceError::SeparatorInPart {
                index: 0,
                offset: 1
            })
        );
    }
}

/// Naive concatenation `namespace ‖ key` has no property 2; every scheme here fixes that.
mod naive_concatenation_fails_property_2 {
    use super::*;

    fn naive(namespace: &[u8], key: &[u8]) -> Vec<u8> {
        [namespace, key].concat()
    }

    #[test]
    fn foo_bar_collides_with_fo_obar() {
        assert_eq!(naive(b"foo", b"bar"), naive(b"fo", b"obar"));
        let lp = LengthPrefixed::new(1);
        let schemes: [&dyn Namespacing; 3] = [&lp, &AsciiHex, &Escaped];
        for s in schemes {
            assert_ne!(
                s.encode(&[b"foo"], b"bar").unwrap(),
                s.encode(&[b"fo"], b"obar").unwrap(),
                "{}",
                s.name()
            );
        }
    }
}

/// Range-scan model check shared by the schemes: a scan of `prefix_range(prefix)` over the
/// encoded keys returns exactly the keys `expected` selects, in encoding order.
fn check_scan(
    scheme: &dyn Namespacing,
    keys: &[(Path, Vec<u8>)],
    prefix: &[Vec<u8>],
    expected: impl Fn(&Namespaced) -> bool,
) -> Result<(), TestCaseError> {
    let stored: BTreeMap<Vec<u8>, Namespaced> = keys
        .iter()
        .map(|(p, k)| (enc(scheme, p, k), Namespaced::new(&refs(p), k)))
        .collect();
    let range = scheme.prefix_range(&refs(prefix)).unwrap();
    let scanned: BTreeSet<Namespaced> = stored.range(range).map(|(_, v)| v.clone()).collect();
    let want: BTreeSet<Namespaced> = stored.values().filter(|n| expected(n)).cloned().collect();
    prop_assert_eq!(scanned, want);
    Ok(())
}

/// Pick a scan prefix: often a real path prefix of a stored key, sometimes random.
fn scan_prefix(keys: &[(Path, Vec<u8>)], pick: usize, cut: usize, random: &Path) -> Path {
    if keys.is_empty() || pick % 4 == 3 {
        return random.clone();
    }
    let p = &keys[pick % keys.len()].0;
    p[..cut.min(p.len())].to_vec()
}

/// LengthPrefixed (CosmWasm): properties 1 (namespaces up to 65535 bytes each), 2 (among keys
/// of one depth), 3 and 5 hold. Property 4 does not: namespaces sort by length first. Property
/// 2 does not hold across depths, which is why an instance has a fixed depth.
mod length_prefixed_has_1_2_3_5_not_4 {
    use super::*;

    /// Component lists of a fixed depth with their keys.
    fn keys_at_depth() -> impl Strategy<Value = (usize, Vec<(Path, Vec<u8>)>)> {
        (0usize..=3).prop_flat_map(|d| {
            (
                Just(d),
                proptest::collection::vec(
                    (proptest::collection::vec(component(), d), component()),
                    0..40,
                ),
            )
        })
    }

    /// Shortlex model: per component (length, bytes), then the key.
    fn model(path: &[Vec<u8>], key: &[u8]) -> (Vec<(usize, Vec<u8>)>, Vec<u8>) {
        (
            path.iter().map(|c| (c.len(), c.clone())).collect(),
            key.to_vec(),
        )
    }

    proptest! {
        #[test]
        fn p1_any_bytes_round_trip(p in path(4), k in proptest::collection::vec(any::<u8>(), 0..40)) {
            let s = LengthPrefixed::new(p.len());
            let bytes = enc(&s, &p, &k);
            prop_assert_eq!(bytes.len(), k.len() + p.iter().map(|c| c.len() + 2).sum::<usize>());
            prop_assert_eq!(s.decode(&bytes).unwrap(), Namespaced::new(&refs(&p), &k));
        }

        #[test]
        fn p2_no_collisions_at_one_depth(d in 0usize..=3, a in proptest::collection::vec(component(), 3),
                                         b in proptest::collection::vec(component(), 3),
                                         ka in component(), kb in component()) {
            let s = LengthPrefixed::new(d);
            let (pa, pb) = (&a[..d], &b[..d]);
            prop_assert_eq!(enc(&s, pa, &ka) == enc(&s, pb, &kb), (pa, &ka) == (pb, &kb));
        }

        #[test]
        fn p2_no_collisions_when_bytes_cross_a_boundary((a, b) in shifted_pair(3)) {
            let s = LengthPrefixed::new(a.0.len());
            prop_assert_eq!(enc(&s, &a.0, &a.1) == enc(&s, &b.0, &b.1), a == b);
        }

        #[test]
        fn p3_order_within_a_namespace(p in path(3), k1 in component(), k2 in component()) {
            let s = LengthPrefixed::new(p.len());
            prop_assert_eq!(enc(&s, &p, &k1).cmp(&enc(&s, &p, &k2)), k1.cmp(&k2));
        }

        /// The order it has instead of property 4: each namespace component by (length, bytes).
        #[test]
        fn p4_replaced_by_length_first_order(d in 0usize..=3, a in proptest::collection::vec(component(), 3),
                                              b in proptest::collection::vec(component(), 3),
                                              ka in component(), kb in component()) {
            let s = LengthPrefixed::new(d);
            let (pa, pb) = (&a[..d], &b[..d]);
            prop_assert_eq!(enc(&s, pa, &ka).cmp(&enc(&s, pb, &kb)), model(pa, &ka).cmp(&model(pb, &kb)));
        }

        /// Property 5 with prefix scans: a scan of the range of leading components returns
        /// exactly the keys whose path starts with them (keys all have the instance's depth).
        #[test]
        fn p5_prefix_range_scans_exactly_the_namespace((d, keys) in keys_at_depth(), pick in 0usize..64,
                                                        cut in 0usize..4, random in path(3)) {
            let s = LengthPrefixed::new(d);
            let mut prefix = scan_prefix(&keys, pick, cut, &random);
            prefix.truncate(d);
            check_scan(&s, &keys, &prefix, |n| n.namespaces.starts_with(&prefix))?;
        }

        #[test]
        fn decode_is_total_and_canonical(d in 0usize..=3, bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            let s = LengthPrefixed::new(d);
            if let Ok(n) = s.decode(&bytes) {
                prop_assert_eq!(enc(&s, &n.namespaces, &n.key), bytes);
            }
        }
    }

    #[test]
    fn p1_limit_is_65535_bytes_per_namespace_key_unlimited() {
        let max = vec![0xab; 0xffff];
        let s = LengthPrefixed::new(1);
        let bytes = s.encode(&[&max], b"k").unwrap();
        assert_eq!(&bytes[..2], &[0xff, 0xff]);
        assert_eq!(s.decode(&bytes).unwrap().namespaces[0], max);
        let too_long = vec![0; 0x10000];
        let err = LengthPrefixed::new(2)
            .encode(&[b"ok", &too_long], b"k")
            .unwrap_err();
        assert_eq!(
            err,
            NamespaceError::ComponentTooLong {
                scheme: "length-prefixed",
                index: 1,
                len: 0x10000,
                max: 0xffff
            }
        );
        assert!(err.to_string().contains("component 1 is 65536 bytes"));
        assert!(to_length_prefixed(&too_long).is_err());
        let mut out = b"keep".to_vec();
        assert!(LengthPrefixed::new(1)
            .encode_into(&[&too_long], b"", &mut out)
            .is_err());
        assert_eq!(out, b"keep", "output untouched on error");
        let long_key = vec![1; 70_000];
        assert_eq!(
            LengthPrefixed::new(0).encode(&[], &long_key).unwrap(),
            long_key
        );
    }

    #[test]
    fn p2_fails_across_depths() {
        // The key is raw, so it can look like one more length-prefixed level.
        let one = LengthPrefixed::new(1)
            .encode(&[b"a"], b"\x00\x01bx")
            .unwrap();
        let two = LengthPrefixed::new(2).encode(&[b"a", b"b"], b"x").unwrap();
        assert_eq!(one, two);
        // Which is why one instance refuses other depths.
        assert_eq!(
            LengthPrefixed::new(2).encode(&[b"a"], b"k"),
            Err(NamespaceError::WrongDepth {
                scheme: "length-prefixed",
                depth: 2,
                got: 1
            })
        );
    }

    #[test]
    fn p4_fails_zing_before_grow1() {
        // cw-storage-plus issue 4: primary keys ("zing", "5630") and ("grow1", "5627").
        let s = LengthPrefixed::new(1);
        let zing = s.encode(&[b"zing"], b"5630").unwrap();
        let grow1 = s.encode(&[b"grow1"], b"5627").unwrap();
        assert!(b"grow1".as_slice() < b"zing".as_slice());
        assert!(zing < grow1, "length first: 00 04 zing < 00 05 grow1");
        // The same at the second level, and "b" < "aa".
        let s = LengthPrefixed::new(2);
        assert!(s.encode(&[b"t", b"b"], b"").unwrap() < s.encode(&[b"t", b"aa"], b"").unwrap());
    }

    #[test]
    fn decode_errors_name_the_offset() {
        let s = LengthPrefixed::new(2);
        let err = s.decode(b"\x00\x01a\x00").unwrap_err();
        assert!(
            matches!(err, NamespaceError::Decode { offset: 3, .. }),
            "{err}"
        );
        let err = s.decode(b"\x00\x01a\x00\x05ab").unwrap_err();
        assert!(
            matches!(err, NamespaceError::Decode { offset: 5, .. }),
            "{err}"
        );
        assert!(
            err.to_string().contains("claims 5 bytes, only 2 remain"),
            "{err}"
        );
        assert!(LengthPrefixed::new(1).decode(b"").is_err());
        assert_eq!(
            LengthPrefixed::new(0).decode(b"").unwrap(),
            Namespaced::default()
        );
        assert!(s.prefix(&[b"a", b"b", b"c"]).is_err());
    }
}

/// Properties 2–5 of a self-delimiting scheme in one statement: the encoding is an order
/// embedding of the list `[n1, …, nm, key]` (injective, and byte order = list order).
fn list_order_embedding(
    s: &dyn Namespacing,
    (pa, ka): &(Path, Vec<u8>),
    (pb, kb): &(Path, Vec<u8>),
) -> Result<(), TestCaseError> {
    let (ea, eb) = (enc(s, pa, ka), enc(s, pb, kb));
    prop_assert_eq!(ea.cmp(&eb), as_list(pa, ka).cmp(&as_list(pb, kb)));
    Ok(())
}

/// Property 4 on its own: two namespaces, neither a prefix of the other (same depth included),
/// order all their keys as the namespaces order.
fn namespaces_order(
    s: &dyn Namespacing,
    pa: &Path,
    pb: &Path,
    ka: &[u8],
    kb: &[u8],
) -> Result<(), TestCaseError> {
    prop_assume!(!pa.starts_with(pb) && !pb.starts_with(pa));
    prop_assert_eq!(enc(s, pa, ka).cmp(&enc(s, pb, kb)), pa.cmp(pb));
    Ok(())
}

fn mixed_depth_keys() -> impl Strategy<Value = Vec<(Path, Vec<u8>)>> {
    proptest::collection::vec((path(3), component()), 0..40)
}

macro_rules! self_delimiting_properties {
    ($scheme:expr) => {
        proptest! {
            #[test]
            fn p1_any_bytes_round_trip(p in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..5),
                                       k in proptest::collection::vec(any::<u8>(), 0..40)) {
                let bytes = enc(&$scheme, &p, &k);
                prop_assert_eq!($scheme.decode(&bytes).unwrap(), Namespaced::new(&refs(&p), &k));
            }

            #[test]
            fn p2_no_collisions_at_any_depths(a in (path(3), component()), b in (path(3), component())) {
                prop_assert_eq!(enc(&$scheme, &a.0, &a.1) == enc(&$scheme, &b.0, &b.1), a == b);
            }

            #[test]
            fn p2_no_collisions_when_bytes_cross_a_boundary((a, b) in shifted_pair(3)) {
                prop_assert_eq!(enc(&$scheme, &a.0, &a.1) == enc(&$scheme, &b.0, &b.1), a == b);
            }

            #[test]
            fn p2_no_collisions_when_levels_merge((a, b) in merged_pair(3)) {
                prop_assert_ne!(enc(&$scheme, &a.0, &a.1), enc(&$scheme, &b.0, &b.1));
            }

            #[test]
            fn p3_order_within_a_namespace(p in path(3), k1 in component(), k2 in component()) {
                prop_assert_eq!(enc(&$scheme, &p, &k1).cmp(&enc(&$scheme, &p, &k2)), k1.cmp(&k2));
            }

            #[test]
            fn p4_order_of_namespaces(pa in path(3), pb in path(3), ka in component(), kb in component()) {
                namespaces_order(&$scheme, &pa, &pb, &ka, &kb)?;
            }

            #[test]
            fn p4_order_of_namespaces_same_depth(d in 1usize..=3, a in proptest::collection::vec(component(), 3),
                                                 b in proptest::collection::vec(component(), 3),
                                                 ka in component(), kb in component()) {
                let (pa, pb) = (a[..d].to_vec(), b[..d].to_vec());
                prop_assume!(pa != pb);
                namespaces_order(&$scheme, &pa, &pb, &ka, &kb)?;
            }

            /// Property 5: any depth mixes with any other, and the whole order is the list order.
            #[test]
            fn p5_multi_level_order_is_list_order(a in (path(4), component()), b in (path(4), component())) {
                list_order_embedding(&$scheme, &a, &b)?;
            }

            /// A scan of a namespace's range returns its keys and those of every namespace nested
            /// below it, nothing else.
            #[test]
            fn p5_prefix_range_scans_the_namespace_subtree(keys in mixed_depth_keys(), pick in 0usize..64,
                                                           cut in 0usize..4, random in path(2)) {
                let prefix = scan_prefix(&keys, pick, cut, &random);
                check_scan(&$scheme, &keys, &prefix, |n| n.namespaces.starts_with(&prefix))?;
            }

            #[test]
            fn decode_is_total_and_canonical(bytes in proptest::collection::vec(
                prop::sample::select(vec![0x00u8, 0x01, 0x02, 0x30, 0x31, 0x61, 0x66, 0x67, 0x41, 0xff]), 0..24)) {
                if let Ok(n) = $scheme.decode(&bytes) {
                    prop_assert_eq!(enc(&$scheme, &n.namespaces, &n.key), bytes);
                }
            }
        }
    };
}

/// AsciiHex (key-namespacing): all five properties hold, at about twice the size.
mod asciihex_has_1_2_3_4_5 {
    use super::*;

    self_delimiting_properties!(AsciiHex);

    proptest! {
        #[test]
        fn size_is_twice_plus_one_per_level(p in path(4), k in component()) {
            let raw: usize = p.iter().map(Vec::len).sum::<usize>() + k.len();
            prop_assert_eq!(enc(&AsciiHex, &p, &k).len(), 2 * raw + p.len());
        }
    }

    #[test]
    fn namespace_sorts_before_its_extensions() {
        // docs/choice_of_separator.md: f, fo, foo, foo123.
        let names: [&[u8]; 4] = [b"f", b"fo", b"foo", b"foo123"];
        let encoded: Vec<Vec<u8>> = names
            .iter()
            .map(|n| AsciiHex.encode(&[n], b"zz").unwrap())
            .collect();
        assert!(encoded.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn long_components() {
        let big = vec![0u8; 70_000];
        let bytes = AsciiHex.encode(&[&big, b""], &big).unwrap();
        assert_eq!(
            AsciiHex.decode(&bytes).unwrap(),
            Namespaced::new(&[&big, b""], &big)
        );
    }

    #[test]
    fn decode_errors_name_the_offset() {
        let err = AsciiHex.decode(b"6162\x0061A2").unwrap_err();
        assert!(
            matches!(err, NamespaceError::Decode { offset: 7, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("0x41"), "{err}");
        let err = AsciiHex.decode(b"616\x0061").unwrap_err();
        assert!(
            matches!(err, NamespaceError::Decode { offset: 3, .. }),
            "{err}"
        );
        assert_eq!(AsciiHex.decode(b"").unwrap(), Namespaced::default());
        assert_eq!(
            AsciiHex.decode(b"\x00").unwrap(),
            Namespaced::new(&[b""], b"")
        );
    }
}

/// Escaped (Strata): all five properties hold, at the raw size + 2 bytes per level + 1 per
/// 0x00 byte.
mod escaped_has_1_2_3_4_5 {
    use super::*;

    self_delimiting_properties!(Escaped);

    proptest! {
        #[test]
        fn size_is_raw_plus_two_per_level_plus_zero_bytes(p in path(4), k in component()) {
            let raw: usize = p.iter().map(Vec::len).sum::<usize>() + k.len();
            let zeros = p.iter().chain(std::iter::once(&k)).flatten().filter(|&&b| b == 0).count();
            prop_assert_eq!(enc(&Escaped, &p, &k).len(), raw + 2 * p.len() + zeros);
        }
    }

    /// Why the key is escaped: a raw key would pass for one more level.
    #[test]
    fn raw_key_would_collide_across_depths() {
        let raw_key_one_level = [&b"a\x00\x01"[..], b"b\x00\x01c"].concat();
        assert_eq!(
            raw_key_one_level,
            Escaped.encode(&[b"a", b"b"], b"c").unwrap()
        );
        assert_ne!(
            Escaped.encode(&[b"a"], b"b\x00\x01c").unwrap(),
            Escaped.encode(&[b"a", b"b"], b"c").unwrap()
        );
    }

    /// Where a nested namespace's keys land among the direct keys: after the keys `≤` its name.
    #[test]
    fn nested_namespace_sits_after_keys_up_to_its_name() {
        let e = |p: &[&[u8]], k: &[u8]| Escaped.encode(p, k).unwrap();
        let nested = e(&[b"t", b"c"], b"");
        assert!(e(&[b"t"], b"b\xff") < nested);
        assert!(e(&[b"t"], b"c") < nested);
        assert!(nested < e(&[b"t", b"c"], b"\x00"));
        assert!(e(&[b"t", b"c"], b"\xff\xff") < e(&[b"t"], b"c\x00"));
        assert!(e(&[b"t", b"c"], b"\xff\xff") < e(&[b"t"], b"ca"));
    }

    #[test]
    fn long_components() {
        let big: Vec<u8> = (0..70_000u32).map(|i| (i % 3) as u8).collect();
        let bytes = Escaped.encode(&[&big, b""], &big).unwrap();
        assert_eq!(
            Escaped.decode(&bytes).unwrap(),
            Namespaced::new(&[&big, b""], &big)
        );
    }

    #[test]
    fn decode_errors_name_the_offset() {
        let err = Escaped.decode(b"ab\x00\x02").unwrap_err();
        assert!(
            matches!(err, NamespaceError::Decode { offset: 3, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("0x02"), "{err}");
        let err = Escaped.decode(b"ab\x00\x01c\x00").unwrap_err();
        assert!(
            matches!(err, NamespaceError::Decode { offset: 5, .. }),
            "{err}"
        );
        assert_eq!(Escaped.decode(b"").unwrap(), Namespaced::default());
        assert_eq!(
            Escaped.decode(b"\x00\x01").unwrap(),
            Namespaced::new(&[b""], b"")
        );
    }

    #[test]
    fn root_range_is_everything() {
        let (start, end) = Escaped.prefix_range(&[]).unwrap();
        assert_eq!(start, std::ops::Bound::Included(vec![]));
        assert_eq!(end, std::ops::Bound::Unbounded);
    }
}
