//! A bloom filter over a memtable's keys, so that a point read of a key the memtable does not
//! hold skips the skip-list search (one cache line instead of a dozen node visits).
//!
//! The memtable does not know how many keys it will hold, so the filter grows in segments of
//! 4 096, 32 768, 262 144 and 2 097 152 keys (×8 each; the last one takes every key beyond):
//! inserts go to the newest segment, a lookup asks every segment (at most four cache lines).
//! Bits are set with atomic ORs by the one writer and read with plain atomic loads: a key
//! inserted before a reader's snapshot became visible has its bits visible to that reader (the
//! insert happens before the sequence number is published, which the reader acquires).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::sst::bloom::{line_of, probes, LINE};

const WORDS: usize = LINE / 8;
const SEGMENTS: usize = 4;
const FIRST: usize = 4096;
const GROWTH: usize = 8;
const BITS_PER_KEY: usize = 10;
const K: u8 = 7;

#[repr(C, align(64))]
struct Line([AtomicU64; WORDS]);

struct Segment {
    lines: Box<[Line]>,
    /// Keys this segment is sized for.
    capacity: usize,
}

impl Segment {
    fn new(capacity: usize) -> Segment {
        let n = (capacity * BITS_PER_KEY).div_ceil(LINE * 8).max(1);
        Segment {
            lines: (0..n)
                .map(|_| Line(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            capacity,
        }
    }

    fn insert(&self, hash: u64) {
        let line = &self.lines[line_of(hash, self.lines.len())].0;
        for bit in probes(hash, K) {
            line[(bit / 64) as usize].fetch_or(1 << (bit % 64), Ordering::Relaxed);
        }
    }

    fn may_contain(&self, hash: u64) -> bool {
        let line = &self.lines[line_of(hash, self.lines.len())].0;
        probes(hash, K)
            .all(|bit| line[(bit / 64) as usize].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0)
    }
}

/// The growing filter of one memtable.
pub struct MemFilter {
    segments: [OnceLock<Segment>; SEGMENTS],
    /// Keys inserted (only the writer, which holds the memtable's writer lock, changes it).
    count: AtomicUsize,
}

impl Default for MemFilter {
    fn default() -> MemFilter {
        MemFilter {
            segments: std::array::from_fn(|_| OnceLock::new()),
            count: AtomicUsize::new(0),
        }
    }
}

impl MemFilter {
    /// Adds a key hash ([`crate::sst::bloom::key_hash`]). Callers serialise inserts.
    pub fn insert(&self, hash: u64) {
        let n = self.count.fetch_add(1, Ordering::Relaxed);
        // The segment for the n-th key: the first whose cumulative capacity exceeds n.
        let mut cap = FIRST;
        let mut total = 0;
        let mut i = 0;
        while i + 1 < SEGMENTS && n >= total + cap {
            total += cap;
            cap *= GROWTH;
            i += 1;
        }
        let seg = self.segments[i].get_or_init(|| Segment::new(cap));
        debug_assert_eq!(seg.capacity, cap);
        seg.insert(hash);
    }

    /// False when no key with this hash was inserted (before the caller's snapshot).
    pub fn may_contain(&self, hash: u64) -> bool {
        for s in &self.segments {
            match s.get() {
                Some(seg) if seg.may_contain(hash) => return true,
                Some(_) => {}
                None => break,
            }
        }
        false
    }

    /// Bytes of the allocated segments.
    pub fn bytes(&self) -> usize {
        self.segments
            .iter()
            .filter_map(OnceLock::get)
            .map(|s| s.lines.len() * LINE)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::bloom::key_hash;

    #[test]
    fn no_false_negatives_across_segments_and_few_positives() {
        let f = MemFilter::default();
        assert!(!f.may_contain(key_hash(b"x")));
        let n = if cfg!(miri) { 5000u32 } else { 300_000 };
        for i in 0..n {
            f.insert(key_hash(&i.to_be_bytes()));
            if i % 997 == 0 {
                assert!(f.may_contain(key_hash(&i.to_be_bytes())));
            }
        }
        assert!((0..n).all(|i| f.may_contain(key_hash(&i.to_be_bytes()))));
        let fp = (n..n + 100_000)
            .filter(|i| f.may_contain(key_hash(&i.to_be_bytes())))
            .count();
        assert!(fp < 5_000, "false positives {fp} of 100000");
    }
}
