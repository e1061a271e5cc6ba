//! Writing an SST: [`SstWriter`] collects sorted entries into blocks, then writes the index,
//! the filter and the footer (the layout is in [`super::table`]'s module doc and
//! `docs/format/lsm.md`).

use std::path::{Path, PathBuf};

use super::block::BlockBuilder;
use super::bloom;
use super::format::{BLOOM_BITS_PER_KEY, FOOTER, SST_MAGIC, SST_VERSION};
use crate::coding::{crc, put_varint};
use crate::error::{Error, Result};
use crate::fs::{Fs, WritableFile};

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
    /// Finished blocks not yet handed to the file: written in chunks of about
    /// [`WRITE_CHUNK`] bytes, one system call per chunk instead of one per block.
    pending: Vec<u8>,
}

/// Bytes of finished blocks an [`SstWriter`] collects before it writes them to its file.
pub(crate) const WRITE_CHUNK: usize = 256 << 10;

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
            pending: Vec::new(),
        })
    }

    /// Sets the block size without the lower clamp (tests: one entry per block).
    #[cfg(test)]
    pub(crate) fn set_block_bytes(&mut self, n: usize) {
        self.block_bytes = n;
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::io(&self.path)(source)
    }

    fn write_block(&mut self, data: &[u8]) -> Result<(u64, u32)> {
        let off = self.offset;
        self.pending.extend_from_slice(data);
        self.pending.extend_from_slice(&crc(data).to_le_bytes());
        self.offset += data.len() as u64 + 4;
        if self.pending.len() >= WRITE_CHUNK {
            self.write_pending()?;
        }
        Ok((off, data.len() as u32))
    }

    /// Hands the collected blocks to the file.
    fn write_pending(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            self.file.append(&self.pending).map_err(|e| self.io(e))?;
            self.pending.clear();
        }
        Ok(())
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
        let filter = bloom::build_blocked(&self.hashes, BLOOM_BITS_PER_KEY);
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
        self.pending.extend_from_slice(&f);
        self.write_pending()?;
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
