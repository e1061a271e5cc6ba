//! The trie read in place from its encoded bytes (see [`crate::trie`] for the encoding), and
//! built straight into them.
//!
//! A node keeps its trie as the bytes of its block plus a table of where each level starts
//! ([`TrieBytes`], one allocation). [`TrieBytes::parse`] checks the bytes once (the same checks,
//! errors and offsets as [`Trie::decode`](crate::trie::Trie::decode)); afterwards a walk finds a
//! level by a binary search over the table and reads its pointers from the bytes. A node of a
//! 100,000-key database has about 9 levels and 100 trie bytes: the owned [`Trie`] of the same
//! node took over a kilobyte in scattered allocations.
//!
//! [`Trie`]: crate::trie::Trie

use rustc_hash::FxHashSet;
use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::path::{SEGMENT_DIGITS, TERMINATOR};
use crate::trie::Pointer;
use crate::varint;

/// Buckets with more pointers than this are checked for duplicates with a hash set (a hostile
/// bucket of many pointers must not cost quadratic time).
const LINEAR_DUP_CHECK: usize = 16;

/// One non-empty index of a trie: its buckets, still encoded.
#[derive(Clone, Copy, Debug)]
pub struct Level<'a> {
    /// The trie index.
    pub index: usize,
    /// Bit `v` set when bucket `v` is not empty.
    pub bits: u8,
    /// The pointer chains of the non-empty buckets, in ascending `v`.
    body: &'a [u8],
}

/// The pointers of one bucket, decoded as they are read.
#[derive(Clone, Debug)]
pub struct Ptrs<'a> {
    buf: &'a [u8],
    pos: usize,
    done: bool,
}

/// Reads one pointer of a chain: `(pointer, more)`. `None` on malformed bytes (never the case
/// for bytes that passed [`TrieView::parse`]).
#[inline]
fn read_ptr(buf: &[u8], pos: &mut usize) -> Option<(Pointer, bool)> {
    let f = varint::decode(buf, pos).ok()?;
    let seq = varint::decode(buf, pos).ok()?;
    Some((Pointer { feed: f >> 1, seq }, f & 1 == 1))
}

impl<'a> Iterator for Ptrs<'a> {
    type Item = Pointer;

