//! [`WriteBatch`]: an atomic group of writes, its keys and values in one byte buffer.
//!
//! The buffer holds the ops exactly as a WAL record's payload holds them after its header
//! (see [`crate::wal`]: `0x01 key value` for a put, `0x00 key` for a delete, each byte string
//! varint-length-prefixed), and a batch of n ops costs two growing allocations (the buffer and
//! the op positions) instead of one or two per op. The buffer starts with [`HEAD_ROOM`] spare
//! bytes: the WAL writer puts the record's header, sequence number and op count there and the
//! commit byte after the ops, and writes the record straight from the buffer (no copy of the
//! ops; see [`WriteBatch::frame_wal_record`]).

use std::fmt;

use crate::coding::put_varint;
use crate::engine::Condition;
use crate::record::{self, COMMIT, HEADER};

/// Bytes kept free at the start of [`WriteBatch`]'s buffer (once it holds an op): room for a
/// WAL record's header, its synced-through watermark (8 bytes, WAL v3), the batch's sequence
/// number (8 bytes) and its op count (a varint of up to 10 bytes), filled in by
/// [`WriteBatch::frame_wal_record`].
pub(crate) const HEAD_ROOM: usize = HEADER + 8 + 8 + 10;

/// One write of a batch, owned (what [`crate::wal::decode_batch`] returns, and what
/// [`WriteBatch::push`] and [`WriteBatch::into_ops`] take and give).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Set `key` to `value`.
    Put(Vec<u8>, Vec<u8>),
    /// Remove `key` (no error when absent).
    Delete(Vec<u8>),
}

impl Op {
    /// The op's key and value (`None`: a delete), borrowed.
    pub fn as_kv(&self) -> (&[u8], Option<&[u8]>) {
        match self {
            Op::Put(k, v) => (k, Some(v)),
            Op::Delete(k) => (k, None),
        }
    }
}

/// Where one op's key and value lie in [`WriteBatch`]'s buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    key: usize,
    key_len: usize,
    /// Start of the value; [`NO_VALUE`] for a delete.
    value: usize,
    value_len: usize,
}

/// [`Span::value`] of a delete.
const NO_VALUE: usize = usize::MAX;

