//! The restart heads of a mapped table's data blocks, kept in memory: one fixed slot of 128
//! bytes per block, filled on the block's first point read since the open (right after its
//! checksum is checked, while its lines are in the CPU caches), never written to disk.
//!
//! A point read of a block searched where it lies in the map ([`super::point::interval_for`])
//! reads the block's tail (the restart array), then the lines of its restart keys, then scans
//! the key's interval: for a block outside the CPU caches, two memory misses one after the
//! other before the scan. With the block's slot (its [`super::point::PointIndex`] words: the
//! restart keys' shared prefix, 4- or 8-byte heads after it, 2-byte offsets, and where the
//! entries end) the read goes from the file index straight to the key's interval
//! ([`super::point::interval_in`]); the slot's lines are asked for together with the
//! block's location. The slots of a table are allocated on its first point read: 128 bytes
//! per block (about 3% of the file for 4 KiB blocks: ~35 MB for 1.1 GB of SSTs), in chunks
//! of 64 slots from the huge-page pool ([`super::pool`]: a read touches one slot at random
//! among all of them, and with 4 KiB pages nearly every touch also missed the TLB).

use std::sync::atomic::{AtomicU64, Ordering};

use super::block::BlockError;
use super::point::{self, Words};
use super::pool::{Chunks, CHUNK_WORDS};
use super::split;
use crate::hint::prefetch;

/// Words of a slot.
pub(crate) const SLOT_WORDS: usize = 16;
/// (Bits 0..42 and 44 of word 0 are the point index's own: counts, prefix length, flags.)
/// Word 0: the slot holds the block's point index (set last, with `Release`).
const READY: u64 = 1 << 42;
/// Word 0: the block's point index does not fit in a slot (or does not decode); point reads
/// of it search the block itself ([`point::interval_for`]).
const UNFIT: u64 = 1 << 43;
// (Bit 44: the point index's `DISTINCT_HEADS`; bit 45: `split::SPLIT`.)
/// Word 0, bits 48..64: where the block's entries end (a slot holds blocks under 64 KiB).
const END_SHIFT: u32 = 48;

/// One block's slot: two cache lines of a chunk.
type Slot = [AtomicU64; SLOT_WORDS];
/// Slots of a chunk.
const CHUNK_SLOTS: usize = CHUNK_WORDS / SLOT_WORDS;

/// What a block's slot holds.
pub(crate) enum State {
    /// The block's point index (word 0 carries the flags and the entries' end).
    Ready([u64; SLOT_WORDS]),
    /// Nothing yet: the block was not read for a point read since the open.
    Empty,
    /// The block's index does not fit (or the block does not decode): never filled.
    Unfit,
}

/// The slots of one mapped table, one per data block (in whole chunks of the pool).
pub(crate) struct RestartHeads {
    chunks: Chunks,
    blocks: usize,
}

impl RestartHeads {
    /// Empty slots for `blocks` blocks.
    pub(crate) fn new(blocks: usize) -> RestartHeads {
        RestartHeads {
            chunks: Chunks::new(blocks.div_ceil(CHUNK_SLOTS)),
            blocks,
        }
    }

    /// Bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.chunks.bytes()
    }

    /// Block `i`'s slot (`None` past the table's blocks).
    #[inline]
    fn slot(&self, i: usize) -> Option<&Slot> {
        if i >= self.blocks {
            return None;
        }
        let at = i % CHUNK_SLOTS * SLOT_WORDS;
        let words = self
            .chunks
            .get(i / CHUNK_SLOTS)?
            .0
            .get(at..at + SLOT_WORDS)?;
        words.try_into().ok()
    }

    /// Asks for block `i`'s slot (both lines), ahead of [`RestartHeads::get`].
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        if let Some(s) = self.slot(i) {
            let p = s.as_ptr().cast::<u8>();
            prefetch(p);
            prefetch(p.wrapping_add(64));
        }
    }

    /// Block `i`'s slot (`Unfit` for a block past the slots).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> State {
        let Some(s) = self.slot(i) else {
            return State::Unfit;
        };
        // `Acquire`: pairs with `fill`'s `Release`, so the other words are the filled ones.
        let w0 = s[0].load(Ordering::Acquire);
        if w0 & READY == 0 {
            return if w0 & UNFIT != 0 {
                State::Unfit
            } else {
                State::Empty
            };
        }
        let mut w = [0u64; SLOT_WORDS];
        w[0] = w0;
        for (d, a) in w[1..].iter_mut().zip(&s[1..]) {
            *d = a.load(Ordering::Relaxed);
        }
        State::Ready(w)
    }

    /// Fills block `i`'s slot from the block's bytes, which the caller has just checked
    /// against their checksum (or had checked since the open). Returns the slot's words, or
    /// `None` (the slot is then marked unfit) when the block's index does not fit in a slot
    /// or does not decode. Two threads filling the same slot store the same words.
    pub(crate) fn fill(&self, i: usize, block: &[u8]) -> Option<[u64; SLOT_WORDS]> {
        let s = self.slot(i)?;
        let words = slot_words(block);
        match words {
            Some(w) => {
                for (a, &v) in s[1..].iter().zip(&w[1..]) {
                    a.store(v, Ordering::Relaxed);
                }
                s[0].store(w[0], Ordering::Release);
            }
            None => s[0].store(UNFIT, Ordering::Relaxed),
        }
        words
    }
}

