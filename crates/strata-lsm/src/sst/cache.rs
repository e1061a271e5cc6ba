//! The block cache: verified block bytes keyed by (file number, offset), bounded in bytes,
//! sharded so that concurrent readers rarely meet on one lock. Eviction is CLOCK (a hit only
//! sets a bit; the hand clears bits and evicts unreferenced blocks), which approximates LRU
//! at the cost of a flag store per hit. A hit hands out the shared block (an `Arc`), never a
//! copy; the map holds the block and its bit directly, so a hit reads one bucket.
//!
//! A point read ([`BlockCache::find_point`]) searches the cached block under its shard's lock
//! and takes a reference to the block only when it finds the key, after the search: the point
//! index is not referenced at all (two atomic updates less per get), and the search's loads
//! no longer wait behind the block's reference-count update.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use super::block::{BlockError, BlockRef, ValueRef};
use super::point::PointIndex;
use crate::sync::lock;

const SHARDS: usize = 16;

type Key = (u64, u64);

/// Hash of a (file, offset) key: multiply-xorshift (keys are not attacker-chosen).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(23) ^ v).wrapping_mul(0xff51_afd7_ed55_8ccd);
    }
}

/// The entry a point read found in a cached block ([`BlockCache::find_point`]).
pub struct CachedPoint {
    /// The block (a new reference to it).
    pub block: Arc<Vec<u8>>,
    /// Where the entry's value lies in it.
    pub value: ValueRef,
    /// The block's restart count.
    pub restarts: usize,
}

/// A cached block with its CLOCK reference bit, held in the map itself: a hit touches the
/// map's bucket and the block, nothing in between. A block that a point read asked for also
/// keeps its [`PointIndex`] (`None`: not built yet; `Some(None)`: the block has none).
struct Entry {
    block: Arc<Vec<u8>>,
    referenced: bool,
    point: Option<Option<PointIndex>>,
}

impl Entry {
    fn new(block: Arc<Vec<u8>>) -> Entry {
        Entry {
            block,
            referenced: false,
            point: None,
        }
    }

    /// Bytes charged: the block and its point index.
    fn size(&self) -> usize {
        self.block.len()
            + self
                .point
                .as_ref()
                .map_or(0, |p| p.as_ref().map_or(0, PointIndex::bytes))
    }

    /// A point read of `key` in this block (its point index built on the first one); also
    /// the bytes the point index added to the entry.
    fn find(&mut self, key: &[u8]) -> (Result<Option<CachedPoint>, BlockError>, usize) {
        // The search reads the block through the `Arc` (a plain load of its allocation, which
        // overlaps the point index's loads); the reference to the block is taken only once
        // the key is found. (Taken first, as before, its atomic update — a fence — made every
        // load of the search wait for the miss on the `Arc`'s counts.)
        let data: &[u8] = &self.block;
        let mut added = 0;
        let point = self.point.get_or_insert_with(|| {
            let p = BlockRef::new(data).ok().and_then(|b| PointIndex::build(&b));
            added = p.as_ref().map_or(0, PointIndex::bytes);
            p
        });
        let found = match point {
            Some(pi) => BlockRef::with_restart_count(data, pi.restart_count())
                .and_then(|b| Ok((b, pi.get(&b, key)?))),
            None => BlockRef::new(data).and_then(|b| Ok((b, b.get(key)?))),
        };
        let hit = found.map(|(b, v)| {
            v.map(|value| CachedPoint {
                block: Arc::clone(&self.block),
                value,
                restarts: b.restart_count(),
            })
        });
        (hit, added)
    }
}

#[derive(Default)]
struct Shard {
    map: HashMap<Key, Entry, BuildHasherDefault<KeyHasher>>,
    /// Every cached key, in the order the clock hand visits them.
    ring: Vec<Key>,
    hand: usize,
    bytes: usize,
}

impl Shard {
    /// Evicts unreferenced blocks until `bytes <= cap` (or nothing is left).
    fn evict(&mut self, cap: usize) {
        // Two sweeps clear every reference bit, so this ends.
        let mut budget = 2 * self.ring.len() + 1;
        while self.bytes > cap && budget > 0 && !self.ring.is_empty() {
            budget -= 1;
            let i = self.hand % self.ring.len();
            let key = self.ring[i];
            match self.map.get_mut(&key) {
                Some(e) if e.referenced => {
                    e.referenced = false;
                    self.hand = i + 1;
                }
                Some(_) => {
                    if let Some(e) = self.map.remove(&key) {
                        self.bytes -= e.size();
                    }
                    // The last key moves into slot `i`, which the hand visits next.
                    self.ring.swap_remove(i);
                    self.hand = i;
                }
                None => {
                    self.ring.swap_remove(i);
                    self.hand = i;
                }
            }
        }
    }
}

