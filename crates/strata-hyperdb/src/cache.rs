//! A direct-mapped cache of decoded nodes (bounded memory, O(1), no bookkeeping).

use std::sync::Arc;

use crate::node::Node;

/// Slots in the cache (a power of two).
const SLOTS: usize = 1 << 18;

/// Decoded nodes by seq; a new node evicts whatever shared its slot.
pub struct NodeCache {
    slots: Vec<Option<Arc<Node>>>,
}

impl Default for NodeCache {
    fn default() -> Self {
        NodeCache {
            slots: vec![None; SLOTS],
        }
    }
}

impl NodeCache {
    /// The cached node `seq`, if present.
    pub fn get(&self, seq: u64) -> Option<Arc<Node>> {
        match &self.slots[(seq as usize) & (SLOTS - 1)] {
            Some(n) if n.seq == seq => Some(n.clone()),
            _ => None,
        }
    }

    /// Caches `node`.
    pub fn insert(&mut self, node: Arc<Node>) {
        let i = (node.seq as usize) & (SLOTS - 1);
        self.slots[i] = Some(node);
    }
}
