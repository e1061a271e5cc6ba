//! The pinned index of an open SST, flattened: the last key of every data block in one
//! contiguous buffer, with parallel arrays of key ends and block locations. A lookup binary
//! searches these arrays (no pointer per key to follow), which keeps the index compact and its
//! probes cache-friendly.

use super::keycmp;
use super::table::IndexEntry;
use crate::hint::prefetch;

/// The decoded index of one SST.
///
/// The keys share `prefix` (the common prefix of the first and last key, hence of all); for
/// each key, `heads` holds the bytes after the prefix as a big-endian integer (zero-padded),
/// so that most steps of a lookup compare one integer instead of two byte strings. Heads are a
/// filter only: when two heads are equal the keys are compared in full (`ends` and `keys`:
/// two more cache misses in a large index). See `Heads` for their width.
/// A block's offset and length sit side by side (`locs`): one cache line for both.
#[derive(Debug, Default, Clone)]
pub struct FlatIndex {
    keys: Vec<u8>,
    ends: Vec<usize>,
    locs: Vec<(u64, u32)>,
    prefix: usize,
    heads: Heads,
}

/// Blocks per group of the two-level search: 16 heads of 16 bytes are 4 cache lines.
const GROUP: usize = 16;

/// The heads of an index's keys: 8 bytes after the prefix when no two neighbouring keys
/// share them, else 16. The last keys of neighbouring blocks of a table's partition share
/// more than 8 bytes after a file's prefix (table id, partition hash, the partition's
/// values): with 8-byte heads most lookups in a tables database ended in full comparisons
/// (~70% of a lookup's time at 10^7 items). Keys that differ within 8 bytes (the `lsm`
/// bench's) keep 8-byte heads: 16-byte ones cost them ~40% more instructions per lookup.
///
/// Each width holds two levels of the same heads: `all` (one per block) and `top`, the head of
/// the last key of every group of [`GROUP`] blocks (the last, partial group's too). A lookup
/// searches `top` first — its few lines stay hot in cache across lookups — and then one
/// group's 4 lines instead of ~8 scattered lines of a binary search over all heads.
#[derive(Debug, Clone)]
enum Heads {
    Narrow { all: Vec<u64>, top: Vec<u64> },
    Wide { all: Vec<u128>, top: Vec<u128> },
}

impl Default for Heads {
    fn default() -> Self {
        Heads::Narrow {
            all: Vec::new(),
            top: Vec::new(),
        }
    }
}

/// The `N` bytes of `key` from `at`, zero-padded past the end.
#[inline(always)]
fn head_bytes<const N: usize>(key: &[u8], at: usize) -> [u8; N] {
    let rest = key.get(at..).unwrap_or(&[]);
    // A whole head: a fixed-size load (a copy of a variable length is a `memcpy` call).
    if let Some(whole) = rest.first_chunk::<N>() {
        return *whole;
    }
    let mut b = [0u8; N];
    let n = rest.len().min(N);
    b[..n].copy_from_slice(&rest[..n]);
    b
}

/// The 8 bytes of `key` from `at` as a big-endian integer, zero-padded past the end.
#[inline]
pub(crate) fn head(key: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(head_bytes(key, at))
}

/// The 16 bytes of `key` from `at` as a big-endian integer, zero-padded past the end.
#[inline]
pub(crate) fn head16(key: &[u8], at: usize) -> u128 {
    u128::from_be_bytes(head_bytes(key, at))
}

impl FlatIndex {
    /// The index holding `entries` (in block order).
    pub fn new(entries: &[IndexEntry]) -> FlatIndex {
        let mut ix = FlatIndex {
            keys: Vec::with_capacity(entries.iter().map(|e| e.last_key.len()).sum()),
            ends: Vec::with_capacity(entries.len()),
            locs: Vec::with_capacity(entries.len()),
            prefix: 0,
            heads: Heads::default(),
        };
        if let (Some(a), Some(b)) = (entries.first(), entries.last()) {
            ix.prefix = a
                .last_key
                .iter()
                .zip(&b.last_key)
                .take_while(|(x, y)| x == y)
                .count();
        }
        for e in entries {
            ix.keys.extend_from_slice(&e.last_key);
            ix.ends.push(ix.keys.len());
            ix.locs.push((e.off, e.len));
        }
        let wide: Vec<u128> = entries
            .iter()
            .map(|e| head16(&e.last_key, ix.prefix))
            .collect();
        let top: Vec<u128> = wide
            .chunks(GROUP)
            .filter_map(|c| c.last().copied())
            .collect();
        ix.heads = if wide.windows(2).all(|w| w[0] >> 64 != w[1] >> 64) {
            let narrow = |v: &[u128]| v.iter().map(|&h| (h >> 64) as u64).collect();
            Heads::Narrow {
                all: narrow(&wide),
                top: narrow(&top),
            }
        } else {
            Heads::Wide { all: wide, top }
        };
        ix
    }

    /// Number of data blocks.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when the file has no data block.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The last key of block `i`.
    pub fn last_key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    /// Offset and length (without its CRC) of block `i`.
    pub fn handle(&self, i: usize) -> (u64, u32) {
        self.locs[i]
    }

