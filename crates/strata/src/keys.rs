//! Engine key layout (specified in `docs/format/tables.md`).
//!
//! Every engine key Strata writes is one native-codec tuple whose **first two elements pick
//! the stripe** (the engine's partitioner returns their byte length):
//!
//! | keys | tuple |
//! |---|---|
//! | catalog | `(0, kind: text, name: text)` |
//! | table item | `(table_id ≥ 1, h, p1 … pn, s1 … sm)` |
//!
//! `h` = the high 16 bits of `crc32(native(p1 … pn))` (the partition fields encoded alone,
//! with their orders). So one partition lives in one stripe, a Scan segment is a contiguous
//! range of `h`, and the catalog (element 0 = `0`) cannot collide with any table key.

use strata_key::codec::native::{self, NativeCodec, Order};
use strata_key::{TupleCodec, Value};

use crate::error::{Error, Result};
use crate::schema::TableSchema;

/// Table id reserved for the catalog.
pub const CATALOG_ID: u64 = 0;
/// Number of partition-hash values (`h` is in `0..HASH_SPACE`).
pub const HASH_SPACE: u32 = 1 << 16;

/// The partitioner to give the engine: the byte length of the first two tuple elements.
///
/// A key with fewer elements (Strata writes none; it only uses them as range bounds, such as
/// the table prefix `(id)`) has no partition: 0. Returning its own length would tell the engine
/// that a range starting there lies inside one partition, and a scan of `(id)`'s prefix would
/// then read a single stripe.
pub fn partition_prefix_len(key: &[u8]) -> usize {
    native::prefix_len(key, 2).unwrap_or(0)
}

/// The engine partitioner: the recorded kind `native-tuple:2`, which cuts keys exactly like
/// [`partition_prefix_len`].
pub fn partitioner() -> strata_lsm::Partitioner {
    strata_lsm::Partitioner::NativeTuplePrefix(2)
}

/// Key of a catalog entry `(0, kind, name)`.
pub fn catalog_key(kind: &str, name: &str) -> Result<Vec<u8>> {
    NativeCodec::new()
        .encode(&[
            Value::Int(CATALOG_ID as i128),
            Value::from(kind),
            Value::from(name),
        ])
        .map_err(|e| Error::Corrupt {
            what: "catalog key".into(),
            offset: 0,
            reason: e.to_string(),
        })
}

/// Prefix of every catalog entry of `kind`.
pub fn catalog_prefix(kind: &str) -> Result<Vec<u8>> {
    NativeCodec::new()
        .encode(&[Value::Int(CATALOG_ID as i128), Value::from(kind)])
        .map_err(|e| Error::Corrupt {
            what: "catalog key".into(),
            offset: 0,
            reason: e.to_string(),
        })
}

/// How one table's keys are built.
#[derive(Debug, Clone)]
pub struct KeyLayout {
    table: String,
    id: u64,
    /// Orders of the whole key: id, h, partition fields, sort fields.
    codec: NativeCodec,
    /// Orders of the partition fields alone (for `h`).
    partition_codec: NativeCodec,
}

impl KeyLayout {
    /// The layout of table `id` with `schema`.
    pub fn new(schema: &TableSchema, id: u64) -> KeyLayout {
        let part: Vec<Order> = schema.partition.iter().map(|f| f.codec_order()).collect();
        let mut all = vec![Order::default(), Order::default()];
        all.extend(part.iter().copied());
        all.extend(schema.sort.iter().map(|f| f.codec_order()));
        KeyLayout {
            table: schema.name.clone(),
            id,
            codec: NativeCodec::with_orders(all),
            partition_codec: NativeCodec::with_orders(part),
        }
    }

    /// The table id.
    pub fn id(&self) -> u64 {
        self.id
    }

    fn enc_err(&self, e: strata_key::EncodeError) -> Error {
        Error::invalid(&self.table, format!("key cannot be encoded: {e}"))
    }

    /// `h` of a partition.
    pub fn partition_hash(&self, partition: &[Value]) -> Result<u16> {
        let bytes = self
            .partition_codec
            .encode(partition)
            .map_err(|e| self.enc_err(e))?;
        Ok((crc32fast::hash(&bytes) >> 16) as u16)
    }

    /// Encoding of `(id, h, partition…, sort…)`: a whole item key, or a key prefix when `sort`
    /// holds only leading sort values. The values are encoded in place (no tuple is built, so
    /// no value is cloned per key).
    pub fn key(&self, h: u16, partition: &[Value], sort: &[Value]) -> Result<Vec<u8>> {
        let orders = self.codec.orders();
        let mut out = Vec::with_capacity(32);
        let id = Value::Int(self.id as i128);
        NativeCodec::encode_element(&id, Order::default(), &mut out)
            .map_err(|e| self.enc_err(e))?;
        let h = Value::Int(h as i128);
        NativeCodec::encode_element(&h, Order::default(), &mut out).map_err(|e| self.enc_err(e))?;
        for (i, v) in partition.iter().chain(sort).enumerate() {
            let order = orders.get(2 + i).copied().unwrap_or_default();
            NativeCodec::encode_element(v, order, &mut out).map_err(|e| self.enc_err(e))?;
        }
        Ok(out)
    }

    /// Encoding of a whole item key `(id, h, partition…, sort…)` (same bytes as [`Self::key`]).
    pub fn item_key(&self, h: u16, partition: &[Value], sort: &[Value]) -> Result<Vec<u8>> {
        self.key(h, partition, sort)
    }

    /// Encoding of `(id)`: the prefix of every key of the table.
    pub fn table_prefix(&self) -> Result<Vec<u8>> {
        self.codec
            .encode(&[Value::Int(self.id as i128)])
            .map_err(|e| self.enc_err(e))
    }

    /// Encoding of `(id, h)`.
    pub fn hash_prefix(&self, h: u32) -> Result<Vec<u8>> {
        self.codec
            .encode(&[Value::Int(self.id as i128), Value::Int(h as i128)])
            .map_err(|e| self.enc_err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitioner_cuts_after_two_elements() {
        let c = NativeCodec::new();
        let k = c
            .encode(&[
                Value::Int(5),
                Value::Int(7),
                Value::from("p"),
                Value::Int(1),
            ])
            .unwrap();
        let p = c.encode(&[Value::Int(5), Value::Int(7)]).unwrap();
        assert_eq!(partition_prefix_len(&k), p.len());
        assert_eq!(partition_prefix_len(&p), p.len());
        let table = c.encode(&[Value::Int(5)]).unwrap();
        assert_eq!(partition_prefix_len(&table), 0);
        assert_eq!(partition_prefix_len(b""), 0);
        // The engine's recorded kind cuts keys the same way.
        for key in [&k, &p, &table, &Vec::new()] {
            assert_eq!(
                partitioner().partition(key),
                &key[..partition_prefix_len(key)]
            );
        }
    }
}
