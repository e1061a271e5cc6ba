use super::*;
use proptest::strategy::Strategy as _;
use strata_key::codec::native::NativeCodec;
use strata_key::{TupleCodec, Value};

#[test]
fn names_round_trip() {
    for p in [
        Partitioner::WholeKey,
        Partitioner::FixedPrefix(4),
        Partitioner::NativeTuplePrefix(2),
    ] {
        assert_eq!(Partitioner::parse(&p.name()), Ok(p));
    }
    for bad in [
        "",
        "whole-key:1",
        "fixed-prefix",
        "fixed-prefix:",
        "native-tuple:x",
        "hash",
    ] {
        assert!(Partitioner::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn stripes_match_the_historic_routing() {
    // Before partitioners were recorded: crc32(partition) % stripes, with the table
    // partitioner cutting after two native elements and 0 for shorter keys.
    let key = NativeCodec::new()
        .encode(&[Value::Int(3), Value::Int(77), Value::from("x")])
        .unwrap();
    let two = strata_key::codec::native::prefix_len(&key, 2).unwrap();
    let p = Partitioner::NativeTuplePrefix(2);
    assert_eq!(p.stripe(&key, 256), crc32fast::hash(&key[..two]) % 256);
    assert_eq!(p.stripe(b"not a tuple", 256), crc32fast::hash(b"") % 256);
    assert_eq!(
        Partitioner::WholeKey.stripe(b"abc", 256),
        crc32fast::hash(b"abc") % 256
    );
}

#[test]
fn only_closed_partitions_make_single_stripe_ranges() {
    let f = Partitioner::FixedPrefix(2);
    assert_eq!(
        f.single_stripe(&KeyRange::prefix(b"ab"), 16),
        Some(f.stripe(b"ab", 16))
    );
    // "a" is shorter than the prefix: keys starting with it live in many stripes.
    assert_eq!(f.single_stripe(&KeyRange::prefix(b"a"), 16), None);
    assert_eq!(
        Partitioner::WholeKey.single_stripe(&KeyRange::prefix(b"ab"), 16),
        None
    );
    let point = KeyRange {
        start: Bound::Included(b"k".to_vec()),
        end: Bound::Included(b"k".to_vec()),
    };
    assert_eq!(
        Partitioner::WholeKey.single_stripe(&point, 16),
        Some(Partitioner::WholeKey.stripe(b"k", 16))
    );
}

fn enc(t: &[Value]) -> Vec<u8> {
    NativeCodec::new().encode(t).unwrap()
}

#[test]
fn hashed_names_round_trip_and_need_one_element() {
    let p = Partitioner::NativeTupleHash(2);
    assert_eq!(p.name(), "native-hash:2");
    assert_eq!(Partitioner::parse("native-hash:2"), Ok(p));
    assert!(Partitioner::parse("native-hash:0").is_err());
    assert!(Partitioner::parse("native-hash").is_err());
}

#[test]
fn hashed_stripe_is_the_high_byte_of_the_hash() {
    let p = Partitioner::NativeTupleHash(2);
    for h in [
        0i128, 1, 23, 24, 255, 256, 8151, 8152, 0x1234, 0xff00, 0xffff,
    ] {
        let k = enc(&[Value::Int(7), Value::Int(h), Value::from("x")]);
        assert_eq!(p.stripe(&k, 256), (h >> 8) as u32, "h {h}");
        assert_eq!(p.stripe(&k, 4), (h >> 14) as u32, "h {h}");
        assert_eq!(p.stripe(&k, 1), 0);
        let two = strata_key::codec::native::prefix_len(&k, 2).unwrap();
        assert_eq!(p.partition(&k), &k[..two]);
        assert_eq!(p.closed_partition(&k), Some(&k[..two]));
    }
    // Not hash values: below every hash value, stripe 0; above, the last stripe.
    assert_eq!(p.stripe(&enc(&[Value::Int(7)]), 256), 0);
    assert_eq!(p.stripe(&enc(&[Value::Int(7), Value::Int(-1)]), 256), 0);
    assert_eq!(
        p.stripe(&enc(&[Value::Int(7), Value::Int(65536)]), 256),
        255
    );
    assert_eq!(p.stripe(b"", 256), 0);
}

#[test]
fn hash_encodings_are_every_hash_value_in_order() {
    let t = hash_encodings();
    assert_eq!(t.len(), HASH_SPACE as usize + 1);
    for (h, (e, n)) in t.iter().enumerate() {
        let want = enc(&[Value::Int(h as i128)]);
        assert_eq!(&e[..*n as usize], want.as_slice(), "h {h}");
    }
    assert!(t
        .windows(2)
        .all(|w| w[0].0[..w[0].1 as usize] < w[1].0[..w[1].1 as usize]));
    for h in [0i128, 1, 23, 24, 8151, 8152, 40000, 65535] {
        let r = enc(&[Value::Int(h), Value::from("tail")]);
        for stripes in [1, 3, 4, 7, 256] {
            assert_eq!(
                hashed_stripe(&r, stripes),
                ((h as u64 * stripes as u64) >> 16) as u32
            );
            assert_eq!(
                hashed_stripe(&r, stripes),
                hashed_stripe_by_bounds(&r, stripes)
            );
        }
    }
}

#[test]
fn hashed_spans_cover_a_table_and_its_segments() {
    let p = Partitioner::NativeTupleHash(2);
    let table = enc(&[Value::Int(7)]);
    let all = p.stripe_span(&KeyRange::prefix(&table), 256).unwrap();
    assert_eq!((all.first, all.last), (0, 255));
    let seg = KeyRange::half_open(
        enc(&[Value::Int(7), Value::Int(0x4000)]),
        enc(&[Value::Int(7), Value::Int(0x8000)]),
    );
    let s = p.stripe_span(&seg, 256).unwrap();
    assert_eq!((s.first, s.last), (0x40, 0x80));
    assert_eq!(p.single_stripe(&seg, 256), None);
    let one = KeyRange::half_open(
        enc(&[Value::Int(7), Value::Int(0x4000)]),
        enc(&[Value::Int(7), Value::Int(0x40ff)]),
    );
    assert_eq!(p.single_stripe(&one, 256), Some(0x40));
    // Across table ids, or unbounded: no span (the stripes are not in key order).
    assert_eq!(p.stripe_span(&KeyRange::all(), 256), None);
    let two_tables = KeyRange::half_open(table.clone(), enc(&[Value::Int(9)]));
    assert_eq!(p.stripe_span(&two_tables, 256), None);
    assert_eq!(
        Partitioner::NativeTuplePrefix(2).stripe_span(&KeyRange::prefix(&table), 256),
        None
    );
}

/// Keys under the prefix `(7)`: table-like keys with hash values and others, and raw bytes.
fn hashed_key() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let second = prop_oneof![
        (-3i128..70000).prop_map(Value::Int),
        Just(Value::Null),
        Just(Value::from("t")),
        proptest::collection::vec(any::<u8>(), 0..3).prop_map(Value::Bytes),
    ];
    prop_oneof![
        3 => (second, 0i128..3, 1usize..3).prop_map(|(h, t, n)| {
            let v = [Value::Int(7), h, Value::Int(t)];
            enc(&v[..1 + n])
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..4).prop_map(|rest| {
            let mut k = enc(&[Value::Int(7)]);
            k.extend(rest);
            k
        }),
    ]
}

/// Keys of one table (prefix `(7)`) and a few others, with few hash values (shared by
/// many keys, at stripe edges and outside `0..65536`), some cut or extended by raw bytes.
fn near_key() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let id = prop_oneof![4 => Just(7i128), 1 => Just(8i128)];
    let h = prop_oneof![
        Just(Value::Int(0)),
        Just(Value::Int(255)),
        Just(Value::Int(256)),
        Just(Value::Int(65535)),
        Just(Value::Int(65536)),
        Just(Value::Int(-1)),
        Just(Value::Null),
        Just(Value::from("t")),
    ];
    let tail = proptest::collection::vec(
        prop_oneof![(0i128..4).prop_map(Value::Int), Just(Value::from("x"))],
        0..3,
    );
    (
        id,
        h,
        tail,
        proptest::collection::vec(any::<u8>(), 0..3),
        0usize..4,
    )
        .prop_map(|(id, h, tail, raw, cut)| {
            let mut v = vec![Value::Int(id), h];
            v.extend(tail);
            let mut k = enc(&v);
            match cut {
                0 => k.truncate(k.len().saturating_sub(raw.len())),
                1 => k.extend(raw),
                _ => {}
            }
            k
        })
}

/// The general path of [`Partitioner::stripe`] for `native-hash:N` (no fast path).
fn stripe_by_search(key: &[u8], n: usize, stripes: u32) -> u32 {
    match strata_key::codec::native::prefix_len(key, n - 1) {
        Some(p) => hashed_stripe(&key[p.min(key.len())..], stripes),
        None => 0,
    }
}

/// The fast path and the search agree for every hash value, at both ends of the key space
/// of table ids, for stripe counts that divide 65536 and ones that do not.
#[test]
fn stripe_fast_path_agrees_for_every_hash() {
    for id in [1i128, 23, 24, 1_000_000] {
        for h in 0..HASH_SPACE as i128 {
            let k = enc(&[Value::Int(id), Value::Int(h), Value::from("p")]);
            for stripes in [256, 3] {
                let p = Partitioner::NativeTupleHash(2);
                assert_eq!(
                    p.stripe(&k, stripes),
                    stripe_by_search(&k, 2, stripes),
                    "{id} {h}"
                );
            }
        }
    }
}

proptest::proptest! {
    /// The integer fast path of the stripe choice answers exactly like the search over the
    /// hash encodings: table keys of 1 to 3 outer elements with any hash value (inside and
    /// outside `0..65536`, negative), other kinds, cut keys and raw bytes.
    #[test]
    fn stripe_fast_path_agrees_with_the_search(
        outer in proptest::collection::vec(
            proptest::prop_oneof![
                (0i128..1_000_000).prop_map(Value::Int),
                (-5i128..0).prop_map(Value::Int),
                proptest::prelude::Just(Value::from("t")),
            ],
            0..3,
        ),
        h in proptest::prop_oneof![0i128..65536, -300i128..70000, proptest::prelude::any::<i64>().prop_map(i128::from)],
        tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..6),
        cut in proptest::prelude::any::<proptest::sample::Index>(),
        raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8),
        stripes in proptest::prop_oneof![1u32..9, proptest::prelude::Just(256u32)],
    ) {
        let n = outer.len() + 1;
        let p = Partitioner::NativeTupleHash(n as u32);
        let mut vals = outer.clone();
        vals.push(Value::Int(h));
        let mut k = enc(&vals);
        k.extend_from_slice(&tail);
        proptest::prop_assert_eq!(p.stripe(&k, stripes), stripe_by_search(&k, n, stripes));
        let c = &k[..cut.index(k.len() + 1)];
        proptest::prop_assert_eq!(p.stripe(c, stripes), stripe_by_search(c, n, stripes));
        proptest::prop_assert_eq!(p.stripe(&raw, stripes), stripe_by_search(&raw, n, stripes));
        if (0..65536).contains(&h) && outer.iter().all(|v| matches!(v, Value::Int(_))) {
            proptest::prop_assert_eq!(p.stripe(&k, stripes), ((h as u64 * stripes as u64) >> 16) as u32);
        }
    }

    /// A range whose bounds share `(outer…, h)` gets one stripe from
    /// [`Partitioner::hashed_single_stripe`], and every key inside the range (bounds
    /// included) is filed there by [`Partitioner::stripe`]; where the stripe span also
    /// names one stripe, it is the same.
    #[test]
    fn hashed_single_stripe_holds_every_key_of_the_range(
        keys in proptest::collection::vec(near_key(), 2..40),
        (i, j) in (0usize..40, 0usize..40),
        (inc_lo, inc_hi) in (proptest::prelude::any::<bool>(), proptest::prelude::any::<bool>()),
        n in 1u32..3,
        stripes in proptest::prop_oneof![1u32..9, proptest::prelude::Just(256u32)],
    ) {
        let p = Partitioner::NativeTupleHash(n);
        let (lo, hi) = (keys[i % keys.len()].clone(), keys[j % keys.len()].clone());
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        let range = KeyRange {
            start: if inc_lo { Bound::Included(lo.clone()) } else { Bound::Excluded(lo.clone()) },
            end: if inc_hi { Bound::Included(hi.clone()) } else { Bound::Excluded(hi.clone()) },
        };
        let Some(s) = p.hashed_single_stripe(&range, stripes) else {
            return Ok(());
        };
        proptest::prop_assert!(s < stripes.max(1));
        for k in keys.iter().chain([&lo, &hi]) {
            if range.contains(k) {
                proptest::prop_assert_eq!(p.stripe(k, stripes), s, "{:?} in {:?}", k, range);
            }
        }
        // The bounds' own stripes, whether or not they are inside the range.
        proptest::prop_assert_eq!(p.stripe(&lo, stripes), s);
        if let Some(span) = p.stripe_span(&range, stripes) {
            if span.first == span.last && lo < hi {
                proptest::prop_assert_eq!(span.first, s);
            }
        }
    }

    /// Under one prefix, stripes never decrease in key order, every key lies in its
    /// stripe's piece, and the pieces are consecutive.
    #[test]
    fn hashed_stripes_follow_key_order(
        mut keys in proptest::collection::vec(hashed_key(), 1..40),
        stripes in 1u32..9,
    ) {
        let p = Partitioner::NativeTupleHash(2);
        keys.sort();
        let span = p.stripe_span(&KeyRange::prefix(&enc(&[Value::Int(7)])), stripes).unwrap();
        proptest::prop_assert_eq!((span.first, span.last), (0, stripes - 1));
        let mut last = 0;
        for k in &keys {
            let s = p.stripe(k, stripes);
            proptest::prop_assert!(s >= last, "stripe {} after {} at {:?}", s, last, k);
            last = s;
            proptest::prop_assert!(span.piece(s).contains(k), "{:?} not in piece {}", k, s);
            proptest::prop_assert_eq!(span.place(k), Place::In(s));
            let rest = &k[span.prefix.len()..];
            proptest::prop_assert_eq!(hashed_stripe(rest, stripes), hashed_stripe_by_bounds(rest, stripes));
            proptest::prop_assert_eq!(s, hashed_stripe(rest, stripes));
        }
        for s in 1..stripes {
            proptest::prop_assert_eq!(&span.piece(s - 1).end, &match span.piece(s).start {
                Bound::Included(k) => Bound::Excluded(k),
                other => other,
            });
        }
    }
}
