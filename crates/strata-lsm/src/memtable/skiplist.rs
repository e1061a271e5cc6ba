//! An arena-allocated skip list: one writer at a time, any number of lock-free readers.
//!
//! This is LevelDB's memtable structure. Entries are `(key, seq, value-or-tombstone)`,
//! ordered by key ascending, then sequence number descending; nothing is ever removed. Each
//! node lives in an arena chunk owned by the list and freed only when the list is dropped, so
//! a reader that keeps the list alive (the memtable's `Arc`) may hold plain pointers to nodes
//! and hand out slices of their keys and values.
//!
//! Publication: a writer fills a node completely, then links it bottom-up with `Release`
//! stores; readers follow links with `Acquire` loads, so a reader that reaches a node sees all
//! of it. Level 0 is also linked backwards (`prev`), set before the node is published and
//! updated in its successor after: a reader walking backwards may miss a node that is being
//! inserted right now — such a node carries a sequence number above every snapshot that
//! exists while it is being linked, so no snapshot can see it anyway.
//!
//! Node layout (8-aligned, in an arena chunk):
//! `seq u64 | key_len u32 | val_len u32 (u32::MAX: tombstone) | height u32 | pad u32 |
//!  prev ptr | next ptr * height | key | value`.

use std::alloc::{alloc, alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::cmp::Ordering;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtOrd};

/// Tallest tower (LevelDB's 12 with branching 4 covers ~4^12 = 16M entries per list).
pub const MAX_HEIGHT: usize = 12;
const BRANCHING: u64 = 4;
const TOMBSTONE: u32 = u32::MAX;
const OFF_SEQ: usize = 0;
const OFF_KLEN: usize = 8;
const OFF_VLEN: usize = 12;
const OFF_HEIGHT: usize = 16;
const OFF_PREV: usize = 24;
const OFF_NEXT: usize = 32;
const PTR: usize = std::mem::size_of::<AtomicPtr<u8>>();
const FIRST_CHUNK: usize = 4 << 10;
const MAX_CHUNK: usize = 1 << 20;

/// A pointer to a node (never null); valid while the list that made it is alive.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Node(NonNull<u8>);

impl Node {
    fn raw(self) -> *mut u8 {
        self.0.as_ptr()
    }

    fn from_raw(p: *mut u8) -> Option<Node> {
        NonNull::new(p).map(Node)
    }

    /// The node's address, its provenance exposed so that [`Node::from_exposed_addr`] may
    /// turn the number back into this node (the memtable's hash index stores addresses).
    pub fn expose_addr(self) -> usize {
        self.raw().expose_provenance()
    }

    /// The node at an address from [`Node::expose_addr`] (`None` for 0). Using the node is
    /// subject to the same contract as any node: its list must be alive.
    pub fn from_exposed_addr(addr: usize) -> Option<Node> {
        Node::from_raw(std::ptr::with_exposed_provenance_mut(addr))
    }

    /// # Safety
    /// `self` must point to a node of a list that is still alive.
    unsafe fn u32_at(self, off: usize) -> u32 {
        // SAFETY: the header fields are written before publication and never change; the
        // offset is inside the header, 4-aligned within an 8-aligned node.
        unsafe { ptr::read(self.raw().add(off) as *const u32) }
    }

