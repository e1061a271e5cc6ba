//! Integers: classes of tags with 0–16 payload bytes, the last payload byte a base-254 digit
//! (see `docs/FORMAT.md`, "Integers").

use super::{Reader, TAG_INT_MAX, TAG_INT_MIN};
use crate::error::DecodeError;

/// A class of integer encodings: `tags` consecutive tags, each followed by `p` payload bytes.
#[derive(Clone, Copy)]
struct IntClass {
    /// Payload bytes after the tag (0: the value is in the tag).
    p: u8,
    /// Number of tags of the class.
    tags: u8,
}

/// Positive classes, smallest magnitudes first: 24 one-byte values, 32 tags × 254 two-byte
/// values, 8 tags × 65,024 three-byte values, then one tag per payload length 3..=16.
const POS_CLASSES: [IntClass; 17] = int_classes(24, 32, 8);
/// Negative classes, smallest magnitudes first (−1 is magnitude 0).
const NEG_CLASSES: [IntClass; 17] = int_classes(8, 8, 4);

const fn int_classes(small: u8, k1: u8, k2: u8) -> [IntClass; 17] {
    let mut c = [IntClass { p: 0, tags: 1 }; 17];
    c[0] = IntClass { p: 0, tags: small };
    c[1] = IntClass { p: 1, tags: k1 };
    c[2] = IntClass { p: 2, tags: k2 };
    let mut i = 3;
    while i < 17 {
        c[i] = IntClass {
            p: i as u8,
            tags: 1,
        };
        i += 1;
    }
    c
}

/// Values one tag of a class holds: 1 without payload, else 254 × 256^(p−1).
const fn per_tag(p: u8) -> u128 {
    if p == 0 {
        1
    } else {
        254u128 << (8 * (p as u32 - 1))
    }
}

const fn class_starts(classes: &[IntClass; 17]) -> [u128; 18] {
    let mut s = [0u128; 18];
    let mut i = 0;
    while i < 17 {
        // Saturate: the last classes reach beyond 2^127, which no i128 magnitude needs.
        let size = (classes[i].tags as u128).saturating_mul(per_tag(classes[i].p));
        s[i + 1] = s[i].saturating_add(size);
        i += 1;
    }
    s
}

pub(super) const POS_STARTS: [u128; 18] = class_starts(&POS_CLASSES);
pub(super) const NEG_STARTS: [u128; 18] = class_starts(&NEG_CLASSES);

const fn total_tags(classes: &[IntClass; 17]) -> u32 {
    let mut t = 0u32;
    let mut i = 0;
    while i < 17 {
        t += classes[i].tags as u32;
        i += 1;
    }
    t
}

const NEG_TAGS: u32 = total_tags(&NEG_CLASSES);
const POS_TAGS: u32 = total_tags(&POS_CLASSES);
/// Tag of integer 0: negative tags come first.
const TAG_ZERO: u8 = TAG_INT_MIN + NEG_TAGS as u8;
const _: () = assert!(TAG_INT_MIN as u32 + NEG_TAGS + POS_TAGS == TAG_INT_MAX as u32 + 1);

/// Decoding table for integer tags: (negative, class index, tag index within the class).
const INT_TAGS: [(bool, u8, u8); 256] = int_tag_table();

const fn int_tag_table() -> [(bool, u8, u8); 256] {
    let mut t = [(false, 0u8, 0u8); 256];
    // Positive: ascending tags from TAG_ZERO, classes in order.
    let mut tag = TAG_ZERO as usize;
    let mut c = 0;
    while c < 17 {
        let mut k = 0;
        while k < POS_CLASSES[c].tags {
            t[tag] = (false, c as u8, k);
            tag += 1;
            k += 1;
        }
        c += 1;
    }
    // Negative: descending tags from TAG_ZERO - 1 (magnitude grows as tags shrink).
    let mut tag = TAG_ZERO as usize - 1;
    let mut c = 0;
    while c < 17 {
        let mut k = 0;
        while k < NEG_CLASSES[c].tags {
            t[tag] = (true, c as u8, k);
            tag -= 1;
            k += 1;
        }
        c += 1;
    }
    t
}