/// An atomic group of writes, with optional preconditions: either every op is applied (in
/// order; a later op on the same key wins) and every condition held, or nothing is written.
///
/// Build it with [`WriteBatch::put`] and [`WriteBatch::delete`]; read it back with
/// [`WriteBatch::iter`], which yields `(key, Some(value))` for a put and `(key, None)` for a
/// delete, in order.
#[derive(Clone, Default)]
pub struct WriteBatch {
    /// Empty, or [`HEAD_ROOM`] bytes (no meaning outside [`WriteBatch::frame_wal_record`])
    /// followed by the ops, encoded as in a WAL record (see the module documentation).
    bytes: Vec<u8>,
    /// Where each op's key and value are in `bytes`, in op order.
    spans: Vec<Span>,
    /// Bytes of keys and values.
    payload: usize,
    /// Conditions checked before any op is applied.
    pub conditions: Vec<Condition>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Adds a put.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.push_kv(key.as_ref(), Some(value.as_ref()));
        self
    }

    /// Adds a delete.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.push_kv(key.as_ref(), None);
        self
    }

    /// Adds an owned op (a put or a delete).
    pub fn push(&mut self, op: &Op) -> &mut Self {
        let (k, v) = op.as_kv();
        self.push_kv(k, v);
        self
    }

    /// Appends one op: `value` `None` is a delete. The first op of a batch takes this thread's
    /// spare buffers (see [`recycle`]) instead of growing new ones from nothing.
    #[inline]
    fn push_kv(&mut self, key: &[u8], value: Option<&[u8]>) {
        if self.spans.capacity() == 0 {
            self.take_spare();
        }
        let b = &mut self.bytes;
        let value_len = value.map_or(0, <[u8]>::len);
        b.reserve(key.len() + value_len + 11);
        let (key_at, value_at) = crate::wal::put_op(b, key, value);
        self.payload += key.len() + value_len;
        self.spans.push(Span {
            key: key_at,
            key_len: key.len(),
            value: value_at.unwrap_or(NO_VALUE),
            value_len,
        });
    }

    /// Takes this thread's spare buffers, if any (only when this batch has none), and makes
    /// sure the buffer starts with its [`HEAD_ROOM`].
    #[cold]
    fn take_spare(&mut self) {
        if let Ok((bytes, spans)) = SPARE.try_with(|s| s.take()) {
            if self.bytes.is_empty() {
                self.bytes = bytes;
            }
            self.spans = spans;
        }
        if self.bytes.is_empty() {
            self.bytes.resize(HEAD_ROOM, 0);
        }
    }

    /// Reserves room for `ops` more ops carrying `bytes` more bytes of keys and values.
    pub fn reserve(&mut self, ops: usize, bytes: usize) {
        if self.spans.capacity() == 0 {
            self.take_spare();
        }
        self.spans.reserve(ops);
        self.bytes
            .reserve(bytes.saturating_add(ops.saturating_mul(3)));
    }

    /// Adds a precondition.
    pub fn require(&mut self, c: Condition) -> &mut Self {
        self.conditions.push(c);
        self
    }

    /// True when the batch has no op and no condition.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty() && self.conditions.is_empty()
    }

    /// Number of ops (puts and deletes; conditions are not counted).
    pub fn op_count(&self) -> usize {
        self.spans.len()
    }

    /// Bytes of keys and values, for memory accounting.
    pub fn payload_bytes(&self) -> usize {
        self.payload
    }

    /// Op `i` as `(key, value)` (`None` value: a delete).
    pub fn get(&self, i: usize) -> Option<(&[u8], Option<&[u8]>)> {
        self.spans.get(i).map(|s| self.kv(s))
    }

    /// The ops in order, as `(key, value)` (`None` value: a delete).
    pub fn iter(&self) -> Ops<'_> {
        Ops {
            batch: self,
            spans: self.spans.iter(),
        }
    }

    /// The ops as owned [`Op`]s, in order.
    pub fn into_ops(self) -> Vec<Op> {
        self.iter()
            .map(|(k, v)| match v {
                Some(v) => Op::Put(k.to_vec(), v.to_vec()),
                None => Op::Delete(k.to_vec()),
            })
            .collect()
    }

    /// The ops encoded as a WAL record's payload holds them after its sequence number and op
    /// count (see [`crate::wal::encode_batch`]).
    pub(crate) fn encoded_ops(&self) -> &[u8] {
        self.bytes.get(HEAD_ROOM..).unwrap_or_default()
    }

    /// Frames the ops as the WAL (v3) record of batch `seq` in this batch's own buffer and
    /// returns the record: its header, the watermark `synced`, `seq` and the op count are
    /// written into the head room right before the ops and the commit byte after them, so that
    /// the record is written without copying the ops. The same bytes as framing `synced` (LE)
    /// followed by [`crate::wal::encode_batch`]'s payload with [`record::Framing::V2`]. Call
    /// [`WriteBatch::unframe_wal_record`] after writing it.
    #[cfg(test)]
    pub(crate) fn frame_wal_record(&mut self, seq: u64, synced: u64) -> &[u8] {
        self.frame_wal_record_within(seq, synced, usize::MAX)
    }

    /// [`WriteBatch::frame_wal_record`] for a writer with `room` bytes left in its page: a
    /// record longer than that is cut into WAL v4 fragments, which carry their own checksums,
    /// so its header's checksums are not computed (the header is left zeros and never written).
    pub(crate) fn frame_wal_record_within(&mut self, seq: u64, synced: u64, room: usize) -> &[u8] {
        if self.bytes.is_empty() {
            self.bytes.resize(HEAD_ROOM, 0);
        }
        // The watermark, `seq` and the op count are encoded after the ops (with the WAL's own
        // varint encoder), then moved into the head room right before the ops.
        let tail = self.bytes.len();
        self.bytes.extend_from_slice(&synced.to_le_bytes());
        self.bytes.extend_from_slice(&seq.to_le_bytes());
        put_varint(&mut self.bytes, self.spans.len() as u64);
        let len = self.bytes.len() - tail;
        let payload = HEAD_ROOM - len;
        let start = payload - HEADER;
        self.bytes.copy_within(tail.., payload);
        self.bytes.truncate(tail);
        if HEADER + (self.bytes.len() - payload) < room {
            let h = record::header_for(&self.bytes[payload..]);
            self.bytes[start..payload].copy_from_slice(&h);
        } else {
            self.bytes[start..payload].fill(0);
        }
        self.bytes.push(COMMIT);
        &self.bytes[start..]
    }

    /// Removes the commit byte [`WriteBatch::frame_wal_record`] appended (the head room keeps
    /// the record's header: it means nothing outside a framing).
    pub(crate) fn unframe_wal_record(&mut self) {
        debug_assert_eq!(self.bytes.last(), Some(&COMMIT));
        self.bytes.pop();
    }

    #[inline]
    fn kv(&self, s: &Span) -> (&[u8], Option<&[u8]>) {
        let k = &self.bytes[s.key..s.key + s.key_len];
        if s.value == NO_VALUE {
            (k, None)
        } else {
            (k, Some(&self.bytes[s.value..s.value + s.value_len]))
        }
    }
}

