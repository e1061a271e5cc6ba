//! Exact addition and subtraction: the result is exact or an error, never rounded.

use std::ops::Neg;

use super::{Decimal, DecimalError, POW10};

impl Decimal {
    /// `self + other`, exact. Fails with [`DecimalError::TooManyDigits`] when the exact sum
    /// needs more than 38 significant digits (`1e50 + 1`), or with an overflow/underflow
    /// error when it leaves the exponent range.
    ///
    /// ```
    /// use strata_key::Decimal;
    /// let d = |s: &str| s.parse::<Decimal>().unwrap();
    /// assert_eq!(d("1").checked_add(d("1e22")).unwrap(), d("10000000000000000000001"));
    /// assert_eq!(d("0.1").checked_add(d("0.2")).unwrap(), d("0.3"));
    /// assert!(d("1e50").checked_add(d("1")).is_err());
    /// ```
    pub fn checked_add(self, other: Decimal) -> Result<Decimal, DecimalError> {
        if other.coeff == 0 {
            return Ok(self);
        }
        if self.coeff == 0 {
            return Ok(other);
        }
        // `hi` has the larger exponent of its last digit; d = how far apart they are.
        let (hi, lo) = if self.exp >= other.exp {
            (self, other)
        } else {
            (other, self)
        };
        let d = (i64::from(hi.exp) - i64::from(lo.exp)) as u64;
        // When d ≥ 1 the sum's last digit is lo's (non-zero): the sum has no trailing zero,
        // and if hi × 10^d does not fit a u128 (or d > 38) the sum is above 2.4 × 10^38 in
        // coefficient units, so it has more than 38 significant digits.
        let too_many = DecimalError::TooManyDigits {
            digits: u64::from(Decimal::MAX_DIGITS) + 1,
        };
        let scaled = POW10
            .get(d as usize)
            .and_then(|p| hi.coeff.checked_mul(*p))
            .ok_or(too_many.clone())?;
        let (neg, coeff) = if hi.neg == lo.neg {
            (hi.neg, scaled.checked_add(lo.coeff).ok_or(too_many)?)
        } else if scaled >= lo.coeff {
            (hi.neg, scaled - lo.coeff)
        } else {
            (lo.neg, lo.coeff - scaled)
        };
        Decimal::normalise(neg, coeff, i64::from(lo.exp))
    }

    /// `self − other`, exact (see [`Decimal::checked_add`]).
    pub fn checked_sub(self, other: Decimal) -> Result<Decimal, DecimalError> {
        self.checked_add(-other)
    }
}

impl Neg for Decimal {
    type Output = Decimal;
    fn neg(self) -> Decimal {
        Decimal {
            neg: !self.neg && self.coeff != 0,
            ..self
        }
    }
}
