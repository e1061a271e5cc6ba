//! hyperdb's iterator (`lib/iterator.js`): a depth-first walk over the trie in hash order.
//!
//! At each index the digits come out as 4, 0, 1, 2, 3 (the key that ends at a segment boundary
//! before its children), or 3, 2, 1, 0, 4 in reverse. `gt` (and an empty prefix) drops the 4 at
//! the prefix depth. `recursive: false` stops 32 digits below the prefix and yields, for each
//! child bucket, the single node the trie points to. Keys that share a path come out in
//! ascending UTF-16 order.

use std::sync::Arc;

use rustc_hash::FxHashSet;
use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::node::Node;
use crate::path::{self, SEGMENT_DIGITS};
use crate::snapshot::{cmp_js, Snapshot};

/// Options of [`Snapshot::iter`] / [`Snapshot::list`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListOptions {
    /// Descend into sub-folders (default true).
    pub recursive: bool,
    /// Reverse hash order.
    pub reverse: bool,
    /// Leave out the key equal to the prefix.
    pub gt: bool,
    /// Yield tombstones too.
    pub deletes: bool,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions {
            recursive: true,
            reverse: false,
            gt: false,
            deletes: false,
        }
    }
}

/// The nodes of one key that a listing yields: a single node in the common case (one writer, no
/// hash collision), kept inline so that a listing allocates nothing per key, or several
/// (collisions; multiple writers). Read it as a slice of nodes (`Deref<Target = [Arc<Node>]>`),
/// iterate it by reference or by value, or turn it into a `Vec` with [`Nodes::into_vec`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nodes(SmallVec<[Arc<Node>; 1]>);

impl Nodes {
    /// The nodes as a `Vec` (allocates for a single node).
    pub fn into_vec(self) -> Vec<Arc<Node>> {
        self.0.into_vec()
    }

    /// The nodes as a slice.
    pub fn as_slice(&self) -> &[Arc<Node>] {
        &self.0
    }
}

impl From<Arc<Node>> for Nodes {
    fn from(n: Arc<Node>) -> Nodes {
        Nodes(SmallVec::from_buf([n]))
    }
}

impl From<Vec<Arc<Node>>> for Nodes {
    fn from(v: Vec<Arc<Node>>) -> Nodes {
        Nodes(SmallVec::from_vec(v))
    }
}

impl std::ops::Deref for Nodes {
    type Target = [Arc<Node>];

    fn deref(&self) -> &[Arc<Node>] {
        self.as_slice()
    }
}

impl AsRef<[Arc<Node>]> for Nodes {
    fn as_ref(&self) -> &[Arc<Node>] {
        self.as_slice()
    }
}

impl<'n> IntoIterator for &'n Nodes {
    type Item = &'n Arc<Node>;
    type IntoIter = std::slice::Iter<'n, Arc<Node>>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl IntoIterator for Nodes {
    type Item = Arc<Node>;
    type IntoIter = NodesIntoIter;

    fn into_iter(self) -> NodesIntoIter {
        NodesIntoIter(self.0.into_iter())
    }
}

/// The by-value iterator of [`Nodes`].
pub struct NodesIntoIter(smallvec::IntoIter<[Arc<Node>; 1]>);

impl std::fmt::Debug for NodesIntoIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("NodesIntoIter")
            .field(&self.0.as_slice())
            .finish()
    }
}

impl Iterator for NodesIntoIter {
    type Item = Arc<Node>;

