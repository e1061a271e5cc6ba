//! A write transaction on the engine: reads see the transaction's own writes over one
//! snapshot, and `commit` applies every write as one atomic [`WriteBatch`] whose conditions
//! are the values the transaction read. A crash never leaves half an operation (a record
//! without its index entries, a batch without its split); another writer that changed what
//! was read makes the commit fail with [`Error::Conflict`] and write nothing.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use strata_lsm::{Condition, Direction, Engine, KeyRange, KvIter, Snapshot, WriteBatch};

use crate::error::{Error, Result};

/// One pair from [`Txn::range`].
#[derive(Debug, Clone)]
pub struct Item {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// True when it came from the snapshot (not from this transaction's writes).
    pub from_snapshot: bool,
}

/// A transaction (see the module docs).
pub struct Txn {
    engine: Arc<dyn Engine>,
    snap: Option<Arc<dyn Snapshot>>,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    reads: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Bytes of keys and values written since the last commit (overwrites counted again).
    written: usize,
}

impl Txn {
    /// A transaction over a snapshot taken now.
    pub fn begin(engine: &Arc<dyn Engine>) -> Result<Txn> {
        Ok(Txn {
            snap: Some(engine.snapshot()?),
            engine: Arc::clone(engine),
            writes: BTreeMap::new(),
            reads: BTreeMap::new(),
            written: 0,
        })
    }

    fn snap(&self) -> Result<&Arc<dyn Snapshot>> {
        self.snap
            .as_ref()
            .ok_or_else(|| Error::Invalid("transaction used after commit".into()))
    }