    #[inline]
    fn next(&mut self) -> Option<Pointer> {
        if self.done {
            return None;
        }
        match read_ptr(self.buf, &mut self.pos) {
            Some((p, more)) => {
                self.done = !more;
                Some(p)
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}

impl Default for Ptrs<'_> {
    fn default() -> Self {
        Ptrs::empty()
    }
}

impl Ptrs<'_> {
    /// No pointer.
    pub fn empty() -> Self {
        Ptrs {
            buf: &[],
            pos: 0,
            done: true,
        }
    }

    /// True when there is no pointer (left).
    pub fn is_empty(&self) -> bool {
        self.done
    }

    /// The pointers as a vector.
    pub fn to_vec(&self) -> Vec<Pointer> {
        self.clone().collect()
    }
}

impl<'a> Level<'a> {
    /// All five buckets (0..=3 and the terminator 4), read in one pass over the level.
    pub fn buckets(&self) -> [Ptrs<'a>; 5] {
        let mut out: [Ptrs<'a>; 5] = Default::default();
        let mut pos = 0;
        for (v, slot) in out.iter_mut().enumerate() {
            if self.bits & (1 << v) == 0 {
                *slot = Ptrs::empty();
                continue;
            }
            *slot = Ptrs {
                buf: self.body,
                pos,
                done: false,
            };
            loop {
                match read_ptr(self.body, &mut pos) {
                    Some((_, true)) => continue,
                    Some((_, false)) => break,
                    None => return out,
                }
            }
        }
        out
    }

    /// Calls `f(v, pointer)` for every pointer of the level, buckets in ascending `v` and each
    /// bucket's chain in order (what [`Level::bucket`] yields for `v` = 0..=4, one after the
    /// other), reading the level once. Stops at malformed bytes (never the case for bytes that
    /// passed [`TrieBytes::parse`] or were written by [`LevelBuf`]).
    #[inline]
    pub(crate) fn for_each_pointer(&self, mut f: impl FnMut(u8, Pointer)) {
        let mut pos = 0;
        for v in 0..=TERMINATOR {
            if self.bits & (1 << v) == 0 {
                continue;
            }
            loop {
                match read_ptr(self.body, &mut pos) {
                    Some((p, more)) => {
                        f(v, p);
                        if !more {
                            break;
                        }
                    }
                    None => return,
                }
            }
        }
    }

    /// The pointers of bucket `v` (0..=4; empty otherwise).
    pub fn bucket(&self, v: u8) -> Ptrs<'a> {
        if v > TERMINATOR || self.bits & (1 << v) == 0 {
            return Ptrs::empty();
        }
        let mut pos = 0;
        for _ in 0..(self.bits & ((1 << v) - 1)).count_ones() {
            // Skip an earlier bucket's chain.
            loop {
                match read_ptr(self.body, &mut pos) {
                    Some((_, true)) => continue,
                    Some((_, false)) => break,
                    None => return Ptrs::empty(),
                }
            }
        }
        Ptrs {
            buf: self.body,
            pos,
            done: false,
        }
    }
}

/// Tries up to this size (table included) are stored inside the node, not in an allocation of
/// their own: a node of a 100,000-key database has about 9 levels and 100 trie bytes (170 with
/// the table).
const INLINE: usize = 232;

/// Bytes per entry of the level table: `u32` index, `u32` start of the level in the encoding.
const ENTRY: usize = 8;

/// A trie encoding (checked, or written by us) with a table of where each level starts, in one
/// allocation: `u32 n ‖ n × (u32 index ‖ u32 start) ‖ encoding` (little-endian). Finding a
/// level is a binary search over the table; its pointers are then read from the encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrieBytes(SmallVec<[u8; INLINE]>);

/// Collects the level table and the encoding of a trie.
#[derive(Default)]
struct TableBuilder {
    /// One entry per level (a single push each).
    table: SmallVec<[[u8; ENTRY]; 16]>,
}

impl TableBuilder {
    fn level(&mut self, index: usize, start: usize) {
        // Indexes are below the path length and starts below the block length: both fit (the
        // callers check), the `as` never truncates. Little-endian: the index's 4 bytes, then
        // the start's.
        let entry = (u64::from(start as u32) << 32) | u64::from(index as u32);
        self.table.push(entry.to_le_bytes());
    }

    fn finish(self, encoding: &[u8]) -> TrieBytes {
        let table = self.table.as_slice().as_flattened();
        let mut out = SmallVec::with_capacity(4 + table.len() + encoding.len());
        // At most one entry per level, and levels are below a path length that fits a u32.
        out.extend_from_slice(&(self.table.len() as u32).to_le_bytes());
        out.extend_from_slice(table);
        out.extend_from_slice(encoding);
        TrieBytes(out)
    }
}

impl TrieBytes {
    /// Checks untrusted trie bytes exactly as [`Trie::decode`](crate::trie::Trie::decode) does
    /// (same errors at the same offsets): every index below `path_len`, strictly ascending,
    /// bucket bitfields in 1..=31, the terminator bucket only on a segment boundary, varints
    /// within 64 bits, no pointer twice in one bucket. `what` names the input in errors.
    pub fn parse(buf: &[u8], path_len: usize, what: &str) -> Result<TrieBytes> {
        let err = |pos: usize, reason: &str| Error::decode(format!("{what} trie"), pos, reason);
        if u32::try_from(buf.len()).is_err() {
            return Err(err(0, "trie larger than 4 GiB"));
        }
        let rd = |pos: &mut usize| {
            let at = *pos;
            varint::decode(buf, pos).map_err(|e| err(at, e.as_str()))
        };
        let mut table = TableBuilder::default();
        let mut pos = 0;
        let mut last: Option<usize> = None;
        let mut bucket: SmallVec<[Pointer; LINEAR_DUP_CHECK]> = SmallVec::new();
        let mut big: FxHashSet<Pointer> = FxHashSet::default();
        while pos < buf.len() {
            let at = pos;
            let index = rd(&mut pos)?;
            if index >= path_len as u64 || u32::try_from(index).is_err() {
                return Err(err(
                    at,
                    &format!("trie index {index} is not below the path length {path_len}"),
                ));
            }
            let index = index as usize;
            if let Some(last) = last {
                if index <= last {
                    return Err(err(
                        at,
                        &format!("trie index {index} does not ascend (after {last})"),
                    ));
                }
            }
            last = Some(index);
            table.level(index, at);
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
            for _ in 0..bits.count_ones() {
                bucket.clear();
                big.clear();
                loop {
                    let at = pos;
                    let f = rd(&mut pos)?;
                    let seq = rd(&mut pos)?;
                    let ptr = Pointer { feed: f >> 1, seq };
                    let dup = if bucket.len() < LINEAR_DUP_CHECK {
                        let dup = bucket.contains(&ptr);
                        bucket.push(ptr);
                        dup
                    } else {
                        if big.is_empty() {
                            big.extend(bucket.iter().copied());
                        }
                        !big.insert(ptr)
                    };
                    if dup {
                        return Err(err(at, "duplicate pointer in one bucket"));
                    }
                    if f & 1 == 0 {
                        break;
                    }
                }
            }
        }
        Ok(table.finish(buf))
    }