    /// Index of the first block whose last key is `>= target` (`len()` when none is).
    pub fn find(&self, target: &[u8]) -> usize {
        let n = self.len();
        if n == 0 {
            return 0;
        }
        // Every key starts with the shared prefix: a target that differs from it inside the
        // prefix is below or above all keys (a proper prefix of it is below). Compared inline
        // (a `memcmp` call costs more than the comparison of ~10 bytes).
        let p = self.prefix;
        match keycmp::cmp(&target[..p.min(target.len())], &self.keys[..p]) {
            std::cmp::Ordering::Less => return 0,
            std::cmp::Ordering::Greater => return n,
            std::cmp::Ordering::Equal => {}
        }
        // `target` starts with the prefix (or is a proper prefix of it: then its head is 0
        // and the full comparison below decides).
        match &self.heads {
            Heads::Narrow { all, top } => self.two_level(all, top, head(target, p), target),
            Heads::Wide { all, top } => self.two_level(all, top, head16(target, p), target),
        }
    }

    /// `find` in two steps: the first group whose last key is `>= target` (a binary search
    /// of `top`), then the first such key inside that group.
    #[inline(always)]
    fn two_level<H: Copy + Ord>(&self, heads: &[H], top: &[H], th: H, target: &[u8]) -> usize {
        let n = self.len();
        // Group `g`'s top head is its last block's (the last group may be partial).
        let lo = self.lower_bound(top, 0, top.len(), th, target, |g| {
            (g * GROUP + GROUP - 1).min(n - 1)
        });
        if lo == top.len() {
            return n;
        }
        let start = lo * GROUP;
        let end = (start + GROUP).min(n);
        // The group's lines at once: their loads overlap (4 lines for 16-byte heads).
        let base = heads.as_ptr().wrapping_add(start).cast::<u8>();
        let bytes = (end - start) * std::mem::size_of::<H>();
        let mut at = 0;
        while at < bytes {
            prefetch(base.wrapping_add(at));
            at += 64;
        }
        prefetch(base.wrapping_add(bytes - 1));
        // The group's last key is `>= target`: the answer lies in `start..end`.
        self.lower_bound(heads, start, end - 1, th, target, |i| i)
    }

    /// The first `i` in `lo..hi` whose key is `>= target`, else `hi`: a binary search of
    /// `heads` (8- or 16-byte, `th` being the target's head), where the key behind `heads[i]`
    /// is the last key of block `block(i)` (compared in full only when the heads are equal).
    #[inline(always)]
    fn lower_bound<H: Copy + Ord>(
        &self,
        heads: &[H],
        lo: usize,
        hi: usize,
        th: H,
        target: &[u8],
        block: impl Fn(usize) -> usize,
    ) -> usize {
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let h = heads[mid];
            let below = if h != th {
                h < th
            } else {
                keycmp::lt(self.last_key(block(mid)), target)
            };
            if below {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// True when the heads are 16 bytes (see [`Heads`]).
    #[cfg(test)]
    fn wide(&self) -> bool {
        matches!(self.heads, Heads::Wide { .. })
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        let head = match self.heads {
            Heads::Narrow { .. } => 8,
            Heads::Wide { .. } => 16,
        };
        let groups = self.len().div_ceil(GROUP);
        self.keys.len() + self.len() * (8 + 16 + head) + groups * head
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn find_matches_a_linear_search(keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..5), 0..40),
                                        target in proptest::collection::vec(any::<u8>(), 0..5)) {
            let entries: Vec<IndexEntry> = keys.iter().enumerate()
                .map(|(i, k)| IndexEntry { last_key: k.clone(), off: i as u64 * 100, len: i as u32 })
                .collect();
            let ix = FlatIndex::new(&entries);
            prop_assert_eq!(ix.len(), entries.len());
            for (i, e) in entries.iter().enumerate() {
                prop_assert_eq!(ix.last_key(i), e.last_key.as_slice());
                prop_assert_eq!(ix.handle(i), (e.off, e.len));
            }
            let want = entries.iter().position(|e| e.last_key.as_slice() >= target.as_slice()).unwrap_or(entries.len());
            prop_assert_eq!(ix.find(&target), want);
        }

        /// Keys with long shared prefixes, zero bytes and lengths around the 8- and 16-byte
        /// heads (both widths: see `both_head_widths_are_used`).
        #[test]
        fn find_with_shared_prefixes(prefix in proptest::collection::vec(0u8..3, 0..12),
                                     tails in proptest::collection::btree_set(proptest::collection::vec(0u8..3, 0..20), 1..40),
                                     target in proptest::collection::vec(0u8..3, 0..36)) {
            let keys: std::collections::BTreeSet<Vec<u8>> = tails.iter().map(|t| [prefix.as_slice(), t].concat()).collect();
            let entries: Vec<IndexEntry> = keys.iter().enumerate()
                .map(|(i, k)| IndexEntry { last_key: k.clone(), off: i as u64, len: 1 })
                .collect();
            let ix = FlatIndex::new(&entries);
            let with_prefix = [prefix.as_slice(), &target].concat();
            for t in [target.clone(), with_prefix] {
                let want = entries.iter().position(|e| e.last_key.as_slice() >= t.as_slice()).unwrap_or(entries.len());
                prop_assert_eq!(ix.find(&t), want);
            }
            for (i, e) in entries.iter().enumerate() {
                prop_assert_eq!(ix.find(&e.last_key), i);
            }
        }
    }

