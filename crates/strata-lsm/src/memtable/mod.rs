//! The memtable of one stripe: a multi-version ordered map on a skip list.
//!
//! Entries are ordered by (user key ascending, sequence descending), so that a reader at
//! snapshot `s` finds the newest version of a key with `seq <= s` by seeking to `(key, s)`.
//! Writers insert one at a time (a mutex); readers never lock: a [`MemIter`] walks the list
//! while writers insert and hands out slices of the nodes (see [`skiplist`]). A point read
//! does not search the list: a hash index ([`index`]) maps each key to the node of its newest
//! version.

pub mod index;
pub mod skiplist;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtOrd};
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::iter::InternalIter;
use crate::sst::bloom::key_hash;
use index::{Found, MemIndex};
use skiplist::{Node, SkipList, Writer};

/// A value or a tombstone (`None`).
pub type Value = Option<Vec<u8>>;

/// Bytes charged to the memory budget per entry beyond its key and value: the average node
/// header and tower of the skip list (32 + 8 × 4/3 bytes, rounded up with alignment). A fixed
/// charge keeps the budget's slack predictable (one record costs the same whatever its tower).
pub const ENTRY_OVERHEAD: usize = 48;

fn charge(key: &[u8], value: Option<&[u8]>) -> usize {
    key.len() + value.map_or(0, <[u8]>::len) + ENTRY_OVERHEAD
}

/// The memtable of one stripe.
pub struct Memtable {
    // Field order matters: the list (its head) drops before the writer frees the arena.
    list: SkipList,
    writer: Mutex<Writer>,
    bytes: AtomicUsize,
    index: MemIndex,
}

impl Default for Memtable {
    fn default() -> Memtable {
        Memtable::new()
    }
}

/// Seeds of the tower heights: any varied numbers do.
static SEED: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

impl Memtable {
    /// An empty memtable (allocates only a head node until the first insert).
    pub fn new() -> Memtable {
        let seed = SEED.fetch_add(0x6a09_e667_f3bc_c909, AtOrd::Relaxed);
        let (list, writer) = SkipList::new(seed);
        Memtable {
            list,
            writer: Mutex::new(writer),
            bytes: AtomicUsize::new(0),
            index: MemIndex::default(),
        }
    }

    /// Inserts the ops of one batch, all at sequence `seq` (a later op on a key wins);
    /// returns the bytes charged.
    pub fn insert(&self, seq: u64, entries: impl Iterator<Item = (Vec<u8>, Value)>) -> usize {
        self.insert_all(seq, entries)
    }