    /// The view to read the trie through.
    #[inline]
    pub fn view(&self) -> TrieView<'_> {
        let n = self
            .0
            .get(..4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
        let split = (4 + n * ENTRY).min(self.0.len());
        TrieView {
            table: self.0.get(4..split).unwrap_or(&[]),
            buf: &self.0[split..],
        }
    }

    /// The encoded trie (what the block holds).
    pub fn encoded(&self) -> &[u8] {
        self.view().buf
    }
}

/// A trie read in place: the level table and the encoding of a [`TrieBytes`].
#[derive(Clone, Copy, Debug)]
pub struct TrieView<'a> {
    table: &'a [u8],
    buf: &'a [u8],
}

/// The levels of a trie in ascending index order.
#[derive(Clone, Debug)]
pub struct Levels<'a> {
    view: TrieView<'a>,
    k: usize,
}

impl<'a> Iterator for Levels<'a> {
    type Item = Level<'a>;

    #[inline]
    fn next(&mut self) -> Option<Level<'a>> {
        let level = self.view.level(self.k)?;
        self.k += 1;
        Some(level)
    }
}

impl<'a> TrieView<'a> {
    /// Number of non-empty levels.
    #[inline]
    pub fn level_count(&self) -> usize {
        self.table.len() / ENTRY
    }

    #[inline]
    fn entry(&self, k: usize) -> Option<(usize, usize)> {
        let e = self.table.get(k * ENTRY..(k + 1) * ENTRY)?;
        let index = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize;
        let start = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
        Some((index, start))
    }

    /// Level `k` (the `k`-th non-empty index).
    #[inline]
    fn level(&self, k: usize) -> Option<Level<'a>> {
        let (index, start) = self.entry(k)?;
        let end = self.entry(k + 1).map_or(self.buf.len(), |(_, s)| s);
        let body = self.buf.get(start..end)?;
        let mut pos = 0;
        varint::decode(body, &mut pos).ok()?;
        let bits = varint::decode(body, &mut pos).ok()?;
        Some(Level {
            index,
            bits: u8::try_from(bits).ok()?,
            body: &body[pos..],
        })
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// True when no index has a pointer.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Every non-empty level, in ascending index order.
    pub fn levels(&self) -> Levels<'a> {
        Levels { view: *self, k: 0 }
    }

    /// The first non-empty level at `index` or above.
    #[inline]
    pub fn level_from(&self, index: usize) -> Option<Level<'a>> {
        let (mut lo, mut hi) = (0, self.level_count());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.entry(mid) {
                Some((i, _)) if i < index => lo = mid + 1,
                _ => hi = mid,
            }
        }
        self.level(lo)
    }

    /// The level at `index`, if it has any pointer.
    #[inline]
    pub fn get(&self, index: usize) -> Option<Level<'a>> {
        self.level_from(index).filter(|l| l.index == index)
    }

    /// The pointers at `index` with digit `value` (empty when none).
    #[inline]
    pub fn pointers(&self, index: usize, value: u8) -> Ptrs<'a> {
        match self.get(index) {
            Some(level) => level.bucket(value),
            None => Ptrs::empty(),
        }
    }
}

