//! Reading a WAL: record decoding and the rules that tell a torn tail or an unsynced hole
//! from corruption.

use std::path::Path;

use super::batch::decode_batch;
use super::{framing_of, is_unwritten, version_of, MAGIC_LEN, WATERMARK};
use crate::coding::{crc, u32_at, u64_at};
use crate::engine::Op;
use crate::error::{Error, FormatError, Result};
use crate::record::{self, Framing, LogEnd};

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
