//! Byte-string comparison for short keys, inlined: 8 bytes at a time as big-endian integers.
//! A point read compares keys a dozen times (file bounds, the level's file search, restart
//! points); for 16-byte keys a call into `memcmp` costs more than the comparison itself.

use std::cmp::Ordering;

/// `a.cmp(b)` (lexicographic, a proper prefix first).
#[inline]
pub fn cmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut x, mut y) = (a, b);
    while let (Some((p, xs)), Some((q, ys))) =
        (x.split_first_chunk::<8>(), y.split_first_chunk::<8>())
    {
        if p != q {
            return u64::from_be_bytes(*p).cmp(&u64::from_be_bytes(*q));
        }
        x = xs;
        y = ys;
    }
    x.cmp(y)
}

/// `a < b`.
#[inline]
pub fn lt(a: &[u8], b: &[u8]) -> bool {
    cmp(a, b) == Ordering::Less
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Agrees with the slice order, on keys that share long prefixes.
        #[test]
        fn agrees_with_slice_order(
            p in proptest::collection::vec(0u8..3, 0..20),
            a in proptest::collection::vec(0u8..3, 0..20),
            b in proptest::collection::vec(0u8..3, 0..20),
        ) {
            let a: Vec<u8> = p.iter().chain(&a).copied().collect();
            let b: Vec<u8> = p.iter().chain(&b).copied().collect();
            prop_assert_eq!(cmp(&a, &b), a.cmp(&b));
            prop_assert_eq!(cmp(&b, &a), b.cmp(&a));
            prop_assert_eq!(cmp(&a, &a), Ordering::Equal);
            prop_assert_eq!(lt(&a, &b), a < b);
        }
    }
}
