//! The pinned index of an open SST, flattened: the last key of every data block in one
//! contiguous buffer, with parallel arrays of key ends and block locations. A lookup binary
//! searches these arrays (no pointer per key to follow), which keeps the index compact and its
//! probes cache-friendly.

use std::sync::atomic::{AtomicU64, Ordering};

use super::keycmp;
use super::pool::{Chunks, CHUNK_WORDS};
use super::table::IndexEntry;
use crate::hint::prefetch;

/// The decoded index of one SST.
///
/// The keys share `prefix` (the common prefix of the first and last key, hence of all); for
/// each key, its head holds the bytes after the prefix as a big-endian integer (zero-padded),
/// so that most steps of a lookup compare one integer instead of two byte strings. Heads are a
/// filter only: when two heads are equal the keys are compared in full (`ends` and `keys`:
/// two more cache misses in a large index). See `Head` for their width.
///
/// The heads are searched in Eytzinger order (`Nodes`: the implicit binary tree stored level
/// by level, node `k`'s children at `2k` and `2k + 1`): the top levels of a file's search share
/// a few lines (kept in the CPU caches across reads), and the four nodes two levels below the
/// current one are contiguous, so they are asked for while the current one is compared: the
/// search's misses overlap instead of waiting for one another (session 16 put 63% of
/// `find`'s time at 10^7 items on one load of a sorted array's head). Each node carries its
/// block's location and number, so the block found is read from a line the search touched.
/// The nodes live in chunks of the huge-page pool ([`super::pool`]): the deep levels of a
/// search touch lines on different pages of a file's index, each a TLB miss with 4 KiB pages.
#[derive(Debug, Clone)]
pub struct FlatIndex {
    keys: Vec<u8>,
    ends: Vec<usize>,
    /// For block `i`, its node in `nodes` (Eytzinger order).
    pos: Vec<u32>,
    prefix: usize,
    /// True when the heads are 16 bytes (see [`Head`]).
    wide: bool,
    nodes: Nodes,
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
trait Head: Copy + Ord + Default {
    /// The head from a node's first two words.
    fn from_words(hi: u64, lo: u64) -> Self;
    /// The head as a node's first two words.
    fn to_words(self) -> (u64, u64);
}

impl Head for u64 {
    #[inline(always)]
    fn from_words(hi: u64, _: u64) -> u64 {
        hi
    }
    fn to_words(self) -> (u64, u64) {
        (self, 0)
    }
}

impl Head for u128 {
    #[inline(always)]
    fn from_words(hi: u64, lo: u64) -> u128 {
        u128::from(hi) << 64 | u128::from(lo)
    }
    fn to_words(self) -> (u64, u64) {
        ((self >> 64) as u64, self as u64)
    }
}

/// Words of a node in the pool: head (high word, low word), offset, length | block << 32.
const NODE_WORDS: usize = 4;
/// Nodes of a chunk of the pool.
const CHUNK_NODES: usize = CHUNK_WORDS / NODE_WORDS;

/// An index's nodes in Eytzinger order from index 1 (node 0 unused), in chunks of the pool:
/// node `k` is words `4 (k % 256)..` of chunk `k / 256` (so nodes `4k..4k+4` are the two
/// lines from byte `128 (k % 64)` of a chunk).
struct Nodes {
    chunks: Chunks,
    /// Nodes held, node 0 included (0 for an empty index).
    count: usize,
}

impl std::fmt::Debug for Nodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nodes").field("count", &self.count).finish()
    }
}

impl Clone for Nodes {
    /// The same nodes in chunks of their own.
    fn clone(&self) -> Nodes {
        let out = Nodes {
            chunks: Chunks::new(self.count.div_ceil(CHUNK_NODES)),
            count: self.count,
        };
        for k in 0..self.count {
            if let (Some(from), Some(to)) = (self.words(k), out.words(k)) {
                for (a, b) in from.iter().zip(to) {
                    b.store(a.load(Ordering::Relaxed), Ordering::Relaxed);
                }
            }
        }
        out
    }
}

