proptest::proptest! {
    /// Looking one attribute up in place agrees with decoding the whole item.
    #[test]
    fn item_ref_agrees_with_decode(item in arb_item(), probe in "[a-e]{0,2}") {
        let bytes = encode_item(&item).unwrap();
        let r = ItemRef::new(&bytes).unwrap();
        for name in item.keys().map(String::as_str).chain([probe.as_str()]) {
            proptest::prop_assert_eq!(r.value(name).unwrap(), item.value(name).cloned(), "{}", name);
        }
    }

    #[test]
    fn item_ref_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64), name in "[a-e]{0,2}") {
        if let Ok(r) = ItemRef::new(&bytes) {
            let _ = r.value(&name);
        }
    }
}

use super::*;
use proptest::prelude::*;

pub fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i128>().prop_map(Value::Int),
        any::<u32>().prop_map(|b| Value::F32(f32::from_bits(b))),
        any::<u64>().prop_map(|b| Value::Float(f64::from_bits(b))),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(Value::Bytes),
        ".{0,6}".prop_map(Value::Text),
        any::<[u8; 16]>().prop_map(|b| Value::Uuid(uuid::Uuid::from_bytes(b))),
        (any::<i64>(), 0u32..1_000_000_000, -86_399i32..86_400)
            .prop_map(|(s, n, o)| Value::Time(Time::new(s, n, o).unwrap())),
        (any::<bool>(), any::<u64>(), -200i32..200)
            .prop_map(|(n, c, e)| Value::Decimal(Decimal::from_parts(n, c.into(), e).unwrap())),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        proptest::collection::vec(inner, 0..4).prop_map(|v| Value::Tuple(Tuple(v)))
    })
}

pub fn arb_attr() -> impl Strategy<Value = Attr> {
    arb_value()
        .prop_map(Attr::Value)
        .prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::btree_set("[a-c]{0,3}", 1..4).prop_map(|s| Attr::Set(
                    Set::new(s.into_iter().map(Value::Text).collect()).unwrap()
                )),
                proptest::collection::btree_set(any::<i64>(), 1..4).prop_map(|s| Attr::Set(
                    Set::new(s.into_iter().map(|i| Value::Int(i.into())).collect()).unwrap()
                )),
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Attr::List),
                proptest::collection::btree_map("[a-z]{0,3}", inner, 0..4)
                    .prop_map(|m| Attr::Map(Item(m))),
            ]
        })
}

pub fn arb_item() -> impl Strategy<Value = Item> {
    proptest::collection::btree_map("[a-zé]{0,4}", arb_attr(), 0..6).prop_map(Item)
}

proptest! {
    #[test]
    fn round_trip(item in arb_item()) {
        let bytes = encode_item(&item).unwrap();
        prop_assert_eq!(decode_item(&bytes).unwrap(), item);
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode_item(&bytes);
    }

    #[test]
    fn mutations_never_panic_and_decoding_is_canonical(item in arb_item(), at in any::<usize>(), b in any::<u8>(), cut in any::<usize>()) {
        let mut bytes = encode_item(&item).unwrap();
        let i = at % bytes.len();
        bytes[i] = b;
        if let Ok(it) = decode_item(&bytes) {
            prop_assert_eq!(encode_item(&it).unwrap(), bytes.clone());
        }
        bytes.truncate(cut % (bytes.len() + 1));
        if let Ok(it) = decode_item(&bytes) {
            prop_assert_eq!(encode_item(&it).unwrap(), bytes);
        }
    }
}

#[test]
fn encoder_and_decoder_share_the_nesting_limit() {
    let list = |n: usize| {
        let mut a = Attr::from(1);
        for _ in 0..n {
            a = Attr::List(vec![a]);
        }
        a
    };
    let map = |n: usize| {
        let mut a = Attr::from(1);
        for _ in 0..n {
            a = Attr::Map(Item::new().with("m", a));
        }
        a
    };
    let tuple = |n: usize| {
        let mut v = Value::Int(1);
        for _ in 0..n {
            v = Value::Tuple(Tuple(vec![v]));
        }
        Attr::Value(v)
    };
    for make in [&list as &dyn Fn(usize) -> Attr, &map, &tuple] {
        let ok = Item::new().with("a", make(MAX_DEPTH));
        let bytes = encode_item(&ok).unwrap();
        assert_eq!(decode_item(&bytes).unwrap(), ok);
        let deep = Item::new().with("b", 1).with("deep", make(MAX_DEPTH + 1));
        assert_eq!(
            encode_item(&deep),
            Err(NestingError {
                attr: "deep".into()
            })
        );
    }
}

