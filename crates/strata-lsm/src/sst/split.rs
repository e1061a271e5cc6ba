//! Restart heads of a block that holds the end of one run of keys and the start of the next
//! (a table partition's last rows and the next partition's first ones), in a slot of a mapped
//! table's in-memory restart heads ([`super::heads::RestartHeads`]).
//!
//! A block's point index ([`super::point::PointIndex`]) keeps the prefix its first and last
//! restart keys share and 4 or 8 bytes of each restart key after it. In such a block that
//! prefix is short (the two partitions' keys part early), and the restart keys of one
//! partition share more than 8 bytes after it: their heads tie (or need 8-byte lanes, and the
//! index does not fit in a slot), so the read went back to the block's restart array and
//! restart keys, one memory miss after another (a third of the blocks of 10^7 table rows).
//!
//! Here the restart keys are cut in two runs, `0..s` and `s..n`, where neighbours share the
//! fewest bytes; each run keeps its own shared prefix (`A`, `B`) and 4-byte heads after it.
//! A point read compares its target with `B` (a target starting with `B` is past every key of
//! the first run: the key before `s` does not start with `B`), then with `A`, then searches
//! one run's heads. Slot words: `[n | s << 8 | len A << 16 | len B << 24 | SPLIT (+ the slot's
//! own bits), A ‖ B (big-endian bytes, packed), heads (32-bit lanes), offsets (16-bit lanes)]`.

use std::cmp::Ordering;
use std::ops::Range;

use super::block::{restart_array, BlockError};
use super::index::head;
use super::keycmp;
use super::point::{head_search, lane, restart_key_at, restart_key_quick};
use crate::coding::u32_at;
use crate::error::FormatError;

/// Word 0: the words are a split index (this module's layout).
pub(crate) const SPLIT: u64 = 1 << 45;
/// Most restart points of a split index.
const MAX_RESTARTS: usize = 16;

/// Bytes `a` and `b` share from their start.
fn lcp(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Words before the prefixes, plus the heads' and offsets' words, for `n` restart points.
fn fixed_words(n: usize) -> usize {
    1 + n.div_ceil(2) + n.div_ceil(4)
}

/// The split index of a data block's bytes (a verified block of a mapped file) in `out`
/// (`slot` words), and where the block's entries end; `None` when the block has fewer than 2
/// or more than 16 restart points, is 64 KiB or more, a restart does not decode, the index
/// does not fit in `slot` words, or two neighbours of one run have equal heads (the search
/// would then read restart keys from the block). Bits 42 and up of word 0 other than
/// [`SPLIT`] are left clear for the slot.
pub(crate) fn build(block: &[u8], out: &mut [u64]) -> Option<usize> {
    let (end, n) = restart_array(block).ok()?;
    if !(2..=MAX_RESTARTS).contains(&n) || end > 0xffff {
        return None;
    }
    let entries = &block[..end];
    let mut keys: [&[u8]; MAX_RESTARTS] = [&[]; MAX_RESTARTS];
    let mut offs = [0u64; MAX_RESTARTS];
    for i in 0..n {
        let r = u32_at(block, end.checked_add(4 * i)?)? as usize;
        if r >= end {
            return None;
        }
        offs[i] = r as u64;
        keys[i] = restart_key_quick(entries, r)?;
    }
    // The first cut where neighbours share the fewest bytes.
    let (s, cut) = (1..n)
        .map(|i| (i, lcp(keys[i - 1], keys[i])))
        .min_by_key(|&(_, l)| l)?;
    let budget = (out.len().checked_sub(fixed_words(n))? * 8).min(8 * 16);
    let (mut la, mut lb) = (lcp(keys[0], keys[s - 1]), lcp(keys[s], keys[n - 1]));
    // Either prefix may be cut short (any prefix a run shares orders it by the heads after
    // it), but `B` must stay longer than what the key before `s` shares with key `s`.
    if la + lb > budget {
        let half = budget / 2;
        if la > half && lb > half {
            (la, lb) = (half, budget - half);
        } else if la > lb {
            la = budget - lb;
        } else {
            lb = budget - la;
        }
    }
    if lb <= cut || la > 0xff || lb > 0xff {
        return None;
    }
    let mut heads = [0u64; MAX_RESTARTS];
    for i in 0..n {
        heads[i] = head(keys[i], if i < s { la } else { lb }) >> 32;
    }
    if (1..n).any(|i| i != s && heads[i - 1] == heads[i]) {
        return None;
    }
    out.fill(0);
    out[0] = n as u64 | (s as u64) << 8 | (la as u64) << 16 | (lb as u64) << 24 | SPLIT;
    let mut bytes = [0u8; 8 * 16];
    let prefixes = bytes.get_mut(..la + lb)?;
    prefixes[..la].copy_from_slice(&keys[0][..la]);
    prefixes[la..].copy_from_slice(&keys[s][..lb]);
    let pw = (la + lb).div_ceil(8);
    for (w, b) in out[1..1 + pw].iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_be_bytes(b.try_into().ok()?);
    }
    let mut at = 1 + pw;
    for (i, &h) in heads[..n].iter().enumerate() {
        out[at + i / 2] |= h << (32 * (i % 2));
    }
    at += n.div_ceil(2);
    for (i, &o) in offs[..n].iter().enumerate() {
        out[at + i / 4] |= o << (16 * (i % 4));
    }
    Some(end)
}

