//! SST files: writing ([`SstWriter`]), reading ([`Table`]) and iterating ([`TableIter`]).
//!
//! File = `(data block | crc u32)* | index block | crc | bloom | crc | footer[48]`.
//! Footer = `index_off u64 | index_len u32 | bloom_off u64 | bloom_len u32 | entries u64 |
//! version u32 | footer_crc u32 | magic "STRATSST"` (integers little-endian; `footer_crc` is the
//! CRC32C of the 36 bytes before it; every `crc` is the CRC32C of the block before it). Index
//! entries map the last key of each data block to `off varint | len varint`. Only the index and
//! the filter stay in memory; data blocks are read on demand through the [`BlockCache`].

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::block::{Block, BlockBuilder, ValueRef};
use super::bloom;
use super::cache::BlockCache;
use crate::coding::{crc, get_varint, put_varint, u32_at, u64_at};
use crate::error::{Error, FormatError, Result};
use crate::fs::{Fs, ReadableFile, WritableFile};
use crate::memtable::Value;

/// Magic at the end of every SST.
pub const SST_MAGIC: &[u8; 8] = b"STRATSST";
/// Format version written in the footer.
pub const SST_VERSION: u32 = 1;
/// Bytes of the footer.
pub const FOOTER: usize = 48;
/// Bloom filter bits per key.
pub const BLOOM_BITS_PER_KEY: usize = 10;

pub use crate::filename::{parse_sst_name, sst_name};

/// What the manifest records of one SST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// File number (unique in the database).
    pub id: u64,
    /// File size in bytes.
    pub size: u64,
    /// Number of entries (tombstones included).
    pub entries: u64,
    /// Smallest key.
    pub smallest: Vec<u8>,
    /// Largest key.
    pub largest: Vec<u8>,
}

/// Writes one SST.
pub struct SstWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    id: u64,
    block: BlockBuilder,
    index: BlockBuilder,
    hashes: Vec<u64>,
    offset: u64,
    entries: u64,
    smallest: Option<Vec<u8>>,
    block_bytes: usize,
}

impl SstWriter {
    /// Creates the file.
    pub fn create(fs: &dyn Fs, path: &Path, id: u64, block_bytes: usize) -> Result<SstWriter> {
        let file = fs.create(path).map_err(Error::io(path))?;
        Ok(SstWriter {
            file,
            path: path.to_path_buf(),
            id,
            block: BlockBuilder::new(),
            index: BlockBuilder::new(),
            hashes: Vec::new(),
            offset: 0,
            entries: 0,
            smallest: None,
            block_bytes: block_bytes.max(256),
        })
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::io(&self.path)(source)
    }

    fn write_block(&mut self, data: &[u8]) -> Result<(u64, u32)> {
        let off = self.offset;
        let mut buf = Vec::with_capacity(data.len() + 4);
        buf.extend_from_slice(data);
        buf.extend_from_slice(&crc(data).to_le_bytes());
        self.file.append(&buf).map_err(|e| self.io(e))?;
        self.offset += buf.len() as u64;
        Ok((off, data.len() as u32))
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let last = self.block.last_key().to_vec();
        let data = self.block.finish();
        let (off, len) = self.write_block(&data)?;
        let mut handle = Vec::new();
        put_varint(&mut handle, off);
        put_varint(&mut handle, u64::from(len));
        self.index.add(&last, Some(&handle));
        Ok(())
    }