/// Decoding of one tag of the integers whose magnitude fits a `u64` (classes 0 to 8): the
/// magnitude is `base + payload quotient × 254 + last digit`.
#[derive(Clone, Copy)]
struct FastTag {
    /// Smallest magnitude of the tag.
    base: u64,
    /// Payload bytes (0 to 8).
    p: u8,
    neg: bool,
    /// False for the tags that need the `u128` path (and for non-integer tags).
    fast: bool,
}

const FAST_TAGS: [FastTag; 256] = fast_tags();

const fn fast_tags() -> [FastTag; 256] {
    let none = FastTag {
        base: 0,
        p: 0,
        neg: false,
        fast: false,
    };
    let mut t = [none; 256];
    let mut tag = TAG_INT_MIN as usize;
    while tag <= TAG_INT_MAX as usize {
        let (neg, c, k) = INT_TAGS[tag];
        let c = c as usize;
        if c <= 8 {
            let (classes, starts) = if neg {
                (&NEG_CLASSES, &NEG_STARTS)
            } else {
                (&POS_CLASSES, &POS_STARTS)
            };
            let p = classes[c].p;
            t[tag] = FastTag {
                base: (starts[c] + k as u128 * per_tag(p)) as u64,
                p,
                neg,
                fast: true,
            };
        }
        tag += 1;
    }
    t
}

fn class_of(m: u128, starts: &[u128; 18]) -> usize {
    let mut c = 0;
    while c < 16 && m >= starts[c + 1] {
        c += 1;
    }
    c
}

/// Appends the payload of offset `rem` in a `p`-byte class: `rem / 254` big-endian in `p − 1`
/// bytes, then `rem % 254 + 1`, so the last byte is never 0x00 or 0xff.
#[inline]
fn put_payload(out: &mut Vec<u8>, rem: u128, p: usize, invert: bool) {
    let mask = if invert { 0xff } else { 0 };
    let (q, r) = if let Ok(small) = u64::try_from(rem) {
        ((small / 254) as u128, (small % 254) as u8)
    } else {
        (rem / 254, (rem % 254) as u8)
    };
    let qb = q.to_be_bytes();
    out.extend(qb[16 - (p - 1)..].iter().map(|b| b ^ mask));
    out.push((r + 1) ^ mask);
}

/// Class starts and first-tag offsets as `u64`, for the classes that 64-bit values use (the
/// fast path; `p ≤ 8`).
const fn starts64(s: &[u128; 18]) -> [u64; 10] {
    let mut r = [0u64; 10];
    let mut i = 0;
    while i < 10 {
        r[i] = s[i] as u64;
        i += 1;
    }
    r
}
const POS_STARTS64: [u64; 10] = starts64(&POS_STARTS);
const NEG_STARTS64: [u64; 10] = starts64(&NEG_STARTS);
const _: () = assert!(POS_STARTS[9] <= u64::MAX as u128 && NEG_STARTS[9] <= u64::MAX as u128);

const fn tag_offsets(classes: &[IntClass; 17]) -> [u32; 17] {
    let mut r = [0u32; 17];
    let mut i = 1;
    while i < 17 {
        r[i] = r[i - 1] + classes[i - 1].tags as u32;
        i += 1;
    }
    r
}
const POS_TAG_OFFSETS: [u32; 17] = tag_offsets(&POS_CLASSES);
const NEG_TAG_OFFSETS: [u32; 17] = tag_offsets(&NEG_CLASSES);

/// For each bit length `L` (0 to 64), the class of the smallest magnitude of that length: a
/// magnitude of bit length `L` is in that class or the next (checked by a unit test), so the
/// class is found with one table load and one comparison.
const fn class_by_bits(starts: &[u128; 18]) -> [u8; 65] {
    let mut t = [0u8; 65];
    let mut l = 1;
    while l <= 64 {
        let smallest = 1u128 << (l - 1);
        let mut c = 0;
        while c < 16 && smallest >= starts[c + 1] {
            c += 1;
        }
        t[l] = c as u8;
        l += 1;
    }
    t
}
const POS_CLASS_BY_BITS: [u8; 65] = class_by_bits(&POS_STARTS);
const NEG_CLASS_BY_BITS: [u8; 65] = class_by_bits(&NEG_STARTS);

