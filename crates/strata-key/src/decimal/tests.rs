use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use super::*;

fn d(s: &str) -> Decimal {
    s.parse()
        .unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn hash(x: &Decimal) -> u64 {
    let mut h = DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}

#[test]
fn accepts_the_forms_dynamodb_accepts() {
    // The allowed strings of the conformance test `test_invalid_numbers`, and the usual ones.
    for (s, want) in [
        ("3", "3"),
        ("-7.1234", "-7.1234"),
        ("-17e5", "-1700000"),
        ("-17.4E37", "-1.74e+38"),
        ("+3", "3"),
        (".123", "0.123"),
        ("0001.23", "1.23"),
        ("1e+5", "100000"),
        ("0e1000", "0"),
        ("5.", "5"),
        ("-0", "0"),
        ("-0.000", "0"),
        ("1.50", "1.5"),
        ("100", "100"),
        ("0.000001", "0.000001"),
        ("0.0000001", "1e-7"),
        ("1e21", "1e+21"),
        ("123456789012345678901", "123456789012345678901"),
        ("1E-130", "1e-130"),
        (
            "9.9999999999999999999999999999999999999E+125",
            "9.9999999999999999999999999999999999999e+125",
        ),
        ("0.1234567890123456789012345", "0.1234567890123456789012345"),
        (
            "31415926535897932384626433832795028841e30",
            "3.1415926535897932384626433832795028841e+67",
        ),
        ("1000000000000000000000000000000000000000000000", "1e+45"),
    ] {
        assert_eq!(d(s).to_string(), want, "{s}");
        // Display parses back to the same value.
        assert_eq!(d(want), d(s), "{s}");
    }
}

#[test]
fn rejects_what_dynamodb_rejects() {
    for s in [
        "NaN",
        "Infinity",
        "-Infinity",
        "-NaN",
        "dog",
        "-dog",
        " 1",
        "1 ",
        "",
        "-",
        "+",
        ".",
        "e5",
        "1e",
        "1e+",
        "1.2.3",
        "0x10",
        "1_000",
        "--1",
        "1e5.5",
        "١",
    ] {
        match s.parse::<Decimal>() {
            Err(DecimalError::Syntax { .. }) => {}
            other => panic!("{s:?}: {other:?}"),
        }
    }
}

#[test]
fn precision_and_range_errors() {
    // 38 digits are fine, 39 are not; zeros on either side do not count.
    d("3.1415926535897932384626433832795028841");
    d("0000314159265358979323846.26433832795028841000000");
    for s in [
        "3.14159265358979323846264338327950288419",
        "314159265358979323846264338327950288419e30",
    ] {
        assert_eq!(
            s.parse::<Decimal>(),
            Err(DecimalError::TooManyDigits { digits: 39 })
        );
    }
    assert!(matches!(
        "1e1000000".parse::<Decimal>(),
        Err(DecimalError::Overflow { .. })
    ));
    assert!(matches!(
        "1e-1000000".parse::<Decimal>(),
        Err(DecimalError::Underflow { .. })
    ));
    assert!(matches!(
        "1e99999999999999999999999".parse::<Decimal>(),
        Err(DecimalError::Overflow { .. })
    ));
    assert!(matches!(
        "0.1e-999999".parse::<Decimal>(),
        Err(DecimalError::Underflow {
            exponent: -1_000_000
        })
    ));
    assert_eq!(d("1e999999").scientific_exponent(), Decimal::MAX_EXPONENT);
    assert_eq!(
        d("9.5e-999999").scientific_exponent(),
        Decimal::MIN_EXPONENT
    );
    // Zero with any exponent is zero.
    assert_eq!(d("0e-99999999999999999999"), Decimal::ZERO);
    // A long input is described, not echoed.
    let long = "1".repeat(10_000) + "x";
    let e = long.parse::<Decimal>().unwrap_err().to_string();
    assert!(e.len() < 200, "{e}");
}

#[test]
fn one_representation_per_number() {
    let same = ["1.5", "1.50", "15e-1", "0.15e1", "+1.5", "000001.500000"];
    for s in same {
        assert_eq!(d(s), d(same[0]));
        assert_eq!(hash(&d(s)), hash(&d(same[0])));
        assert_eq!(d(s).coefficient(), 15);
        assert_eq!(d(s).exponent(), -1);
    }
    assert_eq!(d("-0"), Decimal::ZERO);
    assert!(!d("-0").is_negative());
    assert_eq!(hash(&d("-0.0")), hash(&Decimal::ZERO));
    assert_eq!(Decimal::from_parts(true, 0, 77).unwrap(), Decimal::ZERO);
    assert_eq!(Decimal::from_parts(false, 1000, 0).unwrap(), d("1e3"));
}

#[test]
fn numeric_order() {
    let sorted = [
        "-1e999999",
        "-1e126",
        "-100",
        "-99.9",
        "-1.5",
        "-1",
        "-0.5",
        "-1e-130",
        "0",
        "1e-999999",
        "1e-130",
        "0.1",
        "0.12",
        "0.2",
        "1",
        "1.0000000000000000000000000000000000001",
        "1.1",
        "9",
        "10",
        "10.5",
        "99",
        "1e38",
        "1.5e38",
        "1e125",
    ];
    for w in sorted.windows(2) {
        assert!(d(w[0]) < d(w[1]), "{} < {}", w[0], w[1]);
        assert!(d(w[1]) > d(w[0]));
    }
    assert_eq!(d("2").cmp(&d("2.0")), std::cmp::Ordering::Equal);
}

#[test]
fn arithmetic_is_exact_or_refused() {
    // From the conformance tests (test_number.py).
    assert_eq!(
        d("1").checked_add(d("10000000000000000000000")).unwrap(),
        d("10000000000000000000001")
    );
    assert_eq!(
        d("10000000000000000000000").checked_sub(d("1")).unwrap(),
        d("9999999999999999999999")
    );
    assert_eq!(d("9e125").checked_add(d("9e124")).unwrap(), d("9.9e125"));
    assert_eq!(d("9e125").checked_add(d("9e125")).unwrap(), d("1.8e126"));
    assert_eq!(d("9e125").checked_sub(d("-9e125")).unwrap(), d("1.8e126"));
    for (a, b) in [("1e50", "1"), ("1e50", "-1"), ("1", "1e-40"), ("1e38", "1")] {
        assert!(
            matches!(
                d(a).checked_add(d(b)),
                Err(DecimalError::TooManyDigits { .. })
            ),
            "{a} + {b}"
        );
    }
    // Cancellation across a wide gap of exponents is still exact.
    let big = d("99999999999999999999999999999999999999"); // 38 nines
    assert_eq!(d("1e38").checked_sub(big).unwrap(), d("1"));
    assert_eq!(d("0.1").checked_add(d("0.2")).unwrap(), d("0.3"));
    assert_eq!(d("1.5").checked_sub(d("1.5")).unwrap(), Decimal::ZERO);
    assert_eq!(d("-1.5").checked_add(d("0.5")).unwrap(), d("-1"));
    assert_eq!(d("5e37").checked_add(d("5e37")).unwrap(), d("1e38"));
    assert_eq!(d("0").checked_add(d("-2")).unwrap(), d("-2"));
    assert!(matches!(
        d("9e999999").checked_add(d("9e999999")),
        Err(DecimalError::Overflow { .. })
    ));
    assert_eq!(-d("0"), Decimal::ZERO);
    assert_eq!(-d("-3"), d("3"));
}

#[test]
fn conversions() {
    assert_eq!(Decimal::from(-1200i64), d("-1.2e3"));
    assert_eq!(Decimal::from(u64::MAX).to_string(), u64::MAX.to_string());
    assert_eq!(
        Decimal::try_from(i128::MIN + 1).map(|x| x.digits()),
        Err(DecimalError::TooManyDigits { digits: 39 })
    );
    assert_eq!(Decimal::try_from(10i128.pow(38)).unwrap(), d("1e38"));
    assert_eq!(d("1.2e3").to_i128(), Some(1200));
    assert_eq!(d("1.5").to_i128(), None);
    assert_eq!(d("-1e38").to_i128(), Some(-(10i128.pow(38))));
    assert_eq!(d("1e39").to_i128(), None);
    assert_eq!(d("0.1").to_f64(), 0.1);
    assert_eq!(d("1e400").to_f64(), f64::INFINITY);
    assert_eq!(d("-1.5").scientific_exponent(), 0);
    assert_eq!(d("0.05").scientific_exponent(), -2);
    assert!(d("12e3").is_integer() && !d("1.2").is_integer());
}

#[test]
fn serde_is_the_string() {
    let x = d("-1.25e-40");
    let j = serde_json::to_string(&x).unwrap();
    assert_eq!(j, "\"-1.25e-40\"");
    assert_eq!(serde_json::from_str::<Decimal>(&j).unwrap(), x);
    assert!(serde_json::from_str::<Decimal>("\"1e1000000\"").is_err());
}
