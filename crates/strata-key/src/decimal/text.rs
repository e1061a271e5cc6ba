//! Decimal strings: parsing (the syntax DynamoDB and Java's `BigDecimal` accept) and display.

use std::fmt::{self, Write as _};
use std::str::FromStr;

use super::{check_exponent, Decimal, DecimalError};

/// Exponents are read saturating at this magnitude: anything beyond is out of range anyway.
const EXP_SATURATE: i64 = 1_000_000_000_000_000;

fn syntax(reason: impl Into<String>) -> DecimalError {
    DecimalError::Syntax {
        reason: reason.into(),
    }
}

/// Describes the input in an error without echoing megabytes of it.
fn shown(s: &str) -> String {
    const MAX: usize = 40;
    if s.len() <= MAX {
        format!("{s:?}")
    } else {
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{:?}… ({} bytes)", &s[..end], s.len())
    }
}

impl FromStr for Decimal {
    type Err = DecimalError;

    /// Parses `[+-] digits [. digits] [(e|E) [+-] digits]`, where either the integer or the
    /// fraction part may be empty but not both (`5`, `-0.5`, `.5`, `5.`, `+1e3`, `-17.4E37`,
    /// `0001.23`, `0e1000`). No spaces, no `NaN` or `Infinity`, no hexadecimal, no `_`.
    /// Exact: never rounds; too many significant digits or an exponent out of range is an
    /// error.
    fn from_str(s: &str) -> Result<Decimal, DecimalError> {
        let b = s.as_bytes();
        let mut i = 0;
        let neg = match b.first() {
            Some(b'-') => {
                i = 1;
                true
            }
            Some(b'+') => {
                i = 1;
                false
            }
            _ => false,
        };
        let int_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let int = &b[int_start..i];
        let mut frac: &[u8] = &[];
        if b.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            frac = &b[start..i];
        }
        if int.is_empty() && frac.is_empty() {
            return Err(syntax(format!("{} has no digits", shown(s))));
        }
        let mut e: i64 = 0;
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            let eneg = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                e = (e * 10 + i64::from(b[i] - b'0')).min(EXP_SATURATE);
                i += 1;
            }
            if i == start {
                return Err(syntax(format!("{}: the exponent has no digits", shown(s))));
            }
            if eneg {
                e = -e;
            }
        }
        if i != b.len() {
            let c = s[i..].chars().next().unwrap_or('?');
            return Err(syntax(format!(
                "{}: unexpected {c:?} at byte {i}",
                shown(s)
            )));
        }
        // The digits of int ‖ frac, without leading and trailing zeros.
        let digit = |k: usize| {
            if k < int.len() {
                int[k]
            } else {
                frac[k - int.len()]
            }
        };
        let total = int.len() + frac.len();
        let Some(first) = (0..total).find(|&k| digit(k) != b'0') else {
            return Ok(Decimal::ZERO);
        };
        let last = (first..total)
            .rev()
            .find(|&k| digit(k) != b'0')
            .unwrap_or(first);
        let n = last - first + 1;
        if n > Decimal::MAX_DIGITS as usize {
            return Err(DecimalError::TooManyDigits { digits: n as u64 });
        }
        let mut coeff: u128 = 0;
        for k in first..=last {
            coeff = coeff * 10 + u128::from(digit(k) - b'0');
        }
        // The digit at index k stands for 10^(e + int.len() − 1 − k).
        let int_len = i64::try_from(int.len()).unwrap_or(i64::MAX);
        let exp = e
            .saturating_add(int_len)
            .saturating_sub(1)
            .saturating_sub(last as i64);
        let sci = exp.saturating_add(n as i64 - 1);
        check_exponent(sci)?;
        Ok(Decimal::from_canonical(neg, coeff, exp as i32))
    }
}

impl fmt::Display for Decimal {
    /// Plain notation when the scientific exponent is within −7 < e < 21 (`1000`, `0.001`,
    /// `-1.5`), scientific otherwise (`1e+21`, `1.5e-7`): JavaScript's rule for numbers. The
    /// output parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.coeff == 0 {
            return f.pad("0");
        }
        let digits = self.coeff.to_string();
        let n = digits.len() as i64;
        let exp = i64::from(self.exp);
        let sci = exp + n - 1;
        let mut s = String::with_capacity(digits.len() + 12);
        if self.neg {
            s.push('-');
        }
        if sci > -7 && sci < 21 {
            if exp >= 0 {
                s.push_str(&digits);
                s.extend(std::iter::repeat_n('0', exp as usize));
            } else if sci >= 0 {
                let point = (sci + 1) as usize;
                s.push_str(&digits[..point]);
                s.push('.');
                s.push_str(&digits[point..]);
            } else {
                s.push_str("0.");
                s.extend(std::iter::repeat_n('0', (-sci - 1) as usize));
                s.push_str(&digits);
            }
        } else {
            s.push_str(&digits[..1]);
            if n > 1 {
                s.push('.');
                s.push_str(&digits[1..]);
            }
            let _ = write!(
                s,
                "e{}{}",
                if sci < 0 { '-' } else { '+' },
                sci.unsigned_abs()
            );
        }
        f.pad(&s)
    }
}
