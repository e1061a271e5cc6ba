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
    /// Finished blocks not yet handed to the file: written one [`WRITE_CHUNK`]-aligned
    /// chunk at a time, one system call per chunk instead of one per block.
    pending: Vec<u8>,
}

/// The file is written in chunks that each fill one aligned `WRITE_CHUNK` (2 MiB) of it with
/// one `write` (the last chunk: whatever is left): where the file system caches files in large
/// folios (ext4 on recent Linux: seen on 6.18), such a write puts that range in one 2 MiB folio
/// of the page cache, which a memory map of the finished file then maps with one huge-page entry
/// (`FilePmdMapped`) — a point read's block no longer costs a TLB miss and page walk of its
/// own. Written in smaller or unaligned pieces, the range is cached in small folios, mapped 4
/// KiB at a time. (2 MiB: `HPAGE_PMD_SIZE` on x86-64 and 4 KiB-page arm64.) Each whole chunk
/// is also handed to the device at once ([`WritableFile::start_writeback`]); a file smaller
/// than one chunk (an L0 flush file) is written in one piece and left to its sync.
pub(crate) const WRITE_CHUNK: usize = 2 << 20;

/// How many of the `len` pending bytes, which start at file offset `start`, to write now: up
/// to the last multiple of [`WRITE_CHUNK`] they reach (0 when they reach none).
fn ready(start: u64, len: usize) -> usize {
    let end = start + len as u64;
    let boundary = end - end % WRITE_CHUNK as u64;
    boundary.saturating_sub(start) as usize
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
        let start = self.offset - self.pending.len() as u64;
        let n = ready(start, self.pending.len());
        if n > 0 {
            self.file
                .append(&self.pending[..n])
                .map_err(|e| self.io(e))?;
            // Each whole chunk goes to the device now, not with the rest of the round's
            // outputs at their sync: the group commit's WAL fsyncs then wait behind a few
            // MiB of this file, not behind a burst of every output's (session 19).
            self.file
                .start_writeback(start, n as u64)
                .map_err(|e| self.io(e))?;
            self.pending.drain(..n);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{FileSyncer, ReadableFile, RealFs};
    use proptest::prelude::*;
    use std::sync::{Arc, Mutex};

    const C: u64 = WRITE_CHUNK as u64;

    proptest! {
        /// `ready` writes exactly up to the last chunk boundary the pending bytes reach.
        #[test]
        fn ready_stops_at_the_last_boundary(start in 0u64..5 * C, len in 0usize..3 * WRITE_CHUNK) {
            let n = ready(start, len) as u64;
            let end = start + len as u64;
            prop_assert!(n <= len as u64);
            if n > 0 {
                prop_assert_eq!((start + n) % C, 0);
            }
            // No boundary is left in the rest (start + n, end].
            prop_assert!((start + n) / C == end / C);
        }
    }

    /// What a [`Recording`] file saw: (offset, length) of every append, and of every range
    /// whose writeback was started.
    #[derive(Default, Clone)]
    struct Log {
        appends: Vec<(u64, usize)>,
        started: Vec<(u64, usize)>,
    }

    /// The real file system, recording the length and offset of every append.
    struct Recording(Arc<Mutex<Log>>);

    struct RecordingFile(Box<dyn WritableFile>, u64, Arc<Mutex<Log>>);

    impl WritableFile for RecordingFile {
        fn append(&mut self, buf: &[u8]) -> std::io::Result<()> {
            self.2.lock().unwrap().appends.push((self.1, buf.len()));
            self.1 += buf.len() as u64;
            self.0.append(buf)
        }
        fn start_writeback(&mut self, off: u64, len: u64) -> std::io::Result<()> {
            assert!(off + len <= self.1, "writeback of bytes not appended yet");
            self.2.lock().unwrap().started.push((off, len as usize));
            self.0.start_writeback(off, len)
        }
        fn write_at(&mut self, off: u64, buf: &[u8]) -> std::io::Result<()> {
            self.0.write_at(off, buf)
        }
        fn sync(&mut self) -> std::io::Result<()> {
            self.0.sync()
        }
        fn syncer(&self) -> std::io::Result<Arc<dyn FileSyncer>> {
            self.0.syncer()
        }
    }

    impl Fs for Recording {
        fn create(&self, path: &Path) -> std::io::Result<Box<dyn WritableFile>> {
            let f = RealFs.create(path)?;
            Ok(Box::new(RecordingFile(f, 0, Arc::clone(&self.0))))
        }
        fn open(&self, path: &Path) -> std::io::Result<Arc<dyn ReadableFile>> {
            RealFs.open(path)
        }
        fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
            RealFs.read(path)
        }
        fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
            RealFs.rename(from, to)
        }
        fn remove(&self, path: &Path) -> std::io::Result<()> {
            RealFs.remove(path)
        }
        fn list(&self, dir: &Path) -> std::io::Result<Vec<String>> {
            RealFs.list(dir)
        }
        fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
            RealFs.sync_dir(dir)
        }
        fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
            RealFs.create_dir_all(dir)
        }
    }

    /// A file of several chunks (blocks of every size up to one larger than a chunk) is
    /// written in appends that each end on a chunk boundary, except the last; together they
    /// are the whole file, in order. Each of those whole-chunk appends has its writeback
    /// started once it is written; the last one (the file's tail) is left to the sync.
    #[test]
    fn appends_end_on_chunk_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(Mutex::new(Log::default()));
        let fs = Recording(Arc::clone(&log));
        let path = dir.path().join("1.sst");
        let mut w = SstWriter::create(&fs, &path, 1, 4096).unwrap();
        let mut i = 0u32;
        while w.estimated_size() < 5 * C {
            // Mostly small entries, now and then one of 100 KiB, once one of 2.5 MiB.
            let len = match i {
                700 => WRITE_CHUNK + WRITE_CHUNK / 4,
                _ if i.is_multiple_of(97) => 100 << 10,
                _ => 10 + (i % 300) as usize,
            };
            w.add(format!("key{i:08}").as_bytes(), Some(&vec![i as u8; len]))
                .unwrap();
            i += 1;
        }
        let meta = w.finish().unwrap();
        let Log { appends, started } = log.lock().unwrap().clone();
        assert_eq!(
            started,
            appends[..appends.len() - 1],
            "writeback per chunk append"
        );
        let log = appends;
        assert!(log.len() >= 5, "{log:?}");
        let mut at = 0;
        for (k, &(off, len)) in log.iter().enumerate() {
            assert_eq!(off, at, "appends are contiguous");
            at += len as u64;
            if k + 1 < log.len() {
                assert_eq!(at % C, 0, "append {k} ends on a chunk boundary: {log:?}");
            }
        }
        assert_eq!(at, meta.size);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), meta.size);
    }

    /// A file smaller than a chunk (an L0 flush file) is written in one append and none of
    /// its writeback is started early.
    #[test]
    fn a_small_file_is_one_append_without_early_writeback() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(Mutex::new(Log::default()));
        let fs = Recording(Arc::clone(&log));
        let path = dir.path().join("2.sst");
        let mut w = SstWriter::create(&fs, &path, 2, 4096).unwrap();
        for i in 0..5000u32 {
            w.add(format!("key{i:08}").as_bytes(), Some(b"some value"))
                .unwrap();
        }
        let meta = w.finish().unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(log.appends, [(0, meta.size as usize)]);
        assert!(log.started.is_empty(), "{:?}", log.started);
    }
}
