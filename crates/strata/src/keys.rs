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

/// The engine partitioner of a new database: the recorded kind `native-hash:2`, which cuts
/// keys exactly like [`partition_prefix_len`] and files a partition in stripe
/// `(h × stripes) >> 16` — the high byte of `h` with 256 stripes. A table's keys then run
/// through the stripes in key order, so a Scan (or a segment of one) reads the stripes one
/// after another instead of merging all of them.
pub fn partitioner() -> strata_lsm::Partitioner {
    strata_lsm::Partitioner::NativeTupleHash(2)
}

/// The partitioner of databases created before [`partitioner`] (recorded `native-tuple:2`,
/// or not recorded at all): the same partitions, filed by `crc32(id, h) % stripes`. Such a
/// database is opened with it (a Scan then merges the stripes).
pub fn legacy_partitioner() -> strata_lsm::Partitioner {
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
    /// The native encoding of `id` (the first element of every key of the table).
    id_bytes: Vec<u8>,
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
        let mut id_bytes = Vec::with_capacity(9);
        strata_key::codec::native::encode_int_element(id as i128, Order::default(), &mut id_bytes);
        KeyLayout {
            table: schema.name.clone(),
            id,
            id_bytes,
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

    /// [`Self::key`]`(h, partition, sort)` built from `base`, the encoding of
    /// `(id, h, partition…)` ([`Self::partition_prefix`]) of `n_partition` fields: only the
    /// sort values are encoded (a Query's bounds share one partition encoding).
    pub(crate) fn key_after(
        &self,
        base: &[u8],
        n_partition: usize,
        sort: &[Value],
    ) -> Result<Vec<u8>> {
        let orders = self.codec.orders();
        let mut out = Vec::with_capacity(base.len() + 10 * sort.len() + 1);
        out.extend_from_slice(base);
        for (i, v) in sort.iter().enumerate() {
            let order = orders.get(2 + n_partition + i).copied().unwrap_or_default();
            NativeCodec::encode_element(v, order, &mut out).map_err(|e| self.enc_err(e))?;
        }
        Ok(out)
    }

    /// Encoding of a whole item key `(id, h, partition…, sort…)` (same bytes as [`Self::key`]).
    pub fn item_key(&self, h: u16, partition: &[Value], sort: &[Value]) -> Result<Vec<u8>> {
        self.key(h, partition, sort)
    }

    /// A whole item key to be built field by field (see [`KeyBuilder`]), appended to `out`
    /// after what it holds (a caller's reused buffer: no allocation per key once it has
    /// grown); `hint` is the expected length of the encoded fields. After
    /// [`KeyBuilder::finish`] the key is `out[len..]`, `len` being `out.len()` now.
    pub(crate) fn builder<'o>(&self, out: &'o mut Vec<u8>, hint: usize) -> KeyBuilder<'_, 'o> {
        let base = out.len();
        out.reserve(self.id_bytes.len() + MAX_HASH_LEN + hint + STORE_SLACK);
        // `id` goes first now; room for `h` after it (a constant-size write, no memset).
        out.extend_from_slice(&self.id_bytes);
        out.extend_from_slice(&[0; MAX_HASH_LEN]);
        KeyBuilder {
            layout: self,
            out,
            base,
            n: 0,
        }
    }

    /// `h` of a partition and the encoding of `(id, h, partition…)` (the prefix of every key
    /// of the partition), with the partition encoded once for both: the same as
    /// [`Self::partition_hash`] and [`Self::key`] with no sort values.
    pub fn partition_prefix(&self, partition: &[Value]) -> Result<(u16, Vec<u8>)> {
        let mut out = Vec::new();
        let mut b = self.builder(&mut out, 16 * partition.len());
        for v in partition {
            b.value(v)?;
        }
        let h = b.hash();
        b.finish(h);
        Ok((h, out))
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

/// The partition bytes of the last key built with [`KeyBuilder::hash_memo`] and their `h`
/// (`None`: nothing remembered yet).
#[derive(Default, Debug, Clone)]
pub(crate) struct HashMemo {
    part: Vec<u8>,
    h: Option<u16>,
}

/// Longest native encoding of a partition hash `h < 65536` (3 bytes from 8152 on).
const MAX_HASH_LEN: usize = 3;

/// Bytes every [`KeyBuilder`] keeps free beyond its caller's hint: the widest single store of
/// the native element encoders (a text of up to 16 bytes is appended with one 18-byte store,
/// whatever its length, and the vector must have room for all of it). Without it a key whose
/// hint was tight reallocated once (a one-text partition prefix: once per Query).
const STORE_SLACK: usize = 24;

/// A whole item key `(id, h, partition…, sort…)` being built, with the partition fields
/// encoded once for both the hash and the key: the fields go after `id` and a gap for `h`
/// (its longest encoding), `h` is the crc32 of the partition fields' bytes as they lie there
/// (the same bytes as [`KeyLayout::partition_hash`] hashes: each element is encoded on its
/// own, with its order), and [`KeyBuilder::finish`] writes `h` right before the fields and
/// drops what is left of the gap. The result is byte for byte [`KeyLayout::item_key`] (tested against it in
/// `table::tests::typed_keys_are_item_keys`). The key is built at the end of a vector the
/// builder borrows, after the bytes it held before (`base`), which it leaves alone.
pub(crate) struct KeyBuilder<'l, 'o> {
    layout: &'l KeyLayout,
    out: &'o mut Vec<u8>,
    /// Where the key starts in `out`.
    base: usize,
    /// Key fields appended so far.
    n: usize,
}

impl KeyBuilder<'_, '_> {
    fn order(&self) -> Order {
        self.layout
            .codec
            .orders()
            .get(2 + self.n)
            .copied()
            .unwrap_or_default()
    }

    /// Where the key fields start in `out`.
    fn gap(&self) -> usize {
        self.base + self.layout.id_bytes.len() + MAX_HASH_LEN
    }

    /// Appends the next key field.
    pub(crate) fn value(&mut self, v: &Value) -> Result<()> {
        let order = self.order();
        NativeCodec::encode_element(v, order, self.out).map_err(|e| self.layout.enc_err(e))?;
        self.n += 1;
        Ok(())
    }

    /// [`Self::value`] (the same bytes) with texts, integers and byte strings appended by
    /// [`Self::text`], [`Self::int`] and [`Self::bytes`], without the general encoder's
    /// dispatch and depth bookkeeping: the keys of point reads and of item puts.
    #[inline]
    pub(crate) fn field(&mut self, v: &Value) -> Result<()> {
        match v {
            Value::Text(s) => self.text(s),
            Value::Int(i) => self.int(*i),
            Value::Bytes(b) => self.bytes(b),
            other => return self.value(other),
        }
        Ok(())
    }

    /// Appends the next key field, a text (the bytes of [`Self::value`] of `Value::Text`).
    pub(crate) fn text(&mut self, s: &str) {
        let order = self.order();
        native::encode_text_element(s, order, self.out);
        self.n += 1;
    }

    /// Appends the next key field, an integer.
    pub(crate) fn int(&mut self, i: i128) {
        let order = self.order();
        native::encode_int_element(i, order, self.out);
        self.n += 1;
    }

    /// Appends the next key field, a byte string.
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        let order = self.order();
        native::encode_bytes_element(b, order, self.out);
        self.n += 1;
    }

    /// `h` of the fields appended so far: call it after the partition fields, before the sort
    /// fields.
    pub(crate) fn hash(&self) -> u16 {
        (crc32fast::hash(&self.out[self.gap()..]) >> 16) as u16
    }

    /// [`Self::hash`], remembered in `memo` for the next key: a key whose partition fields
    /// are the very bytes of the previous one's (rows of one partition in a row, as a bulk
    /// load writes them) takes the remembered `h` instead of hashing them again. `h` depends
    /// on those bytes only (not on the table), so one memo serves keys of any table.
    pub(crate) fn hash_memo(&self, memo: &mut HashMemo) -> u16 {
        let part = &self.out[self.gap()..];
        if let Some(h) = memo.h {
            if memo.part == part {
                return h;
            }
        }
        let h = self.hash();
        memo.part.clear();
        memo.part.extend_from_slice(part);
        memo.h = Some(h);
        h
    }

    /// Finishes the key in the vector, with `h` from [`Self::hash`].
    pub(crate) fn finish(self, h: u16) {
        // `h` is encoded after the fields, then moved into the gap.
        let end = self.out.len();
        native::encode_int_element(i128::from(h), Order::default(), self.out);
        let hl = self.out.len() - end;
        let gap = self.gap();
        // `id` is already at the start of the key (see `KeyLayout::builder`).
        let at = self.base + self.layout.id_bytes.len();
        if hl == MAX_HASH_LEN {
            self.out.copy_within(end.., at);
            self.out.truncate(end);
        } else {
            // A short `h`: the fields move left by what is left of the gap.
            let h = [self.out[end], *self.out.get(end + 1).unwrap_or(&0)];
            self.out.truncate(end);
            self.out.copy_within(gap..end, at + hl);
            self.out[at..at + hl].copy_from_slice(&h[..hl]);
            self.out.truncate(end - (MAX_HASH_LEN - hl));
        }
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
        // The engine's recorded kinds cut keys the same way.
        for key in [&k, &p, &table, &Vec::new()] {
            for kind in [partitioner(), legacy_partitioner()] {
                assert_eq!(kind.partition(key), &key[..partition_prefix_len(key)]);
            }
        }
        // And the stripe of a partition is the high byte of h.
        let k = c
            .encode(&[Value::Int(5), Value::Int(0xab12), Value::from("p")])
            .unwrap();
        assert_eq!(partitioner().stripe(&k, 256), 0xab);
    }

    /// Key field `f{i}` of `v`'s kind (a NULL value: an integer field), in the given order.
    fn key_field(i: usize, v: &Value, desc: bool, last: bool) -> crate::schema::KeyField {
        let kind = match v.kind() {
            strata_key::Kind::Null => strata_key::Kind::Int,
            k => k,
        };
        let mut f = crate::schema::KeyField::new(format!("f{i}"), kind);
        if desc {
            f = f.desc();
        }
        if last {
            f = f.nulls_last();
        }
        f
    }

    proptest::proptest! {
        /// A Query's partition prefix, built with the partition encoded once, is the hash and
        /// key prefix of the two separate encodings (any values, orders and table id).
        #[test]
        fn partition_prefix_is_hash_and_key(
            part in proptest::collection::vec(
                (crate::item_codec::tests::arb_value(), proptest::prelude::any::<(bool, bool)>()),
                1..4,
            ),
            id in 1u64..100_000,
        ) {
            let fields = part
                .iter()
                .enumerate()
                .map(|(i, (v, (desc, last)))| key_field(i, v, *desc, *last))
                .collect();
            let layout = KeyLayout::new(&TableSchema::new("t", fields), id);
            let values: Vec<Value> = part.into_iter().map(|(v, _)| v).collect();
            let both = layout.partition_prefix(&values);
            let apart = layout
                .partition_hash(&values)
                .and_then(|h| Ok((h, layout.key(h, &values, &[])?)));
            match (both, apart) {
                (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b),
                (Err(_), Err(_)) => {}
                (a, b) => proptest::prop_assert!(false, "{a:?} vs {b:?}"),
            }
        }

        /// [`KeyBuilder::field`] (texts, integers and byte strings appended by their own
        /// encoders) appends the bytes [`KeyBuilder::value`] appends, or fails as it fails, for
        /// any values of any kinds in any orders, field after field, and the keys they finish
        /// are the same.
        #[test]
        fn builder_field_is_value(
            fields in proptest::collection::vec(
                (crate::item_codec::tests::arb_value(), proptest::prelude::any::<(bool, bool)>()),
                1..6,
            ),
            id in 1u64..100_000,
        ) {
            let defs: Vec<crate::schema::KeyField> = fields
                .iter()
                .enumerate()
                .map(|(i, (v, (desc, last)))| key_field(i, v, *desc, *last))
                .collect();
            let layout = KeyLayout::new(&TableSchema::new("t", defs), id);
            let (mut fast, mut general) = (vec![7u8], vec![7u8]);
            let mut bf = layout.builder(&mut fast, 0);
            let mut bg = layout.builder(&mut general, 0);
            for (v, _) in &fields {
                match (bf.field(v), bg.value(v)) {
                    (Ok(()), Ok(())) => {}
                    (Err(a), Err(b)) => {
                        proptest::prop_assert_eq!(a.to_string(), b.to_string());
                        return Ok(());
                    }
                    (a, b) => proptest::prop_assert!(false, "{a:?} vs {b:?}"),
                }
                proptest::prop_assert_eq!(&bf.out[..], &bg.out[..]);
            }
            let h = bg.hash();
            bf.finish(h);
            bg.finish(h);
            proptest::prop_assert_eq!(fast, general);
        }

        /// A Query's bound built from the partition prefix ([`KeyLayout::key_after`]) is the
        /// key [`KeyLayout::key`] encodes whole (any values, orders, leading sort values).
        #[test]
        fn key_after_prefix_is_key(
            fields in proptest::collection::vec(
                (crate::item_codec::tests::arb_value(), proptest::prelude::any::<(bool, bool)>()),
                1..6,
            ),
            n_part in 1usize..3,
            id in 1u64..100_000,
        ) {
            let n_part = n_part.min(fields.len());
            let defs: Vec<crate::schema::KeyField> = fields
                .iter()
                .enumerate()
                .map(|(i, (v, (desc, last)))| key_field(i, v, *desc, *last))
                .collect();
            let schema = TableSchema::new("t", defs[..n_part].to_vec())
                .with_sort(defs[n_part..].to_vec());
            let layout = KeyLayout::new(&schema, id);
            let values: Vec<Value> = fields.into_iter().map(|(v, _)| v).collect();
            let (part, sort) = values.split_at(n_part);
            let Ok((h, prefix)) = layout.partition_prefix(part) else { return Ok(()) };
            for k in 0..=sort.len() {
                let whole = layout.key(h, part, &sort[..k]);
                let after = layout.key_after(&prefix, part.len(), &sort[..k]);
                match (whole, after) {
                    (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b),
                    (Err(_), Err(_)) => {}
                    (a, b) => proptest::prop_assert!(false, "{a:?} vs {b:?}"),
                }
            }
        }
    }
}
