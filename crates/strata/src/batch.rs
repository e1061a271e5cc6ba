//! Atomic write batches across tables, and optimistic transactions.

use std::collections::BTreeMap;

use strata_lsm::{Condition, WriteBatch};

use crate::db::Db;
use crate::error::{Error, Result};
use crate::item::Item;
use crate::item_codec::decode_item;
use crate::table::{ItemVersion, Key, Table};

/// Writes to one or more tables, applied all together or not at all by [`Db::write`].
#[derive(Debug, Default)]
pub struct Batch {
    inner: WriteBatch,
    /// For each condition of `inner`: the table and a description, for error messages.
    conditions: Vec<(String, String)>,
    tables: Vec<Table>,
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
        let (k, v) = table.encode_value(value)?;
        self.inner.put(k, v);
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
