//! Items encoded for puts: a [`Table`]'s key attributes checked and encoded where they lie
//! in an [`Item`] or in the bytes a serializer writes, and the item's value bytes.

use strata_key::{Kind, Value};

use super::{Key, Table};
use crate::error::{Error, Result};
use crate::item::Item;
use crate::item_codec::{encode_item, key_attr_at, ItemRef, KeyAttr};
use crate::item_serde::{to_item_bytes_keyed_into, KeySpots};
use crate::keys::HashMemo;
use crate::schema::{KeyField, MAX_KEY_FIELDS};

impl Table {
    /// Bytes the item takes in a batch (its encoded key and value), to size batches against
    /// the engine's [`strata_lsm::BatchLimits`].
    pub fn encoded_len(&self, item: &Item) -> Result<usize> {
        let (k, v) = self.encode_item(item)?;
        Ok(k.len() + v.len())
    }

    /// Encoded key and value of an item: the key attributes are checked (all of them, in
    /// schema order, before anything is encoded) and encoded where they lie in the item,
    /// without copying them into a [`Key`].
    pub(crate) fn encode_item(&self, item: &Item) -> Result<(Vec<u8>, Vec<u8>)> {
        let s = &self.def.schema;
        let mut vals: [&Value; MAX_KEY_FIELDS] = [&Value::Null; MAX_KEY_FIELDS];
        let n = s.partition.len() + s.sort.len();
        for (slot, f) in vals.iter_mut().zip(s.key_fields()) {
            *slot = self.field_value(f, item)?;
        }
        let np = s.partition.len();
        let k = self.key_bytes(vals[..np].iter().copied(), vals[np..n].iter().copied())?;
        let v = encode_item(item).map_err(|e| Error::invalid(self.name(), e.to_string()))?;
        Ok((k, v))
    }

    /// Encoded key and value of an item, and its [`Key`] (for messages that name it).
    pub(crate) fn encode_item_keyed(&self, item: &Item) -> Result<(Key, Vec<u8>, Vec<u8>)> {
        let key = self.key_of(item)?;
        let k = self.encode_key(&key)?.bytes;
        let v = encode_item(item).map_err(|e| Error::invalid(self.name(), e.to_string()))?;
        Ok((key, k, v))
    }

    /// Encoded key and value of a value of the caller's type (see [`crate::item_serde`]). The
    /// serializer records where the key attributes lie in the bytes it writes, and the key is
    /// built from those bytes: exactly the key [`Table::key_of`] gives for the equivalent
    /// [`Item`] (property-tested in `typed_keys_are_item_keys`).
    pub(crate) fn encode_value<T: serde::Serialize + ?Sized>(
        &self,
        value: &T,
    ) -> Result<(Vec<u8>, Vec<u8>)> {
        // Most rows fit; a larger item grows as it is written.
        let mut v = Vec::with_capacity(128);
        let mut k = Vec::new();
        self.encode_value_into(value, &mut v, &mut k, &mut HashMemo::default())?;
        Ok((k, v))
    }

    /// [`Table::encode_value`] with the value's bytes written into `v` and the key into `k`
    /// (their previous contents dropped, their allocations reused: a batch serializes item
    /// after item into the same two buffers), the partition hash taken from `memo` when the
    /// partition is the previous key's (see [`crate::keys::KeyBuilder::hash_memo`]). On an error they hold
    /// no meaningful bytes.
    pub(crate) fn encode_value_into<T: serde::Serialize + ?Sized>(
        &self,
        value: &T,
        v: &mut Vec<u8>,
        k: &mut Vec<u8>,
        memo: &mut HashMemo,
    ) -> Result<()> {
        let s = &self.def.schema;
        let mut spots = KeySpots::new(&s.partition, &s.sort);
        to_item_bytes_keyed_into(value, &mut spots, v)
            .map_err(|e| Error::invalid(self.name(), e.to_string()))?;
        let v: &[u8] = v;
        if !spots.done {
            // Not written as a struct or map at the top (an enum variant with data): look the
            // key attributes up in the bytes.
            *k = self.key_from_item_bytes(v)?;
            return Ok(());
        }
        // One pass: each attribute is checked, then encoded. `key_of` checks them all before
        // encoding any, but the values a serializer writes (no tuples) always encode, so the
        // first failing check is the same error.
        k.clear();
        let mut b = self.def.layout.builder(k, 32);
        let np = s.partition.len();
        let mut h = 0;
        for (i, f) in s.key_fields().enumerate() {
            match self.typed_key_attr(f, v, spots.at[i])? {
                KeyAttr::Text(t) => b.text(t),
                KeyAttr::Int(x) => b.int(x),
                KeyAttr::Bytes(x) => b.bytes(x),
                KeyAttr::Value(x) => b.value(&x)?,
                // Refused by `typed_key_attr`.
                KeyAttr::Nested(_) => {}
            }
            if i + 1 == np {
                h = b.hash_memo(memo);
            }
        }
        b.finish(h);
        Ok(())
    }