    /// # Safety
    /// As [`Node::u32_at`]; `level < height` for a tower slot.
    unsafe fn link(self, off: usize) -> &'static AtomicPtr<u8> {
        // SAFETY: link slots are 8-aligned, initialised before publication, and only ever
        // accessed atomically. The 'static lifetime is a lie bounded by the caller's contract
        // (the list outlives every use): these references never escape this module.
        unsafe { &*(self.raw().add(off) as *const AtomicPtr<u8>) }
    }

    /// The sequence number.
    ///
    /// # Safety
    /// `self` must point to a published node of a list that is still alive.
    pub unsafe fn seq(self) -> u64 {
        // SAFETY: see `u32_at`; 8-aligned.
        unsafe { ptr::read(self.raw().add(OFF_SEQ) as *const u64) }
    }

    fn height(self) -> usize {
        // SAFETY: every `Node` handed out points to a live node (module invariant).
        unsafe { self.u32_at(OFF_HEIGHT) as usize }
    }

    fn key_off(self) -> usize {
        OFF_NEXT + PTR * self.height()
    }

    /// The key, borrowed for as long as the caller keeps the list alive.
    ///
    /// # Safety
    /// The list that owns the node must outlive `'a`.
    pub unsafe fn key<'a>(self) -> &'a [u8] {
        // SAFETY: key bytes were written before publication and are immutable.
        unsafe {
            let len = self.u32_at(OFF_KLEN) as usize;
            std::slice::from_raw_parts(self.raw().add(self.key_off()), len)
        }
    }

    /// The value (`None`: tombstone), borrowed like [`Node::key`].
    ///
    /// # Safety
    /// As [`Node::key`].
    pub unsafe fn value<'a>(self) -> Option<&'a [u8]> {
        // SAFETY: as `key`; the value follows the key.
        unsafe {
            let vlen = self.u32_at(OFF_VLEN);
            if vlen == TOMBSTONE {
                return None;
            }
            let at = self.key_off() + self.u32_at(OFF_KLEN) as usize;
            Some(std::slice::from_raw_parts(
                self.raw().add(at),
                vlen as usize,
            ))
        }
    }

    fn next(self, level: usize) -> Option<Node> {
        debug_assert!(level < self.height());
        // SAFETY: level < height (callers walk only levels the node has).
        Node::from_raw(unsafe { self.link(OFF_NEXT + PTR * level) }.load(AtOrd::Acquire))
    }

    fn prev(self) -> Option<Node> {
        // SAFETY: the prev slot exists in every node.
        Node::from_raw(unsafe { self.link(OFF_PREV) }.load(AtOrd::Acquire))
    }

    /// Order of this node against `(key, seq)`.
    fn cmp_to(self, key: &[u8], seq: u64) -> Ordering {
        // SAFETY: nodes reached through the list are live and published.
        unsafe { self.key().cmp(key).then(seq.cmp(&self.seq())) }
    }
}

/// Bytes a node of this height and payload takes (8-aligned).
pub fn node_size(height: usize, key: usize, value: usize) -> usize {
    (OFF_NEXT + PTR * height + key + value).next_multiple_of(8)
}

struct Chunk {
    ptr: NonNull<u8>,
    layout: Layout,
}

/// The writer's half: arena chunks, the random generator and the splice of the last insert.
/// Guarded by the owner's mutex.
pub struct Writer {
    chunks: Vec<Chunk>,
    cur: *mut u8,
    left: usize,
    next_chunk: usize,
    rng: u64,
    /// The head of the list this writer belongs to (checked in debug builds).
    head: Node,
    /// Where the last insert went: on every level, the last node before the position right
    /// after the last inserted node (that node itself on the levels of its tower, the head
    /// where no node comes before). An entry that goes right after the last one — keys
    /// inserted in ascending order, as a bulk load of ascending sort keys does — is linked
    /// there without searching the list (see [`SkipList::insert`]).
    splice: [Node; MAX_HEIGHT],
}

// SAFETY: the raw pointers refer to chunks owned by this writer (and its list); moving the
// writer between threads moves that ownership. The splice's nodes are nodes of that list
// (or its head), only followed by this writer. Access is serialised by the owner's mutex.
unsafe impl Send for Writer {}

/// The list. Readers use `&SkipList`; inserts need the [`Writer`] too (one at a time).
pub struct SkipList {
    head: Node,
    head_layout: Layout,
    max_height: AtomicUsize,
}

// SAFETY: nodes are immutable after publication except their atomic links; readers only
// load links atomically. Inserts require `&mut Writer`, which the owner serialises.
unsafe impl Send for SkipList {}
// SAFETY: as above.
unsafe impl Sync for SkipList {}

fn node_layout(size: usize) -> Layout {
    match Layout::from_size_align(size, 8) {
        Ok(l) => l,
        Err(_) => handle_alloc_error(Layout::new::<u64>()),
    }
}

/// The head node: zeroed, so every link slot is a valid null pointer.
fn alloc_zeroed_node(size: usize) -> (NonNull<u8>, Layout) {
    let layout = node_layout(size);
    // SAFETY: size > 0 (every caller asks for at least a header).
    let p = unsafe { alloc_zeroed(layout) };
    let Some(p) = NonNull::new(p) else {
        handle_alloc_error(layout)
    };
    (p, layout)
}

