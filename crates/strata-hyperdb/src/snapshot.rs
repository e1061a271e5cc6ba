//! Reads at one version: get, list, history, key history, diff, version.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::db::Hyperdb;
use crate::error::{Error, Result};
use crate::iter::{ListIter, ListOptions, Nodes};
use crate::node::Node;
use crate::path;
use crate::varint;

/// A read view: the database as of head block `head` (`None` = empty).
#[derive(Clone, Copy)]
pub struct Snapshot<'a> {
    db: &'a Hyperdb,
    head: Option<u64>,
}

/// One difference between two snapshots (hyperdb's diff stream item).
#[derive(Clone, Debug)]
pub struct DiffItem {
    /// The nodes on the left (`self`) side, or `None` when the key is absent there.
    pub left: Option<Nodes>,
    /// The nodes on the right (`other`) side.
    pub right: Option<Nodes>,
}

/// Compares two strings as JavaScript does (by UTF-16 code units).
pub fn cmp_js(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

impl<'a> Snapshot<'a> {
    pub(crate) fn new(db: &'a Hyperdb, head: Option<u64>) -> Snapshot<'a> {
        Snapshot { db, head }
    }

    /// The database.
    pub fn db(&self) -> &'a Hyperdb {
        self.db
    }

    /// Seq of the head node (`None` for the empty database).
    pub fn head_seq(&self) -> Option<u64> {
        self.head
    }

    /// The head node.
    pub fn head(&self) -> Result<Option<Arc<Node>>> {
        self.head.map(|s| self.db.node(s)).transpose()
    }

    /// hyperdb's `version()`: feed key ‖ varint(head seq), empty for the empty database.
    pub fn version(&self) -> Vec<u8> {
        let Some(seq) = self.head else {
            return Vec::new();
        };
        let mut v = self.db.key().to_vec();
        varint::encode(seq, &mut v);
        v
    }

    /// The live node of `key`, or `None` (missing or deleted).
    pub fn get(&self, key: &str) -> Result<Option<Arc<Node>>> {
        Ok(self.get_all(key, false)?.into_iter().next())
    }

    /// Every node hyperdb's `get` returns for `key`; with `deletes`, tombstones are shown.
    pub fn get_all(&self, key: &str, deletes: bool) -> Result<Vec<Arc<Node>>> {
        let key = path::normalize(key);
        let p = path::hash(key, true);
        let nodes = self.lookup(&p, Some(key))?;
        if !deletes && nodes.iter().all(|n| n.deleted) {
            return Ok(Vec::new());
        }
        Ok(nodes)
    }

    /// hyperdb's trie walk (`get.js`) along `p`: with `key`, the nodes of that key; without,
    /// the closest node under the prefix path (prefix mode).
    ///
    /// The reference runs its workers asynchronously; forked workers are dropped when another
    /// live worker started from a newer node (`_isHead`). This replays that schedule with a FIFO
    /// queue of the pointer loads, which is exact for a single writer (where forks only happen
    /// at the last index of the path, on collision chains).
    pub(crate) fn lookup(&self, p: &[u8], key: Option<&str>) -> Result<Vec<Arc<Node>>> {
        let Some(head) = self.head()? else {
            return Ok(Vec::new());
        };
        if let Some(found) = self.lookup_linear(&head, p, key)? {
            return Ok(found);
        }
        let mut walk = Walk {
            db: self.db,
            p,
            key,
            workers: Vec::new(),
            registry: Vec::new(),
            queue: VecDeque::new(),
            results: Vec::new(),
            seen: FxHashSet::default(),
            budget: 4 * (self.db.len() as usize + 1) + 64,
        };
        walk.update(vec![head], None, 0)?;
        while let Some(ev) = walk.queue.pop_front() {
            match ev {
                Event::Fork(w, ptrs) => {
                    let i = walk.workers[w].i + 1;
                    let mut nodes = Vec::with_capacity(ptrs.len());
                    for q in ptrs {
                        if !walk.seen.contains(&(q.seq, i)) {
                            nodes.push(walk.db.resolve(q)?);
                        }
                    }
                    walk.update(nodes, Some(w), i)?;
                }
                Event::Move(w, node) => {
                    if !walk.is_head(&node, w) {
                        walk.unregister(w);
                        continue;
                    }
                    walk.workers[w].head = node;
                    walk.workers[w].i += 1;
                    walk.move_closer(w)?;
                }
                Event::PushAll(w, nodes) => {
                    for n in nodes {
                        if walk.is_head(&n, w) {
                            walk.push(n);
                        }
                    }
                }
            }
        }
        Ok(walk.results)
    }

    /// The walk without forks (always so for a valid single-writer feed, except on collision
    /// chains): one worker, so the reference's head checks never drop anything. `None` when a
    /// fork is met (the caller then replays the full schedule).
    fn lookup_linear(
        &self,
        head: &Arc<Node>,
        p: &[u8],
        key: Option<&str>,
    ) -> Result<Option<Vec<Arc<Node>>>> {
        let matches = |n: &Node| key.is_none_or(|k| n.key == k);
        let mut node = head.clone();
        let mut i = 0;
        loop {
            i = node.key_path().mismatch(p, i);
            let Some(&want) = p.get(i) else {
                break;
            };
            let mut ptrs = node.trie().pointers(i, want);
            match (ptrs.next(), ptrs.next()) {
                (None, _) => return Ok(Some(Vec::new())),
                (Some(q), None) => {
                    node = self.db.resolve(q)?;
                    i += 1;
                }
                _ => return Ok(None),
            }
        }
        let mut out = Vec::new();
        if matches(&node) {
            out.push(node.clone());
        }
        if let Some(top) = p.len().checked_sub(1) {
            for q in node.trie().pointers(top, p[top]) {
                let n = self.db.resolve(q)?;
                if matches(&n) {
                    out.push(n);
                }
            }
        }
        Ok(Some(out))
    }

    /// hyperdb's iterator over `prefix`.
    pub fn iter(&self, prefix: &str, opts: ListOptions) -> ListIter<'a> {
        ListIter::new(*self, prefix, opts)
    }

    /// hyperdb's `list`: the nodes of every yielded key (see [`Nodes`]), in iteration order.
    pub fn list(&self, prefix: &str, opts: ListOptions) -> Result<Vec<Nodes>> {
        self.iter(prefix, opts).collect()
    }

    /// Every node from block 1 to the head (forward) or back (reverse), tombstones included.
    pub fn history(&self, reverse: bool) -> impl Iterator<Item = Result<Arc<Node>>> + 'a {
        let db = self.db;
        let end = self.head.unwrap_or(0);
        let mut seqs: Box<dyn Iterator<Item = u64>> = if reverse {
            Box::new((1..=end).rev())
        } else {
            Box::new(1..=end)
        };
        std::iter::from_fn(move || seqs.next().map(|s| db.node(s)))
    }

    /// hyperdb's `keyHistory`: the nodes of `key` at each earlier version, newest first.
    pub fn key_history(&self, key: &str) -> Result<Vec<Vec<Arc<Node>>>> {
        let mut out = Vec::new();
        let mut snap = *self;
        loop {
            let nodes = snap.get_all(key, true)?;
            let Some(first) = nodes.first() else {
                break;
            };
            let prev = first.seq.saturating_sub(1);
            out.push(nodes);
            if prev < 1 {
                break;
            }
            snap = Snapshot::new(self.db, Some(prev));
        }
        Ok(out)
    }

    /// hyperdb's `diff(other, prefix)`: keys whose nodes differ, `self` on the left.
    pub fn diff(
        &self,
        other: &Snapshot<'_>,
        prefix: &str,
        opts: ListOptions,
    ) -> Result<Vec<DiffItem>> {
        let mut left = self.iter(prefix, opts);
        let mut right = other.iter(prefix, opts);
        let mut l: Option<Nodes> = None;
        let mut r: Option<Nodes> = None;
        let mut out = Vec::new();
        loop {
            if l.is_none() {
                l = left.next().transpose()?;
            }
            if r.is_none() {
                r = right.next().transpose()?;
            }
            let (ln, rn) = match (&l, &r) {
                (None, None) => return Ok(out),
                (Some(_), None) | (None, Some(_)) => {
                    out.push(DiffItem {
                        left: l.take(),
                        right: r.take(),
                    });
                    continue;
                }
                (Some(a), Some(b)) => (a, b),
            };
            let (kl, kr) = (&ln[0].key, &rn[0].key);
            if kl == kr {
                let same = ln.len() == rn.len()
                    && ln
                        .iter()
                        .zip(rn.iter())
                        .all(|(a, b)| a.feed == b.feed && a.seq == b.seq);
                if same {
                    l = None;
                    r = None;
                } else {
                    out.push(DiffItem {
                        left: l.take(),
                        right: r.take(),
                    });
                }
                continue;
            }
            let sl = format!("{}@{}", path::to_digits(&ln[0].path()), kl);
            let sr = format!("{}@{}", path::to_digits(&rn[0].path()), kr);
            if cmp_js(&sl, &sr) == Ordering::Less {
                out.push(DiffItem {
                    left: l.take(),
                    right: None,
                });
            } else {
                out.push(DiffItem {
                    left: None,
                    right: r.take(),
                });
            }
        }
    }
}

