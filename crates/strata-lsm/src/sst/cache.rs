//! The block cache: verified block bytes keyed by (file number, offset), bounded in bytes,
//! sharded so that concurrent readers rarely meet on one lock. Eviction is CLOCK (a hit only
//! sets a bit; the hand clears bits and evicts unreferenced blocks), which approximates LRU
//! at the cost of a flag store per hit. A hit hands out the shared block (an `Arc`), never a
//! copy; the map holds the block and its bit directly, so a hit reads one bucket.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use super::block::Block;
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

/// A cached block with its CLOCK reference bit, held in the map itself: a hit touches the
/// map's bucket and the block, nothing in between. A block that point reads ask for again
/// also keeps its [`PointIndex`].
struct Entry {
    block: Arc<Vec<u8>>,
    referenced: bool,
    point: Point,
}

/// The point-read state of a cached block.
#[derive(Clone)]
enum Point {
    /// No point read has found the block in the cache yet.
    Unread,
    /// One point read found it (and searched the block itself): the next one builds the index.
    Once,
    /// The block's point index (`None`: the block has none).
    Built(Option<PointIndex>),
}

impl Entry {
    /// Bytes charged: the block and its point index.
    fn size(&self) -> usize {
        let point = match &self.point {
            Point::Built(Some(p)) => p.bytes(),
            _ => 0,
        };
        self.block.len() + point
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

    /// The cached block with its point index, built (and charged) on the second point read
    /// that finds the block here: a block that is read once while it is cached (most blocks
    /// when the data is much larger than the cache) is searched without building an index
    /// that would cost ~8 block searches and never be used.
    pub fn get_point(&self, file: u64, off: u64) -> Option<(Arc<Vec<u8>>, Option<PointIndex>)> {
        let key = (file, off);
        let mut s = self.shard(key);
        let e = s.map.get_mut(&key)?;
        e.referenced = true;
        match &e.point {
            Point::Built(p) => return Some((Arc::clone(&e.block), p.clone())),
            Point::Unread => {
                e.point = Point::Once;
                return Some((Arc::clone(&e.block), None));
            }
            Point::Once => {}
        }
        let p = Block::new(Arc::clone(&e.block))
            .ok()
            .and_then(|b| PointIndex::build(&b));
        e.point = Point::Built(p.clone());
        let out = (Arc::clone(&e.block), p);
        let added = out.1.as_ref().map_or(0, PointIndex::bytes);
        s.bytes += added;
        // The entry was just referenced, so the sweep keeps it.
        s.evict(self.per_shard);
        Some(out)
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
        s.map.insert(
            key,
            Entry {
                block,
                referenced: false,
                point: Point::Unread,
            },
        );
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
            for (op, file, off, size) in ops {
                match op {
                    0 | 1 => {
                        // Op 1 caches a real block (it gets a point index), op 0 bytes.
                        let b = if op == 1 {
                            let mut bb = super::super::block::BlockBuilder::new();
                            for i in 0..size as u32 / 8 {
                                bb.add(&i.to_be_bytes(), Some(&[op; 3]));
                            }
                            bb.finish()
                        } else {
                            vec![(off as u8) ^ (size as u8); size]
                        };
                        c.insert(file, off, Arc::new(b.clone()));
                        last.insert((file, off), b);
                    }
                    2 => {
                        if let Some(b) = c.get(file, off) {
                            proptest::prop_assert_eq!(Some(b.as_ref()), last.get(&(file, off)));
                        }
                        if let Some((b, _)) = c.get_point(file, off ^ 1) {
                            proptest::prop_assert_eq!(Some(b.as_ref()), last.get(&(file, off ^ 1)));
                        }
                    }
                    _ => c.forget_file(file),
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
}
