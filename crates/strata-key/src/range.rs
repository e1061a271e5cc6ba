//! Key ranges on raw bytes: prefix bounds and successors, computed on bytes (never with string
//! tricks such as appending `"\xff"`).

use std::ops::Bound;

/// The smallest key greater than every key that starts with `prefix`, or `None` when there is
/// none (the prefix is empty or all 0xFF: the range is unbounded above).
///
/// ```
/// use strata_key::range::prefix_end;
/// assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
/// assert_eq!(prefix_end(&[0x61, 0xff]), Some(vec![0x62]));
/// assert_eq!(prefix_end(&[0xff, 0xff]), None);
/// ```
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=keep].to_vec();
    end[keep] += 1;
    Some(end)
}

/// The half-open range `[prefix, prefix_end(prefix))` of every key starting with `prefix`.
pub fn prefix_range(prefix: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let end = match prefix_end(prefix) {
        Some(e) => Bound::Excluded(e),
        None => Bound::Unbounded,
    };
    (Bound::Included(prefix.to_vec()), end)
}

/// The smallest key strictly greater than `key`: `key ‖ 0x00`.
///
/// ```
/// assert_eq!(strata_key::range::successor(b"a"), b"a\0".to_vec());
/// ```
pub fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.extend_from_slice(key);
    k.push(0);
    k
}

/// True when `key` lies in the range given by two bounds.
pub fn contains(start: Bound<&[u8]>, end: Bound<&[u8]>, key: &[u8]) -> bool {
    let lo = match start {
        Bound::Included(s) => key >= s,
        Bound::Excluded(s) => key > s,
        Bound::Unbounded => true,
    };
    let hi = match end {
        Bound::Included(e) => key <= e,
        Bound::Excluded(e) => key < e,
        Bound::Unbounded => true,
    };
    lo && hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn prefix_end_bounds_exactly_the_prefixed_keys(p in proptest::collection::vec(any::<u8>(), 0..6),
                                                       k in proptest::collection::vec(any::<u8>(), 0..8)) {
            let inside = k.starts_with(&p);
            let below_end = match prefix_end(&p) { Some(e) => k < e, None => true };
            prop_assert_eq!(inside, k >= p && below_end);
        }

        #[test]
        fn successor_is_least_greater(a in proptest::collection::vec(any::<u8>(), 0..6),
                                      b in proptest::collection::vec(any::<u8>(), 0..6)) {
            let s = successor(&a);
            prop_assert!(s > a);
            if b > a { prop_assert!(b >= s); }
        }
    }
}
