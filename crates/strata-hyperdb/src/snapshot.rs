//! Reads at one version: get, list, history, key history, diff, version.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use crate::db::Hyperdb;
use crate::error::Result;
use crate::iter::{ListIter, ListOptions};
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
    pub left: Option<Vec<Arc<Node>>>,
    /// The nodes on the right (`other`) side.
    pub right: Option<Vec<Arc<Node>>>,
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
    pub(crate) fn lookup(&self, p: &[u8], key: Option<&str>) -> Result<Vec<Arc<Node>>> {
        let mut results: Vec<Arc<Node>> = Vec::new();
        let Some(head) = self.head()? else {
            return Ok(results);
        };
        let matches = |n: &Node| key.is_none_or(|k| n.key == k);
        let mut workers: Vec<(Arc<Node>, usize)> = vec![(head, 0)];
        // Forks only occur in multi-writer or hostile feeds: remember visited states so that a
        // crafted trie cannot make the walk exponential.
        let mut seen: HashSet<(u64, usize)> = HashSet::new();
        'workers: while let Some((mut node, mut i)) = workers.pop() {
            while i < p.len() {
                if node.path.get(i) == Some(&p[i]) {
                    i += 1;
                    continue;
                }
                let ptrs = node.trie.pointers(i, p[i]);
                match ptrs.len() {
                    0 => continue 'workers,
                    1 => {
                        node = self.db.resolve(ptrs[0])?;
                        i += 1;
                    }
                    _ => {
                        for &ptr in ptrs.iter().rev() {
                            if seen.insert((ptr.seq, i + 1)) {
                                workers.push((self.db.resolve(ptr)?, i + 1));
                            }
                        }
                        continue 'workers;
                    }
                }
            }
            if matches(&node) && !results.iter().any(|r| r.seq == node.seq) {
                results.push(node.clone());
            }
            if let Some(top) = p.len().checked_sub(1) {
                for &ptr in node.trie.pointers(top, p[top]) {
                    let n = self.db.resolve(ptr)?;
                    if matches(&n) && !results.iter().any(|r| r.seq == n.seq) {
                        results.push(n);
                    }
                }
            }
        }
        Ok(results)
    }

    /// hyperdb's iterator over `prefix`.
    pub fn iter(&self, prefix: &str, opts: ListOptions) -> ListIter<'a> {
        ListIter::new(*self, prefix, opts)
    }

    /// hyperdb's `list`: every yielded node array, in iteration order.
    pub fn list(&self, prefix: &str, opts: ListOptions) -> Result<Vec<Vec<Arc<Node>>>> {
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
        let mut l: Option<Vec<Arc<Node>>> = None;
        let mut r: Option<Vec<Arc<Node>>> = None;
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
            let sl = format!("{}@{}", path::to_digits(&ln[0].path), kl);
            let sr = format!("{}@{}", path::to_digits(&rn[0].path), kr);
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
