//! Bloom filters of SSTs.
//!
//! Version 2 SSTs (written now) hold a **blocked** filter: `line[64 bytes] * n | k u8`; a
//! key's probes all fall in one 64-byte line (one cache miss per lookup instead of `k`), at a
//! slightly higher false-positive rate for the same bits (≈1.2 % instead of ≈0.8 % at 10 bits
//! per key). Version 1 SSTs hold the classic filter `bits[m/8] | k u8`, probed by double
//! hashing over the whole array; it is still read.

use std::sync::atomic::{AtomicU64, Ordering};

use super::pool::{Chunks, CHUNK_WORDS};

/// Hash of a key for the filter (FNV-1a 64 finished with the splitmix64 mixer: every input
/// bit affects every output bit, which double hashing needs).
pub fn key_hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Builds a version 1 (classic) filter from key hashes with `bits_per_key` bits per key.
pub fn build(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
    let k = ((bits_per_key as f64) * 0.69).round().clamp(1.0, 30.0) as u8;
    let bits = (hashes.len() * bits_per_key).max(64);
    let bytes = bits.div_ceil(8);
    let bits = bytes * 8;
    let mut out = vec![0u8; bytes + 1];
    for &h in hashes {
        let (mut a, b) = (h, h.rotate_right(32) | 1);
        for _ in 0..k {
            let bit = (a % bits as u64) as usize;
            out[bit / 8] |= 1 << (bit % 8);
            a = a.wrapping_add(b);
        }
    }
    out[bytes] = k;
    out
}

/// False when the key is certainly absent from a version 1 filter. A malformed filter answers
/// "maybe".
pub fn may_contain(filter: &[u8], hash: u64) -> bool {
    if filter.len() < 2 {
        return true;
    }
    let k = filter[filter.len() - 1];
    let bits = ((filter.len() - 1) * 8) as u64;
    let (mut a, b) = (hash, hash.rotate_right(32) | 1);
    for _ in 0..k {
        let bit = (a % bits) as usize;
        if filter[bit / 8] & (1 << (bit % 8)) == 0 {
            return false;
        }
        a = a.wrapping_add(b);
    }
    true
}

/// Bytes of a cache line, the unit of a blocked filter.
pub const LINE: usize = 64;
const LINE_BITS: u32 = (LINE * 8) as u32;

/// Line of a blocked filter holding a hash: the high 32 bits scaled to `lines`.
pub(crate) fn line_of(hash: u64, lines: usize) -> usize {
    (((hash >> 32) * lines as u64) >> 32) as usize
}

/// The bit positions inside a line: the low 32 bits, remixed by a multiplication per probe,
/// whose top 9 bits pick a bit.
pub(crate) fn probes(hash: u64, k: u8) -> impl Iterator<Item = u32> {
    let mut h = hash as u32;
    (0..k).map(move |_| {
        let bit = h >> (32 - 9);
        h = h.wrapping_mul(0x9e37_79b9);
        bit % LINE_BITS
    })
}

/// Builds a version 2 (blocked) filter from key hashes with about `bits_per_key` bits per
/// key.
pub fn build_blocked(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
    let k = ((bits_per_key as f64) * 0.69).round().clamp(1.0, 30.0) as u8;
    let lines = (hashes.len() * bits_per_key).div_ceil(LINE * 8).max(1);
    let mut out = vec![0u8; lines * LINE + 1];
    for &h in hashes {
        let base = line_of(h, lines) * LINE;
        for bit in probes(h, k) {
            out[base + (bit / 8) as usize] |= 1 << (bit % 8);
        }
    }
    out[lines * LINE] = k;
    out
}

/// Words of a line.
const LINE_WORDS: usize = LINE / 8;
/// Lines of a chunk of the pool.
const CHUNK_LINES: usize = CHUNK_WORDS / LINE_WORDS;

/// A blocked filter's lines, in chunks of the huge-page pool (`super::pool`: a probe
/// touches one line at random among all the filters of a store, tens of megabytes at 10^7
/// keys, and with 4 KiB pages nearly every probe also missed the TLB). Each line is 64 bytes
/// on a cache line of its own, kept as little-endian words.
pub struct Lines {
    chunks: Chunks,
    len: usize,
}

impl Lines {
    /// The whole lines of `body` (a trailing partial line is left out).
    fn from_bytes(body: &[u8]) -> Lines {
        let len = body.len() / LINE;
        let chunks = Chunks::new(len.div_ceil(CHUNK_LINES));
        for (i, line) in body.chunks_exact(LINE).enumerate() {
            if let Some(words) = Lines::line_in(&chunks, i) {
                for (w, b) in words.iter().zip(line.chunks_exact(8)) {
                    let mut x = [0u8; 8];
                    x.copy_from_slice(b);
                    w.store(u64::from_le_bytes(x), Ordering::Relaxed);
                }
            }
        }
        Lines { chunks, len }
    }

