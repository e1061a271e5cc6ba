//! Strings (bytes and text): the prefix-free code of `docs/FORMAT.md`, "Strings".
//!
//! Both directions work eight bytes at a time (SWAR on a `u64`): a string whose bytes are all
//! "plain" (`00..fb` to encode, `02..fd` to decode) is shifted by adding or subtracting
//! `0x02` in every byte of the word at once, which never carries or borrows across bytes for
//! plain bytes. Words holding anything else, and the last `len % 8` bytes, go byte by byte.

use super::{Reader, STR_END, STR_HIGH, STR_SHIFT};
use crate::error::DecodeError;

/// `0x01` in every byte.
const ONES: u64 = 0x0101_0101_0101_0101;
/// `0x80` in every byte.
const HIGHS: u64 = 0x8080_8080_8080_8080;
/// [`STR_SHIFT`] in every byte.
const SHIFTS: u64 = ONES * STR_SHIFT as u64;

/// True when some byte of `x` is `≥ 0xfc` (its six high bits all set). Shifts of at most five
/// bits never move a bit into another byte's bit 7, so the test is exact.
#[inline(always)]
fn any_ge_fc(x: u64) -> bool {
    let t = x & (x << 1); // bit 7: b7 & b6
    let t = t & (t << 2); // bit 7: b7..b4
    let t = t & (t << 2); // bit 7: b7..b2
    t & HIGHS != 0
}

/// Bit 7 set in the lowest byte of `x` that is not plain in an encoded string (`00`, `01`,
/// `fe`, `ff`); bits above the lowest such byte may be false positives, so only the lowest set
/// bit is meaningful (the classic "has less than" test, on `x` and on `!x`).
#[inline(always)]
fn special_bytes(x: u64) -> u64 {
    let low = x.wrapping_sub(ONES * 2) & !x & HIGHS; // bytes < 2
    let high = (!x).wrapping_sub(ONES * 2) & x & HIGHS; // bytes > 0xfd
    low | high
}

/// A string: each byte `b < 0xfc` as `b + 2`, each byte `b ≥ 0xfc` as `fe, b − 0xfa`, then
/// the terminator `01`. The code is prefix-free (no content byte is below `02`), keeps byte
/// order, and never ends in `00` or `ff`. UTF-8 text never has a byte `≥ 0xf8`, so text costs
/// exactly `len + 2`.
#[inline]
pub(crate) fn put_escaped(out: &mut Vec<u8>, s: &[u8]) {
    // The common case (no byte ≥ 0xfc) writes n + 1 bytes, in whole words: the last word is
    // the tail padded with the terminator, written in full and cut back.
    out.reserve(s.len() + 8);
    let mut words = s.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        let x = u64::from_le_bytes(a);
        if any_ge_fc(x) {
            put_escaped_bytes(out, w);
        } else {
            out.extend_from_slice(&(x + SHIFTS).to_le_bytes());
        }
    }
    let tail = words.remainder();
    let mut x = 0u64;
    for (i, &b) in tail.iter().enumerate() {
        x |= u64::from(b) << (8 * i);
    }
    if any_ge_fc(x) {
        put_escaped_bytes(out, tail);
        out.push(STR_END);
        return;
    }
    // tail.len() < 8 content lanes, then the terminator, then padding cut off below.
    let len = out.len();
    let lanes = 8 * tail.len() as u32;
    let content = (1u64 << lanes) - 1;
    let word = ((x + SHIFTS) & content) | (u64::from(STR_END) << lanes);
    out.extend_from_slice(&word.to_le_bytes());
    out.truncate(len + tail.len() + 1);
}

#[inline(never)]
fn put_escaped_bytes(out: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        if b < 0xfc {
            out.push(b + STR_SHIFT);
        } else {
            out.push(STR_HIGH);
            out.push(b - 0xfa);
        }
    }
}

