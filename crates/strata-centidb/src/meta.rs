//! The store's metadata: one hidden collection (index 9) of rows `(kind, name, attr) →
//! value`, every key and value in the key encoding (`docs/format/centidb.md`).

use std::collections::BTreeMap;

use strata_key::codec::centidb::CentidbCodec;
use strata_key::{Tuple, TupleCodec, Value};

use crate::error::{Error, Result};
use crate::format::PhysRecord;
use crate::varint;

/// The index of the metadata collection.
pub const META_IDX: u64 = 9;
/// First index given to a collection or an index (counter `\x00collections_idx`).
pub const FIRST_COLLECTION_IDX: i128 = 10;
/// First index given to an encoder or packer (counter `\x00encoder_idx`).
pub const FIRST_ENCODER_IDX: i128 = 10;
/// The counter that numbers collections and indexes.
pub const COLLECTIONS_COUNTER: &[u8] = b"\x00collections_idx";
/// The counter that numbers encoders and packers.
pub const ENCODERS_COUNTER: &[u8] = b"\x00encoder_idx";

/// What a metadata row describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A collection (`KIND_TABLE`).
    Table = 0,
    /// A secondary index.
    Index = 1,
    /// An encoder or packer.
    Encoder = 2,
    /// A counter.
    Counter = 3,
}

impl Kind {
    /// The kind of a stored number.
    pub fn from_number(n: i128) -> Option<Kind> {
        Some(match n {
            0 => Kind::Table,
            1 => Kind::Index,
            2 => Kind::Encoder,
            3 => Kind::Counter,
            _ => return None,
        })
    }
}

/// The key prefix of the metadata collection.
pub fn meta_prefix(store_prefix: &[u8]) -> Vec<u8> {
    let mut p = store_prefix.to_vec();
    varint::write(META_IDX, &mut p);
    p
}

/// The key of a metadata row.
pub fn row_key(store_prefix: &[u8], kind: Kind, name: &Value, attr: &Value) -> Result<Vec<u8>> {
    let mut k = meta_prefix(store_prefix);
    CentidbCodec::new().encode_into(
        &[Value::Int(kind as i128), name.clone(), attr.clone()],
        &mut k,
    )?;
    Ok(k)
}

/// The key prefix of every row of one (kind, name).
pub fn rows_prefix(store_prefix: &[u8], kind: Kind, name: &Value) -> Result<Vec<u8>> {
    let mut k = meta_prefix(store_prefix);
    CentidbCodec::new().encode_into(&[Value::Int(kind as i128), name.clone()], &mut k)?;
    Ok(k)
}

/// A row's value: the plain packer's prefix, then `packs((value,))`.
pub fn row_value(v: &Value) -> Result<Vec<u8>> {
    let mut out = vec![crate::codec::PLAIN_IDX as u8];
    CentidbCodec::new().encode_into(std::slice::from_ref(v), &mut out)?;
    Ok(out)
}

/// One decoded metadata row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The kind (a number; rows of unknown kinds are kept as they are).
    pub kind: i128,
    /// The name (bytes or text, as written).
    pub name: Value,
    /// The attribute (`None` for a counter).
    pub attr: Value,
    /// The value.
    pub value: Value,
}

fn corrupt(key: &[u8], reason: impl Into<String>) -> Error {
    Error::corrupt(format!("metadata row {}", hex::encode(key)), reason)
}

/// Decodes a metadata row (untrusted bytes).
pub fn parse_row(meta_prefix: &[u8], key: &[u8], value: &[u8]) -> Result<Row> {
    let rec = PhysRecord::parse(meta_prefix, key.to_vec(), Vec::new())
        .map_err(|e| corrupt(key, e.to_string()))?;
    if rec.is_batch() {
        return Err(corrupt(key, "a metadata row is never a batch"));
    }
    let t: &Tuple = &rec.members[0].key;
    let (kind, name, attr) = match t.as_slice() {
        [Value::Int(k), name, attr] => (*k, name.clone(), attr.clone()),
        _ => return Err(corrupt(key, "key is not (kind, name, attr)")),
    };
    let (&p, payload) = value
        .split_first()
        .ok_or_else(|| corrupt(key, "empty value"))?;
    if u64::from(p) != crate::codec::PLAIN_IDX {
        return Err(corrupt(
            key,
            format!("value packed with packer {p} (metadata is always plain, 3)"),
        ));
    }
    let v = CentidbCodec::new()
        .decode(payload)
        .map_err(|e| corrupt(key, e.to_string()))?;
    let value = match v.0.as_slice() {
        [one] => one.clone(),
        _ => return Err(corrupt(key, "value is not a 1-tuple")),
    };
    Ok(Row {
        kind,
        name,
        attr,
        value,
    })
}

/// Attributes of one (kind, name): attribute name → value.
pub type Info = BTreeMap<Vec<u8>, Value>;

/// The bytes of an attribute name or a text/bytes value.
pub fn name_bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Bytes(b) => Some(b),
        Value::Text(t) => Some(t.as_bytes()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    #[test]
    fn rows_of_the_vectors() {
        // Vector 01: (0, 'points', 'idx') → 10; counter '\x00collections_idx' → 11.
        let k = row_key(
            b"",
            Kind::Table,
            &Value::Bytes(b"points".to_vec()),
            &Value::Bytes(b"idx".to_vec()),
        )
        .unwrap();
        assert_eq!(k, h("09150028b89bed96f3d1e628b4d98f80"));
        assert_eq!(row_value(&Value::Int(10)).unwrap(), h("03150a"));
        let c = row_key(
            b"",
            Kind::Counter,
            &Value::Bytes(COLLECTIONS_COUNTER.to_vec()),
            &Value::Null,
        )
        .unwrap();
        assert_eq!(c, h("091503288098edf6e3b1cae3ba9aadf6f3cdbee9b29e800f"));
        let r = parse_row(&[9], &c, &h("03150b")).unwrap();
        assert_eq!(r.kind, 3);
        assert_eq!(r.value, Value::Int(11));
        assert!(parse_row(&[9], &c, &h("04150b")).is_err());
        assert!(parse_row(&[9], &h("091503"), &h("03150b")).is_err());
    }
}
