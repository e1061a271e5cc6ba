//! Writing a WAL: [`WalWriter`].

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::fragment::{self, page_end, MIN_FRAGMENT};
use super::{wal_name, MIN_PREALLOC, PREALLOC, WAL_MAGIC_V4};
use crate::coding::put_varint;
use crate::engine::WriteBatch;
use crate::error::{Error, Result};
use crate::fs::{FileSyncer, Fs, WritableFile};
use crate::record::{self, Framing};

/// What a WAL's writer and its syncers share: how far the records were written, and how far
/// a completed sync made them durable (the watermark written into each record).
#[derive(Debug)]
struct Marks {
    /// End of the records written (stored after each write).
    written: AtomicU64,
    /// End of the records covered by the last completed sync (raised after each sync).
    synced: AtomicU64,
}

impl Marks {
    /// Runs `sync`, then raises the synced mark to what was written before it began (a sync
    /// covers every write completed before the call; a write racing with it is not claimed).
    fn sync_with(&self, sync: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
        let written = self.written.load(Ordering::Acquire);
        sync()?;
        self.synced.fetch_max(written, Ordering::AcqRel);
        Ok(())
    }
}

/// The syncer handed out by [`WalWriter::syncer`]: the file's, raising the watermark.
struct MarkingSyncer {
    inner: Arc<dyn FileSyncer>,
    marks: Arc<Marks>,
}

impl FileSyncer for MarkingSyncer {
    fn sync(&self) -> std::io::Result<()> {
        self.marks.sync_with(|| self.inner.sync())
    }
}

/// Writes batches into one WAL file (version 4).
pub struct WalWriter {
    file: Box<dyn WritableFile>,
    syncer: Arc<dyn FileSyncer>,
    marks: Arc<Marks>,
    number: u64,
    /// End of the last record: where the next one is written.
    bytes: u64,
    /// Length of the file: zeros from `bytes` to here.
    allocated: u64,
    /// The file is extended with zeros to multiples of this.
    chunk: u64,
    /// The record being written: header, payload, commit byte.
    framed: Vec<u8>,
    /// A record cut into fragments (v4), when it does not fit the rest of its page.
    fragments: Vec<u8>,
}

/// Records of this size or more are written past the end of a full WAL without extending it
/// with zeros first (see [`WalWriter::append`]).
pub const BIG_RECORD: usize = 64 * 1024;

/// Zeros that [`WalWriter::reserve_tail`] leaves after the last record, at least: room for
/// a few hundred small synced writes.
pub const TAIL_RESERVE: u64 = 64 * 1024;

/// Zeros written per call when the WAL is extended.
static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

impl WalWriter {
    /// Creates WAL file `number` in `dir`, pre-written with zeros up to [`PREALLOC`], and makes
    /// it and its directory entry durable.
    pub fn create(fs: &dyn Fs, dir: &Path, number: u64) -> Result<WalWriter> {
        WalWriter::create_with(fs, dir, number, PREALLOC)
    }

    /// [`WalWriter::create`] with zeros pre-written in chunks of `chunk` bytes (at least
    /// [`MIN_PREALLOC`]) instead of [`PREALLOC`].
    pub fn create_with(fs: &dyn Fs, dir: &Path, number: u64, chunk: u64) -> Result<WalWriter> {
        let chunk = chunk.max(MIN_PREALLOC);
        let path = dir.join(wal_name(number));
        let mut file = fs.create(&path).map_err(Error::io(&path))?;
        file.append(WAL_MAGIC_V4).map_err(Error::io(&path))?;
        let magic = WAL_MAGIC_V4.len() as u64;
        extend(file.as_mut(), magic, chunk).map_err(Error::io(&path))?;
        file.sync().map_err(Error::io(&path))?;
        fs.sync_dir(dir).map_err(Error::io(dir))?;
        // Synced through the magic: the records start there.
        let marks = Arc::new(Marks {
            written: AtomicU64::new(magic),
            synced: AtomicU64::new(magic),
        });
        let syncer = Arc::new(MarkingSyncer {
            inner: file.syncer().map_err(Error::io(&path))?,
            marks: Arc::clone(&marks),
        });
        Ok(WalWriter {
            file,
            syncer,
            marks,
            number,
            bytes: magic,
            allocated: chunk,
            chunk,
            framed: Vec::new(),
            fragments: Vec::new(),
        })
    }

    /// Writes one batch (to the OS buffers) after the last record. When a record smaller
    /// than [`BIG_RECORD`] does not fit the preallocated space, the file is first extended
    /// with zeros to the next multiple of [`PREALLOC`] past it (the sync that follows makes
    /// the new size durable once, and the next syncs find the space written). A bigger record
    /// is written past the end without zeros: the size change is shared by its many ops, and
    /// writing zeros first would only double its copy.
    ///
    /// This copies the batch's ops into a record buffer; the write path uses
    /// [`WalWriter::append_in_place`], which writes the same bytes without the copy.
    pub fn append(&mut self, seq: u64, batch: &WriteBatch) -> std::io::Result<()> {
        // The payload is encoded right after room for the header, then framed in place.
        let mut framed = std::mem::take(&mut self.framed);
        framed.clear();
        framed.resize(record::HEADER, 0);
        framed.extend_from_slice(&self.synced().to_le_bytes());
        framed.extend_from_slice(&seq.to_le_bytes());
        put_varint(&mut framed, batch.op_count() as u64);
        // The batch holds its ops encoded as `encode_batch` encodes them.
        framed.extend_from_slice(batch.encoded_ops());
        record::frame_in_place(Framing::V2, &mut framed);
        let r = self.write_record(&framed);
        self.framed = framed;
        r
    }