/// An arena chunk, not zeroed: `SkipList::insert` writes every header field, link slot, key
/// and value byte of a node before the node is published, and nothing reads the padding.
/// (Zeroing cost ~280 instructions per typed item in the bulk load, in `memset`.) Under
/// `cfg(test)` the chunk is filled with 0xA5 so a field left unwritten shows up in the tests
/// (fresh pages from the OS would be zero and hide it).
fn alloc_chunk(size: usize) -> (NonNull<u8>, Layout) {
    let layout = node_layout(size);
    // SAFETY: size > 0 (every caller asks for at least a header).
    let p = unsafe { alloc(layout) };
    let Some(p) = NonNull::new(p) else {
        handle_alloc_error(layout)
    };
    #[cfg(test)]
    // SAFETY: `p` is a fresh allocation of `size` bytes.
    unsafe {
        ptr::write_bytes(p.as_ptr(), 0xA5, size)
    };
    (p, layout)
}

impl SkipList {
    /// An empty list and its writer.
    pub fn new(seed: u64) -> (SkipList, Writer) {
        let (p, head_layout) = alloc_zeroed_node(node_size(MAX_HEIGHT, 0, 0));
        // SAFETY: the head allocation is large enough for a MAX_HEIGHT header; zeroed links
        // are null pointers.
        unsafe { ptr::write(p.as_ptr().add(OFF_HEIGHT) as *mut u32, MAX_HEIGHT as u32) };
        let list = SkipList {
            head: Node(p),
            head_layout,
            max_height: AtomicUsize::new(1),
        };
        let w = Writer {
            chunks: Vec::new(),
            cur: ptr::null_mut(),
            left: 0,
            next_chunk: FIRST_CHUNK,
            rng: seed | 1,
            head: list.head,
            splice: [list.head; MAX_HEIGHT],
        };
        (list, w)
    }

    fn max_height(&self) -> usize {
        self.max_height.load(AtOrd::Relaxed)
    }

    /// The first node `>= (key, seq)`, with the last node before it on every level.
    fn find(&self, key: &[u8], seq: u64, prev: Option<&mut [Node; MAX_HEIGHT]>) -> Option<Node> {
        let mut x = self.head;
        let mut level = self.max_height() - 1;
        let mut prev = prev;
        loop {
            let next = x.next(level);
            match next {
                Some(n) if n.cmp_to(key, seq) == Ordering::Less => x = n,
                _ => {
                    if let Some(p) = prev.as_deref_mut() {
                        p[level] = x;
                    }
                    if level == 0 {
                        return next;
                    }
                    level -= 1;
                }
            }
        }
    }

    /// The first node `>= (key, seq)`.
    pub fn seek(&self, key: &[u8], seq: u64) -> Option<Node> {
        self.find(key, seq, None)
    }

    /// The first node.
    pub fn first(&self) -> Option<Node> {
        self.head.next(0)
    }

    /// The last node.
    pub fn last(&self) -> Option<Node> {
        let mut x = self.head;
        let mut level = self.max_height() - 1;
        loop {
            match x.next(level) {
                Some(n) => x = n,
                None if level == 0 => return (x != self.head).then_some(x),
                None => level -= 1,
            }
        }
    }

    /// The node after `n` on level 0.
    pub fn next(&self, n: Node) -> Option<Node> {
        n.next(0)
    }

    /// The node before `n` on level 0 (may skip a node being inserted right now).
    pub fn prev(&self, n: Node) -> Option<Node> {
        n.prev()
    }

    fn random_height(w: &mut Writer) -> usize {
        let mut h = 1;
        while h < MAX_HEIGHT {
            // xorshift64
            w.rng ^= w.rng << 13;
            w.rng ^= w.rng >> 7;
            w.rng ^= w.rng << 17;
            if !w.rng.is_multiple_of(BRANCHING) {
                break;
            }
            h += 1;
        }
        h
    }

    fn alloc(w: &mut Writer, size: usize) -> *mut u8 {
        if size > w.left {
            let want = if size > w.next_chunk / 4 {
                size
            } else {
                let c = w.next_chunk;
                w.next_chunk = (c * 2).min(MAX_CHUNK);
                c
            };
            let (p, layout) = alloc_chunk(want);
            w.chunks.push(Chunk { ptr: p, layout });
            if want == size {
                return p.as_ptr();
            }
            w.cur = p.as_ptr();
            w.left = want;
        }
        let p = w.cur;
        // SAFETY: size <= left, so the result stays inside the current chunk.
        w.cur = unsafe { w.cur.add(size) };
        w.left -= size;
        p
    }

