//! [`Decimal`]: an exact decimal number (up to 38 significant digits), with one representation
//! per number and numeric order.
//!
//! This is the number of DynamoDB's `N` type (and of SQL's `DECIMAL`): `0.1` is one tenth, not
//! the nearest binary fraction, and `0.1234567890123456789012345` comes back unchanged.
//!
//! # Bounds of the type
//! * at most [`Decimal::MAX_DIGITS`] (38) significant digits;
//! * a scientific exponent (the power of ten of the leading digit: `1.5e3` has 3, `0.05` has
//!   −2) within [`Decimal::MIN_EXPONENT`]`..=`[`Decimal::MAX_EXPONENT`] (±999,999).
//!
//! Values beyond them are refused with a [`DecimalError`] (never rounded). DynamoDB's narrower
//! limits (exponent −130…+125) are for the layer that speaks DynamoDB to check.
//!
//! # Canonical form
//! A value is `(−1)^negative × coefficient × 10^exponent` with no trailing zero in the
//! coefficient, and zero is unsigned with exponent 0: `1.50`, `15e-1` and `+1.5` are one value;
//! `-0` is `0`. So `==`, [`Hash`] and [`Ord`] agree, and every number has one key encoding.
//!
//! ```
//! use strata_key::Decimal;
//! let a: Decimal = "1.50".parse().unwrap();
//! assert_eq!(a, "15e-1".parse().unwrap());
//! assert_eq!(a.to_string(), "1.5");
//! assert!("-2".parse::<Decimal>().unwrap() < "0.001".parse().unwrap());
//! assert_eq!("0.1234567890123456789012345".parse::<Decimal>().unwrap().to_string(),
//!            "0.1234567890123456789012345");
//! ```

mod arith;
mod serde_impl;
mod text;

use std::cmp::Ordering;
use std::fmt;

pub(crate) use serde_impl::{capture as serde_capture, SERDE_TOKEN};

/// An exact decimal number; see the [module docs](self) for its bounds and canonical form.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Decimal {
    /// Significant digits, without trailing zeros (0 only for zero).
    coeff: u128,
    /// Power of ten of the last significant digit (0 for zero).
    exp: i32,
    /// Sign (false for zero).
    neg: bool,
}

/// Why a string or a set of parts is not a [`Decimal`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    /// Not the syntax of a decimal number.
    #[error("not a number: {reason}")]
    Syntax {
        /// What is wrong, and where.
        reason: String,
    },
    /// More significant digits than the type keeps (leading and trailing zeros do not count).
    #[error("{digits} significant digits: at most 38 are supported")]
    TooManyDigits {
        /// Significant digits of the value.
        digits: u64,
    },
    /// The magnitude is too large: the scientific exponent is above [`Decimal::MAX_EXPONENT`].
    #[error("number overflow: exponent {exponent} is above the largest supported, 999999")]
    Overflow {
        /// Scientific exponent of the value (saturated for absurd inputs).
        exponent: i64,
    },
    /// The magnitude is too small (not zero): the scientific exponent is below
    /// [`Decimal::MIN_EXPONENT`].
    #[error("number underflow: exponent {exponent} is below the smallest supported, -999999")]
    Underflow {
        /// Scientific exponent of the value (saturated for absurd inputs).
        exponent: i64,
    },
}

