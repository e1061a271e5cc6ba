//! Atomic write batches across tables, and optimistic transactions.

use std::collections::BTreeMap;

use strata_lsm::{Condition, WriteBatch};

use crate::db::Db;
use crate::error::{Error, Result};
use crate::item::Item;
use crate::item_codec::decode_item;
use crate::keys::HashMemo;
use crate::table::{ItemVersion, Key, Table};

/// Writes to one or more tables, applied all together or not at all by [`Db::write`].
#[derive(Default)]
pub struct Batch {
    pub(crate) inner: WriteBatch,
    /// For each condition of `inner`: the table and a description, for error messages.
    conditions: Vec<(String, String)>,
    tables: Vec<Table>,
    /// Where [`Batch::put_as`] serializes each value before copying it into `inner` (one
    /// allocation per batch instead of one per item). Holds no op.
    scratch: Vec<u8>,
    /// Where [`Batch::put_as`] builds each key, as `scratch` for the values.
    key_scratch: Vec<u8>,
    /// The last partition [`Batch::put_as`] hashed and its hash (see
    /// [`crate::keys::KeyBuilder::hash_memo`]).
    hash_memo: HashMemo,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("inner", &self.inner)
            .field("conditions", &self.conditions)
            .field("tables", &self.tables)
            .finish_non_exhaustive()
    }
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Batch {
        Batch::default()
    }

    fn touch(&mut self, t: &Table) {
        if !self
            .tables
            .iter()
            .any(|x| std::sync::Arc::ptr_eq(&x.def, &t.def))
        {
            self.tables.push(t.clone());
        }
    }

    /// Adds a put (replace) of `item` into `table`.
    pub fn put(&mut self, table: &Table, item: &Item) -> Result<&mut Batch> {
        let (k, v) = table.encode_item(item)?;
        self.inner.put(k, v);
        self.touch(table);
        Ok(self)
    }

    /// Adds a put (replace) of a value of the caller's type (see [`Table::put_as`]).
    pub fn put_as<T: serde::Serialize + ?Sized>(
        &mut self,
        table: &Table,
        value: &T,
    ) -> Result<&mut Batch> {
        table.encode_value_into(
            value,
            &mut self.scratch,
            &mut self.key_scratch,
            &mut self.hash_memo,
        )?;
        self.inner.put(&self.key_scratch, &self.scratch);
        self.touch(table);
        Ok(self)
    }

    /// Adds a put that requires that no item with the same key exists.
    pub fn put_if_not_exists(&mut self, table: &Table, item: &Item) -> Result<&mut Batch> {
        let (key, k, v) = table.encode_item_keyed(item)?;
        self.inner.require(Condition::Absent(k.clone()));
        self.conditions.push((
            table.name().to_owned(),
            format!("an item with key {key} already exists"),
        ));
        self.inner.put(k, v);
        self.touch(table);
        Ok(self)
    }

    /// Requires that an item is still as it was read (see [`Table::get_versioned`]): when it
    /// changed in between, [`Db::write`] writes nothing and fails with
    /// [`Error::ConditionFailed`]. `what` describes the condition for that error.
    pub fn require_unchanged(
        &mut self,
        table: &Table,
        version: &ItemVersion,
        what: impl Into<String>,
    ) -> &mut Batch {
        self.inner.require(Condition::Equals(
            version.key.clone(),
            version.bytes.clone(),
        ));
        self.conditions.push((table.name().to_owned(), what.into()));
        self.touch(table);
        self
    }

    /// Adds a delete.
    pub fn delete(&mut self, table: &Table, key: &Key) -> Result<&mut Batch> {
        let k = table.encode_key(key)?;
        self.inner.delete(k.bytes);
        self.touch(table);
        Ok(self)
    }

    /// Number of writes.
    pub fn len(&self) -> usize {
        self.inner.op_count()
    }

    /// True when the batch has no write and no condition.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Bytes of encoded keys and values, as counted against the engine's
    /// [`strata_lsm::BatchLimits`].
    pub fn payload_bytes(&self) -> usize {
        self.inner.payload_bytes()
    }
}

