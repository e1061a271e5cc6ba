//! The pinned index of an open SST, flattened: the last key of every data block in one
//! contiguous buffer, with parallel arrays of key ends and block locations. A lookup binary
//! searches these arrays (no pointer per key to follow), which keeps the index compact and its
//! probes cache-friendly.

use super::table::IndexEntry;

/// The decoded index of one SST.
#[derive(Debug, Default, Clone)]
pub struct FlatIndex {
    keys: Vec<u8>,
    ends: Vec<usize>,
    offs: Vec<u64>,
    lens: Vec<u32>,
}

impl FlatIndex {
    /// The index holding `entries` (in block order).
    pub fn new(entries: &[IndexEntry]) -> FlatIndex {
        let mut ix = FlatIndex {
            keys: Vec::with_capacity(entries.iter().map(|e| e.last_key.len()).sum()),
            ends: Vec::with_capacity(entries.len()),
            offs: Vec::with_capacity(entries.len()),
            lens: Vec::with_capacity(entries.len()),
        };
        for e in entries {
            ix.keys.extend_from_slice(&e.last_key);
            ix.ends.push(ix.keys.len());
            ix.offs.push(e.off);
            ix.lens.push(e.len);
        }
        ix
    }

    /// Number of data blocks.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when the file has no data block.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The last key of block `i`.
    pub fn last_key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    /// Offset and length (without its CRC) of block `i`.
    pub fn handle(&self, i: usize) -> (u64, u32) {
        (self.offs[i], self.lens[i])
    }

    /// Index of the first block whose last key is `>= target` (`len()` when none is).
    pub fn find(&self, target: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.last_key(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.keys.len() + self.len() * (8 + 8 + 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn find_matches_a_linear_search(keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..5), 0..40),
                                        target in proptest::collection::vec(any::<u8>(), 0..5)) {
            let entries: Vec<IndexEntry> = keys.iter().enumerate()
                .map(|(i, k)| IndexEntry { last_key: k.clone(), off: i as u64 * 100, len: i as u32 })
                .collect();
            let ix = FlatIndex::new(&entries);
            prop_assert_eq!(ix.len(), entries.len());
            for (i, e) in entries.iter().enumerate() {
                prop_assert_eq!(ix.last_key(i), e.last_key.as_slice());
                prop_assert_eq!(ix.handle(i), (e.off, e.len));
            }
            let want = entries.iter().position(|e| e.last_key.as_slice() >= target.as_slice()).unwrap_or(entries.len());
            prop_assert_eq!(ix.find(&target), want);
        }
    }
}
