//! Reading a WAL: record decoding and the rules that tell a torn tail or an unsynced hole
//! from corruption.

use std::path::Path;

use std::borrow::Cow;

use super::batch::decode_batch;
use super::fragment::{self, WalRecord, WalScan};
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
pub(super) fn zero_to_sector_end(data: &[u8], q: usize) -> bool {
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

/// When the damage at `offset` of a v3 or v4 WAL (`data`, the whole file) is an **unsynced
/// hole**, why: a lost write (v3: `lost_write_at`; v4: the first failing fragment of the
/// record at `offset` is one, see [`fragment::fragment_at`]) that no valid record (v4: no valid
/// fragment) after it claims was synced (every later watermark is at most `offset`). Then
/// nothing from `offset` on was ever covered by a completed sync, and the replay ends there
/// like at a torn tail. `None`: corruption.
pub fn unsynced_hole(data: &[u8], offset: u64) -> Option<String> {
    let at = usize::try_from(offset).ok()?;
    let (claimed, after) = match version_of(data) {
        Some(3) if at < data.len() && lost_write_at(data, at) => {
            let later = record::scan_log_framed(data, at, Framing::V2);
            let later: Vec<_> = later.records.iter().filter(|(o, _)| *o > offset).collect();
            let claimed = later.iter().filter_map(|(_, p)| watermark_of(p)).max();
            (claimed, later.len())
        }
        Some(4) if at < data.len() => {
            let r = fragment::read_v4(data, at, false);
            let lost_here = r.records.is_empty()
                && r.lost
                && matches!(r.end, LogEnd::Corrupt { offset: o, .. } if o == offset);
            if !lost_here {
                return None;
            }
            let claimed = fragment::max_watermark_after(data, at);
            let after = fragment::scan_v4(data)
                .records
                .iter()
                .filter(|r| r.offset > offset)
                .count();
            (claimed, after)
        }
        _ => return None,
    };
    match claimed {
        Some(synced) if synced > offset => None,
        _ => Some(format!(
            "unsynced hole: a write lost in an OS crash, {after} intact record(s) after it, \
             none synced (the end of the recoverable prefix)"
        )),
    }
}

/// The records of a WAL of `version` (its magic checked by the caller) up to its end or its
/// first damage, without the hole rule ([`unsynced_hole`]): v1–v3 framed records, v4
/// fragments assembled.
pub fn read_records(data: &[u8], version: u8) -> (Vec<WalRecord<'_>>, LogEnd) {
    if version >= 4 {
        let r = fragment::read_v4(data, MAGIC_LEN, false);
        return (r.records, r.end);
    }
    let framing = framing_of_version(version);
    let c = record::read_log_framed(data, MAGIC_LEN, framing);
    (framed_records(c.records, framing), c.end)
}

/// Every valid record of a WAL of `version` and every damage, resuming after each (for
/// `check` and `repair`), without the hole rule.
pub fn scan_records(data: &[u8], version: u8) -> WalScan<'_> {
    if version >= 4 {
        return fragment::scan_v4(data);
    }
    let framing = framing_of_version(version);
    let s = record::scan_log_framed(data, MAGIC_LEN, framing);
    WalScan {
        records: framed_records(s.records, framing),
        damage: s.damage,
        torn: s.torn,
    }
}

/// The framing of WAL `version` 1–3 (v4 is read by [`fragment`]).
fn framing_of_version(version: u8) -> Framing {
    if version == 1 {
        Framing::V1
    } else {
        Framing::V2
    }
}

/// `(offset, payload)` records of a v1–v3 WAL as [`WalRecord`]s.
fn framed_records(records: Vec<(u64, &[u8])>, framing: Framing) -> Vec<WalRecord<'_>> {
    records
        .into_iter()
        .map(|(offset, p)| WalRecord {
            offset,
            end: offset + (framing.overhead() + p.len()) as u64,
            payload: Cow::Borrowed(p),
        })
        .collect()
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
    let (Some(version), Some(_)) = (version_of(data), framing_of(data)) else {
        return Err(Error::corruption(path, 0, "bad WAL magic"));
    };
    let (records, end) = read_records(data, version);
    let mut batches = Vec::with_capacity(records.len());
    for r in records {
        let b = decode_record(&r.payload, version)
            .map_err(|e| e.in_file(path, r.offset + record::HEADER as u64))?;
        batches.push(b);
    }
    let end = match end {
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
