//! [`SstIter`]: the two-level iterator over one SST (the pinned index picks a data block, a
//! [`BlockIter`] walks it). Data blocks lie in the file's memory map or come through the
//! block cache, shared, not copied; keys and values are slices of the current block.
//!
//! Readahead: an iterator that moves forward from block to block and misses the cache reads
//! the next blocks with the same read (2 blocks, then 4, 8, … up to [`READAHEAD_BLOCKS`] and
//! [`READAHEAD_BYTES`]) into a buffer of its own; a block of that run is checked (CRC), copied
//! out and added to the cache only when the iterator reaches it. A seek or a step backward
//! drops the run and starts again at one block. A reader (not a compaction input) of a file
//! read through a memory map ([`Table::with_mapped_reads`]) reads no runs and does not use the
//! cache: each block is read where it lies in the map ([`Table::map_block`]: no system call, no
//! copy, its checksum checked on its first read since the open).
//!
//! The read buffer (up to [`READAHEAD_BYTES`]) outlives the iterator: when an iterator that
//! has one is dropped, the buffer goes to a one-slot spare of its thread, and the next
//! iterator of that thread that reads ahead takes it. A scan walks hundreds of files (one
//! iterator each); without the spare, each grew and zeroed a buffer of its own.

use std::cell::Cell;
use std::sync::Arc;

use super::block::{Block, BlockIter};
use super::table::Table;
use crate::error::Result;
use crate::iter::InternalIter;

/// Most blocks one readahead reads.
pub const READAHEAD_BLOCKS: usize = 32;
/// Most bytes one readahead reads.
pub const READAHEAD_BYTES: usize = 256 << 10;
/// Most blocks a bounded seek reads at once (see [`InternalIter::set_read_bound`]).
const SEEK_RUN: usize = 4;
/// No blocks read ahead.
const NO_RUN: (usize, usize) = (1, 0);