/// Encodes a magnitude `m < 2^63` of one side: returns the tag's distance from zero's tag, the
/// payload length, and writes nothing. `q`/`r` are the payload's quotient and digit.
#[inline(always)]
fn split_u64(
    m: u64,
    classes: &[IntClass; 17],
    starts: &[u64; 10],
    offsets: &[u32; 17],
    by_bits: &[u8; 65],
) -> (u32, usize, u64, u8) {
    if m < classes[0].tags as u64 {
        return (m as u32, 0, 0, 0);
    }
    let c = by_bits[(64 - m.leading_zeros()) as usize] as usize;
    // Below 2^63 the class is at most 8, so c + 1 ≤ 9 indexes `starts`.
    let c = c + usize::from(m >= starts[c + 1]);
    let off = m - starts[c];
    match c {
        1 => (offsets[1] + (off / 254) as u32, 1, 0, (off % 254) as u8),
        2 => {
            let (k, rem) = (off / (254 * 256), off % (254 * 256));
            (offsets[2] + k as u32, 2, rem / 254, (rem % 254) as u8)
        }
        _ => (offsets[c], c, off / 254, (off % 254) as u8),
    }
}

/// Appends an integer.
#[inline]
pub(crate) fn encode_int(v: i128, out: &mut Vec<u8>) {
    if let Ok(x) = i64::try_from(v) {
        encode_i64(x, out);
        return;
    }
    encode_int_wide(v, out)
}

/// The 64-bit fast path: the element is built in a stack buffer and appended once.
#[inline]
pub(crate) fn encode_i64(x: i64, out: &mut Vec<u8>) {
    let neg = x < 0;
    // One's complement of a negative gives its magnitude class index: -1 -> 0.
    let m = (x ^ (x >> 63)) as u64;
    let (dist, p, q, r) = if neg {
        split_u64(
            m,
            &NEG_CLASSES,
            &NEG_STARTS64,
            &NEG_TAG_OFFSETS,
            &NEG_CLASS_BY_BITS,
        )
    } else {
        split_u64(
            m,
            &POS_CLASSES,
            &POS_STARTS64,
            &POS_TAG_OFFSETS,
            &POS_CLASS_BY_BITS,
        )
    };
    let tag = if neg {
        TAG_ZERO as u32 - 1 - dist
    } else {
        TAG_ZERO as u32 + dist
    };
    if p == 0 {
        out.push(tag as u8);
        return;
    }
    // [tag][q as p − 1 big-endian bytes][r + 1]: the payload left-aligned in a u64 (its
    // complemented high bits, for negatives, shift out), appended as 9 bytes (a fixed-size
    // copy) and cut back to p + 1: no variable-length copy. p ≤ 8 below 2^63.
    let mask: u64 = if neg { u64::MAX } else { 0 };
    let payload = ((q ^ mask) << 8) | u64::from((r + 1) ^ mask as u8);
    let word = payload << (64 - 8 * p as u32);
    let mut buf = [0u8; 9];
    buf[0] = tag as u8;
    buf[1..].copy_from_slice(&word.to_be_bytes());
    let len = out.len();
    out.extend_from_slice(&buf);
    out.truncate(len + p + 1);
}

/// Integers beyond `i64`: the general `u128` path (one code for both signs: negatives use
/// the mirrored classes, descending tags and complemented payloads).
fn encode_int_wide(v: i128, out: &mut Vec<u8>) {
    let neg = v < 0;
    // Negatives: the distance below -1 (-1 -> 0, -2 -> 1, ...); never overflows.
    let (m, classes, starts) = if neg {
        (!v as u128, &NEG_CLASSES, &NEG_STARTS)
    } else {
        (v as u128, &POS_CLASSES, &POS_STARTS)
    };
    let c = class_of(m, starts);
    let class = classes[c];
    let off = m - starts[c];
    let pt = per_tag(class.p);
    let (k, rem) = if class.tags == 1 {
        (0, off)
    } else {
        (off / pt, off % pt)
    };
    let dist = class_tag_offset(classes, c) + k as u32;
    let tag = if neg {
        TAG_ZERO as u32 - 1 - dist
    } else {
        TAG_ZERO as u32 + dist
    };
    out.push(tag as u8);
    if class.p > 0 {
        put_payload(out, rem, class.p as usize, neg);
    }
}

