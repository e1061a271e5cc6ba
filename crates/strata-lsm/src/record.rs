//! Record framing shared by the WAL and the manifest.
//!
//! A log file is an 8-byte magic followed by records:
//! `len u32 LE | payload_crc u32 LE | header_crc u32 LE | payload[len]`, where both CRCs are
//! CRC32C and `header_crc` covers the first 8 bytes. The header checksum lets a reader tell a
//! torn tail (nothing valid follows the first bad record) from corruption in the middle of a
//! log (a valid record follows it), even when the damage hit a length field.

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
    /// A torn or garbage tail starts at this offset; nothing valid follows it.
    TornTail {
        /// Offset of the first bad byte.
        offset: u64,
        /// What was wrong there.
        reason: String,
    },
    /// A bad record at `offset` is followed by a valid record: real corruption.
    Corrupt {
        /// Offset of the bad record.
        offset: u64,
        /// What was wrong there.
        reason: String,
    },
}

/// The records of a log: `(offset of the record, payload)`, and how the log ended.
#[derive(Debug)]
pub struct LogContents<'a> {
    /// Valid records in order.
    pub records: Vec<(u64, &'a [u8])>,
    /// How the log ended.
    pub end: LogEnd,
}

/// Checks a record header at `pos`; returns the payload length when the header is valid.
fn header_at(data: &[u8], pos: usize) -> Result<usize, String> {
    let (Some(len), Some(hc)) = (u32_at(data, pos), u32_at(data, pos + 8)) else {
        return Err("truncated record header".into());
    };
    if crc(&data[pos..pos + 8]) != hc {
        return Err("bad record header checksum".into());
    }
    let len = len as usize;
    if len > MAX_PAYLOAD {
        return Err(format!("record length {len} is absurd"));
    }
    Ok(len)
}

/// Checks the whole record at `pos`; returns its payload.
fn record_at(data: &[u8], pos: usize) -> Result<&[u8], String> {
    let len = header_at(data, pos)?;
    let start = pos + HEADER;
    let Some(payload) = data.get(start..start + len) else {
        return Err(format!(
            "record of {len} bytes runs past the end of the file"
        ));
    };
    let want = u32_at(data, pos + 4).unwrap_or(0);
    if crc(payload) != want {
        return Err("bad record payload checksum".into());
    }
    Ok(payload)
}

/// Parses the records of `data` starting at `start` (after the magic).
pub fn read_log(data: &[u8], start: usize) -> LogContents<'_> {
    let mut records = Vec::new();
    let mut pos = start;
    while pos < data.len() {
        match record_at(data, pos) {
            Ok(p) => {
                records.push((pos as u64, p));
                pos += HEADER + p.len();
            }
            Err(reason) => {
                // Does any valid record start after this one? Then this is not a torn tail.
                let follows = (pos + 1..data.len().saturating_sub(HEADER - 1))
                    .any(|q| record_at(data, q).is_ok());
                let end = if follows {
                    LogEnd::Corrupt {
                        offset: pos as u64,
                        reason,
                    }
                } else {
                    LogEnd::TornTail {
                        offset: pos as u64,
                        reason,
                    }
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
        for cut in 9..l.len() {
            let c = read_log(&l[..cut], 8);
            assert!(
                matches!(c.end, LogEnd::TornTail { .. } | LogEnd::Clean),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn middle_bit_flip_is_corruption() {
        let l = log(5);
        for byte in 8..l.len() - 40 {
            let mut m = l.clone();
            m[byte] ^= 0x10;
            let c = read_log(&m, 8);
            assert!(
                matches!(c.end, LogEnd::Corrupt { .. }),
                "flip at {byte}: {:?}",
                c.end
            );
        }
    }
}
