//! The write-ahead log: one shared log for all stripes, one record per write batch.
//!
//! File `wal-{number:06}.log` = a magic + records framed by [`crate::record`]. The payload of
//! a record is one batch: `seq u64 LE | count varint | op*`, where an op is `0x01 key value`
//! (put) or `0x00 key` (delete), each byte string varint-length-prefixed. Every op of a batch
//! carries the batch's sequence number; a later op on the same key wins.
//!
//! Four versions are read; version 4 is written:
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
//! - **v4** (`STRWAL04`): v3 records cut into fragments that never cross a 4 KiB page of the
//!   file, each checkable alone and carrying the watermark ([`fragment`]): a page lost in an
//!   OS crash is a lost fragment, to which v3's hole rule applies, where in v3 a lost middle
//!   page of a record bigger than a page read as a complete record with a bad checksum.

mod batch;
pub mod fragment;
mod read;
#[cfg(test)]
mod tests;
mod writer;

pub(crate) use batch::put_op;
pub use batch::{decode_batch, encode_batch};
pub use fragment::{WalRecord, WalScan};
pub use read::{
    decode_record, read_records, read_wal, scan_records, unsynced_hole, watermark_of, Recovered,
    SECTOR,
};
pub use writer::{WalWriter, BIG_RECORD, TAIL_RESERVE};

use crate::record::Framing;

/// Magic of a WAL of version 1 (read, no longer written).
pub const WAL_MAGIC: &[u8; 8] = b"STRWAL01";
/// Magic of a WAL of version 2 (read, no longer written).
pub const WAL_MAGIC_V2: &[u8; 8] = b"STRWAL02";
/// Magic of a WAL of version 3 (read, no longer written).
pub const WAL_MAGIC_V3: &[u8; 8] = b"STRWAL03";
/// Magic of a WAL of version 4 (written now): v3 records cut into fragments that never cross
/// a 4 KiB page ([`fragment`]).
pub const WAL_MAGIC_V4: &[u8; 8] = b"STRWAL04";
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

/// The version of a WAL (1 to 4) from its first bytes: `None` when they are not a known
/// magic.
pub fn version_of(data: &[u8]) -> Option<u8> {
    match data.get(..MAGIC_LEN)? {
        m if m == WAL_MAGIC => Some(1),
        m if m == WAL_MAGIC_V2 => Some(2),
        m if m == WAL_MAGIC_V3 => Some(3),
        m if m == WAL_MAGIC_V4 => Some(4),
        _ => None,
    }
}

/// The framing of a WAL from its first bytes (v1 for version 1, v2 for versions 2 to 4; v4 cuts
/// records into fragments of framing v2 with a type in the length's top bits):
/// `None` when they are not a known magic.
pub fn framing_of(data: &[u8]) -> Option<Framing> {
    match version_of(data)? {
        1 => Some(Framing::V1),
        _ => Some(Framing::V2),
    }
}

/// True when `data` is a prefix of a magic, or only zeros (of any length): what a crash while
/// the file was created can leave (a file system may make a new size durable before the
/// bytes). Such a file never held an acknowledged record.
pub fn is_unwritten(data: &[u8]) -> bool {
    data.len() < MAGIC_LEN
        && [WAL_MAGIC, WAL_MAGIC_V2, WAL_MAGIC_V3, WAL_MAGIC_V4]
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

pub use crate::filename::{parse_wal_name, wal_name};
