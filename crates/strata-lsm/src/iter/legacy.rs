//! Pull-style sources and merge, as the engine's range and compaction code first used them,
//! now thin adapters over the seekable iterators (each source is an [`InternalIter`] seen
//! through a range; the merge is a [`MergingIter`] under a [`DbIter`]). They copy each entry
//! out; new code should build a [`DbIter`] and use it as a cursor.

use std::ops::Bound;
use std::sync::Arc;

use super::{DbIter, InternalIter, LevelIter, MergingIter};
use crate::engine::{Cursor, Direction, KeyRange, KvPair};
use crate::error::Result;
use crate::memtable::{Memtable, Value};
use crate::sst::iter::SstIter;
use crate::sst::table::Table;

/// An entry produced by iterators: key and value (`None`: tombstone).
pub type Entry = (Vec<u8>, Value);

/// A source of entries in key order for [`MergeIter`].
pub trait Source: Send {
    /// The next entry, or `None` at the end.
    fn next_entry(&mut self) -> Result<Option<Entry>>;
    /// The seekable iterator under this source, with its range and direction.
    fn into_parts(self: Box<Self>) -> (Box<dyn InternalIter>, KeyRange, Direction);
}

/// An internal iterator seen through a range, tombstones included, one entry at a time.
struct Bounded {
    it: DbIter<Box<dyn InternalIter>>,
    started: bool,
}

impl Bounded {
    fn new(
        it: Box<dyn InternalIter>,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        dir: Direction,
    ) -> Bounded {
        let range = KeyRange { start: lo, end: hi };
        Bounded {
            it: DbIter::new(it, range, dir).keep_tombstones(),
            started: false,
        }
    }

    fn next_entry(&mut self) -> Result<Option<Entry>> {
        if self.started {
            self.it.next()?;
        } else {
            self.started = true;
            self.it.rewind()?;
        }
        if !self.it.valid() {
            return Ok(None);
        }
        Ok(Some((
            self.it.key().to_vec(),
            self.it.entry_value().map(<[u8]>::to_vec),
        )))
    }

    fn into_parts(self) -> (Box<dyn InternalIter>, KeyRange, Direction) {
        self.it.into_parts()
    }
}

macro_rules! source {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name(Bounded);

        impl Source for $name {
            fn next_entry(&mut self) -> Result<Option<Entry>> {
                self.0.next_entry()
            }
            fn into_parts(self: Box<Self>) -> (Box<dyn InternalIter>, KeyRange, Direction) {
                self.0.into_parts()
            }
        }
    };
}

source!(
    /// The visible newest versions of a memtable over a range.
    MemSource
);
source!(
    /// One SST over a range, forward or reverse.
    TableIter
);
source!(
    /// The files of one level (sorted, disjoint key ranges) read one after the other.
    LevelSource
);

impl MemSource {
    /// A source over `[lo, hi]` of `mem` at snapshot `seq`.
    pub fn new(
        mem: Arc<Memtable>,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        dir: Direction,
        seq: u64,
    ) -> MemSource {
        MemSource(Bounded::new(Box::new(mem.iter(seq)), lo, hi, dir))
    }
}

impl TableIter {
    /// An iterator over `[lo, hi]` of `table`.
    pub fn new(
        table: Arc<Table>,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        reverse: bool,
    ) -> TableIter {
        let dir = if reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        };
        TableIter(Bounded::new(Box::new(SstIter::new(table)), lo, hi, dir))
    }

    /// A forward iterator over all of `table` that does not fill the block cache
    /// (compaction inputs, see [`SstIter::uncached`]).
    pub fn uncached(table: Arc<Table>) -> TableIter {
        let all = (Bound::Unbounded, Bound::Unbounded);
        TableIter(Bounded::new(
            Box::new(SstIter::uncached(table)),
            all.0,
            all.1,
            Direction::Forward,
        ))
    }
}

impl LevelSource {
    /// `tables` must already be in iteration order (descending keys when `reverse`).
    pub fn new(
        mut tables: Vec<Arc<Table>>,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        reverse: bool,
    ) -> LevelSource {
        let dir = if reverse {
            tables.reverse();
            Direction::Reverse
        } else {
            Direction::Forward
        };
        LevelSource(Bounded::new(Box::new(LevelIter::new(tables)), lo, hi, dir))
    }
    /// A forward source over all of `tables` (sorted, disjoint) that does not fill the block
    /// cache (compaction inputs, see [`SstIter::uncached`]).
    pub fn uncached(tables: Vec<Arc<Table>>) -> LevelSource {
        LevelSource(Bounded::new(
            Box::new(LevelIter::uncached(tables)),
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
        ))
    }
}

/// Merges sources (ranked: lower rank = newer) into one ordered stream of live pairs; for
/// keys present in several sources the newest wins; tombstones hide older values and are not
/// returned (unless `keep_tombstones`). All sources must share one range and direction (the
/// first source's are used).
pub struct MergeIter {
    it: Bounded,
    failed: bool,
}

impl MergeIter {
    /// Merges `sources`; the index of a source in the vector is its rank.
    pub fn new(sources: Vec<Box<dyn Source>>, dir: Direction) -> MergeIter {
        let mut range = None;
        let children: Vec<Box<dyn InternalIter>> = sources
            .into_iter()
            .map(|s| {
                let (it, r, _) = s.into_parts();
                range.get_or_insert(r);
                it
            })
            .collect();
        let range = range.unwrap_or_else(KeyRange::all);
        let db = DbIter::new(
            Box::new(MergingIter::new(children)) as Box<dyn InternalIter>,
            range,
            dir,
        );
        MergeIter {
            it: Bounded {
                it: db,
                started: false,
            },
            failed: false,
        }
    }

    /// Also yield tombstones (as `None` values): for compaction into a non-bottom level.
    pub fn keep_tombstones(mut self) -> MergeIter {
        self.it.it = self.it.it.keep_tombstones();
        self
    }

    /// The next entry, tombstones included when asked for.
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        self.it.next_entry()
    }
}

impl Iterator for MergeIter {
    type Item = Result<KvPair>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_entry() {
            Ok(Some((k, Some(v)))) => Some(Ok((k, v))),
            Ok(Some((_, None))) | Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
