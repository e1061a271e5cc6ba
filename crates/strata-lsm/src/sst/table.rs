//! SST files: writing ([`SstWriter`]), reading ([`Table`]) and iterating ([`TableIter`]).
//!
//! File = `(data block | crc u32)* | index block | crc | bloom | crc | footer[48]`.
//! Footer = `index_off u64 | index_len u32 | bloom_off u64 | bloom_len u32 | entries u64 |
//! version u32 | footer_crc u32 | magic "STRATSST"` (integers little-endian; `footer_crc` is the
//! CRC32C of the 36 bytes before it; every `crc` is the CRC32C of the block before it). Index
//! entries map the last key of each data block to `off varint | len varint`. Only the index and
//! the filter stay in memory; data blocks are read on demand through the [`BlockCache`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::block::{self, Block, ValueRef};
use super::bloom;
use super::cache::BlockCache;
use super::heads::{self, RestartHeads, State};
use super::index::FlatIndex;
use super::keycmp;
use super::lookup_order::LookupOrder;
use super::point;
use crate::coding::{crc, u32_at};
use crate::error::{Error, FormatError, Result};
use crate::fs::{Fs, ReadableFile};
use crate::memtable::Value;

pub use super::format::{
    decode_footer, decode_index, Footer, IndexEntry, BLOOM_BITS_PER_KEY, FOOTER, SST_MAGIC,
    SST_MIN_VERSION, SST_VERSION,
};
pub use super::writer::{FileMeta, SstWriter};
pub use crate::filename::{parse_sst_name, sst_name};

/// An open SST: index and filter in memory, data blocks through the cache.
// In declaration order (`repr(C)`): `order` right after `bloom`, whose fields every point
// read loads, so usually on a line the read touches anyway (the struct is 8-aligned, so not
// always; see `LookupOrder` for the measurement).
#[repr(C)]
pub struct Table {
    /// What the manifest knows of the file.
    pub meta: FileMeta,
    path: PathBuf,
    file: Arc<dyn ReadableFile>,
    /// The file mapped into memory, when the file system maps it ([`ReadableFile::map`]):
    /// single blocks (point reads, seeks) are copied from it without a system call (a point
    /// read of a block checked before and not cached searches it in place); runs of
    /// blocks (scans) and whole-file checks still read the file, so that a scan does not
    /// leave the whole file mapped in the process.
    mapped: Option<Arc<dyn ReadableFile>>,
    /// One bit per data block, set once a read of the block through `mapped` has matched its
    /// checksum: a later read of it through the map copies the block (a seek that missed the
    /// cache) or searches it where it lies (a point read, [`Table::get_ref`], which then does
    /// not ask the cache) without checking it again. The checksum is checked once per block per open, as a cached
    /// block is (a block that does not match is never marked, so every read of it is an
    /// error). Empty when the file is not mapped.
    verified: Box<[AtomicU64]>,
    /// The restart heads of the mapped file's blocks (one slot per block, filled on a
    /// block's first point read since the open), allocated on the table's first point read
    /// ([`RestartHeads`]: 128 bytes per block).
    heads: OnceLock<RestartHeads>,
    cache: Arc<BlockCache>,
    index: FlatIndex,
    bloom: bloom::Filter,
    /// The order of [`Table::get_ref_expected`]'s filter check and index search, learnt
    /// from the filter's recent outcomes.
    order: LookupOrder,
    obsolete: AtomicBool,
    fs: Arc<dyn Fs>,
}

impl Table {
    fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Error {
        Error::corruption(path, offset, reason)
    }

    /// Reads `len` bytes + CRC at `off` and verifies them.
    fn read_checked(file: &dyn ReadableFile, path: &Path, off: u64, len: u32) -> Result<Vec<u8>> {
        // Read into uninitialised capacity (no zeroing pass per block read); the path is
        // copied into the error only on failure (not per block read).
        let mut buf = file
            .read_vec_at(len as usize + 4, off)
            .map_err(|e| Error::io(path)(e))?;
        check_crc(&buf, path, off)?;
        buf.truncate(len as usize);
        Ok(buf)
    }

