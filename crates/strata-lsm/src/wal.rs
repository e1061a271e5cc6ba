//! The write-ahead log: one shared log for all stripes, one record per write batch.
//!
//! File `wal-{number:06}.log` = a magic + records framed by [`crate::record`]. The payload of
//! a record is one batch: `seq u64 LE | count varint | op*`, where an op is `0x01 key value`
//! (put) or `0x00 key` (delete), each byte string varint-length-prefixed. Every op of a batch
//! carries the batch's sequence number; a later op on the same key wins.
//!
//! Three versions are read; version 3 is written:
//! - **v1** (`STRWAL01`, framing v1): records appended; the file ends after the last one.
//! - **v2** (`STRWAL02`, framing v2: each record ends in a commit byte): the file is
//!   pre-written with zeros in [`PREALLOC`] chunks and records are written in place, so that
//!   a synced write changes no file size (on ext4 an `fdatasync` that must also make a new
//!   size durable commits the journal; one that only writes data does not). Zeros after the
//!   last record are that preallocated space, a clean end.
//! - **v3** (`STRWAL03`): v2 whose payload starts with a watermark, `synced u64 LE`: the
//!   offset through which the file was durable (the end of the records covered by the last
//!   completed sync) when the record was framed. After an OS crash the page cache may have
//!   written back a later page of the unsynced tail but not an earlier one; the watermark
//!   tells such an **unsynced hole** (no later record claims it was synced: the end of the
//!   recoverable prefix) from damage to synced bytes (corruption). See [`unsynced_hole`] and
//!   `docs/format/lsm.md`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::coding::{crc, get_bytes, get_varint, put_varint, u32_at, u64_at};
use crate::engine::{Op, WriteBatch};
use crate::error::{Error, FormatError, Result};
use crate::fs::{FileSyncer, Fs, WritableFile};
use crate::record::{self, Framing, LogEnd};

/// Magic of a WAL of version 1 (read, no longer written).
pub const WAL_MAGIC: &[u8; 8] = b"STRWAL01";
/// Magic of a WAL of version 2 (read, no longer written).
pub const WAL_MAGIC_V2: &[u8; 8] = b"STRWAL02";
/// Magic of a WAL of version 3 (written now).
pub const WAL_MAGIC_V3: &[u8; 8] = b"STRWAL03";
/// Bytes of the watermark that starts a v3 record's payload.
pub const WATERMARK: usize = 8;
/// Bytes of the magic (the same for every version).
pub const MAGIC_LEN: usize = 8;
/// A WAL of version 2 is pre-written with zeros up to the next multiple of its chunk size,
/// at most this (see [`prealloc_for`]).
pub const PREALLOC: u64 = 1 << 20;

/// The smallest preallocation chunk.
pub const MIN_PREALLOC: u64 = 4096;

/// The preallocation chunk for an engine whose memtables freeze at half of
/// `memtable_budget_bytes`: about what one memtable's WAL holds, between [`MIN_PREALLOC`] and
/// [`PREALLOC`]. A small memtable (tests, fuzzing) then does not write 1 MiB of zeros per WAL.
pub fn prealloc_for(memtable_budget_bytes: usize) -> u64 {
    ((memtable_budget_bytes / 2) as u64)
        .next_multiple_of(MIN_PREALLOC)
        .clamp(MIN_PREALLOC, PREALLOC)
}

/// The version of a WAL (1, 2 or 3) from its first bytes: `None` when they are not a known
/// magic.
pub fn version_of(data: &[u8]) -> Option<u8> {
    match data.get(..MAGIC_LEN)? {
        m if m == WAL_MAGIC => Some(1),
        m if m == WAL_MAGIC_V2 => Some(2),
        m if m == WAL_MAGIC_V3 => Some(3),
        _ => None,
    }
}

