//! WAL v4: records cut into fragments that never cross a 4 KiB page of the file.
//!
//! A fragment is `len_type u32 | payload_crc u32 | header_crc u32 | payload[len] | 0xC5`,
//! where `len_type` holds the payload length in its low 30 bits and the fragment type in its
//! top 2 ([`FULL`] `0`, [`FIRST`] `1`, [`MIDDLE`] `2`, [`LAST`] `3`), `header_crc` covers the
//! first 8 bytes and `payload_crc` the payload. Every fragment's payload starts with the
//! record's watermark (`synced u64`), so each fragment is checkable alone and each carries the
//! claim of what was synced. A [`FULL`] fragment is byte for byte a v3 record (type 0). A
//! record whose fragment would not fit in the rest of its page is cut: [`FIRST`] fills the
//! rest of the page, [`MIDDLE`]s fill whole pages, [`LAST`] holds the rest. Fewer than
//! [`MIN_FRAGMENT`] bytes left in a page are padding (zeros), skipped by readers. See
//! `docs/format/lsm.md`, "WAL v4".

use std::borrow::Cow;

use super::read::{zero_to_sector_end, SECTOR};
use super::{MAGIC_LEN, WATERMARK};
use crate::coding::{crc, u32_at, u64_at};
use crate::record::{Damage, LogEnd, COMMIT, HEADER};

/// The page size fragments never cross (the OS writes back whole pages of it or more).
pub const PAGE: usize = 4096;
/// A record in one fragment (the v3 layout).
pub const FULL: u8 = 0;
/// The first fragment of a cut record: ends at its page's end.
pub const FIRST: u8 = 1;
/// A fragment between the first and the last: a whole page.
pub const MIDDLE: u8 = 2;
/// The last fragment of a cut record.
pub const LAST: u8 = 3;
/// Bytes a fragment takes besides its data: header, watermark, commit byte.
pub const FRAGMENT_OVERHEAD: usize = HEADER + WATERMARK + 1;
/// The smallest fragment written (one byte of data). Fewer bytes left in a page are padding.
pub const MIN_FRAGMENT: usize = FRAGMENT_OVERHEAD + 1;

/// The end of the page holding `pos`.
pub fn page_end(pos: usize) -> usize {
    (pos / PAGE + 1) * PAGE
}

/// The checksum of a fragment of type `ty` holding `payload` at file offset `pos`: for
/// [`FULL`] the payload's CRC (the v3 record's), for the fragments of a cut record the CRC of
/// that CRC followed by `pos` (u64 LE), so that a fragment read anywhere but where it was
/// written (a page of another record, or of the same record in another order) fails it.
pub fn fragment_crc(ty: u8, payload: &[u8], pos: usize) -> u32 {
    let c = crc(payload);
    if ty == FULL {
        return c;
    }
    let mut b = [0u8; 12];
    b[..4].copy_from_slice(&c.to_le_bytes());
    b[4..].copy_from_slice(&(pos as u64).to_le_bytes());
    crc(&b)
}

/// The header of a fragment of type `ty` holding `payload` at file offset `pos`.
pub fn fragment_header(ty: u8, payload: &[u8], pos: usize) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    let word = payload.len() as u32 | (u32::from(ty) << 30);
    h[0..4].copy_from_slice(&word.to_le_bytes());
    h[4..8].copy_from_slice(&fragment_crc(ty, payload, pos).to_le_bytes());
    let hc = crc(&h[0..8]);
    h[8..12].copy_from_slice(&hc.to_le_bytes());
    h
}

