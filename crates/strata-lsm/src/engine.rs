//! The [`Engine`] trait: what Strata needs from an ordered key-value store.
//!
//! The trait makes no local-file assumption: a later implementation may sit on a distributed
//! ordered store (etcd, TiKV, FoundationDB) without changing the layers above.

use std::ops::{Bound, Deref};
use std::sync::Arc;

use crate::error::Result;

/// A key and its value.
pub type KvPair = (Vec<u8>, Vec<u8>);

/// An ordered iterator over a snapshot. It owns what it needs (no borrow of the engine).
pub type KvIter = Box<dyn Iterator<Item = Result<KvPair>> + Send>;

/// Iteration direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// Ascending key order.
    #[default]
    Forward,
    /// Descending key order.
    Reverse,
}

/// A range of keys given by two bounds (like `std::ops::RangeBounds` on byte strings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    /// Lower bound.
    pub start: Bound<Vec<u8>>,
    /// Upper bound.
    pub end: Bound<Vec<u8>>,
}

impl KeyRange {
    /// Every key.
    pub fn all() -> KeyRange {
        KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    }

    /// `[start, end)`.
    pub fn half_open(start: impl Into<Vec<u8>>, end: impl Into<Vec<u8>>) -> KeyRange {
        KeyRange {
            start: Bound::Included(start.into()),
            end: Bound::Excluded(end.into()),
        }
    }

    /// Every key that starts with `prefix`.
    pub fn prefix(prefix: &[u8]) -> KeyRange {
        let (start, end) = strata_key::range::prefix_range(prefix);
        KeyRange { start, end }
    }

    /// True when `key` is inside the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        strata_key::range::contains(
            self.start.as_ref().map(|v| v.as_slice()),
            self.end.as_ref().map(|v| v.as_slice()),
            key,
        )
    }
}

pub use crate::batch::{Op, Ops, WriteBatch};

/// A precondition of a batch, checked atomically with the write against the latest state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The key has no value.
    Absent(Vec<u8>),
    /// The key has some value.
    Present(Vec<u8>),
    /// The key has exactly this value (`None`: absent).
    Equals(Vec<u8>, Option<Vec<u8>>),
}

impl Condition {
    /// The key the condition is about.
    pub fn key(&self) -> &[u8] {
        match self {
            Condition::Absent(k) | Condition::Present(k) | Condition::Equals(k, _) => k,
        }
    }

    /// Whether the condition holds for `current`, the key's present value.
    pub fn holds(&self, current: Option<&[u8]>) -> bool {
        match self {
            Condition::Absent(_) => current.is_none(),
            Condition::Present(_) => current.is_some(),
            Condition::Equals(_, want) => current == want.as_deref(),
        }
    }
}

/// How large one atomic [`WriteBatch`] may be on an engine. Callers that split non-atomic work
/// into batches (bulk loads) size them with it; a larger batch fails with
/// [`crate::Error::TooLarge`] and is never split by the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// Most ops (distinct keys) in one batch; the conditions count separately against it.
    pub max_ops: usize,
    /// Most bytes in one batch, counted as [`WriteBatch::payload_bytes`] plus
    /// `per_op_bytes` for every op.
    pub max_bytes: usize,
    /// Overhead counted per op (and per condition) against `max_bytes`.
    pub per_op_bytes: usize,
}

impl BatchLimits {
    /// No limit (local engines).
    pub const UNLIMITED: BatchLimits = BatchLimits {
        max_ops: usize::MAX,
        max_bytes: usize::MAX,
        per_op_bytes: 0,
    };

    /// True when a batch of `ops` ops carrying `payload_bytes` bytes of keys and values fits.
    pub fn admits(&self, ops: usize, payload_bytes: usize) -> bool {
        ops <= self.max_ops
            && payload_bytes.saturating_add(ops.saturating_mul(self.per_op_bytes)) <= self.max_bytes
    }
}

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits::UNLIMITED
    }
}

/// A consistent, read-only view of the engine at one moment.
pub trait Snapshot: Send + Sync {
    /// The value of `key` in this snapshot.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// The pairs of `range`, in `direction` order.
    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter>;

    /// A [`Cursor`] over `range` in `direction`, positioned at its first pair.
    ///
    /// The default implementation is built on [`Snapshot::range`] (a seek opens a new range);
    /// engines with seekable iterators override it.
    fn cursor(&self, range: KeyRange, direction: Direction) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(RangeCursor::new(self, range, direction)?))
    }
}

