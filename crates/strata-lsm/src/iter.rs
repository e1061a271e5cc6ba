//! Iterators that compose: a memtable source, a level source (concatenated SSTs), and the
//! merging iterator that combines sources by key, newest source first, dropping tombstones.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::ops::Bound;
use std::sync::Arc;

use crate::engine::{Direction, KvPair};
use crate::error::Result;
use crate::memtable::Memtable;
use crate::sst::table::{Entry, Source, Table, TableIter};

const MEM_CHUNK: usize = 128;

/// The visible newest versions of a memtable over a range, fetched in chunks.
pub struct MemSource {
    mem: Arc<Memtable>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    dir: Direction,
    seq: u64,
    buf: std::vec::IntoIter<Entry>,
    resume: Option<Vec<u8>>,
    done: bool,
}

impl MemSource {
    /// A source over `[lo, hi]` of `mem` at snapshot `seq`.
    pub fn new(
        mem: Arc<Memtable>,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        dir: Direction,
        seq: u64,
    ) -> MemSource {
        MemSource {
            mem,
            lo,
            hi,
            dir,
            seq,
            buf: Vec::new().into_iter(),
            resume: None,
            done: false,
        }
    }
}

impl Source for MemSource {
    fn next_entry(&mut self) -> Result<Option<Entry>> {
        if let Some(e) = self.buf.next() {
            return Ok(Some(e));
        }
        if self.done {
            return Ok(None);
        }
        let chunk = self.mem.chunk(
            &self.lo,
            &self.hi,
            self.resume.as_deref(),
            self.dir,
            self.seq,
            MEM_CHUNK,
        );
        if chunk.len() < MEM_CHUNK {
            self.done = true;
        }
        self.resume = chunk.last().map(|e| e.0.clone());
        self.buf = chunk.into_iter();
        Ok(self.buf.next())
    }
}

/// The files of one level (sorted, disjoint key ranges) read one after the other.
pub struct LevelSource {
    tables: std::vec::IntoIter<Arc<Table>>,
    cur: Option<TableIter>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    reverse: bool,
}

impl LevelSource {
    /// `tables` must already be in iteration order.
    pub fn new(
        tables: Vec<Arc<Table>>,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        reverse: bool,
    ) -> LevelSource {
        LevelSource {
            tables: tables.into_iter(),
            cur: None,
            lo,
            hi,
            reverse,
        }
    }
}

impl Source for LevelSource {
    fn next_entry(&mut self) -> Result<Option<Entry>> {
        loop {
            if let Some(c) = &mut self.cur {
                if let Some(e) = c.next_entry()? {
                    return Ok(Some(e));
                }
                self.cur = None;
            }
            match self.tables.next() {
                Some(t) => {
                    self.cur = Some(TableIter::new(
                        t,
                        self.lo.clone(),
                        self.hi.clone(),
                        self.reverse,
                    ))
                }
                None => return Ok(None),
            }
        }
    }
}

struct HeapItem {
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    rank: usize,
    reverse: bool,
}

impl PartialEq for HeapItem {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for HeapItem {}
impl PartialOrd for HeapItem {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for HeapItem {
    // BinaryHeap pops the greatest: make "next in iteration order, newest source" greatest.
    fn cmp(&self, o: &Self) -> Ordering {
        let by_key = if self.reverse {
            self.key.cmp(&o.key)
        } else {
            o.key.cmp(&self.key)
        };
        by_key.then(o.rank.cmp(&self.rank))
    }
}

/// Merges sources (ranked: lower rank = newer) into one ordered stream of live pairs. Each
/// source yields each key at most once; for keys present in several sources the newest wins;
/// tombstones hide older values and are not returned (unless `keep_tombstones`).
pub struct MergeIter {
    sources: Vec<Box<dyn Source>>,
    heap: BinaryHeap<HeapItem>,
    reverse: bool,
    started: bool,
    failed: bool,
    keep_tombstones: bool,
}

impl MergeIter {
    /// Merges `sources`; the index of a source in the vector is its rank.
    pub fn new(sources: Vec<Box<dyn Source>>, dir: Direction) -> MergeIter {
        MergeIter {
            heap: BinaryHeap::with_capacity(sources.len()),
            sources,
            reverse: dir == Direction::Reverse,
            started: false,
            failed: false,
            keep_tombstones: false,
        }
    }

    /// Also yield tombstones (as `None` values): for compaction into a non-bottom level.
    pub fn keep_tombstones(mut self) -> MergeIter {
        self.keep_tombstones = true;
        self
    }

    fn pull(&mut self, rank: usize) -> Result<()> {
        if let Some((key, value)) = self.sources[rank].next_entry()? {
            self.heap.push(HeapItem {
                key,
                value,
                rank,
                reverse: self.reverse,
            });
        }
        Ok(())
    }

    /// The next entry, tombstones included when asked for.
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        if !self.started {
            self.started = true;
            for r in 0..self.sources.len() {
                self.pull(r)?;
            }
        }
        loop {
            let Some(top) = self.heap.pop() else {
                return Ok(None);
            };
            self.pull(top.rank)?;
            while self.heap.peek().is_some_and(|h| h.key == top.key) {
                if let Some(dup) = self.heap.pop() {
                    self.pull(dup.rank)?;
                }
            }
            if top.value.is_some() || self.keep_tombstones {
                return Ok(Some((top.key, top.value)));
            }
        }
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