/// Appends record `payload` (watermark then batch), to be written at file offset `at`, to
/// `out` as v4 fragments, with the padding zeros first when fewer than [`MIN_FRAGMENT`] bytes
/// are left in `at`'s page.
pub fn write_fragments(out: &mut Vec<u8>, at: usize, payload: &[u8]) {
    let (watermark, body) = payload.split_at(WATERMARK.min(payload.len()));
    let mut pos = at;
    let mut rest = page_end(pos) - pos;
    if rest < MIN_FRAGMENT {
        out.resize(out.len() + rest, 0);
        pos += rest;
        rest = PAGE;
    }
    if HEADER + payload.len() < rest {
        out.extend_from_slice(&fragment_header(FULL, payload, pos));
        out.extend_from_slice(payload);
        out.push(COMMIT);
        return;
    }
    let mut left = body;
    let mut first = true;
    out.reserve(
        payload.len() + (payload.len() / (PAGE - FRAGMENT_OVERHEAD) + 2) * FRAGMENT_OVERHEAD,
    );
    while !left.is_empty() || first {
        let room = rest - FRAGMENT_OVERHEAD;
        let n = room.min(left.len());
        let ty = match (first, n == left.len()) {
            (true, _) => FIRST,
            (false, true) => LAST,
            (false, false) => MIDDLE,
        };
        // Built in `out`: room for the header, the payload, then the header over it.
        let start = out.len();
        out.resize(start + HEADER, 0);
        out.extend_from_slice(watermark);
        out.extend_from_slice(&left[..n]);
        let h = fragment_header(ty, &out[start + HEADER..], pos);
        out[start..start + HEADER].copy_from_slice(&h);
        out.push(COMMIT);
        left = &left[n..];
        first = false;
        pos += FRAGMENT_OVERHEAD + n;
        rest = page_end(pos) - pos;
        if rest == 0 {
            rest = PAGE;
        }
    }
}

/// What is at a fragment's offset.
#[derive(Debug)]
pub enum Frag<'a> {
    /// A valid fragment: its type, payload (watermark first) and end offset.
    Ok {
        /// [`FULL`], [`FIRST`], [`MIDDLE`] or [`LAST`].
        ty: u8,
        /// The payload.
        payload: &'a [u8],
        /// Offset right after its commit byte.
        end: usize,
    },
    /// An unfinished write at the end of the file (only zeros after it).
    Torn(String),
    /// What a sector that never reached the disk leaves (zeros to the sector's end).
    Lost(String),
    /// Damage.
    Bad(String),
}

fn zeros_to_end(data: &[u8], pos: usize) -> bool {
    data.get(pos..).is_none_or(|z| z.iter().all(|&b| b == 0))
}

/// The fragment at `pos` (which is not in a page's padding).
pub fn fragment_at(data: &[u8], pos: usize) -> Frag<'_> {
    let (Some(word), Some(hc)) = (u32_at(data, pos), u32_at(data, pos + 8)) else {
        return Frag::Torn(format!(
            "incomplete fragment header ({} bytes)",
            data.len().saturating_sub(pos)
        ));
    };
    if crc(&data[pos..pos + 8]) != hc {
        if zeros_to_end(data, pos + HEADER) {
            return Frag::Torn("fragment header written in part".into());
        }
        let next = (pos / SECTOR + 1) * SECTOR;
        if zero_to_sector_end(data, pos) || (next < pos + HEADER && zero_to_sector_end(data, next))
        {
            return Frag::Lost("lost write: fragment header zero to its sector's end".into());
        }
        return Frag::Bad("bad fragment header checksum".into());
    }
    let ty = (word >> 30) as u8;
    let len = (word & ((1 << 30) - 1)) as usize;
    let commit = pos + HEADER + len;
    if len < WATERMARK || commit >= page_end(pos) {
        return Frag::Bad(format!(
            "fragment of {len} bytes at page offset {} crosses its page or lacks a watermark",
            pos % PAGE
        ));
    }
    let Some(&marker) = data.get(commit) else {
        return Frag::Torn(format!(
            "fragment of {len} bytes runs past the end of the file"
        ));
    };
    if marker == 0 {
        if zeros_to_end(data, commit + 1) {
            return Frag::Torn("fragment without its commit byte (unfinished write)".into());
        }
        if zero_to_sector_end(data, commit) {
            return Frag::Lost("lost write: commit byte zero to its sector's end".into());
        }
        return Frag::Bad("fragment without its commit byte followed by data".into());
    }
    if marker != COMMIT {
        return Frag::Bad(format!("bad commit byte 0x{marker:02x}"));
    }
    let payload = &data[pos + HEADER..commit];
    if u32_at(data, pos + 4) != Some(fragment_crc(ty, payload, pos)) {
        return Frag::Bad("bad fragment payload checksum".into());
    }
    Frag::Ok {
        ty,
        payload,
        end: commit + 1,
    }
}