    /// [`WalWriter::append`] of a batch framed in its own buffer (see
    /// `WriteBatch::frame_wal_record`): the same record bytes, the ops not copied.
    pub fn append_in_place(&mut self, seq: u64, batch: &mut WriteBatch) -> std::io::Result<()> {
        let synced = self.synced();
        let at = self.record_start();
        let room = page_end(at) - at;
        let r = self.write_record(batch.frame_wal_record_within(seq, synced, room));
        batch.unframe_wal_record();
        r
    }

    /// Writes one framed record (one v4 [`fragment::FULL`] fragment: a v3 record) after the
    /// last one: as it is when it fits the rest of its 4 KiB page, else cut into fragments
    /// ([`fragment::write_fragments`]). Fewer than [`MIN_FRAGMENT`] bytes left in the page are
    /// skipped as padding: zeros already (preallocated, or a hole when written past the end).
    fn write_record(&mut self, rec: &[u8]) -> std::io::Result<()> {
        let at = self.record_start();
        if rec.len() <= page_end(at) - at {
            return self.write_at(at as u64, rec);
        }
        let mut frags = std::mem::take(&mut self.fragments);
        frags.clear();
        fragment::write_fragments(&mut frags, at, &rec[record::HEADER..rec.len() - 1]);
        let r = self.write_at(at as u64, &frags);
        self.fragments = frags;
        r
    }

    /// Where the next record starts: after the last one, or at the next page when fewer than
    /// [`MIN_FRAGMENT`] bytes are left in its page (padding).
    fn record_start(&self) -> usize {
        let at = self.bytes as usize;
        if page_end(at) - at < MIN_FRAGMENT {
            page_end(at)
        } else {
            at
        }
    }

    /// Writes `bytes` at `at` (at or after the end of the last record, past padding), see
    /// [`WalWriter::append`].
    fn write_at(&mut self, at: u64, bytes: &[u8]) -> std::io::Result<()> {
        let end = at + bytes.len() as u64;
        if end > self.allocated && bytes.len() < BIG_RECORD {
            self.extend_past(end)?;
        }
        self.file.write_at(at, bytes)?;
        self.bytes = end;
        self.marks.written.store(end, Ordering::Release);
        self.allocated = self.allocated.max(end);
        Ok(())
    }

    /// The watermark of the next record: the end of the records covered by the last
    /// completed sync.
    fn synced(&self) -> u64 {
        self.marks.synced.load(Ordering::Acquire)
    }

    /// Makes sure at least [`TAIL_RESERVE`] bytes of zeros follow the last record, extending
    /// the file to the next multiple of its chunk past that when they do not; true when it
    /// was extended. Called before an explicit sync of the whole log
    /// ([`crate::LsmEngine::sync_wal`]): after big records (written past the end, see
    /// [`WalWriter::append`]) the file ends at its last record, and the first small synced
    /// write after them would extend it and make the new size and up to a chunk of zeros
    /// durable in its own `fdatasync`. The explicit sync makes them durable instead, and the
    /// small writes that follow are written in place.
    pub fn reserve_tail(&mut self) -> std::io::Result<bool> {
        if self.allocated - self.bytes >= TAIL_RESERVE {
            return Ok(false);
        }
        self.extend_past(self.bytes + TAIL_RESERVE)?;
        Ok(true)
    }

    /// Extends the file with zeros from its allocated end to the first multiple of its chunk
    /// at or past `end`.
    fn extend_past(&mut self, end: u64) -> std::io::Result<()> {
        let to = end.div_ceil(self.chunk) * self.chunk;
        extend(self.file.as_mut(), self.allocated, to)?;
        self.allocated = to;
        Ok(())
    }

    /// Zeros after the last record: where small records are written in place (tests only).
    #[cfg(test)]
    pub(super) fn reserved(&self) -> u64 {
        self.allocated - self.bytes
    }

    /// Syncs what was written.
    pub fn sync(&mut self) -> std::io::Result<()> {
        let file = &mut self.file;
        self.marks.sync_with(|| file.sync())
    }

    /// A handle that syncs this WAL from another thread.
    pub fn syncer(&self) -> Arc<dyn FileSyncer> {
        Arc::clone(&self.syncer)
    }

    /// Number of this WAL file.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes of records written to this file, the magic included (not the zeros after them).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Writes zeros to a file of length `from` until it is `to` bytes long. Positional writes
/// only: after a record written past the end the append position is not the end.
fn extend(file: &mut dyn WritableFile, from: u64, to: u64) -> std::io::Result<()> {
    let mut at = from;
    while at < to {
        let n = ((to - at) as usize).min(ZEROS.len());
        file.write_at(at, &ZEROS[..n])?;
        at += n as u64;
    }
    Ok(())
}