    /// The value of `key` as this transaction sees it.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(w) = self.writes.get(key) {
            return Ok(w.clone());
        }
        let v = self.snap()?.get(key)?;
        self.reads.insert(key.to_vec(), v.clone());
        Ok(v)
    }

    /// Records that the operation depends on `key` having `value` (from the snapshot).
    pub fn observe(&mut self, key: &[u8], value: Option<&[u8]>) {
        if !self.writes.contains_key(key) {
            self.reads
                .entry(key.to_vec())
                .or_insert_with(|| value.map(<[u8]>::to_vec));
        }
    }

    /// Sets `key`.
    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.written += key.len() + value.len();
        self.writes.insert(key, Some(value));
    }

    /// Removes `key`.
    pub fn delete(&mut self, key: Vec<u8>) {
        self.written += key.len();
        self.writes.insert(key, None);
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Bytes written since the last commit (keys and values; a key written twice counts
    /// twice), for committing long operations in parts. O(1).
    pub fn pending_bytes(&self) -> usize {
        self.written
    }

    /// The pairs of `range` in `direction` order: the snapshot merged with this
    /// transaction's writes as they are now (later writes are not seen by this iterator).
    pub fn range(&self, range: KeyRange, direction: Direction) -> Result<TxnIter> {
        let bounds = (range.start.clone(), range.end.clone());
        let mut overlay: Vec<Write> = self
            .writes
            .range::<Vec<u8>, _>((bounds.0.as_ref(), bounds.1.as_ref()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if direction == Direction::Reverse {
            overlay.reverse();
        }
        let snap = self.snap()?.range(range, direction)?;
        Ok(TxnIter {
            snap,
            peeked: None,
            overlay: overlay.into_iter().peekable(),
            direction,
        })
    }

    fn batch(&mut self) -> WriteBatch {
        self.written = 0;
        let mut b = WriteBatch::new();
        for (k, v) in std::mem::take(&mut self.reads) {
            b.require(Condition::Equals(k, v));
        }
        for (k, v) in std::mem::take(&mut self.writes) {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            };
        }
        b
    }

    fn write(&self, b: WriteBatch) -> Result<()> {
        if b.op_count() == 0 {
            return Ok(());
        }
        match self.engine.write(b) {
            Ok(()) => Ok(()),
            Err(strata_lsm::Error::ConditionFailed { .. }) => Err(Error::Conflict),
            Err(e) => Err(e.into()),
        }
    }

    /// Commits what was written so far and keeps going on the same snapshot (for long
    /// operations whose every part is consistent on its own, like `batch`). Later reads of
    /// keys written before this point see the snapshot, not the writes: callers must not
    /// re-read them.
    pub fn commit_part(&mut self) -> Result<()> {
        let b = self.batch();
        self.write(b)
    }

    /// Commits every write atomically, conditioned on every value read.
    pub fn commit(mut self) -> Result<()> {
        let b = self.batch();
        // Release the snapshot first: an engine may copy on write while one is held.
        self.snap = None;
        self.write(b)
    }
}

/// A write of the overlay: a key and its new value (`None`: deleted).
type Write = (Vec<u8>, Option<Vec<u8>>);

/// Iterator of [`Txn::range`].
pub struct TxnIter {
    snap: KvIter,
    peeked: Option<(Vec<u8>, Vec<u8>)>,
    overlay: std::iter::Peekable<std::vec::IntoIter<Write>>,
    direction: Direction,
}

impl TxnIter {
    fn peek_snap(&mut self) -> Result<Option<&(Vec<u8>, Vec<u8>)>> {
        if self.peeked.is_none() {
            self.peeked = self.snap.next().transpose()?;
        }
        Ok(self.peeked.as_ref())
    }

    fn next_item(&mut self) -> Result<Option<Item>> {
        loop {
            let s_key = self.peek_snap()?.map(|(k, _)| k.clone());
            let o_key = self.overlay.peek().map(|(k, _)| k.clone());
            let take_overlay = match (&s_key, &o_key) {
                (None, None) => return Ok(None),
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(s), Some(o)) => match self.direction {
                    Direction::Forward => o <= s,
                    Direction::Reverse => o >= s,
                },
            };
            if !take_overlay {
                let (key, value) = self
                    .peeked
                    .take()
                    .ok_or_else(|| Error::Invalid("iterator lost its place".into()))?;
                return Ok(Some(Item {
                    key,
                    value,
                    from_snapshot: true,
                }));
            }
            let Some((key, value)) = self.overlay.next() else {
                continue;
            };
            if s_key.as_ref() == Some(&key) {
                // The write shadows the snapshot's pair.
                self.peeked = None;
            }
            if let Some(value) = value {
                return Ok(Some(Item {
                    key,
                    value,
                    from_snapshot: false,
                }));
            }
        }
    }
}

impl Iterator for TxnIter {
    type Item = Result<Item>;

    fn next(&mut self) -> Option<Result<Item>> {
        self.next_item().transpose()
    }
}

/// The range of keys starting with `prefix`.
pub fn prefix_range(prefix: &[u8]) -> KeyRange {
    KeyRange::prefix(prefix)
}

/// A range from two bounds.
pub fn range(start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> KeyRange {
    KeyRange { start, end }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_lsm::MemEngine;

    fn keys(it: TxnIter) -> Vec<(String, bool)> {
        it.map(|i| {
            let i = i.unwrap();
            (String::from_utf8(i.key).unwrap(), i.from_snapshot)
        })
        .collect()
    }

    #[test]
    fn reads_see_own_writes_in_both_directions() {
        let e: Arc<dyn Engine> = Arc::new(MemEngine::new());
        for k in ["a", "c", "e"] {
            strata_lsm::engine::put(e.as_ref(), k.as_bytes(), b"v").unwrap();
        }
        let mut t = Txn::begin(&e).unwrap();
        t.put(b"b".to_vec(), b"1".to_vec());
        t.delete(b"c".to_vec());
        t.put(b"e".to_vec(), b"2".to_vec());
        let f = keys(t.range(KeyRange::all(), Direction::Forward).unwrap());
        assert_eq!(
            f,
            [("a".into(), true), ("b".into(), false), ("e".into(), false)]
        );
        let r = keys(t.range(KeyRange::all(), Direction::Reverse).unwrap());
        assert_eq!(
            r,
            [("e".into(), false), ("b".into(), false), ("a".into(), true)]
        );
        assert_eq!(t.get(b"c").unwrap(), None);
        t.commit().unwrap();
        assert_eq!(e.get(b"e").unwrap(), Some(b"2".to_vec()));
    }

    #[test]
    fn a_changed_read_makes_the_commit_fail_and_write_nothing() {
        let e: Arc<dyn Engine> = Arc::new(MemEngine::new());
        strata_lsm::engine::put(e.as_ref(), b"n", b"1").unwrap();
        let mut t = Txn::begin(&e).unwrap();
        assert_eq!(t.get(b"n").unwrap(), Some(b"1".to_vec()));
        t.put(b"n".to_vec(), b"2".to_vec());
        t.put(b"x".to_vec(), b"y".to_vec());
        strata_lsm::engine::put(e.as_ref(), b"n", b"5").unwrap();
        assert!(matches!(t.commit(), Err(Error::Conflict)));
        assert_eq!(e.get(b"x").unwrap(), None);
    }
}
