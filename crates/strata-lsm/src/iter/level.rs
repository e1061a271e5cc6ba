//! [`LevelIter`]: the files of one level (sorted by key, disjoint ranges) as one iterator,
//! opening one file at a time.

use std::sync::Arc;

use super::InternalIter;
use crate::error::Result;
use crate::sst::iter::SstIter;
use crate::sst::table::Table;

/// A seekable iterator over the sorted, disjoint files of one level.
pub struct LevelIter {
    tables: Vec<Arc<Table>>,
    /// Index of the file `cur` walks.
    at: usize,
    cur: Option<SstIter>,
    /// Keep blocks read in the cache (see [`SstIter::uncached`]).
    fill_cache: bool,
    /// Passed to each file's iterator (see [`InternalIter::set_read_bound`]).
    bound: Option<Arc<[u8]>>,
}

impl LevelIter {
    /// An unpositioned iterator; `tables` must be sorted by key with disjoint ranges.
    pub fn new(tables: Vec<Arc<Table>>) -> LevelIter {
        LevelIter {
            tables,
            at: 0,
            cur: None,
            fill_cache: true,
            bound: None,
        }
    }

    /// Like [`LevelIter::new`], but blocks read from the files are not added to the cache
    /// (compaction inputs, see [`SstIter::uncached`]).
    pub fn uncached(tables: Vec<Arc<Table>>) -> LevelIter {
        LevelIter {
            fill_cache: false,
            ..LevelIter::new(tables)
        }
    }

    fn open(&mut self, i: usize) -> &mut SstIter {
        let sst = |t: &Arc<Table>, fill: bool, bound: &Option<Arc<[u8]>>| {
            let mut it = if fill {
                SstIter::new(Arc::clone(t))
            } else {
                SstIter::uncached(Arc::clone(t))
            };
            it.set_read_bound(bound.clone());
            it
        };
        let reuse = self.at == i && self.cur.is_some();
        if !reuse {
            self.at = i;
            self.cur = Some(sst(&self.tables[i], self.fill_cache, &self.bound));
        }
        let (t, fill, bound) = (&self.tables[i], self.fill_cache, &self.bound);
        self.cur.get_or_insert_with(|| sst(t, fill, bound))
    }

    fn cur_valid(&self) -> bool {
        self.cur.as_ref().is_some_and(InternalIter::valid)
    }

    fn skip_forward(&mut self) -> Result<()> {
        while self.cur.is_some() && !self.cur_valid() {
            if self.at + 1 >= self.tables.len() {
                self.cur = None;
                return Ok(());
            }
            let next = self.at + 1;
            self.open(next).seek_to_first()?;
        }
        Ok(())
    }

    fn skip_backward(&mut self) -> Result<()> {
        while self.cur.is_some() && !self.cur_valid() {
            if self.at == 0 {
                self.cur = None;
                return Ok(());
            }
            let prev = self.at - 1;
            self.open(prev).seek_to_last()?;
        }
        Ok(())
    }

    /// Runs `f` on the current file; an error leaves the iterator invalid.
    fn on_cur(&mut self, f: impl FnOnce(&mut SstIter) -> Result<()>) -> Result<()> {
        let Some(c) = self.cur.as_mut() else {
            return Ok(());
        };
        let r = f(c);
        if r.is_err() {
            self.cur = None;
        }
        r
    }
}

impl InternalIter for LevelIter {
    fn valid(&self) -> bool {
        self.cur_valid()
    }

    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], InternalIter::key)
    }

    fn value(&self) -> Option<&[u8]> {
        self.cur.as_ref().and_then(InternalIter::value)
    }

    #[inline]
    fn entry(&self) -> Option<super::EntryRef<'_>> {
        self.cur.as_ref()?.entry()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        if self.tables.is_empty() {
            self.cur = None;
            return Ok(());
        }
        self.open(0);
        self.on_cur(SstIter::seek_to_first)?;
        self.skip_forward()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let Some(last) = self.tables.len().checked_sub(1) else {
            self.cur = None;
            return Ok(());
        };
        self.open(last);
        self.on_cur(SstIter::seek_to_last)?;
        self.skip_backward()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .tables
            .partition_point(|t| t.meta.largest.as_slice() < target);
        if i >= self.tables.len() {
            self.cur = None;
            return Ok(());
        }
        self.open(i);
        self.on_cur(|c| c.seek(target))?;
        self.skip_forward()
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .tables
            .partition_point(|t| t.meta.smallest.as_slice() <= target);
        if i == 0 {
            self.cur = None;
            return Ok(());
        }
        self.open(i - 1);
        self.on_cur(|c| c.seek_for_prev(target))?;
        self.skip_backward()
    }

    #[inline]
    fn next(&mut self) -> Result<()> {
        let Some(c) = self.cur.as_mut().filter(|c| c.valid()) else {
            return Ok(());
        };
        if let Err(e) = c.next() {
            self.cur = None;
            return Err(e);
        }
        if c.valid() {
            return Ok(());
        }
        self.skip_forward()
    }

    fn prev(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        self.on_cur(SstIter::prev)?;
        self.skip_backward()
    }

    fn smallest(&self) -> Option<&[u8]> {
        self.tables.first().map(|t| t.meta.smallest.as_slice())
    }

    fn largest(&self) -> Option<&[u8]> {
        self.tables.last().map(|t| t.meta.largest.as_slice())
    }

    fn set_read_bound(&mut self, bound: Option<Arc<[u8]>>) {
        if let Some(c) = &mut self.cur {
            c.set_read_bound(bound.clone());
        }
        self.bound = bound;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::testing::{check_ops, model, ops, Model};
    use crate::sst::iter::testing::table;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

        /// A model cut into consecutive files (some of one entry) behaves as one iterator.
        #[test]
        fn level_iter_matches_model(m in model(), ops in ops(), cuts in proptest::collection::vec(1usize..8, 1..10)) {
            let dir = tempfile::tempdir().unwrap();
            let entries: Vec<_> = m.iter().collect();
            let mut tables = Vec::new();
            let mut at = 0;
            let mut cuts = cuts.into_iter().cycle();
            while at < entries.len() {
                let n = cuts.next().unwrap_or(1).min(entries.len() - at);
                let part: Model = entries[at..at + n].iter().map(|(k, v)| ((*k).clone(), (*v).clone())).collect();
                tables.push(table(dir.path(), tables.len() as u64 + 1, &part, 40));
                at += n;
            }
            let mut it = LevelIter::new(tables);
            check_ops(&mut it, &m, &ops)?;
        }
    }
}
