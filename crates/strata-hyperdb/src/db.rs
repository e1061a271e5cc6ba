//! The database: a single-writer hyperdb over one hypercore feed (`DIR/source/`).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;

use prost::Message;
use smallvec::SmallVec;

use crate::cache::NodeCache;
use crate::error::{Error, Result};
use crate::lock::{lock_dir, lock_path, DirLock, LockMode};
use crate::messages::{self, Entry};
use crate::node::{Inflation, Node};
use crate::path;
use crate::path::KeyPath;
use crate::sleep::{crypto, Feed, FeedFiles, KeyPair};
use crate::snapshot::Snapshot;
use crate::trie::Pointer;
use crate::trie_view::{LevelBuf, TrieWriter};

/// Options of [`Hyperdb::create`].
#[derive(Clone, Default)]
pub struct CreateOptions {
    /// The key pair of the source feed; a new random one when `None`.
    pub key_pair: Option<KeyPair>,
    /// Give the database a content feed (hyperdb's `{contentFeed: true}`), whose key is derived
    /// from the source secret key and written into the first InflatedEntry.
    pub content_feed: bool,
}

/// Options of [`Hyperdb::put_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PutOptions {
    /// Write nothing and return the existing node when the key already has one (hyperdb's
    /// `ifNotExists`; a tombstone counts as existing, as in the reference).
    pub if_not_exists: bool,
}

/// One operation of [`Hyperdb::batch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOp {
    /// Put `value` (`None` = a null value) at `key`.
    Put {
        /// Key (normalised on use).
        key: String,
        /// Value, or `None` for a null put.
        value: Option<Vec<u8>>,
    },
    /// Write a tombstone at `key`.
    Del {
        /// Key (normalised on use).
        key: String,
    },
}

/// A registered watcher: fires when the newest node under its prefix changes.
struct WatchState {
    path: Vec<u8>,
    last: Vec<(u64, u64)>,
    tx: mpsc::Sender<()>,
}

/// A hyperdb database (single writer).
pub struct Hyperdb {
    feed: Feed,
    cache: RefCell<NodeCache>,
    /// Nodes of a batch being built (seq >= feed length), readable before they are appended.
    pending: RefCell<Vec<Arc<Node>>>,
    /// A reusable buffer for blocks being decoded.
    scratch: RefCell<Vec<u8>>,
    /// Seq of the latest InflatedEntry (0: none yet, the next entry must be one).
    inflate: u64,
    content_feed: Option<[u8; 32]>,
    watchers: RefCell<Vec<WatchState>>,
    dir: Option<PathBuf>,
    /// The directory's lock, for databases on disk.
    lock: Option<DirLock>,
}

impl Hyperdb {
    /// Creates a database in `dir` (`dir/source/` holds the feed), as `hyperdb('DIR')` does.
    ///
    /// Holds the directory's lock exclusively until dropped (see [`Hyperdb::open`]).
    pub fn create(dir: &Path, opts: CreateOptions) -> Result<Hyperdb> {
        let (lock, key_len) = lock_dir(dir, LockMode::Exclusive, true)?;
        if key_len > 0 {
            return Err(Error::Invalid(format!(
                "{} already holds a database",
                dir.display()
            )));
        }
        let source = dir.join("source");
        let files = FeedFiles::disk(&source, true, true).map_err(|e| Error::io(&source, e))?;
        let mut db = Hyperdb::create_in(files, opts, Some(dir))?;
        db.feed.sync()?;
        db.dir = Some(dir.to_path_buf());
        db.lock = Some(lock);
        Ok(db)
    }

    /// Creates a database whose feed lives in memory.
    pub fn memory(opts: CreateOptions) -> Result<Hyperdb> {
        Hyperdb::create_in(FeedFiles::memory(), opts, None)
    }

