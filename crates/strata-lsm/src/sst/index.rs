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
/// each key, its head holds the bytes after the prefix as a big-endian integer (zero-padded),
/// so that most steps of a lookup compare one integer instead of two byte strings. Heads are a
/// filter only: when two heads are equal the keys are compared in full (`ends` and `keys`:
/// two more cache misses in a large index). See `Heads` for their width.
///
/// The heads are searched in Eytzinger order (`Heads`: the implicit binary tree stored level
/// by level, node `k`'s children at `2k` and `2k + 1`): the top levels of a file's search share
/// a few lines (kept in the CPU caches across reads), and the four nodes two levels below the
/// current one are contiguous, so they are asked for while the current one is compared: the
/// search's misses overlap instead of waiting for one another (session 16 put 63% of
/// `find`'s time at 10^7 items on one load of a sorted array's head). Each node carries its
/// block's location and number, so the block found is read from a line the search touched.
#[derive(Debug, Default, Clone)]
pub struct FlatIndex {
    keys: Vec<u8>,
    ends: Vec<usize>,
    /// For block `i`, its node in `heads` (Eytzinger order).
    pos: Vec<u32>,
    prefix: usize,
    heads: Heads,
}

/// A node of the Eytzinger-ordered index: a block's head, location and number (32 bytes, so
/// two a cache line and node `4k..4k+4` in two or three lines).
#[repr(C, align(32))]
#[derive(Debug, Clone, Copy, Default)]
struct Node<H> {
    head: H,
    off: u64,
    len: u32,
    /// The block's number (in key order).
    block: u32,
}

/// The heads of an index's keys: 8 bytes after the prefix when no two neighbouring keys
/// share them, else 16. The last keys of neighbouring blocks of a table's partition share
/// more than 8 bytes after a file's prefix (table id, partition hash, the partition's
/// values): with 8-byte heads most lookups in a tables database ended in full comparisons
/// (~70% of a lookup's time at 10^7 items). Keys that differ within 8 bytes (the `lsm`
/// bench's) keep 8-byte heads: 16-byte ones cost them ~40% more instructions per lookup.
/// Nodes in Eytzinger order from index 1 (node 0 is unused).
#[derive(Debug, Clone)]
enum Heads {
    Narrow(Vec<Node<u64>>),
    Wide(Vec<Node<u128>>),
}

impl Default for Heads {
    fn default() -> Self {
        Heads::Narrow(Vec::new())
    }
}

/// Fills `out[k]` and its subtree (Eytzinger order, `out[1..]` holding `out.len() - 1` nodes)
/// in key order from `sorted`, recording each block's node in `pos`.
fn fill<H: Copy>(
    out: &mut [Node<H>],
    k: usize,
    sorted: &mut impl Iterator<Item = Node<H>>,
    pos: &mut [u32],
) {
    if k >= out.len() {
        return;
    }
    fill(out, 2 * k, sorted, pos);
    if let Some(node) = sorted.next() {
        pos[node.block as usize] = k as u32;
        out[k] = node;
    }
    fill(out, 2 * k + 1, sorted, pos);
}

