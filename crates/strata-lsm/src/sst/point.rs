//! The point index of a cached block: its restart keys as integers, so that a point read
//! finds its restart point without touching the block's restart array or its restart
//! entries (one cache line each: ~5 of them for a 4 KiB block, now ~3 lines of this index).
//!
//! Like the file's index ([`super::index::FlatIndex`]): the prefix shared by every restart
//! key (that of the first and the last) is kept once, and for each restart key the 8 bytes
//! after it as a big-endian integer (zero-padded). A lookup compares the target's prefix once,
//! then binary searches the integers; equal integers fall back to the full key in the block.
//! Built from a block already in the cache (its checksum verified), on the block's first
//! point read; never written to disk.

use std::cmp::Ordering;
use std::sync::Arc;

use super::block::{Block, BlockError, ValueRef};
use super::index::head;
use super::keycmp;

/// Longest shared prefix kept (when restart keys share more, its first 24 bytes).
const MAX_PREFIX: usize = 24;
/// Words before the heads: counts, then the prefix.
const HEADER: usize = 1 + MAX_PREFIX / 8;

/// A block's point index: `[n | prefix_len << 32, prefix (24 bytes, big-endian words),
/// head * n, restart offsets as u32 pairs]` in one allocation.
#[derive(Clone, Debug)]
pub struct PointIndex(Arc<[u64]>);

impl PointIndex {
    /// The index of `b`, or `None` when the block has no restart point or a restart entry does
    /// not decode (a point read then searches the block itself, which reports the damage).
    pub fn build(b: &Block) -> Option<PointIndex> {
        let n = b.restart_count();
        if n == 0 || n > u32::MAX as usize {
            return None;
        }
        let first = b.restart_key(0).ok()?;
        let last = b.restart_key(n - 1).ok()?;
        // Any prefix all restart keys share will do: the heads after it order them as well.
        let plen = first
            .iter()
            .zip(last)
            .take_while(|(x, y)| x == y)
            .count()
            .min(MAX_PREFIX);
        let mut words = Vec::with_capacity(HEADER + n + n.div_ceil(2));
        words.push(n as u64 | (plen as u64) << 32);
        for i in 0..MAX_PREFIX / 8 {
            words.push(head(&first[..plen], i * 8));
        }
        for i in 0..n {
            words.push(head(b.restart_key(i).ok()?, plen));
        }
        for i in (0..n).step_by(2) {
            let lo = u32::try_from(b.restart(i).ok()?).ok()?;
            let hi = if i + 1 < n {
                u32::try_from(b.restart(i + 1).ok()?).ok()?
            } else {
                0
            };
            words.push(u64::from(lo) | u64::from(hi) << 32);
        }
        Some(PointIndex(words.into()))
    }

    /// Number of restart points of the block.
    pub fn restart_count(&self) -> usize {
        (self.0[0] & 0xffff_ffff) as usize
    }

    fn prefix_len(&self) -> usize {
        (self.0[0] >> 32) as usize
    }

    /// Bytes held (charged to the block cache).
    pub fn bytes(&self) -> usize {
        16 + self.0.len() * 8
    }

    fn offset(&self, i: usize) -> usize {
        let n = self.restart_count();
        let w = self.0[HEADER + n + i / 2];
        (if i.is_multiple_of(2) {
            w & 0xffff_ffff
        } else {
            w >> 32
        }) as usize
    }

    /// Index of the last restart point whose key is `<= target` (0 when there is none).
    ///
    /// Unlike [`Block::restart_before`] (`<`, which a seek needs), a point read may start at a
    /// restart point equal to its target: a read of a restart key then decodes that one entry
    /// instead of the whole interval before it (with the writer's 256-byte restart spacing
    /// and 100-byte values, 2 entries scanned per get on average instead of 3). When the
    /// heads are equal the restart key itself decides, and that entry is where the scan
    /// starts, so its line is read once.
    fn restart_at_or_before(&self, b: &Block, target: &[u8]) -> Result<usize, BlockError> {
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
        let th = head(target, plen);
        let heads = &self.0[HEADER..HEADER + n];
        let (mut lo, mut hi) = (0usize, n);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            let h = heads[mid];
            let at_or_below = if h != th {
                h < th
            } else {
                !keycmp::lt(target, b.restart_key(mid)?)
            };
            if at_or_below {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// [`Block::get`] on `b`, the block this index was built from.
    pub fn get(&self, b: &Block, target: &[u8]) -> Result<Option<ValueRef>, BlockError> {
        let i = self.restart_at_or_before(b, target)?;
        b.scan_for(self.offset(i), target)
    }
}

#[cfg(test)]
mod tests {
    use super::super::block::BlockBuilder;
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
}