/// The slot words of a block's bytes: its point index, or when that does not fit its split
/// index ([`split`]: a block where one run of keys ends and the next starts), with `READY`
/// and the entries' end in word 0; `None` when neither fits.
fn slot_words(block: &[u8]) -> Option<[u64; SLOT_WORDS]> {
    if let Some(w) = point_words(block) {
        return Some(w);
    }
    let mut out = [0u64; SLOT_WORDS];
    let end = split::build(block, &mut out)?;
    out[0] |= READY | (end as u64) << END_SHIFT;
    Some(out)
}

/// Where in `block` (the bytes block's slot `w` was filled from) a point read of `target`
/// must look: [`point::interval_in`] or [`split::interval_in`], by the slot's layout.
#[inline]
pub(crate) fn interval_in(
    w: &[u64; SLOT_WORDS],
    block: &[u8],
    target: &[u8],
) -> Result<Option<std::ops::Range<usize>>, BlockError> {
    if w[0] & split::SPLIT != 0 {
        split::interval_in(w, entries_end(w), block, target)
    } else {
        point::interval_in(Words(w), entries_end(w), block, target)
    }
}

/// The slot words of a block's point index ([`point::build_in_place`]), `None` when it does
/// not fit.
fn point_words(block: &[u8]) -> Option<[u64; SLOT_WORDS]> {
    let (built, end) = point::build_in_place(block)?;
    let words = built.words();
    let w = Words(words);
    // Adjacent restart keys with equal heads (a block holding the end of one partition of a
    // table and the start of the next: their keys share more than 8 bytes after the block's
    // prefix) would make the search read restart keys from the block, one miss after another:
    // such blocks are searched as before (their restart keys' lines are asked for at once).
    if words.len() > SLOT_WORDS
        || !w.narrow_offsets()
        || !w.distinct_heads()
        || end > 0xffff
        || w.len() != words.len()
    {
        return None;
    }
    let mut out = [0u64; SLOT_WORDS];
    out[..words.len()].copy_from_slice(words);
    out[0] |= READY | (end as u64) << END_SHIFT;
    Some(out)
}

/// Where the entries of the block whose slot words are `w` end.
#[inline]
pub(crate) fn entries_end(w: &[u64; SLOT_WORDS]) -> usize {
    (w[0] >> END_SHIFT) as usize
}

#[cfg(test)]
mod tests {
    use super::super::block::{restart_array, scan_entries, Block, BlockBuilder};
    use super::super::index::head;
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A point read through a filled slot: the interval, then its scan (value and tombstone).
    fn slot_get(heads: &RestartHeads, b: &[u8], target: &[u8]) -> Option<(Vec<u8>, bool)> {
        let State::Ready(w) = heads.get(0) else {
            panic!("slot not filled");
        };
        let r = interval_in(&w, b, target).unwrap()?;
        let entries = &b[r];
        let v = scan_entries(entries, 0, target).unwrap()?;
        let value = entries[v.off as usize..(v.off + v.len) as usize].to_vec();
        Some((value, v.tombstone))
    }