/// A seekable position in a range of a snapshot, moving in one direction.
///
/// A new cursor stands at the first pair of its range in its direction (forward: the
/// smallest key; reverse: the largest). [`Cursor::key`] and [`Cursor::value`] borrow from
/// the cursor (no copy per pair) and stay valid until it moves. After an error the cursor is
/// invalid; a later `seek` or `rewind` may position it again.
pub trait Cursor: Send {
    /// True when the cursor stands at a pair.
    fn valid(&self) -> bool;
    /// The key of the current pair (empty when invalid).
    fn key(&self) -> &[u8];
    /// The value of the current pair (empty when invalid).
    fn value(&self) -> &[u8];
    /// Moves to the next pair in the cursor's direction.
    fn next(&mut self) -> Result<()>;
    /// Repositions without rebuilding: forward, at the first pair with a key `>= key`;
    /// reverse, at the last pair with a key `<= key` — never outside the cursor's range.
    fn seek(&mut self, key: &[u8]) -> Result<()>;
    /// Repositions at the first pair of the range (in the cursor's direction).
    fn rewind(&mut self) -> Result<()>;
    /// The direction the cursor moves in.
    fn direction(&self) -> Direction;

    /// The current pair, borrowed (`None` when invalid): `valid`, `key` and `value` in one
    /// call. A cursor over layered iterators overrides it to walk down its layers once.
    #[inline]
    fn entry(&self) -> Option<(&[u8], &[u8])> {
        self.valid().then(|| (self.key(), self.value()))
    }

    /// Moves to the next pair and returns it: [`Cursor::next`], then [`Cursor::entry`], in one
    /// call (a reader's per-pair step: one virtual call instead of three or four).
    #[inline]
    fn next_entry(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        self.next()?;
        Ok(self.entry())
    }

    /// The current pair, copied (`None` when invalid).
    fn pair(&self) -> Option<KvPair> {
        self.entry().map(|(k, v)| (k.to_vec(), v.to_vec()))
    }
}

impl<C: Cursor + ?Sized> Cursor for Box<C> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn next(&mut self) -> Result<()> {
        (**self).next()
    }
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        (**self).seek(key)
    }
    fn rewind(&mut self) -> Result<()> {
        (**self).rewind()
    }
    fn direction(&self) -> Direction {
        (**self).direction()
    }
    fn entry(&self) -> Option<(&[u8], &[u8])> {
        (**self).entry()
    }
    fn next_entry(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        (**self).next_entry()
    }
}

/// The pairs of a cursor as an owning iterator (copies each pair: the edge where an API
/// needs ownership).
pub struct CursorPairs<C> {
    cursor: C,
    started: bool,
    failed: bool,
}

impl<C: Cursor> CursorPairs<C> {
    /// Yields the pairs from the cursor's current position on.
    pub fn new(cursor: C) -> CursorPairs<C> {
        CursorPairs {
            cursor,
            started: false,
            failed: false,
        }
    }
}

impl<C: Cursor> Iterator for CursorPairs<C> {
    type Item = Result<KvPair>;
    fn next(&mut self) -> Option<Result<KvPair>> {
        if self.failed {
            return None;
        }
        if self.started {
            if let Err(e) = self.cursor.next() {
                self.failed = true;
                return Some(Err(e));
            }
        }
        self.started = true;
        self.cursor.pair().map(Ok)
    }
}

/// The part of `range` that a seek to `key` leaves, in `direction`.
pub fn narrow(range: &KeyRange, key: &[u8], direction: Direction) -> KeyRange {
    let mut r = range.clone();
    match direction {
        Direction::Forward => {
            let beyond = match &range.start {
                Bound::Included(s) | Bound::Excluded(s) => key > s.as_slice(),
                Bound::Unbounded => true,
            };
            if beyond {
                r.start = Bound::Included(key.to_vec());
            }
        }
        Direction::Reverse => {
            let beyond = match &range.end {
                Bound::Included(e) | Bound::Excluded(e) => key < e.as_slice(),
                Bound::Unbounded => true,
            };
            if beyond {
                r.end = Bound::Included(key.to_vec());
            }
        }
    }
    r
}

/// What a [`RangeCursor`] reads: opens an iterator over a range (every seek and rewind opens
/// a new one). Every snapshot handle (`&S`, `Arc<S>`, `Arc<dyn Snapshot>`) is one; an engine
/// whose reads need state between opens (etcd: the revision of the first answer) brings its own.
pub trait RangeSource: Send {
    /// The pairs of `range` in `direction` order.
    fn open_range(&mut self, range: KeyRange, direction: Direction) -> Result<KvIter>;
}