/// A worker of the reference's `GetRequest`: its current node and index, and the node it
/// started from (`lock`), which decides whether other workers' nodes are still heads.
struct Worker {
    head: Arc<Node>,
    lock: Arc<Node>,
    i: usize,
}

/// A completed pointer load of the reference's asynchronous walk.
enum Event {
    Fork(usize, Vec<crate::trie::Pointer>),
    Move(usize, Arc<Node>),
    PushAll(usize, Vec<Arc<Node>>),
}

struct Walk<'a, 'p> {
    db: &'a Hyperdb,
    p: &'p [u8],
    key: Option<&'p str>,
    workers: Vec<Worker>,
    /// Live workers (`GetRequest._workers`).
    registry: Vec<usize>,
    queue: VecDeque<Event>,
    results: Vec<Arc<Node>>,
    /// Worker start states already taken: a hostile trie cannot make the walk exponential.
    seen: FxHashSet<(u64, usize)>,
    /// Workers left to start. A valid single-writer trie forks only on collision chains, so a
    /// walk needing more workers than the feed has blocks (times 4) is hostile: stop it.
    budget: usize,
}

impl Walk<'_, '_> {
    fn push(&mut self, n: Arc<Node>) {
        if self.key.is_none_or(|k| n.key == k) {
            self.results.push(n);
        }
    }