/// Where in `block` a point read of `target` must look (as [`super::point::interval_for`]),
/// through the split index `w` (built by [`build`] from these bytes, its entries ending at
/// `end`): the restart array is not read, and a restart key only when the target's head
/// equals its. Every offset is checked: a range inside the entries, or an error.
pub(crate) fn interval_in(
    w: &[u64],
    end: usize,
    block: &[u8],
    target: &[u8],
) -> Result<Option<Range<usize>>, BlockError> {
    let bad = || FormatError::new(0, "bad split restart index".to_string());
    let w0 = w.first().copied().ok_or_else(bad)?;
    let n = (w0 & 0xff) as usize;
    let s = (w0 >> 8 & 0xff) as usize;
    let (la, lb) = ((w0 >> 16 & 0xff) as usize, (w0 >> 24 & 0xff) as usize);
    let pw = (la + lb).div_ceil(8);
    if s == 0 || s >= n || 1 + pw + n.div_ceil(2) + n.div_ceil(4) > w.len() || pw > 16 {
        return Err(bad());
    }
    let entries = block
        .get(..end)
        .ok_or_else(|| FormatError::new(0, format!("entries end {end} past the block")))?;
    let mut bytes = [0u8; 8 * 16];
    for (b, x) in bytes.chunks_exact_mut(8).zip(&w[1..1 + pw]) {
        b.copy_from_slice(&x.to_be_bytes());
    }
    let (pa, pb) = (&bytes[..la], &bytes[la..la + lb]);
    let heads = &w[1 + pw..];
    let offs = &w[1 + pw + n.div_ceil(2)..];
    let off = |i: usize| lane(offs, i, 16) as usize;
    let key_at = |j: usize| restart_key_at(entries, off(j));
    let lo = match keycmp::cmp(&target[..lb.min(target.len())], pb) {
        // Past every key of the second run.
        Ordering::Greater => n - 1,
        // At or past key `s - 1` (which does not start with `B`).
        Ordering::Equal => search(heads, target, lb, s - 1, n, key_at)?,
        // Before key `s`.
        Ordering::Less => match keycmp::cmp(&target[..la.min(target.len())], pa) {
            Ordering::Less => 0,
            Ordering::Greater => s - 1,
            Ordering::Equal => search(heads, target, la, 0, s, key_at)?,
        },
    };
    let start = off(lo);
    let stop = if lo + 1 < n { off(lo + 1) } else { end };
    if start >= stop || stop > end {
        return Err(FormatError::new(
            end,
            format!("restart offsets {start}..{stop} out of order or past the entries ({end})"),
        ));
    }
    Ok(Some(start..stop))
}

/// The last restart point in `lo..hi` whose key is `<= target`, or `lo` when none after it
/// is: the heads of `lo + 1..hi` are the 4 bytes after the `plen` bytes their keys and
/// `target` share; `key_at(i)` reads restart key `i` (only when heads tie).
fn search<'k>(
    heads: &[u64],
    target: &[u8],
    plen: usize,
    lo: usize,
    hi: usize,
    key_at: impl Fn(usize) -> Result<&'k [u8], BlockError>,
) -> Result<usize, BlockError> {
    head_search(heads, 32, head(target, plen) >> 32, target, lo, hi, key_at)
}

#[cfg(test)]
mod tests {
    use super::super::block::{scan_entries, Block, BlockBuilder};
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A point read through the split index: the interval, then its scan.
    fn split_get(w: &[u64], end: usize, b: &[u8], target: &[u8]) -> Option<(Vec<u8>, bool)> {
        let r = interval_in(w, end, b, target).unwrap()?;
        let entries = &b[r];
        let v = scan_entries(entries, 0, target).unwrap()?;
        let value = entries[v.off as usize..(v.off + v.len) as usize].to_vec();
        Some((value, v.tombstone))
    }