/// A bounded cache of blocks.
pub struct BlockCache {
    shards: Vec<Mutex<Shard>>,
    per_shard: usize,
}

impl BlockCache {
    /// A cache holding at most about `capacity` bytes of blocks.
    pub fn new(capacity: usize) -> BlockCache {
        BlockCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            per_shard: capacity / SHARDS,
        }
    }

    fn shard(&self, key: Key) -> std::sync::MutexGuard<'_, Shard> {
        let i = ((key.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.1) as usize >> 4) % SHARDS;
        lock(&self.shards[i])
    }

    /// The cached block, if any.
    pub fn get(&self, file: u64, off: u64) -> Option<Arc<Vec<u8>>> {
        let mut s = self.shard((file, off));
        let e = s.map.get_mut(&(file, off))?;
        e.referenced = true;
        Some(Arc::clone(&e.block))
    }

    /// A point read of `key` in cached block `(file, off)`, `None` when the block is not
    /// cached. The block is searched under its shard's lock (through its point index, built
    /// and charged on the block's first point read); only when the key is found is a
    /// reference to the block taken.
    pub fn find_point(
        &self,
        file: u64,
        off: u64,
        key: &[u8],
    ) -> Option<Result<Option<CachedPoint>, BlockError>> {
        let k = (file, off);
        let mut s = self.shard(k);
        let e = s.map.get_mut(&k)?;
        e.referenced = true;
        let (hit, added) = e.find(key);
        if added > 0 {
            s.bytes += added;
            // The entry was just referenced, so the sweep keeps it.
            s.evict(self.per_shard);
        }
        Some(hit)
    }

    /// Inserts a block, evicting blocks beyond capacity (a block larger than a shard's share
    /// is not kept).
    pub fn insert(&self, file: u64, off: u64, block: Arc<Vec<u8>>) {
        let size = block.len();
        let key = (file, off);
        let mut s = self.shard(key);
        if let Some(old) = s.map.remove(&key) {
            s.bytes -= old.size();
            s.ring.retain(|k| *k != key);
        }
        if size > self.per_shard {
            return;
        }
        s.evict(self.per_shard.saturating_sub(size));
        s.ring.push(key);
        s.map.insert(key, Entry::new(block));
        s.bytes += size;
    }

    /// Drops every block of a file (after the file is deleted).
    pub fn forget_file(&self, file: u64) {
        for sh in &self.shards {
            let mut s = lock(sh);
            let mut freed = 0;
            s.map.retain(|k, e| {
                let keep = k.0 != file;
                if !keep {
                    freed += e.size();
                }
                keep
            });
            s.bytes -= freed;
            s.ring.retain(|k| k.0 != file);
        }
    }

    /// Bytes cached.
    pub fn bytes(&self) -> usize {
        self.shards.iter().map(|s| lock(s).bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::block::{Block, BlockBuilder};
    use super::*;

    #[test]
    fn stays_within_capacity() {
        let c = BlockCache::new(16 * 1000);
        for i in 0..1000u64 {
            c.insert(1, i, Arc::new(vec![0u8; 100]));
        }
        assert!(c.bytes() <= 16 * 1000);
        assert!(c.get(1, 999).is_some());
        assert!(c.get(1, 0).is_none());
    }

    #[test]
    fn referenced_blocks_survive_a_sweep() {
        // One shard's worth: keep touching block 0 while inserting others.
        let c = BlockCache::new(SHARDS * 1000);
        let key0 = (7u64, 0u64);
        c.insert(key0.0, key0.1, Arc::new(vec![1u8; 100]));
        for i in 1..2000u64 {
            assert!(c.get(key0.0, key0.1).is_some(), "evicted at {i}");
            c.insert(7, i * 4096, Arc::new(vec![0u8; 100]));
        }
        assert!(c.bytes() <= SHARDS * 1000);
    }

    fn check_invariants(c: &BlockCache) {
        for sh in &c.shards {
            let s = lock(sh);
            let sum: usize = s.map.values().map(Entry::size).sum();
            assert_eq!(s.bytes, sum, "bytes counted");
            assert!(s.bytes <= c.per_shard, "shard over its share");
            let mut ring = s.ring.clone();
            ring.sort_unstable();
            let mut keys: Vec<Key> = s.map.keys().copied().collect();
            keys.sort_unstable();
            assert_eq!(ring, keys, "the clock visits exactly the cached keys");
        }
    }

    proptest::proptest! {
        /// Random inserts, hits, re-inserts and forgets: the byte count, the shard bound and
        /// the ring stay consistent, and a hit returns the block last inserted for its key.
        #[test]
        fn cache_stays_consistent(ops in proptest::collection::vec((0u8..4, 0u64..3, 0u64..40, 1usize..400), 0..300)) {
            let c = BlockCache::new(SHARDS * 1000);
            let mut last: std::collections::HashMap<(u64, u64), Vec<u8>> = Default::default();
            let mut real = std::collections::HashSet::new();
            for (op, file, off, size) in ops {
                match op {
                    0 | 1 => {
                        // Op 1 caches a real block (it gets a point index), op 0 bytes.
                        let b = if op == 1 {
                            let mut bb = BlockBuilder::new();
                            for i in 0..size as u32 / 8 {
                                bb.add(&i.to_be_bytes(), Some(&[op; 3]));
                            }
                            bb.finish()
                        } else {
                            vec![(off as u8) ^ (size as u8); size]
                        };
                        c.insert(file, off, Arc::new(b.clone()));
                        last.insert((file, off), b);
                        if op == 1 {
                            real.insert((file, off));
                        } else {
                            real.remove(&(file, off));
                        }
                    }
                    2 => {
                        if let Some(b) = c.get(file, off) {
                            proptest::prop_assert_eq!(Some(b.as_ref()), last.get(&(file, off)));
                        }
                        // A point read of a real block finds what `Block::get` finds in the
                        // bytes last inserted for its key.
                        let k = (file, off ^ 1);
                        let probe = (size as u32 % 60).to_be_bytes();
                        if let Some(found) = c.find_point(k.0, k.1, &probe) {
                            proptest::prop_assert!(last.contains_key(&k), "a block never inserted");
                            if real.contains(&k) {
                                let want = Block::new(Arc::new(last[&k].clone())).unwrap();
                                let want = want.get(&probe).unwrap().map(|v| want.value_slice(v).map(<[u8]>::to_vec));
                                let got = found.unwrap().map(|p| {
                                    proptest::prop_assert_eq!(p.block.as_slice(), last[&k].as_slice());
                                    let b = BlockRef::with_restart_count(&p.block, p.restarts).unwrap();
                                    Ok(b.value_slice(p.value).map(<[u8]>::to_vec))
                                }).transpose()?;
                                proptest::prop_assert_eq!(got, want);
                            }
                        }
                    }
                    _ => {
                        c.forget_file(file);
                        last.retain(|k, _| k.0 != file);
                    }
                }
                check_invariants(&c);
            }
        }
    }

    #[test]
    fn forget_file_and_oversized_blocks() {
        let c = BlockCache::new(SHARDS * 1000);
        c.insert(1, 0, Arc::new(vec![0u8; 100]));
        c.insert(2, 0, Arc::new(vec![0u8; 100]));
        c.insert(3, 0, Arc::new(vec![0u8; 5000]));
        assert!(
            c.get(3, 0).is_none(),
            "a block above a shard's share is not kept"
        );
        c.forget_file(1);
        assert!(c.get(1, 0).is_none());
        assert!(c.get(2, 0).is_some());
        c.insert(2, 0, Arc::new(vec![0u8; 50]));
        assert_eq!(c.bytes(), 50);
    }

    /// A point read finds every value (of any length) and tombstone of a cached block, and
    /// no key the block lacks, before and after the block's point index is built; a block
    /// that is not cached is `None`; the bytes read are those of the block last inserted.
    #[test]
    fn find_point_finds_what_the_block_holds() {
        let lens = [0usize, 1, 100, 127, 128, 129, 300];
        let mut bb = BlockBuilder::new();
        for (i, &n) in lens.iter().enumerate() {
            bb.add(&[2 * i as u8 + 1], Some(&vec![i as u8 + 7; n]));
        }
        bb.add(&[99], None);
        let c = BlockCache::new(SHARDS * 100_000);
        c.insert(1, 4096, Arc::new(vec![0u8; 64]));
        c.insert(1, 0, Arc::new(bb.finish()));
        assert!(c.find_point(1, 8192, &[1]).is_none());
        let value = |key: &[u8]| {
            c.find_point(1, 0, key).unwrap().unwrap().map(|p| {
                let b = BlockRef::with_restart_count(&p.block, p.restarts).unwrap();
                b.value_slice(p.value).map(<[u8]>::to_vec)
            })
        };
        for _ in 0..2 {
            // The first round builds the point index, the second uses it.
            for (i, &n) in lens.iter().enumerate() {
                let want = vec![i as u8 + 7; n];
                assert_eq!(value(&[2 * i as u8 + 1]), Some(Some(want)), "key {i}");
                assert_eq!(value(&[2 * i as u8 + 2]), None, "after key {i}");
            }
            assert_eq!(value(&[0]), None);
            assert_eq!(value(&[99]), Some(None), "a tombstone");
            assert_eq!(value(&[100]), None);
        }
        // Re-inserted with other bytes: the search reads the new block.
        let mut bb = BlockBuilder::new();
        bb.add(&[1], Some(b"new"));
        c.insert(1, 0, Arc::new(bb.finish()));
        assert_eq!(value(&[1]), Some(Some(b"new".to_vec())));
        assert_eq!(value(&[3]), None);
        check_invariants(&c);
    }
}