    /// Creates a database over the given (empty) feed files; content feed files go under `dir`.
    pub fn create_in(files: FeedFiles, opts: CreateOptions, dir: Option<&Path>) -> Result<Hyperdb> {
        let kp = match opts.key_pair {
            Some(kp) => kp,
            None => KeyPair::generate()?,
        };
        let public = kp.public_key();
        let secret = kp.secret_key();
        let mut feed = Feed::create(files, Some(kp), public, true)?;
        let mut content_feed = None;
        if opts.content_feed {
            let ckp = KeyPair::from_seed(&crypto::content_feed_seed(&secret));
            let ckey = ckp.public_key();
            if let Some(dir) = dir {
                let hexdk: String = crypto::discovery_key(&public)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                let cdir = dir.join("content").join(hexdk);
                let cfiles = FeedFiles::disk(&cdir, true, true).map_err(|e| Error::io(&cdir, e))?;
                // Durable with the database (its header, key and names): the open of an
                // existing database needs it.
                Feed::create(cfiles, Some(ckp), ckey, false)?.sync()?;
            }
            content_feed = Some(ckey);
        }
        feed.append(&[messages::header_block()])?;
        Ok(Hyperdb {
            feed,
            cache: Default::default(),
            pending: Default::default(),
            scratch: Default::default(),
            inflate: 0,
            content_feed,
            watchers: Default::default(),
            dir: None,
            lock: None,
        })
    }

    /// Opens the database in `dir`: writable when `dir/source/secret_key` holds the key,
    /// otherwise read-only.
    ///
    /// One process writes a directory at a time: this takes an exclusive OS lock (on
    /// `dir/source/key`), held until the database is dropped, and fails at once with
    /// [`Error::Locked`] while another process has the directory open (to read or write).
    pub fn open(dir: &Path) -> Result<Hyperdb> {
        Hyperdb::open_with(dir, true)
    }

    /// Opens the database in `dir` read-only (the secret key is not read, nothing is written).
    /// Takes the directory's lock shared: any number of readers, but [`Error::Locked`] while a
    /// writer has it.
    pub fn open_read_only(dir: &Path) -> Result<Hyperdb> {
        Hyperdb::open_with(dir, false)
    }

    fn check_exists(dir: &Path) -> Result<()> {
        if !lock_path(dir).exists() {
            return Err(Error::Invalid(format!(
                "no database in {} (missing source/key)",
                dir.display()
            )));
        }
        Ok(())
    }

    fn open_with(dir: &Path, writable: bool) -> Result<Hyperdb> {
        Hyperdb::check_exists(dir)?;
        let mode = if writable {
            LockMode::Exclusive
        } else {
            LockMode::Shared
        };
        let (lock, _) = lock_dir(dir, mode, false)?;
        let source = dir.join("source");
        let files = FeedFiles::disk(&source, false, writable).map_err(|e| Error::io(&source, e))?;
        let mut db = Hyperdb::open_files(files, writable)?;
        db.dir = Some(dir.to_path_buf());
        db.lock = Some(lock);
        Ok(db)
    }

    /// Checks the database in `dir/source/` without decoding any entry: the headers of the
    /// `tree`, `signatures` and `bitfield` files, that `secret_key` (when present) belongs to
    /// the public key, the merkle tree recomputed from the data, and every signature. Returns
    /// the number of signatures checked. Takes the directory's lock shared.
    pub fn verify_dir(dir: &Path) -> Result<u64> {
        Hyperdb::check_exists(dir)?;
        let (_lock, _) = lock_dir(dir, LockMode::Shared, false)?;
        let source = dir.join("source");
        let files = FeedFiles::disk(&source, false, false).map_err(|e| Error::io(&source, e))?;
        let feed = Feed::open(files, false)?;
        feed.verify_files()?;
        feed.verify()
    }

    /// Makes every write so far durable (fsync of the feed files).
    pub fn sync(&mut self) -> Result<()> {
        self.feed.sync()
    }