    /// Adds an entry; keys must be strictly increasing.
    pub fn add(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        if self.smallest.is_none() {
            self.smallest = Some(key.to_vec());
        }
        self.block.add(key, value);
        self.hashes.push(bloom::key_hash(key));
        self.entries += 1;
        if self.block.estimated_size() >= self.block_bytes {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Bytes written so far (an estimate of the final size).
    pub fn estimated_size(&self) -> u64 {
        self.offset + self.block.estimated_size() as u64
    }

    /// The last key added.
    pub fn last_key(&self) -> Vec<u8> {
        self.block.last_key().to_vec()
    }

    /// Writes index, filter and footer and syncs the file.
    pub fn finish(self) -> Result<FileMeta> {
        let path = self.path.clone();
        let (meta, mut file) = self.finish_unsynced()?;
        file.sync().map_err(Error::io(path))?;
        Ok(meta)
    }

    /// Writes index, filter and footer; the caller must sync the returned file before the
    /// SST is referenced by the manifest (lets a flush sync many files at once).
    pub fn finish_unsynced(mut self) -> Result<(FileMeta, Box<dyn WritableFile>)> {
        let largest = if self.block.is_empty() {
            None
        } else {
            Some(self.block.last_key().to_vec())
        };
        self.flush_block()?;
        let largest = match largest {
            Some(l) => l,
            None => self.index_last_key(),
        };
        let index = self.index.finish();
        let (index_off, index_len) = self.write_block(&index)?;
        let filter = bloom::build(&self.hashes, BLOOM_BITS_PER_KEY);
        let (bloom_off, bloom_len) = self.write_block(&filter)?;
        let mut f = Vec::with_capacity(FOOTER);
        f.extend_from_slice(&index_off.to_le_bytes());
        f.extend_from_slice(&index_len.to_le_bytes());
        f.extend_from_slice(&bloom_off.to_le_bytes());
        f.extend_from_slice(&bloom_len.to_le_bytes());
        f.extend_from_slice(&self.entries.to_le_bytes());
        f.extend_from_slice(&SST_VERSION.to_le_bytes());
        let c = crc(&f);
        f.extend_from_slice(&c.to_le_bytes());
        f.extend_from_slice(SST_MAGIC);
        self.file.append(&f).map_err(|e| self.io(e))?;
        let meta = FileMeta {
            id: self.id,
            size: self.offset + FOOTER as u64,
            entries: self.entries,
            smallest: self.smallest.unwrap_or_default(),
            largest,
        };
        Ok((meta, self.file))
    }

    fn index_last_key(&self) -> Vec<u8> {
        self.index.last_key().to_vec()
    }
}

/// The footer of an SST, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Offset of the index block.
    pub index_off: u64,
    /// Length of the index block (without its CRC).
    pub index_len: u32,
    /// Offset of the bloom filter.
    pub bloom_off: u64,
    /// Length of the bloom filter (without its CRC).
    pub bloom_len: u32,
    /// Number of entries.
    pub entries: u64,
}

/// Decodes a footer (the last 48 bytes of a file of `file_len` bytes); errors give the offset
/// inside the footer and the reason.
pub fn decode_footer(f: &[u8], file_len: u64) -> std::result::Result<Footer, FormatError> {
    if f.len() != FOOTER {
        return Err(FormatError::new(
            0,
            format!("footer is {} bytes, expected {FOOTER}", f.len()),
        ));
    }
    if &f[40..48] != SST_MAGIC {
        return Err(FormatError::new(40, "bad SST magic"));
    }
    let c = u32_at(f, 36).unwrap_or(0);
    if crc(&f[..36]) != c {
        return Err(FormatError::new(0, "footer checksum mismatch"));
    }
    let version = u32_at(f, 32).unwrap_or(0);
    if version != SST_VERSION {
        return Err(FormatError::new(
            32,
            format!("unsupported SST version {version}"),
        ));
    }
    let ft = Footer {
        index_off: u64_at(f, 0).unwrap_or(0),
        index_len: u32_at(f, 8).unwrap_or(0),
        bloom_off: u64_at(f, 12).unwrap_or(0),
        bloom_len: u32_at(f, 20).unwrap_or(0),
        entries: u64_at(f, 24).unwrap_or(0),
    };
    let body = file_len.saturating_sub(FOOTER as u64);
    for (off, len, at) in [
        (ft.index_off, ft.index_len, 0usize),
        (ft.bloom_off, ft.bloom_len, 12),
    ] {
        if off.checked_add(u64::from(len) + 4).is_none_or(|e| e > body) {
            return Err(FormatError::new(
                at,
                format!("block at {off} (+{len}) runs past the data"),
            ));
        }
    }
    Ok(ft)
}

/// One index entry: the last key of a data block and where the block is.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// Last key of the block.
    pub last_key: Vec<u8>,
    /// Offset of the block.
    pub off: u64,
    /// Length of the block (without its CRC).
    pub len: u32,
}

/// Decodes an index block into its entries.
pub fn decode_index(block: &Block) -> std::result::Result<Vec<IndexEntry>, FormatError> {
    let mut out = Vec::new();
    for (key, v) in block.entries()? {
        let Some(h) = block.value(v) else {
            return Err(FormatError::new(v.off as usize, "tombstone in the index"));
        };
        let mut p = 0;
        let off = get_varint(&h, &mut p)
            .ok_or_else(|| FormatError::new(v.off as usize, "bad block offset"))?;
        let len = get_varint(&h, &mut p)
            .ok_or_else(|| FormatError::new(v.off as usize, "bad block length"))?;
        let len = u32::try_from(len)
            .map_err(|_| FormatError::new(v.off as usize, "block length too large"))?;
        out.push(IndexEntry {
            last_key: key,
            off,
            len,
        });
    }
    Ok(out)
}