/// The five buckets of one level being built, in insertion order (hyperdb's `_push`: a pointer
/// already in its bucket is not added again).
#[derive(Default)]
pub(crate) struct LevelBuf {
    buckets: [SmallVec<[Pointer; 2]>; 5],
}

impl LevelBuf {
    /// Adds `ptr` to bucket `value` unless it is there.
    pub(crate) fn push(&mut self, value: u8, ptr: Pointer) {
        let b = &mut self.buckets[usize::from(value)];
        if !b.contains(&ptr) {
            b.push(ptr);
        }
    }

    /// Appends the level at `index` to `trie` (nothing when it is empty), and empties it.
    pub(crate) fn write(&mut self, index: usize, trie: &mut TrieWriter) {
        let mut bits = 0u64;
        for (v, b) in self.buckets.iter().enumerate() {
            if !b.is_empty() {
                bits |= 1 << v;
            }
        }
        if bits == 0 {
            return;
        }
        trie.table.level(index, trie.bytes.len());
        let mut out = Staged {
            out: &mut trie.bytes,
            buf: [0; STAGE],
            n: 0,
        };
        out.put(index as u64);
        out.put(bits);
        for b in &mut self.buckets {
            for (j, p) in b.iter().enumerate() {
                let more = u64::from(j + 1 < b.len());
                out.put(p.feed * 2 + more);
                out.put(p.seq);
            }
            b.clear();
        }
        out.flush();
    }
}

/// Bytes staged by [`Staged`] before they are copied to the trie (a level of a 100,000-key
/// database takes about 20).
const STAGE: usize = 64;

/// Varints written into a small array and copied to the trie's bytes a level (or `STAGE`
/// bytes) at a time: one push per byte into the `SmallVec` (a capacity and spill check each),
/// or one copy per varint (a `memcpy` call each), cost more.
struct Staged<'a> {
    out: &'a mut SmallVec<[u8; INLINE]>,
    buf: [u8; STAGE],
    n: usize,
}

impl Staged<'_> {
    /// Appends `v` as a varint (at most 10 bytes).
    #[inline]
    fn put(&mut self, mut v: u64) {
        if self.n > STAGE - 10 {
            self.flush();
        }
        while v >= 0x80 {
            self.buf[self.n] = (v as u8) | 0x80;
            self.n += 1;
            v >>= 7;
        }
        self.buf[self.n] = v as u8;
        self.n += 1;
    }

    /// Copies the staged bytes to the trie.
    fn flush(&mut self) {
        self.out.extend_from_slice(&self.buf[..self.n]);
        self.n = 0;
    }
}

/// A trie being written level by level, in ascending index order.
#[derive(Default)]
pub(crate) struct TrieWriter {
    table: TableBuilder,
    bytes: SmallVec<[u8; INLINE]>,
}