    proptest! {
        /// The two-level search against a linear one: sizes around the group size, keys
        /// sharing long runs (equal 8- and 16-byte heads: full comparisons at both levels),
        /// every key, the keys just below and above each, and random targets.
        #[test]
        fn two_level_matches_a_linear_search(
            stem in proptest::collection::vec(0u8..2, 0..6),
            tails in proptest::collection::btree_set(
                (0u8..3, 0usize..20, proptest::collection::vec(0u8..3, 0..4)), 0..80),
            targets in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..30), 0..8),
        ) {
            // A tail: one byte, then a run of `len` equal bytes (shared by many keys), then a few.
            let keys: std::collections::BTreeSet<Vec<u8>> = tails
                .iter()
                .map(|(a, len, rest)| [stem.as_slice(), &[*a], &vec![7u8; *len], rest].concat())
                .collect();
            let keys: Vec<Vec<u8>> = keys.into_iter().collect();
            let entries: Vec<IndexEntry> = keys.iter().enumerate()
                .map(|(i, k)| IndexEntry { last_key: k.clone(), off: i as u64, len: 1 })
                .collect();
            let ix = FlatIndex::new(&entries);
            let linear = |t: &[u8]| keys.iter().position(|k| k.as_slice() >= t).unwrap_or(keys.len());
            let mut all: Vec<Vec<u8>> = targets.iter().map(|t| [stem.as_slice(), t].concat()).collect();
            all.extend(targets.iter().cloned());
            for k in &keys {
                all.push(k.clone());
                all.push([k.as_slice(), &[0]].concat());
                all.push(k[..k.len().saturating_sub(1)].to_vec());
                let mut below = k.clone();
                if let Some(b) = below.last_mut() {
                    *b = b.wrapping_sub(1);
                }
                all.push(below);
            }
            all.push(Vec::new());
            all.push(vec![255; 40]);
            for t in &all {
                prop_assert_eq!(ix.find(t), linear(t), "target {:?} n {}", t, keys.len());
            }
        }
    }

    /// Every size of index from empty to past several powers of two, both head widths:
    /// every key, the keys just below and above each and both ends are found, with their
    /// block's location.
    #[test]
    fn search_at_every_size() {
        let key = |v: u128| [b"p".as_slice(), &v.to_be_bytes()].concat();
        for n in 0..300u128 {
            for wide in [false, true] {
                // Wide: neighbours of a triple share their first 8 bytes after the prefix.
                let val = |i: u128| {
                    if wide {
                        (i / 3) << 64 | (i % 3 * 10 + 10)
                    } else {
                        i * 10 + 10
                    }
                };
                let vals: Vec<u128> = (0..n).map(val).collect();
                let entries: Vec<IndexEntry> = vals
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| IndexEntry {
                        last_key: key(v),
                        off: 1000 + i as u64,
                        len: 7 * i as u32,
                    })
                    .collect();
                let ix = FlatIndex::new(&entries);
                assert!(n < 4 || ix.wide() == wide, "n {n}");
                for i in 0..entries.len() {
                    assert_eq!(ix.handle(i), (1000 + i as u64, 7 * i as u32));
                }
                let targets = vals
                    .iter()
                    .flat_map(|&v| [v - 1, v, v + 1])
                    .chain([0, u128::MAX]);
                for t in targets {
                    let want = vals.iter().position(|&v| v >= t).unwrap_or(vals.len());
                    assert_eq!(ix.find(&key(t)), want, "n {n} wide {wide} target {t}");
                }
            }
        }
    }

    /// Keys that differ within 8 bytes after the prefix keep narrow heads, keys that share
    /// more (a table partition's) get wide ones, and both find every key.
    #[test]
    fn both_head_widths_are_used() {
        let narrow: Vec<Vec<u8>> = (0..500u64)
            .map(|i| format!("{:016}", i * 7919).into_bytes())
            .collect();
        let mut wide: Vec<Vec<u8>> = (0..500u64)
            .map(|i| {
                [
                    b"table/user0123".as_slice(),
                    &(i / 3).to_be_bytes(),
                    &(i % 3).to_be_bytes(),
                ]
                .concat()
            })
            .collect();
        wide.sort();
        for (keys, want_wide) in [(narrow, false), (wide, true)] {
            let entries: Vec<IndexEntry> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| IndexEntry {
                    last_key: k.clone(),
                    off: i as u64,
                    len: 1,
                })
                .collect();
            let ix = FlatIndex::new(&entries);
            assert_eq!(ix.wide(), want_wide);
            for (i, k) in keys.iter().enumerate() {
                assert_eq!(ix.find(k), i);
                let mut above = k.clone();
                above.push(0);
                assert_eq!(ix.find(&above), i + 1);
            }
        }
    }
}