    /// The key attribute of field `f` whose tag is at `pos` of item bytes `v` (`usize::MAX`:
    /// absent), checked like [`Table::key_of`] checks it. Inlined into the typed put (one
    /// call per key field per item); the errors are built out of line.
    #[inline]
    pub(super) fn typed_key_attr<'v>(
        &self,
        f: &KeyField,
        v: &'v [u8],
        pos: usize,
    ) -> Result<KeyAttr<'v>> {
        if pos == usize::MAX {
            return Err(self.missing_key_attr(f));
        }
        let a = key_attr_at(v, pos)?;
        match (&a, f.kind) {
            (KeyAttr::Text(_), Kind::Text)
            | (KeyAttr::Int(_), Kind::Int)
            | (KeyAttr::Bytes(_), Kind::Bytes) => Ok(a),
            (KeyAttr::Value(x), _) if f.accepts(x) => Ok(a),
            _ => Err(self.key_attr_type_error(f, &a)),
        }
    }

    /// The error of a typed put whose value has no attribute for key field `f`.
    #[cold]
    pub(super) fn missing_key_attr(&self, f: &KeyField) -> Error {
        Error::MissingKeyAttribute {
            table: self.name().to_owned(),
            attr: f.name.clone(),
        }
    }

    /// The error of a typed put whose attribute `a` for key field `f` has the wrong type.
    #[cold]
    pub(super) fn key_attr_type_error(&self, f: &KeyField, a: &KeyAttr<'_>) -> Error {
        let found = match a {
            KeyAttr::Text(_) => Kind::Text.name(),
            KeyAttr::Int(_) => Kind::Int.name(),
            KeyAttr::Bytes(_) => Kind::Bytes.name(),
            KeyAttr::Value(x) => x.kind().name(),
            KeyAttr::Nested(t) => t,
        };
        Error::KeyType {
            table: self.name().to_owned(),
            attr: f.name.clone(),
            expected: f.kind.name().to_owned(),
            found: found.to_owned(),
        }
    }

    /// The key of stored item bytes, its key attributes looked up by name.
    pub(super) fn key_from_item_bytes(&self, v: &[u8]) -> Result<Vec<u8>> {
        let item = ItemRef::new(v)?;
        let s = &self.def.schema;
        let field = |f: &KeyField| -> Result<Value> {
            match item.attr(&f.name)? {
                None => Err(Error::MissingKeyAttribute {
                    table: self.name().to_owned(),
                    attr: f.name.clone(),
                }),
                Some(Ok(v)) => {
                    self.check_field(f, &v)?;
                    Ok(v)
                }
                Some(Err(type_name)) => Err(Error::KeyType {
                    table: self.name().to_owned(),
                    attr: f.name.clone(),
                    expected: f.kind.name().to_owned(),
                    found: type_name.to_owned(),
                }),
            }
        };
        let partition: Vec<Value> = s.partition.iter().map(field).collect::<Result<_>>()?;
        let sort: Vec<Value> = s.sort.iter().map(field).collect::<Result<_>>()?;
        self.key_bytes(&partition, &sort)
    }
}