    fn next(&mut self) -> Option<Arc<Node>> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

enum Frame {
    /// Look up the newest node under this path.
    Prefix(Vec<u8>),
    /// Continue with this node from this index.
    Node(Arc<Node>, usize),
    /// Continue with the node at this seq of feed 0 from this index: a pointer that was cached
    /// when it was pushed (so resolving it cannot fail), resolved only when the frame is popped.
    /// Its node was prefetched when the pointer was read; resolving at once would wait for that
    /// load (the `Arc` increment is a locked instruction), resolving later lets it complete
    /// while the walk works on other frames.
    Cached(u64, usize),
}

/// The iterator; yields the nodes of each key ([`Nodes`]: one node, inline, except on hash
/// collisions and with multiple writers).
pub struct ListIter<'a> {
    snap: Snapshot<'a>,
    stack: Vec<Frame>,
    collisions: Vec<Vec<Arc<Node>>>,
    prefix: String,
    start: usize,
    end: usize,
    opts: ListOptions,
    /// `(seq, index)` frames pushed, packed as `seq << 20 | index` (one word to hash and
    /// store) when seq < 2^44 and index < 2^20; other frames go to `seen_wide`.
    seen: FxHashSet<u64>,
    seen_wide: FxHashSet<(u64, usize)>,
    seen_prefixes: FxHashSet<Vec<u8>>,
    /// Frames processed, and the longest path seen: a valid trie needs fewer than
    /// 16 · (blocks + 1) · (longest path + 1) frames, a hostile one is stopped there.
    frames: usize,
    longest_path: usize,
    failed: bool,
}

fn all_deletes(nodes: &[Arc<Node>]) -> bool {
    nodes.iter().all(|n| n.deleted)
}

fn prefix_path(path: &[u8], i: usize, v: u8) -> Vec<u8> {
    let mut p = path[..i.min(path.len())].to_vec();
    p.push(v);
    p
}

impl<'a> ListIter<'a> {
    pub(crate) fn new(snap: Snapshot<'a>, prefix: &str, opts: ListOptions) -> ListIter<'a> {
        let prefix = path::normalize(prefix).to_string();
        let start_path = if prefix.is_empty() {
            Vec::new()
        } else {
            path::hash(&prefix, false)
        };
        let start = start_path.len();
        ListIter {
            snap,
            stack: vec![Frame::Prefix(start_path)],
            collisions: Vec::new(),
            prefix,
            start,
            end: if opts.recursive {
                usize::MAX
            } else {
                start + SEGMENT_DIGITS
            },
            opts,
            seen: FxHashSet::default(),
            seen_wide: FxHashSet::default(),
            seen_prefixes: FxHashSet::default(),
            frames: 0,
            longest_path: 0,
            failed: false,
        }
    }

    fn order(&self, i: usize) -> &'static [u8] {
        const GT: [u8; 4] = [3, 2, 1, 0];
        const GT_REV: [u8; 4] = [0, 1, 2, 3];
        const GTE: [u8; 5] = [3, 2, 1, 0, 4];
        const GTE_REV: [u8; 5] = [4, 0, 1, 2, 3];
        let gt = self.opts.gt || self.start == 0;
        match (gt && self.start == i, self.opts.reverse) {
            (true, false) => &GT,
            (true, true) => &GT_REV,
            (false, false) => &GTE,
            (false, true) => &GTE_REV,
        }
    }

    /// Records the frame `(seq, i)`; true the first time.
    fn first_visit(&mut self, seq: u64, i: usize) -> bool {
        if seq < 1 << 44 && i < 1 << 20 {
            self.seen.insert(seq << 20 | i as u64)
        } else {
            self.seen_wide.insert((seq, i))
        }
    }

    fn push_node(&mut self, node: Arc<Node>, i: usize) {
        // In a valid trie every (node, index) frame is reached once; a hostile trie that
        // reaches one twice is cut here, which bounds the walk.
        if self.first_visit(node.seq, i) {
            self.stack.push(Frame::Node(node, i));
        }
    }

    fn push_prefix(&mut self, p: Vec<u8>) {
        // As for nodes: each prefix of a valid trie is looked up once.
        if self.seen_prefixes.insert(p.clone()) {
            self.stack.push(Frame::Prefix(p));
        }
    }

