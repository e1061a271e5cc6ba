//! Record framing shared by the WAL and the manifest.
//!
//! A log file is an 8-byte magic followed by records:
//! `len u32 LE | payload_crc u32 LE | header_crc u32 LE | payload[len]`, where both CRCs are
//! CRC32C and `header_crc` covers the first 8 bytes.
//!
//! **Torn tail versus corruption.** A crash can only leave the *last* record incomplete: a
//! partial header, a valid header whose payload runs past the end of the file, or (on file
//! systems that extend a file before writing its data) zeros up to the end. That is a torn
//! tail: the record was never acknowledged, and readers stop there. Anything else that fails
//! a check — a complete header whose checksum fails, or a complete payload whose checksum
//! fails, even in the very last record — is corruption: bytes that were written and synced
//! have changed, and the reader reports the file and offset instead of guessing.
//!
//! **Framing v2** (WALs with magic `STRWAL02`, written in place into space pre-written with
//! zeros): every record is followed by one commit byte [`COMMIT`], so a record is
//! `header | payload | 0xC5`. Zeros after the last record are preallocated space: a clean end.
//! Because a torn write no longer ends the file, the tail rules are:
//! - only zeros from the record's start to the end of the file: clean end;
//! - a header that fails its checksum with only zeros after its 12 bytes: torn tail (a header
//!   written in part);
//! - an intact header whose commit byte is still zero, with only zeros after it: torn tail
//!   (the record was being written; its payload may be complete or not);
//! - an intact header whose record runs past the end of the file: torn tail;
//! - anything else that fails a check is corruption: a commit byte that is neither zero nor
//!   [`COMMIT`], a payload that fails its checksum behind a commit byte, a zero commit byte
//!   or a damaged header followed by non-zero bytes (a write torn in its middle with both
//!   ends on disk, or bytes changed on disk). No single bit flip in a complete record can
//!   make it look torn: it cannot turn the commit byte into zero, and zeros only count when
//!   every byte after them is zero.

use crate::coding::{crc, u32_at};

/// Bytes of a record header.
pub const HEADER: usize = 12;
/// Largest payload accepted (a sanity bound against absurd lengths).
pub const MAX_PAYLOAD: usize = 1 << 30;

/// The commit byte that ends every record of framing v2.
pub const COMMIT: u8 = 0xC5;

/// How records are framed in a log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `header | payload`; the file ends after the last record (manifests, WAL v1).
    V1,
    /// `header | payload | COMMIT`; zeros after the last record (WAL v2).
    V2,
}

impl Framing {
    /// Bytes a record takes besides its payload.
    pub fn overhead(self) -> usize {
        match self {
            Framing::V1 => HEADER,
            Framing::V2 => HEADER + 1,
        }
    }

    /// Appends a record holding `payload` to `out`.
    pub fn frame(self, out: &mut Vec<u8>, payload: &[u8]) {
        frame(out, payload);
        if self == Framing::V2 {
            out.push(COMMIT);
        }
    }
}

/// Frames a record whose payload was written in place: `out` holds [`HEADER`] bytes (any
/// value) followed by the payload; the header is filled in and, for v2, the commit byte
/// appended. The same bytes as [`Framing::frame`] of the payload, without copying it.
pub fn frame_in_place(framing: Framing, out: &mut Vec<u8>) {
    let h = header_for(&out[HEADER..]);
    out[..HEADER].copy_from_slice(&h);
    if framing == Framing::V2 {
        out.push(COMMIT);
    }
}

/// The header of a record holding `payload` (the same in both framings).
pub fn header_for(payload: &[u8]) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[4..8].copy_from_slice(&crc(payload).to_le_bytes());
    let hc = crc(&h[0..8]);
    h[8..12].copy_from_slice(&hc.to_le_bytes());
    h
}

/// Appends a framed record holding `payload` to `out` (framing v1).
pub fn frame(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(&header_for(payload));
    out.extend_from_slice(payload);
}