    /// Data block `i` at `(off, len)` read from the file (checked), kept in the cache when
    /// `fill`. Through the map, the checksum is checked on the block's first read since the
    /// open only (the `verified` bits); through `pread`, on every read.
    fn load_block(&self, i: usize, off: u64, len: u32, fill: bool) -> Result<Arc<Vec<u8>>> {
        let d = match &self.mapped {
            Some(m) => {
                if self.is_verified(i) {
                    // The file never changes while it is open (it is finished, and only ever
                    // unlinked), and these bytes matched their checksum before.
                    m.read_vec_at(len as usize, off)
                        .map_err(|e| Error::io(&self.path)(e))?
                } else {
                    let d = Table::read_checked(m.as_ref(), &self.path, off, len)?;
                    self.mark_verified(i);
                    d
                }
            }
            None => Table::read_checked(self.file.as_ref(), &self.path, off, len)?,
        };
        let d = Arc::new(d);
        if fill {
            self.cache.insert(self.meta.id, off, Arc::clone(&d));
        }
        Ok(d)
    }

    /// Reads single blocks (point reads, seeks) through a memory map of the file when `on` and
    /// the file system maps it ([`crate::fs::ReadableFile::map`]; see
    /// [`crate::LsmOptions::mmap_reads`] for the trade-off). [`Table::open`] does not map.
    pub fn with_mapped_reads(mut self, on: bool) -> Table {
        self.mapped = if on { self.file.map() } else { None };
        let words = if self.mapped.is_some() {
            self.index.len().div_ceil(64)
        } else {
            0
        };
        self.verified = (0..words).map(|_| AtomicU64::new(0)).collect();
        self
    }

    /// True when single blocks are read through a memory map ([`Table::with_mapped_reads`]).
    pub fn is_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// Data block `i`'s bytes read from the file (through the map when mapped, checked as
    /// [`Table::block_with`] checks them), kept in the cache when `fill`; the cache is not
    /// looked up (the caller just missed it).
    pub fn read_block(&self, i: usize, fill: bool) -> Result<Arc<Vec<u8>>> {
        let (off, len) = self.index.handle(i);
        self.load_block(i, off, len, fill)
    }

    /// Data block `i` read where it lies in the file's memory map (no copy, the block cache
    /// neither asked nor filled); its checksum is checked in the map on the block's first read
    /// since the open (the `verified` bits, as [`Table::read_block`] and point reads check).
    /// `None` when the file is not mapped.
    pub fn map_block(&self, i: usize) -> Option<Result<Block>> {
        let m = self.mapped.as_ref()?;
        let (off, len) = self.index.handle(i);
        let check = || -> Result<Block> {
            if !self.is_verified(i) {
                let framed = m
                    .mapped_bytes()
                    .and_then(|all| {
                        let start = usize::try_from(off).ok()?;
                        all.get(start..start.checked_add(len as usize)?.checked_add(4)?)
                    })
                    .ok_or_else(|| {
                        Table::corrupt(&self.path, off, "block outside the mapped file")
                    })?;
                check_crc(framed, &self.path, off)?;
                self.mark_verified(i);
            }
            Block::in_map(Arc::clone(m), off, len).map_err(|e| e.in_file(&self.path, off))
        };
        Some(check())
    }

