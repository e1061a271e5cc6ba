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

use crate::coding::{crc, u32_at};

/// Bytes of a record header.
pub const HEADER: usize = 12;
/// Largest payload accepted (a sanity bound against absurd lengths).
pub const MAX_PAYLOAD: usize = 1 << 30;

/// Appends a framed record holding `payload` to `out`.
pub fn frame(out: &mut Vec<u8>, payload: &[u8]) {
    let mut h = [0u8; HEADER];
    h[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    h[4..8].copy_from_slice(&crc(payload).to_le_bytes());
    let hc = crc(&h[0..8]);
    h[8..12].copy_from_slice(&hc.to_le_bytes());
    out.extend_from_slice(&h);
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

fn record_at(data: &[u8], pos: usize) -> At<'_> {
    let (Some(len), Some(hc)) = (u32_at(data, pos), u32_at(data, pos + 8)) else {
        return At::Torn(format!(
            "incomplete record header ({} bytes)",
            data.len() - pos
        ));
    };
    if crc(&data[pos..pos + 8]) != hc {
        if zeros_to_end(data, pos) {
            return At::Torn("zero-filled tail".into());
        }
        return At::Bad {
            reason: "bad record header checksum".into(),
            len: None,
        };
    }
    let len = len as usize;
    if len > MAX_PAYLOAD {
        return At::Bad {
            reason: format!("record length {len} is absurd"),
            len: None,
        };
    }
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

/// Parses the records of `data` starting at `start` (after the magic), up to the end of the
/// log or its first bad record.
pub fn read_log(data: &[u8], start: usize) -> LogContents<'_> {
    let mut records = Vec::new();
    let mut pos = start;
    while pos < data.len() {
        match record_at(data, pos) {
            At::Record(p) => {
                records.push((pos as u64, p));
                pos += HEADER + p.len();
            }
            At::Torn(reason) => {
                let end = LogEnd::TornTail {
                    offset: pos as u64,
                    reason,
                };
                return LogContents { records, end };
            }
            At::Bad { reason, .. } => {
                let end = LogEnd::Corrupt {
                    offset: pos as u64,
                    reason,
                };
                return LogContents { records, end };
            }
        }
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

/// Reads a whole log for checking and salvage: after a damaged record the reader resumes at
/// the next record (right after it when its header is intact, else at the next offset where
/// a valid record starts), so that every problem is reported and every intact record found.
pub fn scan_log(data: &[u8], start: usize) -> LogScan<'_> {
    let mut out = LogScan::default();
    let mut pos = start;
    while pos < data.len() {
        match record_at(data, pos) {
            At::Record(p) => {
                out.records.push((pos as u64, p));
                pos += HEADER + p.len();
            }
            At::Torn(reason) => {
                out.torn = Some((pos as u64, reason));
                break;
            }
            At::Bad { reason, len } => {
                let payload = len.and_then(|l| data.get(pos + HEADER..pos + HEADER + l));
                out.damage.push(Damage {
                    offset: pos as u64,
                    reason,
                    payload,
                });
                pos = match len {
                    Some(len) => pos + HEADER + len,
                    None => (pos + 1..data.len())
                        .find(|&q| matches!(record_at(data, q), At::Record(_)))
                        .unwrap_or(data.len()),
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
}