/// How a log ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEnd {
    /// Every byte belongs to a valid record.
    Clean,
    /// An incomplete last record starts at this offset (see the module documentation).
    TornTail {
        /// Offset of the incomplete record.
        offset: u64,
        /// What was incomplete.
        reason: String,
    },
    /// A complete record at `offset` fails a check: corruption.
    Corrupt {
        /// Offset of the bad record.
        offset: u64,
        /// What was wrong there.
        reason: String,
    },
}

/// The records of a log up to its end or its first bad record: `(offset of the record,
/// payload)`, and how the log ended.
#[derive(Debug)]
pub struct LogContents<'a> {
    /// Valid records in order.
    pub records: Vec<(u64, &'a [u8])>,
    /// How the log ended.
    pub end: LogEnd,
}

/// What is at `pos`: a valid record, or why not.
enum At<'a> {
    Record(&'a [u8]),
    Torn(String),
    Bad {
        reason: String,
        /// The payload length when the header itself is valid (the damage is in the payload).
        len: Option<usize>,
    },
}

fn zeros_to_end(data: &[u8], pos: usize) -> bool {
    data[pos..].iter().all(|&b| b == 0)
}

fn record_at(data: &[u8], pos: usize, framing: Framing) -> At<'_> {
    match framing {
        Framing::V1 => record_at_v1(data, pos),
        Framing::V2 => record_at_v2(data, pos),
    }
}

/// The payload length of the record header at `pos`, checked (both framings). A header whose
/// checksum fails is a torn tail (`torn`) when only zeros follow from `zeros_from`, else damage.
fn header_at<'a>(
    data: &'a [u8],
    pos: usize,
    zeros_from: usize,
    torn: &str,
) -> Result<usize, At<'a>> {
    let (Some(len), Some(hc)) = (u32_at(data, pos), u32_at(data, pos + 8)) else {
        return Err(At::Torn(format!(
            "incomplete record header ({} bytes)",
            data.len() - pos
        )));
    };
    if crc(&data[pos..pos + 8]) != hc {
        if zeros_to_end(data, zeros_from) {
            return Err(At::Torn(torn.into()));
        }
        return Err(At::Bad {
            reason: "bad record header checksum".into(),
            len: None,
        });
    }
    let len = len as usize;
    if len > MAX_PAYLOAD {
        return Err(At::Bad {
            reason: format!("record length {len} is absurd"),
            len: None,
        });
    }
    Ok(len)
}

fn record_at_v1(data: &[u8], pos: usize) -> At<'_> {
    let len = match header_at(data, pos, pos, "zero-filled tail") {
        Ok(len) => len,
        Err(at) => return at,
    };
    let start = pos + HEADER;
    let Some(payload) = data.get(start..start + len) else {
        return At::Torn(format!(
            "record of {len} bytes runs past the end of the file ({} bytes left)",
            data.len() - start
        ));
    };
    let want = u32_at(data, pos + 4).unwrap_or(0);
    if crc(payload) != want {
        return At::Bad {
            reason: "bad record payload checksum".into(),
            len: Some(len),
        };
    }
    At::Record(payload)
}

/// A record of framing v2 at `pos`, which the caller has checked is not followed by zeros
/// only (that is the clean end).
fn record_at_v2(data: &[u8], pos: usize) -> At<'_> {
    let len = match header_at(data, pos, pos + HEADER, "record header written in part") {
        Ok(len) => len,
        Err(at) => return at,
    };
    let start = pos + HEADER;
    let Some(&marker) = data.get(start + len) else {
        return At::Torn(format!(
            "record of {len} bytes runs past the end of the file ({} bytes left)",
            data.len() - start
        ));
    };
    let payload = &data[start..start + len];
    if marker == 0 {
        if zeros_to_end(data, start + len + 1) {
            return At::Torn("record without its commit byte (unfinished write)".into());
        }
        return At::Bad {
            reason: "record without its commit byte followed by data (a write torn in its \
                     middle, or damage)"
                .into(),
            len: Some(len),
        };
    }
    if marker != COMMIT {
        return At::Bad {
            reason: format!("bad commit byte 0x{marker:02x}"),
            len: Some(len),
        };
    }
    let want = u32_at(data, pos + 4).unwrap_or(0);
    if crc(payload) != want {
        return At::Bad {
            reason: "bad record payload checksum".into(),
            len: Some(len),
        };
    }
    At::Record(payload)
}