impl Reader<'_> {
    /// A string up to and including its terminator (see [`put_escaped`]), in a new buffer.
    pub(crate) fn escaped(&mut self) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        self.escaped_into(&mut out)?;
        Ok(out)
    }

    /// The length of the run of plain bytes (`02..fd` after the direction mask) at the cursor,
    /// and whether the byte after it is the string's terminator (then the run is the whole
    /// string and no byte needs the slow path).
    #[inline]
    pub(crate) fn plain_run(&self) -> (usize, bool) {
        let mask = u64::from_ne_bytes([self.mask; 8]);
        let bytes = self.bytes;
        let mut i = self.pos;
        while let Some(w) = bytes.get(i..i + 8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            let special = special_bytes(u64::from_le_bytes(a) ^ mask);
            if special != 0 {
                i += special.trailing_zeros() as usize / 8;
                return (i - self.pos, bytes[i] ^ self.mask == STR_END);
            }
            i += 8;
        }
        while i < bytes.len() && matches!(bytes[i] ^ self.mask, 0x02..=0xfd) {
            i += 1;
        }
        let terminated = bytes.get(i).is_some_and(|b| b ^ self.mask == STR_END);
        (i - self.pos, terminated)
    }

    /// Writes the next `out.len()` bytes at the cursor, which [`Reader::plain_run`] found
    /// plain, unshifted into `out`, and moves the cursor past them.
    #[inline]
    pub(crate) fn unshift_plain(&mut self, out: &mut [u8]) {
        let n = out.len();
        let plain = &self.bytes[self.pos..self.pos + n];
        let mask = u64::from_ne_bytes([self.mask; 8]);
        let mut src = plain.chunks_exact(8);
        let mut dst = out.chunks_exact_mut(8);
        for (d, w) in (&mut dst).zip(&mut src) {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            d.copy_from_slice(&((u64::from_le_bytes(a) ^ mask) - SHIFTS).to_le_bytes());
        }
        for (d, b) in dst.into_remainder().iter_mut().zip(src.remainder()) {
            *d = (b ^ self.mask) - STR_SHIFT;
        }
        self.pos += n;
    }

    /// Appends the next `n` bytes at the cursor, which [`Reader::plain_run`] found plain,
    /// unshifted to `out`, a word at a time (the last word padded and cut back), and moves the
    /// cursor past them.
    #[inline]
    fn unshift_plain_vec(&mut self, n: usize, out: &mut Vec<u8>) {
        let plain = &self.bytes[self.pos..self.pos + n];
        let mask = u64::from_ne_bytes([self.mask; 8]);
        out.reserve(n + 8);
        let mut words = plain.chunks_exact(8);
        for w in &mut words {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            out.extend_from_slice(&((u64::from_le_bytes(a) ^ mask) - SHIFTS).to_le_bytes());
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let mut x = 0u64;
            for (i, &b) in tail.iter().enumerate() {
                x |= u64::from(b) << (8 * i);
            }
            // Content lanes are ≥ 2 once unmasked: no borrow leaves them (a borrow only moves
            // up, into the padding that is cut off).
            let len = out.len();
            out.extend_from_slice(&((x ^ mask).wrapping_sub(SHIFTS)).to_le_bytes());
            out.truncate(len + tail.len());
        }
        self.pos += n;
    }

    /// Index of the terminator of the string at the cursor (`01`, or `fe` in a descending
    /// element: that byte appears nowhere else in a string).
    pub(crate) fn string_end(&self) -> Result<usize, DecodeError> {
        memchr::memchr(STR_END ^ self.mask, &self.bytes[self.pos..])
            .map(|i| self.pos + i)
            .ok_or_else(|| self.err(self.bytes.len(), "string without its terminator"))
    }

    /// Decodes the string content from the cursor to `end` (its terminator, from
    /// [`Reader::string_end`]) byte by byte into `dst` (at least `end − pos` long: decoding
    /// never lengthens), moves past the terminator, and returns the decoded length.
    pub(crate) fn unescape(&mut self, end: usize, dst: &mut [u8]) -> Result<usize, DecodeError> {
        let mut n = 0;
        while self.pos < end {
            let at = self.pos;
            let b = self.bytes[at] ^ self.mask;
            dst[n] = match b {
                0x02..=0xfd => b - STR_SHIFT,
                STR_HIGH => {
                    self.pos += 1;
                    match self.bytes.get(self.pos).map(|c| c ^ self.mask) {
                        Some(c @ 0x02..=0x05) if self.pos < end => c + 0xfa,
                        _ => return Err(self.err(at + 1, "bad two-byte code in a string")),
                    }
                }
                other => {
                    return Err(
                        self.err(at, format!("byte 0x{other:02x} cannot appear in a string"))
                    )
                }
            };
            n += 1;
            self.pos += 1;
        }
        self.pos = end + 1;
        Ok(n)
    }

    /// Appends the content of the string at the cursor to `out` and moves past its terminator.
    pub(crate) fn escaped_into(&mut self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let (n, terminated) = self.plain_run();
        if terminated {
            self.unshift_plain_vec(n, out);
            self.pos += 1;
            return Ok(());
        }
        let end = self.string_end()?;
        let old = out.len();
        out.resize(old + (end - self.pos), 0);
        let len = self.unescape(end, &mut out[old..])?;
        out.truncate(old + len);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_tests_match_the_byte_rules() {
        // Every byte value in every lane, among plain neighbours.
        for lane in 0..8 {
            for b in 0..=255u8 {
                let mut a = [0x41u8; 8];
                a[lane] = b;
                let x = u64::from_le_bytes(a);
                assert_eq!(any_ge_fc(x), b >= 0xfc, "{b:#x} in lane {lane}");
                let s = special_bytes(x);
                if matches!(b, 0x02..=0xfd) {
                    assert_eq!(s, 0, "{b:#x} in lane {lane}");
                } else {
                    assert_eq!(
                        s.trailing_zeros() as usize / 8,
                        lane,
                        "{b:#x} in lane {lane}"
                    );
                }
            }
        }
        // The lowest flagged byte is exact even with several special bytes.
        let x = u64::from_le_bytes([0x41, 0xff, 0x00, 0x01, 0x41, 0xfe, 0x41, 0x41]);
        assert_eq!(special_bytes(x).trailing_zeros() / 8, 1);
    }

    #[test]
    fn strings_of_every_length_round_trip() {
        for len in 0..40 {
            for fill in [0x00u8, 0x01, 0x41, 0xfb, 0xfc, 0xfd, 0xff] {
                let mut s: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
                if len > 0 {
                    s[len / 2] = fill;
                }
                let mut enc = Vec::new();
                put_escaped(&mut enc, &s);
                let mut dec = Vec::new();
                let mut r = Reader::new(&enc);
                r.escaped_into(&mut dec).unwrap();
                assert_eq!(dec, s);
                assert_eq!(r.pos, enc.len());
                // Complemented (a descending element) too.
                let comp: Vec<u8> = enc.iter().map(|b| !b).collect();
                let mut r = Reader::new(&comp);
                r.mask = 0xff;
                assert_eq!(r.escaped().unwrap(), s);
                assert_eq!(r.pos, enc.len());
            }
        }
    }
}