/// The nodes of `entries` with heads `head(i)`, in Eytzinger order from index 1.
fn eytzinger<H: Copy + Default>(
    entries: &[IndexEntry],
    head: impl Fn(usize) -> H,
    pos: &mut [u32],
) -> Vec<Node<H>> {
    let mut out = vec![Node::default(); entries.len() + 1];
    // (Block numbers fit in 32 bits: an index block's restart offsets are 32-bit, so it holds
    // fewer than 2^32 entries of at least 3 bytes.)
    let mut sorted = entries.iter().enumerate().map(|(i, e)| Node {
        head: head(i),
        off: e.off,
        len: e.len,
        block: i as u32,
    });
    fill(&mut out, 1, &mut sorted, pos);
    out
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
            pos: vec![0; entries.len()],
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
        }
        let wide: Vec<u128> = entries
            .iter()
            .map(|e| head16(&e.last_key, ix.prefix))
            .collect();
        ix.heads = if wide.windows(2).all(|w| w[0] >> 64 != w[1] >> 64) {
            Heads::Narrow(eytzinger(entries, |i| (wide[i] >> 64) as u64, &mut ix.pos))
        } else {
            Heads::Wide(eytzinger(entries, |i| wide[i], &mut ix.pos))
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
        let k = self.pos[i] as usize;
        match &self.heads {
            Heads::Narrow(h) => (h[k].off, h[k].len),
            Heads::Wide(h) => (h[k].off, h[k].len),
        }
    }

    /// Index of the first block whose last key is `>= target` (`len()` when none is).
    pub fn find(&self, target: &[u8]) -> usize {
        self.find_block(target).map_or(self.len(), |(i, _)| i)
    }

    /// The first block whose last key is `>= target`: its number and its offset and length
    /// (as [`FlatIndex::handle`]); `None` when no block's last key is.
    #[inline]
    pub fn find_block(&self, target: &[u8]) -> Option<(usize, (u64, u32))> {
        if self.is_empty() {
            return None;
        }
        // Every key starts with the shared prefix: a target that differs from it inside the
        // prefix is below or above all keys (a proper prefix of it is below). Compared inline
        // (a `memcmp` call costs more than the comparison of ~10 bytes).
        let p = self.prefix;
        match keycmp::cmp(&target[..p.min(target.len())], &self.keys[..p]) {
            std::cmp::Ordering::Less => return Some((0, self.handle(0))),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Equal => {}
        }
        // `target` starts with the prefix (or is a proper prefix of it: then its head is 0
        // and the full comparison below decides).
        match &self.heads {
            Heads::Narrow(h) => self.search(h, head(target, p), target),
            Heads::Wide(h) => self.search(h, head16(target, p), target),
        }
    }

    /// [`FlatIndex::find_block`] in `nodes` (8- or 16-byte heads), `th` being the target's
    /// head: the lower bound in an Eytzinger array.
    #[inline(always)]
    fn search<H: Copy + Ord>(
        &self,
        nodes: &[Node<H>],
        th: H,
        target: &[u8],
    ) -> Option<(usize, (u64, u32))> {
        let n = nodes.len().saturating_sub(1);
        let base = nodes.as_ptr();
        let mut k = 1;
        while k <= n {
            // Nodes `4k..4k+4`, two levels down (128 bytes: two or three lines), asked for
            // now: the loads of the next levels overlap this one's instead of following it.
            let ahead = base.wrapping_add(4 * k).cast::<u8>();
            prefetch(ahead);
            prefetch(ahead.wrapping_add(64));
            prefetch(ahead.wrapping_add(127));
            let node = &nodes[k];
            let below = if node.head != th {
                node.head < th
            } else {
                keycmp::lt(self.last_key(node.block as usize), target)
            };
            k = 2 * k + usize::from(below);
        }
        // The last node where the search went left (the path's ones after it are the
        // right turns below it): the lower bound; 0 when it never went left.
        k >>= k.trailing_ones() + 1;
        let node = nodes.get(k).filter(|_| k != 0)?;
        Some((node.block as usize, (node.off, node.len)))
    }

    /// True when the heads are 16 bytes (see [`Heads`]).
    #[cfg(test)]
    fn wide(&self) -> bool {
        matches!(self.heads, Heads::Wide(_))
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.keys.len()
            + (self.len() + 1) * std::mem::size_of::<Node<u128>>()
            + self.len() * (8 + 4)
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
            prop_assert_eq!(ix.find_block(&target), entries.get(want).map(|e| (want, (e.off, e.len))));
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

    /// Every size of Eytzinger tree from empty to past several powers of two (complete and
    /// partial last levels), both head widths: every key, the keys just below and above each
    /// and both ends are found with their block's number and location.
    #[test]
    fn eytzinger_search_at_every_size() {
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
                assert!(n < 2 || ix.wide() == wide, "n {n}");
                for i in 0..entries.len() {
                    assert_eq!(ix.handle(i), (1000 + i as u64, 7 * i as u32));
                }
                let targets = vals
                    .iter()
                    .flat_map(|&v| [v - 1, v, v + 1])
                    .chain([0, u128::MAX]);
                for t in targets {
                    let want = vals.iter().position(|&v| v >= t);
                    assert_eq!(
                        ix.find_block(&key(t)),
                        want.map(|i| (i, (1000 + i as u64, 7 * i as u32))),
                        "n {n} wide {wide} target {t}"
                    );
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
