//! Flat-tree (in-order) numbering: leaves are even, a parent sits between its children.

/// Depth of a node: the number of trailing one bits.
pub fn depth(i: u64) -> u32 {
    i.trailing_ones()
}

/// Position of the node among the nodes of its depth.
pub fn offset(i: u64) -> u64 {
    i >> (depth(i) + 1)
}

/// The node at `depth` and `offset`.
pub fn index(depth: u32, offset: u64) -> u64 {
    ((1 + 2 * offset) << depth) - 1
}

/// The parent node.
pub fn parent(i: u64) -> u64 {
    let d = depth(i);
    index(d + 1, offset(i) >> 1)
}

/// The other child of the parent.
pub fn sibling(i: u64) -> u64 {
    let d = depth(i);
    index(d, offset(i) ^ 1)
}

/// The rightmost leaf under `i`.
pub fn right_span(i: u64) -> u64 {
    let d = depth(i);
    if d == 0 {
        i
    } else {
        i + (1u64 << d) - 1
    }
}

/// The roots of the full subtrees covering the leaves before leaf `index` (an even index), left
/// to right (flat-tree's `fullRoots`).
pub fn full_roots(index: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut remaining = index / 2;
    let mut off = 0u64;
    while remaining > 0 {
        let mut factor = 1u64;
        while factor * 2 <= remaining {
            factor *= 2;
        }
        out.push(off + factor - 1);
        off += 2 * factor;
        remaining -= factor;
    }
    out
}

/// flat-tree's stateful iterator (used by the bitfield index; `sibling` moves it).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlatIter {
    /// Current node.
    pub index: u64,
    offset: u64,
    factor: u64,
}

impl FlatIter {
    /// Moves to `index`.
    pub fn seek(&mut self, index: u64) {
        self.index = index;
        if index & 1 == 1 {
            self.offset = offset(index);
            self.factor = 2u64 << depth(index);
        } else {
            self.offset = index / 2;
            self.factor = 2;
        }
    }

    /// True when the current node is a left child.
    pub fn is_left(&self) -> bool {
        self.offset & 1 == 0
    }

    fn prev(&mut self) -> u64 {
        if self.offset == 0 {
            return self.index;
        }
        self.offset -= 1;
        self.index -= self.factor;
        self.index
    }

    fn next(&mut self) -> u64 {
        self.offset += 1;
        self.index += self.factor;
        self.index
    }

    /// Moves to the sibling and returns it.
    pub fn sibling(&mut self) -> u64 {
        if self.is_left() {
            self.next()
        } else {
            self.prev()
        }
    }

    /// Moves to the parent and returns it.
    pub fn parent(&mut self) -> u64 {
        if self.offset & 1 == 1 {
            self.index -= self.factor / 2;
            self.offset = (self.offset - 1) / 2;
        } else {
            self.index += self.factor / 2;
            self.offset /= 2;
        }
        self.factor *= 2;
        self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basics() {
        assert_eq!(parent(0), 1);
        assert_eq!(parent(2), 1);
        assert_eq!(parent(1), 3);
        assert_eq!(parent(5), 3);
        assert_eq!(sibling(0), 2);
        assert_eq!(sibling(5), 1);
        assert_eq!(right_span(3), 6);
        assert_eq!(full_roots(0), Vec::<u64>::new());
        assert_eq!(full_roots(2), vec![0]);
        assert_eq!(full_roots(6), vec![1, 4]);
        assert_eq!(full_roots(16), vec![7]);
        assert_eq!(full_roots(18), vec![7, 16]);
    }
}
