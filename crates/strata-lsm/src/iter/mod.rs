//! Seekable iterators that compose, in LevelDB's layering:
//!
//! | layer | type | over |
//! |---|---|---|
//! | block | [`crate::sst::block::BlockIter`] | one data or index block |
//! | table | [`crate::sst::iter::SstIter`] | one SST: index → data block (two-level) |
//! | level | [`LevelIter`] | the sorted, disjoint files of one level |
//! | memtable | [`crate::memtable::MemIter`] | one memtable at a snapshot |
//! | merge | [`MergingIter`] | any of the above, newest first; lazily positioned |
//! | stripe | [`StripeIter`] | one stripe's sources as concrete types (no virtual calls) |
//! | database | [`DbIter`] | a merge, within a key range, tombstones hidden |
//!
//! Every layer implements [`InternalIter`]: `seek`/`seek_for_prev`/`seek_to_first`/
//! `seek_to_last` position it, `next`/`prev` move it, and `key`/`value` hand out slices of
//! the underlying block or memtable node (no copy per entry). Entries are `(key, value or
//! tombstone)` with each key at most once per iterator; visibility by sequence number is
//! resolved inside the memtable iterator (files hold one version per key).

mod db;
mod legacy;
mod level;
mod merge;
mod stripe;

pub use db::{before_lo, past_hi, DbIter};
pub use legacy::{Entry, LevelSource, MemSource, MergeIter, Source, TableIter};
pub use level::LevelIter;
pub use merge::MergingIter;
pub use stripe::{SourceIter, StripeIter};

use crate::error::Result;

/// An iterator's current entry: its key and its value (`None`: a tombstone), borrowed.
pub type EntryRef<'a> = (&'a [u8], Option<&'a [u8]>);

/// A seekable, bidirectional iterator over `(key, value-or-tombstone)` entries in key order.
///
/// Positioning calls return an error only for I/O failures and corruption; after an error
/// the iterator is invalid. `next` and `prev` on an invalid iterator do nothing. `key` and
/// `value` of an invalid iterator are empty / `None`.
pub trait InternalIter: Send {
    /// True when positioned at an entry.
    fn valid(&self) -> bool;
    /// The key of the current entry.
    fn key(&self) -> &[u8];
    /// The value of the current entry; `None` for a tombstone.
    fn value(&self) -> Option<&[u8]>;
    /// The current entry, `None` when invalid: `valid`, `key` and `value` in one call (one
    /// walk down the layers instead of three; a database iterator's per-entry check).
    #[inline]
    fn entry(&self) -> Option<EntryRef<'_>> {
        if self.valid() {
            Some((self.key(), self.value()))
        } else {
            None
        }
    }
    /// Positions at the first entry.
    fn seek_to_first(&mut self) -> Result<()>;
    /// Positions at the last entry.
    fn seek_to_last(&mut self) -> Result<()>;
    /// Positions at the first entry whose key is `>= target`.
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    /// Positions at the last entry whose key is `<= target`.
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()>;
    /// Moves to the next entry.
    fn next(&mut self) -> Result<()>;
    /// Moves to the previous entry.
    fn prev(&mut self) -> Result<()>;
    /// A key `<=` every key this iterator can yield, if known without positioning it (lets a
    /// merge leave it unpositioned until its keys are needed).
    fn smallest(&self) -> Option<&[u8]> {
        None
    }
    /// A key `>=` every key this iterator can yield, if known without positioning it.
    fn largest(&self) -> Option<&[u8]> {
        None
    }
    /// A hint: keys above `bound` will not be read, so reading ahead (see
    /// [`crate::sst::iter`]) may stop at the block that holds it. It never changes what the
    /// iterator yields. Iterators that read no files ignore it.
    fn set_read_bound(&mut self, bound: Option<std::sync::Arc<[u8]>>) {
        let _ = bound;
    }
}

impl<I: InternalIter + ?Sized> InternalIter for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> Option<&[u8]> {
        (**self).value()
    }
    fn entry(&self) -> Option<EntryRef<'_>> {
        (**self).entry()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        (**self).seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        (**self).seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        (**self).seek_for_prev(target)
    }
    fn next(&mut self) -> Result<()> {
        (**self).next()
    }
    fn prev(&mut self) -> Result<()> {
        (**self).prev()
    }
    fn smallest(&self) -> Option<&[u8]> {
        (**self).smallest()
    }
    fn largest(&self) -> Option<&[u8]> {
        (**self).largest()
    }
    fn set_read_bound(&mut self, bound: Option<std::sync::Arc<[u8]>>) {
        (**self).set_read_bound(bound);
    }
}

