//! The `Item` decoder (`decode_item`) against a plain reference decoder written here, the
//! decoder as it was before its text/int fast arms: every scalar through `Reader::value`.
//! Same items, same errors (message and byte offset) for valid, damaged, cut and padded bytes.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::error::Error;
use crate::item::{Attr, Item, Set};
use crate::item_codec::tests::arb_item;
use crate::item_codec::{
    decode_item, encode_item, utf8, Reader, ITEM_FORMAT, MAX_DEPTH, T_LIST, T_MAP, T_SET,
};

fn reference_decode(bytes: &[u8]) -> Result<Item, Error> {
    let mut r = Reader { buf: bytes, pos: 0 };
    match r.byte()? {
        ITEM_FORMAT => {}
        other => return Err(r.err_at(0, format!("unknown item format version {other:#04x}"))),
    }
    let item = map(&mut r, 0)?;
    if r.pos != bytes.len() {
        return Err(r.err(format!("{} trailing bytes", bytes.len() - r.pos)));
    }
    Ok(item)
}

fn map(r: &mut Reader<'_>, depth: usize) -> Result<Item, Error> {
    if depth > MAX_DEPTH {
        return Err(r.err(format!("nesting deeper than {MAX_DEPTH}")));
    }
    let n = r.count()?;
    let mut m = BTreeMap::new();
    let mut last: Option<Vec<u8>> = None;
    for _ in 0..n {
        let at = r.pos;
        let len = r.count()?;
        let raw = r.take(len)?;
        let name = utf8(raw).ok_or_else(|| r.err_at(at, "attribute name is not UTF-8"))?;
        if last.as_deref().is_some_and(|l| l >= raw) {
            return Err(r.err_at(at, format!("attribute {name:?} out of order or repeated")));
        }
        last = Some(raw.to_vec());
        let a = attr(r, depth + 1)?;
        m.insert(name.to_owned(), a);
    }
    Ok(Item(m))
}

fn attr(r: &mut Reader<'_>, depth: usize) -> Result<Attr, Error> {
    match r.buf.get(r.pos) {
        Some(&T_LIST) => {
            if depth > MAX_DEPTH {
                return Err(r.err(format!("nesting deeper than {MAX_DEPTH}")));
            }
            r.pos += 1;
            let n = r.count()?;
            let mut l = Vec::new();
            for _ in 0..n {
                l.push(attr(r, depth + 1)?);
            }
            Ok(Attr::List(l))
        }
        Some(&T_MAP) => {
            r.pos += 1;
            Ok(Attr::Map(map(r, depth)?))
        }
        Some(&T_SET) => {
            let at = r.pos;
            r.pos += 1;
            let n = r.count()?;
            let mut values = Vec::new();
            for _ in 0..n {
                values.push(r.value(depth + 1)?);
            }
            Set::from_sorted(values)
                .map(Attr::Set)
                .map_err(|e| r.err_at(at, format!("set: {e}")))
        }
        _ => Ok(Attr::Value(r.value(depth)?)),
    }
}

/// Both decoders' answers, errors as their messages (which carry the byte offset).
fn both(bytes: &[u8]) -> (Result<Item, String>, Result<Item, String>) {
    (
        decode_item(bytes).map_err(|e| e.to_string()),
        reference_decode(bytes).map_err(|e| e.to_string()),
    )
}

proptest::proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn item_decoder_agrees_with_the_reference(
        item in arb_item(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..3),
        cut in any::<usize>(),
        pad in proptest::collection::vec(any::<u8>(), 0..3),
    ) {
        let mut bytes = encode_item(&item).unwrap();
        let (fast, slow) = both(&bytes);
        prop_assert_eq!(&fast, &Ok(item));
        prop_assert_eq!(fast, slow);
        // Damaged: bytes changed (names out of order, bad UTF-8, wrong tags, counts).
        for (at, b) in edits {
            let i = at % bytes.len();
            bytes[i] = b;
            let (fast, slow) = both(&bytes);
            prop_assert_eq!(fast, slow);
        }
        // Cut anywhere, or with bytes appended.
        let mut cut_bytes = bytes.clone();
        cut_bytes.truncate(cut % (bytes.len() + 1));
        let (fast, slow) = both(&cut_bytes);
        prop_assert_eq!(fast, slow);
        bytes.extend_from_slice(&pad);
        let (fast, slow) = both(&bytes);
        prop_assert_eq!(fast, slow);
    }

    #[test]
    fn garbage_decodes_like_the_reference(bytes in proptest::collection::vec(any::<u8>(), 0..48)) {
        let mut b = vec![ITEM_FORMAT];
        b.extend_from_slice(&bytes);
        let (fast, slow) = both(&b);
        prop_assert_eq!(fast, slow);
    }
}

/// Hand-picked damage at each of the text and int arms: same message, same offset.
#[test]
fn scalar_arm_errors_match_the_reference() {
    let cases: &[&[u8]] = &[
        // name "t", text of 2 bytes that are not UTF-8
        &[0x01, 0x01, 0x01, b't', 0x07, 0x02, 0xff, 0xfe],
        // text announcing more bytes than are left
        &[0x01, 0x01, 0x01, b't', 0x07, 0x05, b'a'],
        // int with an overlong varint, and one cut short
        &[0x01, 0x01, 0x01, b'i', 0x03, 0x80, 0x00],
        &[0x01, 0x01, 0x01, b'i', 0x03, 0x80],
        // two attributes out of order after a valid text
        &[
            0x01, 0x02, 0x01, b'b', 0x07, 0x01, b'x', 0x01, b'a', 0x03, 0x02,
        ],
        // the same name twice
        &[0x01, 0x02, 0x01, b'a', 0x03, 0x02, 0x01, b'a', 0x03, 0x04],
    ];
    for bytes in cases {
        let (fast, slow) = both(bytes);
        assert!(fast.is_err(), "{bytes:?}");
        assert_eq!(fast, slow, "{bytes:?}");
    }
}

proptest::proptest! {
    #[test]
    fn name_order_is_byte_order(
        a in proptest::collection::vec(any::<u8>(), 0..6),
        b in proptest::collection::vec(any::<u8>(), 0..6),
    ) {
        prop_assert_eq!(crate::item_codec::strictly_before(&a, &b), a < b);
        prop_assert!(!crate::item_codec::strictly_before(&a, &a));
    }
}
