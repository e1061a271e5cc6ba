//! Decimal elements of the native codec (tag `7e`); the format is in `docs/FORMAT.md`
//! ("Decimals").
//!
//! After the tag, one *class* byte: `80` is zero (and ends the element). A positive number has
//! a class in `81..=ff` followed by its scientific exponent (inline in the class for
//! −62…62, else as a native integer after an escape class) and its digits in base 100, two
//! digits a byte written `2d + 1`, the last byte `2d` (so the digits end themselves and the
//! last byte is in `02..=c6`). A negative number is the bitwise complement of its absolute
//! value's encoding (after the tag), so its class is in `00..=7e`: complementing a prefix-free
//! code reverses its order. The same design as SQLite4's and CockroachDB's decimal keys, with
//! a decimal (not centesimal) exponent so that no digit pair straddles the decimal point.

use super::{encode_int, Reader, TAG_DECIMAL};
use crate::decimal::{digit_count, Decimal};
use crate::error::DecodeError;

/// Class byte of zero.
const ZERO: u8 = 0x80;
/// Class of positive numbers whose exponent is below the inline range (an integer follows).
const SMALL: u8 = 0x81;
/// Class of the inline exponent [`INLINE_MIN`]; classes up to `fe` hold the next exponents.
const INLINE_FIRST: u8 = 0x82;
/// Class of positive numbers whose exponent is above the inline range (an integer follows).
const LARGE: u8 = 0xff;
/// Smallest scientific exponent held in the class byte.
const INLINE_MIN: i32 = -62;
/// Largest scientific exponent held in the class byte.
const INLINE_MAX: i32 = 62;
const _: () = assert!(INLINE_FIRST as i32 + INLINE_MAX - INLINE_MIN == 0xfe);

/// Most digit bytes a decimal has (38 digits, two a byte).
const MAX_PAIRS: usize = 19;

/// Appends a decimal element (tag included), ascending.
pub(crate) fn put_decimal(out: &mut Vec<u8>, d: &Decimal) {
    out.push(TAG_DECIMAL);
    if d.is_zero() {
        out.push(ZERO);
        return;
    }
    let start = out.len();
    let sci = d.scientific_exponent();
    if sci < INLINE_MIN {
        out.push(SMALL);
        encode_int(i128::from(sci - INLINE_MIN), out); // ≤ −1
    } else if sci > INLINE_MAX {
        out.push(LARGE);
        encode_int(i128::from(sci - INLINE_MAX - 1), out); // ≥ 0
    } else {
        out.push(INLINE_FIRST + (sci - INLINE_MIN) as u8);
    }
    put_digits(out, d.coefficient());
    if d.is_negative() {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

/// The digits of `c > 0` (no trailing zero, ≤ 38 digits) two a byte, left-aligned: an odd count
/// is padded with one zero digit on the right.
#[inline]
fn put_digits(out: &mut Vec<u8>, c: u128) {
    let n = digit_count(c) as usize;
    let (mut c, pairs) = if n % 2 == 1 {
        (c * 10, n.div_ceil(2))
    } else {
        (c, n / 2)
    };
    let mut buf = [0u8; MAX_PAIRS];
    let mut i = pairs;
    // Two-digit groups from the right; u64 arithmetic once the rest fits.
    while c > u128::from(u64::MAX) {
        i -= 1;
        buf[i] = (c % 100) as u8 * 2 + 1;
        c /= 100;
    }
    let mut c = c as u64;
    while i > 0 {
        i -= 1;
        buf[i] = (c % 100) as u8 * 2 + 1;
        c /= 100;
    }
    buf[pairs - 1] -= 1;
    out.extend_from_slice(&buf[..pairs]);
}

impl Reader<'_> {
    /// Reads a decimal after its tag. Only the canonical encoding is accepted.
    pub(crate) fn decimal_after_tag(&mut self) -> Result<Decimal, DecodeError> {
        let at = self.pos;
        let class = self.byte()?;
        if class == ZERO {
            return Ok(Decimal::ZERO);
        }
        if class == !ZERO {
            return Err(self.err(at, "0x7f is not a decimal class byte"));
        }
        let neg = class < ZERO;
        let saved = self.mask;
        if neg {
            // A negative number's bytes are complemented once more.
            self.mask ^= 0xff;
        }
        let magnitude = self.decimal_magnitude(if neg { !class } else { class });
        self.mask = saved;
        let (coeff, exp) = magnitude?;
        Ok(Decimal::from_canonical(neg, coeff, exp))
    }

    /// Exponent and digits of a positive number whose class byte (`81..=ff`) was just read.
    fn decimal_magnitude(&mut self, class: u8) -> Result<(u128, i32), DecodeError> {
        let sci = match class {
            SMALL | LARGE => {
                let e_at = self.pos;
                let e = self.sub_int()?;
                let (ok, sci) = if class == SMALL {
                    (e < 0, e + i128::from(INLINE_MIN))
                } else {
                    (e >= 0, e + i128::from(INLINE_MAX) + 1)
                };
                if !ok {
                    return Err(self.err(
                        e_at,
                        "decimal exponent written after an escape class, but the class byte holds it",
                    ));
                }
                if !(i128::from(Decimal::MIN_EXPONENT)..=i128::from(Decimal::MAX_EXPONENT))
                    .contains(&sci)
                {
                    return Err(self.err(e_at, format!("decimal exponent {sci} out of range")));
                }
                sci as i32
            }
            c => i32::from(c - INLINE_FIRST) + INLINE_MIN,
        };
        let mut coeff: u128 = 0;
        let mut digits: i32 = 0;
        loop {
            let b_at = self.pos;
            let b = self.byte()?;
            let pair = b >> 1;
            if pair > 99 {
                return Err(self.err(b_at, format!("0x{b:02x} is not a decimal digit byte")));
            }
            if digits == 0 && pair < 10 {
                return Err(self.err(b_at, "decimal digits start with a zero"));
            }
            if digits as usize == 2 * MAX_PAIRS {
                return Err(self.err(b_at, "more than 38 decimal digits"));
            }
            coeff = coeff * 100 + u128::from(pair);
            digits += 2;
            if b & 1 == 0 {
                // The last byte: it ends the digits, which end in a non-zero digit.
                if pair == 0 {
                    return Err(self.err(b_at, "decimal digits end in zeros"));
                }
                if pair % 10 == 0 {
                    coeff /= 10;
                    digits -= 1;
                }
                return Ok((coeff, sci - (digits - 1)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The examples printed in docs/FORMAT.md.
    #[test]
    fn documented_bytes() {
        for (s, h) in [
            ("0", "7e80"),
            ("1", "7ec014"),
            ("-1", "7e3feb"),
            ("1.5", "7ec01e"),
            ("613", "7ec27b3c"),
            ("-613", "7e3d84c3"),
            ("0.001", "7ebd14"),
            ("1700000000000", "7ecc22"),
            (
                "0.1234567890123456789012345",
                "7ebf1945719db51945719db5194564",
            ),
            ("1e100", "7eff3f0e14"),
            ("1e-100", "7e811ee114"),
        ] {
            let d: Decimal = s.parse().unwrap();
            let mut out = Vec::new();
            put_decimal(&mut out, &d);
            assert_eq!(hex::encode(&out), h, "{s}");
        }
    }
}