impl Nodes {
    /// `nodes` (node 0 included) copied into chunks of the pool.
    fn new<H: Head>(nodes: &[Node<H>]) -> Nodes {
        let count = if nodes.len() > 1 { nodes.len() } else { 0 };
        let out = Nodes {
            chunks: Chunks::new(count.div_ceil(CHUNK_NODES)),
            count,
        };
        for (k, n) in nodes.iter().enumerate().take(count) {
            if let Some(w) = out.words(k) {
                let (hi, lo) = n.head.to_words();
                w[0].store(hi, Ordering::Relaxed);
                w[1].store(lo, Ordering::Relaxed);
                w[2].store(n.off, Ordering::Relaxed);
                w[3].store(
                    u64::from(n.len) | u64::from(n.block) << 32,
                    Ordering::Relaxed,
                );
            }
        }
        out
    }

    /// Node `k`'s words (`None` past the nodes).
    #[inline(always)]
    fn words(&self, k: usize) -> Option<&[AtomicU64; NODE_WORDS]> {
        if k >= self.count {
            return None;
        }
        let at = k % CHUNK_NODES * NODE_WORDS;
        self.chunks
            .get(k / CHUNK_NODES)?
            .0
            .get(at..at + NODE_WORDS)?
            .try_into()
            .ok()
    }

    /// Node `k` (`None` past the nodes).
    #[inline(always)]
    fn node<H: Head>(&self, k: usize) -> Option<Node<H>> {
        let w = self.words(k)?;
        let len_block = w[3].load(Ordering::Relaxed);
        Some(Node {
            head: H::from_words(w[0].load(Ordering::Relaxed), w[1].load(Ordering::Relaxed)),
            off: w[2].load(Ordering::Relaxed),
            len: len_block as u32,
            block: (len_block >> 32) as u32,
        })
    }

    /// Asks for nodes `k..k+4` (`k` a multiple of 4: two lines of one chunk).
    #[inline(always)]
    fn prefetch4(&self, k: usize) {
        if let Some(c) = self.chunks.get(k / CHUNK_NODES) {
            let p =
                c.0.as_ptr()
                    .wrapping_add(k % CHUNK_NODES * NODE_WORDS)
                    .cast::<u8>();
            prefetch(p);
            prefetch(p.wrapping_add(64));
        }
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
            wide: false,
            nodes: Nodes::new::<u64>(&[]),
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
        ix.wide = !wide.windows(2).all(|w| w[0] >> 64 != w[1] >> 64);
        ix.nodes = if ix.wide {
            Nodes::new(&eytzinger(entries, |i| wide[i], &mut ix.pos))
        } else {
            Nodes::new(&eytzinger(entries, |i| (wide[i] >> 64) as u64, &mut ix.pos))
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
        self.nodes
            .node::<u64>(self.pos[i] as usize)
            .map_or((0, 0), |n| (n.off, n.len))
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
        if self.wide {
            self.search(head16(target, p), target)
        } else {
            self.search(head(target, p), target)
        }
    }

    /// [`FlatIndex::find_block`] in `nodes` (8- or 16-byte heads), `th` being the target's
    /// head: the lower bound in an Eytzinger array.
    #[inline(always)]
    fn search<H: Head>(&self, th: H, target: &[u8]) -> Option<(usize, (u64, u32))> {
        let mut k = 1;
        while let Some(node) = self.nodes.node::<H>(k) {
            // Nodes `4k..4k+4`, two levels down (two lines), asked for now: the loads of the
            // next levels overlap this one's instead of following it.
            self.nodes.prefetch4(4 * k);
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
        let node = self.nodes.node::<H>(k).filter(|_| k != 0)?;
        Some((node.block as usize, (node.off, node.len)))
    }

    /// True when the heads are 16 bytes (see [`Head`]).
    #[cfg(test)]
    fn wide(&self) -> bool {
        self.wide
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
                assert!(n < 4 || ix.wide() == wide, "n {n}");
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