/// One record read from a WAL: where it starts and ends, and its payload (watermark then
/// batch; assembled from its fragments in v4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRecord<'a> {
    /// Offset of its first byte (its first fragment's header).
    pub offset: u64,
    /// Offset right after its last byte.
    pub end: u64,
    /// The payload.
    pub payload: Cow<'a, [u8]>,
}

/// How a stretch of a v4 WAL read: records, then how it ended (and whether that end is a
/// lost write, which the watermark may turn into an unsynced hole).
#[derive(Debug)]
pub struct V4Read<'a> {
    /// Valid records in order.
    pub records: Vec<WalRecord<'a>>,
    /// How it ended.
    pub end: LogEnd,
    /// Where the reader stopped: after the damaged fragment (or the end of the file).
    pub stopped: usize,
    /// The end is corruption whose first failing fragment looks like a lost write.
    pub lost: bool,
}

/// A record being assembled: its start, watermark and payload so far.
struct Pending {
    start: usize,
    payload: Vec<u8>,
}

/// Reads the records of a v4 WAL from `start` up to the end or the first damage.
/// `skip_orphans`: continuation fragments without their first one are skipped instead of
/// being damage (resuming after damage, see [`scan_v4`]).
pub fn read_v4(data: &[u8], start: usize, skip_orphans: bool) -> V4Read<'_> {
    let mut records = Vec::new();
    let mut pos = start;
    let mut pending: Option<Pending> = None;
    let done = |records, end, stopped, lost| V4Read {
        records,
        end,
        stopped,
        lost,
    };
    loop {
        let at = pending.as_ref().map_or(pos, |p| p.start) as u64;
        let tail = |reason: &str| match &pending {
            Some(_) => LogEnd::TornTail {
                offset: at,
                reason: reason.into(),
            },
            None => LogEnd::Clean,
        };
        if pos >= data.len() {
            return done(
                records,
                tail("record runs past the end of the file"),
                pos,
                false,
            );
        }
        let pe = page_end(pos);
        if pe - pos < MIN_FRAGMENT {
            let pad = &data[pos..pe.min(data.len())];
            if pad.iter().any(|&b| b != 0) {
                let end = LogEnd::Corrupt {
                    offset: at,
                    reason: "non-zero bytes in a page's end padding".into(),
                };
                return done(records, end, pe, false);
            }
            pos = pe;
            continue;
        }
        if zeros_to_end(data, pos) {
            return done(
                records,
                tail("record's later fragments never written"),
                pos,
                false,
            );
        }
        let corrupt = |reason: String| LogEnd::Corrupt { offset: at, reason };
        let (ty, payload, end) = match fragment_at(data, pos) {
            Frag::Ok { ty, payload, end } => (ty, payload, end),
            Frag::Torn(reason) => {
                let end = LogEnd::TornTail { offset: at, reason };
                return done(records, end, data.len(), false);
            }
            Frag::Lost(r) => return done(records, corrupt(r), pos + 1, true),
            Frag::Bad(r) => return done(records, corrupt(r), pos + 1, false),
        };
        let fills_page = end == page_end(pos);
        match (ty, pending.as_mut()) {
            (FULL, None) => records.push(WalRecord {
                offset: pos as u64,
                end: end as u64,
                payload: Cow::Borrowed(payload),
            }),
            (FIRST, None) if fills_page => {
                pending = Some(Pending {
                    start: pos,
                    payload: payload.to_vec(),
                })
            }
            (MIDDLE | LAST, Some(p)) if p.payload[..WATERMARK] != payload[..WATERMARK] => {
                let r = "fragment's watermark differs from its record's".to_string();
                return done(records, corrupt(r), end, false);
            }
            (MIDDLE, Some(p)) if fills_page => p.payload.extend_from_slice(&payload[WATERMARK..]),
            (LAST, Some(p)) => {
                p.payload.extend_from_slice(&payload[WATERMARK..]);
                let p = pending.take().map(|p| (p.start, p.payload));
                if let Some((start, payload)) = p {
                    records.push(WalRecord {
                        offset: start as u64,
                        end: end as u64,
                        payload: Cow::Owned(payload),
                    });
                }
            }
            (MIDDLE | LAST, None) if skip_orphans => {}
            (MIDDLE | LAST, None) => {
                let r = "continuation fragment without its first fragment".to_string();
                return done(records, corrupt(r), end, false);
            }
            (FULL | FIRST, Some(_)) => {
                let r = "cut record followed by a new record before its last fragment";
                return done(records, corrupt(r.into()), pos, false);
            }
            _ => {
                let r = "first or middle fragment that does not fill its page".to_string();
                return done(records, corrupt(r), end, false);
            }
        }
        pos = end;
    }
}