fn class_tag_offset(classes: &[IntClass; 17], c: usize) -> u32 {
    classes[..c].iter().map(|x| x.tags as u32).sum()
}

impl Reader<'_> {
    pub(crate) fn sub_int(&mut self) -> Result<i128, DecodeError> {
        let at = self.pos;
        let tag = self.byte()?;
        if !(TAG_INT_MIN..=TAG_INT_MAX).contains(&tag) {
            return Err(self.err(at, format!("expected an integer tag, found 0x{tag:02x}")));
        }
        self.int_after_tag(tag, at)
    }

    #[inline]
    pub(crate) fn int_after_tag(&mut self, tag: u8, at: usize) -> Result<i128, DecodeError> {
        let f = FAST_TAGS[tag as usize];
        if f.fast {
            // The magnitude fits a u64: the payload (≤ 8 bytes) is read with one 8-byte load
            // where the key has 8 bytes left.
            let mut m = f.base;
            let p = f.p as usize;
            if p > 0 {
                let bits = 8 * p as u32; // 8..=64
                let raw = match self.bytes.get(self.pos..self.pos + 8) {
                    Some(w) => {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(w);
                        u64::from_be_bytes(a) >> (64 - bits)
                    }
                    // Near the end of the key: byte by byte.
                    None => match self.bytes.get(self.pos..self.pos + p) {
                        Some(b) => b.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
                        None => return Err(self.short(p)),
                    },
                };
                let invert = u64::from(if f.neg { 0xff } else { 0 } ^ self.mask);
                let payload = raw ^ ((invert * 0x0101_0101_0101_0101) >> (64 - bits));
                let last = payload as u8;
                if last == 0 || last == 0xff {
                    return Err(self.err(
                        self.pos + p - 1,
                        format!("integer payload ends in 0x{last:02x}"),
                    ));
                }
                self.pos += p;
                // p = 8: the quotient is the top 7 bytes (a shift by 8 is always in range).
                m += (payload >> 8) * 254 + u64::from(last - 1);
            }
            return Ok(if f.neg { !(m as i128) } else { m as i128 });
        }
        let (neg, c, k) = INT_TAGS[tag as usize];
        let (classes, starts) = if neg {
            (&NEG_CLASSES, &NEG_STARTS)
        } else {
            (&POS_CLASSES, &POS_STARTS)
        };
        let p = classes[c as usize].p as usize;
        let mut rem: u128 = 0;
        if p > 0 {
            let payload = self.take(p)?;
            let invert = if neg { 0xff } else { 0 } ^ self.mask;
            let last = payload[p - 1] ^ invert;
            if last == 0 || last == 0xff {
                return Err(self.err(
                    self.pos - 1,
                    format!("integer payload ends in 0x{last:02x}"),
                ));
            }
            let mut q: u128 = 0;
            for b in &payload[..p - 1] {
                q = (q << 8) | (b ^ invert) as u128;
            }
            rem = q * 254 + (last - 1) as u128;
        }
        let m = starts[c as usize]
            .checked_add(k as u128 * per_tag(p as u8))
            .and_then(|x| x.checked_add(rem))
            .filter(|m| *m <= i128::MAX as u128)
            .ok_or_else(|| self.err(at, "integer out of range"))?;
        Ok(if neg { !(m as i128) } else { m as i128 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table lookup finds the class that a linear search finds, for every bit length.
    #[test]
    fn class_by_bits_is_exact() {
        for (starts, starts64, by_bits) in [
            (&POS_STARTS, &POS_STARTS64, &POS_CLASS_BY_BITS),
            (&NEG_STARTS, &NEG_STARTS64, &NEG_CLASS_BY_BITS),
        ] {
            for l in 1..=63u32 {
                let lo = 1u64 << (l - 1);
                let hi = (1u64 << l) - 1;
                for m in [lo, lo + 1, hi - 1, hi] {
                    let want = class_of(m as u128, starts);
                    let c = by_bits[l as usize] as usize;
                    let got = c + usize::from(m >= starts64[c + 1]);
                    assert_eq!(got, want, "m = {m}");
                }
                // The class can change at most once within one bit length.
                assert!(class_of(hi as u128, starts) - class_of(lo as u128, starts) <= 1);
            }
        }
    }
}
