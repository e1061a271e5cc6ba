//! A hash index over a memtable's keys: for each key, the skip-list node of its newest
//! version. A point read finds that node in one probe sequence (usually one cache line of the
//! table, then the node) instead of a skip-list search (a dozen or more node visits, one
//! cache miss each), and a key the memtable does not hold is rejected from the table alone —
//! exactly, which is why the memtable needs no bloom filter.
//!
//! Open addressing with linear probing, at most half full. A slot is one `u64`: the node's
//! address shifted right by 3 (nodes are 8-aligned, addresses below 2^47) in the low 44 bits,
//! the top 20 bits of the key's hash (`key_hash`) in the high 20 bits. A key's home slot is
//! the top bits of its hash, so a table of up to 2^20 slots grows without reading a node;
//! only equal tags make a probe read the node's key.
//!
//! One writer (the memtable's writer lock) inserts; readers never lock. A slot is written
//! once with its first node, then only replaced by a newer node of the same key (`Release`
//! stores; readers `Acquire`). When the table is half full the writer builds a table twice
//! the size, copies the slots, and publishes it; old tables stay allocated until the memtable
//! drops, so a reader that loaded an old table keeps reading valid memory (the old table holds
//! every key published before the switch, and a reader that needs a later key acquired the
//! switch before it).
//!
//! Should a node address not fit 47 bits (a platform with a larger user address space), the
//! index turns itself off and the memtable searches its skip list instead.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::skiplist::Node;
use crate::sst::bloom::key_hash;
use crate::sync::lock;

const TAG_BITS: u32 = 20;
const ADDR_BITS: u32 = 64 - TAG_BITS;
const ADDR_MASK: u64 = (1 << ADDR_BITS) - 1;
/// Slots of a new memtable's table (4 KiB).
const FIRST_BITS: u32 = 9;

struct Table {
    /// log2 of the slot count.
    bits: u32,
    slots: Box<[AtomicU64]>,
}

