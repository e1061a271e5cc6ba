//! Key normalisation and the 2-bit path hash, exactly as hyperdb 3.5.0 computes them.
//!
//! A key is split on `/` (one empty first and one empty last part are dropped); each part is
//! hashed with SipHash-2-4 under the all-zero key, and each of the 8 output bytes (in output
//! order, i.e. the u64 little-endian) gives four 2-bit digits, least significant first. A full
//! key path ends with the terminator digit [`TERMINATOR`].

use std::hash::Hasher;

use siphasher::sip::SipHasher24;
use smallvec::SmallVec;

/// The digit that ends a key's path (and marks "a key ends here" in a trie bucket).
pub const TERMINATOR: u8 = 4;
/// Digits per key segment.
pub const SEGMENT_DIGITS: usize = 32;

/// Removes one leading `/`, and nothing else (hyperdb's `normalizeKey`).
pub fn normalize(key: &str) -> &str {
    key.strip_prefix('/').unwrap_or(key)
}

/// Splits a key into the segments that are hashed (hyperdb's `split`).
pub fn split(key: &str) -> Vec<&str> {
    segments(key).collect()
}

/// The segments of [`split`], without collecting them: `key.split('/')` minus one empty first
/// and one empty last part.
pub fn segments(key: &str) -> impl Iterator<Item = &str> + Clone {
    let rest = key.strip_prefix('/').unwrap_or(key);
    // `""` and `"/"` have no segment (`"".split('/')` would yield one empty part).
    let parts = if rest.is_empty() { 0 } else { usize::MAX };
    rest.strip_suffix('/')
        .unwrap_or(rest)
        .split('/')
        .take(parts)
}

/// SipHash-2-4 of `bytes` under the zero key, as the 8 bytes libsodium's `crypto_shorthash` outputs.
pub fn siphash(bytes: &[u8]) -> [u8; 8] {
    let mut h = SipHasher24::new_with_keys(0, 0);
    h.write(bytes);
    h.finish().to_le_bytes()
}

/// Appends the 32 digits of one segment.
fn push_segment(segment: &str, out: &mut Vec<u8>) {
    let h = u64::from_le_bytes(siphash(segment.as_bytes()));
    out.extend((0..SEGMENT_DIGITS).map(|d| ((h >> (2 * d)) & 3) as u8));
}

/// The path of a (normalised) key: 32 digits per segment, then the terminator when `terminate`.
pub fn hash(key: &str, terminate: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 * SEGMENT_DIGITS + 1);
    for p in segments(key) {
        push_segment(p, &mut out);
    }
    if terminate {
        out.push(TERMINATOR);
    }
    out
}

/// A key's full path (terminated) kept as one SipHash per segment: 8 bytes instead of 32 digits,
/// computed without allocating for keys of up to two segments, and read a digit at a time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPath {
    segments: SmallVec<[u64; 2]>,
}

impl KeyPath {
    /// The path of a normalised key (what [`hash`] returns with `terminate`).
    pub fn of(key: &str) -> KeyPath {
        KeyPath {
            segments: segments(key)
                .map(|s| u64::from_le_bytes(siphash(s.as_bytes())))
                .collect(),
        }
    }

    /// Number of digits, the terminator included.
    pub fn len(&self) -> usize {
        self.segments.len() * SEGMENT_DIGITS + 1
    }

    /// Always false: a key path has at least the terminator.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Digit `i`, `None` past the end.
    #[inline]
    pub fn digit(&self, i: usize) -> Option<u8> {
        match self.segments.get(i / SEGMENT_DIGITS) {
            Some(h) => Some(((h >> (2 * (i % SEGMENT_DIGITS))) & 3) as u8),
            None if i == self.segments.len() * SEGMENT_DIGITS => Some(TERMINATOR),
            None => None,
        }
    }

    /// The first index in `from..p.len()` where this path differs from `p` (or has ended), or
    /// `p.len()` when they agree there.
    #[inline]
    pub fn mismatch(&self, p: &[u8], from: usize) -> usize {
        (from..p.len())
            .find(|&i| self.digit(i) != Some(p[i]))
            .unwrap_or(p.len())
    }

    /// The first index at or after `from` where this path and `other` differ (one of them may
    /// have ended there), or [`KeyPath::len`] when they are the same path. Compares 32 digits
    /// at a time.
    pub fn mismatch_key(&self, other: &KeyPath, from: usize) -> usize {
        let n = self.segments.len().min(other.segments.len());
        let mut seg = from / SEGMENT_DIGITS;
        let mut mask = u64::MAX << (2 * (from % SEGMENT_DIGITS));
        while seg < n {
            let x = (self.segments[seg] ^ other.segments[seg]) & mask;
            if x != 0 {
                return seg * SEGMENT_DIGITS + (x.trailing_zeros() / 2) as usize;
            }
            mask = u64::MAX;
            seg += 1;
        }
        if self.segments.len() == other.segments.len() {
            return self.len().max(from);
        }
        // One path has its terminator where the other has a digit (or has ended).
        from.max(n * SEGMENT_DIGITS)
    }

    /// Digits `0..i` followed by `v` (a list prefix below this path).
    pub fn prefix_with(&self, i: usize, v: u8) -> Vec<u8> {
        let mut out: Vec<u8> = (0..i.min(self.len()))
            .filter_map(|k| self.digit(k))
            .collect();
        out.push(v);
        out
    }

    /// All digits (what [`hash`] returns with `terminate`).
    pub fn to_digits(&self) -> Vec<u8> {
        (0..self.len()).filter_map(|k| self.digit(k)).collect()
    }
}

/// The path as the digit string the vectors use (`"0312…4"`).
pub fn to_digits(path: &[u8]) -> String {
    path.iter().map(|d| char::from(b'0' + d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples() {
        assert_eq!(hex8(siphash(b"tree")), "acdc056c639d87ca");
        assert_eq!(
            to_digits(&hash("tree", false)),
            "03220313110003213021131231022203"
        );
        assert_eq!(normalize("//a"), "/a");
        assert_eq!(split("dir/"), vec!["dir"]);
        assert_eq!(split("x//y"), vec!["x", "", "y"]);
        assert_eq!(hash("", true), vec![4]);
        for key in [
            "", "/", "//", "a", "a/", "/a", "/a//", "x//y", "a/b/c/", "///",
        ] {
            let naive: Vec<&str> = {
                let mut parts: Vec<&str> = key.split('/').collect();
                if parts.first() == Some(&"") {
                    parts.remove(0);
                }
                if parts.last() == Some(&"") {
                    parts.pop();
                }
                parts
            };
            assert_eq!(split(key), naive, "{key:?}");
            assert_eq!(KeyPath::of(key).to_digits(), hash(key, true), "{key:?}");
        }
        let keys = ["", "a", "b", "a/b", "a/c", "b/a", "a/b/c", "x//y"];
        for a in keys {
            for b in keys {
                let (pa, pb) = (KeyPath::of(a), KeyPath::of(b));
                for from in 0..pa.len() + 2 {
                    let naive = (from..pa.len())
                        .find(|&i| pa.digit(i) != pb.digit(i))
                        .unwrap_or(pa.len().max(from));
                    assert_eq!(pa.mismatch_key(&pb, from), naive, "{a:?} {b:?} {from}");
                }
            }
        }
    }

    fn hex8(b: [u8; 8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
