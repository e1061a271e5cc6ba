//! The point index of a cached block: its restart keys as integers, so that a point read
//! finds its restart point without touching the block's restart array or its restart
//! entries (one cache line each: ~5 of them for a 4 KiB block, now ~2 lines of this index).
//!
//! Like the file's index ([`super::index::FlatIndex`]): the prefix shared by every restart
//! key (that of the first and the last) is kept once, and for each restart key the 8 bytes
//! after it as a big-endian integer (zero-padded). A lookup compares the target's prefix once,
//! then binary searches the integers; equal integers fall back to the full key in the block.
//! Built from a block already in the cache (its checksum verified), on the block's first
//! point read; never written to disk.

use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

use super::block::{entry_header, restart_array, Block, BlockError, ValueRef};
use super::index::head;
use super::keycmp;
use crate::coding::{get_varint, u32_at};
use crate::error::FormatError;
use crate::hint::prefetch;

/// Longest shared prefix kept (when restart keys share more, its first 24 bytes).
const MAX_PREFIX: usize = 24;
/// Words before the heads: counts, then the prefix.
const HEADER: usize = 1 + MAX_PREFIX / 8;
/// Flag in word 0: heads are kept as their first 4 bytes (32-bit lanes).
const NARROW_HEADS: u64 = 1 << 40;
/// Flag in word 0: restart offsets are kept in 16-bit lanes (the block is under 64 KiB).
const NARROW_OFFSETS: u64 = 1 << 41;
/// Flag in word 0: no two adjacent heads are equal (a search ties only with the target).
const DISTINCT_HEADS: u64 = 1 << 44;

/// A block's point index: `[n | prefix_len << 32 | flags, prefix (24 bytes, big-endian
/// words), heads, restart offsets]` in one allocation. Heads and offsets are packed in lanes
/// of a word (lane `i % k` of word `i / k`, from the low bits): a head is 8 bytes, or its
/// first 4 when those already tell adjacent restart keys apart; an offset is 4 bytes, or 2
/// in a block under 64 KiB. With 12 restart points (a 4 KiB block of 100-byte values) the
/// index is 104 bytes instead of 176: one cache line less to search. Narrow heads only make
/// ties likelier, and a tie is decided by the restart key itself, so either width is exact.
#[derive(Clone, Debug)]
pub struct PointIndex(Arc<[u64]>);

/// Value `i` of the values packed in lanes of `bits` bits from `words[0]` on.
#[inline]
pub(crate) fn lane(words: &[u64], i: usize, bits: u32) -> u64 {
    // `64 / bits` lanes a word (a power of two): shifts, not divisions.
    let lg = 6 - bits.trailing_zeros();
    let w = words[i >> lg] >> ((i & ((1 << lg) - 1)) * bits as usize);
    if bits == 64 {
        w
    } else {
        w & ((1u64 << bits) - 1)
    }
}

/// Packs `vals` (each below `2^bits`) in lanes of `bits` bits into `words` from `*at` on
/// (`words` long enough), advancing `*at`.
fn pack(words: &mut [u64], at: &mut usize, vals: &[u64], bits: u32) {
    let per = (64 / bits) as usize;
    for chunk in vals.chunks(per) {
        let mut w = 0u64;
        for (j, v) in chunk.iter().enumerate() {
            w |= v << (bits as usize * j);
        }
        words[*at] = w;
        *at += 1;
    }
}

impl PointIndex {
    /// The index of `b`, or `None` when the block has no restart point or a restart entry does
    /// not decode (a point read then searches the block itself, which reports the damage).
    pub fn build(b: &Block) -> Option<PointIndex> {
        let n = b.restart_count();
        let mut scratch = vec![0u64; 2 * n];
        let mut words = vec![0u64; max_words(n)];
        let len = build_words(
            n,
            |i| b.restart_key(i).ok(),
            |i| b.restart(i).ok(),
            &mut scratch,
            &mut words,
        )?;
        words.truncate(len);
        Some(PointIndex(words.into()))
    }

    /// Number of restart points of the block.
    pub fn restart_count(&self) -> usize {
        Words(&self.0).restart_count()
    }