    /// Opens an SST (every read through `pread`; see [`Table::with_mapped_reads`]).
    pub fn open(
        fs: Arc<dyn Fs>,
        path: &Path,
        meta: FileMeta,
        cache: Arc<BlockCache>,
    ) -> Result<Table> {
        let file = fs.open(path).map_err(Error::io(path))?;
        let len = file.len();
        if len < FOOTER as u64 {
            return Err(Table::corrupt(
                path,
                0,
                format!("file of {len} bytes is shorter than the footer"),
            ));
        }
        let fo = len - FOOTER as u64;
        let mut f = vec![0u8; FOOTER];
        file.read_at(&mut f, fo).map_err(Error::io(path))?;
        let footer = decode_footer(&f, len).map_err(|e| e.in_file(path, fo))?;
        let ib = Table::read_checked(file.as_ref(), path, footer.index_off, footer.index_len)?;
        let iblock = Block::new(Arc::new(ib)).map_err(|e| e.in_file(path, footer.index_off))?;
        let index = decode_index(&iblock).map_err(|e| e.in_file(path, footer.index_off))?;
        for e in &index {
            if e.off
                .checked_add(u64::from(e.len) + 4)
                .is_none_or(|end| end > footer.index_off)
            {
                return Err(Table::corrupt(
                    path,
                    footer.index_off,
                    format!("index points past the data ({})", e.off),
                ));
            }
        }
        let bloom = bloom::Filter::from_stored(
            footer.version,
            Table::read_checked(file.as_ref(), path, footer.bloom_off, footer.bloom_len)?,
        );
        Ok(Table {
            meta,
            path: path.to_path_buf(),
            mapped: None,
            verified: Box::default(),
            heads: OnceLock::new(),
            file,
            cache,
            index: FlatIndex::new(&index),
            bloom,
            order: LookupOrder::default(),
            obsolete: AtomicBool::new(false),
            fs,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Marks the file obsolete: it is deleted when the last reader lets go of it.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }

    /// Number of data blocks.
    pub fn block_count(&self) -> usize {
        self.index.len()
    }

    /// Loads data block `i` (through the cache).
    pub fn block(&self, i: usize) -> Result<Block> {
        self.block_with(i, true)
    }

    /// Loads data block `i`: from the cache when it is there; a block read from the file is
    /// kept in the cache only when `fill` (compaction reads every block of files about to be
    /// deleted, and must not evict the blocks readers use).
    pub fn block_with(&self, i: usize, fill: bool) -> Result<Block> {
        let (off, len) = self.index.handle(i);
        let data = match self.cache.get(self.meta.id, off) {
            Some(d) => d,
            None => self.load_block(i, off, len, fill)?,
        };
        Block::new(data).map_err(|err| err.in_file(&self.path, off))
    }

    /// Reads data block `first` and up to `max - 1` blocks after it with one read into the
    /// start of `buf` (readahead for iterators moving forward); returns the last block read
    /// and the bytes read (`buf[..bytes]` holds the run). The run stops at the file's last
    /// data block, at a block already in the cache, at a gap between blocks, before
    /// `max_bytes`, and at the block that holds `until` (the reader reads no key above it);
    /// it always holds `first`. Nothing is checked yet: take each block out with
    /// [`Table::block_in_run`]. `buf` only grows (it is reused: bytes past the run are left
    /// as they were, so a buffer that already has the room is not zeroed again).
    pub fn read_run(
        &self,
        first: usize,
        max: usize,
        max_bytes: usize,
        until: Option<&[u8]>,
        buf: &mut Vec<u8>,
    ) -> Result<(usize, usize)> {
        let (start, len) = self.index.handle(first);
        let mut end = start + u64::from(len) + 4;
        let mut last = first;
        while last + 1 < self.index.len()
            && last + 1 - first < max
            && until.is_none_or(|u| keycmp::lt(self.index.last_key(last), u))
        {
            let (off, len) = self.index.handle(last + 1);
            let next_end = off + u64::from(len) + 4;
            if off != end
                || next_end - start > max_bytes as u64
                || self.cache.get(self.meta.id, off).is_some()
            {
                break;
            }
            end = next_end;
            last += 1;
        }
        let total = usize::try_from(end - start)
            .map_err(|_| Table::corrupt(&self.path, start, "block run too large"))?;
        // The buffer is reused: only its growth is zeroed, and it never shrinks.
        if buf.len() < total {
            buf.resize(total, 0);
        }
        self.file
            .read_at(&mut buf[..total], start)
            .map_err(Error::io(&self.path))?;
        Ok((last, total))
    }

    /// Block `i`'s bytes out of `buf`, a run read by [`Table::read_run`] from block `first`
    /// on (`i` inside the run; `buf` exactly the bytes read), checked against its CRC.
    pub fn block_in_run(&self, buf: &[u8], first: usize, i: usize) -> Result<Arc<Vec<u8>>> {
        let start = self.index.handle(first).0;
        let (off, len) = self.index.handle(i);
        let at = usize::try_from(off - start).unwrap_or(usize::MAX);
        let framed = at
            .checked_add(len as usize + 4)
            .and_then(|end| buf.get(at..end))
            .ok_or_else(|| Table::corrupt(&self.path, off, "block outside the run read"))?;
        check_crc(framed, &self.path, off)?;
        Ok(Arc::new(framed[..len as usize].to_vec()))
    }

    /// Block `i`'s bytes if the cache holds them.
    pub fn cached_block(&self, i: usize) -> Option<Arc<Vec<u8>>> {
        self.cache.get(self.meta.id, self.index.handle(i).0)
    }

    /// Adds block `i`'s bytes (read by [`Table::read_run`]) to the cache.
    pub fn cache_block(&self, i: usize, data: Arc<Vec<u8>>) {
        self.cache
            .insert(self.meta.id, self.index.handle(i).0, data);
    }

    /// Parses block `i` from its bytes, naming the file and offset in an error.
    pub fn parse_block(&self, i: usize, data: Arc<Vec<u8>>) -> Result<Block> {
        Block::new(data).map_err(|err| err.in_file(&self.path, self.index.handle(i).0))
    }

    /// Reads and checks every block without the cache; returns the number of entries.
    pub fn verify(&self) -> Result<u64> {
        let mut n = 0u64;
        let mut prev: Option<Vec<u8>> = None;
        for i in 0..self.index.len() {
            let (off, len) = self.index.handle(i);
            let d = Table::read_checked(self.file.as_ref(), &self.path, off, len)?;
            let b = Block::new(Arc::new(d)).map_err(|err| err.in_file(&self.path, off))?;
            let entries = b.entries().map_err(|err| err.in_file(&self.path, off))?;
            if let (Some(p), Some(f)) = (&prev, entries.first()) {
                if p >= &f.0 {
                    return Err(Table::corrupt(
                        &self.path,
                        off,
                        "keys out of order across blocks",
                    ));
                }
            }
            if entries.last().map(|l| l.0.as_slice()) != Some(self.index.last_key(i)) {
                return Err(Table::corrupt(
                    &self.path,
                    off,
                    "index key differs from the block's last key",
                ));
            }
            prev = entries.last().map(|l| l.0.clone());
            n += entries.len() as u64;
        }
        Ok(n)
    }

    /// The index: last key and location of every data block (pinned in memory).
    pub fn index(&self) -> &FlatIndex {
        &self.index
    }

    /// A corruption error of the block at `off`.
    pub(crate) fn err(&self, off: u64, e: FormatError) -> Error {
        e.in_file(&self.path, off)
    }

    /// Looks a key up: `None` when absent from this file, `Some(None)` for a tombstone.
    pub fn get(&self, key: &[u8], hash: u64) -> Result<Option<Value>> {
        Ok(self
            .get_ref(key, hash)?
            .map(|found| found.value().map(<[u8]>::to_vec)))
    }

    /// Looks a key up without copying its value: `None` when absent from this file, else
    /// where the entry's value lies ([`Found::value`]): in a block, or in the mapped file.
    pub fn get_ref(&self, key: &[u8], hash: u64) -> Result<Option<Found<'_>>> {
        self.get_ref_with(key, hash, false, false)
    }

    /// [`Table::get_ref`] for a file where the key is expected to be (the deepest level that
    /// has data: where most keys live): the filter's line is asked for and the file index
    /// searched while it arrives, so that the filter's cache miss and the search's overlap
    /// instead of following each other. A key the filter rules out costs the search, which
    /// `get_ref` would not have done, so the file counts how often its filter rules keys out
    /// here and goes back to `get_ref`'s order while that is most of the time
    /// ([`LookupOrder`]: a workload of "does it exist?" reads).
    pub fn get_ref_expected(&self, key: &[u8], hash: u64) -> Result<Option<Found<'_>>> {
        let overlap = !self.order.filter_first();
        self.get_ref_with(key, hash, true, overlap)
    }

