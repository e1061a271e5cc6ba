//! [`Table`] handles and [`Key`]s: put, get, delete.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use strata_key::codec::native::NativeCodec;
use strata_key::{Tuple, TupleCodec, Value};
use strata_lsm::{Condition, WriteBatch};

use crate::db::{Inner, TableDef};
use crate::error::{Error, Result};
use crate::item::{Attr, Item};
use crate::item_codec::decode_item;
use crate::item_serde::from_item_bytes;
use crate::schema::{KeyField, TableSchema};

/// The key of an item: the partition values, then the sort values, in schema order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// One value per partition field.
    pub partition: Vec<Value>,
    /// One value per sort field.
    pub sort: Vec<Value>,
}

impl Key {
    /// A key from its values.
    pub fn new(partition: Vec<Value>, sort: Vec<Value>) -> Key {
        Key { partition, sort }
    }

    /// The key attributes as an item (attribute name → value).
    pub fn to_item(&self, schema: &TableSchema) -> Item {
        schema
            .key_fields()
            .zip(self.partition.iter().chain(self.sort.iter()))
            .map(|(f, v)| (f.name.clone(), Attr::Value(v.clone())))
            .collect()
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t: Tuple = self
            .partition
            .iter()
            .chain(self.sort.iter())
            .cloned()
            .collect();
        write!(f, "{t}")
    }
}

/// A handle to one table. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Table {
    pub(crate) db: Arc<Inner>,
    pub(crate) def: Arc<TableDef>,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("schema", &self.def.schema)
            .finish()
    }
}

/// An item's stored state as read by [`Table::get_versioned`]: a conditional write can
/// require that it is still the same ([`crate::Batch::require_unchanged`]), which makes a
/// read-modify-write atomic without locks (optimistic concurrency).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemVersion {
    pub(crate) key: Vec<u8>,
    pub(crate) bytes: Option<Vec<u8>>,
}

impl ItemVersion {
    /// True when the item did not exist.
    pub fn is_absent(&self) -> bool {
        self.bytes.is_none()
    }

    /// Size in bytes of the stored item (0 when absent).
    pub fn stored_len(&self) -> usize {
        self.bytes.as_ref().map_or(0, Vec::len)
    }
}

/// A key checked against its table and encoded.
pub(crate) struct EncodedKey {
    pub bytes: Vec<u8>,
}