    /// Line `i` of `chunks`.
    #[inline]
    fn line_in(chunks: &Chunks, i: usize) -> Option<&[AtomicU64; LINE_WORDS]> {
        let at = i % CHUNK_LINES * LINE_WORDS;
        chunks
            .get(i / CHUNK_LINES)?
            .0
            .get(at..at + LINE_WORDS)?
            .try_into()
            .ok()
    }

    /// Line `i` (`None` past the last).
    #[inline]
    fn line(&self, i: usize) -> Option<&[AtomicU64; LINE_WORDS]> {
        if i >= self.len {
            return None;
        }
        Lines::line_in(&self.chunks, i)
    }

    /// Number of lines.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there is no line.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A filter as read from an SST, ready to probe.
pub enum Filter {
    /// Version 1: the classic filter bytes.
    Classic(Vec<u8>),
    /// Version 2: cache-line-aligned lines and the probe count.
    Blocked {
        /// The lines.
        lines: Lines,
        /// Probes per key.
        k: u8,
    },
}

impl Filter {
    /// The filter stored in an SST of format `version` (bytes without their CRC).
    pub fn from_stored(version: u32, bytes: Vec<u8>) -> Filter {
        if version < 2 {
            return Filter::Classic(bytes);
        }
        let Some((&k, body)) = bytes.split_last() else {
            return Filter::Blocked {
                lines: Lines::from_bytes(&[]),
                k: 0,
            };
        };
        Filter::Blocked {
            lines: Lines::from_bytes(body),
            k,
        }
    }

    /// False when the key with this hash ([`key_hash`]) is certainly absent. A malformed
    /// filter answers "maybe".
    #[inline]
    pub fn may_contain(&self, hash: u64) -> bool {
        match self {
            Filter::Classic(b) => may_contain(b, hash),
            Filter::Blocked { lines, k } => {
                if *k == 0 || *k > 30 {
                    return true;
                }
                let Some(line) = lines.line(line_of(hash, lines.len())) else {
                    return true;
                };
                // Bit `b` of the line's bytes is bit `b % 64` of its little-endian word
                // `b / 64`.
                probes(hash, *k).all(|bit| {
                    line[(bit / 64) as usize].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
                })
            }
        }
    }

    /// Asks the CPU for the line [`Filter::may_contain`] reads for `hash` (blocked filters;
    /// nothing for classic ones), so that its miss can overlap other work.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if let Filter::Blocked { lines, .. } = self {
            if let Some(line) = lines.line(line_of(hash, lines.len())) {
                crate::hint::prefetch(line.as_ptr().cast::<u8>());
            }
        }
    }

    /// Bytes held in memory.
    pub fn bytes(&self) -> usize {
        match self {
            Filter::Classic(b) => b.len(),
            Filter::Blocked { lines, .. } => lines.chunks.bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let keys: Vec<u64> = (0..10_000u32).map(|i| key_hash(&i.to_be_bytes())).collect();
        let f = build(&keys, 10);
        assert!(keys.iter().all(|&h| may_contain(&f, h)));
        let fp = (10_000..110_000u32)
            .filter(|i| may_contain(&f, key_hash(&i.to_be_bytes())))
            .count();
        assert!(fp < 2_000, "false positive rate {fp}/100000");
    }

    #[test]
    fn blocked_filter_has_no_false_negatives_and_few_false_positives() {
        for n in [1u32, 7, 100, 10_000] {
            let keys: Vec<u64> = (0..n).map(|i| key_hash(&i.to_be_bytes())).collect();
            let f = Filter::from_stored(2, build_blocked(&keys, 10));
            assert!(keys.iter().all(|&h| f.may_contain(h)), "n={n}");
            let fp = (1_000_000..1_100_000u32)
                .filter(|i| f.may_contain(key_hash(&i.to_be_bytes())))
                .count();
            if n == 10_000 {
                assert!(fp < 2_000, "false positive rate {fp}/100000");
            }
        }
    }

    #[test]
    fn malformed_filters_answer_maybe() {
        for bytes in [vec![], vec![7], vec![0u8; 65]] {
            assert!(Filter::from_stored(2, bytes).may_contain(key_hash(b"x")));
        }
        assert!(Filter::from_stored(1, vec![]).may_contain(123));
    }
}