/// Parses the records of `data` (framing v1) starting at `start` (after the magic), up to
/// the end of the log or its first bad record.
pub fn read_log(data: &[u8], start: usize) -> LogContents<'_> {
    read_log_framed(data, start, Framing::V1)
}

/// What is at `pos` with `framing`, the clean end of a v2 log (only zeros left) included.
fn next_at(data: &[u8], pos: usize, framing: Framing) -> Option<At<'_>> {
    match record_at(data, pos, framing) {
        At::Record(p) => Some(At::Record(p)),
        _ if framing == Framing::V2 && zeros_to_end(data, pos) => None,
        other => Some(other),
    }
}

/// [`read_log`] for either framing.
pub fn read_log_framed(data: &[u8], start: usize, framing: Framing) -> LogContents<'_> {
    let mut records = Vec::new();
    let mut pos = start;
    while pos < data.len() {
        let end = match next_at(data, pos, framing) {
            None => break,
            Some(At::Record(p)) => {
                records.push((pos as u64, p));
                pos += framing.overhead() + p.len();
                continue;
            }
            Some(At::Torn(reason)) => LogEnd::TornTail {
                offset: pos as u64,
                reason,
            },
            Some(At::Bad { reason, .. }) => LogEnd::Corrupt {
                offset: pos as u64,
                reason,
            },
        };
        return LogContents { records, end };
    }
    LogContents {
        records,
        end: LogEnd::Clean,
    }
}

/// Everything [`scan_log`] finds in a log: every valid record (also those after damage) and
/// every damaged region.
#[derive(Debug, Default)]
pub struct LogScan<'a> {
    /// Valid records in order: `(offset, payload)`.
    pub records: Vec<(u64, &'a [u8])>,
    /// Damaged records, in order.
    pub damage: Vec<Damage<'a>>,
    /// An incomplete last record: `(offset, reason)`.
    pub torn: Option<(u64, String)>,
}

/// A damaged record found by [`scan_log`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage<'a> {
    /// Offset of the record.
    pub offset: u64,
    /// What is wrong.
    pub reason: String,
    /// The payload as stored, when the header is intact (only the payload failed its
    /// checksum): salvage may try to read it, checking everything it finds.
    pub payload: Option<&'a [u8]>,
}

/// Reads a whole log (framing v1) for checking and salvage: after a damaged record the reader
/// resumes at the next record (right after it when its header is intact, else at the next
/// offset where a valid record starts), so that every problem is reported and every intact
/// record found.
pub fn scan_log(data: &[u8], start: usize) -> LogScan<'_> {
    scan_log_framed(data, start, Framing::V1)
}

/// The next offset after `pos` where a valid record starts, or the end of `data`. Only
/// offsets before the last non-zero byte can start one (a record ends in a non-zero byte
/// with framing v2; with v1 the search is the same, zeros never being a valid header).
fn next_record_after(data: &[u8], pos: usize, framing: Framing) -> usize {
    let Some(last) = data.iter().rposition(|&b| b != 0) else {
        return data.len();
    };
    (pos + 1..=last)
        .find(|&q| {
            // A valid header first: cheap, and never true of zeros.
            let Some(hc) = u32_at(data, q + 8) else {
                return false;
            };
            crc(&data[q..q + 8]) == hc && matches!(record_at(data, q, framing), At::Record(_))
        })
        .unwrap_or(data.len())
}