    /// The point read of both: `expected` records the filter's outcome in `order`;
    /// `overlap` (only with `expected`) asks for the filter's line and searches the index
    /// before the filter is read.
    #[inline(always)]
    fn get_ref_with(
        &self,
        key: &[u8],
        hash: u64,
        expected: bool,
        overlap: bool,
    ) -> Result<Option<Found<'_>>> {
        if keycmp::lt(key, &self.meta.smallest) || keycmp::lt(&self.meta.largest, key) {
            return Ok(None);
        }
        // Overlapped: the filter's line is on its way while the index is searched.
        let early = overlap.then(|| {
            self.bloom.prefetch(hash);
            self.index.find(key)
        });
        let pass = self.bloom.may_contain(hash);
        if expected {
            self.order.record(hash, !pass);
        }
        if !pass {
            return Ok(None);
        }
        let i = early.unwrap_or_else(|| self.index.find(key));
        if i == self.index.len() {
            return Ok(None);
        }
        // Mapped: search the block where it lies, without asking the cache (its checksum is
        // checked there on its first read since the open; nothing is copied or cached).
        if self.mapped.is_some() {
            return self.get_in_place(i, key);
        }
        let off = self.index.handle(i).0;
        let (b, found) = match self.cache.get_point(self.meta.id, off) {
            // A cached block: its point index finds the restart point.
            Some((data, Some(pi))) => {
                let b = Block::with_restart_count(data, pi.restart_count())
                    .map_err(|e| self.err(off, e))?;
                let found = pi.get(&b, key);
                (b, found)
            }
            // Cached without a point index, or not cached: then read it (the cache was just
            // asked; no second lookup) and cache it.
            cached => {
                let data = match cached {
                    Some((data, _)) => data,
                    None => self.load_block(i, off, self.index.handle(i).1, true)?,
                };
                let b = Block::new(data).map_err(|e| self.err(off, e))?;
                let found = b.get(key);
                (b, found)
            }
        };
        Ok(found
            .map_err(|e| self.err(off, e))?
            .map(|v| Found::Block(b, v)))
    }
}

