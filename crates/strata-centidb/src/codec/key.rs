//! The `key` encoder: a value is a key tuple (or a list of them) in centidb's key encoding.

use strata_key::codec::centidb::CentidbCodec;
use strata_key::{Tuple, TupleCodec};

use super::Encoder;
use crate::doc::Doc;
use crate::error::{Error, Result};

/// `KEY_ENCODER`: `keylib.packs(value)`. A tuple is one tuple, a list is several (joined by
/// SEP), any scalar a 1-tuple. Decoding gives a tuple, or a list of tuples when the bytes
/// hold several (the original returns only the first: a documented difference).
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyEncoder;

fn tuple_of(d: &Doc) -> Result<Tuple> {
    d.to_key()
        .map_err(|e| Error::encoding("key", e.to_string()))
}

impl Encoder for KeyEncoder {
    fn name(&self) -> &str {
        "key"
    }

    fn pack(&self, value: &Doc) -> Result<Vec<u8>> {
        let tuples = match value {
            Doc::List(items) => items.iter().map(tuple_of).collect::<Result<Vec<_>>>()?,
            other => vec![tuple_of(other)?],
        };
        if tuples.is_empty() {
            return Err(Error::encoding("key", "an empty list has no key encoding"));
        }
        CentidbCodec::new()
            .encode_list(&tuples)
            .map_err(|e| Error::encoding("key", e.to_string()))
    }

    fn unpack(&self, data: &[u8]) -> Result<Doc> {
        let tuples = CentidbCodec::new()
            .decode_list(data)
            .map_err(|e| Error::encoding("key", e.to_string()))?;
        Ok(match tuples.as_slice() {
            [one] => Doc::from_tuple(one),
            many => Doc::List(many.iter().map(Doc::from_tuple).collect()),
        })
    }
}

/// Encodes one key tuple (no SEP): `packs(key)`.
pub fn encode_key(t: &Tuple) -> Result<Vec<u8>> {
    Ok(CentidbCodec::new().encode(t)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_values() {
        // Vector 01: (1, u'one', 'raw\x00bytes\xff', None, True).
        let v = Doc::Tuple(vec![
            Doc::Int(1),
            Doc::Text("one".into()),
            Doc::Bytes(b"raw\x00bytes\xff".to_vec()),
            Doc::None,
            Doc::Bool(true),
        ]);
        let b = KeyEncoder.pack(&v).unwrap();
        assert_eq!(
            hex::encode(&b),
            "150132b7dbccd028b998aef08389f2f4b2dcfff00f1e01"
        );
        assert_eq!(KeyEncoder.unpack(&b).unwrap(), v);
        let l = Doc::List(vec![
            Doc::Tuple(vec![Doc::Int(77), Doc::Int(1)]),
            Doc::Tuple(vec![Doc::Int(2), Doc::Int(3)]),
        ]);
        let b = KeyEncoder.pack(&l).unwrap();
        assert_eq!(hex::encode(&b), "154d15016615021503");
        assert_eq!(KeyEncoder.unpack(&b).unwrap(), l);
        assert!(KeyEncoder.pack(&Doc::Float(1.0)).is_err());
    }
}