    /// A 4 KiB block of the writer's shape (16-byte keys, 100-byte values, 256-byte restart
    /// spacing) fits in a slot; a block with more restart points than a slot holds is
    /// marked unfit, and stays so.
    #[test]
    fn writer_blocks_fit_and_others_are_unfit() {
        let mut bb = BlockBuilder::default();
        let mut n = 0u32;
        while bb.estimated_size() < 4096 {
            bb.add(format!("{:016}", n * 7).as_bytes(), Some(&[1; 100]));
            n += 1;
        }
        let b = bb.finish();
        let heads = RestartHeads::new(2);
        assert!(matches!(heads.get(0), State::Empty));
        assert!(heads.fill(0, &b).is_some());
        assert!(matches!(heads.get(0), State::Ready(_)));
        let mut bb = BlockBuilder::with_spacing(1, usize::MAX);
        for k in 0..40u32 {
            bb.add(&k.to_be_bytes(), Some(b"v"));
        }
        assert!(heads.fill(1, &bb.finish()).is_none());
        assert!(matches!(heads.get(1), State::Unfit));
        assert!(matches!(heads.get(2), State::Unfit));
        // Two slots: one chunk of 64.
        assert_eq!(heads.bytes(), 8192);
        // Slots of every chunk, up to the last block only.
        let heads = RestartHeads::new(2 * CHUNK_SLOTS + 1);
        for i in [0, CHUNK_SLOTS - 1, CHUNK_SLOTS, 2 * CHUNK_SLOTS] {
            assert!(matches!(heads.get(i), State::Empty));
            assert!(heads.fill(i, &b).is_some());
            assert!(matches!(heads.get(i), State::Ready(_)));
        }
        assert!(matches!(heads.get(1), State::Empty));
        assert!(heads.fill(2 * CHUNK_SLOTS + 1, &b).is_none());
        assert!(matches!(heads.get(2 * CHUNK_SLOTS + 1), State::Unfit));
    }

