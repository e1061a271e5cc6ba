//! The per-node hash trie and its binary encoding (hyperdb's `trie-encoding.js`).
//!
//! `trie[i][v]` lists pointers to the newest nodes whose path equals this node's path on
//! `[0, i)` and has digit `v` at `i`. Encoding, for each non-empty index in ascending order:
//! `varint(i) varint(bits) { varint(feed*2 + more) varint(seq) }*` where `bits` has bit `v` set
//! for each non-empty bucket `v`, buckets come in ascending `v`, and `more` is 1 on every
//! pointer of a bucket but its last.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::path::{SEGMENT_DIGITS, TERMINATOR};
use crate::varint;

/// A reference to a node: feed index (writer-local) and block seq.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pointer {
    /// Index of the feed in the writer's feed list (0 = source).
    pub feed: u64,
    /// Block number in that feed.
    pub seq: u64,
}

/// The pointers of one bucket, in insertion order. A single writer almost always has zero or
/// one pointer per bucket, so those are stored inline (no allocation when decoding).
#[derive(Clone, Debug, Default)]
pub enum PtrList {
    /// No pointer.
    #[default]
    Empty,
    /// One pointer.
    One(Pointer),
    /// Two or more pointers.
    Many(Vec<Pointer>),
}

impl PtrList {
    /// Appends a pointer.
    pub fn push(&mut self, p: Pointer) {
        *self = match std::mem::take(self) {
            PtrList::Empty => PtrList::One(p),
            PtrList::One(a) => PtrList::Many(vec![a, p]),
            PtrList::Many(mut v) => {
                v.push(p);
                PtrList::Many(v)
            }
        };
    }
}

impl std::ops::Deref for PtrList {
    type Target = [Pointer];

    fn deref(&self) -> &[Pointer] {
        match self {
            PtrList::Empty => &[],
            PtrList::One(p) => std::slice::from_ref(p),
            PtrList::Many(v) => v,
        }
    }
}

impl<'a> IntoIterator for &'a PtrList {
    type Item = &'a Pointer;
    type IntoIter = std::slice::Iter<'a, Pointer>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for PtrList {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for PtrList {}

/// The five buckets (digits 0..=3 and the terminator 4) of one trie index.
pub type Bucket = [PtrList; 5];

/// A sparse trie: non-empty indexes in ascending order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trie {
    levels: Vec<(usize, Bucket)>,
}

impl Trie {
    /// An empty trie.
    pub fn new() -> Trie {
        Trie::default()
    }

    /// True when no index has a pointer.
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// JS `trie.length`: one more than the highest non-empty index (0 when empty).
    pub fn len(&self) -> usize {
        self.levels.last().map_or(0, |(i, _)| i + 1)
    }

    /// The bucket at `index`, if any pointer is there.
    pub fn get(&self, index: usize) -> Option<&Bucket> {
        self.levels
            .binary_search_by_key(&index, |(i, _)| *i)
            .ok()
            .map(|k| &self.levels[k].1)
    }

    /// The pointers at `index` with digit `value` (empty when none).
    pub fn pointers(&self, index: usize, value: u8) -> &[Pointer] {
        match self.get(index) {
            Some(b) if (value as usize) < 5 => &b[value as usize],
            _ => &[],
        }
    }

    /// Every `(index, bucket)` in ascending index order.
    pub fn levels(&self) -> impl Iterator<Item = (usize, &Bucket)> {
        self.levels.iter().map(|(i, b)| (*i, b))
    }

    /// Adds `ptr` to `trie[index][value]` unless it is already there (hyperdb's `_push`).
    pub fn push(&mut self, index: usize, value: u8, ptr: Pointer) {
        let k = match self.levels.binary_search_by_key(&index, |(i, _)| *i) {
            Ok(k) => k,
            Err(k) => {
                self.levels.insert(k, (index, Default::default()));
                k
            }
        };
        let bucket = &mut self.levels[k].1[value as usize];
        if !bucket.contains(&ptr) {
            bucket.push(ptr);
        }
    }