/// `10^i` for `i` in `0..=38`.
pub(crate) const POW10: [u128; 39] = {
    let mut t = [1u128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// Number of decimal digits of `c > 0`.
#[inline]
pub(crate) fn digit_count(c: u128) -> u32 {
    c.ilog10() + 1
}

impl Decimal {
    /// Zero.
    pub const ZERO: Decimal = Decimal {
        coeff: 0,
        exp: 0,
        neg: false,
    };
    /// Most significant digits a value may have.
    pub const MAX_DIGITS: u32 = 38;
    /// Largest scientific exponent: every value is below `10^1,000,000` in magnitude.
    pub const MAX_EXPONENT: i32 = 999_999;
    /// Smallest scientific exponent: every non-zero value is at least `10^−999,999` in
    /// magnitude.
    pub const MIN_EXPONENT: i32 = -999_999;

    /// The value `(−1)^negative × coefficient × 10^exponent`, normalised (trailing zeros of the
    /// coefficient moved into the exponent; a zero coefficient gives zero whatever the sign).
    ///
    /// ```
    /// use strata_key::Decimal;
    /// let d = Decimal::from_parts(true, 1500, -3).unwrap();
    /// assert_eq!(d.to_string(), "-1.5");
    /// assert_eq!((d.is_negative(), d.coefficient(), d.exponent()), (true, 15, -1));
    /// assert!(Decimal::from_parts(false, u128::MAX, 0).is_err()); // 39 digits
    /// ```
    pub fn from_parts(
        negative: bool,
        coefficient: u128,
        exponent: i32,
    ) -> Result<Self, DecimalError> {
        Decimal::normalise(negative, coefficient, i64::from(exponent))
    }

    /// Normalises and checks the bounds; `exp` may be anything (saturated inputs included).
    pub(crate) fn normalise(
        neg: bool,
        mut coeff: u128,
        mut exp: i64,
    ) -> Result<Self, DecimalError> {
        if coeff == 0 {
            return Ok(Decimal::ZERO);
        }
        // Strip trailing zeros, eight at a time first.
        while coeff.is_multiple_of(100_000_000) {
            coeff /= 100_000_000;
            exp = exp.saturating_add(8);
        }
        while coeff.is_multiple_of(10) {
            coeff /= 10;
            exp = exp.saturating_add(1);
        }
        let digits = digit_count(coeff);
        if digits > Decimal::MAX_DIGITS {
            return Err(DecimalError::TooManyDigits {
                digits: u64::from(digits),
            });
        }
        let sci = exp.saturating_add(i64::from(digits) - 1);
        check_exponent(sci)?;
        Ok(Decimal {
            coeff,
            exp: exp as i32,
            neg,
        })
    }

    /// Builds a value from parts that are already canonical (the decoders' path).
    pub(crate) fn from_canonical(neg: bool, coeff: u128, exp: i32) -> Decimal {
        debug_assert!(
            coeff != 0 && !coeff.is_multiple_of(10) && digit_count(coeff) <= Self::MAX_DIGITS
        );
        Decimal { coeff, exp, neg }
    }

    /// True below zero.
    pub fn is_negative(&self) -> bool {
        self.neg
    }

    /// True for zero.
    pub fn is_zero(&self) -> bool {
        self.coeff == 0
    }

    /// True when the value is a whole number.
    pub fn is_integer(&self) -> bool {
        self.exp >= 0
    }

    /// The significant digits as an integer, without trailing zeros (0 for zero).
    pub fn coefficient(&self) -> u128 {
        self.coeff
    }

    /// The power of ten of the last significant digit: the value is
    /// `±coefficient × 10^exponent` (0 for zero).
    pub fn exponent(&self) -> i32 {
        self.exp
    }

    /// Number of significant digits (0 for zero).
    pub fn digits(&self) -> u32 {
        if self.coeff == 0 {
            0
        } else {
            digit_count(self.coeff)
        }
    }

    /// The power of ten of the leading digit (`1.5e3` → 3, `0.05` → −2); 0 for zero.
    pub fn scientific_exponent(&self) -> i32 {
        if self.coeff == 0 {
            0
        } else {
            self.exp + digit_count(self.coeff) as i32 - 1
        }
    }

    /// The absolute value.
    pub fn abs(self) -> Decimal {
        Decimal { neg: false, ..self }
    }

    /// The value as an `i128`, when it is a whole number that fits.
    pub fn to_i128(&self) -> Option<i128> {
        if self.exp < 0 {
            return None;
        }
        let m = self.coeff.checked_mul(*POW10.get(self.exp as usize)?)?;
        let m = i128::try_from(m).ok()?;
        Some(if self.neg { -m } else { m })
    }

    /// The nearest `f64` (lossy; ±∞ beyond its range, ±0 below it).
    pub fn to_f64(&self) -> f64 {
        // Rust's float parser rounds correctly.
        self.to_string().parse().unwrap_or(f64::NAN)
    }

    /// Compares magnitudes.
    fn cmp_abs(&self, other: &Decimal) -> Ordering {
        match (self.coeff == 0, other.coeff == 0) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        let (da, db) = (digit_count(self.coeff), digit_count(other.coeff));
        let sa = i64::from(self.exp) + i64::from(da);
        let sb = i64::from(other.exp) + i64::from(db);
        sa.cmp(&sb).then_with(|| {
            // Same leading power: compare the digits aligned on the left (both ≤ 38 digits).
            if da < db {
                (self.coeff * POW10[(db - da) as usize]).cmp(&other.coeff)
            } else {
                self.coeff.cmp(&(other.coeff * POW10[(da - db) as usize]))
            }
        })
    }
}

/// Checks a scientific exponent against the type's bounds.
pub(crate) fn check_exponent(sci: i64) -> Result<(), DecimalError> {
    if sci > i64::from(Decimal::MAX_EXPONENT) {
        Err(DecimalError::Overflow { exponent: sci })
    } else if sci < i64::from(Decimal::MIN_EXPONENT) {
        Err(DecimalError::Underflow { exponent: sci })
    } else {
        Ok(())
    }
}

impl Ord for Decimal {
    /// Numeric order.
    fn cmp(&self, other: &Decimal) -> Ordering {
        let sign = |d: &Decimal| -> i8 {
            if d.coeff == 0 {
                0
            } else if d.neg {
                -1
            } else {
                1
            }
        };
        sign(self).cmp(&sign(other)).then_with(|| {
            let m = self.cmp_abs(other);
            if self.neg {
                m.reverse()
            } else {
                m
            }
        })
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Decimal({self})")
    }
}

macro_rules! from_small_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Decimal {
            fn from(v: $t) -> Decimal {
                let neg = (v as i128) < 0;
                // At most 20 digits: always within the bounds.
                Decimal::normalise(neg, (v as i128).unsigned_abs(), 0).unwrap_or(Decimal::ZERO)
            }
        }
    )*};
}
from_small_int!(i8, i16, i32, i64, u8, u16, u32, u64, isize, usize);

impl TryFrom<i128> for Decimal {
    type Error = DecimalError;
    /// Exact; fails only for integers of 39 significant digits.
    fn try_from(v: i128) -> Result<Decimal, DecimalError> {
        Decimal::normalise(v < 0, v.unsigned_abs(), 0)
    }
}

#[cfg(test)]
mod tests;