    fn unregister(&mut self, w: usize) {
        self.registry.retain(|&x| x != w);
    }

    fn is_head(&self, node: &Node, w: usize) -> bool {
        let clock = node.seq + 1;
        self.registry.iter().all(|&o| {
            if o == w {
                return true;
            }
            match usize::try_from(node.feed)
                .ok()
                .and_then(|f| self.workers[o].lock.clock().get(f))
            {
                Some(&other) => clock > other,
                None => true,
            }
        })
    }

    fn update(&mut self, nodes: Vec<Arc<Node>>, parent: Option<usize>, i: usize) -> Result<()> {
        if let Some(p) = parent {
            self.unregister(p);
        }
        for n in nodes {
            if !self.seen.insert((n.seq, i)) {
                continue;
            }
            if self.budget == 0 {
                return Err(Error::InvalidNode {
                    seq: n.seq,
                    reason:
                        "the trie forks more than any valid feed of this length can (hostile feed?)"
                            .into(),
                });
            }
            self.budget -= 1;
            let w = self.workers.len();
            self.workers.push(Worker {
                head: n.clone(),
                lock: n.clone(),
                i,
            });
            self.registry.push(w);
            if self.is_head(&n, w) {
                self.move_closer(w)?;
            } else {
                self.unregister(w);
            }
        }
        Ok(())
    }

    fn move_closer(&mut self, w: usize) -> Result<()> {
        let p = self.p;
        let head = self.workers[w].head.clone();
        let i = head.key_path().mismatch(p, self.workers[w].i);
        self.workers[w].i = i;
        if let Some(&want) = p.get(i) {
            let ptrs = head.trie().pointers(i, want);
            let mut it = ptrs.clone();
            match (it.next(), it.next()) {
                (None, _) => {}
                (Some(q), None) => {
                    let n = self.db.resolve(q)?;
                    self.queue.push_back(Event::Move(w, n));
                }
                _ => self.queue.push_back(Event::Fork(w, ptrs.to_vec())),
            }
            return Ok(());
        }
        self.push(head.clone());
        if let Some(top) = p.len().checked_sub(1) {
            let ptrs = head.trie().pointers(top, p[top]);
            if !ptrs.is_empty() {
                let nodes = ptrs
                    .map(|q| self.db.resolve(q))
                    .collect::<Result<Vec<_>>>()?;
                self.queue.push_back(Event::PushAll(w, nodes));
            }
        }
        Ok(())
    }
}