    fn drain(&mut self) -> Option<Nodes> {
        while let Some(c) = self.collisions.pop() {
            // The reference reads `this._deletes` on the global object here, so it always
            // skips all-tombstone collisions.
            if all_deletes(&c) {
                continue;
            }
            return Some(Nodes::from(c));
        }
        None
    }

    fn single_node(&mut self, node: Arc<Node>, from: usize) -> Result<Option<Nodes>> {
        let path = node.key_path();
        self.longest_path = self.longest_path.max(path.len());
        // The key is read when the node is yielded: start loading it now.
        crate::cache::prefetch(node.key.as_ptr());
        let level = node.trie().level_from(from).filter(|l| l.index < self.end);
        if let Some(level) = level {
            let i = level.index;
            let val = path.digit(i);
            let buckets = level.buckets();
            for (v, b) in buckets.iter().enumerate() {
                if Some(v as u8) != val {
                    if let Some(q) = b.clone().next() {
                        self.snap.db().prefetch(q);
                    }
                }
            }
            for &sv in self.order(i) {
                let mut values = buckets[usize::from(sv)].clone();
                if Some(sv) == val {
                    if values.is_empty() {
                        // The node goes on at the next index. Not recorded in `seen`: this
                        // frame is unique when its parent frame is, and a hostile trie that
                        // also points at (node, i + 1) costs at most one more walk of the node's
                        // levels per pointer (bounded by the frame budget). Skipping the set
                        // here saves most of its inserts.
                        self.stack.push(Frame::Node(node.clone(), i + 1));
                    } else {
                        self.push_prefix(path.prefix_with(i, sv));
                    }
                    continue;
                }
                match (values.next(), values.next()) {
                    (None, _) => {}
                    (Some(q), None) if self.snap.db().is_cached(q) => {
                        // The same `seen` entry as `push_node` makes for the resolved node.
                        if self.first_visit(q.seq, i + 1) {
                            self.stack.push(Frame::Cached(q.seq, i + 1));
                        }
                    }
                    (Some(q), None) => {
                        let n = self.snap.db().resolve(q)?;
                        self.push_node(n, i + 1);
                    }
                    _ => self.push_prefix(path.prefix_with(i, sv)),
                }
            }
            return Ok(None);
        }
        if (!self.opts.deletes && node.deleted) || !node.key.starts_with(&self.prefix) {
            return Ok(None);
        }
        Ok(Some(Nodes::from(node)))
    }

    fn filter_result(&mut self, mut nodes: Vec<Arc<Node>>, i: usize) -> Option<Vec<Arc<Node>>> {
        nodes.sort_by(|a, b| cmp_js(&b.key, &a.key).then(b.feed.cmp(&a.feed)));
        let mut result: Option<Vec<Arc<Node>>> = None;
        for node in nodes {
            if node.key_path().len() != i && i != self.end {
                continue;
            }
            if !node.key.starts_with(&self.prefix) {
                continue;
            }
            let r = result.get_or_insert_with(Vec::new);
            if !r.is_empty() && r[0].key != node.key {
                self.collisions.push(std::mem::take(r));
            }
            r.push(node);
        }
        result
    }