    /// Inserts an entry; returns its node (`None` only if the allocator returned null, which
    /// it does not). An entry equal to an existing `(key, seq)` goes before it, so it wins (a
    /// later op of one batch on the same key).
    ///
    /// `w` must be this list's writer.
    pub fn insert(
        &self,
        w: &mut Writer,
        key: &[u8],
        seq: u64,
        value: Option<&[u8]>,
    ) -> Option<Node> {
        let klen = u32::try_from(key.len())
            .unwrap_or(u32::MAX - 1)
            .min(u32::MAX - 1);
        let vlen = value.map_or(TOMBSTONE, |v| {
            u32::try_from(v.len())
                .unwrap_or(u32::MAX - 1)
                .min(u32::MAX - 1)
        });
        let key = &key[..klen as usize];
        let value = value.map(|v| &v[..vlen as usize]);
        debug_assert!(
            w.head == self.head,
            "a writer inserts only into its own list"
        );
        let (prev, succ) = match self.after_last(w, key, seq) {
            Some(fit) => fit,
            None => {
                let mut prev = [self.head; MAX_HEIGHT];
                let succ = self.find(key, seq, Some(&mut prev));
                (prev, succ)
            }
        };
        let height = SkipList::random_height(w);
        let max = self.max_height();
        if height > max {
            // prev[max..height] already hold the head (the search started above them).
            self.max_height.store(height, AtOrd::Relaxed);
        }
        let size = node_size(height, key.len(), value.map_or(0, <[u8]>::len));
        let p = SkipList::alloc(w, size);
        // SAFETY: `p` is fresh, 8-aligned arena memory of `size` bytes (not zeroed) that no
        // reader can reach until the Release stores below; every byte a reader uses is written
        // here or by those stores: the header, `prev`, `next[..height]`, key and value.
        unsafe {
            ptr::write(p.add(OFF_SEQ) as *mut u64, seq);
            ptr::write(p.add(OFF_KLEN) as *mut u32, klen);
            ptr::write(p.add(OFF_VLEN) as *mut u32, vlen);
            ptr::write(p.add(OFF_HEIGHT) as *mut u32, height as u32);
            let kat = OFF_NEXT + PTR * height;
            ptr::copy_nonoverlapping(key.as_ptr(), p.add(kat), key.len());
            if let Some(v) = value {
                ptr::copy_nonoverlapping(v.as_ptr(), p.add(kat + key.len()), v.len());
            }
        }
        let node = Node::from_raw(p)?;
        // SAFETY: the slots exist (level < height). The new node's own slots are initialised
        // with plain writes (no reader can reach it yet, and its memory is not zeroed, so no
        // atomic is formed over it before it holds a pointer); published links are accessed
        // atomically.
        unsafe {
            let back = if prev[0] == self.head {
                ptr::null_mut()
            } else {
                prev[0].raw()
            };
            ptr::write(p.add(OFF_PREV) as *mut *mut u8, back);
            for (level, pv) in prev.iter().enumerate().take(height) {
                let after = pv.link(OFF_NEXT + PTR * level).load(AtOrd::Relaxed);
                ptr::write(p.add(OFF_NEXT + PTR * level) as *mut *mut u8, after);
            }
            for (level, pv) in prev.iter().enumerate().take(height) {
                pv.link(OFF_NEXT + PTR * level).store(p, AtOrd::Release);
            }
            if let Some(s) = succ {
                s.link(OFF_PREV).store(p, AtOrd::Release);
            }
        }
        w.splice = prev;
        w.splice[..height].fill(node);
        Some(node)
    }

    /// The predecessors on every level and the successor of `(key, seq)` taken from the
    /// writer's splice, when the entry goes right after the last inserted one: the splice's
    /// level-0 node comes before it and that node's successor (if any) does not.
    ///
    /// Then the whole splice fits: on a level `j` its node `p` is the last node of a tower
    /// taller than `j` up to the last inserted node, so the next node of level `j` after `p`
    /// comes after that node's level-0 successor, which is not before the entry. (Nothing else
    /// changes the list between two inserts: the writer is the only one.) Costs one or two
    /// comparisons when the entry goes elsewhere.
    fn after_last(
        &self,
        w: &Writer,
        key: &[u8],
        seq: u64,
    ) -> Option<([Node; MAX_HEIGHT], Option<Node>)> {
        let last = w.splice[0];
        if last != self.head && last.cmp_to(key, seq) != Ordering::Less {
            return None;
        }
        let succ = last.next(0);
        match succ {
            Some(s) if s.cmp_to(key, seq) == Ordering::Less => None,
            _ => Some((w.splice, succ)),
        }
    }
}