thread_local! {
    /// The key buffer of this thread's point reads (see [`Table::with_key_bytes`]); empty
    /// while a read uses it.
    static KEY_BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Largest key buffer kept for the next read (a key that needed more is built in a buffer
/// that is then dropped, so one huge key does not stay allocated per thread).
const MAX_KEPT_KEY_BUF: usize = 4096;

impl Table {
    pub(crate) fn new(db: Arc<Inner>, def: Arc<TableDef>) -> Table {
        Table { db, def }
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.def.schema.name
    }

    /// The table's schema.
    pub fn schema(&self) -> &TableSchema {
        &self.def.schema
    }

    pub(crate) fn check_live(&self) -> Result<()> {
        if self.def.dropped.load(Ordering::SeqCst) {
            Err(Error::TableNotFound(self.name().to_owned()))
        } else {
            Ok(())
        }
    }

    /// Checks that field `f` accepts `v`; inlined (every key value of every read and put
    /// passes here), the error built out of line.
    #[inline]
    fn check_field(&self, f: &KeyField, v: &Value) -> Result<()> {
        if f.accepts(v) {
            Ok(())
        } else {
            Err(self.field_type_error(f, v))
        }
    }

    /// The error of a key value `v` that field `f` does not accept.
    #[cold]
    fn field_type_error(&self, f: &KeyField, v: &Value) -> Error {
        Error::KeyType {
            table: self.name().to_owned(),
            attr: f.name.clone(),
            expected: f.kind.name().to_owned(),
            found: v.kind().name().to_owned(),
        }
    }

    fn field_value<'a>(&self, f: &KeyField, item: &'a Item) -> Result<&'a Value> {
        match item.get(&f.name) {
            None => Err(Error::MissingKeyAttribute {
                table: self.name().to_owned(),
                attr: f.name.clone(),
            }),
            Some(Attr::Value(v)) => {
                self.check_field(f, v)?;
                Ok(v)
            }
            Some(other) => Err(Error::KeyType {
                table: self.name().to_owned(),
                attr: f.name.clone(),
                expected: f.kind.name().to_owned(),
                found: other.type_name().to_owned(),
            }),
        }
    }

    /// The key of a full item (its key attributes, type-checked; other attributes ignored).
    pub fn key_of(&self, item: &Item) -> Result<Key> {
        let s = &self.def.schema;
        let partition = s
            .partition
            .iter()
            .map(|f| self.field_value(f, item).cloned())
            .collect::<Result<_>>()?;
        let sort = s
            .sort
            .iter()
            .map(|f| self.field_value(f, item).cloned())
            .collect::<Result<_>>()?;
        Ok(Key { partition, sort })
    }

    /// A key from an item holding exactly the key attributes (an unknown attribute is an
    /// error that names it).
    pub fn key(&self, attrs: &Item) -> Result<Key> {
        if let Some(extra) = attrs.keys().find(|n| !self.def.schema.is_key_attribute(n)) {
            return Err(Error::invalid(
                self.name(),
                format!("{extra:?} is not a key attribute"),
            ));
        }
        self.key_of(attrs)
    }

    /// Checks a key's arity and types.
    pub fn check_key(&self, key: &Key) -> Result<()> {
        let s = &self.def.schema;
        if key.partition.len() != s.partition.len() || key.sort.len() != s.sort.len() {
            return Err(self.key_arity_error(key));
        }
        for (f, v) in s
            .key_fields()
            .zip(key.partition.iter().chain(key.sort.iter()))
        {
            self.check_field(f, v)?;
        }
        Ok(())
    }

    /// The error of a key whose value counts are not the schema's.
    #[cold]
    fn key_arity_error(&self, key: &Key) -> Error {
        let s = &self.def.schema;
        Error::invalid(
            self.name(),
            format!(
                "a key has {} partition and {} sort values, got {} and {}",
                s.partition.len(),
                s.sort.len(),
                key.partition.len(),
                key.sort.len()
            ),
        )
    }

    /// Checks a partition's arity and types.
    pub(crate) fn check_partition(&self, partition: &[Value]) -> Result<()> {
        let s = &self.def.schema;
        if partition.len() != s.partition.len() {
            return Err(Error::invalid(
                self.name(),
                format!(
                    "a partition has {} values, got {}",
                    s.partition.len(),
                    partition.len()
                ),
            ));
        }
        for (f, v) in s.partition.iter().zip(partition) {
            self.check_field(f, v)?;
        }
        Ok(())
    }

    /// Checks values for a prefix of the sort fields.
    pub(crate) fn check_sort_prefix(&self, values: &[Value]) -> Result<()> {
        let s = &self.def.schema;
        if values.is_empty() || values.len() > s.sort.len() {
            return Err(Error::invalid(
                self.name(),
                format!(
                    "a sort condition takes 1 to {} values (the table has {} sort fields), got {}",
                    s.sort.len(),
                    s.sort.len(),
                    values.len()
                ),
            ));
        }
        for (f, v) in s.sort.iter().zip(values) {
            self.check_field(f, v)?;
        }
        Ok(())
    }

    /// The partition hash `h` of a partition (see [`crate::keys`]); Scan segment `i` of `n`
    /// holds the partitions with `h * n / 65536 == i`.
    pub fn partition_hash(&self, partition: &[Value]) -> Result<u16> {
        self.check_partition(partition)?;
        self.def.layout.partition_hash(partition)
    }

    /// The [`Key`] of a stored item from its engine key `(id, h, partition…, sort…)`.
    pub(crate) fn decode_engine_key(&self, bytes: &[u8]) -> Result<Key> {
        let corrupt = |reason: String| Error::Corrupt {
            what: format!("key of table {:?}", self.name()),
            offset: 0,
            reason,
        };
        let t = NativeCodec::new()
            .decode(bytes)
            .map_err(|e| corrupt(e.to_string()))?;
        let mut vals = t.0;
        let (np, ns) = (self.schema().partition.len(), self.schema().sort.len());
        if vals.len() != 2 + np + ns {
            return Err(corrupt(format!(
                "{} elements, the schema has {}",
                vals.len(),
                2 + np + ns
            )));
        }
        let sort = vals.split_off(2 + np);
        let partition = vals.split_off(2);
        Ok(Key::new(partition, sort))
    }

    pub(crate) fn encode_key(&self, key: &Key) -> Result<EncodedKey> {
        self.check_key(key)?;
        Ok(EncodedKey {
            bytes: self.key_bytes(&key.partition, &key.sort)?,
        })
    }

    /// The engine key of checked key values, the partition encoded once for both its hash
    /// and the key (the bytes of `layout.item_key(layout.partition_hash(partition), …)`).
    fn key_bytes<'v>(
        &self,
        partition: impl IntoIterator<Item = &'v Value>,
        sort: impl IntoIterator<Item = &'v Value>,
    ) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.key_bytes_into(partition, sort, &mut out)?;
        Ok(out)
    }

    /// [`Table::key_bytes`] appended to `out` (after what it holds).
    fn key_bytes_into<'v>(
        &self,
        partition: impl IntoIterator<Item = &'v Value>,
        sort: impl IntoIterator<Item = &'v Value>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let mut b = self.def.layout.builder(out, 32);
        for v in partition {
            b.field(v)?;
        }
        let h = b.hash();
        for v in sort {
            b.field(v)?;
        }
        b.finish(h);
        Ok(())
    }

    /// Runs `f` on the engine key of `key` (checked and encoded as [`Table::encode_key`] does,
    /// the same bytes), built in this thread's reused key buffer instead of a new vector: a
    /// point read allocates nothing for its key. `f` may read tables again (a `Deserialize`
    /// of the caller's can): the buffer is taken out of its slot while `f` runs, so a nested
    /// read builds its key in a vector of its own.
    pub(crate) fn with_key_bytes<T>(
        &self,
        key: &Key,
        f: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        self.check_key(key)?;
        let mut buf = KEY_BUF.try_with(Cell::take).unwrap_or_default();
        buf.clear();
        let r = match self.key_bytes_into(&key.partition, &key.sort, &mut buf) {
            Ok(()) => f(&buf),
            Err(e) => Err(e),
        };
        if buf.capacity() <= MAX_KEPT_KEY_BUF {
            // Fails only while the thread's locals are being destroyed: the buffer is dropped.
            let _ = KEY_BUF.try_with(|c| c.set(buf));
        }
        r
    }

    /// Stores a value of the caller's type as an item (see [`crate::item_serde`]: a struct's
    /// fields become attributes, and the bytes are those of the equivalent [`Item`]),
    /// replacing any item with the same key.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use strata::{Db, Key, KeyField, TableSchema};
    /// use strata_key::{Kind, Value};
    ///
    /// #[derive(Serialize, Deserialize, Debug, PartialEq)]
    /// struct Post { user: String, ts: i64, body: String }
    ///
    /// let db = Db::memory()?;
    /// let posts = db.create_table(
    ///     TableSchema::new("posts", vec![KeyField::new("user", Kind::Text)])
    ///         .with_sort(vec![KeyField::new("ts", Kind::Int)]),
    /// )?;
    /// let p = Post { user: "u1".into(), ts: 5, body: "hi".into() };
    /// posts.put_as(&p)?;
    /// let k = Key::new(vec![Value::from("u1")], vec![Value::Int(5)]);
    /// assert_eq!(posts.get_as::<Post>(&k)?, Some(p));
    /// // The same item, read as an `Item`.
    /// assert_eq!(posts.get(&k)?.unwrap().value("body"), Some(&Value::from("hi")));
    /// # Ok::<(), strata::Error>(())
    /// ```
    pub fn put_as<T: serde::Serialize + ?Sized>(&self, value: &T) -> Result<()> {
        let (k, v) = self.encode_value(value)?;
        self.put_encoded(k, v)
    }

    /// Writes one encoded item (key and value bytes), replacing any item with the key.
    fn put_encoded(&self, k: Vec<u8>, v: Vec<u8>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(k, v);
        Ok(self.gated_write(b)??)
    }

    /// The item with `key`, if any, decoded straight into `T` (see [`crate::item_serde`]);
    /// [`Error::ItemType`] when the stored item does not fit `T`.
    pub fn get_as<T: serde::de::DeserializeOwned>(&self, key: &Key) -> Result<Option<T>> {
        self.get_decoded(key, |v| from_item_bytes(v))
    }

    /// The item with `key`, if any, decoded by `decode` from the engine's own bytes (a mapped
    /// block, a cached block or the memtable), not a copy; the key built in the thread's
    /// reused buffer ([`Table::with_key_bytes`]).
    #[inline]
    fn get_decoded<T>(&self, key: &Key, decode: impl Fn(&[u8]) -> Result<T>) -> Result<Option<T>> {
        self.with_key_bytes(key, |k| {
            let mut out = None;
            self.db
                .engine
                .get_borrowed(k, &mut |v| out = Some(decode(v)))?;
            self.check_live()?;
            out.transpose()
        })
    }

    fn write(&self, batch: WriteBatch) -> std::result::Result<(), strata_lsm::Error> {
        self.db.engine.write(batch)
    }

    fn gated_write(&self, batch: WriteBatch) -> Result<std::result::Result<(), strata_lsm::Error>> {
        let _gate = self.db.write_guard();
        self.check_live()?;
        Ok(self.write(batch))
    }

    /// Stores `item`, replacing any item with the same key.
    pub fn put(&self, item: &Item) -> Result<()> {
        let (k, v) = self.encode_item(item)?;
        self.put_encoded(k, v)
    }

    /// Stores `item` only if no item has its key yet, atomically with the write; otherwise
    /// [`Error::ConditionFailed`] and nothing is written.
    pub fn put_if_not_exists(&self, item: &Item) -> Result<()> {
        let (key, k, v) = self.encode_item_keyed(item)?;
        let mut b = WriteBatch::new();
        b.require(Condition::Absent(k.clone()));
        b.put(k, v);
        match self.gated_write(b)? {
            Ok(()) => Ok(()),
            Err(strata_lsm::Error::ConditionFailed { .. }) => Err(Error::ConditionFailed {
                table: self.name().to_owned(),
                reason: format!("an item with key {key} already exists"),
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Metadata stored with the table by a layer above ([`crate::Db::create_table_with_meta`]).
    pub fn meta(&self) -> Option<std::sync::Arc<serde_json::Value>> {
        self.def.meta()
    }

    /// The table's collection id (the first element of its keys; never reused).
    pub fn id(&self) -> u64 {
        self.def.layout.id()
    }

    /// The item with `key`, if any, and its [`ItemVersion`] for a later conditional write.
    pub fn get_versioned(&self, key: &Key) -> Result<(Option<Item>, ItemVersion)> {
        let k = self.encode_key(key)?;
        let v = self.db.engine.get(&k.bytes)?;
        self.check_live()?;
        let item = v.as_deref().map(decode_item).transpose()?;
        Ok((
            item,
            ItemVersion {
                key: k.bytes,
                bytes: v,
            },
        ))
    }

    /// The item with `key`, if any.
    pub fn get(&self, key: &Key) -> Result<Option<Item>> {
        self.get_decoded(key, decode_item)
    }

    /// Deletes the item with `key` (no error when there is none).
    pub fn delete(&self, key: &Key) -> Result<()> {
        let k = self.encode_key(key)?;
        let mut b = WriteBatch::new();
        b.delete(k.bytes);
        Ok(self.gated_write(b)??)
    }
}

mod encode;

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