impl Table {
    fn new(bits: u32) -> Table {
        Table {
            bits,
            slots: (0..1usize << bits).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The home slot of a hash.
    fn home(&self, hash: u64) -> usize {
        (hash >> (64 - self.bits)) as usize
    }

    fn bytes(&self) -> usize {
        self.slots.len() * 8
    }
}

fn tag(hash: u64) -> u64 {
    hash >> ADDR_BITS
}

fn node_of(word: u64) -> Option<Node> {
    Node::from_exposed_addr(((word & ADDR_MASK) << 3) as usize)
}

/// The index of one memtable.
pub struct MemIndex {
    current: AtomicPtr<Table>,
    /// Every table made (from `Box::into_raw`; the current one last), freed when the index
    /// drops. Only the writer takes this lock (when it grows the table).
    tables: Mutex<Vec<*mut Table>>,
    /// Distinct keys (written only by the writer).
    count: AtomicUsize,
    /// Set (for good) when a node address did not fit a slot.
    off: AtomicBool,
}

impl Default for MemIndex {
    fn default() -> MemIndex {
        let first = Box::into_raw(Box::new(Table::new(FIRST_BITS)));
        MemIndex {
            current: AtomicPtr::new(first),
            tables: Mutex::new(vec![first]),
            count: AtomicUsize::new(0),
            off: AtomicBool::new(false),
        }
    }
}

// SAFETY: the raw table pointers are owned by the index (freed only in `drop`); tables are
// shared read-only apart from their atomic slots, and the writer's updates are serialised by
// the memtable's writer lock (and `tables` by its mutex).
unsafe impl Send for MemIndex {}
// SAFETY: as above.
unsafe impl Sync for MemIndex {}

impl Drop for MemIndex {
    fn drop(&mut self) {
        let tables = self.tables.get_mut().unwrap_or_else(|p| p.into_inner());
        for t in tables.drain(..) {
            // SAFETY: each pointer came from `Box::into_raw` and is freed once, here; no
            // reader can hold a table past the index's lifetime.
            drop(unsafe { Box::from_raw(t) });
        }
    }
}

/// What [`MemIndex::find`] knows about a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The node of the key's newest version.
    Node(Node),
    /// The memtable holds no version of the key.
    Absent,
    /// The index is off: search the skip list.
    Unknown,
}

impl MemIndex {
    fn table(&self) -> &Table {
        // SAFETY: `current` always points to a table owned by `self.tables`, which frees
        // tables only when `self` drops; the Acquire load pairs with the Release store that
        // published it, so the table's slots are initialised.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Bytes of every table made (the current one and the ones it replaced).
    pub fn bytes(&self) -> usize {
        // SAFETY: every pointer in `tables` is a live table (freed only on drop).
        lock(&self.tables)
            .iter()
            .map(|&t| unsafe { (*t).bytes() })
            .sum()
    }

    /// The node of the newest version of `key` (whose [`key_hash`] is `hash`).
    ///
    /// # Safety
    /// Every node inserted must belong to a skip list that outlives the returned node's use
    /// (the memtable keeps both).
    pub unsafe fn find(&self, key: &[u8], hash: u64) -> Found {
        if self.off.load(Ordering::Acquire) {
            return Found::Unknown;
        }
        // An empty index — every stripe's memtable just after a flush, all of them in a
        // read-mostly database — answers from this struct's own line, without the loads of
        // its table and of a slot (session 21: the slot was 0.53 cache misses per point get
        // at 10^7 items). A node visible at the caller's sequence number was counted before
        // that number became visible (`insert` stores the count before returning; the write
        // path publishes the sequence after its inserts), so a count of 0 means no such node.
        if self.count.load(Ordering::Relaxed) == 0 {
            return Found::Absent;
        }
        let t = self.table();
        let want = tag(hash);
        let mut i = t.home(hash);
        loop {
            let w = t.slots[i].load(Ordering::Acquire);
            let Some(n) = node_of(w) else {
                return Found::Absent;
            };
            // SAFETY: the node was published before its slot (Release/Acquire) and lives as
            // long as its list (the caller's contract).
            if w >> ADDR_BITS == want && unsafe { n.key() } == key {
                return Found::Node(n);
            }
            i = (i + 1) & t.mask();
        }
    }

    /// Asks the CPU to bring the home slot of `hash` into the cache: the writer calls it
    /// before linking a node into the skip list, so that the slot's cache miss (the table is
    /// megabytes, its slots hit at random) overlaps that work instead of stalling
    /// [`MemIndex::insert`]. A hint only (a table grown in between is simply not prefetched).
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let t = self.table();
        crate::hint::prefetch(std::ptr::from_ref(&t.slots[t.home(hash)]).cast::<u8>());
    }

    /// Records `node` (just linked into the list, holding `key` at `seq`) as the newest
    /// version of its key unless the index holds a newer one; returns the bytes of any table
    /// it had to allocate. Callers serialise inserts (the memtable's writer lock).
    ///
    /// # Safety
    /// As [`MemIndex::find`].
    pub unsafe fn insert(&self, key: &[u8], hash: u64, seq: u64, node: Node) -> usize {
        if self.off.load(Ordering::Relaxed) {
            return 0;
        }
        let addr = node.expose_addr() as u64;
        if addr >> (ADDR_BITS + 3) != 0 || addr & 7 != 0 {
            self.off.store(true, Ordering::Release);
            return 0;
        }
        let word = (tag(hash) << ADDR_BITS) | (addr >> 3);
        let mut grown = 0;
        let mut t = self.table();
        // Only the writer changes `count` (inserts are serialised): a plain load here and a
        // plain store below, not a locked read-modify-write, which would wait for the slot's
        // store (often a cache miss) to complete.
        let count = self.count.load(Ordering::Relaxed);
        if (count + 1) * 2 > t.slots.len() {
            grown = self.grow();
            t = self.table();
        }
        let mut i = t.home(hash);
        loop {
            let w = t.slots[i].load(Ordering::Relaxed);
            let Some(old) = node_of(w) else {
                t.slots[i].store(word, Ordering::Release);
                self.count.store(count + 1, Ordering::Relaxed);
                return grown;
            };
            // SAFETY: as `find`.
            if w >> ADDR_BITS == word >> ADDR_BITS && unsafe { old.key() } == key {
                // The list orders a key's versions by sequence descending, and an equal
                // (key, seq) inserted later goes first: the node with the higher or equal
                // sequence is the first of its key.
                // SAFETY: as above.
                if seq >= unsafe { old.seq() } {
                    t.slots[i].store(word, Ordering::Release);
                }
                return grown;
            }
            i = (i + 1) & t.mask();
        }
    }