impl Drop for SkipList {
    fn drop(&mut self) {
        // SAFETY: the head was allocated with this layout in `new`.
        unsafe { dealloc(self.head.raw(), self.head_layout) };
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        for c in self.chunks.drain(..) {
            // SAFETY: each chunk was allocated with its recorded layout.
            unsafe { dealloc(c.ptr.as_ptr(), c.layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list and its writer together, as the memtable keeps them (the writer's chunks must
    /// outlive every node access, so the writer drops after the list's readers are gone).
    struct Both {
        list: SkipList,
        w: Writer,
    }

    fn both() -> Both {
        let (list, w) = SkipList::new(0x1234_5678);
        Both { list, w }
    }

    fn collect(b: &Both) -> Vec<(Vec<u8>, u64, Option<Vec<u8>>)> {
        let mut out = Vec::new();
        let mut n = b.list.first();
        while let Some(x) = n {
            // SAFETY: `b` is alive for the whole loop.
            unsafe { out.push((x.key().to_vec(), x.seq(), x.value().map(<[u8]>::to_vec))) };
            n = b.list.next(x);
        }
        out
    }

    #[test]
    fn ordered_both_ways_and_seek() {
        let mut b = both();
        let mut model = Vec::new();
        for i in 0..if cfg!(miri) { 120u32 } else { 500 } {
            let k = ((i * 7919) % 97).to_be_bytes();
            let seq = u64::from(i % 13);
            let v = if i % 5 == 0 {
                None
            } else {
                Some(vec![i as u8; (i % 9) as usize])
            };
            let Both { list, w } = &mut b;
            list.insert(w, &k, seq, v.as_deref());
            model.push((k.to_vec(), seq, v));
        }
        // Later inserts of an equal (key, seq) come first: a stable sort of the reversed
        // insertion order gives the expected list.
        model.reverse();
        model.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        assert_eq!(collect(&b), model);
        // Backwards.
        let mut back = Vec::new();
        let mut n = b.list.last();
        while let Some(x) = n {
            // SAFETY: `b` is alive.
            unsafe { back.push((x.key().to_vec(), x.seq(), x.value().map(<[u8]>::to_vec))) };
            n = b.list.prev(x);
        }
        back.reverse();
        assert_eq!(back, model);
        for probe in 0..100u32 {
            let k = probe.to_be_bytes();
            let got = b.list.seek(&k, 6).map(|n| {
                // SAFETY: `b` is alive.
                unsafe { (n.key().to_vec(), n.seq()) }
            });
            let want = model
                .iter()
                .find(|e| {
                    (e.0.as_slice(), std::cmp::Reverse(e.1)) >= (&k[..], std::cmp::Reverse(6))
                })
                .map(|e| (e.0.clone(), e.1));
            assert_eq!(got, want, "seek {probe}");
        }
    }

    #[test]
    fn big_entries_get_their_own_chunk() {
        let mut b = both();
        let big = vec![7u8; if cfg!(miri) { 5 << 10 } else { 3 * MAX_CHUNK }];
        let Both { list, w } = &mut b;
        list.insert(w, b"a", 1, Some(&big));
        list.insert(w, b"b", 1, Some(b"small"));
        let all = collect(&b);
        assert_eq!(all[0].2.as_deref(), Some(&big[..]));
        assert_eq!(all[1].2.as_deref(), Some(&b"small"[..]));
    }

    #[test]
    fn readers_run_while_one_writer_inserts() {
        use std::sync::Arc;
        let (list, w) = SkipList::new(99);
        let list = Arc::new(list);
        let n: u32 = if cfg!(miri) { 200 } else { 20_000 };
        let writer = {
            let list = Arc::clone(&list);
            std::thread::spawn(move || {
                let mut w = w;
                for i in 0..n {
                    let k = (i.wrapping_mul(2_654_435_761)).to_be_bytes();
                    list.insert(&mut w, &k, u64::from(i), Some(&k));
                }
                w
            })
        };
        let mut rounds = 0;
        while rounds < if cfg!(miri) { 3 } else { 50 } {
            // Every node seen is complete: its value equals its key, keys ascend.
            let mut last: Option<Vec<u8>> = None;
            let mut x = list.first();
            while let Some(node) = x {
                // SAFETY: the list is alive (Arc) and the writer's chunks live in the writer
                // thread until it is joined below.
                let (k, v) = unsafe { (node.key().to_vec(), node.value().map(<[u8]>::to_vec)) };
                assert_eq!(Some(&k), v.as_ref());
                assert!(last.as_ref().is_none_or(|l| *l < k));
                last = Some(k);
                x = list.next(node);
            }
            rounds += 1;
        }
        let w = writer.join().unwrap();
        let mut count = 0;
        let mut x = list.first();
        while let Some(node) = x {
            count += 1;
            x = list.next(node);
        }
        assert_eq!(count, n);
        drop(list);
        drop(w);
    }

    /// Every level of the list, as the keys and seqs of its nodes from the head; and level 0
    /// backwards through the `prev` links.
    fn levels(b: &Both) -> Vec<Vec<(Vec<u8>, u64)>> {
        let mut out = Vec::new();
        for level in 0..MAX_HEIGHT {
            let mut row = Vec::new();
            let mut n = b.list.head.next(level);
            while let Some(x) = n {
                // SAFETY: `b` is alive for the whole loop.
                unsafe { row.push((x.key().to_vec(), x.seq())) };
                n = x.next(level);
            }
            out.push(row);
        }
        out
    }

    /// Checks the list's structure: level 0 in order, every taller level exactly the nodes
    /// of level 0 whose tower reaches it, in the same order, and `prev` the level-0
    /// predecessor.
    fn check_structure(b: &Both) {
        let mut nodes = Vec::new();
        let mut n = b.list.first();
        while let Some(x) = n {
            nodes.push(x);
            n = x.next(0);
        }
        let key = |x: Node| {
            // SAFETY: `b` is alive.
            unsafe { (x.key().to_vec(), x.seq()) }
        };
        for pair in nodes.windows(2) {
            assert_ne!(
                pair[0].cmp_to(&key(pair[1]).0, key(pair[1]).1),
                Ordering::Greater
            );
            assert_eq!(pair[1].prev(), Some(pair[0]), "prev link");
        }
        if let Some(&f) = nodes.first() {
            assert_eq!(f.prev(), None);
        }
        let levels = levels(b);
        for (level, row) in levels.iter().enumerate() {
            let want: Vec<_> = nodes
                .iter()
                .filter(|x| x.height() > level)
                .map(|&x| key(x))
                .collect();
            assert_eq!(row, &want, "level {level}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
            if cfg!(miri) { 4 } else { 300 }
        ))]

        /// Runs of ascending keys (the splice's fast path), with jumps back and forth, equal
        /// keys, repeated `(key, seq)`s (a later op of one batch) and new sequence numbers,
        /// against a sorted model; every level's links checked after each run.
        #[test]
        fn inserts_in_runs_match_the_model(
            runs in proptest::collection::vec(
                (0u16..400, 1usize..40, 0u16..4, 0u64..4, proptest::bool::ANY),
                1..25,
            ),
        ) {
            let mut b = both();
            let mut model: Vec<(Vec<u8>, u64, Option<Vec<u8>>)> = Vec::new();
            let mut i = 0u32;
            for (start, len, step, seq, tomb) in runs {
                for j in 0..len {
                    let k = start.wrapping_add(step.wrapping_mul(j as u16)).to_be_bytes();
                    let v = (!tomb || j % 3 != 0).then(|| i.to_le_bytes().to_vec());
                    let Both { list, w } = &mut b;
                    list.insert(w, &k, seq, v.as_deref());
                    // A later insert of an equal (key, seq) goes before the earlier ones.
                    let at = model
                        .iter()
                        .position(|e| (e.0.as_slice(), std::cmp::Reverse(e.1))
                            >= (&k[..], std::cmp::Reverse(seq)))
                        .unwrap_or(model.len());
                    model.insert(at, (k.to_vec(), seq, v));
                    i += 1;
                }
                check_structure(&b);
            }
            proptest::prop_assert_eq!(collect(&b), model);
        }
    }
}
