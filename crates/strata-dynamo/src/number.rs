//! DynamoDB numbers (`N`): exact decimals ([`strata_key::Decimal`]) with DynamoDB's bounds —
//! at most 38 significant digits, magnitude from 1e-130 to below 1e126 (or zero) — and its
//! error messages.

use strata_key::{Decimal, DecimalError, Value};

use crate::error::ApiError;

/// Largest scientific exponent DynamoDB stores (`9.99…e125`).
pub const MAX_EXPONENT: i32 = 125;
/// Smallest scientific exponent DynamoDB stores (`1e-130`).
pub const MIN_EXPONENT: i32 = -130;

/// The error of a number above the range.
pub fn overflow() -> ApiError {
    ApiError::validation(
        "Number overflow. Attempting to store a number with magnitude larger than supported range",
    )
}

/// The error of a non-zero number below the range.
pub fn underflow() -> ApiError {
    ApiError::validation(
        "Number underflow. Attempting to store a number with magnitude smaller than supported range",
    )
}

fn too_many_digits() -> ApiError {
    ApiError::validation("Attempting to store more than 38 significant digits in a Number")
}

fn from_decimal_error(e: DecimalError, text: &str) -> ApiError {
    match e {
        DecimalError::Syntax { .. } => ApiError::validation(format!(
            "The parameter cannot be converted to a numeric value: {}",
            text.chars().take(64).collect::<String>()
        )),
        DecimalError::TooManyDigits { .. } => too_many_digits(),
        DecimalError::Overflow { .. } => overflow(),
        DecimalError::Underflow { .. } => underflow(),
    }
}

/// Checks a decimal against DynamoDB's range.
pub fn check(d: Decimal) -> Result<Decimal, ApiError> {
    if d.is_zero() {
        return Ok(d);
    }
    let e = d.scientific_exponent();
    if e > MAX_EXPONENT {
        Err(overflow())
    } else if e < MIN_EXPONENT {
        Err(underflow())
    } else {
        Ok(d)
    }
}

/// Parses the text of an `N` value (`"12.5"`, `"-1e3"`, `".5"`, `"+3"`), exactly.
pub fn parse(text: &str) -> Result<Decimal, ApiError> {
    let d = text
        .parse::<Decimal>()
        .map_err(|e| from_decimal_error(e, text))?;
    check(d)
}

/// `a + b`, exact, within DynamoDB's bounds.
pub fn add(a: Decimal, b: Decimal) -> Result<Decimal, ApiError> {
    check(a.checked_add(b).map_err(|e| match e {
        // DynamoDB reports an inexact sum (1e50 + 1) as an overflow.
        DecimalError::TooManyDigits { .. } => overflow(),
        e => from_decimal_error(e, ""),
    })?)
}

/// `a - b`, exact, within DynamoDB's bounds.
pub fn sub(a: Decimal, b: Decimal) -> Result<Decimal, ApiError> {
    add(a, -b)
}

/// The number a stored value stands for: a decimal, or an integer or finite float of a table
/// written by other Strata APIs (when it fits 38 digits).
pub fn of_value(v: &Value) -> Option<Decimal> {
    match v {
        Value::Decimal(d) => Some(*d),
        Value::Int(i) => Decimal::try_from(*i).ok(),
        Value::Float(f) if f.is_finite() => format!("{f:e}").parse().ok(),
        Value::F32(f) if f.is_finite() => format!("{f:e}").parse().ok(),
        _ => None,
    }
}

/// The text of a number: plain notation when the number has at most 40 digits before or 7
/// zeros after the point (every integer of up to 38 digits is written in full), scientific
/// otherwise (`1e+125`, `1.5e-40`). Exact either way.
pub fn format(d: &Decimal) -> String {
    let sci = d.scientific_exponent();
    if d.is_zero() || !(-7..40).contains(&sci) {
        return d.to_string();
    }
    let digits = d.coefficient().to_string();
    let exp = d.exponent();
    let mut s = String::with_capacity(digits.len() + 12);
    if d.is_negative() {
        s.push('-');
    }
    if exp >= 0 {
        s.push_str(&digits);
        s.extend(std::iter::repeat_n('0', exp as usize));
    } else {
        let frac = (-exp) as usize;
        if digits.len() > frac {
            let (int, f) = digits.split_at(digits.len() - frac);
            s.push_str(int);
            s.push('.');
            s.push_str(f);
        } else {
            s.push_str("0.");
            s.extend(std::iter::repeat_n('0', frac - digits.len()));
            s.push_str(&digits);
        }
    }
    s
}

/// DynamoDB's size of a number in bytes (1 byte per two significant digits, plus 1).
pub fn size(d: &Decimal) -> usize {
    (d.digits() as usize).div_ceil(2) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamodb_bounds_and_messages() {
        for ok in [
            "1e125",
            "9.99999999e125",
            "-1e-130",
            "0e1000",
            "+3",
            ".123",
            "0001.23",
            "1e+5",
            "-17.4E37",
            "3.1415926535897932384626433832795028841",
            "31415926535897932384626433832795028841e30",
        ] {
            parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        let msg = |s: &str| parse(s).unwrap_err().message;
        assert!(msg("1e126").contains("overflow"));
        assert!(msg("11e125").contains("overflow"));
        assert!(msg("1.0e100000000").contains("overflow"));
        assert!(msg("1e-131").contains("underflow"));
        assert!(msg("0.9e-130").contains("underflow"));
        assert!(msg("3.14159265358979323846264338327950288419").contains("significant"));
        for bad in [
            "NaN",
            "Infinity",
            "-Infinity",
            "dog",
            " 1",
            "1 ",
            "",
            "1e",
            "--1",
        ] {
            assert!(msg(bad).contains("numeric"), "{bad:?}");
        }
    }

    #[test]
    fn formatting_is_exact_and_plain_when_moderate() {
        for (i, o) in [
            ("10000000000000000000001", "10000000000000000000001"),
            ("1.50", "1.5"),
            ("-0.001", "-0.001"),
            ("0.0000001", "0.0000001"),
            ("1e-8", "1e-8"),
            ("1e39", "1000000000000000000000000000000000000000"),
            ("1e125", "1e+125"),
            ("-9.99e-130", "-9.99e-130"),
            ("0e5", "0"),
            (
                "12345678901234567890123456789012345678",
                "12345678901234567890123456789012345678",
            ),
        ] {
            let d = parse(i).unwrap();
            assert_eq!(format(&d), o, "{i}");
            assert_eq!(parse(o).unwrap(), d);
        }
    }

    #[test]
    fn exact_arithmetic() {
        let d = |s: &str| parse(s).unwrap();
        assert_eq!(
            add(d("1"), d("10000000000000000000000")).unwrap(),
            d("10000000000000000000001")
        );
        assert_eq!(
            sub(d("10000000000000000000000"), d("1")).unwrap(),
            d("9999999999999999999999")
        );
        assert_eq!(add(d("9e125"), d("9e124")).unwrap(), d("9.9e125"));
        assert!(add(d("9e125"), d("9e125"))
            .unwrap_err()
            .message
            .contains("overflow"));
        assert!(sub(d("1e50"), d("1"))
            .unwrap_err()
            .message
            .contains("number"));
        assert_eq!(add(d("0.1"), d("0.2")).unwrap(), d("0.3"));
    }
}