    /// Replaces the table by one twice its size holding the same slots; returns its bytes.
    fn grow(&self) -> usize {
        let old = self.table();
        let next = Table::new(old.bits + 1);
        for s in old.slots.iter() {
            let w = s.load(Ordering::Relaxed);
            let Some(n) = node_of(w) else { continue };
            let home = if next.bits <= TAG_BITS {
                ((w >> ADDR_BITS) >> (TAG_BITS - next.bits)) as usize
            } else {
                // SAFETY: slots hold live nodes of the memtable's list (insert's contract).
                next.home(key_hash(unsafe { n.key() }))
            };
            let mut i = home;
            while next.slots[i].load(Ordering::Relaxed) != 0 {
                i = (i + 1) & next.mask();
            }
            next.slots[i].store(w, Ordering::Relaxed);
        }
        let bytes = next.bytes();
        let p = Box::into_raw(Box::new(next));
        lock(&self.tables).push(p);
        // Release: a reader that loads the new table sees its slots.
        self.current.store(p, Ordering::Release);
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::skiplist::{SkipList, Writer};
    use super::*;
    use crate::iter::testing::{model_at, versions, Version};
    use crate::memtable::Memtable;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A list, its writer and an index, dropped index first.
    struct Fixture {
        index: MemIndex,
        list: SkipList,
        w: Writer,
    }

    impl Fixture {
        fn new() -> Fixture {
            let (list, w) = SkipList::new(7);
            Fixture {
                index: MemIndex::default(),
                list,
                w,
            }
        }

        fn insert(&mut self, k: &[u8], hash: u64, seq: u64, v: Option<&[u8]>) {
            let Fixture { index, list, w } = self;
            let n = list.insert(w, k, seq, v).expect("node");
            // SAFETY: the list outlives the index's use in these tests.
            unsafe { index.insert(k, hash, seq, n) };
        }

        /// (seq, value) of the node the index holds for `k`.
        fn newest(&self, k: &[u8], hash: u64) -> Option<(u64, Option<Vec<u8>>)> {
            // SAFETY: the list is alive.
            match unsafe { self.index.find(k, hash) } {
                Found::Node(n) => Some(unsafe { (n.seq(), n.value().map(<[u8]>::to_vec)) }),
                Found::Absent => None,
                Found::Unknown => panic!("index off"),
            }
        }
    }

    /// A hash with few distinct values, so that tags collide and probe chains are long.
    fn weak_hash(k: &[u8], bits: u32) -> u64 {
        let h = key_hash(k) >> (64 - bits);
        // Keep the high bits (home slot and tag) few, the rest zero.
        h << (64 - bits)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// The index holds, for every key, the newest version (a later insert wins a tie of
        /// sequence numbers), and nothing for other keys, with hashes that collide (1..=12
        /// bits) and tables that grow (up to 600 keys over a 512-slot first table).
        #[test]
        fn index_holds_the_newest_version(
            vs in versions(),
            extra in 0usize..600,
            bits in 1u32..=12,
        ) {
            let mut f = Fixture::new();
            let mut all: Vec<Version> = vs.clone();
            for i in 0..extra {
                all.push((format!("x{i}").into_bytes(), (i % 5) as u64, Some(vec![i as u8])));
            }
            for (k, s, v) in &all {
                f.insert(k, weak_hash(k, bits), *s, v.as_deref());
            }
            // The newest of each key: the model at the largest snapshot, with its sequence.
            let model = model_at(&all, u64::MAX);
            for (k, v) in &model {
                let seq = all.iter().filter(|e| &e.0 == k).map(|e| e.1).max();
                prop_assert_eq!(f.newest(k, weak_hash(k, bits)), Some((seq.unwrap(), v.clone())));
            }
            for probe in [&b"absent"[..], b"", b"x", b"x600", b"\xff\xff"] {
                if !model.contains_key(probe) {
                    prop_assert_eq!(f.newest(probe, weak_hash(probe, bits)), None);
                }
            }
        }

        /// A memtable's point read at every snapshot matches the model (keys whose versions
        /// are all above the snapshot included: absent).
        #[test]
        fn memtable_get_matches_model_at_every_snapshot(vs in versions()) {
            let mem = Memtable::new();
            for (k, s, v) in &vs {
                mem.insert_refs(*s, std::iter::once((k.as_slice(), v.as_deref())));
            }
            for snap in 0..13 {
                let model = model_at(&vs, snap);
                for (k, _, _) in &vs {
                    prop_assert_eq!(mem.get(k, snap), model.get(k).cloned(), "snap {}", snap);
                }
                prop_assert_eq!(mem.get(b"\x00absent", snap), None);
            }
        }
    }

    #[test]
    fn grows_past_the_tag_bits() {
        // 2^20 slots hold 2^19 keys: one more key makes a table whose home slots need more
        // bits than a tag has (they are recomputed from the keys).
        let n: u32 = if cfg!(miri) { 300 } else { (1 << 19) + 1000 };
        let mem = Memtable::new();
        for i in 0..n {
            let k = i.to_be_bytes();
            mem.insert_refs(1, std::iter::once((&k[..], Some(&k[..]))));
        }
        assert!(cfg!(miri) || mem.index_bytes() >= (1 << 21) * 8);
        for i in (0..n).step_by(7) {
            let k = i.to_be_bytes();
            assert_eq!(mem.get(&k, 1), Some(Some(k.to_vec())), "key {i}");
        }
        assert_eq!(mem.get(&n.to_be_bytes(), 1), None);
        assert_eq!(mem.get(b"short", 1), None);
    }

    #[test]
    fn index_bytes_are_charged() {
        let mem = Memtable::new();
        let mut charged = 0;
        for i in 0u32..2000 {
            charged += mem.insert_refs(1, std::iter::once((&i.to_be_bytes()[..], None)));
        }
        let entries = 2000 * (4 + crate::memtable::ENTRY_OVERHEAD);
        // The first table is made with the memtable (not charged); later ones are.
        assert_eq!(charged, entries + mem.index_bytes() - (1 << FIRST_BITS) * 8);
        assert_eq!(mem.bytes(), charged);
    }

    /// Readers at published snapshots see exactly the newest version at their snapshot while
    /// one writer inserts new versions and the index grows.
    #[test]
    fn concurrent_readers_see_their_snapshot() {
        use std::sync::atomic::AtomicU64;
        let (keys, writes) = if cfg!(miri) {
            (40u64, 150u64)
        } else {
            (20_000, 120_000)
        };
        let mem = Arc::new(Memtable::new());
        let visible = Arc::new(AtomicU64::new(0));
        let value = |seq: u64| seq.to_be_bytes().to_vec();
        let writer = {
            let (mem, visible) = (Arc::clone(&mem), Arc::clone(&visible));
            std::thread::spawn(move || {
                for seq in 1..=writes {
                    let k = (seq % keys).to_be_bytes();
                    let v = value(seq);
                    mem.insert_refs(seq, std::iter::once((&k[..], Some(&v[..]))));
                    visible.store(seq, Ordering::Release);
                }
            })
        };
        let mut rng = 0x1234_5678_9abc_def1u64;
        let mut checked = 0;
        loop {
            let s = visible.load(Ordering::Acquire);
            for _ in 0..64 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let k = rng % keys;
                // The newest seq <= s with seq % keys == k (seqs start at 1).
                let back = (s + keys - k) % keys;
                let want = (back < s).then(|| Some(value(s - back)));
                assert_eq!(mem.get(&k.to_be_bytes(), s), want, "key {k} at {s}");
                checked += 1;
            }
            if s == writes {
                break;
            }
        }
        writer.join().unwrap();
        assert!(checked > 0);
    }
}
