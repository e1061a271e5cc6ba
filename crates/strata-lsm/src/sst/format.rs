//! The fixed parts of an SST: its magic, version and footer, and the index block's entries.

use super::block::Block;
use crate::coding::{crc, get_varint, u32_at, u64_at};
use crate::error::FormatError;

/// Magic at the end of every SST.
pub const SST_MAGIC: &[u8; 8] = b"STRATSST";
/// Format version written in the footer: 2 = blocked bloom filter (see [`super::bloom`]). Version 1
/// files (classic filter) are still read.
pub const SST_VERSION: u32 = 2;
/// Oldest format version read.
pub const SST_MIN_VERSION: u32 = 1;
/// Bytes of the footer.
pub const FOOTER: usize = 48;
/// Bloom filter bits per key.
pub const BLOOM_BITS_PER_KEY: usize = 10;

/// The footer of an SST, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Offset of the index block.
    pub index_off: u64,
    /// Length of the index block (without its CRC).
    pub index_len: u32,
    /// Offset of the bloom filter.
    pub bloom_off: u64,
    /// Length of the bloom filter (without its CRC).
    pub bloom_len: u32,
    /// Number of entries.
    pub entries: u64,
    /// Format version (`SST_MIN_VERSION..=SST_VERSION`).
    pub version: u32,
}

/// Decodes a footer (the last 48 bytes of a file of `file_len` bytes); errors give the offset
/// inside the footer and the reason.
pub fn decode_footer(f: &[u8], file_len: u64) -> std::result::Result<Footer, FormatError> {
    if f.len() != FOOTER {
        return Err(FormatError::new(
            0,
            format!("footer is {} bytes, expected {FOOTER}", f.len()),
        ));
    }
    if &f[40..48] != SST_MAGIC {
        return Err(FormatError::new(40, "bad SST magic"));
    }
    let c = u32_at(f, 36).unwrap_or(0);
    if crc(&f[..36]) != c {
        return Err(FormatError::new(0, "footer checksum mismatch"));
    }
    let version = u32_at(f, 32).unwrap_or(0);
    if !(SST_MIN_VERSION..=SST_VERSION).contains(&version) {
        return Err(FormatError::new(
            32,
            format!("unsupported SST version {version}"),
        ));
    }
    let ft = Footer {
        index_off: u64_at(f, 0).unwrap_or(0),
        index_len: u32_at(f, 8).unwrap_or(0),
        bloom_off: u64_at(f, 12).unwrap_or(0),
        bloom_len: u32_at(f, 20).unwrap_or(0),
        entries: u64_at(f, 24).unwrap_or(0),
        version,
    };
    let body = file_len.saturating_sub(FOOTER as u64);
    for (off, len, at) in [
        (ft.index_off, ft.index_len, 0usize),
        (ft.bloom_off, ft.bloom_len, 12),
    ] {
        if off.checked_add(u64::from(len) + 4).is_none_or(|e| e > body) {
            return Err(FormatError::new(
                at,
                format!("block at {off} (+{len}) runs past the data"),
            ));
        }
    }
    Ok(ft)
}

/// One index entry: the last key of a data block and where the block is.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// Last key of the block.
    pub last_key: Vec<u8>,
    /// Offset of the block.
    pub off: u64,
    /// Length of the block (without its CRC).
    pub len: u32,
}

/// Decodes an index block into its entries.
pub fn decode_index(block: &Block) -> std::result::Result<Vec<IndexEntry>, FormatError> {
    let mut out = Vec::new();
    for (key, v) in block.entries()? {
        let Some(h) = block.value(v) else {
            return Err(FormatError::new(v.off as usize, "tombstone in the index"));
        };
        let mut p = 0;
        let off = get_varint(&h, &mut p)
            .ok_or_else(|| FormatError::new(v.off as usize, "bad block offset"))?;
        let len = get_varint(&h, &mut p)
            .ok_or_else(|| FormatError::new(v.off as usize, "bad block length"))?;
        let len = u32::try_from(len)
            .map_err(|_| FormatError::new(v.off as usize, "block length too large"))?;
        out.push(IndexEntry {
            last_key: key,
            off,
            len,
        });
    }
    Ok(out)
}