/// [`scan_log`] for either framing.
pub fn scan_log_framed(data: &[u8], start: usize, framing: Framing) -> LogScan<'_> {
    let mut out = LogScan::default();
    let mut pos = start;
    while pos < data.len() {
        match next_at(data, pos, framing) {
            None => break,
            Some(At::Record(p)) => {
                out.records.push((pos as u64, p));
                pos += framing.overhead() + p.len();
            }
            Some(At::Torn(reason)) => {
                out.torn = Some((pos as u64, reason));
                break;
            }
            Some(At::Bad { reason, len }) => {
                let payload = len.and_then(|l| data.get(pos + HEADER..pos + HEADER + l));
                out.damage.push(Damage {
                    offset: pos as u64,
                    reason,
                    payload,
                });
                pos = match len {
                    Some(len) => pos + framing.overhead() + len,
                    None => next_record_after(data, pos, framing),
                };
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(n: usize) -> Vec<u8> {
        let mut v = b"MAGICMAG".to_vec();
        for i in 0..n {
            frame(&mut v, format!("record number {i}").as_bytes());
        }
        v
    }

    #[test]
    fn clean_and_torn() {
        let l = log(5);
        let c = read_log(&l, 8);
        assert_eq!(c.records.len(), 5);
        assert_eq!(c.end, LogEnd::Clean);
        // Cutting a log anywhere leaves a clean log or a torn tail, never corruption.
        for cut in 9..l.len() {
            let c = read_log(&l[..cut], 8);
            assert!(
                matches!(c.end, LogEnd::TornTail { .. } | LogEnd::Clean),
                "cut {cut}: {:?}",
                c.end
            );
        }
        // So does a zero-filled tail.
        let mut z = l.clone();
        z.extend_from_slice(&[0; 100]);
        assert!(matches!(read_log(&z, 8).end, LogEnd::TornTail { .. }));
    }

    #[test]
    fn every_bit_flip_is_corruption_even_in_the_last_record() {
        let l = log(5);
        for byte in 8..l.len() {
            for bit in 0..8 {
                let mut m = l.clone();
                m[byte] ^= 1 << bit;
                let c = read_log(&m, 8);
                assert!(
                    matches!(c.end, LogEnd::Corrupt { .. }),
                    "flip at {byte}.{bit}: {:?}",
                    c.end
                );
            }
        }
    }

    #[test]
    fn scan_finds_every_damaged_record_and_the_records_after_them() {
        let l = log(6);
        let offsets: Vec<u64> = read_log(&l, 8).records.iter().map(|r| r.0).collect();
        let mut m = l.clone();
        m[offsets[1] as usize + HEADER + 2] ^= 1; // payload of record 1
        m[offsets[3] as usize] ^= 1; // length of record 3
        let s = scan_log(&m, 8);
        let damaged: Vec<u64> = s.damage.iter().map(|d| d.offset).collect();
        assert_eq!(damaged, vec![offsets[1], offsets[3]]);
        let found: Vec<u64> = s.records.iter().map(|r| r.0).collect();
        assert_eq!(found, vec![offsets[0], offsets[2], offsets[4], offsets[5]]);
        assert!(s.torn.is_none());
    }

    /// A v2 log of `n` records followed by `pad` zeros, and the records' `(offset, length)`.
    fn log_v2(n: usize, pad: usize) -> (Vec<u8>, Vec<(usize, usize)>) {
        let mut v = b"MAGICMAG".to_vec();
        let mut at = Vec::new();
        for i in 0..n {
            let start = v.len();
            Framing::V2.frame(&mut v, format!("record number {i}").as_bytes());
            at.push((start, v.len() - start));
        }
        v.resize(v.len() + pad, 0);
        (v, at)
    }

    #[test]
    fn v2_zeros_after_the_last_record_are_a_clean_end() {
        for pad in [0, 1, 12, 13, 4096] {
            let (l, _) = log_v2(5, pad);
            let c = read_log_framed(&l, 8, Framing::V2);
            assert_eq!((c.records.len(), c.end), (5, LogEnd::Clean), "pad {pad}");
            let s = scan_log_framed(&l, 8, Framing::V2);
            assert_eq!((s.records.len(), s.damage.len(), s.torn), (5, 0, None));
        }
        // The v1 reader sees a zero-filled tail as torn: the framings differ.
        let (l, _) = log_v2(0, 100);
        assert!(read_log_framed(&l, 8, Framing::V2).records.is_empty());
    }

    #[test]
    fn v2_a_prefix_of_the_last_record_then_zeros_is_a_torn_tail() {
        let (full, at) = log_v2(5, 0);
        let (off, len) = at[4];
        for cut in off + 1..off + len {
            for pad in [0, 7, 600] {
                let mut l = full[..cut].to_vec();
                l.resize(off + len + pad, 0);
                let c = read_log_framed(&l, 8, Framing::V2);
                assert_eq!(c.records.len(), 4, "cut {cut} pad {pad}");
                assert!(
                    matches!(c.end, LogEnd::TornTail { offset, .. } if offset == off as u64),
                    "cut {cut} pad {pad}: {:?}",
                    c.end
                );
                let s = scan_log_framed(&l, 8, Framing::V2);
                assert!(s.damage.is_empty() && s.torn.is_some(), "cut {cut}: {s:?}");
            }
            // The file may also end inside the record (a crash while it was extended).
            let c = read_log_framed(&full[..cut], 8, Framing::V2);
            assert!(matches!(c.end, LogEnd::TornTail { .. }), "cut {cut}");
        }
    }

    #[test]
    fn v2_every_bit_flip_in_a_record_is_corruption_even_in_the_last_one() {
        let (l, at) = log_v2(5, 64);
        let end = at[4].0 + at[4].1;
        for byte in 8..end {
            for bit in 0..8 {
                let mut m = l.clone();
                m[byte] ^= 1 << bit;
                let c = read_log_framed(&m, 8, Framing::V2);
                assert!(
                    matches!(c.end, LogEnd::Corrupt { .. }),
                    "flip at {byte}.{bit}: {:?}",
                    c.end
                );
            }
        }
    }

    #[test]
    fn v2_a_bit_flip_in_the_zeros_after_the_last_record_is_never_a_record() {
        let (l, at) = log_v2(3, 200);
        let end = at[2].0 + at[2].1;
        for byte in end..l.len() {
            let mut m = l.clone();
            m[byte] ^= 1 << (byte % 8);
            let c = read_log_framed(&m, 8, Framing::V2);
            assert_eq!(c.records.len(), 3, "flip at {byte}");
            // Within the first header's bytes it may be a header written in part (torn);
            // further on it is damage. Never a clean end.
            match c.end {
                LogEnd::TornTail { offset, .. } => {
                    assert!(byte < end + HEADER, "flip at {byte}");
                    assert_eq!(offset, end as u64);
                }
                LogEnd::Corrupt { .. } => {}
                LogEnd::Clean => panic!("flip at {byte} read as a clean end"),
            }
        }
    }

    #[test]
    fn v2_a_write_torn_in_its_middle_is_corruption() {
        let (l, at) = log_v2(4, 100);
        let (off, len) = at[3];
        // The end of the record (commit byte) reached the disk, a middle part did not.
        for hole in off + 1..off + len - 1 {
            let mut m = l.clone();
            let to = (hole + 8).min(off + len - 1);
            m[hole..to].fill(0);
            if m == l {
                continue;
            }
            let c = read_log_framed(&m, 8, Framing::V2);
            assert_eq!(c.records.len(), 3, "hole at {hole}");
            assert!(
                matches!(c.end, LogEnd::Corrupt { .. }),
                "hole at {hole}: {:?}",
                c.end
            );
        }
        // A record whose commit byte is missing while later bytes are not zero.
        let (l, at) = log_v2(4, 100);
        let mut m = l.clone();
        m[at[2].0 + at[2].1 - 1] = 0;
        let c = read_log_framed(&m, 8, Framing::V2);
        assert_eq!(c.records.len(), 2);
        assert!(matches!(c.end, LogEnd::Corrupt { .. }), "{:?}", c.end);
        let s = scan_log_framed(&m, 8, Framing::V2);
        assert_eq!((s.records.len(), s.damage.len()), (3, 1));
    }

    proptest::proptest! {
        /// A record framed in place (the WAL writer's way) is byte for byte the record framed
        /// from a separate payload, in both framings, after any bytes already in the buffer
        /// being replaced by the header.
        #[test]
        fn framed_in_place_is_framed(
            payload in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            junk in proptest::prelude::any::<u8>(),
            v2 in proptest::prelude::any::<bool>(),
        ) {
            let framing = if v2 { Framing::V2 } else { Framing::V1 };
            let mut want = Vec::new();
            framing.frame(&mut want, &payload);
            let mut got = vec![junk; HEADER];
            got.extend_from_slice(&payload);
            frame_in_place(framing, &mut got);
            proptest::prop_assert_eq!(got, want);
        }
    }
}
