//! Fixed-width payloads: f64 and UUID, each with a second tag that pays for the base-254 last
//! digit (see `docs/FORMAT.md`, "Floats" and "UUIDs").

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
/// the rest divided by 254 in 15 bytes, and the remainder + 1.
#[inline]
pub(crate) fn put_uuid(out: &mut Vec<u8>, b: &[u8; 16]) {
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
    let mut buf = [0u8; 17];
    buf[0] = TAG_UUID + hi as u8;
    // q < 256^15: its first byte is 0 and is not written.
    buf[1..16].copy_from_slice(&q.to_be_bytes()[1..]);
    buf[16] = r as u8 + 1;
    out.extend_from_slice(&buf);
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

    pub(crate) fn uuid_after_tag(&mut self, tag: u8) -> Result<[u8; 16], DecodeError> {
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