thread_local! {
    /// The read buffer of the last iterator of this thread that was dropped with one.
    static SPARE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// A read buffer for an iterator: the thread's spare, or an empty one.
fn take_spare() -> Vec<u8> {
    SPARE.try_with(Cell::take).unwrap_or_default()
}

/// Keeps `buf` as the thread's spare (the larger of it and the one already kept).
fn give_spare(buf: Vec<u8>) {
    if buf.capacity() == 0 {
        return;
    }
    crate::spare::keep_larger(&SPARE, buf);
}

/// A seekable iterator over one SST.
pub struct SstIter {
    table: Arc<Table>,
    /// Index of the data block `data` walks.
    block: usize,
    data: Option<BlockIter>,
    /// Keep blocks read from the file in the cache (false for compaction inputs).
    fill_cache: bool,
    /// Blocks read ahead: `ahead.0..=ahead.1` are in `scratch` (`ahead.0 > ahead.1`: none).
    ahead: (usize, usize),
    /// Blocks the next forward read takes (1 after a seek; doubles with each).
    run: usize,
    /// The read buffer of readahead (reused): `scratch[..scratch_len]` holds blocks `ahead`,
    /// each with its CRC (bytes after it are left from earlier runs).
    scratch: Vec<u8>,
    scratch_len: usize,
    /// No key above this is read (a hint for readahead, [`InternalIter::set_read_bound`]).
    bound: Option<Arc<[u8]>>,
}

impl SstIter {
    /// An unpositioned iterator over `table`.
    pub fn new(table: Arc<Table>) -> SstIter {
        SstIter {
            table,
            block: 0,
            data: None,
            fill_cache: true,
            ahead: NO_RUN,
            run: 1,
            scratch: Vec::new(),
            scratch_len: 0,
            bound: None,
        }
    }

    /// An unpositioned iterator that uses cached blocks but does not add the blocks it reads
    /// to the cache (compaction: its inputs are deleted when it ends).
    pub fn uncached(table: Arc<Table>) -> SstIter {
        let mut it = SstIter::new(table);
        it.fill_cache = false;
        it
    }

    /// The table.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    fn blocks(&self) -> usize {
        self.table.index().len()
    }

    /// Makes block `i` current (reusing it when it already is). Anything read ahead is
    /// dropped: this is a jump (a seek or a step backward).
    fn load(&mut self, i: usize) -> Result<&mut BlockIter> {
        let reuse = self.block == i && self.data.is_some();
        if !reuse {
            self.ahead = NO_RUN;
            self.run = 1;
            let key = self.take_key_buf();
            let b = match self.in_map(i) {
                Some(b) => b?,
                None => self.table.block_with(i, self.fill_cache)?,
            };
            self.block = i;
            self.data = Some(BlockIter::with_key_buf(b, key));
        }
        match &mut self.data {
            Some(d) => Ok(d),
            None => unreachable_block(),
        }
    }

    /// Makes block `i` (the one after the current block, or the first) current: from the run
    /// read ahead, else from the cache, else from the file together with the blocks after it.
    fn load_next(&mut self, i: usize) -> Result<()> {
        if let Some(b) = self.in_map(i) {
            let b = b?;
            let key = self.take_key_buf();
            self.ahead = NO_RUN;
            self.block = i;
            self.data = Some(BlockIter::with_key_buf(b, key));
            return Ok(());
        }
        let key = self.take_key_buf();
        let bytes = if (self.ahead.0..=self.ahead.1).contains(&i) {
            let d = self.table.block_in_run(self.run_bytes(), self.ahead.0, i)?;
            if self.fill_cache {
                self.table.cache_block(i, Arc::clone(&d));
            }
            d
        } else {
            self.ahead = NO_RUN;
            match self.table.cached_block(i) {
                Some(d) => d,
                // A bounded reader (a Query) of a mapped file copies the one block from the
                // map: a run read with `pread` costs a system call and a second copy (out of
                // the run), and the few blocks a Query reads share too little of either.
                None if self.bound.is_some() && self.table.is_mapped() => {
                    self.table.read_block(i, self.fill_cache)?
                }
                None => self.read_ahead(i)?,
            }
        };
        let b = self.table.parse_block(i, bytes)?;
        self.block = i;
        self.data = Some(BlockIter::with_key_buf(b, key));
        Ok(())
    }

    /// Block `i` read where it lies in the file's memory map, for a reader (not a compaction
    /// input) of a mapped file; `None` otherwise. A reader of a mapped file neither asks nor
    /// fills the block cache: a block copied out of the map cost a 4 KiB copy (its lines
    /// written to memory taken from an evicted block), an allocation, a cache insert and an
    /// eviction, and a lookup before it (session 16: a full scan at 10^7 −15% on-CPU).
    #[inline]
    fn in_map(&self, i: usize) -> Option<Result<Block>> {
        if !self.fill_cache {
            return None;
        }
        self.table.map_block(i)
    }

    /// Drops the current block, keeping its key buffer for the next one.
    fn take_key_buf(&mut self) -> Vec<u8> {
        self.data
            .take()
            .map(BlockIter::into_key_buf)
            .unwrap_or_default()
    }

    /// The run read ahead.
    fn run_bytes(&self) -> &[u8] {
        self.scratch.get(..self.scratch_len).unwrap_or_default()
    }

    /// Reads block `i` (not cached) and up to `run - 1` blocks after it with one read;
    /// returns block `i`'s bytes and keeps the run for the steps that follow.
    fn read_ahead(&mut self, i: usize) -> Result<Arc<Vec<u8>>> {
        self.run = (self.run * 2).min(READAHEAD_BLOCKS);
        if self.scratch.capacity() == 0 {
            self.scratch = take_spare();
        }
        self.ahead = NO_RUN;
        let (last, len) = self.table.read_run(
            i,
            self.run,
            READAHEAD_BYTES,
            self.bound.as_deref(),
            &mut self.scratch,
        )?;
        self.ahead = (i, last);
        self.scratch_len = len;
        let d = self.table.block_in_run(self.run_bytes(), i, i)?;
        if self.fill_cache {
            self.table.cache_block(i, Arc::clone(&d));
        }
        Ok(d)
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
            self.load_next(self.block + 1)?;
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

impl Drop for SstIter {
    fn drop(&mut self) {
        give_spare(std::mem::take(&mut self.scratch));
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

    #[inline]
    fn entry(&self) -> Option<crate::iter::EntryRef<'_>> {
        self.data.as_ref()?.entry()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        if self.blocks() == 0 {
            self.data = None;
            return Ok(());
        }
        if self.block == 0 && self.data.is_some() {
            self.load(0)?;
        } else {
            // The start of a forward walk through the file (a scan): read ahead from here.
            self.ahead = NO_RUN;
            self.run = 1;
            self.load_next(0)?;
        }
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
        if self.bound.is_some()
            && !self.table.is_mapped()
            && !(self.block == i && self.data.is_some())
        {
            // The reader stops at a known key (a Query's partition): read the blocks up to
            // it (at most SEEK_RUN) with one read. (A mapped file is read a block at a time:
            // no system call to share, see `load_next`.)
            self.ahead = NO_RUN;
            self.run = SEEK_RUN / 2;
            self.load_next(i)?;
        } else {
            self.load(i)?;
        }
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

    #[inline]
    fn next(&mut self) -> Result<()> {
        let Some(d) = self.data.as_mut().filter(|d| d.valid()) else {
            return Ok(());
        };
        if let Err(e) = d.next() {
            return Err(self.block_err(e));
        }
        if d.valid() {
            return Ok(());
        }
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

    fn set_read_bound(&mut self, bound: Option<Arc<[u8]>>) {
        self.bound = bound;
    }
}

/// Test helpers shared by the iterator tests: SSTs written to a temporary directory.
#[cfg(test)]
pub(crate) mod testing {
    /// Flips one bit of data block `i` of `t`'s file in place (not through the engine): the
    /// block's second byte, so that its checksum no longer matches.
    pub fn flip_in_block(t: &Table, i: usize) {
        use std::os::unix::fs::FileExt;
        let (off, _) = t.index().handle(i);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(t.path())
            .unwrap();
        let mut b = [0u8];
        f.read_exact_at(&mut b, off + 1).unwrap();
        f.write_all_at(&[b[0] ^ 0x40], off + 1).unwrap();
    }

    use std::path::Path;
    use std::sync::Arc;

    use crate::fs::{Fs, RealFs};
    use crate::iter::testing::Model;
    use crate::sst::cache::BlockCache;
    use crate::sst::table::{SstWriter, Table};

    /// Writes `m` as SST number `id` in `dir` with tiny blocks and opens it.
    pub fn table(dir: &Path, id: u64, m: &Model, block_bytes: usize) -> Arc<Table> {
        table_with_cache(dir, id, m, block_bytes, 1 << 20)
    }

    /// [`table`] with a block cache of `cache_bytes` (0: nothing is ever cached, so every
    /// block an iterator reaches comes from the file).
    pub fn table_with_cache(
        dir: &Path,
        id: u64,
        m: &Model,
        block_bytes: usize,
        cache_bytes: usize,
    ) -> Arc<Table> {
        table_read(dir, id, m, block_bytes, cache_bytes, false)
    }

    /// [`table_with_cache`], its single blocks read through a memory map when `mapped`.
    pub fn table_read(
        dir: &Path,
        id: u64,
        m: &Model,
        block_bytes: usize,
        cache_bytes: usize,
        mapped: bool,
    ) -> Arc<Table> {
        let fs: Arc<dyn Fs> = Arc::new(RealFs);
        let path = dir.join(format!("{id}.sst"));
        let mut w = SstWriter::create(fs.as_ref(), &path, id, block_bytes).unwrap();
        w.set_block_bytes(block_bytes);
        for (k, v) in m {
            w.add(k, v.as_deref()).unwrap();
        }
        let meta = w.finish().unwrap();
        let t = Table::open(fs, &path, meta, Arc::new(BlockCache::new(cache_bytes))).unwrap();
        let t = t.with_mapped_reads(mapped);
        assert_eq!(t.is_mapped(), mapped, "a real SST is mapped when asked");
        Arc::new(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::testing::{check_ops, key, model, ops};
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

        /// Readahead: with no cache (every block comes from the file, forward steps read
        /// runs of blocks) and with a small one (runs stop at cached blocks), seeks both ways
        /// and steps both ways agree with the model; read with `pread` and through a map (a
        /// bounded reader of a mapped file reads single blocks from the map).
        #[test]
        fn sst_iter_reading_ahead_matches_model(m in model(), ops in ops(), block in 0usize..60,
                                                cache in prop_oneof![Just(0usize), 64usize..4096],
                                                bound in proptest::option::of(key()),
                                                mapped in any::<bool>()) {
            prop_assume!(!m.is_empty());
            let dir = tempfile::tempdir().unwrap();
            let t = testing::table_read(dir.path(), 1, &m, block, cache, mapped);
            // The read bound is a hint for readahead only: reading past it still works.
            let bound: Option<Arc<[u8]>> = bound.map(Arc::from);
            let mut it = SstIter::new(Arc::clone(&t));
            it.set_read_bound(bound.clone());
            check_ops(&mut it, &m, &ops)?;
            // And a whole forward walk, which reads ahead the most.
            let mut it = SstIter::new(t);
            it.set_read_bound(bound);
            it.seek_to_first().unwrap();
            let mut seen = Vec::new();
            while it.valid() {
                seen.push((it.key().to_vec(), it.value().map(<[u8]>::to_vec)));
                it.next().unwrap();
            }
            let want: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(seen, want);
        }
    }

    /// The read buffer passes from iterator to iterator on a thread (the spare): a run read
    /// into it never shows blocks left there by another file, even when they sit at the same
    /// offsets with valid checksums (tables of the same keys and different values).
    #[test]
    fn spare_buffer_holds_only_this_files_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let model = |v: u8| -> crate::iter::testing::Model {
            (0u32..300)
                .map(|i| (i.to_be_bytes().to_vec(), Some(vec![v; 20])))
                .collect()
        };
        let walk = |t: Arc<Table>| {
            let mut it = SstIter::new(t);
            it.seek_to_first().unwrap();
            let mut seen = Vec::new();
            while it.valid() {
                seen.push((it.key().to_vec(), it.value().map(<[u8]>::to_vec)));
                it.next().unwrap();
            }
            seen
        };
        let want = |m: &crate::iter::testing::Model| -> Vec<_> {
            m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        let (a, b) = (model(b'a'), model(b'b'));
        let ta = testing::table_with_cache(dir.path(), 1, &a, 64, 0);
        let tb = testing::table_with_cache(dir.path(), 2, &b, 64, 0);
        assert!(ta.block_count() > READAHEAD_BLOCKS);
        for _ in 0..2 {
            assert_eq!(walk(Arc::clone(&ta)), want(&a));
            assert_eq!(walk(Arc::clone(&tb)), want(&b));
        }
        // A table of fewer, smaller blocks after the large runs: the spare is longer than
        // its runs.
        let small: crate::iter::testing::Model = (0u32..5)
            .map(|i| (i.to_be_bytes().to_vec(), Some(vec![b'c'; 3])))
            .collect();
        let ts = testing::table_with_cache(dir.path(), 3, &small, 16, 0);
        assert_eq!(walk(ts), want(&small));
    }

    /// Steps `it` forward until a step fails, and checks that it failed on a checksum.
    fn steps_into_checksum_error(it: &mut SstIter) {
        let mut err = None;
        while it.valid() {
            if let Err(e) = it.next() {
                err = Some(e);
                break;
            }
        }
        let e = err.expect("the flipped block is reported");
        assert!(e.to_string().contains("checksum"), "{e}");
    }

    /// A table of 200 entries in blocks of ~64 bytes with a byte of block 2 flipped on disk,
    /// reopened over a cache of `cache_bytes` (read with `pread`); and block 1's last key.
    fn flipped_in_block_2(dir: &std::path::Path, cache_bytes: usize) -> (Table, Vec<u8>) {
        let m: crate::iter::testing::Model = (0u32..200)
            .map(|i| (i.to_be_bytes().to_vec(), Some(vec![b'v'; 20])))
            .collect();
        let t = testing::table_with_cache(dir, 1, &m, 64, 0);
        assert!(t.block_count() > 4);
        let last_of_1 = t.index().last_key(1).to_vec();
        testing::flip_in_block(&t, 2);
        let path = t.path().to_path_buf();
        let fs: Arc<dyn crate::fs::Fs> = Arc::new(crate::fs::RealFs);
        let cache = Arc::new(crate::sst::cache::BlockCache::new(cache_bytes));
        (
            Table::open(fs, &path, t.meta.clone(), cache).unwrap(),
            last_of_1,
        )
    }

    /// A bounded reader of a mapped file (a Query) checks the blocks it copies from the map:
    /// a flipped byte in the block a seek lands on, or in one a step reaches, is reported as
    /// corruption, every time it is read (a block that never matched is never trusted).
    #[test]
    fn bounded_mapped_reads_check_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let (t, last_of_1) = flipped_in_block_2(dir.path(), 1 << 20);
        let t = Arc::new(t.with_mapped_reads(true));
        assert!(t.is_mapped());
        let bound: Option<Arc<[u8]>> = Some(Arc::from(&199u32.to_be_bytes()[..]));
        for _ in 0..2 {
            // A seek into block 2 (its first key is past block 1's last).
            let mut it = SstIter::new(Arc::clone(&t));
            it.set_read_bound(bound.clone());
            let mut target = last_of_1.clone();
            target.push(0);
            let e = it.seek(&target).expect_err("the flipped block is reported");
            assert!(e.to_string().contains("checksum"), "{e}");
            // Steps from block 1 into block 2.
            let mut it = SstIter::new(Arc::clone(&t));
            it.set_read_bound(bound.clone());
            it.seek(&last_of_1).unwrap();
            steps_into_checksum_error(&mut it);
        }
    }

    /// A reader of a mapped file without a bound (a scan's piece past its last stripe, any
    /// unbounded cursor) reads blocks in the map too: a flipped byte is reported every time,
    /// whether the walk starts at the first block or a seek lands in the flipped one.
    #[test]
    fn unbounded_mapped_reads_check_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let (t, last_of_1) = flipped_in_block_2(dir.path(), 1 << 20);
        let t = Arc::new(t.with_mapped_reads(true));
        for _ in 0..2 {
            let mut it = SstIter::new(Arc::clone(&t));
            it.seek_to_first().unwrap();
            steps_into_checksum_error(&mut it);
            let mut it = SstIter::new(Arc::clone(&t));
            let mut target = last_of_1.clone();
            target.push(0);
            let e = it.seek(&target).expect_err("the flipped block is reported");
            assert!(e.to_string().contains("checksum"), "{e}");
        }
    }

    /// A block read in the map stays readable after its iterator and its table are dropped
    /// (the block holds the map), and reads the same entries as the block copied out of the
    /// file.
    #[test]
    fn mapped_block_outlives_its_table() {
        let dir = tempfile::tempdir().unwrap();
        let m: crate::iter::testing::Model = (0u32..200)
            .map(|i| (i.to_be_bytes().to_vec(), Some(vec![b'v'; 20])))
            .collect();
        let t = testing::table_read(dir.path(), 1, &m, 64, 0, true);
        let copied = t.block_with(1, false).unwrap();
        let mapped = t.map_block(1).expect("mapped").unwrap();
        assert!(mapped.is_mapped() && !copied.is_mapped());
        let mut it = SstIter::new(Arc::clone(&t));
        it.seek_to_first().unwrap();
        drop(it);
        drop(t);
        assert_eq!(mapped.data(), copied.data());
        assert_eq!(mapped.entries().unwrap(), copied.entries().unwrap());
    }

    /// A flipped byte in a block that readahead reads (not the first of its run) is reported
    /// as corruption, not returned.
    #[test]
    fn readahead_checks_every_block() {
        let dir = tempfile::tempdir().unwrap();
        // Block 2 is read by the run that starts at block 1.
        let (t, _) = flipped_in_block_2(dir.path(), 0);
        let t = Arc::new(t);
        let mut it = SstIter::new(t);
        it.seek_to_first().unwrap();
        steps_into_checksum_error(&mut it);
    }
}