    /// Bytes held (charged to the block cache).
    pub fn bytes(&self) -> usize {
        16 + self.0.len() * 8
    }

    /// [`Block::get`] on `b`, the block this index was built from.
    pub fn get(&self, b: &Block, target: &[u8]) -> Result<Option<ValueRef>, BlockError> {
        let w = Words(&self.0);
        let i = w.restart_at_or_before(target, |j| b.restart_key(j))?;
        b.scan_for(w.offset(i), target)
    }
}

/// The most words a point index of `n` restart points takes (8-byte heads, 2-byte offsets).
fn max_words(n: usize) -> usize {
    HEADER + n + n.div_ceil(2)
}

/// Writes the words of a point index of `n` restart points (see [`PointIndex`]) to `out`
/// (at least [`max_words`] long) and returns how many: `key_at(i)` is restart key `i`,
/// `off_at(i)` its offset in the block; `scratch` holds `2 * n` words. `None` when `n` is 0
/// or a restart does not decode.
fn build_words<'k>(
    n: usize,
    key_at: impl Fn(usize) -> Option<&'k [u8]>,
    off_at: impl Fn(usize) -> Option<usize>,
    scratch: &mut [u64],
    out: &mut [u64],
) -> Option<usize> {
    if n == 0 || n > u32::MAX as usize || scratch.len() < 2 * n || out.len() < max_words(n) {
        return None;
    }
    let first = key_at(0)?;
    let last = key_at(n - 1)?;
    // Any prefix all restart keys share will do: the heads after it order them as well.
    let plen = first
        .iter()
        .zip(last)
        .take_while(|(x, y)| x == y)
        .count()
        .min(MAX_PREFIX);
    let (heads, offsets) = scratch[..2 * n].split_at_mut(n);
    for i in 0..n {
        heads[i] = head(key_at(i)?, plen);
        offsets[i] = u64::from(u32::try_from(off_at(i)?).ok()?);
    }
    let narrow_heads = heads.windows(2).all(|w| w[0] >> 32 != w[1] >> 32);
    let narrow_offsets = offsets.iter().all(|&o| o <= 0xffff);
    let mut flags = 0;
    if heads.windows(2).all(|w| w[0] != w[1]) {
        flags |= DISTINCT_HEADS;
    }
    if narrow_heads {
        flags |= NARROW_HEADS;
        heads.iter_mut().for_each(|h| *h >>= 32);
    }
    if narrow_offsets {
        flags |= NARROW_OFFSETS;
    }
    out[0] = n as u64 | (plen as u64) << 32 | flags;
    for i in 0..MAX_PREFIX / 8 {
        out[1 + i] = head(&first[..plen], i * 8);
    }
    let mut at = HEADER;
    pack(out, &mut at, heads, if narrow_heads { 32 } else { 64 });
    pack(out, &mut at, offsets, if narrow_offsets { 16 } else { 32 });
    Some(at)
}

/// A point index's words, borrowed: a [`PointIndex`]'s, or those of a mapped table's
/// in-memory restart heads ([`super::heads::RestartHeads`]), whose word 0 carries more
/// bits above the ones read here (bit 42 up).
#[derive(Clone, Copy)]
pub(crate) struct Words<'a>(pub(crate) &'a [u64]);

