//! [`DbIter`]: the database iterator — an [`InternalIter`] (usually a merge) seen through a key
//! range in one direction, tombstones hidden. It is the engine's [`Cursor`].

use std::ops::Bound;

use super::{EntryRef, InternalIter};
use crate::engine::{Cursor, Direction, KeyRange};
use crate::error::Result;

/// True when `key` is beyond the upper bound `hi`.
pub fn past_hi(key: &[u8], hi: &Bound<Vec<u8>>) -> bool {
    match hi {
        Bound::Included(h) => key > h.as_slice(),
        Bound::Excluded(h) => key >= h.as_slice(),
        Bound::Unbounded => false,
    }
}

/// True when `key` is below the lower bound `lo`.
pub fn before_lo(key: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Included(l) => key < l.as_slice(),
        Bound::Excluded(l) => key <= l.as_slice(),
        Bound::Unbounded => false,
    }
}

/// A range of an internal iterator, in one direction, without tombstones (unless asked).
pub struct DbIter<I = Box<dyn InternalIter>> {
    inner: I,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    dir: Direction,
    valid: bool,
    keep_tombstones: bool,
    /// `inner` yields no key outside the range (see [`DbIter::inner_in_range`]): the bound
    /// checks of each step are skipped.
    in_range: bool,
}

impl<I: InternalIter> DbIter<I> {
    /// An unpositioned iterator over `range` of `inner` (call [`Cursor::rewind`] or
    /// [`Cursor::seek`] to position it).
    pub fn new(mut inner: I, range: KeyRange, dir: Direction) -> DbIter<I> {
        if dir == Direction::Forward {
            // Reading forward, nothing above the range's end is read: readahead stops there.
            match &range.end {
                Bound::Included(h) | Bound::Excluded(h) => {
                    inner.set_read_bound(Some(std::sync::Arc::from(h.as_slice())));
                }
                Bound::Unbounded => {}
            }
        }
        DbIter {
            inner,
            lo: range.start,
            hi: range.end,
            dir,
            valid: false,
            keep_tombstones: false,
            in_range: false,
        }
    }

    /// Declares that `inner` yields no key outside the range, however it is positioned (a
    /// [`crate::lsm`] concatenation of stripes clamps each stripe to the range): each step
    /// then skips its comparison with the range's end (a `memcmp` per entry, ~5% of a full
    /// scan's time).
    pub fn inner_in_range(mut self) -> DbIter<I> {
        self.in_range = true;
        self
    }

    /// Also stop at tombstones (compaction into a non-bottom level keeps them).
    pub fn keep_tombstones(mut self) -> DbIter<I> {
        self.keep_tombstones = true;
        self
    }

    /// The current value, `None` for a tombstone (only seen with `keep_tombstones`).
    pub fn entry_value(&self) -> Option<&[u8]> {
        if self.valid {
            self.inner.value()
        } else {
            None
        }
    }

    /// The iterator underneath.
    pub fn inner(&self) -> &I {
        &self.inner
    }

    /// The iterator underneath, the range and the direction.
    pub fn into_parts(self) -> (I, KeyRange, Direction) {
        let range = KeyRange {
            start: self.lo,
            end: self.hi,
        };
        (self.inner, range, self.dir)
    }

    fn step(&mut self) -> Result<()> {
        match self.dir {
            Direction::Forward => self.inner.next(),
            Direction::Reverse => self.inner.prev(),
        }
    }

    /// From the inner position: the first live entry inside the range, in the direction.
    fn settle(&mut self) -> Result<()> {
        loop {
            let Some((k, v)) = self.inner.entry() else {
                self.valid = false;
                return Ok(());
            };
            let out = !self.in_range
                && match self.dir {
                    Direction::Forward => past_hi(k, &self.hi),
                    Direction::Reverse => before_lo(k, &self.lo),
                };
            if out {
                self.valid = false;
                return Ok(());
            }
            if self.keep_tombstones || v.is_some() {
                self.valid = true;
                return Ok(());
            }
            self.step()?;
        }
    }