/// The framing of a WAL from its first bytes (v1 for version 1, v2 for versions 2 and 3):
/// `None` when they are not a known magic.
pub fn framing_of(data: &[u8]) -> Option<Framing> {
    match version_of(data)? {
        1 => Some(Framing::V1),
        _ => Some(Framing::V2),
    }
}

/// The watermark of a v3 record's payload (`None` when it is too short to hold one).
pub fn watermark_of(payload: &[u8]) -> Option<u64> {
    u64_at(payload, 0)
}

/// Decodes the payload of a record of a WAL of `version` into `(seq, ops)`: a v3 payload is
/// the watermark followed by a batch ([`decode_batch`]), earlier ones a batch. Errors give
/// the offset within the payload.
pub fn decode_record(
    payload: &[u8],
    version: u8,
) -> std::result::Result<(u64, Vec<Op>), FormatError> {
    if version < 3 {
        return decode_batch(payload);
    }
    let batch = payload
        .get(WATERMARK..)
        .ok_or_else(|| FormatError::new(0, "record shorter than its watermark"))?;
    decode_batch(batch).map_err(|mut e| {
        e.offset += WATERMARK as u64;
        e
    })
}

/// True when `data` is a prefix of a magic, or only zeros (of any length): what a crash while
/// the file was created can leave (a file system may make a new size durable before the
/// bytes). Such a file never held an acknowledged record.
pub fn is_unwritten(data: &[u8]) -> bool {
    data.len() < MAGIC_LEN
        && [WAL_MAGIC, WAL_MAGIC_V2, WAL_MAGIC_V3]
            .iter()
            .any(|m| data.iter().zip(m.iter()).all(|(a, b)| a == b))
        || data.iter().all(|&b| b == 0)
}

/// False when a WAL file certainly holds no record: no more than its magic, or a version 2
/// or 3 magic followed by zeros only (a WAL created and never written).
pub fn may_hold_records(data: &[u8]) -> bool {
    if data.len() <= MAGIC_LEN {
        return false;
    }
    !(framing_of(data) == Some(Framing::V2) && data[MAGIC_LEN..].iter().all(|&b| b == 0))
}

/// The smallest unit a lost write-back loses: a disk sector. A page the OS did not write back
/// (4 KiB or more) is whole sectors of it.
pub const SECTOR: usize = 512;

/// True when `data` is zero from `q` to the next multiple of [`SECTOR`] (or its end): what a
/// sector holding `q` that never reached the disk reads as, once `q` is past what was synced.
fn zero_to_sector_end(data: &[u8], q: usize) -> bool {
    let end = (q / SECTOR + 1) * SECTOR;
    data.get(q..end.min(data.len()))
        .is_some_and(|z| z.iter().all(|&b| b == 0))
}

/// True when the record at `pos` of a WAL of framing v2 reads as a write whose sector never
/// reached the disk (a **lost write**): a header that fails its checksum where the sector
/// holding its start is zero from there on, or a later sector starting inside it is zero; or
/// an intact header whose commit byte is zero, with zeros from there to its sector's end. A
/// bit flip makes none of these (it leaves the header's checksum bytes and the rest of its
/// sector as they were, and cannot turn the commit byte `0xC5` into zero); a complete record
/// (commit byte present) with a bad checksum, or a wrong commit byte, is never a lost write.
fn lost_write_at(data: &[u8], pos: usize) -> bool {
    let (Some(len), Some(hc)) = (u32_at(data, pos), u32_at(data, pos + 8)) else {
        return false;
    };
    if crc(&data[pos..pos + 8]) != hc {
        let next = (pos / SECTOR + 1) * SECTOR;
        return zero_to_sector_end(data, pos)
            || (next < pos + record::HEADER && zero_to_sector_end(data, next));
    }
    let commit = pos + record::HEADER + len as usize;
    len as usize <= record::MAX_PAYLOAD
        && data.get(commit) == Some(&0)
        && zero_to_sector_end(data, commit)
}