impl Words<'_> {
    /// Number of restart points of the block.
    pub(crate) fn restart_count(self) -> usize {
        (self.0[0] & 0xffff_ffff) as usize
    }

    fn prefix_len(self) -> usize {
        ((self.0[0] >> 32) & 0xff) as usize
    }

    /// Bits of a head lane.
    fn head_bits(self) -> u32 {
        if self.0[0] & NARROW_HEADS != 0 {
            32
        } else {
            64
        }
    }

    /// True when no two adjacent heads are equal.
    pub(crate) fn distinct_heads(self) -> bool {
        self.0[0] & DISTINCT_HEADS != 0
    }

    /// True when the offsets are 16-bit lanes (the block is under 64 KiB).
    pub(crate) fn narrow_offsets(self) -> bool {
        self.0[0] & NARROW_OFFSETS != 0
    }

    /// The number of words the index takes.
    pub(crate) fn len(self) -> usize {
        let n = self.restart_count();
        HEADER
            + n.div_ceil((64 / self.head_bits()) as usize)
            + n.div_ceil((64 / self.offset_bits()) as usize)
    }

    /// Offset of restart point `i` in the block.
    pub(crate) fn offset(self, i: usize) -> usize {
        let head_words = self
            .restart_count()
            .div_ceil((64 / self.head_bits()) as usize);
        lane(&self.0[HEADER + head_words..], i, self.offset_bits()) as usize
    }

    /// Bits of an offset lane.
    fn offset_bits(self) -> u32 {
        if self.narrow_offsets() {
            16
        } else {
            32
        }
    }

    /// Index of the last restart point whose key is `<= target` (0 when there is none);
    /// `key_at(i)` reads restart key `i` from the block (only when heads tie).
    ///
    /// Unlike [`Block::restart_before`] (`<`, which a seek needs), a point read may start at a
    /// restart point equal to its target: a read of a restart key then decodes that one entry
    /// instead of the whole interval before it (with the writer's 256-byte restart spacing
    /// and 100-byte values, 2 entries scanned per get on average instead of 3). When the
    /// heads are equal the restart key itself decides, and that entry is where the scan
    /// starts, so its line is read once.
    pub(crate) fn restart_at_or_before<'k>(
        self,
        target: &[u8],
        key_at: impl Fn(usize) -> Result<&'k [u8], BlockError>,
    ) -> Result<usize, BlockError> {
        let n = self.restart_count();
        let plen = self.prefix_len();
        let mut prefix = [0u8; MAX_PREFIX];
        for (i, w) in self.0[1..HEADER].iter().enumerate() {
            prefix[i * 8..i * 8 + 8].copy_from_slice(&w.to_be_bytes());
        }
        match keycmp::cmp(&target[..plen.min(target.len())], &prefix[..plen]) {
            // Below every restart key (a proper prefix of the shared prefix included).
            Ordering::Less => return Ok(0),
            Ordering::Greater => return Ok(n - 1),
            Ordering::Equal => {}
        }
        let bits = self.head_bits();
        let th = head(target, plen) >> (64 - bits);
        let heads = &self.0[HEADER..];
        head_search(heads, bits, th, target, 0, n, key_at)
    }
}