/// Batches are equal when they hold the same ops and conditions (the head room is not
/// compared: it is scratch space for the WAL writer).
impl PartialEq for WriteBatch {
    fn eq(&self, other: &WriteBatch) -> bool {
        self.encoded_ops() == other.encoded_ops()
            && self.spans.len() == other.spans.len()
            && self.iter().eq(other.iter())
            && self.payload == other.payload
            && self.conditions == other.conditions
    }
}

impl Eq for WriteBatch {}

impl fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct OpsDebug<'a>(&'a WriteBatch);
        impl fmt::Debug for OpsDebug<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list()
                    .entries(self.0.iter().map(|(k, v)| match v {
                        Some(v) => Op::Put(k.to_vec(), v.to_vec()),
                        None => Op::Delete(k.to_vec()),
                    }))
                    .finish()
            }
        }
        f.debug_struct("WriteBatch")
            .field("ops", &OpsDebug(self))
            .field("conditions", &self.conditions)
            .finish()
    }
}

impl FromIterator<Op> for WriteBatch {
    fn from_iter<I: IntoIterator<Item = Op>>(ops: I) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.extend(ops);
        b
    }
}

impl Extend<Op> for WriteBatch {
    fn extend<I: IntoIterator<Item = Op>>(&mut self, ops: I) {
        for op in ops {
            self.push(&op);
        }
    }
}

impl<'a> IntoIterator for &'a WriteBatch {
    type Item = (&'a [u8], Option<&'a [u8]>);
    type IntoIter = Ops<'a>;
    fn into_iter(self) -> Ops<'a> {
        self.iter()
    }
}

/// The ops of a [`WriteBatch`] in order, as `(key, value)` (`None` value: a delete).
#[derive(Clone)]
pub struct Ops<'a> {
    batch: &'a WriteBatch,
    spans: std::slice::Iter<'a, Span>,
}

impl<'a> Iterator for Ops<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let s = self.spans.next()?;
        Some(self.batch.kv(s))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.spans.size_hint()
    }
}

impl DoubleEndedIterator for Ops<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let s = self.spans.next_back()?;
        Some(self.batch.kv(s))
    }
}

impl ExactSizeIterator for Ops<'_> {}

/// Most bytes a recycled buffer may hold room for (kept per thread).
const SPARE_BYTES_MAX: usize = 4 << 20;
/// Most ops a recycled position list may hold room for (kept per thread: 4,096 × 32 bytes).
const SPARE_OPS_MAX: usize = 4096;

