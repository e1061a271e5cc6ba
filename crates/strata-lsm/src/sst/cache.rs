//! The block cache: verified block bytes keyed by (file number, offset), bounded in bytes,
//! sharded so that concurrent readers rarely meet on one lock. Eviction is CLOCK (a hit only
//! sets a bit; the hand clears bits and evicts unreferenced blocks), which approximates LRU
//! at the cost of a flag store per hit. A hit hands out the shared block (an `Arc`), never a
//! copy.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

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

struct Slot {
    key: Key,
    block: Option<Arc<Vec<u8>>>,
    referenced: bool,
}

#[derive(Default)]
struct Shard {
    map: HashMap<Key, usize, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    hand: usize,
    bytes: usize,
}

impl Shard {
    fn remove_slot(&mut self, i: usize) {
        if let Some(b) = self.slots[i].block.take() {
            self.bytes -= b.len();
            self.map.remove(&self.slots[i].key);
            self.free.push(i);
        }
    }

    /// Evicts unreferenced blocks until `bytes <= cap` (or nothing is left).
    fn evict(&mut self, cap: usize) {
        let n = self.slots.len();
        // Two sweeps clear every reference bit, so this ends.
        let mut budget = 2 * n + 1;
        while self.bytes > cap && budget > 0 && n > 0 {
            budget -= 1;
            let i = self.hand % n;
            self.hand = (i + 1) % n;
            let s = &mut self.slots[i];
            if s.block.is_none() {
                continue;
            }
            if s.referenced {
                s.referenced = false;
            } else {
                self.remove_slot(i);
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
        let i = *s.map.get(&(file, off))?;
        let slot = &mut s.slots[i];
        slot.referenced = true;
        slot.block.clone()
    }

    /// Inserts a block, evicting blocks beyond capacity (a block larger than a shard's share
    /// is not kept).
    pub fn insert(&self, file: u64, off: u64, block: Arc<Vec<u8>>) {
        let size = block.len();
        let mut s = self.shard((file, off));
        if let Some(&i) = s.map.get(&(file, off)) {
            s.remove_slot(i);
        }
        if size > self.per_shard {
            return;
        }
        s.evict(self.per_shard.saturating_sub(size));
        let slot = Slot {
            key: (file, off),
            block: Some(block),
            referenced: false,
        };
        let i = match s.free.pop() {
            Some(i) => {
                s.slots[i] = slot;
                i
            }
            None => {
                s.slots.push(slot);
                s.slots.len() - 1
            }
        };
        s.map.insert((file, off), i);
        s.bytes += size;
    }

    /// Drops every block of a file (after the file is deleted).
    pub fn forget_file(&self, file: u64) {
        for sh in &self.shards {
            let mut s = lock(sh);
            let doomed: Vec<usize> = s
                .slots
                .iter()
                .enumerate()
                .filter(|(_, x)| x.block.is_some() && x.key.0 == file)
                .map(|(i, _)| i)
                .collect();
            for i in doomed {
                s.remove_slot(i);
            }
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
