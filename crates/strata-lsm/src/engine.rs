//! The [`Engine`] trait: what Strata needs from an ordered key-value store.
//!
//! The trait makes no local-file assumption: a later implementation may sit on a distributed
//! ordered store (etcd, TiKV, FoundationDB) without changing the layers above.

use std::ops::Bound;
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

/// One write of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Set `key` to `value`.
    Put(Vec<u8>, Vec<u8>),
    /// Remove `key` (no error when absent).
    Delete(Vec<u8>),
}

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

/// An atomic group of writes, with optional preconditions: either every op is applied (in
/// order; a later op on the same key wins) and every condition held, or nothing is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    /// The writes, in order.
    pub ops: Vec<Op>,
    /// Conditions checked before any op is applied.
    pub conditions: Vec<Condition>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Adds a put.
    pub fn put(&mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> &mut Self {
        self.ops.push(Op::Put(key.into(), value.into()));
        self
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: impl Into<Vec<u8>>) -> &mut Self {
        self.ops.push(Op::Delete(key.into()));
        self
    }

    /// Adds a precondition.
    pub fn require(&mut self, c: Condition) -> &mut Self {
        self.conditions.push(c);
        self
    }

    /// True when the batch has no op and no condition.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty() && self.conditions.is_empty()
    }

    /// Bytes of keys and values, for memory accounting.
    pub fn payload_bytes(&self) -> usize {
        self.ops
            .iter()
            .map(|op| match op {
                Op::Put(k, v) => k.len() + v.len(),
                Op::Delete(k) => k.len(),
            })
            .sum()
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
}

/// An ordered key-value store.
pub trait Engine: Send + Sync {
    /// The latest value of `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Applies a batch atomically (see [`WriteBatch`]). A failed condition returns
    /// [`crate::Error::ConditionFailed`] and writes nothing.
    fn write(&self, batch: WriteBatch) -> Result<()>;

    /// A consistent snapshot of the current state.
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>>;

    /// The pairs of `range` in `direction` order, over a snapshot taken now.
    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        self.snapshot()?.range(range, direction)
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