    /// A census of the data blocks of the SSTs in `$STRATA_SLOT_CENSUS` (a database
    /// directory): how many fit a slot and why the others do not (run by hand:
    /// `STRATA_SLOT_CENSUS=D cargo test --release -p strata-lsm slot_census -- --ignored
    /// --nocapture`).
    #[test]
    #[ignore]
    fn slot_census() {
        use super::super::table::{decode_footer, decode_index, FOOTER};
        let Ok(dir) = std::env::var("STRATA_SLOT_CENSUS") else {
            return;
        };
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "sst"))
            .collect();
        files.sort();
        let (mut blocks, mut fit, mut many, mut ties, mut big) = (0, 0, 0, 0, 0);
        let mut tie_extra = std::collections::BTreeMap::new();
        let mut groups = std::collections::BTreeMap::new();
        let mut shown = 0;
        let mut shown_other = 0;
        let mut split_fit = 0;
        let mut other = std::collections::BTreeMap::new();
        let mut fit_n = std::collections::BTreeMap::new();
        let mut tie_n = std::collections::BTreeMap::new();
        for f in &files {
            let all = std::fs::read(f).unwrap();
            let ft = decode_footer(&all[all.len() - FOOTER..], all.len() as u64).unwrap();
            let ib = &all[ft.index_off as usize..ft.index_off as usize + ft.index_len as usize];
            let ix = decode_index(&Block::new(Arc::new(ib.to_vec())).unwrap()).unwrap();
            for e in ix {
                let b = &all[e.off as usize..e.off as usize + e.len as usize];
                blocks += 1;
                if slot_words(b).is_some_and(|w| w[0] & split::SPLIT != 0) {
                    split_fit += 1;
                }
                if point_words(b).is_some() {
                    fit += 1;
                    *fit_n.entry(restart_array(b).unwrap().1).or_insert(0usize) += 1;
                    continue;
                }
                let blk = Block::new(Arc::new(b.to_vec())).unwrap();
                let n = blk.restart_count();
                if n > 16 {
                    many += 1;
                    continue;
                }
                let keys: Vec<&[u8]> = (0..n).map(|i| blk.restart_key(i).unwrap()).collect();
                let lcp = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
                let plen = lcp(keys[0], keys[n - 1]).min(24);
                let tied: Vec<usize> = (1..n)
                    .filter(|&i| head(keys[i - 1], plen) == head(keys[i], plen))
                    .collect();
                if tied.is_empty() {
                    big += 1;
                    let (built, end) = point::build_in_place(b).unwrap();
                    let w = Words(built.words());
                    let why = (n, built.words().len(), w.narrow_offsets(), end > 0xffff);
                    *other.entry(why).or_insert(0usize) += 1;
                    if shown_other < 2 {
                        shown_other += 1;
                        eprintln!("other block {why:?}, prefix {plen}:");
                        for k in &keys {
                            eprintln!("  {:02x?}", k);
                        }
                    }
                    continue;
                }
                ties += 1;
                *tie_n.entry(n).or_insert(0usize) += 1;
                // Bytes the tied neighbours share after the block's prefix.
                let extra = tied
                    .iter()
                    .map(|&i| lcp(keys[i - 1], keys[i]) - plen)
                    .max()
                    .unwrap();
                *tie_extra.entry(extra).or_insert(0usize) += 1;
                // Runs of restart keys split where neighbours share the least.
                let cut = (1..n)
                    .filter(|&i| lcp(keys[i - 1], keys[i]) - plen < 8)
                    .count();
                *groups.entry(cut + 1).or_insert(0usize) += 1;
                if shown < 3 {
                    shown += 1;
                    eprintln!("unfit block, prefix {plen}:");
                    for k in &keys {
                        eprintln!("  {:02x?}", k);
                    }
                }
            }
        }
        eprintln!(
            "{} files, {blocks} blocks: {fit} fit, {ties} heads tie, {many} over 16 restarts, {big} other",
            files.len()
        );
        eprintln!("of the unfit: {split_fit} get a split index");
        eprintln!("tied blocks by bytes shared after the prefix: {tie_extra:?}");
        eprintln!("tied blocks by groups of restart keys: {groups:?}");
        eprintln!("other (n, words, narrow offsets, end > 64 KiB): {other:?}");
        eprintln!("restart counts: fit {fit_n:?}, tied {tie_n:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// A point read through a block's slot finds exactly what [`Block::get`] finds
        /// (value bytes and tombstones), for every key and targets around them: keys with
        /// shared prefixes of 0..30 bytes, restart points by count and by bytes (blocks
        /// whose index does not fit are skipped: they are read without a slot).
        #[test]
        fn slot_read_matches_block_get(
            prefix in proptest::collection::vec(any::<u8>(), 0..30),
            tails in proptest::collection::btree_map(proptest::collection::vec(0u8..3, 0..8),
                                                     proptest::option::of(0usize..200), 1..60),
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
            let bytes = bb.finish();
            let blk = Block::new(Arc::new(bytes.clone())).unwrap();
            let heads = RestartHeads::new(1);
            prop_assume!(heads.fill(0, &bytes).is_some());
            for t in &targets {
                all.push(prefix.iter().chain(t).copied().collect());
                all.push(t.clone());
                all.push(prefix[..prefix.len() / 2].iter().chain(t).copied().collect());
            }
            for t in &all {
                let whole = blk.get(t).unwrap();
                let want = whole.map(|v| (blk.value_slice(v).unwrap_or_default().to_vec(), v.tombstone));
                prop_assert_eq!(slot_get(&heads, &bytes, t), want, "target {:?}", t);
            }
        }

        /// A slot filled from one block's bytes and used on other bytes (as if the mapped
        /// bytes changed after the check): a range inside the entries or an error, never a
        /// panic.
        #[test]
        fn slot_takes_any_bytes(
            keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..10), 1..40),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
            cut in any::<usize>(),
            target in proptest::collection::vec(any::<u8>(), 0..10),
        ) {
            let mut bb = BlockBuilder::with_spacing(3, usize::MAX);
            for k in &keys {
                bb.add(k, Some(b"value"));
            }
            let good = bb.finish();
            let heads = RestartHeads::new(1);
            prop_assume!(heads.fill(0, &good).is_some());
            let State::Ready(w) = heads.get(0) else { unreachable!() };
            let mut b = good.clone();
            for (at, x) in flips {
                let i = at % b.len();
                b[i] ^= x;
            }
            b.truncate(cut % (b.len() + 1));
            if let Ok(Some(r)) = interval_in(&w, &b, &target) {
                prop_assert!(r.start < r.end && r.end <= b.len());
                if let Ok(Some(v)) = scan_entries(&b[r.clone()], 0, &target) {
                    prop_assert!(v.tombstone || (v.off + v.len) as usize <= r.len());
                }
            }
        }
    }
}