impl<H, S> RangeSource for H
where
    H: Deref<Target = S> + Send,
    S: Snapshot + ?Sized,
{
    fn open_range(&mut self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        self.range(range, direction)
    }
}

/// The default [`Cursor`]: a range iterator of a [`RangeSource`] (a snapshot), reopened on
/// each seek.
pub struct RangeCursor<H> {
    snap: H,
    range: KeyRange,
    direction: Direction,
    iter: Option<KvIter>,
    cur: Option<KvPair>,
}

impl<H: RangeSource> RangeCursor<H> {
    /// A cursor over `range` of `snap` (a snapshot reference or `Arc`, or another
    /// [`RangeSource`]), positioned at the first pair.
    pub fn new(snap: H, range: KeyRange, direction: Direction) -> Result<RangeCursor<H>> {
        let mut c = RangeCursor {
            snap,
            range,
            direction,
            iter: None,
            cur: None,
        };
        c.rewind()?;
        Ok(c)
    }

    fn open(&mut self, range: KeyRange) -> Result<()> {
        self.cur = None;
        self.iter = None;
        let mut it = self.snap.open_range(range, self.direction)?;
        self.cur = it.next().transpose()?;
        self.iter = Some(it);
        Ok(())
    }
}

impl<H: RangeSource> Cursor for RangeCursor<H> {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |p| p.0.as_slice())
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |p| p.1.as_slice())
    }
    fn next(&mut self) -> Result<()> {
        if self.cur.is_none() {
            return Ok(());
        }
        self.cur = None;
        if let Some(it) = &mut self.iter {
            match it.next().transpose() {
                Ok(p) => self.cur = p,
                Err(e) => {
                    self.iter = None;
                    return Err(e);
                }
            }
        }
        Ok(())
    }
    fn seek(&mut self, key: &[u8]) -> Result<()> {
        let r = narrow(&self.range, key, self.direction);
        self.open(r)
    }
    fn rewind(&mut self) -> Result<()> {
        self.open(self.range.clone())
    }
    fn direction(&self) -> Direction {
        self.direction
    }
    fn pair(&self) -> Option<KvPair> {
        self.cur.clone()
    }
}

/// An ordered key-value store.
pub trait Engine: Send + Sync {
    /// The latest value of `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Hands the latest value of `key` to `f`, borrowed where the engine can (no copy), and
    /// says whether there was one (`f` is not called when there is none). `f` may call the
    /// engine again. The default copies the value through [`Engine::get`].
    fn get_borrowed(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(match self.get(key)? {
            Some(v) => {
                f(&v);
                true
            }
            None => false,
        })
    }

    /// Applies a batch atomically (see [`WriteBatch`]). A failed condition returns
    /// [`crate::Error::ConditionFailed`] and writes nothing.
    fn write(&self, batch: WriteBatch) -> Result<()>;

    /// A consistent snapshot of the current state.
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>>;

    /// The pairs of `range` in `direction` order, over a snapshot taken now.
    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        self.snapshot()?.range(range, direction)
    }

    /// A [`Cursor`] over `range` in `direction`, over a snapshot taken now (the cursor owns
    /// what it needs). The default implementation is built on [`Engine::snapshot`] and
    /// [`Snapshot::range`].
    fn cursor(&self, range: KeyRange, direction: Direction) -> Result<Box<dyn Cursor>> {
        let snap = self.snapshot()?;
        Ok(Box::new(RangeCursor::new(snap, range, direction)?))
    }

    /// Makes everything written so far durable in the engine's long-term structures.
    fn flush(&self) -> Result<()>;

    /// Compacts storage as far as the engine can (a no-op where meaningless).
    fn compact(&self) -> Result<()>;

    /// Flushes what must be flushed and stops background work. Later calls fail with
    /// [`crate::Error::Closed`].
    fn close(&self) -> Result<()>;

    /// The size limits of one atomic batch ([`BatchLimits::UNLIMITED`] unless the engine has
    /// some, as etcd does).
    fn batch_limits(&self) -> BatchLimits {
        BatchLimits::UNLIMITED
    }
}

/// Convenience: put one key.
pub fn put(engine: &dyn Engine, key: &[u8], value: &[u8]) -> Result<()> {
    let mut b = WriteBatch::new();
    b.put(key, value);
    engine.write(b)
}
