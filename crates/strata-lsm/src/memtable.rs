//! The memtable of one stripe: a multi-version ordered map.
//!
//! Entries are ordered by (user key ascending, sequence descending), so that a reader at
//! snapshot `s` finds the newest version of a key with `seq <= s` by seeking to `(key, s)`.
//! Writers insert under the stripe's write lock; readers copy small chunks under the read
//! lock, so iterators own their data and never block writers for long.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering as AtOrd};
use std::sync::RwLock;

use crate::engine::Direction;

/// A user key with the sequence number of one of its versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IKey {
    /// The user key.
    pub key: Vec<u8>,
    /// The sequence number of the batch that wrote this version.
    pub seq: u64,
}

impl Ord for IKey {
    fn cmp(&self, o: &IKey) -> Ordering {
        self.key.cmp(&o.key).then(o.seq.cmp(&self.seq))
    }
}

impl PartialOrd for IKey {
    fn partial_cmp(&self, o: &IKey) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// A value or a tombstone (`None`).
pub type Value = Option<Vec<u8>>;

/// Approximate per-entry overhead charged to the memory budget (tree node share, headers).
pub const ENTRY_OVERHEAD: usize = 48;

/// The memtable of one stripe.
#[derive(Default)]
pub struct Memtable {
    map: RwLock<BTreeMap<IKey, Value>>,
    bytes: AtomicUsize,
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    match l.read() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// True when `BTreeMap::range` would panic or yield nothing for these bounds.
pub fn bounds_empty<T: Ord>(lo: &Bound<T>, hi: &Bound<T>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
        _ => false,
    }
}

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Memtable {
        Memtable::default()
    }

    /// Inserts the ops of one batch, all at sequence `seq`; returns the bytes charged.
    pub fn insert(&self, seq: u64, entries: impl Iterator<Item = (Vec<u8>, Value)>) -> usize {
        let mut map = match self.map.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut added = 0;
        for (key, value) in entries {
            added += key.len() + value.as_ref().map_or(0, Vec::len) + ENTRY_OVERHEAD;
            map.insert(IKey { key, seq }, value);
        }
        self.bytes.fetch_add(added, AtOrd::Relaxed);
        added
    }

    /// Bytes charged to the budget.
    pub fn bytes(&self) -> usize {
        self.bytes.load(AtOrd::Relaxed)
    }

    /// True when nothing was ever inserted.
    pub fn is_empty(&self) -> bool {
        read(&self.map).is_empty()
    }

    /// The newest version of `key` visible at `seq`: `None` when the memtable has none,
    /// `Some(None)` for a tombstone.
    pub fn get(&self, key: &[u8], seq: u64) -> Option<Value> {
        let map = read(&self.map);
        let probe = IKey {
            key: key.to_vec(),
            seq,
        };
        let (k, v) = map.range(probe..).next()?;
        (k.key == key).then(|| v.clone())
    }

    /// Up to `max` user keys of the range, newest visible version each (tombstones
    /// included), in `dir` order, starting after `resume` (the last key of the previous
    /// chunk) or at the range's own bound.
    pub fn chunk(
        &self,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
        resume: Option<&[u8]>,
        dir: Direction,
        seq: u64,
        max: usize,
    ) -> Vec<(Vec<u8>, Value)> {
        let ik = |k: &[u8], s: u64| IKey {
            key: k.to_vec(),
            seq: s,
        };
        // The smallest IKey of a user key has seq u64::MAX, the largest seq 0.
        let mut start = match lo {
            Bound::Included(k) => Bound::Included(ik(k, u64::MAX)),
            Bound::Excluded(k) => Bound::Excluded(ik(k, 0)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut end = match hi {
            Bound::Included(k) => Bound::Included(ik(k, 0)),
            Bound::Excluded(k) => Bound::Excluded(ik(k, u64::MAX)),
            Bound::Unbounded => Bound::Unbounded,
        };
        if let Some(r) = resume {
            match dir {
                Direction::Forward => start = Bound::Excluded(ik(r, 0)),
                Direction::Reverse => end = Bound::Excluded(ik(r, u64::MAX)),
            }
        }
        let mut out: Vec<(Vec<u8>, Value)> = Vec::new();
        if bounds_empty(&start, &end) {
            return out;
        }
        let map = read(&self.map);
        let range = map.range((start, end));
        match dir {
            Direction::Forward => {
                for (k, v) in range {
                    if k.seq > seq || out.last().is_some_and(|(l, _)| *l == k.key) {
                        continue;
                    }
                    if out.len() == max {
                        break;
                    }
                    out.push((k.key.clone(), v.clone()));
                }
            }
            Direction::Reverse => {
                // Versions of one key come oldest first: keep the last visible one.
                let mut cur: Option<(&IKey, &Value)> = None;
                for (k, v) in range.rev() {
                    if let Some((ck, _)) = cur {
                        if ck.key != k.key {
                            if out.len() == max {
                                cur = None;
                                break;
                            }
                            out.push((
                                ck.key.clone(),
                                cur.map(|c| c.1.clone()).unwrap_or_default(),
                            ));
                            cur = None;
                        }
                    }
                    if k.seq <= seq {
                        cur = Some((k, v));
                    }
                }
                if let Some((ck, cv)) = cur {
                    if out.len() < max {
                        out.push((ck.key.clone(), cv.clone()));
                    }
                }
            }
        }
        out
    }

    /// Calls `f` on every user key with its newest version, in key order (for a flush: the
    /// memtable is frozen and every version in it is visible).
    pub fn for_each_newest<E>(
        &self,
        mut f: impl FnMut(&[u8], Option<&[u8]>) -> Result<(), E>,
    ) -> Result<(), E> {
        let map = read(&self.map);
        let mut last: Option<&[u8]> = None;
        for (k, v) in map.iter() {
            if last == Some(k.key.as_slice()) {
                continue;
            }
            f(&k.key, v.as_deref())?;
            last = Some(&k.key);
        }
        Ok(())
    }
}
