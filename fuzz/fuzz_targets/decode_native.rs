//! Fuzzes the native decoder and the serde bridge with arbitrary bytes: no panic, and whatever
//! decodes re-encodes to the same bytes (canonical encoding). The input is also split in two
//! keys: when both decode, their byte order must be the order of their values under the
//! per-field orders they carry (decimals, descending fields and nulls-last included).
#![no_main]

use std::cmp::Ordering;

use libfuzzer_sys::fuzz_target;
use strata_key::codec::native::{decode_with_orders, int_prefix, prefix_len, NativeCodec, Order};
use strata_key::{Decimal, TupleCodec, Value};

fn check_canonical(data: &[u8]) -> Option<Vec<(Value, Order)>> {
    let items = decode_with_orders(data).ok()?;
    let orders: Vec<Order> = items.iter().map(|(_, o)| *o).collect();
    let tuple: Vec<Value> = items.iter().map(|(v, _)| v.clone()).collect();
    let again = NativeCodec::with_orders(orders)
        .encode(&tuple)
        .expect("re-encode");
    assert_eq!(again, data, "non-canonical encoding accepted");
    assert_eq!(prefix_len(data, tuple.len()), Some(data.len()));
    for v in &tuple {
        if let Value::Decimal(d) = v {
            assert_eq!(d.to_string().parse::<Decimal>().ok(), Some(*d));
        }
    }
    Some(items)
}

/// The order of two decoded keys, as the model says: field by field, each with the order it
/// was written with; NULL goes first or last as its placement says. `None` when a field pair
/// was written with different directions (no order is defined between them).
fn model_cmp(a: &[(Value, Order)], b: &[(Value, Order)]) -> Option<Ordering> {
    for ((x, ox), (y, oy)) in a.iter().zip(b) {
        if ox.descending != oy.descending {
            return None;
        }
        let c = match (x.is_null(), y.is_null()) {
            (true, true) if ox.nulls_last == oy.nulls_last => Ordering::Equal,
            (true, true) => {
                return Some(if ox.nulls_last {
                    Ordering::Greater
                } else {
                    Ordering::Less
                })
            }
            (true, false) => {
                return Some(if ox.nulls_last {
                    Ordering::Greater
                } else {
                    Ordering::Less
                })
            }
            (false, true) => {
                return Some(if oy.nulls_last {
                    Ordering::Less
                } else {
                    Ordering::Greater
                })
            }
            (false, false) if ox.descending => x.cmp(y).reverse(),
            (false, false) => x.cmp(y),
        };
        if c != Ordering::Equal {
            return Some(c);
        }
    }
    Some(a.len().cmp(&b.len()))
}

/// Bytes through serde's bytes API (`Vec<u8>` would be a sequence of integers).
#[derive(Debug, PartialEq)]
struct Blob(Vec<u8>);

impl serde::Serialize for Blob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Blob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Blob, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Blob;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Blob, E> {
                Ok(Blob(b.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, b: Vec<u8>) -> Result<Blob, E> {
                Ok(Blob(b))
            }
        }
        d.deserialize_bytes(V)
    }
}

/// The serde decoder's own string code (word scans, stack buffers, the ASCII fast path that
/// skips UTF-8 validation) agrees with the `Value` decoder: same success, same strings (a UUID
/// element reads as its 16 bytes through serde's bytes API).
fn check_serde_strings(data: &[u8], items: Option<&[(Value, Order)]>) {
    let (want, bytes_kind) = match items {
        Some([(Value::Text(t), _), (b, _), (Value::Int(i), _)]) => {
            let blob = match b {
                Value::Bytes(b) => Some(b.clone()),
                Value::Uuid(u) => Some(u.as_bytes().to_vec()),
                _ => None,
            };
            let want = blob.and_then(|b| i64::try_from(*i).ok().map(|i| (t.clone(), Blob(b), i)));
            (want, matches!(b, Value::Bytes(_)))
        }
        _ => (None, false),
    };
    let got = strata_key::from_key::<(String, Blob, i64)>(data).ok();
    assert_eq!(got, want, "serde and Value decoders disagree");
    // The serde encoder (its one-store short strings and integers) writes the same bytes back
    // when every field is ascending and the middle element is a bytes element.
    if let (Some(v), Some(items)) = (&got, items) {
        if bytes_kind && items.iter().all(|(_, o)| !o.descending) {
            let again = strata_key::to_key(v).expect("serde encode");
            assert_eq!(again, data, "serde encoder is not canonical");
        }
    }
}

/// A UUID field through `strata_key::serde_uuid`.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct U(#[serde(with = "strata_key::serde_uuid")] uuid::Uuid);

/// The serde decoder's Uuid-element read (one 16-byte load and a multiply) agrees with the
/// `Value` decoder: a `(Int, Uuid, Int)` key reads as the same values (a 16-byte bytes element
/// too), anything else fails; an ascending Uuid key re-encodes to the same bytes.
fn check_serde_uuid(data: &[u8], items: Option<&[(Value, Order)]>) {
    let want = match items {
        Some([(Value::Int(a), _), (m, _), (Value::Int(b), _)]) => {
            let id = match m {
                Value::Uuid(u) => Some(*u),
                Value::Bytes(b) => <[u8; 16]>::try_from(b.as_slice())
                    .ok()
                    .map(uuid::Uuid::from_bytes),
                _ => None,
            };
            match (id, i64::try_from(*a), i64::try_from(*b)) {
                (Some(id), Ok(a), Ok(b)) => Some((a, U(id), b)),
                _ => None,
            }
        }
        _ => None,
    };
    let got = strata_key::from_key::<(i64, U, i64)>(data).ok();
    assert_eq!(got, want, "serde_uuid and Value decoders disagree");
    if let (Some(v), Some(items)) = (&got, items) {
        if matches!(items[1].0, Value::Uuid(_)) && items.iter().all(|(_, o)| !o.descending) {
            let again = strata_key::to_key(v).expect("serde encode");
            assert_eq!(again, data, "serde_uuid encoder is not canonical");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let whole = check_canonical(data);
    if let Some((&cut, rest)) = data.split_first() {
        let cut = (cut as usize).min(rest.len());
        let (ka, kb) = rest.split_at(cut);
        if let (Some(a), Some(b)) = (check_canonical(ka), check_canonical(kb)) {
            if let Some(want) = model_cmp(&a, &b) {
                assert_eq!(ka.cmp(kb), want, "byte order differs from value order");
            }
        }
    }
    check_serde_strings(data, whole.as_deref());
    check_serde_uuid(data, whole.as_deref());
    drop(whole);
    // The integer reader of the stripe choice: whenever it answers, the first element is that
    // ascending integer and has that length.
    if let Some((v, len)) = int_prefix(data) {
        let first = decode_with_orders(&data[..len]).expect("int_prefix read a valid element");
        assert_eq!(first, vec![(Value::Int(v), Order::default())]);
        assert_eq!(prefix_len(data, 1), Some(len));
    }
    let _ = strata_key::from_key::<serde::de::IgnoredAny>(data);
    let _ = strata_key::from_key::<(u64, String, Option<i32>, Vec<u8>)>(data);
    let _ = strata_key::from_key::<(Decimal, Option<Decimal>)>(data);
});