thread_local! {
    /// The emptied buffers a written batch left behind, for the next batch built on this
    /// thread (bulk loads build batch after batch of the same size: without them each one
    /// regrows its buffers from nothing, copying them ~10 times).
    static SPARE: std::cell::Cell<(Vec<u8>, Vec<Span>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// Drops a batch that was written and keeps its buffers' allocations (if they are not too
/// large) for the next [`WriteBatch`] built on this thread. Only an allocation cache: no op
/// outlives this call.
pub(crate) fn recycle(batch: WriteBatch) {
    let WriteBatch {
        mut bytes,
        mut spans,
        ..
    } = batch;
    if spans.capacity() == 0
        || spans.capacity() > SPARE_OPS_MAX
        || bytes.capacity() > SPARE_BYTES_MAX
    {
        return;
    }
    bytes.clear();
    spans.clear();
    let _ = SPARE.try_with(|s| {
        let kept = s.take();
        s.set(if kept.1.capacity() >= spans.capacity() {
            kept
        } else {
            (bytes, spans)
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::put_varint;
    use proptest::prelude::*;

    fn op_strategy() -> impl Strategy<Value = Op> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..300);
        prop_oneof![
            (bytes(), bytes()).prop_map(|(k, v)| Op::Put(k, v)),
            bytes().prop_map(Op::Delete),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// A batch gives back exactly the ops put into it, in order, whichever way it is read,
        /// counts them and their bytes, and holds them encoded as the WAL encodes a list of ops.
        #[test]
        fn batch_is_its_op_list(ops in proptest::collection::vec(op_strategy(), 0..60), recycled in any::<bool>()) {
            if recycled {
                // A spare buffer left by an earlier batch must not leak its ops.
                let mut a = WriteBatch::new();
                a.put(b"stale-key", b"stale-value").delete(b"gone");
                recycle(a);
            }
            let mut b = WriteBatch::new();
            for op in &ops {
                match op {
                    Op::Put(k, v) => b.put(k, v),
                    Op::Delete(k) => b.delete(k),
                };
            }
            prop_assert_eq!(b.op_count(), ops.len());
            prop_assert_eq!(b.is_empty(), ops.is_empty());
            let model: Vec<(&[u8], Option<&[u8]>)> = ops.iter().map(Op::as_kv).collect();
            prop_assert_eq!(b.iter().collect::<Vec<_>>(), model.clone());
            prop_assert_eq!(b.iter().len(), ops.len());
            let back: Vec<_> = b.iter().rev().collect();
            prop_assert_eq!(back, model.iter().rev().copied().collect::<Vec<_>>());
            for (i, m) in model.iter().enumerate() {
                prop_assert_eq!(b.get(i), Some(*m));
            }
            prop_assert_eq!(b.get(ops.len()), None);
            let bytes: usize = model.iter().map(|(k, v)| k.len() + v.map_or(0, <[u8]>::len)).sum();
            prop_assert_eq!(b.payload_bytes(), bytes);
            // The buffer is the WAL encoding of the op list after its 8-byte seq and count.
            let mut wal = Vec::new();
            crate::wal::encode_batch(&mut wal, 7, &ops);
            let mut head = 7u64.to_le_bytes().to_vec();
            put_varint(&mut head, ops.len() as u64);
            prop_assert_eq!(&wal[..head.len()], &head[..]);
            prop_assert_eq!(&wal[head.len()..], b.encoded_ops());
            let same: WriteBatch = ops.iter().cloned().collect();
            prop_assert_eq!(&same, &b);
            prop_assert_eq!(b.clone().into_ops(), ops);
        }
    }

    /// A batch built after a written one reuses its buffers but holds only its own ops.
    #[test]
    fn recycled_buffers_start_empty() {
        let mut a = WriteBatch::new();
        for i in 0..100u8 {
            a.put([i], [i; 3]);
        }
        a.delete([7]);
        let (cap, ops_cap) = (a.bytes.capacity(), a.spans.capacity());
        recycle(a);
        let mut b = WriteBatch::new();
        b.delete([1]);
        assert_eq!(b.clone().into_ops(), vec![Op::Delete(vec![1])]);
        assert_eq!(b.bytes.capacity(), cap, "the spare buffer was not reused");
        assert_eq!(b.spans.capacity(), ops_cap);
        // Only one spare: the next new batch grows its own.
        let mut c = WriteBatch::new();
        c.put([2], []);
        assert_eq!(c.clone().into_ops(), vec![Op::Put(vec![2], vec![])]);
        assert!(c.spans.capacity() < ops_cap);
        // Buffers too large to keep are freed.
        let mut big = WriteBatch::new();
        big.reserve(SPARE_OPS_MAX + 1, 0);
        big.delete([3]);
        recycle(big);
        let mut d = WriteBatch::new();
        d.delete([4]);
        assert!(d.spans.capacity() <= SPARE_OPS_MAX);
        assert_eq!(d.into_ops(), vec![Op::Delete(vec![4])]);
    }

    #[test]
    fn debug_lists_the_ops() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v").delete(b"d");
        let s = format!("{b:?}");
        assert!(
            s.contains("Put([107], [118])") && s.contains("Delete([100])"),
            "{s}"
        );
    }
}
