//! Fixed-width payloads: f64 and UUID, each with a second tag that pays for the base-254 last
//! digit (see `docs/FORMAT.md`, "Floats" and "UUIDs").

use super::put::Out;
use super::{
    ordered_f64, unordered_f64, Reader, TAG_F64, TAG_F64_HI, TAG_UUID, TAG_UUID_HI, TRAILER,
};
use crate::error::DecodeError;

/// Payload capacity of one f64 tag: 254 × 256^7 (the last byte is a digit `01..fe`).
const F64_CAP: u64 = 254 << 56;

/// An f64: tag `0x76` or `0x77` (the tag holds whether the ordered bits are ≥ [`F64_CAP`]),
/// then 8 bytes: `rem / 254` big-endian in 7 bytes and `rem % 254 + 1`.
#[inline]
pub(crate) fn put_f64(out: &mut Vec<u8>, f: f64) {
    let u = ordered_f64(f);
    let hi = u >= F64_CAP;
    let rem = if hi { u - F64_CAP } else { u };
    out.push(TAG_F64 + hi as u8);
    let q = (rem / 254).to_be_bytes();
    out.extend_from_slice(&q[1..]);
    out.push((rem % 254) as u8 + 1);
}

/// A UUID: tag `0x7a` or `0x7b` (whether the 128-bit value is ≥ 254 × 256^15), then 16 bytes:
/// the rest divided by 254 in 15 bytes, and the remainder + 1. One 16-byte store of the tag and
/// the quotient, one byte store of the digit, one capacity check.
#[inline(always)]
pub(crate) fn put_uuid<O: Out>(out: &mut O, b: &[u8; 16]) {
    let (head, last) = uuid_element(b);
    // SAFETY: 17 = N bytes are stored (0..16 by the unaligned 16-byte write, 16 by the byte
    // write) and the element is 17 bytes long, so `n <= N` and all of `0..n` is initialised.
    // Tested by `uuid_element_matches_the_division` and every UUID vector and property test.
    unsafe {
        out.put_raw::<17>(17, |p| {
            p.cast::<[u8; 16]>().write_unaligned(head.to_be_bytes());
            p.add(16).write(last);
        })
    }
}

/// The UUID element of `b`: its first 16 bytes (tag and quotient) as a big-endian word, and its
/// last byte (the digit).
#[inline(always)]
fn uuid_element(b: &[u8; 16]) -> (u128, u8) {
    // 254 × 256^15 ≤ u < 256^16 exactly when the first byte is 0xfe or 0xff.
    let hi = b[0] >= 0xfe;
    let mut u = u128::from_be_bytes(*b);
    if hi {
        u -= 0xfe << 120;
    }
    // u / 254 with three 64-bit divisions by a constant (each a multiply), not a u128 division.
    let (h, l) = ((u >> 64) as u64, u as u64);
    let (qh, rh) = (h / 254, h % 254);
    let x = (rh << 32) | (l >> 32);
    let (q1, r1) = (x / 254, x % 254);
    let y = (r1 << 32) | (l & 0xffff_ffff);
    let (q2, r) = (y / 254, y % 254);
    let q = ((qh as u128) << 64) | ((q1 as u128) << 32) | q2 as u128;
    // q < 256^15: its top byte is 0, where the tag goes.
    let tag = (TAG_UUID + hi as u8) as u128;
    ((tag << 120) | q, r as u8 + 1)
}

