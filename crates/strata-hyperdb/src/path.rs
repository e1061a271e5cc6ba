//! Key normalisation and the 2-bit path hash, exactly as hyperdb 3.5.0 computes them.
//!
//! A key is split on `/` (one empty first and one empty last part are dropped); each part is
//! hashed with SipHash-2-4 under the all-zero key, and each of the 8 output bytes (in output
//! order, i.e. the u64 little-endian) gives four 2-bit digits, least significant first. A full
//! key path ends with the terminator digit [`TERMINATOR`].

use std::hash::Hasher;

use siphasher::sip::SipHasher24;

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
    let mut parts: Vec<&str> = key.split('/').collect();
    if parts.first() == Some(&"") {
        parts.remove(0);
    }
    if parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// SipHash-2-4 of `bytes` under the zero key, as the 8 bytes libsodium's `crypto_shorthash` outputs.
pub fn siphash(bytes: &[u8]) -> [u8; 8] {
    let mut h = SipHasher24::new_with_keys(0, 0);
    h.write(bytes);
    h.finish().to_le_bytes()
}

/// Appends the 32 digits of one segment.
fn push_segment(segment: &str, out: &mut Vec<u8>) {
    for b in siphash(segment.as_bytes()) {
        out.extend_from_slice(&[b & 3, (b >> 2) & 3, (b >> 4) & 3, (b >> 6) & 3]);
    }
}

/// The path of a (normalised) key: 32 digits per segment, then the terminator when `terminate`.
pub fn hash(key: &str, terminate: bool) -> Vec<u8> {
    let parts = split(key);
    let mut out = Vec::with_capacity(parts.len() * SEGMENT_DIGITS + 1);
    for p in parts {
        push_segment(p, &mut out);
    }
    if terminate {
        out.push(TERMINATOR);
    }
    out
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
    }

    fn hex8(b: [u8; 8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
