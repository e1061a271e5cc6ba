//! One nesting limit, shared by every encoder and decoder: a key nested exactly to the limit
//! encodes and decodes everywhere; one level more is refused by every encoder (and decoder),
//! so nothing can be written that cannot be read back.

use serde::{Deserialize, Serialize};
use strata_key::codec::fdb::FdbCodec;
use strata_key::codec::native::{NativeCodec, Order, MAX_DEPTH, TAG_END, TAG_TUPLE};
use strata_key::json::tuple_from_json;
use strata_key::{Tuple, TupleCodec, Value};

fn nested(levels: usize) -> Tuple {
    let mut v = Value::Int(1);
    for _ in 0..levels {
        v = Value::Tuple(Tuple(vec![v]));
    }
    Tuple(vec![v])
}

fn nested_json(levels: usize) -> serde_json::Value {
    let mut j = serde_json::json!(1);
    for _ in 0..levels {
        j = serde_json::Value::Array(vec![j]);
    }
    serde_json::Value::Array(vec![j])
}

/// `levels` nested tuples around nothing, as native bytes (one top-level element).
fn native_bytes(levels: usize) -> Vec<u8> {
    let mut b = vec![TAG_TUPLE; levels];
    b.extend(vec![TAG_END; levels]);
    b
}

/// A recursive type for serde: each level is one nested tuple.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Nest(Vec<Nest>);

fn nest(levels: usize) -> Nest {
    let mut n = Nest(vec![]);
    for _ in 1..levels {
        n = Nest(vec![n]);
    }
    n
}

#[test]
fn the_limit_is_64_levels() {
    assert_eq!(MAX_DEPTH, 64);
}

#[test]
fn native_encoder_and_decoder_agree_on_the_limit() {
    let ok = nested(MAX_DEPTH);
    for order in [Order::ASC, Order::DESC] {
        let c = NativeCodec::with_orders(vec![order]);
        let k = c.encode(&ok).unwrap();
        assert_eq!(c.decode(&k).unwrap(), ok);
        let e = c.encode(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert!(e.to_string().contains("nested deeper than 64"), "{e}");
        assert!(c.encode(&nested(100)).is_err());
    }
    assert!(NativeCodec::new().decode(&native_bytes(MAX_DEPTH)).is_ok());
    assert!(NativeCodec::new()
        .decode(&native_bytes(MAX_DEPTH + 1))
        .is_err());
    // encode_element (used for table keys) applies the limit too.
    let mut out = Vec::new();
    assert!(NativeCodec::encode_element(&nested(MAX_DEPTH + 1)[0], Order::ASC, &mut out).is_err());
}

#[test]
fn fdb_encoder_and_decoder_agree_on_the_limit() {
    let c = FdbCodec::new();
    let k = c.encode(&nested(MAX_DEPTH)).unwrap();
    assert_eq!(c.decode(&k).unwrap(), nested(MAX_DEPTH));
    assert!(c.encode(&nested(MAX_DEPTH + 1)).is_err());
    let mut b = vec![0x05u8; MAX_DEPTH + 1];
    b.extend(vec![0u8; MAX_DEPTH + 1]);
    assert!(c.decode(&b).is_err());
}

#[test]
fn serde_encoder_and_decoder_agree_on_the_limit() {
    // The root sequence is flattened: `[nest(n)]` is one top-level tuple n levels deep.
    let k = strata_key::to_key(&vec![nest(MAX_DEPTH)]).unwrap();
    assert_eq!(k, native_bytes(MAX_DEPTH));
    assert_eq!(
        strata_key::from_key::<Vec<Nest>>(&k).unwrap(),
        vec![nest(MAX_DEPTH)]
    );
    assert!(strata_key::to_key(&vec![nest(MAX_DEPTH + 1)]).is_err());
    assert!(strata_key::from_key::<Vec<Nest>>(&native_bytes(MAX_DEPTH + 1)).is_err());
}

#[test]
fn typed_json_applies_the_limit() {
    assert_eq!(
        tuple_from_json(&nested_json(MAX_DEPTH)).unwrap(),
        nested(MAX_DEPTH)
    );
    let e = tuple_from_json(&nested_json(MAX_DEPTH + 1)).unwrap_err();
    assert!(e.reason.contains("nested deeper than 64"), "{e}");
    let typed = serde_json::json!([{"t": "tuple", "items": nested_json(MAX_DEPTH)}]);
    assert!(tuple_from_json(&typed).is_err());
}