proptest! {
    /// Every varint length (1 to 19 bytes) reads back, and the fast paths agree with the
    /// general loop on truncated and overlong forms.
    #[test]
    fn varints_round_trip(bits in 0u32..128, x in any::<u128>(), cut in any::<usize>()) {
        let v = if bits == 0 { 0 } else { x >> (128 - bits) };
        let mut out = Vec::new();
        put_varint(&mut out, v);
        let mut r = Reader { buf: &out, pos: 0 };
        prop_assert_eq!(r.varint().unwrap(), v);
        prop_assert_eq!(r.pos, out.len());
        let short = &out[..cut % out.len()];
        let truncated = Reader { buf: short, pos: 0 }.varint();
        prop_assert!(truncated.is_err());
        // An overlong form (a final zero group) is refused.
        let mut long = out.clone();
        *long.last_mut().unwrap() |= 0x80;
        long.push(0);
        let overlong = Reader { buf: &long, pos: 0 }.varint();
        prop_assert!(overlong.is_err());
    }
}

#[test]
fn known_bytes() {
    let it = Item::new().with("a", 1).with(
        "b",
        Attr::List(vec![Attr::from("x"), Attr::from(Value::Null)]),
    );
    assert_eq!(
        encode_item(&it).unwrap(),
        vec![
            0x01, 0x02, 0x01, b'a', T_INT, 0x02, 0x01, b'b', T_LIST, 0x02, T_TEXT, 0x01, b'x',
            T_NULL
        ]
    );
    assert_eq!(
        encode_item(&Item::new().with("n", -1)).unwrap(),
        vec![0x01, 0x01, 0x01, b'n', T_INT, 0x01]
    );
}

#[test]
fn sets_are_canonical() {
    let set = Set::new(vec![Value::from("b"), Value::from("a")]).unwrap();
    let it = Item::new().with("s", Attr::Set(set));
    let bytes = encode_item(&it).unwrap();
    assert_eq!(
        bytes,
        vec![0x01, 0x01, 0x01, b's', T_SET, 0x02, T_TEXT, 0x01, b'a', T_TEXT, 0x01, b'b']
    );
    assert_eq!(decode_item(&bytes).unwrap(), it);
    let bad = |b: &[u8], what: &str| {
        let e = decode_item(b).unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
    };
    // Unsorted, repeated, empty, mixed kinds, NULL.
    bad(
        &[
            0x01, 0x01, 0x01, b's', T_SET, 0x02, T_TEXT, 0x01, b'b', T_TEXT, 0x01, b'a',
        ],
        "duplicates",
    );
    bad(
        &[
            0x01, 0x01, 0x01, b's', T_SET, 0x02, T_TEXT, 0x01, b'a', T_TEXT, 0x01, b'a',
        ],
        "duplicates",
    );
    bad(&[0x01, 0x01, 0x01, b's', T_SET, 0x00], "empty");
    bad(
        &[
            0x01, 0x01, 0x01, b's', T_SET, 0x02, T_INT, 0x02, T_TEXT, 0x01, b'a',
        ],
        "one kind",
    );
    bad(&[0x01, 0x01, 0x01, b's', T_SET, 0x01, T_NULL], "null");
}

#[test]
fn set_operations() {
    let s = |v: &[i64]| Set::new(v.iter().map(|&i| Value::Int(i.into())).collect()).unwrap();
    assert_eq!(s(&[3, 1]).union(&s(&[2, 3])), Some(s(&[1, 2, 3])));
    assert_eq!(s(&[1, 2, 3]).difference(&s(&[2])), Some(s(&[1, 3])));
    assert_eq!(s(&[1]).difference(&s(&[1, 2])), None);
    let t = Set::new(vec![Value::from("x")]).unwrap();
    assert_eq!(s(&[1]).union(&t), None);
    assert!(Set::from_unique(vec![Value::from("x"), Value::from("x")]).is_err());
    assert!(s(&[5, 7]).contains(&Value::Int(7)));
}

#[test]
fn errors_have_offsets() {
    let e = decode_item(&[0x01, 0x01, 0x01, b'n', 0x77])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("byte 4") && e.contains("unknown attribute tag"),
        "{e}"
    );
    let e = decode_item(&[0x01, 0x02, 0x01, b'b', 0, 0x01, b'a', 0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("out of order"), "{e}");
    let e = decode_item(&[0x02]).unwrap_err().to_string();
    assert!(e.contains("version"), "{e}");
    // A deeply nested list is refused, not a stack overflow.
    let mut deep = vec![0x01, 0x01, 0x01, b'x'];
    for _ in 0..10_000 {
        deep.extend_from_slice(&[T_LIST, 0x01]);
    }
    deep.push(T_NULL);
    assert!(decode_item(&deep)
        .unwrap_err()
        .to_string()
        .contains("nesting"));
}