/// Test support: a `BTreeMap` model of an iterator and random operation sequences.
#[cfg(test)]
pub(crate) mod testing {
    use std::collections::BTreeMap;
    use std::ops::Bound;

    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;

    use super::InternalIter;

    /// Key → value or tombstone.
    pub type Model = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

    /// One positioning or movement call.
    #[derive(Debug, Clone)]
    pub enum Op {
        First,
        Last,
        Seek(Vec<u8>),
        SeekForPrev(Vec<u8>),
        Next,
        Prev,
    }

    /// Short keys over a small alphabet (so that seeks hit and miss) plus some arbitrary ones.
    pub fn key() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(2), Just(0xff)], 0..4),
            1 => proptest::collection::vec(any::<u8>(), 0..3),
        ]
    }

    /// A value or tombstone.
    pub fn value() -> impl Strategy<Value = Option<Vec<u8>>> {
        proptest::option::weighted(0.8, proptest::collection::vec(any::<u8>(), 0..12))
    }

    /// A model with unique keys.
    pub fn model() -> impl Strategy<Value = Model> {
        proptest::collection::btree_map(key(), value(), 0..40)
    }

    /// One version of a key: `(key, seq, value or tombstone)`.
    pub type Version = (Vec<u8>, u64, Option<Vec<u8>>);

    /// Versions in insertion order.
    pub fn versions() -> impl Strategy<Value = Vec<Version>> {
        proptest::collection::vec((key(), 0u64..12, value()), 0..60)
    }

    /// The newest version of each key with `seq <= snap` (a later insertion wins a tie).
    pub fn model_at(vs: &[Version], snap: u64) -> Model {
        let mut best: BTreeMap<Vec<u8>, (u64, Option<Vec<u8>>)> = BTreeMap::new();
        for (k, s, v) in vs {
            if *s > snap {
                continue;
            }
            match best.get(k) {
                Some((bs, _)) if bs > s => {}
                _ => {
                    best.insert(k.clone(), (*s, v.clone()));
                }
            }
        }
        best.into_iter().map(|(k, (_, v))| (k, v)).collect()
    }

    /// Random operation sequences.
    pub fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            1 => Just(Op::First),
            1 => Just(Op::Last),
            3 => key().prop_map(Op::Seek),
            3 => key().prop_map(Op::SeekForPrev),
            5 => Just(Op::Next),
            5 => Just(Op::Prev),
        ];
        proptest::collection::vec(op, 1..40)
    }

    /// Applies `op` to the model position.
    pub fn model_step(m: &Model, cur: Option<Vec<u8>>, op: &Op) -> Option<Vec<u8>> {
        let k = |e: Option<(&Vec<u8>, _)>| e.map(|(k, _)| k.clone());
        match op {
            Op::First => k(m.iter().next()),
            Op::Last => k(m.iter().next_back()),
            Op::Seek(t) => k(m
                .range::<Vec<u8>, _>((Bound::Included(t), Bound::Unbounded))
                .next()),
            Op::SeekForPrev(t) => k(m
                .range::<Vec<u8>, _>((Bound::Unbounded, Bound::Included(t)))
                .next_back()),
            Op::Next => cur.and_then(|c| {
                k(
                    m.range::<Vec<u8>, _>((Bound::Excluded(&c), Bound::Unbounded))
                        .next(),
                )
            }),
            Op::Prev => cur.and_then(|c| {
                k(
                    m.range::<Vec<u8>, _>((Bound::Unbounded, Bound::Excluded(&c)))
                        .next_back(),
                )
            }),
        }
    }

    /// Applies `op` to the iterator.
    pub fn apply(it: &mut dyn InternalIter, op: &Op) -> crate::Result<()> {
        match op {
            Op::First => it.seek_to_first(),
            Op::Last => it.seek_to_last(),
            Op::Seek(t) => it.seek(t),
            Op::SeekForPrev(t) => it.seek_for_prev(t),
            Op::Next => it.next(),
            Op::Prev => it.prev(),
        }
    }

    /// Runs `ops` on the iterator and the model, comparing position, key and value after
    /// each one. Also checks the iterator's `smallest`/`largest` bounds when it has them.
    pub fn check_ops(
        it: &mut dyn InternalIter,
        m: &Model,
        ops: &[Op],
    ) -> Result<(), TestCaseError> {
        if let (Some(lo), Some(first)) = (it.smallest(), m.keys().next()) {
            prop_assert!(lo <= first.as_slice(), "smallest bound above a key");
        }
        if let (Some(hi), Some(last)) = (it.largest(), m.keys().next_back()) {
            prop_assert!(hi >= last.as_slice(), "largest bound below a key");
        }
        let mut cur: Option<Vec<u8>> = None;
        for (i, op) in ops.iter().enumerate() {
            cur = model_step(m, cur, op);
            apply(it, op).map_err(|e| TestCaseError::fail(format!("op {i} {op:?}: {e}")))?;
            match &cur {
                None => prop_assert!(!it.valid(), "op {} {:?}: valid at {:?}", i, op, it.key()),
                Some(k) => {
                    prop_assert!(it.valid(), "op {} {:?}: invalid, want {:?}", i, op, k);
                    prop_assert_eq!(it.key(), k.as_slice(), "op {} {:?}", i, op);
                    prop_assert_eq!(it.value(), m[k].as_deref(), "op {} {:?}", i, op);
                }
            }
        }
        Ok(())
    }

    /// One call on a [`crate::Cursor`].
    #[derive(Debug, Clone)]
    pub enum CursorOp {
        Seek(Vec<u8>),
        Next,
        Rewind,
    }

    /// Random cursor call sequences.
    pub fn cursor_ops() -> impl Strategy<Value = Vec<CursorOp>> {
        let op = prop_oneof![
            3 => key().prop_map(CursorOp::Seek),
            6 => Just(CursorOp::Next),
            1 => Just(CursorOp::Rewind),
        ];
        proptest::collection::vec(op, 0..30)
    }

    /// A random key range.
    pub fn range() -> impl Strategy<Value = crate::KeyRange> {
        let bound = || {
            prop_oneof![
                Just(Bound::Unbounded),
                key().prop_map(Bound::Included),
                key().prop_map(Bound::Excluded),
            ]
        };
        (bound(), bound()).prop_map(|(start, end)| crate::KeyRange { start, end })
    }

    /// Checks a freshly created cursor, then `ops`, against the live pairs `live`.
    pub fn check_cursor(
        c: &mut dyn crate::Cursor,
        live: &BTreeMap<Vec<u8>, Vec<u8>>,
        range: &crate::KeyRange,
        dir: crate::Direction,
        ops: &[CursorOp],
    ) -> Result<(), TestCaseError> {
        let rev = dir == crate::Direction::Reverse;
        let mut want: Vec<(&Vec<u8>, &Vec<u8>)> =
            live.iter().filter(|(k, _)| range.contains(k)).collect();
        if rev {
            want.reverse();
        }
        prop_assert_eq!(c.direction(), dir);
        let mut at: Option<usize> = (!want.is_empty()).then_some(0);
        for (i, op) in std::iter::once(None)
            .chain(ops.iter().map(Some))
            .enumerate()
        {
            if let Some(op) = op {
                at = match op {
                    CursorOp::Rewind => (!want.is_empty()).then_some(0),
                    CursorOp::Next => at.map(|a| a + 1).filter(|a| *a < want.len()),
                    CursorOp::Seek(k) => want.iter().position(|(x, _)| {
                        if rev {
                            x.as_slice() <= k.as_slice()
                        } else {
                            x.as_slice() >= k.as_slice()
                        }
                    }),
                };
                let r = match op {
                    CursorOp::Rewind => c.rewind(),
                    // Every other step through `next_entry`, whose pair must be the one
                    // `entry`, `key` and `value` then show.
                    CursorOp::Next if i % 2 == 1 => match c.next_entry() {
                        Ok(pair) => {
                            let want_pair =
                                at.map(|a| (want[a].0.as_slice(), want[a].1.as_slice()));
                            prop_assert_eq!(pair, want_pair, "op {} next_entry", i);
                            Ok(())
                        }
                        Err(e) => Err(e),
                    },
                    CursorOp::Next => c.next(),
                    CursorOp::Seek(k) => c.seek(k),
                };
                r.map_err(|e| TestCaseError::fail(format!("op {i} {op:?}: {e}")))?;
            }
            let want_pair = at.map(|a| (want[a].0.as_slice(), want[a].1.as_slice()));
            prop_assert_eq!(c.entry(), want_pair, "op {} {:?}: entry", i, op);
            match at {
                None => prop_assert!(!c.valid(), "op {} {:?}: valid at {:?}", i, op, c.key()),
                Some(a) => {
                    prop_assert!(
                        c.valid(),
                        "op {} {:?}: invalid, want {:?}",
                        i,
                        op,
                        want[a].0
                    );
                    prop_assert_eq!(c.key(), want[a].0.as_slice(), "op {} {:?}", i, op);
                    prop_assert_eq!(c.value(), want[a].1.as_slice(), "op {} {:?}", i, op);
                }
            }
        }
        Ok(())
    }
}
