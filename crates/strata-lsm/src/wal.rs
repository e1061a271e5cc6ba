//! The write-ahead log: one shared log for all stripes, one record per write batch.
//!
//! File `wal-{number:06}.log` = a magic + records framed by [`crate::record`]. The payload of
//! a record is one batch: `seq u64 LE | count varint | op*`, where an op is `0x01 key value`
//! (put) or `0x00 key` (delete), each byte string varint-length-prefixed. Every op of a batch
//! carries the batch's sequence number; a later op on the same key wins.
//!
//! Two versions are read; version 2 is written:
//! - **v1** (`STRWAL01`, framing v1): records appended; the file ends after the last one.
//! - **v2** (`STRWAL02`, framing v2: each record ends in a commit byte): the file is
//!   pre-written with zeros in [`PREALLOC`] chunks and records are written in place, so that
//!   a synced write changes no file size (on ext4 an `fdatasync` that must also make a new
//!   size durable commits the journal; one that only writes data does not). Zeros after the
//!   last record are that preallocated space, a clean end.

use std::path::Path;
use std::sync::Arc;

use crate::coding::{get_bytes, get_varint, put_varint, u64_at};
use crate::engine::{Op, WriteBatch};
use crate::error::{Error, FormatError, Result};
use crate::fs::{FileSyncer, Fs, WritableFile};
use crate::record::{self, Framing, LogEnd};

/// Magic of a WAL of version 1 (read, no longer written).
pub const WAL_MAGIC: &[u8; 8] = b"STRWAL01";
/// Magic of a WAL of version 2 (written now).
pub const WAL_MAGIC_V2: &[u8; 8] = b"STRWAL02";
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

/// The framing of a WAL from its first bytes: `None` when they are not a known magic.
pub fn framing_of(data: &[u8]) -> Option<Framing> {
    match data.get(..MAGIC_LEN)? {
        m if m == WAL_MAGIC => Some(Framing::V1),
        m if m == WAL_MAGIC_V2 => Some(Framing::V2),
        _ => None,
    }
}

/// True when `data` is a prefix of a magic, or only zeros (of any length): what a crash while
/// the file was created can leave (a file system may make a new size durable before the
/// bytes). Such a file never held an acknowledged record.
pub fn is_unwritten(data: &[u8]) -> bool {
    data.len() < MAGIC_LEN
        && (data.iter().zip(WAL_MAGIC).all(|(a, b)| a == b)
            || data.iter().zip(WAL_MAGIC_V2).all(|(a, b)| a == b))
        || data.iter().all(|&b| b == 0)
}

/// False when a WAL file certainly holds no record: no more than its magic, or a version 2
/// magic followed by zeros only (a WAL created and never written).
pub fn may_hold_records(data: &[u8]) -> bool {
    if data.len() <= MAGIC_LEN {
        return false;
    }
    !(framing_of(data) == Some(Framing::V2) && data[MAGIC_LEN..].iter().all(|&b| b == 0))
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

/// Writes batches into one WAL file (version 2).
pub struct WalWriter {
    file: Box<dyn WritableFile>,
    syncer: Arc<dyn FileSyncer>,
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
        file.append(WAL_MAGIC_V2).map_err(Error::io(&path))?;
        let magic = WAL_MAGIC_V2.len() as u64;
        extend(file.as_mut(), magic, chunk).map_err(Error::io(&path))?;
        file.sync().map_err(Error::io(&path))?;
        fs.sync_dir(dir).map_err(Error::io(dir))?;
        let syncer = file.syncer().map_err(Error::io(&path))?;
        Ok(WalWriter {
            file,
            syncer,
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
    /// [`WriteBatch::frame_wal_record`]): the same record bytes, the ops not copied.
    pub fn append_in_place(&mut self, seq: u64, batch: &mut WriteBatch) -> std::io::Result<()> {
        let r = self.write_record(batch.frame_wal_record(seq));
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
        self.allocated = self.allocated.max(end);
        Ok(())
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
        self.file.sync()
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
    let Some(framing) = framing_of(data) else {
        return Err(Error::corruption(path, 0, "bad WAL magic"));
    };
    let contents = record::read_log_framed(data, MAGIC_LEN, framing);
    let mut batches = Vec::with_capacity(contents.records.len());
    for (off, payload) in contents.records {
        let b = decode_batch(payload).map_err(|e| e.in_file(path, off + record::HEADER as u64))?;
        batches.push(b);
    }
    let torn_at = match contents.end {
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
        assert_eq!(&data[..8], WAL_MAGIC_V2);
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
            let mut payload = Vec::new();
            encode_batch(&mut payload, seq, &ops);
            let mut want = Vec::new();
            Framing::V2.frame(&mut want, &payload);
            prop_assert_eq!(batch.frame_wal_record(seq), &want[..]);
            batch.unframe_wal_record();
            prop_assert_eq!(batch.encoded_ops(), before.encoded_ops());
            prop_assert_eq!(batch.iter().collect::<Vec<_>>(), before.iter().collect::<Vec<_>>());
            prop_assert_eq!(batch.frame_wal_record(seq), &want[..]);
            batch.unframe_wal_record();
            prop_assert_eq!(&batch, &before);
            // Whole files: the copying append and the in-place one, twice each.
            let dir = tempfile::tempdir().unwrap();
            let mut a = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 1, MIN_PREALLOC).unwrap();
            let mut b = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 2, MIN_PREALLOC).unwrap();
            for s in [seq, seq.wrapping_add(1)] {
                a.append(s, &before).unwrap();
                b.append_in_place(s, &mut batch).unwrap();
            }
            prop_assert_eq!(a.bytes(), b.bytes());
            let read = |n| std::fs::read(dir.path().join(wal_name(n))).unwrap();
            prop_assert!(read(1) == read(2), "the two WAL files differ");
            prop_assert_eq!(&batch, &before);
        }
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