    /// Inserts entries one after the other under one lock; returns the bytes charged. The
    /// index slot of the next entry is prefetched before the current one is inserted, so that
    /// its cache miss (the index is megabytes, hit at random) overlaps a whole insert.
    fn insert_all<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        seq: u64,
        mut entries: impl Iterator<Item = (K, Option<V>)>,
    ) -> usize {
        let hashed = |(k, v): (K, Option<V>)| {
            let h = key_hash(k.as_ref());
            self.index.prefetch(h);
            (k, v, h)
        };
        let mut w = self.writer();
        let mut added = 0;
        let mut next = entries.next().map(hashed);
        while let Some((k, v, h)) = next {
            next = entries.next().map(hashed);
            added += self.insert_one(&mut w, k.as_ref(), h, seq, v.as_ref().map(AsRef::as_ref));
        }
        self.bytes.fetch_add(added, AtOrd::Relaxed);
        added
    }

    /// Inserts one entry (whose [`key_hash`] is `hash`) into the list and the index; returns
    /// the bytes charged (the entry, and any index table the insert allocated).
    fn insert_one(&self, w: &mut Writer, k: &[u8], hash: u64, seq: u64, v: Option<&[u8]>) -> usize {
        let mut added = charge(k, v);
        if let Some(node) = self.list.insert(w, k, seq, v) {
            // SAFETY: the node belongs to `self.list`, which lives as long as the index.
            added += unsafe { self.index.insert(k, hash, seq, node) };
        }
        added
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, Writer> {
        match self.writer.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Like [`Memtable::insert`], from borrowed keys and values (they are copied into the
    /// memtable's arena).
    pub fn insert_refs<'a>(
        &self,
        seq: u64,
        entries: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)>,
    ) -> usize {
        self.insert_all(seq, entries)
    }

    /// Bytes charged to the budget (see [`ENTRY_OVERHEAD`]).
    pub fn bytes(&self) -> usize {
        self.bytes.load(AtOrd::Relaxed)
    }

    /// True when nothing was ever inserted.
    pub fn is_empty(&self) -> bool {
        self.list.first().is_none()
    }

    /// The newest version of `key` visible at `seq`: `None` when the memtable has none,
    /// `Some(None)` for a tombstone.
    pub fn get(&self, key: &[u8], seq: u64) -> Option<Value> {
        self.get_hashed(key, key_hash(key), seq)
    }

    /// [`Memtable::get`] with the key's [`key_hash`] already computed (a point read computes
    /// it once for the memtables and the files' filters).
    pub fn get_hashed(&self, key: &[u8], hash: u64, seq: u64) -> Option<Value> {
        self.get_ref(key, hash, seq).map(|v| v.map(<[u8]>::to_vec))
    }

    /// [`Memtable::get_hashed`] without copying: the value is borrowed from the memtable.
    pub fn get_ref(&self, key: &[u8], hash: u64, seq: u64) -> Option<Option<&[u8]>> {
        // SAFETY: the index holds nodes of `self.list`, alive as long as `self`.
        let newest = match unsafe { self.index.find(key, hash) } {
            Found::Absent => return None,
            Found::Node(n) => n,
            Found::Unknown => self.list.seek(key, seq)?,
        };
        // Versions of a key follow each other, newest first: skip those above `seq`.
        let mut n = newest;
        loop {
            // SAFETY: nodes of `self.list` live as long as `self`.
            let (k, s) = unsafe { (n.key(), n.seq()) };
            if k != key {
                return None;
            }
            if s <= seq {
                // SAFETY: as above.
                return Some(unsafe { n.value() });
            }
            n = self.list.next(n)?;
        }
    }

    /// Bytes of the hash index (charged to the budget as it grows).
    pub fn index_bytes(&self) -> usize {
        self.index.bytes()
    }

    /// Calls `f` on every user key with its newest version, in key order (for a flush: the
    /// memtable is frozen and every version in it is visible).
    pub fn for_each_newest<E>(
        &self,
        mut f: impl FnMut(&[u8], Option<&[u8]>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut last: Option<&[u8]> = None;
        let mut x = self.list.first();
        while let Some(n) = x {
            // SAFETY: `self` is borrowed for the whole loop, so the list is alive.
            let (k, v) = unsafe { (n.key(), n.value()) };
            if last != Some(k) {
                f(k, v)?;
                last = Some(k);
            }
            x = self.list.next(n);
        }
        Ok(())
    }

    /// A seekable iterator over the newest version of each key visible at `seq`
    /// (tombstones included as `None` values).
    pub fn iter(self: &Arc<Self>, seq: u64) -> MemIter {
        MemIter {
            mem: Arc::clone(self),
            seq,
            cur: None,
            first: self.list.first(),
            last: self.list.last(),
        }
    }

    /// The smallest key (of any version), if any.
    pub fn first_key(&self) -> Option<&[u8]> {
        // SAFETY: the key lives as long as `self`.
        self.list.first().map(|n| unsafe { n.key() })
    }

    /// The largest key (of any version), if any.
    pub fn last_key(&self) -> Option<&[u8]> {
        // SAFETY: the key lives as long as `self`.
        self.list.last().map(|n| unsafe { n.key() })
    }
}

/// An [`InternalIter`] over a memtable at one snapshot: for each user key, its newest
/// version with `seq <= snapshot`. Keys and values are slices of the memtable's nodes.
pub struct MemIter {
    mem: Arc<Memtable>,
    seq: u64,
    cur: Option<Node>,
    /// First and last nodes when the iterator was made: bounds of every version visible at
    /// `seq` (later inserts carry larger sequence numbers).
    first: Option<Node>,
    last: Option<Node>,
}

// SAFETY: `cur` points into `mem`, which this iterator keeps alive; nodes are immutable after
// publication (their links are atomics), so the iterator may move to and be read from any
// thread.
unsafe impl Send for MemIter {}
// SAFETY: as above; `&MemIter` only reads.
unsafe impl Sync for MemIter {}

impl MemIter {
    fn key_of(&self, n: Node) -> &[u8] {
        // SAFETY: `self.mem` keeps the node alive as long as `self` is borrowed.
        unsafe { n.key() }
    }

    fn visible(&self, n: Node) -> bool {
        // SAFETY: as `key_of`.
        unsafe { n.seq() <= self.seq }
    }

    /// From a node that starts a key or follows newer invisible versions of its key: the
    /// first visible node at or after it (the newest visible version of its key).
    fn settle_forward(&mut self, mut n: Option<Node>) {
        while let Some(x) = n {
            if self.visible(x) {
                break;
            }
            n = self.mem.list.next(x);
        }
        self.cur = n;
    }

    /// From the last node of some key (or none): the newest visible version of the nearest
    /// key at or before it that has one.
    fn settle_backward(&mut self, mut n: Option<Node>) {
        let list = &self.mem.list;
        while let Some(x) = n {
            let k = self.key_of(x);
            if !self.visible(x) {
                // The oldest version of `k` is invisible, so all of them are: skip the key.
                let mut y = list.prev(x);
                while let Some(p) = y.filter(|p| self.key_of(*p) == k) {
                    y = list.prev(p);
                }
                n = y;
                continue;
            }
            // Walk back to the newest visible version of `k`.
            let mut at = x;
            while let Some(p) = list
                .prev(at)
                .filter(|p| self.key_of(*p) == k && self.visible(*p))
            {
                at = p;
            }
            self.cur = Some(at);
            return;
        }
        self.cur = None;
    }
}

impl InternalIter for MemIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }

    fn key(&self) -> &[u8] {
        match self.cur {
            Some(n) => self.key_of(n),
            None => &[],
        }
    }

    fn value(&self) -> Option<&[u8]> {
        // SAFETY: as `key_of`.
        self.cur.and_then(|n| unsafe { n.value() })
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let n = self.mem.list.first();
        self.settle_forward(n);
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let n = self.mem.list.last();
        self.settle_backward(n);
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let n = self.mem.list.seek(target, self.seq);
        self.settle_forward(n);
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        // The first node past every version of `target`, then one step back.
        let list = &self.mem.list;
        let mut n = list.seek(target, 0);
        while let Some(x) = n.filter(|x| self.key_of(*x) == target) {
            n = list.next(x);
        }
        let before = match n {
            Some(x) => list.prev(x),
            None => list.last(),
        };
        self.settle_backward(before);
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some(cur) = self.cur else {
            return Ok(());
        };
        let list = &self.mem.list;
        let k = self.key_of(cur);
        let mut n = list.next(cur);
        while let Some(x) = n.filter(|x| self.key_of(*x) == k) {
            n = list.next(x);
        }
        self.settle_forward(n);
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        let Some(cur) = self.cur else {
            return Ok(());
        };
        let list = &self.mem.list;
        let k = self.key_of(cur);
        let mut n = list.prev(cur);
        while let Some(x) = n.filter(|x| self.key_of(*x) == k) {
            n = list.prev(x);
        }
        self.settle_backward(n);
        Ok(())
    }

    fn smallest(&self) -> Option<&[u8]> {
        self.first.map(|n| self.key_of(n))
    }

    fn largest(&self) -> Option<&[u8]> {
        self.last.map(|n| self.key_of(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::testing::{check_ops, model_at, ops, versions};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// At every snapshot, the iterator matches the model of newest visible versions,
        /// under random seeks (both directions) and steps (both directions).
        #[test]
        fn mem_iter_matches_model(vs in versions(), ops in ops(), snap in 0u64..12) {
            let mem = Arc::new(Memtable::new());
            for (k, seq, v) in &vs {
                mem.insert_refs(*seq, std::iter::once((k.as_slice(), v.as_deref())));
            }
            let model = model_at(&vs, snap);
            check_ops(&mut mem.iter(snap), &model, &ops)?;
            for (k, _) in model.iter() {
                prop_assert_eq!(mem.get(k, snap), Some(model[k].clone()));
            }
        }
    }

    #[test]
    fn later_op_of_one_batch_wins() {
        let mem = Arc::new(Memtable::new());
        mem.insert(
            7,
            vec![
                (b"k".to_vec(), Some(b"1".to_vec())),
                (b"k".to_vec(), None),
                (b"k".to_vec(), Some(b"3".to_vec())),
            ]
            .into_iter(),
        );
        assert_eq!(mem.get(b"k", 7), Some(Some(b"3".to_vec())));
        let mut seen = Vec::new();
        mem.for_each_newest(|k, v| {
            seen.push((k.to_vec(), v.map(<[u8]>::to_vec)));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(seen, vec![(b"k".to_vec(), Some(b"3".to_vec()))]);
        let mut it = mem.iter(7);
        it.seek_to_last().unwrap();
        assert_eq!(it.value(), Some(&b"3"[..]));
    }

    #[test]
    fn snapshot_iterators_ignore_concurrent_inserts() {
        // Small under Miri (which runs this to check the skip list's unsafe code).
        let (n, writes) = if cfg!(miri) {
            (30u32, 200u32)
        } else {
            (1000, 20_000)
        };
        let mem = Arc::new(Memtable::new());
        for i in 0..n {
            mem.insert_refs(
                1,
                std::iter::once((&i.to_be_bytes()[..], Some(&b"old"[..]))),
            );
        }
        let writer = {
            let mem = Arc::clone(&mem);
            std::thread::spawn(move || {
                for i in 0..writes {
                    let k = (i % (2 * n)).to_be_bytes();
                    mem.insert_refs(2 + u64::from(i), std::iter::once((&k[..], None)));
                }
            })
        };
        for _ in 0..if cfg!(miri) { 2 } else { 20 } {
            let mut it = mem.iter(1);
            it.seek_to_last().unwrap();
            let mut seen = 0u32;
            while it.valid() {
                assert_eq!(it.value(), Some(&b"old"[..]));
                assert_eq!(it.key(), &(n - 1 - seen).to_be_bytes()[..]);
                seen += 1;
                it.prev().unwrap();
            }
            assert_eq!(seen, n);
        }
        writer.join().unwrap();
    }
}