/// When the damage at `offset` of a v3 WAL (`data`, the whole file) is an **unsynced hole**,
/// why: a lost write (`lost_write_at`) that no valid record after it claims was synced
/// (every later watermark is at most `offset`). Then nothing from `offset` on was ever covered
/// by a completed sync, and the replay ends there like at a torn tail. `None`: corruption.
pub fn unsynced_hole(data: &[u8], offset: u64) -> Option<String> {
    let at = usize::try_from(offset).ok()?;
    if version_of(data) != Some(3) || at >= data.len() || !lost_write_at(data, at) {
        return None;
    }
    let later = record::scan_log_framed(data, at, Framing::V2);
    let claimed = later
        .records
        .iter()
        .filter(|(o, _)| *o > offset)
        .filter_map(|(_, p)| watermark_of(p))
        .max();
    match claimed {
        Some(synced) if synced > offset => None,
        _ => Some(format!(
            "unsynced hole: a write lost in an OS crash, {} intact record(s) after it, none synced (the end of the recoverable prefix)",
            later.records.iter().filter(|(o, _)| *o > offset).count()
        )),
    }
}

pub use crate::filename::{parse_wal_name, wal_name};

/// Encodes a batch as a WAL payload.
pub fn encode_batch(out: &mut Vec<u8>, seq: u64, ops: &[Op]) {
    out.extend_from_slice(&seq.to_le_bytes());
    put_varint(out, ops.len() as u64);
    for op in ops {
        let (k, v) = op.as_kv();
        put_op(out, k, v);
    }
}

/// Appends one op as a WAL record holds it (`0x01 key value` for a put, `0x00 key` for a
/// delete, each byte string varint-length-prefixed); returns where the key and the value (for
/// a put) start in `out`. The one encoder of an op: [`encode_batch`] and
/// [`WriteBatch`]'s buffer both write through it.
#[inline]
pub(crate) fn put_op(
    out: &mut Vec<u8>,
    key: &[u8],
    value: Option<&[u8]>,
) -> (usize, Option<usize>) {
    out.push(u8::from(value.is_some()));
    put_varint(out, key.len() as u64);
    let k = out.len();
    out.extend_from_slice(key);
    let v = value.map(|v| {
        put_varint(out, v.len() as u64);
        let at = out.len();
        out.extend_from_slice(v);
        at
    });
    (k, v)
}

/// Decodes a WAL payload into `(seq, ops)`; the error says what is wrong and at which byte
/// of the payload.
pub fn decode_batch(p: &[u8]) -> std::result::Result<(u64, Vec<Op>), FormatError> {
    let seq = u64_at(p, 0)
        .ok_or_else(|| FormatError::new(0, "batch shorter than its sequence number"))?;
    let mut pos = 8;
    let count = get_varint(p, &mut pos).ok_or_else(|| FormatError::new(pos, "bad op count"))?;
    // Each op takes at least 2 bytes: a count beyond that is a lie, not an allocation size.
    if count > (p.len() as u64) / 2 + 1 {
        return Err(FormatError::new(
            8,
            format!("op count {count} exceeds the record size"),
        ));
    }
    let mut ops = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let at = pos;
        let tag = *p
            .get(pos)
            .ok_or_else(|| FormatError::new(pos, "truncated op"))?;
        pos += 1;
        let key = get_bytes(p, &mut pos)
            .ok_or_else(|| FormatError::new(at, "truncated key"))?
            .to_vec();
        match tag {
            1 => {
                let v = get_bytes(p, &mut pos)
                    .ok_or_else(|| FormatError::new(at, "truncated value"))?
                    .to_vec();
                ops.push(Op::Put(key, v));
            }
            0 => ops.push(Op::Delete(key)),
            t => return Err(FormatError::new(at, format!("unknown op tag {t}"))),
        }
    }
    if pos != p.len() {
        return Err(FormatError::new(pos, "trailing bytes after the last op"));
    }
    Ok((seq, ops))
}

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