/// The last restart point in `lo..hi` whose key is `<= target`, or `lo` when none after it
/// is, by binary search of the `bits`-bit heads in `heads` against the target's head `th`;
/// `key_at(i)` reads restart key `i`, only when its head ties with the target's. Shared by
/// the point index above and the split index of partition-boundary blocks (`split.rs`).
#[inline(always)]
pub(super) fn head_search<'k>(
    heads: &[u64],
    bits: u32,
    th: u64,
    target: &[u8],
    mut lo: usize,
    mut hi: usize,
    key_at: impl Fn(usize) -> Result<&'k [u8], BlockError>,
) -> Result<usize, BlockError> {
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        let h = lane(heads, mid, bits);
        let at_or_below = if h != th {
            h < th
        } else {
            !keycmp::lt(target, key_at(mid)?)
        };
        if at_or_below {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// The point index of a data block's bytes read in place (a verified block of a mapped
/// file) and where its entries end, or `None` when the block has no restart point or a
/// restart does not decode (as [`PointIndex::build`]).
pub(crate) fn build_in_place(block: &[u8]) -> Option<(InPlace, usize)> {
    let (end, n) = restart_array(block).ok()?;
    if n > IN_PLACE_RESTARTS {
        return None;
    }
    let entries = &block[..end];
    let off_at = |i: usize| {
        let r = u32_at(block, end.checked_add(i.checked_mul(4)?)?)? as usize;
        (r < end).then_some(r)
    };
    let mut scratch = [0u64; 2 * IN_PLACE_RESTARTS];
    let mut words = [0u64; IN_PLACE_WORDS];
    let len = build_words(
        n,
        |i| restart_key_quick(entries, off_at(i)?),
        off_at,
        &mut scratch,
        &mut words,
    )?;
    Some((InPlace { words, len }, end))
}

/// The whole key of the restart entry at `pos` of `entries` (as [`restart_key_at`], through
/// the entry header's one-byte fast path: building a block's index reads every restart key).
pub(crate) fn restart_key_quick(entries: &[u8], pos: usize) -> Option<&[u8]> {
    let (shared, unshared, _, p) = entry_header(entries, pos).ok()?;
    if shared != 0 {
        return None;
    }
    entries.get(p..p.checked_add(unshared)?)
}

/// Most restart points of a block [`build_in_place`] indexes (the most a table's in-memory
/// slot can hold: [`super::heads::RestartHeads`]).
const IN_PLACE_RESTARTS: usize = 16;
const IN_PLACE_WORDS: usize = HEADER + IN_PLACE_RESTARTS + IN_PLACE_RESTARTS / 2;

/// A point index built on the stack ([`build_in_place`]): `words[..len]`.
pub(crate) struct InPlace {
    words: [u64; IN_PLACE_WORDS],
    len: usize,
}

impl InPlace {
    /// The index's words.
    pub(crate) fn words(&self) -> &[u64] {
        &self.words[..self.len]
    }
}

/// [`interval_for`] through the block's point index `words` (built by [`build_in_place`]
/// from these bytes, its entries ending at `end`): the restart array and the restart keys
/// are not read (a restart key only when two heads tie), so a block outside the CPU caches
/// costs the line(s) of its interval, not also its tail and its restart keys first. Every
/// offset is checked: a range inside the entries, or an error.
pub(crate) fn interval_in(
    words: Words<'_>,
    end: usize,
    block: &[u8],
    target: &[u8],
) -> Result<Option<Range<usize>>, BlockError> {
    let n = words.restart_count();
    if n == 0 {
        return Ok(None);
    }
    let entries = block
        .get(..end)
        .ok_or_else(|| FormatError::new(0, format!("entries end {end} past the block")))?;
    let lo = words.restart_at_or_before(target, |j| restart_key_at(entries, words.offset(j)))?;
    let start = words.offset(lo);
    let stop = if lo + 1 < n {
        words.offset(lo + 1)
    } else {
        end
    };
    if start >= stop || stop > end {
        return Err(FormatError::new(
            end,
            format!("restart offsets {start}..{stop} out of order or past the entries ({end})"),
        ));
    }
    Ok(Some(start..stop))
}

/// The whole key stored at the restart entry at `pos` of `entries` (a restart entry shares
/// no prefix), read in place.
pub(crate) fn restart_key_at(entries: &[u8], pos: usize) -> Result<&[u8], BlockError> {
    let bad = |what: &str| FormatError::new(pos, format!("bad restart entry: {what}"));
    let mut p = pos;
    let shared = get_varint(entries, &mut p).ok_or_else(|| bad("shared length"))?;
    let unshared = get_varint(entries, &mut p).ok_or_else(|| bad("key length"))?;
    get_varint(entries, &mut p).ok_or_else(|| bad("value length"))?;
    if shared != 0 {
        return Err(bad("it shares a prefix"));
    }
    usize::try_from(unshared)
        .ok()
        .and_then(|u| entries.get(p..p.checked_add(u)?))
        .ok_or_else(|| bad("key runs past the block"))
}

/// Where in `block` (a data block's bytes, searched where they lie: a verified block of a
/// memory-mapped file) a point read of `target` must look: the restart interval from the last
/// restart point whose key is `<= target` (the first one when none is) to the next restart
/// point, or to the end of the entries. `None` when the block has no entry. Reads the restart
/// array, the restart keys the binary search probes (their lines are all requested at once,
/// so that the misses of a block outside the CPU caches overlap) and nothing else; every
/// offset is checked, so any bytes give a range inside the entries or an error.
///
/// The interval holds `target` if the block does: a point read scans just these bytes where
/// they lie (`block::scan_entries` from the interval's start).
pub fn interval_for(block: &[u8], target: &[u8]) -> Result<Option<Range<usize>>, BlockError> {
    let (end, n) = restart_array(block)?;
    if n == 0 {
        return Ok(None);
    }
    let entries = &block[..end];
    // Restart offsets past the entries are not prefetched; the search reports them.
    let at = |i: usize| u32_at(block, end + 4 * i).map_or(usize::MAX, |r| r as usize);
    for i in 1..n {
        let r = at(i);
        if r < end {
            prefetch(entries.as_ptr().wrapping_add(r));
        }
    }
    let (mut lo, mut hi) = (0usize, n);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if keycmp::lt(target, restart_key_at(entries, at(mid))?) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let start = at(lo);
    let stop = if lo + 1 < n { at(lo + 1) } else { end };
    if start >= stop || stop > end {
        return Err(FormatError::new(
            end + 4 * lo,
            format!("restart offsets {start}..{stop} out of order or past the entries ({end})"),
        ));
    }
    Ok(Some(start..stop))
}

#[cfg(test)]
mod tests {
    use super::super::block::{scan_entries, BlockBuilder};
    use super::*;
    use proptest::prelude::*;

    /// Restart keys whose heads are equal (zero bytes pad a short key's head, so `P`,
    /// `P 00`, `P 00 00`, … all have head 0; with 8 bytes more the heads still tie): the key
    /// itself decides whether a point read starts at such a restart point, for every key and
    /// for targets between them, with a restart point at every entry and at every third.
    #[test]
    fn equal_heads_are_decided_by_the_key() {
        let prefix = b"shared-prefix/".to_vec();
        let mut keys: Vec<Vec<u8>> = (0..12)
            .map(|n| {
                prefix
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, n))
                    .collect()
            })
            .collect();
        keys.extend((0..4).map(|n| {
            let mut k = prefix.clone();
            k.extend_from_slice(&[7; 8]);
            k.extend(std::iter::repeat_n(1, n));
            k
        }));
        for interval in [1, 3] {
            let mut bb = BlockBuilder::with_spacing(interval, usize::MAX);
            for (i, k) in keys.iter().enumerate() {
                bb.add(k, Some(&[i as u8; 5]));
            }
            let blk = Block::new(Arc::new(bb.finish())).unwrap();
            let pi = PointIndex::build(&blk).expect("a valid block has a point index");
            for (i, k) in keys.iter().enumerate() {
                let v = pi.get(&blk, k).unwrap().expect("every key is found");
                assert_eq!(blk.value_slice(v), Some(&[i as u8; 5][..]), "key {k:?}");
                let mut above = k.clone();
                above.push(0xff);
                assert_eq!(pi.get(&blk, &above).unwrap(), blk.get(&above).unwrap());
            }
        }
    }

    /// Lane widths: a 4 KiB block of distinct 16-byte keys gets 4-byte heads and 2-byte
    /// offsets; a block over 64 KiB keeps 4-byte offsets, and every key is still found.
    #[test]
    fn lane_widths_follow_the_block() {
        for (vlen, narrow_offsets) in [(100usize, true), (3000, false)] {
            let mut bb = BlockBuilder::new();
            let keys: Vec<Vec<u8>> = (0..40u32)
                .map(|i| format!("{:016}", i * 7).into_bytes())
                .collect();
            for (i, k) in keys.iter().enumerate() {
                bb.add(k, Some(&vec![i as u8; vlen]));
            }
            let blk = Block::new(Arc::new(bb.finish())).unwrap();
            let pi = PointIndex::build(&blk).unwrap();
            assert_ne!(pi.0[0] & NARROW_HEADS, 0);
            assert_eq!(pi.0[0] & NARROW_OFFSETS != 0, narrow_offsets);
            for (i, k) in keys.iter().enumerate() {
                let v = pi.get(&blk, k).unwrap().expect("every key is found");
                assert_eq!(blk.value_slice(v), Some(&vec![i as u8; vlen][..]));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// Point reads through the index equal `Block::get` (itself checked against the
        /// model) for every key and targets around them: keys with a shared prefix of 0..30
        /// bytes (beyond 24 only 24 are kept) and tails from a 3-letter alphabet, restart
        /// points by count and by bytes.
        #[test]
        fn matches_block_get(
            prefix in proptest::collection::vec(any::<u8>(), 0..30),
            tails in proptest::collection::btree_map(proptest::collection::vec(0u8..3, 0..12),
                                                     proptest::option::of(0usize..200), 1..80),
            targets in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..13), 0..20),
            interval in 1usize..20,
            spacing in prop_oneof![Just(usize::MAX), 1usize..600],
        ) {
            let mut bb = BlockBuilder::with_spacing(interval, spacing);
            let mut keys = Vec::new();
            for (t, v) in &tails {
                let k: Vec<u8> = prefix.iter().chain(t).copied().collect();
                let v = v.map(|n| vec![t.len() as u8; n]);
                bb.add(&k, v.as_deref());
                keys.push(k);
            }
            let blk = Block::new(Arc::new(bb.finish())).unwrap();
            let pi = PointIndex::build(&blk).expect("a valid block has a point index");
            let same = Block::with_restart_count(Arc::new(blk.data().to_vec()), pi.restart_count()).unwrap();
            let mut all = keys.clone();
            for t in &targets {
                all.push(prefix.iter().chain(t).copied().collect());
                all.push(t.clone());
                all.push(prefix[..prefix.len() / 2].iter().chain(t).copied().collect());
            }
            for t in &all {
                prop_assert_eq!(pi.get(&same, t).unwrap(), blk.get(t).unwrap(), "target {:?}", t);
            }
        }
    }

    /// The point read of a block searched in place (as `Table::get_ref` reads a mapped
    /// block): its restart interval's bytes scanned where they lie.
    fn in_place_get(blk: &Block, target: &[u8]) -> Option<(Vec<u8>, ValueRef)> {
        let r = interval_for(blk.data(), target).unwrap()?;
        let entries = &blk.data()[r];
        let v = scan_entries(entries, 0, target).unwrap()?;
        let value = if v.tombstone {
            Vec::new()
        } else {
            entries[v.off as usize..(v.off + v.len) as usize].to_vec()
        };
        Some((value, v))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// Reading in place ([`interval_for`], then a scan of the interval) finds exactly
        /// the entries [`Block::get`] finds (value bytes and tombstones), for every key and
        /// targets around them, restart points by count and by bytes.
        #[test]
        fn interval_read_matches_block_get(
            prefix in proptest::collection::vec(any::<u8>(), 0..12),
            tails in proptest::collection::btree_map(proptest::collection::vec(0u8..3, 0..8),
                                                     proptest::option::of(0usize..200), 1..80),
            targets in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..9), 0..20),
            interval in 1usize..20,
            spacing in prop_oneof![Just(usize::MAX), 1usize..600],
        ) {
            let mut bb = BlockBuilder::with_spacing(interval, spacing);
            let mut all = Vec::new();
            for (t, v) in &tails {
                let k: Vec<u8> = prefix.iter().chain(t).copied().collect();
                bb.add(&k, v.map(|n| vec![t.len() as u8; n]).as_deref());
                all.push(k);
            }
            let blk = Block::new(Arc::new(bb.finish())).unwrap();
            for t in &targets {
                all.push(prefix.iter().chain(t).copied().collect());
                all.push(t.clone());
            }
            for t in &all {
                let whole = blk.get(t).unwrap();
                let want = whole.map(|v| (blk.value_slice(v).unwrap_or_default().to_vec(), v.tombstone));
                let got = in_place_get(&blk, t).map(|(bytes, v)| (bytes, v.tombstone));
                prop_assert_eq!(got, want, "target {:?}", t);
            }
        }

        /// Any bytes (a block with some bytes changed, or none at all): the in-place search
        /// returns a range inside the entries or an error, never panics.
        #[test]
        fn interval_for_takes_any_bytes(
            keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..10), 1..40),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
            cut in any::<usize>(),
            target in proptest::collection::vec(any::<u8>(), 0..10),
        ) {
            let mut bb = BlockBuilder::with_spacing(3, usize::MAX);
            for k in &keys {
                bb.add(k, Some(b"value"));
            }
            let mut b = bb.finish();
            for (at, x) in flips {
                let i = at % b.len();
                b[i] ^= x;
            }
            b.truncate(cut % (b.len() + 1));
            if let Ok(Some(r)) = interval_for(&b, &target) {
                prop_assert!(r.start < r.end && r.end + 4 <= b.len());
                // The interval scanned in place: any bytes again, errors at worst.
                if let Ok(Some(v)) = scan_entries(&b[r.clone()], 0, &target) {
                    prop_assert!(v.tombstone || (v.off + v.len) as usize <= r.len());
                }
            }
        }
    }
}