    /// Appends the encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        for (i, bucket) in &self.levels {
            varint::encode(*i as u64, out);
            let mut bits = 0u64;
            for (v, ptrs) in bucket.iter().enumerate() {
                if !ptrs.is_empty() {
                    bits |= 1 << v;
                }
            }
            varint::encode(bits, out);
            for ptrs in bucket {
                for (j, p) in ptrs.iter().enumerate() {
                    let more = u64::from(j + 1 < ptrs.len());
                    varint::encode(p.feed * 2 + more, out);
                    varint::encode(p.seq, out);
                }
            }
        }
    }

    /// The encoding as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// Decodes untrusted bytes. `path_len` is the owning node's path length: every index must be
    /// below it. Indexes must ascend strictly, bucket values be 0..=4, and 4 only at a segment
    /// boundary. `what` names the input in errors.
    pub fn decode(buf: &[u8], path_len: usize, what: &str) -> Result<Trie> {
        let mut levels: Vec<(usize, Bucket)> = Vec::new();
        let mut pos = 0;
        let err = |pos: usize, reason: &str| Error::decode(format!("{what} trie"), pos, reason);
        let rd = |pos: &mut usize| {
            let at = *pos;
            varint::decode(buf, pos).map_err(|e| err(at, e.as_str()))
        };
        while pos < buf.len() {
            let at = pos;
            let index = rd(&mut pos)?;
            if index >= path_len as u64 {
                return Err(err(
                    at,
                    &format!("trie index {index} is not below the path length {path_len}"),
                ));
            }
            let index = index as usize;
            if let Some((last, _)) = levels.last() {
                if index <= *last {
                    return Err(err(
                        at,
                        &format!("trie index {index} does not ascend (after {last})"),
                    ));
                }
            }
            let at = pos;
            let bits = rd(&mut pos)?;
            if bits == 0 || bits >= 1 << 5 {
                return Err(err(at, &format!("bucket bitfield {bits} is not in 1..=31")));
            }
            if bits & (1 << TERMINATOR) != 0 && !index.is_multiple_of(SEGMENT_DIGITS) {
                return Err(err(
                    at,
                    &format!("terminator bucket at index {index}, not a segment boundary"),
                ));
            }
            let mut bucket: Bucket = Default::default();
            for (v, slot) in bucket.iter_mut().enumerate() {
                if bits & (1 << v) == 0 {
                    continue;
                }
                // Large (hostile) buckets are checked with a set, not in quadratic time.
                let mut big: HashSet<Pointer> = HashSet::new();
                loop {
                    let at = pos;
                    let f = rd(&mut pos)?;
                    let seq = rd(&mut pos)?;
                    let ptr = Pointer { feed: f >> 1, seq };
                    let dup = if slot.len() < 16 {
                        slot.contains(&ptr)
                    } else {
                        if big.is_empty() {
                            big.extend(slot.iter().copied());
                        }
                        !big.insert(ptr)
                    };
                    if dup {
                        return Err(err(at, "duplicate pointer in one bucket"));
                    }
                    slot.push(ptr);
                    if f & 1 == 0 {
                        break;
                    }
                }
            }
            levels.push((index, bucket));
        }
        Ok(Trie { levels })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(feed: u64, seq: u64) -> Pointer {
        Pointer { feed, seq }
    }

    #[test]
    fn dep_complex_example() {
        let mut t = Trie::new();
        t.push(1, 1, p(0, 1));
        t.push(1, 2, p(5, 3));
        t.push(1, 3, p(6, 98));
        t.push(64, 4, p(0, 23));
        t.push(64, 4, p(1, 17));
        let bytes = t.to_bytes();
        assert_eq!(
            bytes,
            vec![
                0x01, 0x0e, 0x00, 0x01, 0x0a, 0x03, 0x0c, 0x62, 0x40, 0x10, 0x01, 0x17, 0x02, 0x11
            ]
        );
        assert_eq!(Trie::decode(&bytes, 65, "t").unwrap(), t);
        assert!(Trie::decode(&bytes, 64, "t").is_err());
    }

    #[test]
    fn rejects_bad_input() {
        assert!(Trie::decode(&[0x01, 0x00], 10, "t").is_err()); // empty bitfield
        assert!(Trie::decode(&[0x01, 0x20, 0, 1], 10, "t").is_err()); // value 5
        assert!(Trie::decode(&[0x01, 0x10, 0, 1], 10, "t").is_err()); // 4 off a boundary
        assert!(Trie::decode(&[0x01, 0x01, 1, 1], 10, "t").is_err()); // truncated chain
        assert!(Trie::decode(&[0x02, 0x01, 0, 1, 0x01, 0x01, 0, 1], 10, "t").is_err());
        // descending
    }
}