/// Writes batches into one WAL file (version 3).
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
        file.append(WAL_MAGIC_V3).map_err(Error::io(&path))?;
        let magic = WAL_MAGIC_V3.len() as u64;
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
        let r = self.write_record(batch.frame_wal_record(seq, synced));
        batch.unframe_wal_record();
        r
    }

    /// Writes one framed record after the last one (see [`WalWriter::append`]).
    fn write_record(&mut self, rec: &[u8]) -> std::io::Result<()> {
        let end = self.bytes + rec.len() as u64;
        if end > self.allocated && rec.len() < BIG_RECORD {
            self.extend_past(end)?;
        }
        self.file.write_at(self.bytes, rec)?;
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
    fn reserved(&self) -> u64 {
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

/// The batches recovered from one WAL file.
pub struct Recovered {
    /// `(seq, ops)` in log order.
    pub batches: Vec<(u64, Vec<Op>)>,
    /// Where a torn tail started, if the log had one.
    pub torn_at: Option<u64>,
}

/// Reads a WAL file of either version. A torn tail (an incomplete last record, see
/// [`crate::record`]) is
/// accepted only when `last` (the newest log); any other damage — a complete record failing
/// its checksum or not decoding — is [`Error::Corruption`] with the file and offset.
pub fn read_wal(data: &[u8], path: &Path, last: bool) -> Result<Recovered> {
    if data.len() < MAGIC_LEN || is_unwritten(data) {
        // A crash while the file was created: a prefix of the magic, or zeros.
        if last && is_unwritten(data) {
            return Ok(Recovered {
                batches: Vec::new(),
                torn_at: Some(0),
            });
        }
        return Err(Error::corruption(path, 0, "WAL shorter than its magic"));
    }
    let (Some(version), Some(framing)) = (version_of(data), framing_of(data)) else {
        return Err(Error::corruption(path, 0, "bad WAL magic"));
    };
    let contents = record::read_log_framed(data, MAGIC_LEN, framing);
    let mut batches = Vec::with_capacity(contents.records.len());
    for (off, payload) in contents.records {
        let b = decode_record(payload, version)
            .map_err(|e| e.in_file(path, off + record::HEADER as u64))?;
        batches.push(b);
    }
    let end = match contents.end {
        LogEnd::Corrupt { offset, reason } => match unsynced_hole(data, offset) {
            Some(hole) => LogEnd::TornTail {
                offset,
                reason: format!("{hole} ({reason})"),
            },
            None => LogEnd::Corrupt { offset, reason },
        },
        end => end,
    };
    let torn_at = match end {
        LogEnd::Clean => None,
        LogEnd::TornTail { offset, reason } => {
            if !last {
                return Err(Error::corruption(
                    path,
                    offset,
                    format!("{reason} in a WAL that is not the newest"),
                ));
            }
            Some(offset)
        }
        LogEnd::Corrupt { offset, reason } => return Err(Error::corruption(path, offset, reason)),
    };
    Ok(Recovered { batches, torn_at })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn writer_preallocates_for_small_records_and_appends_big_ones() {
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::fs::RealFs;
        let mut w = WalWriter::create(&fs, dir.path(), 7).unwrap();
        let path = dir.path().join(wal_name(7));
        let len = || std::fs::metadata(&path).unwrap().len();
        assert_eq!(len(), PREALLOC);
        let small = |i: u64| vec![Op::Put(i.to_be_bytes().to_vec(), vec![7; 100])];
        let big = vec![Op::Put(b"big".to_vec(), vec![9; 3 * PREALLOC as usize / 2])];
        let mut want = Vec::new();
        let mut seq = 0;
        let mut push = |w: &mut WalWriter, ops: Vec<Op>| {
            seq += 1;
            w.append(seq, &ops.iter().cloned().collect()).unwrap();
            want.push((seq, ops));
        };
        for i in 0..10_000 {
            push(&mut w, small(i)); // crosses the first MiB: extended with zeros
        }
        assert_eq!(len(), 2 * PREALLOC);
        push(&mut w, big.clone()); // past the end, no zeros after it
        assert_eq!(len(), w.bytes());
        push(&mut w, small(1)); // extended again
        assert_eq!(len(), w.bytes().div_ceil(PREALLOC) * PREALLOC);
        w.sync().unwrap();
        let data = std::fs::read(&path).unwrap();
        assert_eq!(&data[..8], WAL_MAGIC_V3);
        let r = read_wal(&data, &path, false).unwrap();
        assert_eq!(r.torn_at, None);
        assert_eq!(r.batches, want);
        // The file may also end right after its last record.
        let r = read_wal(&data[..w.bytes() as usize], &path, false).unwrap();
        assert_eq!(r.batches.len(), want.len());
    }

    #[test]
    fn reserve_tail_leaves_zeros_after_big_records() {
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::fs::RealFs;
        let mut w = WalWriter::create(&fs, dir.path(), 5).unwrap();
        let path = dir.path().join(wal_name(5));
        let len = || std::fs::metadata(&path).unwrap().len();
        // Preallocated space left: nothing to do.
        assert!(!w.reserve_tail().unwrap());
        assert_eq!(len(), PREALLOC);
        let big = |b: u8| vec![Op::Put(vec![b], vec![b; 3 * PREALLOC as usize / 2])];
        let mut want = Vec::new();
        for seq in 1..=2u64 {
            let ops = big(seq as u8);
            w.append(seq, &ops.iter().cloned().collect()).unwrap();
            want.push((seq, ops));
        }
        assert_eq!(w.reserved(), 0);
        assert_eq!(len(), w.bytes());
        assert!(w.reserve_tail().unwrap());
        assert!(w.reserved() >= TAIL_RESERVE);
        assert_eq!(len() % PREALLOC, 0);
        let reserved = len();
        assert!(!w.reserve_tail().unwrap());
        // Small records now land in the zeros: the size does not change.
        for seq in 3..100u64 {
            let ops = vec![Op::Put(seq.to_be_bytes().to_vec(), vec![1; 100])];
            w.append(seq, &ops.iter().cloned().collect()).unwrap();
            want.push((seq, ops));
            assert_eq!(len(), reserved);
        }
        w.sync().unwrap();
        let r = read_wal(&std::fs::read(&path).unwrap(), &path, true).unwrap();
        assert_eq!(r.torn_at, None);
        assert_eq!(r.batches, want);
        // With little room left (less than the reserve), it extends to the next chunk.
        let mut w = WalWriter::create_with(&fs, dir.path(), 6, MIN_PREALLOC).unwrap();
        let path = dir.path().join(wal_name(6));
        w.append(
            1,
            &[Op::Put(b"k".to_vec(), vec![2; 100])].into_iter().collect(),
        )
        .unwrap();
        assert!(w.reserve_tail().unwrap());
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len % MIN_PREALLOC, 0);
        assert!(len - w.bytes() >= TAIL_RESERVE);
    }

    #[test]
    fn small_memtables_preallocate_small_chunks() {
        assert_eq!(prealloc_for(0), MIN_PREALLOC);
        assert_eq!(prealloc_for(2048), MIN_PREALLOC);
        assert_eq!(prealloc_for(3 * 4096), 2 * 4096);
        assert_eq!(prealloc_for(64 << 20), PREALLOC);
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::fs::RealFs;
        let mut w = WalWriter::create_with(&fs, dir.path(), 3, prealloc_for(2048)).unwrap();
        let path = dir.path().join(wal_name(3));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), MIN_PREALLOC);
        let ops: Vec<_> = (0..100u64)
            .map(|i| vec![Op::Put(i.to_be_bytes().to_vec(), vec![1; 100])])
            .collect();
        for (i, o) in ops.iter().enumerate() {
            w.append(i as u64 + 1, &o.iter().cloned().collect())
                .unwrap();
        }
        w.sync().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len, w.bytes().div_ceil(MIN_PREALLOC) * MIN_PREALLOC);
        let r = read_wal(&std::fs::read(&path).unwrap(), &path, true).unwrap();
        assert_eq!(r.batches.len(), 100);
        assert_eq!(r.torn_at, None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// A batch framed in its own buffer (the write path's way) is byte for byte the
        /// record `encode_batch` + framing v2 give, its count varint one to three bytes long,
        /// in a fresh or recycled buffer; writing it leaves the batch as it was (framed again,
        /// the same record), and a WAL written with `append_in_place` is the file `append`
        /// writes.
        #[test]
        fn in_place_record_is_the_encoded_record(
            seq in any::<u64>(),
            ops in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 0..4),
                 proptest::option::of(proptest::collection::vec(any::<u8>(), 0..200))), 0..300),
            big in proptest::bool::weighted(0.1),
            recycled in any::<bool>(),
            synced in any::<u64>(),
        ) {
            let mut ops: Vec<Op> = ops.into_iter().map(|(k, v)| match v { Some(v) => Op::Put(k, v), None => Op::Delete(k) }).collect();
            // Repeated to 17,000 ops: a three-byte count.
            let n = ops.len();
            if big && n > 0 {
                ops = (0..17_000).map(|i| ops[i % n].clone()).collect();
            }
            if recycled {
                let mut a = WriteBatch::new();
                a.put([1u8; 40], [2u8; 300]).delete(b"x");
                crate::batch::recycle(a);
            }
            let mut batch: WriteBatch = ops.iter().cloned().collect();
            let before = batch.clone();
            let mut payload = synced.to_le_bytes().to_vec();
            encode_batch(&mut payload, seq, &ops);
            let mut want = Vec::new();
            Framing::V2.frame(&mut want, &payload);
            prop_assert_eq!(batch.frame_wal_record(seq, synced), &want[..]);
            batch.unframe_wal_record();
            prop_assert_eq!(batch.encoded_ops(), before.encoded_ops());
            prop_assert_eq!(batch.iter().collect::<Vec<_>>(), before.iter().collect::<Vec<_>>());
            prop_assert_eq!(batch.frame_wal_record(seq, synced), &want[..]);
            batch.unframe_wal_record();
            prop_assert_eq!(&batch, &before);
            // Whole files: the copying append and the in-place one, twice each.
            let dir = tempfile::tempdir().unwrap();
            let mut a = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 1, MIN_PREALLOC).unwrap();
            let mut b = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 2, MIN_PREALLOC).unwrap();
            for s in [seq, seq.wrapping_add(1)] {
                a.append(s, &before).unwrap();
                b.append_in_place(s, &mut batch).unwrap();
                // The second record's watermark: the end of the first.
                a.sync().unwrap();
                b.syncer().sync().unwrap();
            }
            prop_assert_eq!(a.bytes(), b.bytes());
            let read = |n| std::fs::read(dir.path().join(wal_name(n))).unwrap();
            prop_assert!(read(1) == read(2), "the two WAL files differ");
            prop_assert_eq!(&batch, &before);
        }
    }

    /// A WAL of `version` (2 or 3) written by hand: `n` one-put records, the watermark of
    /// record `i` being `marks(i, offsets so far)`; then `pad` zeros. Returns the file and the
    /// records' `(offset, length)`.
    fn hand_wal(
        version: u8,
        n: usize,
        value: usize,
        pad: usize,
        marks: impl Fn(usize, &[(usize, usize)]) -> u64,
    ) -> (Vec<u8>, Vec<(usize, usize)>) {
        let mut v = if version == 3 {
            WAL_MAGIC_V3
        } else {
            WAL_MAGIC_V2
        }
        .to_vec();
        let mut at: Vec<(usize, usize)> = Vec::new();
        for i in 0..n {
            let mut payload = Vec::new();
            if version == 3 {
                payload.extend_from_slice(&marks(i, &at).to_le_bytes());
            }
            let op = Op::Put(format!("key{i:04}").into_bytes(), vec![i as u8; value]);
            encode_batch(&mut payload, i as u64 + 1, &[op]);
            let start = v.len();
            Framing::V2.frame(&mut v, &payload);
            at.push((start, v.len() - start));
        }
        v.resize(v.len() + pad, 0);
        (v, at)
    }

    /// The ways a sector lost in an OS crash leaves record `r`: zero from its start to the end
    /// of that sector; zero from its start to the end of the sector of its last byte; its
    /// commit byte's sector lost from there (the rest of the record written).
    fn lose(data: &mut [u8], (off, len): (usize, usize), how: usize) {
        let sector_end = |q: usize| ((q / SECTOR + 1) * SECTOR).min(data.len());
        let (from, to) = match how {
            0 => (off, sector_end(off)),
            1 => (off, sector_end(off + len - 1)),
            _ => (off + len - 1, sector_end(off + len - 1)),
        };
        data[from..to].fill(0);
    }

    #[test]
    fn v3_a_lost_unsynced_write_followed_by_records_ends_the_prefix() {
        // Records 0..5 synced (the later ones claim the end of record 4), 5..12 not.
        let (l, at) = hand_wal(3, 12, 200, 300, |i, at| {
            if i <= 5 {
                MAGIC_LEN as u64
            } else {
                (at[4].0 + at[4].1) as u64
            }
        });
        let p = Path::new("w.log");
        assert_eq!(read_wal(&l, p, true).unwrap().batches.len(), 12);
        for r in 0..11 {
            for how in 0..3 {
                let mut m = l.clone();
                lose(&mut m, at[r], how);
                let got = read_wal(&m, p, true);
                if r >= 5 {
                    // Unsynced: the prefix before it, the hole a torn tail.
                    let got = got.unwrap_or_else(|e| panic!("record {r} how {how}: {e}"));
                    assert_eq!(got.batches.len(), r, "record {r} how {how}");
                    // (Zeros to the end of the file are the clean end of any v2/v3 WAL.)
                    let clean = m[at[r].0..].iter().all(|&b| b == 0);
                    let want = (!clean).then_some(at[r].0 as u64);
                    assert_eq!(got.torn_at, want, "record {r} how {how}");
                    // Not in a WAL that is not the newest.
                    assert_eq!(
                        read_wal(&m, p, false).is_err(),
                        !clean,
                        "record {r} how {how}"
                    );
                } else {
                    // Synced (a later record says so): corruption.
                    let e = got
                        .err()
                        .unwrap_or_else(|| panic!("record {r} how {how} read"));
                    assert!(
                        matches!(e, Error::Corruption { offset, .. } if offset == at[r].0 as u64),
                        "{e}"
                    );
                }
            }
            // A complete record whose checksum fails stays corruption, synced or not.
            let mut m = l.clone();
            m[at[r].0 + record::HEADER + 3] ^= 0x10;
            assert!(read_wal(&m, p, true).is_err(), "record {r} flip");
        }
        // Several unsynced sectors lost: the prefix up to the first.
        let mut m = l.clone();
        lose(&mut m, at[7], 0);
        lose(&mut m, at[10], 2);
        let got = read_wal(&m, p, true).unwrap();
        assert_eq!((got.batches.len(), got.torn_at), (7, Some(at[7].0 as u64)));
        // Zeros in the middle of a sector are no lost write: corruption.
        let mut m = l.clone();
        m[at[8].0..at[8].0 + 5].fill(0);
        assert!(read_wal(&m, p, true).is_err());
    }

    #[test]
    fn v3_every_bit_flip_in_the_last_record_is_corruption() {
        // Nothing after it claims it was synced; still no flip reads as a lost write.
        let (l, at) = hand_wal(3, 4, 300, 700, |_, _| MAGIC_LEN as u64);
        let (off, len) = at[3];
        for byte in off..off + len {
            for bit in 0..8 {
                let mut m = l.clone();
                m[byte] ^= 1 << bit;
                let r = read_wal(&m, Path::new("w"), true);
                assert!(r.is_err(), "flip at {byte}.{bit} read");
            }
        }
    }

    #[test]
    fn v3_hole_rules_need_the_watermark() {
        // The same hole in a v2 WAL is corruption (v2 rules kept).
        let (l, at) = hand_wal(2, 6, 200, 100, |_, _| 0);
        let mut m = l.clone();
        lose(&mut m, at[2], 0);
        assert!(read_wal(&l, Path::new("w"), true).is_ok());
        assert!(read_wal(&m, Path::new("w"), true).is_err());
        // A record that claims the hole was synced makes it corruption, even after damage.
        let (l, at) = hand_wal(3, 6, 200, 100, |i, at| match i {
            5 => (at[2].0 + 1) as u64,
            _ => MAGIC_LEN as u64,
        });
        let mut m = l.clone();
        lose(&mut m, at[2], 0);
        lose(&mut m, at[4], 0);
        assert!(read_wal(&m, Path::new("w"), true).is_err());
        // Exactly at the watermark: unsynced (the watermark is an end, exclusive).
        let (l, at) = hand_wal(3, 6, 200, 100, |i, at| match i {
            5 => at[2].0 as u64,
            _ => MAGIC_LEN as u64,
        });
        let mut m = l.clone();
        lose(&mut m, at[2], 0);
        assert_eq!(read_wal(&m, Path::new("w"), true).unwrap().batches.len(), 2);
    }

    #[test]
    fn writer_records_the_synced_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let mut w =
            WalWriter::create_with(&crate::fs::RealFs, dir.path(), 1, MIN_PREALLOC).unwrap();
        let syncer = w.syncer();
        let b: WriteBatch = [Op::Put(b"k".to_vec(), b"v".to_vec())]
            .into_iter()
            .collect();
        let mut ends = Vec::new();
        for seq in 1..=6u64 {
            let mut batch = b.clone();
            if seq % 2 == 0 {
                w.append(seq, &b).unwrap();
            } else {
                w.append_in_place(seq, &mut batch).unwrap();
            }
            ends.push(w.bytes());
            match seq {
                2 => w.sync().unwrap(),
                4 => syncer.sync().unwrap(),
                _ => {}
            }
        }
        let data = std::fs::read(dir.path().join(wal_name(1))).unwrap();
        let marks: Vec<u64> = record::read_log_framed(&data, MAGIC_LEN, Framing::V2)
            .records
            .iter()
            .map(|(_, p)| watermark_of(p).unwrap())
            .collect();
        let m = MAGIC_LEN as u64;
        assert_eq!(marks, vec![m, m, ends[1], ends[1], ends[3], ends[3]]);
    }

    proptest! {
        #[test]
        fn batch_roundtrip(seq in any::<u64>(), ops in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..5), proptest::option::of(proptest::collection::vec(any::<u8>(), 0..5))), 0..6)) {
            let ops: Vec<Op> = ops.into_iter().map(|(k, v)| match v { Some(v) => Op::Put(k, v), None => Op::Delete(k) }).collect();
            let mut b = Vec::new();
            encode_batch(&mut b, seq, &ops);
            prop_assert_eq!(decode_batch(&b).unwrap(), (seq, ops.clone()));
            // A WriteBatch appended by the writer reads back as the same ops.
            let dir = tempfile::tempdir().unwrap();
            let mut w = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 1, MIN_PREALLOC).unwrap();
            let batch: WriteBatch = ops.iter().cloned().collect();
            w.append(seq, &batch).unwrap();
            let path = dir.path().join(wal_name(1));
            let r = read_wal(&std::fs::read(&path).unwrap(), &path, true).unwrap();
            prop_assert_eq!(r.batches, vec![(seq, ops)]);
        }

        #[test]
        fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = decode_batch(&b);
            let _ = read_wal(&b, Path::new("x"), true);
        }
    }
}