/// The next offset after `pos` where a valid fragment starts, or the end of `data`; `last`:
/// the offset of the last non-zero byte of `data` (no fragment starts after it).
pub fn next_fragment_after(data: &[u8], pos: usize, last: usize) -> usize {
    (pos + 1..=last)
        .find(|&q| {
            let Some(hc) = u32_at(data, q + 8) else {
                return false;
            };
            crc(&data[q..q + 8]) == hc
                && page_end(q) - q >= MIN_FRAGMENT
                && matches!(fragment_at(data, q), Frag::Ok { .. })
        })
        .unwrap_or(data.len())
}

/// The offset of the last non-zero byte of `data` (0 when none).
fn last_nonzero(data: &[u8]) -> usize {
    data.iter().rposition(|&b| b != 0).unwrap_or(0)
}

/// Every record of a v4 WAL and every damage, resuming after each damage at the next valid
/// fragment (continuation fragments of a damaged record skipped).
#[derive(Debug, Default)]
pub struct WalScan<'a> {
    /// Valid records.
    pub records: Vec<WalRecord<'a>>,
    /// Damaged records.
    pub damage: Vec<Damage<'a>>,
    /// An unfinished write at the end.
    pub torn: Option<(u64, String)>,
}

/// Scans a whole v4 WAL (for `check`, `repair` and the hole rule).
pub fn scan_v4(data: &[u8]) -> WalScan<'_> {
    let mut out = WalScan::default();
    let mut pos = MAGIC_LEN;
    let last = last_nonzero(data);
    let mut resumed = false;
    while pos < data.len() {
        let r = read_v4(data, pos, resumed);
        out.records.extend(r.records);
        match r.end {
            LogEnd::Clean => break,
            LogEnd::TornTail { offset, reason } => {
                out.torn = Some((offset, reason));
                break;
            }
            LogEnd::Corrupt { offset, reason } => {
                out.damage.push(Damage {
                    offset,
                    reason,
                    payload: None,
                });
                pos = next_fragment_after(data, r.stopped.max(pos + 1) - 1, last);
                resumed = true;
            }
        }
    }
    out
}

/// The largest watermark of a valid fragment starting after `offset` (any fragment: a
/// record's later fragments carry its watermark too).
pub fn max_watermark_after(data: &[u8], offset: usize) -> Option<u64> {
    let last = last_nonzero(data);
    let mut best = None;
    let mut q = next_fragment_after(data, offset, last);
    while q < data.len() {
        q = match fragment_at(data, q) {
            Frag::Ok { payload, end, .. } => {
                best = best.max(u64_at(payload, 0));
                next_fragment_after(data, end - 1, last)
            }
            _ => next_fragment_after(data, q, last),
        };
    }
    best
}