    /// [`DbIter::settle`] returning the entry it settles on (`None` at the end), so that a
    /// step needs no second walk down the inner layers to read it. On an error the iterator
    /// is invalid.
    fn settle_entry(&mut self) -> Result<Option<EntryRef<'_>>> {
        loop {
            let inner: *const I = &self.inner;
            // SAFETY: `inner` points at `self.inner`, alive and not moved while `&mut self`
            // is held. The entry borrowed through it is either returned — and then nothing
            // touches `self.inner` for as long as the returned borrow of `self` lives — or
            // dropped (it is not used after this iteration's checks) before `self.step()`
            // moves the inner iterator. This is the borrow the checker would accept were it
            // able to see that only the returning branch keeps it (NLL "problem case 3").
            let Some((k, v)) = (unsafe { &*inner }).entry() else {
                self.valid = false;
                return Ok(None);
            };
            let out = !self.in_range
                && match self.dir {
                    Direction::Forward => past_hi(k, &self.hi),
                    Direction::Reverse => before_lo(k, &self.lo),
                };
            if out {
                self.valid = false;
                return Ok(None);
            }
            if self.keep_tombstones || v.is_some() {
                self.valid = true;
                return Ok(Some((k, v)));
            }
            if let Err(e) = self.step() {
                self.valid = false;
                return Err(e);
            }
        }
    }

    fn guarded(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        self.valid = false;
        let r = f(self).and_then(|()| self.settle());
        if r.is_err() {
            self.valid = false;
        }
        r
    }

    /// Forward: positions the inner iterator at the first key `>= key` that is also inside
    /// the lower bound.
    fn seek_forward(&mut self, key: Option<&[u8]>) -> Result<()> {
        let DbIter {
            inner, lo: bound, ..
        } = self;
        let (target, skip_eq) = match (&*bound, key) {
            (Bound::Included(b), k) if k.is_none_or(|k| k < b.as_slice()) => {
                (Some(b.as_slice()), false)
            }
            (Bound::Excluded(b), k) if k.is_none_or(|k| k <= b.as_slice()) => {
                (Some(b.as_slice()), true)
            }
            (_, k) => (k, false),
        };
        match target {
            Some(t) => {
                inner.seek(t)?;
                if skip_eq && inner.valid() && inner.key() == t {
                    inner.next()?;
                }
            }
            None => inner.seek_to_first()?,
        }
        Ok(())
    }

    /// Reverse: positions the inner iterator at the last key `<= key` that is also inside
    /// the upper bound.
    fn seek_reverse(&mut self, key: Option<&[u8]>) -> Result<()> {
        let DbIter {
            inner, hi: bound, ..
        } = self;
        let (target, skip_eq) = match (&*bound, key) {
            (Bound::Included(b), k) if k.is_none_or(|k| k > b.as_slice()) => {
                (Some(b.as_slice()), false)
            }
            (Bound::Excluded(b), k) if k.is_none_or(|k| k >= b.as_slice()) => {
                (Some(b.as_slice()), true)
            }
            (_, k) => (k, false),
        };
        match target {
            Some(t) => {
                inner.seek_for_prev(t)?;
                if skip_eq && inner.valid() && inner.key() == t {
                    inner.prev()?;
                }
            }
            None => inner.seek_to_last()?,
        }
        Ok(())
    }
}

impl<I: InternalIter> Cursor for DbIter<I> {
    fn valid(&self) -> bool {
        self.valid
    }

    fn key(&self) -> &[u8] {
        if self.valid {
            self.inner.key()
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        self.entry_value().unwrap_or_default()
    }

    fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        self.guarded(|s| s.step())
    }

    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.guarded(|s| match s.dir {
            Direction::Forward => s.seek_forward(Some(key)),
            Direction::Reverse => s.seek_reverse(Some(key)),
        })
    }

    fn rewind(&mut self) -> Result<()> {
        self.guarded(|s| match s.dir {
            Direction::Forward => s.seek_forward(None),
            Direction::Reverse => s.seek_reverse(None),
        })
    }

    fn direction(&self) -> Direction {
        self.dir
    }

    /// One walk down the inner layers (`key` and `value` each take one).
    #[inline]
    fn entry(&self) -> Option<(&[u8], &[u8])> {
        if !self.valid {
            return None;
        }
        let (k, v) = self.inner.entry()?;
        Some((k, v.unwrap_or_default()))
    }

    /// The step and the entry it lands on in one walk (`DbIter::settle_entry`).
    fn next_entry(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if !self.valid {
            return Ok(None);
        }
        self.valid = false;
        self.step()?;
        Ok(self
            .settle_entry()?
            .map(|(k, v)| (k, v.unwrap_or_default())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::testing::{check_cursor, cursor_ops, range, Model};
    use crate::iter::MergingIter;
    use crate::memtable::Memtable;
    use proptest::prelude::*;
    use std::sync::Arc;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Two memtables (the newer hides the older; tombstones hide what is below them)
        /// through a range, both directions, random seeks.
        #[test]
        fn db_iter_matches_model(old in crate::iter::testing::model(), new in crate::iter::testing::model(),
                                 r in range(), rev in any::<bool>(), ops in cursor_ops()) {
            let (m_old, m_new) = (Arc::new(Memtable::new()), Arc::new(Memtable::new()));
            for (m, src) in [(&m_old, &old), (&m_new, &new)] {
                for (k, v) in src {
                    m.insert_refs(1, std::iter::once((k.as_slice(), v.as_deref())));
                }
            }
            let mut all: Model = old.clone();
            all.extend(new.clone());
            let live = all.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
            let dir = if rev { Direction::Reverse } else { Direction::Forward };
            let merge = MergingIter::new(vec![Box::new(m_new.iter(1)), Box::new(m_old.iter(1))]);
            let mut it = DbIter::new(merge, r.clone(), dir);
            it.rewind().unwrap();
            check_cursor(&mut it, &live, &r, dir, &ops)?;
        }
    }
}