    /// Opens a database over existing feed files.
    pub fn open_files(files: FeedFiles, writable: bool) -> Result<Hyperdb> {
        let feed = Feed::open(files, writable)?;
        let mut db = Hyperdb {
            feed,
            cache: Default::default(),
            pending: Default::default(),
            scratch: Default::default(),
            inflate: 0,
            content_feed: None,
            watchers: Default::default(),
            dir: None,
            lock: None,
        };
        if db.feed.len() >= 2 {
            let head = db.node(db.feed.len() - 1)?;
            if head.inflate == 0 || head.inflate > head.seq {
                return Err(Error::InvalidNode {
                    seq: head.seq,
                    reason: format!("inflate {} does not name an earlier block", head.inflate),
                });
            }
            let block = db.feed.get(head.inflate)?;
            let inflated = Entry::decode(block.as_slice())
                .map_err(|e| Error::decode(format!("block {}", head.inflate), 0, e.to_string()))?;
            if let Some(first) = inflated.feeds.first() {
                if first.key != db.feed.public_key() {
                    return Err(Error::InvalidNode {
                        seq: head.inflate,
                        reason: "the first feed of the InflatedEntry is not the source feed".into(),
                    });
                }
            }
            db.content_feed = inflated.content_feed.and_then(|k| k.try_into().ok());
            db.inflate = head.inflate;
        }
        Ok(db)
    }

    /// The directory, for databases on disk.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The source feed.
    pub fn feed(&self) -> &Feed {
        &self.feed
    }

    /// The database key (the source feed's public key).
    pub fn key(&self) -> [u8; 32] {
        self.feed.public_key()
    }

    /// The discovery key of the source feed.
    pub fn discovery_key(&self) -> [u8; 32] {
        crypto::discovery_key(&self.feed.public_key())
    }

    /// The content feed key, when the database has one.
    pub fn content_feed_key(&self) -> Option<[u8; 32]> {
        self.content_feed
    }

    /// True when this process can write.
    pub fn writable(&self) -> bool {
        self.feed.writable()
    }

    /// Number of feed blocks (header included).
    pub fn len(&self) -> u64 {
        self.feed.len()
    }

    /// True when the database holds no entry (only the header, or nothing).
    pub fn is_empty(&self) -> bool {
        self.feed.len() < 2
    }

    /// Raw block `seq` of the source feed.
    pub fn block(&self, seq: u64) -> Result<Vec<u8>> {
        self.feed.get(seq)
    }

    /// The decoded node at `seq` (>= 1).
    pub fn node(&self, seq: u64) -> Result<Arc<Node>> {
        let len = self.feed.len();
        if seq >= len {
            let pending = self.pending.borrow();
            if let Some(n) = pending.get((seq - len) as usize) {
                return Ok(n.clone());
            }
            return Err(Error::OutOfRange { seq, length: len });
        }
        if seq == 0 {
            return Err(Error::InvalidNode {
                seq: 0,
                reason: "block 0 is the header, not a node".into(),
            });
        }
        if let Some(n) = self.cache.borrow().get(seq) {
            return Ok(n);
        }
        let node = {
            let mut block = self.scratch.borrow_mut();
            self.feed.get_into(seq, &mut block)?;
            Arc::new(Node::decode(0, seq, &block)?)
        };
        self.cache.borrow_mut().insert(node.clone());
        Ok(node)
    }

    /// Starts loading the node a trie pointer names into the CPU cache (see
    /// [`NodeCache::prefetch`]); nothing happens for nodes that are not cached.
    #[inline]
    pub(crate) fn prefetch(&self, p: Pointer) {
        if let Ok(cache) = self.cache.try_borrow() {
            cache.prefetch(p.seq);
        }
    }

    /// Starts loading the node cache slot of `p` into the CPU cache (see
    /// [`NodeCache::prefetch_slot`]); does not read the slot.
    #[inline]
    fn prefetch_slot(&self, p: Pointer) {
        if let Ok(cache) = self.cache.try_borrow() {
            cache.prefetch_slot(p.seq);
        }
    }