/// An entry a point read found in a file ([`Table::get_ref`]), its value not copied.
pub enum Found<'a> {
    /// In a block (cached, or read for this lookup): the block and where its value lies.
    Block(Block, ValueRef),
    /// In a block of the mapped file searched where it lies: the value's bytes in the map
    /// (`None`: a tombstone), borrowed from the [`Table`].
    Mapped(Option<&'a [u8]>),
}

impl Found<'_> {
    /// The value's bytes (`None`: a tombstone).
    pub fn value(&self) -> Option<&[u8]> {
        match self {
            Found::Block(b, v) => b.value_slice(*v),
            Found::Mapped(v) => *v,
        }
    }
}

impl Table {
    /// True when data block `i` was read through the map since the open and matched its
    /// checksum (see `verified`).
    #[inline]
    fn is_verified(&self, i: usize) -> bool {
        self.verified
            .get(i / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1u64 << (i % 64)) != 0)
    }

    /// Records that data block `i`, read through the map, matched its checksum (no effect
    /// when the file is not mapped: `verified` is empty).
    #[inline]
    fn mark_verified(&self, i: usize) {
        if let Some(w) = self.verified.get(i / 64) {
            // Relaxed: the bit only says that the (immutable) bytes matched.
            w.fetch_or(1u64 << (i % 64), Ordering::Relaxed);
        }
    }

    /// A point read of data block `i` of the mapped file, searched in the map where it lies
    /// (the block cache is not asked: its probe cost more than the cached block's point
    /// index saved). On the block's first read since the open its checksum is checked in
    /// the map first (every read is an error while it does not match): the block is not
    /// copied into the cache, as it was until session 14 (a 4 KiB copy, a cache insert and
    /// the eviction of another block, per first read). [`point::interval_for`] finds the
    /// key's restart interval (a few hundred bytes) and [`block::scan_entries`] scans it in
    /// place; the value is handed out as a slice of the map ([`Found::Mapped`]). Nothing is
    /// copied and nothing allocated (session 13 copied the interval into a block of its own:
    /// ~7% of a get's time at 10^7, in `memmove` and `malloc`). From the block's first point
    /// read on, its in-memory restart heads ([`RestartHeads`]) lead to the interval without
    /// reading the block's restart array and restart keys ([`point::interval_in`]).
    fn get_in_place(&self, i: usize, key: &[u8]) -> Result<Option<Found<'_>>> {
        let heads = self
            .heads
            .get_or_init(|| RestartHeads::new(self.index.len()));
        // The slot's lines and the block's location are independent loads: ask for both.
        heads.prefetch(i);
        let (off, len) = self.index.handle(i);
        // The block and its checksum.
        let framed = self
            .mapped
            .as_ref()
            .and_then(|m| m.mapped_bytes())
            .and_then(|all| {
                let start = usize::try_from(off).ok()?;
                all.get(start..start.checked_add(len as usize)?.checked_add(4)?)
            })
            .ok_or_else(|| Table::corrupt(&self.path, off, "block outside the mapped file"))?;
        let bytes = &framed[..len as usize];
        let interval = match heads.get(i) {
            // Filled after the block's check since the open: straight to the interval.
            State::Ready(w) => heads::interval_in(&w, bytes, key),
            state => {
                if !self.is_verified(i) {
                    check_crc(framed, &self.path, off)?;
                    self.mark_verified(i);
                }
                // Filled on the block's first point read, while the check has its lines in
                // the CPU caches (filling on the second read measured slower: 3 paired runs).
                match matches!(state, State::Empty)
                    .then(|| heads.fill(i, bytes))
                    .flatten()
                {
                    Some(w) => heads::interval_in(&w, bytes, key),
                    None => point::interval_for(bytes, key),
                }
            }
        };
        let Some(r) = interval.map_err(|e| self.err(off, e))? else {
            return Ok(None);
        };
        // Errors in the interval name offsets in the block.
        let at = off + r.start as u64;
        let entries = &bytes[r];
        let found = block::scan_entries(entries, 0, key).map_err(|e| self.err(at, e))?;
        let Some(v) = found else {
            return Ok(None);
        };
        if v.tombstone {
            return Ok(Some(Found::Mapped(None)));
        }
        // (`scan_entries` checked that the value lies in the interval.)
        let value = entries
            .get(v.off as usize..v.off as usize + v.len as usize)
            .ok_or_else(|| Table::corrupt(&self.path, at, "value runs past the block"))?;
        Ok(Some(Found::Mapped(Some(value))))
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::Acquire) {
            // Best effort: a file left behind is removed as an orphan at the next open.
            let _ = self.fs.remove(&self.path);
        }
    }
}

pub use crate::iter::{before_lo, past_hi, Entry, Source, TableIter};

/// Checks a data block framed with its CRC32C trailer (`block ‖ crc`, as written), naming
/// the file and the block's offset when it does not match.
fn check_crc(framed: &[u8], path: &Path, off: u64) -> Result<()> {
    let len = framed.len().saturating_sub(4);
    let want = u32_at(framed, len).unwrap_or(0);
    if framed.len() < 4 || crc(&framed[..len]) != want {
        return Err(Table::corrupt(path, off, "block checksum mismatch"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
