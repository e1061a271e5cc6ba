//! A direct-mapped cache of decoded nodes (bounded memory, O(1), no bookkeeping).

use std::sync::Arc;

use crate::node::Node;

/// Slots in the cache (a power of two).
const SLOTS: usize = 1 << 18;

/// One slot: the seq is kept beside the node, so a lookup that misses (or hits) reads one slot
/// and not the node's memory (a cache miss of its own on large databases).
#[derive(Clone, Default)]
struct Slot {
    seq: u64,
    node: Option<Arc<Node>>,
}

/// Decoded nodes by seq; a new node evicts whatever shared its slot.
pub struct NodeCache {
    slots: Vec<Slot>,
}

impl Default for NodeCache {
    fn default() -> Self {
        NodeCache {
            slots: vec![Slot::default(); SLOTS],
        }
    }
}

impl NodeCache {
    /// The cached node `seq`, if present.
    #[inline]
    pub fn get(&self, seq: u64) -> Option<Arc<Node>> {
        let slot = &self.slots[(seq as usize) & (SLOTS - 1)];
        match &slot.node {
            Some(n) if slot.seq == seq => Some(n.clone()),
            _ => None,
        }
    }

    /// True when `seq` is cached: [`NodeCache::get`] would answer it now. Reads the slot only,
    /// not the node's memory.
    #[inline]
    pub fn contains(&self, seq: u64) -> bool {
        let slot = &self.slots[(seq as usize) & (SLOTS - 1)];
        slot.node.is_some() && slot.seq == seq
    }

    /// Starts loading the cached node `seq` (its slot, then every cache line of the node up to
    /// its value) into the CPU cache without waiting for it. A walk that is about to follow several
    /// pointers prefetches them all first: the loads then overlap, where one `Arc` clone after
    /// another (a locked instruction each) would wait for each miss in turn.
    #[inline]
    pub fn prefetch(&self, seq: u64) {
        let slot = &self.slots[(seq as usize) & (SLOTS - 1)];
        if let Some(n) = &slot.node {
            // The `Arc` counts sit just before the node. A listing reads the node up to its
            // value (`repr(C)`): counts and flags, key and path, the trie's bytes (inline in the
            // node) and the trie's length word at their end; every line of that is asked for.
            let start = Arc::as_ptr(n).cast::<u8>().wrapping_sub(16);
            let len = 16 + std::mem::offset_of!(Node, value);
            let mut off = 0;
            while off < len {
                prefetch(start.wrapping_add(off));
                off += 64;
            }
            prefetch(start.wrapping_add(len - 1));
        }
    }

    /// Starts loading the slot of `seq` (not the node: that would wait for the slot) into the
    /// CPU cache. A walk that knows the pointer it follows next a little before it follows it
    /// overlaps the slot's miss with its other work; the lookup then misses only on the node.
    #[inline]
    pub fn prefetch_slot(&self, seq: u64) {
        if let Some(slot) = self.slots.get((seq as usize) & (SLOTS - 1)) {
            prefetch(std::ptr::from_ref(slot).cast::<u8>());
        }
    }

    /// Caches `node`.
    pub fn insert(&mut self, node: Arc<Node>) {
        let i = (node.seq as usize) & (SLOTS - 1);
        self.slots[i] = Slot {
            seq: node.seq,
            node: Some(node),
        };
    }
}

/// Asks the CPU to bring the cache line holding `p` closer; no effect on anything else.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults (whatever the address, mapped or not), reads
    // nothing the program can observe and writes nothing; SSE is part of the x86-64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Node;
    use crate::path::KeyPath;
    use crate::trie_view::TrieWriter;

    fn node(seq: u64) -> Arc<Node> {
        let key = format!("k{seq}");
        Arc::new(Node::build(
            &key,
            KeyPath::of(&key),
            Some(b"v"),
            false,
            TrieWriter::default().finish(),
            seq,
            1,
        ))
    }

    #[test]
    fn a_slot_holds_the_newest_node_and_answers_only_its_seq() {
        let mut c = NodeCache::default();
        assert!(c.get(5).is_none());
        assert!(!c.contains(5));
        c.insert(node(5));
        assert!(c.contains(5));
        assert_eq!(c.get(5).map(|n| n.seq), Some(5));
        let other = 5 + SLOTS as u64;
        assert!(c.get(other).is_none(), "same slot, other seq");
        assert!(!c.contains(other), "same slot, other seq");
        c.insert(node(other));
        assert!(c.get(5).is_none(), "evicted");
        assert!(!c.contains(5), "evicted");
        assert!(c.contains(other));
        assert_eq!(
            c.get(other).map(|n| n.key.clone()),
            Some(format!("k{other}"))
        );
        assert!(c.get(0).is_none(), "an empty slot is not seq 0");
        assert!(!c.contains(0), "an empty slot is not seq 0");
    }

    #[test]
    fn prefetch_of_any_seq_or_address_is_harmless() {
        let mut c = NodeCache::default();
        c.insert(node(7));
        for seq in [0, 7, 8, u64::MAX, 7 + SLOTS as u64] {
            c.prefetch(seq);
            c.prefetch_slot(seq);
        }
        prefetch(std::ptr::null());
        prefetch(usize::MAX as *const u8);
        assert_eq!(c.get(7).map(|n| n.seq), Some(7));
    }
}