impl TrieWriter {
    /// The trie written so far.
    pub(crate) fn finish(self) -> TrieBytes {
        self.table.finish(&self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trie::Trie;

    #[test]
    fn reads_the_dep_example() {
        let bytes = [
            0x01, 0x0e, 0x00, 0x01, 0x0a, 0x03, 0x0c, 0x62, 0x40, 0x10, 0x01, 0x17, 0x02, 0x11,
        ];
        let owned = Trie::decode(&bytes, 65, "t").unwrap();
        let parsed = TrieBytes::parse(&bytes, 65, "t").unwrap();
        let view = parsed.view();
        assert_eq!(parsed.encoded(), &bytes[..]);
        for i in 0..70 {
            for v in 0..6 {
                assert_eq!(
                    view.pointers(i, v).to_vec(),
                    owned.pointers(i, v),
                    "{i} {v}"
                );
            }
        }
        assert_eq!(
            view.levels().map(|l| l.index).collect::<Vec<_>>(),
            vec![1, 64]
        );
        assert_eq!(view.level_from(2).map(|l| l.index), Some(64));
        assert!(view.level_from(65).is_none());
        assert!(TrieBytes::parse(&bytes, 64, "t").is_err());
    }

    #[test]
    fn for_each_pointer_yields_the_buckets_in_order() {
        let mut t = Trie::new();
        let p = |feed, seq| Pointer { feed, seq };
        t.push(1, 1, p(0, 1));
        t.push(1, 2, p(5, 3));
        t.push(1, 2, p(0, 300));
        t.push(1, 3, p(6, 98));
        t.push(2, 0, p(0, 1 << 40));
        t.push(64, 0, p(0, 2));
        t.push(64, 4, p(0, 23));
        t.push(64, 4, p(1, 17));
        t.push(64, 4, p(0, 200_000));
        let parsed = TrieBytes::parse(&t.to_bytes(), 65, "t").unwrap();
        let mut levels = 0;
        for level in parsed.view().levels() {
            let mut got = Vec::new();
            level.for_each_pointer(|v, p| got.push((v, p)));
            let want: Vec<(u8, Pointer)> = (0..=TERMINATOR)
                .flat_map(|v| level.bucket(v).map(move |p| (v, p)))
                .collect();
            assert_eq!(got, want, "level {}", level.index);
            levels += 1;
        }
        assert_eq!(levels, 3);
    }

    #[test]
    fn written_tries_read_back() {
        let mut w = TrieWriter::default();
        let mut level = LevelBuf::default();
        let p = |seq| Pointer { feed: 0, seq };
        level.push(1, p(1));
        level.push(2, p(3));
        level.push(1, p(1));
        level.push(1, p(7));
        level.write(3, &mut w);
        level.write(4, &mut w); // empty: nothing
        level.push(4, p(9));
        level.write(32, &mut w);
        let t = w.finish();
        let mut owned = Trie::new();
        owned.push(3, 1, p(1));
        owned.push(3, 1, p(7));
        owned.push(3, 2, p(3));
        owned.push(32, 4, p(9));
        assert_eq!(t.encoded(), owned.to_bytes());
        assert_eq!(TrieBytes::parse(t.encoded(), 33, "t").unwrap(), t);
    }

    #[test]
    fn long_levels_are_written_whole() {
        // Levels longer than the staging array (many pointers, 10-byte varints), among short
        // ones: the same bytes as the owned trie's encoder.
        let mut w = TrieWriter::default();
        let mut level = LevelBuf::default();
        let mut owned = Trie::new();
        let seqs = |i: u64| [1, 127, 128, 1 << 35, u64::MAX - i, (u64::MAX >> 1) + i];
        for (index, n) in [(0usize, 1u64), (5, 40), (6, 3), (32, 25), (40, 1)] {
            for i in 0..n {
                for (k, seq) in seqs(i).into_iter().enumerate() {
                    let v = if index == 32 && k == 0 {
                        TERMINATOR
                    } else {
                        (k % 4) as u8
                    };
                    let p = Pointer { feed: i % 3, seq };
                    level.push(v, p);
                    owned.push(index, v, p);
                }
            }
            level.write(index, &mut w);
        }
        let t = w.finish();
        assert_eq!(t.encoded(), owned.to_bytes());
        assert_eq!(TrieBytes::parse(t.encoded(), 41, "t").unwrap(), t);
    }

    #[test]
    fn big_buckets_are_checked_for_duplicates() {
        let mut t = Trie::new();
        for s in 1..100 {
            t.push(0, 1, Pointer { feed: 0, seq: s });
        }
        let ok = t.to_bytes();
        let parsed = TrieBytes::parse(&ok, 10, "t").unwrap();
        assert_eq!(parsed.view().pointers(0, 1).count(), 99);
        // Make the last pointer repeat the first one.
        let mut bad = ok.clone();
        let n = bad.len();
        bad[n - 1] = 1;
        let e = TrieBytes::parse(&bad, 10, "t").unwrap_err().to_string();
        assert!(e.contains("duplicate"), "{e}");
        assert_eq!(
            Trie::decode(&bad, 10, "t").unwrap_err().to_string(),
            e,
            "same error as the full decoder"
        );
    }
}