    fn next_inner(&mut self) -> Result<Option<Nodes>> {
        if let Some(c) = self.drain() {
            return Ok(Some(c));
        }
        while let Some(top) = self.stack.pop() {
            self.frames += 1;
            let blocks = self.snap.db().len() as usize + 1;
            if self.frames > 16 * blocks * (self.longest_path + 1) {
                return Err(Error::InvalidNode {
                    seq: 0,
                    reason:
                        "listing needs more steps than any valid trie of this size (hostile feed?)"
                            .into(),
                });
            }
            match top {
                Frame::Node(node, i) => {
                    if let Some(out) = self.single_node(node, i)? {
                        return Ok(Some(out));
                    }
                }
                Frame::Cached(seq, i) => {
                    let node = self.snap.db().node(seq)?;
                    if let Some(out) = self.single_node(node, i)? {
                        return Ok(Some(out));
                    }
                }
                Frame::Prefix(p) => {
                    let nodes = self.snap.lookup(&p, None)?;
                    if nodes.is_empty() {
                        continue;
                    }
                    if nodes.len() == 1 {
                        let n = nodes[0].clone();
                        self.push_node(n, p.len());
                        continue;
                    }
                    let ptr = p.len();
                    if ptr < self.end {
                        for &sv in self.order(ptr) {
                            let visit = nodes.iter().any(|n| {
                                !n.trie().pointers(ptr, sv).is_empty()
                                    || n.key_path().digit(ptr) == Some(sv)
                            });
                            if visit {
                                self.push_prefix(prefix_path(&p, ptr, sv));
                            }
                        }
                    }
                    if let Some(r) = self.filter_result(nodes, ptr) {
                        if self.opts.deletes || !all_deletes(&r) {
                            return Ok(Some(Nodes::from(r)));
                        }
                    }
                    if let Some(c) = self.drain() {
                        return Ok(Some(c));
                    }
                }
            }
        }
        Ok(None)
    }
}

impl Iterator for ListIter<'_> {
    type Item = Result<Nodes>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_inner() {
            Ok(Some(v)) => Some(Ok(v)),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{CreateOptions, Hyperdb};

    #[test]
    fn nodes_read_alike_inline_or_not() {
        let mut db = Hyperdb::memory(CreateOptions::default()).expect("memory db");
        db.put("a", b"1").expect("put");
        db.put("b", b"2").expect("put");
        let a = db.get("a").expect("get").expect("a");
        let b = db.get("b").expect("get").expect("b");
        let one = Nodes::from(a.clone());
        let one_vec = Nodes::from(vec![a.clone()]);
        let two = Nodes::from(vec![a.clone(), b.clone()]);
        assert_eq!(one, one_vec);
        assert_ne!(one, two);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].key, "a");
        assert_eq!(one.as_ref().len(), 1);
        assert_eq!(two.len(), 2);
        assert_eq!(one.clone().into_vec(), vec![a.clone()]);
        assert_eq!(two.clone().into_vec(), vec![a.clone(), b.clone()]);
        let keys = |n: &Nodes| n.iter().map(|x| x.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&one), ["a"]);
        assert_eq!(keys(&two), ["a", "b"]);
        assert_eq!((&two).into_iter().count(), 2);
        let it = one.clone().into_iter();
        assert_eq!(it.size_hint(), (1, Some(1)));
        assert_eq!(it.map(|x| x.seq).collect::<Vec<_>>(), [a.seq]);
        let owned: Vec<u64> = two.into_iter().map(|x| x.seq).collect();
        assert_eq!(owned, [a.seq, b.seq]);
        // What a listing yields: one inline node per key.
        let listed = db
            .snapshot()
            .list("", ListOptions::default())
            .expect("list");
        assert_eq!(listed.len(), 2);
        assert!(listed.iter().all(|n| n.len() == 1));
    }

    #[test]
    fn first_visit_tells_every_frame_apart() {
        let db = Hyperdb::memory(CreateOptions::default()).expect("memory db");
        let mut it = db.snapshot().iter("", ListOptions::default());
        // Frames that a careless packing would merge: neighbours, the edges of both fields,
        // and values just past them (kept apart by the wide set).
        let frames = [
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1),
            ((1 << 44) - 1, (1 << 20) - 1),
            (1 << 44, 0),
            (0, 1 << 20),
            (1, 1 << 20),
            (2, 0),
            (u64::MAX, usize::MAX),
        ];
        for &(seq, i) in &frames {
            assert!(it.first_visit(seq, i), "first visit of ({seq}, {i})");
        }
        for &(seq, i) in &frames {
            assert!(!it.first_visit(seq, i), "second visit of ({seq}, {i})");
        }
    }
}
