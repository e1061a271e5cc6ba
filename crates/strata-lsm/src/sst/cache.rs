//! The block cache: verified block bytes keyed by (file number, offset), bounded in bytes,
//! sharded LRU so that concurrent readers rarely meet on one lock.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

const SHARDS: usize = 16;

type Key = (u64, u64);

#[derive(Default)]
struct Shard {
    map: HashMap<Key, (Arc<Vec<u8>>, u64)>,
    lru: BTreeMap<u64, Key>,
    tick: u64,
    bytes: usize,
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
        match self.shards[i].lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The cached block, if any.
    pub fn get(&self, file: u64, off: u64) -> Option<Arc<Vec<u8>>> {
        let mut s = self.shard((file, off));
        s.tick += 1;
        let tick = s.tick;
        let (block, old) = {
            let e = s.map.get_mut(&(file, off))?;
            let old = e.1;
            e.1 = tick;
            (Arc::clone(&e.0), old)
        };
        s.lru.remove(&old);
        s.lru.insert(tick, (file, off));
        Some(block)
    }

    /// Inserts a block, evicting the least recently used ones beyond capacity.
    pub fn insert(&self, file: u64, off: u64, block: Arc<Vec<u8>>) {
        let size = block.len();
        let mut s = self.shard((file, off));
        s.tick += 1;
        let tick = s.tick;
        if let Some((old, t)) = s.map.insert((file, off), (block, tick)) {
            s.bytes -= old.len();
            s.lru.remove(&t);
        }
        s.lru.insert(tick, (file, off));
        s.bytes += size;
        while s.bytes > self.per_shard {
            let Some((_, k)) = s.lru.pop_first() else {
                break;
            };
            if let Some((b, _)) = s.map.remove(&k) {
                s.bytes -= b.len();
            }
        }
    }

    /// Drops every block of a file (after the file is deleted).
    pub fn forget_file(&self, file: u64) {
        for sh in &self.shards {
            let mut s = match sh.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            let keys: Vec<Key> = s.map.keys().filter(|k| k.0 == file).copied().collect();
            for k in keys {
                if let Some((b, t)) = s.map.remove(&k) {
                    s.bytes -= b.len();
                    s.lru.remove(&t);
                }
            }
        }
    }

    /// Bytes cached.
    pub fn bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|s| match s.lock() {
                Ok(g) => g.bytes,
                Err(p) => p.into_inner().bytes,
            })
            .sum()
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
}
