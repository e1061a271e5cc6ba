//! [`SstIter`]: the two-level iterator over one SST (the pinned index picks a data block, a
//! [`BlockIter`] walks it). Data blocks come through the block cache and are shared, not
//! copied; keys and values are slices of the current block.

use std::sync::Arc;

use super::block::BlockIter;
use super::table::Table;
use crate::error::Result;
use crate::iter::InternalIter;

/// A seekable iterator over one SST.
pub struct SstIter {
    table: Arc<Table>,
    /// Index of the data block `data` walks.
    block: usize,
    data: Option<BlockIter>,
    /// Keep blocks read from the file in the cache (false for compaction inputs).
    fill_cache: bool,
}

impl SstIter {
    /// An unpositioned iterator over `table`.
    pub fn new(table: Arc<Table>) -> SstIter {
        SstIter {
            table,
            block: 0,
            data: None,
            fill_cache: true,
        }
    }

    /// An unpositioned iterator that uses cached blocks but does not add the blocks it reads
    /// to the cache (compaction: its inputs are deleted when it ends).
    pub fn uncached(table: Arc<Table>) -> SstIter {
        SstIter {
            fill_cache: false,
            ..SstIter::new(table)
        }
    }

    /// The table.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    fn blocks(&self) -> usize {
        self.table.index().len()
    }

    /// Makes block `i` current (reusing it when it already is).
    fn load(&mut self, i: usize) -> Result<&mut BlockIter> {
        let reuse = self.block == i && self.data.is_some();
        if !reuse {
            self.data = None;
            let b = self.table.block_with(i, self.fill_cache)?;
            self.block = i;
            self.data = Some(BlockIter::new(b));
        }
        match &mut self.data {
            Some(d) => Ok(d),
            None => unreachable_block(),
        }
    }

    fn block_err(&mut self, e: crate::error::FormatError) -> crate::Error {
        let off = self.table.index().handle(self.block).0;
        self.data = None;
        self.table.err(off, e)
    }

    /// Runs a block operation on the current block, mapping its error.
    fn on_block(
        &mut self,
        f: impl FnOnce(&mut BlockIter) -> std::result::Result<(), crate::error::FormatError>,
    ) -> Result<()> {
        let r = match &mut self.data {
            Some(d) => f(d),
            None => return Ok(()),
        };
        r.map_err(|e| self.block_err(e))
    }

    fn data_valid(&self) -> bool {
        self.data.as_ref().is_some_and(BlockIter::valid)
    }

    /// Moves forward over blocks that have nothing at or after the position.
    fn skip_forward(&mut self) -> Result<()> {
        while self.data.is_some() && !self.data_valid() {
            if self.block + 1 >= self.blocks() {
                self.data = None;
                return Ok(());
            }
            self.load(self.block + 1)?;
            self.on_block(BlockIter::seek_to_first)?;
        }
        Ok(())
    }

    /// Moves backward over blocks that have nothing at or before the position.
    fn skip_backward(&mut self) -> Result<()> {
        while self.data.is_some() && !self.data_valid() {
            if self.block == 0 {
                self.data = None;
                return Ok(());
            }
            self.load(self.block - 1)?;
            self.on_block(BlockIter::seek_to_last)?;
        }
        Ok(())
    }

    /// Index of the first block whose last key is `>= target`.
    fn block_for(&self, target: &[u8]) -> usize {
        self.table.index().find(target)
    }
}

fn unreachable_block<T>() -> Result<T> {
    Err(crate::Error::InvalidArgument(
        "SST iterator lost its block".into(),
    ))
}

impl InternalIter for SstIter {
    fn valid(&self) -> bool {
        self.data_valid()
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], BlockIter::key)
    }

    fn value(&self) -> Option<&[u8]> {
        self.data.as_ref().and_then(BlockIter::value)
    }

    fn seek_to_first(&mut self) -> Result<()> {
        if self.blocks() == 0 {
            self.data = None;
            return Ok(());
        }
        self.load(0)?;
        self.on_block(BlockIter::seek_to_first)?;
        self.skip_forward()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let n = self.blocks();
        if n == 0 {
            self.data = None;
            return Ok(());
        }
        self.load(n - 1)?;
        self.on_block(BlockIter::seek_to_last)?;
        self.skip_backward()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let i = self.block_for(target);
        if i >= self.blocks() {
            self.data = None;
            return Ok(());
        }
        self.load(i)?;
        self.on_block(|d| d.seek(target))?;
        self.skip_forward()
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let i = self.block_for(target);
        if i >= self.blocks() {
            return self.seek_to_last();
        }
        self.load(i)?;
        self.on_block(|d| d.seek_for_prev(target))?;
        self.skip_backward()
    }

    fn next(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        self.on_block(BlockIter::next)?;
        self.skip_forward()
    }

    fn prev(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        self.on_block(BlockIter::prev)?;
        self.skip_backward()
    }

    fn smallest(&self) -> Option<&[u8]> {
        Some(&self.table.meta.smallest)
    }

    fn largest(&self) -> Option<&[u8]> {
        Some(&self.table.meta.largest)
    }
}

/// Test helpers shared by the iterator tests: SSTs written to a temporary directory.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;
    use std::sync::Arc;

    use crate::fs::{Fs, RealFs};
    use crate::iter::testing::Model;
    use crate::sst::cache::BlockCache;
    use crate::sst::table::{SstWriter, Table};

    /// Writes `m` as SST number `id` in `dir` with tiny blocks and opens it.
    pub fn table(dir: &Path, id: u64, m: &Model, block_bytes: usize) -> Arc<Table> {
        let fs: Arc<dyn Fs> = Arc::new(RealFs);
        let path = dir.join(format!("{id}.sst"));
        let mut w = SstWriter::create(fs.as_ref(), &path, id, block_bytes).unwrap();
        w.set_block_bytes(block_bytes);
        for (k, v) in m {
            w.add(k, v.as_deref()).unwrap();
        }
        let meta = w.finish().unwrap();
        Arc::new(Table::open(fs, &path, meta, Arc::new(BlockCache::new(1 << 20))).unwrap())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::testing::{check_ops, model, ops};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

        #[test]
        fn sst_iter_matches_model(m in model(), ops in ops(), block in 0usize..120) {
            prop_assume!(!m.is_empty());
            let dir = tempfile::tempdir().unwrap();
            // Block sizes from one entry per block up to several.
            let t = testing::table(dir.path(), 1, &m, block);
            let mut it = SstIter::new(t);
            check_ops(&mut it, &m, &ops)?;
        }
    }
}