/// An open SST: index and filter in memory, data blocks through the cache.
pub struct Table {
    /// What the manifest knows of the file.
    pub meta: FileMeta,
    path: PathBuf,
    file: Arc<dyn ReadableFile>,
    cache: Arc<BlockCache>,
    index: Vec<IndexEntry>,
    bloom: Vec<u8>,
    obsolete: AtomicBool,
    fs: Arc<dyn Fs>,
}

impl Table {
    fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Error {
        Error::corruption(path, offset, reason)
    }

    /// Reads `len` bytes + CRC at `off` and verifies them.
    fn read_checked(file: &dyn ReadableFile, path: &Path, off: u64, len: u32) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len as usize + 4];
        file.read_at(&mut buf, off).map_err(Error::io(path))?;
        let want = u32_at(&buf, len as usize).unwrap_or(0);
        buf.truncate(len as usize);
        if crc(&buf) != want {
            return Err(Table::corrupt(path, off, "block checksum mismatch"));
        }
        Ok(buf)
    }

    /// Opens an SST.
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
        let bloom = Table::read_checked(file.as_ref(), path, footer.bloom_off, footer.bloom_len)?;
        Ok(Table {
            meta,
            path: path.to_path_buf(),
            file,
            cache,
            index,
            bloom,
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
        let e = &self.index[i];
        let data = match self.cache.get(self.meta.id, e.off) {
            Some(d) => d,
            None => {
                let d = Arc::new(Table::read_checked(
                    self.file.as_ref(),
                    &self.path,
                    e.off,
                    e.len,
                )?);
                self.cache.insert(self.meta.id, e.off, Arc::clone(&d));
                d
            }
        };
        Block::new(data).map_err(|err| err.in_file(&self.path, e.off))
    }

    /// Reads and checks every block without the cache; returns the number of entries.
    pub fn verify(&self) -> Result<u64> {
        let mut n = 0u64;
        let mut prev: Option<Vec<u8>> = None;
        for e in &self.index {
            let d = Table::read_checked(self.file.as_ref(), &self.path, e.off, e.len)?;
            let b = Block::new(Arc::new(d)).map_err(|err| err.in_file(&self.path, e.off))?;
            let entries = b.entries().map_err(|err| err.in_file(&self.path, e.off))?;
            if let (Some(p), Some(f)) = (&prev, entries.first()) {
                if p >= &f.0 {
                    return Err(Table::corrupt(
                        &self.path,
                        e.off,
                        "keys out of order across blocks",
                    ));
                }
            }
            if entries.last().map(|l| &l.0) != Some(&e.last_key) {
                return Err(Table::corrupt(
                    &self.path,
                    e.off,
                    "index key differs from the block's last key",
                ));
            }
            prev = entries.last().map(|l| l.0.clone());
            n += entries.len() as u64;
        }
        Ok(n)
    }

    fn err(&self, off: u64, e: FormatError) -> Error {
        e.in_file(&self.path, off)
    }

    /// Looks a key up: `None` when absent from this file, `Some(None)` for a tombstone.
    pub fn get(&self, key: &[u8], hash: u64) -> Result<Option<Value>> {
        if key < self.meta.smallest.as_slice() || key > self.meta.largest.as_slice() {
            return Ok(None);
        }
        if !bloom::may_contain(&self.bloom, hash) {
            return Ok(None);
        }
        let i = self.index.partition_point(|e| e.last_key.as_slice() < key);
        if i == self.index.len() {
            return Ok(None);
        }
        let b = self.block(i)?;
        let mut k = Vec::with_capacity(key.len());
        match b
            .seek(key, &mut k)
            .map_err(|e| self.err(self.index[i].off, e))?
        {
            Some((_, v, _)) if k == key => Ok(Some(b.value(v))),
            _ => Ok(None),
        }
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

/// An entry produced by iterators: key and value (`None`: tombstone).
pub type Entry = (Vec<u8>, Value);

/// A source of entries in key order for the merging iterator.
pub trait Source: Send {
    /// The next entry, or `None` at the end.
    fn next_entry(&mut self) -> Result<Option<Entry>>;
}

/// True when `key` is at or beyond the far bound in the iteration direction.
pub fn past_hi(key: &[u8], hi: &Bound<Vec<u8>>) -> bool {
    match hi {
        Bound::Included(h) => key > h.as_slice(),
        Bound::Excluded(h) => key >= h.as_slice(),
        Bound::Unbounded => false,
    }
}

/// True when `key` is below the low bound.
pub fn before_lo(key: &[u8], lo: &Bound<Vec<u8>>) -> bool {
    match lo {
        Bound::Included(l) => key < l.as_slice(),
        Bound::Excluded(l) => key <= l.as_slice(),
        Bound::Unbounded => false,
    }
}

/// Iterates one SST over a range, forward or reverse.
pub struct TableIter {
    table: Arc<Table>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    reverse: bool,
    started: bool,
    done: bool,
    block_idx: usize,
    block: Option<Block>,
    pos: usize,
    key: Vec<u8>,
    rev_entries: Vec<(Vec<u8>, ValueRef)>,
}

impl TableIter {
    /// An iterator over `[lo, hi]` of `table`.
    pub fn new(
        table: Arc<Table>,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
        reverse: bool,
    ) -> TableIter {
        TableIter {
            table,
            lo,
            hi,
            reverse,
            started: false,
            done: false,
            block_idx: 0,
            block: None,
            pos: 0,
            key: Vec::new(),
            rev_entries: Vec::new(),
        }
    }

    fn start_forward(&mut self) -> Result<()> {
        let t = Arc::clone(&self.table);
        let target = match &self.lo {
            Bound::Included(k) | Bound::Excluded(k) => k.as_slice(),
            Bound::Unbounded => {
                self.block_idx = 0;
                return Ok(());
            }
        };
        self.block_idx = t.index.partition_point(|e| e.last_key.as_slice() < target);
        if self.block_idx < t.index.len() {
            let b = t.block(self.block_idx)?;
            let off = t.index[self.block_idx].off;
            // Start at the last restart point before the target; next() skips the rest.
            self.pos = b.restart_before(target).map_err(|e| t.err(off, e))?;
            self.key.clear();
            self.block = Some(b);
        }
        Ok(())
    }

    fn next_forward(&mut self) -> Result<Option<Entry>> {
        loop {
            if self.block.is_none() {
                if self.block_idx >= self.table.index.len() {
                    return Ok(None);
                }
                self.block = Some(self.table.block(self.block_idx)?);
                self.pos = 0;
                self.key.clear();
            }
            let Some(b) = &self.block else {
                return Ok(None);
            };
            if self.pos >= b.entries_end() {
                self.block = None;
                self.block_idx += 1;
                continue;
            }
            let off = self.table.index[self.block_idx].off;
            let (v, next) = b
                .decode_at(self.pos, &mut self.key)
                .map_err(|e| self.table.err(off, e))?;
            self.pos = next;
            if before_lo(&self.key, &self.lo) {
                continue;
            }
            if past_hi(&self.key, &self.hi) {
                return Ok(None);
            }
            return Ok(Some((self.key.clone(), b.value(v))));
        }
    }

    fn load_rev(&mut self, i: usize) -> Result<()> {
        let b = self.table.block(i)?;
        let off = self.table.index[i].off;
        self.rev_entries = b.entries().map_err(|e| self.table.err(off, e))?;
        self.block = Some(b);
        self.block_idx = i;
        Ok(())
    }

    fn start_reverse(&mut self) -> Result<()> {
        let n = self.table.index.len();
        if n == 0 {
            self.done = true;
            return Ok(());
        }
        let i = match &self.hi {
            Bound::Included(k) | Bound::Excluded(k) => self
                .table
                .index
                .partition_point(|e| e.last_key.as_slice() < k.as_slice())
                .min(n - 1),
            Bound::Unbounded => n - 1,
        };
        self.load_rev(i)?;
        let hi = self.hi.clone();
        while self
            .rev_entries
            .last()
            .is_some_and(|(k, _)| past_hi(k, &hi))
        {
            self.rev_entries.pop();
        }
        Ok(())
    }

    fn next_reverse(&mut self) -> Result<Option<Entry>> {
        loop {
            if let Some((k, v)) = self.rev_entries.pop() {
                if before_lo(&k, &self.lo) {
                    self.done = true;
                    return Ok(None);
                }
                let Some(b) = &self.block else {
                    return Ok(None);
                };
                return Ok(Some((k, b.value(v))));
            }
            if self.block_idx == 0 {
                return Ok(None);
            }
            self.load_rev(self.block_idx - 1)?;
        }
    }
}

impl Source for TableIter {
    fn next_entry(&mut self) -> Result<Option<Entry>> {
        if self.done {
            return Ok(None);
        }
        if !self.started {
            self.started = true;
            if self.reverse {
                self.start_reverse()?;
            } else {
                self.start_forward()?;
            }
        }
        let r = if self.reverse {
            self.next_reverse()
        } else {
            self.next_forward()
        };
        match r {
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
            ok => ok,
        }
    }
}