impl Reader<'_> {
    /// The last payload byte of a base-254 payload: a digit `01..fe`.
    fn digit(&mut self) -> Result<u8, DecodeError> {
        let at = self.pos;
        match self.byte()? {
            d @ 0x01..=0xfe => Ok(d - 1),
            d => Err(self.err(at, format!("payload ends in 0x{d:02x}"))),
        }
    }

    pub(crate) fn f64_after_tag(&mut self, tag: u8) -> Result<f64, DecodeError> {
        let b = self.take(7)?;
        let mut a = [0u8; 8];
        for (d, s) in a[1..].iter_mut().zip(b) {
            *d = s ^ self.mask;
        }
        let r = self.digit()?;
        let q = u64::from_be_bytes(a);
        let mut u = q * 254 + r as u64;
        if tag == TAG_F64_HI {
            u = u
                .checked_add(F64_CAP)
                .ok_or_else(|| self.err(self.pos - 8, "f64 payload out of range"))?;
        }
        Ok(unordered_f64(u))
    }

    /// A UUID element's 16 bytes after its tag `tag` (the reader after the tag).
    #[inline(always)]
    pub(crate) fn uuid_after_tag(&mut self, tag: u8) -> Result<[u8; 16], DecodeError> {
        // The common case: 16 payload bytes in one load, the digit checked, one multiply.
        if let Some(w) = self
            .bytes
            .get(self.pos..)
            .and_then(|b| b.first_chunk::<16>())
        {
            let w = u128::from_be_bytes(*w) ^ u128::from_ne_bytes([self.mask; 16]);
            let d = (w as u8).wrapping_sub(1);
            if d < 254 {
                // The quotient (the top 15 bytes) is below 256^15, so no overflow here.
                let u = (w >> 8) * 254 + d as u128;
                let u = if tag == TAG_UUID_HI {
                    u.checked_add(0xfe << 120)
                } else {
                    Some(u)
                };
                if let Some(u) = u {
                    self.pos += 16;
                    return Ok(u.to_be_bytes());
                }
            }
        }
        self.uuid_general(tag)
    }

    /// [`Reader::uuid_after_tag`] byte by byte: short keys and every error.
    #[cold]
    #[inline(never)]
    fn uuid_general(&mut self, tag: u8) -> Result<[u8; 16], DecodeError> {
        let at = self.pos;
        let b = self.take(15)?;
        let mut q = [0u8; 15];
        for (d, s) in q.iter_mut().zip(b) {
            *d = s ^ self.mask;
        }
        let r = self.digit()?;
        let mut qb = [0u8; 16];
        qb[1..].copy_from_slice(&q);
        // q < 256^15, so q × 254 + r < 254 × 256^15: no overflow.
        let mut u = u128::from_be_bytes(qb) * 254 + r as u128;
        if tag == TAG_UUID_HI {
            u = u
                .checked_add(0xfe << 120)
                .ok_or_else(|| self.err(at, "uuid payload out of range"))?;
        }
        Ok(u.to_be_bytes())
    }

    pub(crate) fn trailer(&mut self) -> Result<(), DecodeError> {
        let at = self.pos;
        match self.byte()? {
            TRAILER => Ok(()),
            b => Err(self.err(at, format!("bad trailer 0x{b:02x} (expected 0x01)"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The element of the word arithmetic is the one of a u128 division, for edge and spread
    /// values; and it reads back (fast path) to the same bytes.
    #[test]
    fn uuid_element_matches_the_division() {
        let mut vals: Vec<u128> = vec![0, 1, 253, 254, 255, u128::MAX, u128::MAX - 1];
        vals.extend([0xfe << 120, (0xfe << 120) - 1, 0xfd << 120, 0xff << 120]);
        let mut x = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834u128;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(0x2545_f491_4f6c_dd1d_2545_f491_4f6c_dd1d)
                .wrapping_add(1);
            vals.push(x);
            vals.push(x | (0xfe << 120));
        }
        for v in vals {
            let b = v.to_be_bytes();
            let hi = b[0] >= 0xfe;
            let u = if hi { v - (0xfe << 120) } else { v };
            let mut want = vec![TAG_UUID + hi as u8];
            want.extend_from_slice(&(u / 254).to_be_bytes()[1..]);
            want.push((u % 254) as u8 + 1);
            let mut got = Vec::new();
            put_uuid(&mut got, &b);
            assert_eq!(got, want, "{v:032x}");
            let mut r = Reader::new(&got);
            r.pos = 1;
            assert_eq!(r.uuid_after_tag(got[0]).unwrap(), b, "{v:032x}");
            assert_eq!(r.pos, 17);
            // Descending: the complement reads back with the mask set.
            let desc: Vec<u8> = got.iter().map(|x| !x).collect();
            let mut r = Reader::new(&desc);
            r.mask = 0xff;
            r.pos = 1;
            assert_eq!(r.uuid_after_tag(got[0]).unwrap(), b, "{v:032x}");
        }
    }

    /// The digit byte must be `01..fe` (each UUID has one encoding): every other value is an
    /// error naming the digit's offset, in both directions, on the fast path (a longer key)
    /// and the byte-by-byte one (the element at the key's end).
    #[test]
    fn uuid_digit_outside_01_fe_is_an_error() {
        let mut el = Vec::new();
        put_uuid(
            &mut el,
            &0x0123_4567_89ab_cdef_0123_4567_89ab_cdefu128.to_be_bytes(),
        );
        for last in 0..=255u8 {
            for tail in [0usize, 3] {
                for mask in [0u8, 0xff] {
                    let mut k: Vec<u8> = el.iter().map(|x| x ^ mask).collect();
                    k[16] = last;
                    k.extend(std::iter::repeat_n(0x41, tail));
                    let mut r = Reader::new(&k);
                    r.mask = mask;
                    r.pos = 1;
                    let got = r.uuid_after_tag(el[0]);
                    let digit = last ^ mask;
                    if (0x01..=0xfe).contains(&digit) {
                        assert!(got.is_ok(), "digit {digit:02x}");
                    } else {
                        let e = got.unwrap_err();
                        assert_eq!(e.offset, 16, "{e}");
                        assert!(e.reason.contains("payload ends in"), "{e}");
                    }
                }
            }
        }
    }
}