    /// The block of 10^7 table rows that motivated the split (two partitions whose keys
    /// share 14 bytes after the block's 1-byte prefix) gets a split index, and every key
    /// and the targets around each are found as [`Block::get`] finds them.
    #[test]
    fn partition_boundary_block() {
        let part = |p: &[u8], ts: &[u8]| -> Vec<u8> {
            let mut k = vec![0x28];
            k.extend_from_slice(p);
            k.push(1);
            k.extend_from_slice(ts);
            k
        };
        let a = b"\x29ywugt2\x32\x34\x32\x33\x3b";
        let b = b"\x2dywugt2\x39\x39\x33\x32\x38";
        let mut keys = Vec::new();
        for t in 0..10u8 {
            keys.push(part(a, &[0x3f, 0x20 + 3 * t]));
        }
        for t in 0..14u8 {
            keys.push(part(b, &[0x27 + 3 * t]));
        }
        let mut bb = BlockBuilder::with_spacing(2, usize::MAX);
        for (i, k) in keys.iter().enumerate() {
            bb.add(k, Some(&[i as u8; 100]));
        }
        let bytes = bb.finish();
        let blk = Block::new(Arc::new(bytes.clone())).unwrap();
        let mut w = [0u64; 16];
        let end = build(&bytes, &mut w).expect("a boundary block gets a split index");
        for k in &keys {
            for t in [
                k.clone(),
                [&k[..], &[0]].concat(),
                k[..k.len() - 1].to_vec(),
            ] {
                let want = blk
                    .get(&t)
                    .unwrap()
                    .map(|v| (blk.value_slice(v).unwrap_or_default().to_vec(), v.tombstone));
                assert_eq!(split_get(&w, end, &bytes, &t), want, "target {t:02x?}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Point reads through a split index find exactly what [`Block::get`] finds, for
        /// every key and targets inside, between and outside the two runs: two runs of keys
        /// with long shared prefixes (a common part, then each run's own), tails from a
        /// 3-letter alphabet, a restart point at every entry or every few, and targets
        /// sharing any part of either prefix.
        #[test]
        fn split_read_matches_block_get(
            common in proptest::collection::vec(0u8..4, 0..6),
            own_a in proptest::collection::vec(0u8..4, 0..16),
            own_b in proptest::collection::vec(0u8..4, 0..16),
            tails_a in proptest::collection::btree_set(proptest::collection::vec(0u8..3, 0..4), 1..12),
            tails_b in proptest::collection::btree_set(proptest::collection::vec(0u8..3, 0..4), 1..12),
            targets in proptest::collection::vec((0usize..3, 0usize..40, proptest::collection::vec(0u8..4, 0..5)), 0..30),
            interval in 1usize..4,
        ) {
            let pa: Vec<u8> = common.iter().chain(&own_a).copied().collect();
            let pb: Vec<u8> = common.iter().chain(&own_b).copied().collect();
            let mut keys: Vec<Vec<u8>> = tails_a
                .iter()
                .map(|t| pa.iter().chain(t).copied().collect())
                .chain(tails_b.iter().map(|t| pb.iter().chain(t).copied().collect()))
                .collect();
            keys.sort();
            keys.dedup();
            let mut bb = BlockBuilder::with_spacing(interval, usize::MAX);
            for (i, k) in keys.iter().enumerate() {
                bb.add(k, (i % 5 != 4).then_some(&[i as u8; 3][..]));
            }
            let bytes = bb.finish();
            let blk = Block::new(Arc::new(bytes.clone())).unwrap();
            let mut w = [0u64; 16];
            let Some(end) = build(&bytes, &mut w) else {
                // Not every block fits (heads tie, too many restarts): read without a slot.
                return Ok(());
            };
            let mut all = keys.clone();
            for (which, cut, t) in &targets {
                let p = [&pa, &pb, &keys[cut % keys.len()]][*which];
                let at = cut % (p.len() + 1);
                all.push(p[..at].iter().chain(t).copied().collect());
            }
            for k in &keys {
                all.push([&k[..], &[0]].concat());
                all.push([&k[..], &[9]].concat());
                all.push(k[..k.len().saturating_sub(1)].to_vec());
            }
            for t in &all {
                let want = blk
                    .get(t)
                    .unwrap()
                    .map(|v| (blk.value_slice(v).unwrap_or_default().to_vec(), v.tombstone));
                prop_assert_eq!(split_get(&w, end, &bytes, t), want, "target {:?}", t);
            }
        }

        /// A split index used on other bytes (as if the mapped bytes changed after the
        /// check) or damaged words: a range inside the entries or an error, never a panic.
        #[test]
        fn split_takes_any_bytes(
            keys in proptest::collection::btree_set(proptest::collection::vec(0u8..3, 0..10), 2..40),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
            word_flips in proptest::collection::vec((0usize..16, any::<u64>()), 0..2),
            cut in any::<usize>(),
            target in proptest::collection::vec(0u8..3, 0..10),
        ) {
            let mut bb = BlockBuilder::with_spacing(2, usize::MAX);
            for k in &keys {
                bb.add(k, Some(b"value"));
            }
            let good = bb.finish();
            let mut w = [0u64; 16];
            let Some(end) = build(&good, &mut w) else {
                return Ok(());
            };
            for (i, x) in word_flips {
                w[i] ^= x;
            }
            let mut b = good.clone();
            for (at, x) in flips {
                let i = at % b.len();
                b[i] ^= x;
            }
            b.truncate(cut % (b.len() + 1));
            if let Ok(Some(r)) = interval_in(&w, end, &b, &target) {
                prop_assert!(r.start < r.end && r.end <= b.len());
            }
        }
    }
}