impl Db {
    /// Applies a batch atomically. A failed condition writes nothing and returns
    /// [`Error::ConditionFailed`].
    pub fn write(&self, batch: Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let _gate = self.inner.write_guard();
        for t in &batch.tables {
            t.check_live()?;
        }
        match self.inner.engine.write(batch.inner) {
            Ok(()) => Ok(()),
            Err(strata_lsm::Error::ConditionFailed { index, .. }) => {
                let (table, reason) = batch
                    .conditions
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| (String::new(), format!("condition {index}")));
                Err(Error::ConditionFailed { table, reason })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Runs `f` as an optimistic transaction: its reads are recorded, its writes buffered, and
    /// at the end everything commits atomically on the condition that every item read is
    /// still as it was read. On a conflict `f` runs again after a short randomized back-off
    /// (up to 1,000 attempts, then [`Error::Conflict`]). `f` must not have side effects outside
    /// the transaction.
    pub fn transaction<T>(&self, mut f: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        const ATTEMPTS: u32 = 1000;
        for attempt in 0..ATTEMPTS {
            let mut tx = Transaction {
                db: self,
                reads: BTreeMap::new(),
                writes: BTreeMap::new(),
                tables: Vec::new(),
            };
            let out = f(&mut tx)?;
            match tx.commit() {
                Ok(()) => return Ok(out),
                Err(Error::Conflict { .. }) => backoff(attempt),
                Err(e) => return Err(e),
            }
        }
        Err(Error::Conflict { attempts: ATTEMPTS })
    }
}

/// Sleeps a random time that grows with the number of failed attempts (up to ~3 ms), so that
/// transactions that keep colliding spread out instead of colliding again.
fn backoff(attempt: u32) {
    use std::hash::{BuildHasher, Hasher};
    if attempt == 0 {
        std::thread::yield_now();
        return;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(attempt);
    let cap_us = 50u64 << attempt.min(6);
    std::thread::sleep(std::time::Duration::from_micros(h.finish() % cap_us));
}

/// The state of one attempt of [`Db::transaction`].
pub struct Transaction<'a> {
    db: &'a Db,
    /// Engine key → value as read (None: absent).
    reads: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Engine key → value to write (None: delete).
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    tables: Vec<Table>,
}

impl Transaction<'_> {
    fn touch(&mut self, t: &Table) {
        if !self
            .tables
            .iter()
            .any(|x| std::sync::Arc::ptr_eq(&x.def, &t.def))
        {
            self.tables.push(t.clone());
        }
    }

    /// Reads an item (seeing this transaction's own writes).
    pub fn get(&mut self, table: &Table, key: &Key) -> Result<Option<Item>> {
        let k = table.encode_key(key)?.bytes;
        self.touch(table);
        let raw = if let Some(w) = self.writes.get(&k) {
            w.clone()
        } else if let Some(r) = self.reads.get(&k) {
            r.clone()
        } else {
            let v = self.db.inner.engine.get(&k)?;
            self.reads.insert(k, v.clone());
            v
        };
        raw.map(|v| decode_item(&v)).transpose()
    }

    /// Buffers a put.
    pub fn put(&mut self, table: &Table, item: &Item) -> Result<()> {
        let (k, v) = table.encode_item(item)?;
        self.touch(table);
        self.writes.insert(k, Some(v));
        Ok(())
    }

    /// Buffers a delete.
    pub fn delete(&mut self, table: &Table, key: &Key) -> Result<()> {
        let k = table.encode_key(key)?.bytes;
        self.touch(table);
        self.writes.insert(k, None);
        Ok(())
    }

    fn commit(self) -> Result<()> {
        let mut b = WriteBatch::new();
        for (k, v) in self.reads {
            b.require(Condition::Equals(k, v));
        }
        for (k, v) in self.writes {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            };
        }
        if b.is_empty() {
            return Ok(());
        }
        // A read-only transaction still commits its conditions: that proves its reads were
        // all true at one moment.
        let _gate = self.db.inner.write_guard();
        for t in &self.tables {
            t.check_live()?;
        }
        match self.db.inner.engine.write(b) {
            Ok(()) => Ok(()),
            Err(strata_lsm::Error::ConditionFailed { .. }) => Err(Error::Conflict { attempts: 1 }),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::Serialize;
    use strata_key::Kind;

    use super::*;
    use crate::schema::{KeyField, TableSchema};

    /// Values a batch may be given: rows of several sizes (the scratch buffer shrinks and
    /// grows between them), and values each refused at a different point of the encoding.
    #[derive(Debug, Clone, Serialize)]
    #[serde(untagged)]
    enum Value {
        Row { user: String, ts: i64, body: String },
        Unnamed { body: String },
        BadKey { user: i64, ts: i64 },
        Twice(Vec<(String, i64)>),
        NotAMap(i64),
    }

    /// `{user, ts, twice, twice}`: a map whose last name repeats (refused only at its end,
    /// after every attribute was written into the scratch buffer).
    struct Repeated<'a>(&'a [(String, i64)]);

    impl Serialize for Repeated<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut m = s.serialize_map(None)?;
            m.serialize_entry("user", "u")?;
            m.serialize_entry("ts", &1)?;
            for (k, v) in self.0 {
                m.serialize_entry(k, v)?;
            }
            m.end()
        }
    }

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            6 => (".{0,8}", any::<i64>(), ".{0,300}")
                .prop_map(|(user, ts, body)| Value::Row { user, ts, body }),
            1 => ".{0,200}".prop_map(|body| Value::Unnamed { body }),
            1 => (any::<i64>(), any::<i64>()).prop_map(|(user, ts)| Value::BadKey { user, ts }),
            1 => proptest::collection::vec(("[a-b]", any::<i64>()), 0..4).prop_map(Value::Twice),
            1 => any::<i64>().prop_map(Value::NotAMap),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// `Batch::put_as` (every value serialized into the batch's one reused buffer) holds
        /// exactly the ops of `Table::encode_value` of each value put (a fresh buffer each),
        /// in order, and refuses the same values with the same errors, whatever the values
        /// before them left in the buffer.
        #[test]
        fn put_as_is_encode_value(values in proptest::collection::vec(value(), 0..12)) {
            let db = Db::memory().unwrap();
            let t = db
                .create_table(
                    TableSchema::new("t", vec![KeyField::new("user", Kind::Text)])
                        .with_sort(vec![KeyField::new("ts", Kind::Int)]),
                )
                .unwrap();
            let mut batch = Batch::new();
            let mut want: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for v in &values {
                let (got, expect) = match v {
                    Value::Twice(names) => (
                        batch.put_as(&t, &Repeated(names)).map(|_| ()),
                        t.encode_value(&Repeated(names)),
                    ),
                    v => (batch.put_as(&t, v).map(|_| ()), t.encode_value(v)),
                };
                match (got, expect) {
                    (Ok(()), Ok(kv)) => want.push(kv),
                    (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => prop_assert!(false, "put_as {:?}, encode_value {:?}", a, b),
                }
            }
            let got: Vec<(Vec<u8>, Vec<u8>)> = batch
                .inner
                .iter()
                .map(|(k, v)| (k.to_vec(), v.unwrap_or_default().to_vec()))
                .collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(batch.len(), batch.inner.op_count());
            db.write(batch).unwrap();
        }

        /// Runs of rows of a few partitions (the empty text, texts that are prefixes of each
        /// other), put in any mix into tables of other partition keys (one text, text and int,
        /// a descending text, another attribute): every key `Batch::put_as` builds equals the
        /// key of `Table::encode_value` (a fresh partition-hash memo each), so the memo the
        /// batch keeps across keys and tables never gives a partition another's hash.
        #[test]
        fn kept_partition_hash_gives_encode_value_keys(
            rows in proptest::collection::vec(
                (0usize..4, 0usize..5, 0i64..3, 1usize..4),
                1..30,
            ),
        ) {
            const USERS: [&str; 5] = ["", "a", "ab", "b", "ba"];
            let db = Db::memory().unwrap();
            let schemas = [
                TableSchema::new("t0", vec![KeyField::new("user", Kind::Text)])
                    .with_sort(vec![KeyField::new("ts", Kind::Int)]),
                TableSchema::new(
                    "t1",
                    vec![KeyField::new("user", Kind::Text), KeyField::new("ts", Kind::Int)],
                ),
                TableSchema::new("t2", vec![KeyField::new("user", Kind::Text).desc()])
                    .with_sort(vec![KeyField::new("ts", Kind::Int)]),
                TableSchema::new("t3", vec![KeyField::new("body", Kind::Text)])
                    .with_sort(vec![KeyField::new("user", Kind::Text)]),
            ];
            let tables: Vec<Table> =
                schemas.into_iter().map(|s| db.create_table(s).unwrap()).collect();
            let mut batch = Batch::new();
            let mut want = Vec::new();
            for (t, u, ts, run) in rows {
                for i in 0..run {
                    let row = Value::Row {
                        user: USERS[u].to_owned(),
                        ts: ts + i as i64,
                        body: USERS[(u + i) % USERS.len()].to_owned(),
                    };
                    batch.put_as(&tables[t], &row).unwrap();
                    want.push(tables[t].encode_value(&row).unwrap().0);
                }
            }
            let got: Vec<Vec<u8>> = batch.inner.iter().map(|(k, _)| k.to_vec()).collect();
            prop_assert_eq!(got, want);
        }
    }
}