    /// True when [`Hyperdb::resolve`] of `p` would answer from the node cache now (so it cannot
    /// fail): a pointer into feed 0, past the header, below the feed's length, cached. Reads the
    /// cache slot only, not the node.
    #[inline]
    pub(crate) fn is_cached(&self, p: Pointer) -> bool {
        p.feed == 0
            && p.seq != 0
            && p.seq < self.feed.len()
            && self.cache.try_borrow().is_ok_and(|c| c.contains(p.seq))
    }

    /// Follows a trie pointer.
    pub(crate) fn resolve(&self, p: Pointer) -> Result<Arc<Node>> {
        if p.feed != 0 {
            return Err(Error::InvalidNode {
                seq: p.seq,
                reason: format!(
                    "pointer to feed {}, and this single-writer database has only feed 0",
                    p.feed
                ),
            });
        }
        self.node(p.seq)
    }

    /// The newest node (the single head), if any.
    pub fn head(&self) -> Result<Option<Arc<Node>>> {
        let n = self.feed.len() + self.pending.borrow().len() as u64;
        if n < 2 {
            return Ok(None);
        }
        self.node(n - 1).map(Some)
    }

    /// A read view of the current state.
    pub fn snapshot(&self) -> Snapshot<'_> {
        let n = self.feed.len();
        Snapshot::new(self, if n >= 2 { Some(n - 1) } else { None })
    }

    /// A read-only view at `version` (as returned by [`Snapshot::version`]; empty = the empty db).
    pub fn checkout(&self, version: &[u8]) -> Result<Snapshot<'_>> {
        if version.is_empty() {
            return Ok(Snapshot::new(self, None));
        }
        if version.len() < 33 {
            return Err(Error::Invalid(
                "a version is a 32-byte feed key and a varint seq".into(),
            ));
        }
        if version[..32] != self.key() {
            return Err(Error::Invalid(
                "the version names another feed (Invalid version)".into(),
            ));
        }
        let mut pos = 32;
        let seq = crate::varint::decode(version, &mut pos)
            .map_err(|e| Error::Invalid(e.as_str().into()))?;
        if pos != version.len() {
            return Err(Error::Invalid(
                "a multi-writer version (several heads) is not supported".into(),
            ));
        }
        self.checkout_seq(seq)
    }

    /// A read-only view whose head is block `seq` (0 = the empty database).
    pub fn checkout_seq(&self, seq: u64) -> Result<Snapshot<'_>> {
        if seq >= self.feed.len() {
            return Err(Error::OutOfRange {
                seq,
                length: self.feed.len(),
            });
        }
        Ok(Snapshot::new(self, if seq >= 1 { Some(seq) } else { None }))
    }

    /// The nodes of `key` in the current state (hyperdb `get`; tombstones hidden).
    pub fn get(&self, key: &str) -> Result<Option<Arc<Node>>> {
        self.snapshot().get(key)
    }

    /// Puts `value` at `key`.
    pub fn put(&mut self, key: &str, value: &[u8]) -> Result<Arc<Node>> {
        self.write(key, Some(value), false, PutOptions::default())
    }

    /// Puts with options; `value` `None` writes a null value (neither value nor tombstone).
    pub fn put_with(
        &mut self,
        key: &str,
        value: Option<&[u8]>,
        opts: PutOptions,
    ) -> Result<Arc<Node>> {
        self.write(key, value, false, opts)
    }

    /// Writes a tombstone at `key` (even when the key does not exist, as the reference does).
    pub fn del(&mut self, key: &str) -> Result<Arc<Node>> {
        self.write(key, None, true, PutOptions::default())
    }

    fn check_writable(&self) -> Result<()> {
        if !self.feed.writable() {
            return Err(Error::ReadOnly("opened without the secret key"));
        }
        if self.inflate == 0 && self.feed.len() >= 2 {
            return Err(Error::ReadOnly("no InflatedEntry found"));
        }
        Ok(())
    }

    fn write(
        &mut self,
        key: &str,
        value: Option<&[u8]>,
        delete: bool,
        opts: PutOptions,
    ) -> Result<Arc<Node>> {
        self.check_writable()?;
        let key = path::normalize(key);
        let (node, existing) = self.build(key, value, delete)?;
        if opts.if_not_exists {
            if let Some(e) = existing {
                if e.key == key {
                    return Ok(e);
                }
            }
        }
        let block = self.encode_next(&node);
        self.feed.append(&[block])?;
        let node = Arc::new(node);
        self.after_append(std::slice::from_ref(&node));
        Ok(node)
    }

    /// Applies `ops` as one atomic append (one signature), like hyperdb's `batch`.
    pub fn batch(&mut self, ops: &[BatchOp]) -> Result<Vec<Arc<Node>>> {
        self.check_writable()?;
        let saved_inflate = self.inflate;
        let result = self.batch_inner(ops);
        self.pending.borrow_mut().clear();
        if result.is_err() {
            self.inflate = saved_inflate;
        }
        result
    }

    fn batch_inner(&mut self, ops: &[BatchOp]) -> Result<Vec<Arc<Node>>> {
        // Every block is encoded into one buffer; `ends[k]` is where block `k` ends.
        let mut buf = Vec::new();
        let mut ends = Vec::with_capacity(ops.len());
        for op in ops {
            let (key, value, delete) = match op {
                BatchOp::Put { key, value } => (key.as_str(), value.as_deref(), false),
                BatchOp::Del { key } => (key.as_str(), None, true),
            };
            let (node, _) = self.build(path::normalize(key), value, delete)?;
            self.encode_next_into(&node, &mut buf);
            ends.push(buf.len());
            self.pending.borrow_mut().push(Arc::new(node));
        }
        let mut start = 0;
        let blocks: Vec<&[u8]> = ends
            .iter()
            .map(|&end| {
                let b = &buf[start..end];
                start = end;
                b
            })
            .collect();
        self.feed.append(&blocks)?;
        let nodes: Vec<Arc<Node>> = std::mem::take(&mut *self.pending.borrow_mut());
        self.after_append(&nodes);
        Ok(nodes)
    }

    /// Encodes `node` (the next entry), as an InflatedEntry when none was written yet.
    fn encode_next(&mut self, node: &Node) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(256 + node.key.len() + node.value.as_ref().map_or(0, Vec::len));
        self.encode_next_into(node, &mut out);
        out
    }

    /// [`Hyperdb::encode_next`], appended to `out`.
    fn encode_next_into(&mut self, node: &Node, out: &mut Vec<u8>) {
        if node.inflate == node.seq && self.inflate != node.seq {
            self.inflate = node.seq;
            let feeds = [self.feed.public_key()];
            let inf = Inflation {
                feeds: &feeds,
                content_feed: self.content_feed,
            };
            node.encode_into(Some(&inf), out);
        } else {
            node.encode_into(None, out);
        }
    }

    fn after_append(&self, nodes: &[Arc<Node>]) {
        {
            let mut cache = self.cache.borrow_mut();
            for n in nodes {
                cache.insert(n.clone());
            }
        }
        self.notify_watchers();
    }

    /// Builds the next node for `key` (hyperdb's `put.js`), returning it and the final head of
    /// the walk (what `ifNotExists` compares with).
    fn build(
        &self,
        key: &str,
        value: Option<&[u8]>,
        delete: bool,
    ) -> Result<(Node, Option<Arc<Node>>)> {
        let path = KeyPath::of(key);
        let seq = self.feed.len() + self.pending.borrow().len() as u64;
        let head = self.head()?;
        let mut trie = TrieWriter::default();
        let mut level = LevelBuf::default();
        let mut last = head.clone();
        if let Some(mut head) = head {
            let mut levels = head.trie().levels().peekable();
            let mut i = 0;
            let last_index = path.len() - 1;
            while i <= last_index {
                // Jump over the indexes where the head has no level and agrees with our path:
                // nothing is copied or pushed there.
                let differs = head.key_path().mismatch_key(&path, i).min(last_index);
                while levels.next_if(|l| l.index < i).is_some() {}
                i = levels.peek().map_or(differs, |l| l.index.min(differs));
                let Some(val) = path.digit(i) else {
                    break;
                };
                let bucket = levels.next_if(|l| l.index == i);
                let mut deferred: SmallVec<[(u8, Pointer); 4]> = SmallVec::new();
                // The first pointer of our own bucket: where the walk goes next.
                let mut next = None;
                if let Some(b) = &bucket {
                    // One pass over the level: every bucket but ours is copied (all of them,
                    // ours included, are deferred at the terminator).
                    b.for_each_pointer(|v, p| {
                        if v == val {
                            next = next.or(Some(p));
                            if val != path::TERMINATOR {
                                return;
                            }
                        }
                        if val == path::TERMINATOR {
                            deferred.push((v, p));
                        } else {
                            level.push(v, p);
                        }
                    });
                }
                if let Some(p) = next {
                    // The walk follows this pointer next: start loading its cache slot (the
                    // first of two dependent misses) while the level is written.
                    self.prefetch_slot(p);
                }
                let head_val = head.key_path().digit(i);
                let same = head_val == Some(val) && (val < path::TERMINATOR || head.key == key);
                if !same {
                    let Some(hv) = head_val else {
                        return Err(Error::InvalidNode {
                            seq: head.seq,
                            reason: format!(
                                "reached by a trie pointer at index {i}, past the end of its path"
                            ),
                        });
                    };
                    level.push(
                        hv,
                        Pointer {
                            feed: 0,
                            seq: head.seq,
                        },
                    );
                }
                // The reference checks these pointers asynchronously, so they land after the head.
                for (v, p) in deferred {
                    if self.resolve(p)?.key != key {
                        level.push(v, p);
                    }
                }
                level.write(i, &mut trie);
                i += 1;
                if same {
                    continue;
                }
                let Some(next) = next else {
                    break;
                };
                head = self.resolve(next)?;
                last = Some(head.clone());
                levels = head.trie().levels().peekable();
            }
        }
        let inflate = if self.inflate == 0 { seq } else { self.inflate };
        let value = if delete { None } else { value };
        let node = Node::build(key, path, value, delete, trie.finish(), seq, inflate);
        Ok((node, last))
    }

    /// Watches `prefix`: the receiver gets a message whenever the newest node under it changes.
    pub fn watch(&self, prefix: &str) -> Result<mpsc::Receiver<()>> {
        let (tx, rx) = mpsc::channel();
        let p = path::hash(path::normalize(prefix), false);
        let last = self.watch_state(&p)?;
        self.watchers
            .borrow_mut()
            .push(WatchState { path: p, last, tx });
        Ok(rx)
    }

    fn watch_state(&self, p: &[u8]) -> Result<Vec<(u64, u64)>> {
        let snap = self.snapshot();
        let mut v: Vec<(u64, u64)> = snap
            .lookup(p, None)?
            .iter()
            .map(|n| (n.feed, n.seq))
            .collect();
        v.sort_unstable();
        Ok(v)
    }

    fn notify_watchers(&self) {
        let mut watchers = self.watchers.borrow_mut();
        watchers.retain_mut(|w| {
            let Ok(now) = self.watch_state(&w.path) else {
                return true;
            };
            if now != w.last {
                w.last = now;
                return w.tx.send(()).is_ok();
            }
            true
        });
    }
}
