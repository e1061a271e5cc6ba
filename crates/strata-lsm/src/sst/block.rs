//! Data and index blocks: prefix-compressed entries with restart points.
//!
//! Block = `entry* | restart u32 LE * n | n u32 LE`. Entry = `shared varint | unshared varint
//! | vtag varint | key[shared..] | value`, where `vtag` is 0 for a tombstone and `len + 1`
//! for a value of `len` bytes. Every `RESTART_INTERVAL`-th entry is a restart point: it
//! stores its whole key (`shared = 0`) and its offset is listed in the restart array, so a
//! reader binary-searches restart points, then scans at most one interval.

use std::sync::Arc;

use super::keycmp;
use crate::coding::{get_varint, put_varint, u32_at};
use crate::error::FormatError;
use crate::fs::ReadableFile;
use crate::hint::prefetch;

/// Entries between restart points (at most).
pub const RESTART_INTERVAL: usize = 16;
/// Bytes of entries after which the next entry is a restart point even before
/// [`RESTART_INTERVAL`] entries: with large values a point lookup then scans a few hundred
/// bytes after its binary search instead of up to 16 entries (readers accept any spacing).
pub const RESTART_BYTES: usize = 256;

/// Builds one block.
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    last_key: Vec<u8>,
    count: usize,
    interval: usize,
    /// Entries since the last restart point.
    since: usize,
    /// Byte spacing that forces a restart point (`usize::MAX`: by count only).
    spacing: usize,
}

impl Default for BlockBuilder {
    fn default() -> BlockBuilder {
        BlockBuilder {
            spacing: RESTART_BYTES,
            ..BlockBuilder::with_restart_interval(RESTART_INTERVAL)
        }
    }
}

impl BlockBuilder {
    /// An empty builder.
    pub fn new() -> BlockBuilder {
        BlockBuilder::default()
    }

    /// An empty builder with a restart point every `interval` entries (readers accept any
    /// interval; the writer uses [`RESTART_INTERVAL`]).
    pub fn with_restart_interval(interval: usize) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            last_key: Vec::new(),
            count: 0,
            interval: interval.max(1),
            since: 0,
            spacing: usize::MAX,
        }
    }

    /// An empty builder with a restart point every `interval` entries or after `spacing`
    /// bytes of entries (`usize::MAX`: by count only).
    #[cfg(test)]
    pub(crate) fn with_spacing(interval: usize, spacing: usize) -> BlockBuilder {
        BlockBuilder {
            spacing,
            ..BlockBuilder::with_restart_interval(interval)
        }
    }

    /// Adds an entry; keys must come in strictly increasing order.
    pub fn add(&mut self, key: &[u8], value: Option<&[u8]>) {
        let last_restart = self.restarts.last().map_or(0, |&r| r as usize);
        let restart = self.count == 0
            || self.since >= self.interval
            || self.buf.len() - last_restart >= self.spacing;
        let shared = if restart {
            self.restarts.push(self.buf.len() as u32);
            self.since = 0;
            0
        } else {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        };
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (key.len() - shared) as u64);
        put_varint(&mut self.buf, value.map_or(0, |v| v.len() as u64 + 1));
        self.buf.extend_from_slice(&key[shared..]);
        if let Some(v) = value {
            self.buf.extend_from_slice(v);
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.count += 1;
        self.since += 1;
    }

    /// Bytes the block will take.
    pub fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// True when no entry was added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The last key added.
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Finishes the block and resets the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts.clear();
        self.last_key.clear();
        self.count = 0;
        self.since = 0;
        out
    }
}

/// A decoded entry: where its value lies in the block (`None`: tombstone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueRef {
    /// Offset of the value in the block.
    pub off: u32,
    /// Length of the value.
    pub len: u32,
    /// True for a tombstone.
    pub tombstone: bool,
}

/// What keeps a block's bytes alive and unchanged (held, never read: the block reads its
/// bytes through `Block::ptr`).
#[derive(Clone)]
#[allow(dead_code)]
enum Owner {
    /// A buffer of the block's own (shared with the block cache).
    Buf(Arc<Vec<u8>>),
    /// The memory map of the block's file ([`crate::fs::ReadableFile::mapped_bytes`]): the
    /// block is read where it lies, not copied.
    Map(Arc<dyn ReadableFile>),
}

/// A parsed block: its bytes are shared with the block cache, or lie in the memory map of
/// its file ([`Block::in_map`]).
#[derive(Clone)]
pub struct Block {
    /// Keeps `ptr..ptr + len` alive and unchanged.
    owner: Owner,
    /// The block's bytes: `owner`'s buffer, or a range of `owner`'s map.
    ptr: *const u8,
    len: usize,
    restarts: usize,
    num_restarts: usize,
}

// SAFETY: a `Block` only reads `ptr..ptr + len`, bytes that `owner` keeps alive and that no
// one writes while it lives (see `Block::data`). Both kinds of owner are `Send + Sync`
// (`Arc<Vec<u8>>`; `Arc<dyn ReadableFile>`, whose trait requires it), and shared immutable
// bytes may be read from any thread: the raw pointer is what keeps the compiler from seeing it.
unsafe impl Send for Block {}
// SAFETY: as for `Send`: nothing in a `Block` is ever written through `&Block`.
unsafe impl Sync for Block {}

/// Error of block decoding: offset inside the block and reason.
pub type BlockError = FormatError;

/// The restart array of a block's bytes: `(offset where the entries end and the restart
/// offsets begin, number of restart points)`, checked to fit in the block; a block with
/// entries and no restart point is an error. Shared by [`Block::new`] and the in-place point
/// read (`point::interval_for`), which must accept and reject the same blocks.
pub(crate) fn restart_array(data: &[u8]) -> Result<(usize, usize), BlockError> {
    let len = data.len();
    let n = u32_at(data, len.wrapping_sub(4))
        .ok_or_else(|| FormatError::new(0, "block shorter than its restart count"))?
        as usize;
    let restarts = n
        .checked_mul(4)
        .and_then(|b| len.checked_sub(4 + b))
        .ok_or_else(|| {
            FormatError::new(
                len.saturating_sub(4),
                format!("restart count {n} does not fit in the block"),
            )
        })?;
    if n == 0 && restarts != 0 {
        return Err(FormatError::new(len - 4, "entries without a restart point"));
    }
    Ok((restarts, n))
}

/// The three lengths at the start of the entry at `pos` of `d` (a block's entries, up to its
/// restart array): `(shared, unshared, vtag, offset after them)`.
#[inline]
pub(crate) fn entry_header(d: &[u8], pos: usize) -> Result<(usize, usize, u64, usize), BlockError> {
    // Fast path: three one-byte varints (short keys, values under 127 bytes).
    if let Some(h) = d.get(pos..pos.wrapping_add(3)) {
        if (h[0] | h[1] | h[2]) < 0x80 {
            return Ok((h[0] as usize, h[1] as usize, u64::from(h[2]), pos + 3));
        }
    }
    entry_header_slow(d, pos)
}

#[cold]
fn entry_header_slow(d: &[u8], pos: usize) -> Result<(usize, usize, u64, usize), BlockError> {
    let mut p = pos;
    let bad = |what: &str| FormatError::new(pos, format!("bad entry: {what}"));
    let shared = get_varint(d, &mut p).ok_or_else(|| bad("shared length"))?;
    let unshared = get_varint(d, &mut p).ok_or_else(|| bad("key length"))?;
    let vtag = get_varint(d, &mut p).ok_or_else(|| bad("value length"))?;
    let shared = usize::try_from(shared).map_err(|_| bad("shared length"))?;
    let unshared = usize::try_from(unshared).map_err(|_| bad("key length"))?;
    Ok((shared, unshared, vtag, p))
}

#[cold]
fn bad_entry(pos: usize, what: &str) -> BlockError {
    FormatError::new(pos, format!("bad entry: {what}"))
}

/// The entry of `d` (a block's entries, or one restart interval of them read in place) whose
/// key equals `target`, scanning from `pos`: the offset of a restart point whose key is at
/// most `target` (or the first one). Keys are not rebuilt: the scan keeps the length of the
/// prefix that the previous key shares with `target` and compares only the bytes each entry
/// stores. The value's offset is in `d`.
pub(crate) fn scan_entries(
    d: &[u8],
    mut pos: usize,
    target: &[u8],
) -> Result<Option<ValueRef>, BlockError> {
    // `matched` = length of the common prefix of the previous key and `target`; the
    // previous key is below `target` (before the first entry: the empty key).
    let (mut matched, mut prev_len) = (0usize, 0usize);
    while pos < d.len() {
        let (shared, unshared, vtag, p) = entry_header(d, pos)?;
        if shared > prev_len {
            return Err(bad_entry(pos, "shared prefix longer than the previous key"));
        }
        let kend = p
            .checked_add(unshared)
            .filter(|&e| e <= d.len())
            .ok_or_else(|| bad_entry(pos, "key runs past the block"))?;
        let vlen = vtag.saturating_sub(1) as usize;
        let vend = kend
            .checked_add(vlen)
            .filter(|&e| e <= d.len())
            .ok_or_else(|| bad_entry(pos, "value runs past the block"))?;
        if shared <= matched {
            // The key's first `shared` bytes are the previous key's, which agree with
            // `target`: compare the stored rest. (A restart entry stores its whole key.)
            let rest = &target[shared..];
            let stored = &d[p..kend];
            let k = rest.iter().zip(stored).take_while(|(a, b)| a == b).count();
            if k == rest.len() {
                // `target` is this key, or a proper prefix of it (then it is above).
                return Ok((k == stored.len()).then_some(ValueRef {
                    off: kend as u32,
                    len: vlen as u32,
                    tombstone: vtag == 0,
                }));
            }
            if k < stored.len() && stored[k] > rest[k] {
                return Ok(None);
            }
            matched = shared + k;
        }
        // (shared > matched: this key agrees with the previous one past the byte where
        // that one fell below `target`, so it is below too.)
        prev_len = shared + unshared;
        pos = vend;
    }
    Ok(None)
}

impl Block {
    /// Parses the restart array of a block.
    pub fn new(data: Arc<Vec<u8>>) -> Result<Block, BlockError> {
        let (restarts, n) = restart_array(&data)?;
        Ok(Block {
            ptr: data.as_ptr(),
            len: data.len(),
            owner: Owner::Buf(data),
            restarts,
            num_restarts: n,
        })
    }

    /// The block at `off..off + len` of a memory-mapped file, read where it lies (no copy).
    /// The caller has checked the bytes (their CRC); an error when `file` is not a map or the
    /// range lies outside it, or when the restart array does not fit.
    pub fn in_map(file: Arc<dyn ReadableFile>, off: u64, len: u32) -> Result<Block, BlockError> {
        let bytes = file
            .mapped_bytes()
            .and_then(|all| {
                let start = usize::try_from(off).ok()?;
                all.get(start..start.checked_add(len as usize)?)
            })
            .ok_or_else(|| FormatError::new(0, "block outside the mapped file"))?;
        let (restarts, n) = restart_array(bytes)?;
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        Ok(Block {
            owner: Owner::Map(file),
            ptr,
            len,
            restarts,
            num_restarts: n,
        })
    }

    /// True when the block is read in its file's memory map ([`Block::in_map`]).
    pub fn is_mapped(&self) -> bool {
        matches!(self.owner, Owner::Map(_))
    }

    /// The raw bytes.
    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` was a valid `&[u8]` when the block was made: the heap
        // buffer of `Owner::Buf`'s vector (never mutated nor reallocated while shared: this
        // block holds a clone of the `Arc`, so no `Arc::get_mut` can succeed, and no one takes
        // `&mut` to it), or a range of `Owner::Map`'s map (`mapped_bytes`: the mapping lives
        // until the last `Arc` to the file is dropped, and the engine maps only finished files
        // that are never written again — the `ReadableFile::map` contract). `owner` is held
        // for as long as `self`, and the returned slice borrows `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Offset where entries end.
    pub fn entries_end(&self) -> usize {
        self.restarts
    }

    /// A block whose restart count is already known (from its [`super::point::PointIndex`],
    /// built from these bytes): the layout is checked against the length only, so the block's
    /// last bytes are not read.
    pub fn with_restart_count(data: Arc<Vec<u8>>, n: usize) -> Result<Block, BlockError> {
        let restarts = n
            .checked_mul(4)
            .and_then(|b| data.len().checked_sub(4 + b))
            .ok_or_else(|| FormatError::new(0, "restart count does not fit in the block"))?;
        Ok(Block {
            ptr: data.as_ptr(),
            len: data.len(),
            owner: Owner::Buf(data),
            restarts,
            num_restarts: n,
        })
    }

    /// Number of restart points.
    pub fn restart_count(&self) -> usize {
        self.num_restarts
    }

    /// Offset of restart point `i`.
    pub(crate) fn restart(&self, i: usize) -> Result<usize, BlockError> {
        let r = u32_at(self.data(), self.restarts + 4 * i)
            .ok_or_else(|| FormatError::new(self.restarts, "bad restart"))?
            as usize;
        if r >= self.restarts {
            return Err(FormatError::new(
                self.restarts + 4 * i,
                format!("restart offset {r} is past the entries"),
            ));
        }
        Ok(r)
    }

    /// The three lengths at the start of the entry at `pos` (`shared`, `unshared`, `vtag`) and
    /// the offset after them.
    #[inline]
    fn header(&self, pos: usize) -> Result<(usize, usize, u64, usize), BlockError> {
        entry_header(&self.data()[..self.restarts], pos)
    }

    /// Decodes the entry at `pos` given the previous key in `key` (replaced by this entry's
    /// key); returns the value and the offset of the next entry.
    ///
    /// Always inlined: it is the whole per-entry work of a block iterator's step, and as a
    /// call its prologue, epilogue and returned `Result` cost about a quarter of it.
    #[inline(always)]
    pub fn decode_at(
        &self,
        pos: usize,
        key: &mut Vec<u8>,
    ) -> Result<(ValueRef, usize), BlockError> {
        let (shared, unshared, vtag, p) = self.header(pos)?;
        let d = &self.data()[..self.restarts];
        if shared > key.len() {
            return Err(bad_entry(pos, "shared prefix longer than the previous key"));
        }
        let kend = p
            .checked_add(unshared)
            .filter(|&e| e <= d.len())
            .ok_or_else(|| bad_entry(pos, "key runs past the block"))?;
        key.truncate(shared);
        key.extend_from_slice(&d[p..kend]);
        let (vlen, tombstone) = if vtag == 0 {
            (0, true)
        } else {
            ((vtag - 1) as usize, false)
        };
        let vend = kend
            .checked_add(vlen)
            .filter(|&e| e <= d.len())
            .ok_or_else(|| bad_entry(pos, "value runs past the block"))?;
        Ok((
            ValueRef {
                off: kend as u32,
                len: vlen as u32,
                tombstone,
            },
            vend,
        ))
    }

    /// The whole key stored at restart point `i` (restart entries share no prefix), read in
    /// place.
    #[inline]
    pub(crate) fn restart_key(&self, i: usize) -> Result<&[u8], BlockError> {
        let pos = self.restart(i)?;
        let (shared, unshared, _, p) = self.header(pos)?;
        if shared != 0 {
            return Err(bad_entry(pos, "restart entry shares a prefix"));
        }
        self.data()[..self.restarts]
            .get(p..p.saturating_add(unshared))
            .ok_or_else(|| bad_entry(pos, "key runs past the block"))
    }

    /// Asks the CPU to load the cache lines of the restart keys a binary search may probe
    /// (every restart point but the first), all at once. A seek into a block that is in
    /// memory but not in the CPU's caches (a range query's first block) otherwise waits for
    /// one memory load per probe, each depending on the one before; hinted, the loads
    /// overlap. Reads only the restart array (which the search reads anyway); offsets past
    /// the entries are skipped (the search reports them).
    #[inline]
    fn prefetch_restart_keys(&self) {
        let base = self.data().as_ptr();
        for i in 1..self.num_restarts {
            match u32_at(self.data(), self.restarts + 4 * i) {
                Some(r) if (r as usize) < self.restarts => prefetch(base.wrapping_add(r as usize)),
                _ => return,
            }
        }
    }

    /// Index of the last restart point whose key is `< target` (0 when there is none).
    fn restart_index_before(&self, target: &[u8]) -> Result<usize, BlockError> {
        let (mut lo, mut hi) = (0usize, self.num_restarts);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if keycmp::lt(self.restart_key(mid)?, target) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Offset of the last restart point whose key is `< target` (0 when there is none): a
    /// forward scan from there reaches the first key `>= target` within one interval.
    pub fn restart_before(&self, target: &[u8]) -> Result<usize, BlockError> {
        if self.num_restarts == 0 {
            return Ok(0);
        }
        self.restart(self.restart_index_before(target)?)
    }

    /// Offset of the first entry whose key is `>= target` (or `entries_end`), with that key.
    pub fn seek(
        &self,
        target: &[u8],
        key: &mut Vec<u8>,
    ) -> Result<Option<(usize, ValueRef, usize)>, BlockError> {
        if self.num_restarts == 0 {
            return Ok(None);
        }
        let mut pos = self.restart_before(target)?;
        key.clear();
        while pos < self.restarts {
            let (v, next) = self.decode_at(pos, key)?;
            if key.as_slice() >= target {
                return Ok(Some((pos, v, next)));
            }
            pos = next;
        }
        Ok(None)
    }

    /// The entry whose key equals `target`, if any (a point lookup). Keys are not rebuilt:
    /// the scan after the restart search keeps the length of the prefix that the previous key
    /// shares with `target` and compares only the bytes each entry stores.
    pub fn get(&self, target: &[u8]) -> Result<Option<ValueRef>, BlockError> {
        if self.num_restarts == 0 {
            return Ok(None);
        }
        let pos = self.restart_before(target)?;
        self.scan_for(pos, target)
    }

    /// The entry whose key equals `target`, scanning from `pos`: the offset of a restart point
    /// whose key is at most `target` (or the first one).
    pub(crate) fn scan_for(
        &self,
        pos: usize,
        target: &[u8],
    ) -> Result<Option<ValueRef>, BlockError> {
        scan_entries(&self.data()[..self.restarts], pos, target)
    }

    /// Every entry of the block, in order (for reverse iteration and verification).
    pub fn entries(&self) -> Result<Vec<(Vec<u8>, ValueRef)>, BlockError> {
        let mut out = Vec::new();
        let mut key = Vec::new();
        let mut pos = 0;
        while pos < self.restarts {
            let (v, next) = self.decode_at(pos, &mut key)?;
            if out
                .last()
                .is_some_and(|(l, _): &(Vec<u8>, ValueRef)| l.as_slice() >= key.as_slice())
            {
                return Err(FormatError::new(pos, "keys out of order"));
            }
            out.push((key.clone(), v));
            pos = next;
        }
        Ok(out)
    }

    /// The value bytes of an entry.
    pub fn value(&self, v: ValueRef) -> Option<Vec<u8>> {
        self.value_slice(v).map(<[u8]>::to_vec)
    }

    /// The value bytes of an entry, borrowed from the block (`None`: tombstone).
    pub fn value_slice(&self, v: ValueRef) -> Option<&[u8]> {
        if v.tombstone {
            None
        } else {
            self.data()
                .get(v.off as usize..v.off as usize + v.len as usize)
        }
    }
}

/// First capacity of a [`BlockIter`]'s key buffer (grown when a longer key comes).
const KEY_BUF: usize = 64;

/// A seekable iterator over one block. The key is rebuilt in a buffer (keys are
/// prefix-compressed); the value is a slice of the block.
pub struct BlockIter {
    block: Block,
    /// Offset of the current entry (`entries_end` when invalid).
    cur: usize,
    /// Offset of the entry after the current one.
    next: usize,
    key: Vec<u8>,
    val: ValueRef,
}

impl BlockIter {
    /// An unpositioned iterator over `block`.
    pub fn new(block: Block) -> BlockIter {
        let end = block.restarts;
        BlockIter {
            block,
            cur: end,
            next: end,
            key: Vec::new(),
            val: ValueRef {
                off: 0,
                len: 0,
                tombstone: true,
            },
        }
    }

    /// An unpositioned iterator over `block` that rebuilds keys in `key` (a buffer kept from
    /// the previous block: no allocation while keys fit).
    pub fn with_key_buf(block: Block, mut key: Vec<u8>) -> BlockIter {
        key.clear();
        if key.capacity() == 0 {
            // A new file iterator's first block: one allocation that fits usual keys, instead
            // of growing the buffer as the first keys are rebuilt (twice per Query's seek).
            key.reserve(KEY_BUF);
        }
        BlockIter {
            key,
            ..BlockIter::new(block)
        }
    }

    /// The key buffer, for the next block's iterator ([`BlockIter::with_key_buf`]).
    pub fn into_key_buf(self) -> Vec<u8> {
        self.key
    }

    /// The block.
    pub fn block(&self) -> &Block {
        &self.block
    }

    /// True when positioned at an entry.
    pub fn valid(&self) -> bool {
        self.cur < self.block.restarts
    }

    /// The current key (empty when invalid).
    pub fn key(&self) -> &[u8] {
        if self.valid() {
            &self.key
        } else {
            &[]
        }
    }

    /// The current value (`None`: tombstone, or invalid).
    pub fn value(&self) -> Option<&[u8]> {
        if !self.valid() || self.val.tombstone {
            return None;
        }
        self.block
            .data()
            .get(self.val.off as usize..(self.val.off as usize + self.val.len as usize))
    }

    /// The current key and value (`None`: tombstone), `None` when invalid.
    #[inline]
    pub fn entry(&self) -> Option<(&[u8], Option<&[u8]>)> {
        if !self.valid() {
            return None;
        }
        let v = if self.val.tombstone {
            None
        } else {
            let off = self.val.off as usize;
            self.block.data().get(off..off + self.val.len as usize)
        };
        Some((&self.key, v))
    }

    fn invalidate(&mut self) {
        self.cur = self.block.restarts;
        self.next = self.block.restarts;
        self.key.clear();
    }

    /// Decodes the entry at `self.next`, making it current.
    fn parse_next(&mut self) -> Result<bool, BlockError> {
        if self.next >= self.block.restarts {
            self.invalidate();
            return Ok(false);
        }
        let at = self.next;
        match self.block.decode_at(at, &mut self.key) {
            Ok((v, next)) => {
                self.cur = at;
                self.next = next;
                self.val = v;
                Ok(true)
            }
            Err(e) => {
                self.invalidate();
                Err(e)
            }
        }
    }

    fn goto_restart(&mut self, i: usize) -> Result<(), BlockError> {
        self.key.clear();
        self.next = match self.block.restart(i) {
            Ok(r) => r,
            Err(e) => {
                self.invalidate();
                return Err(e);
            }
        };
        Ok(())
    }

    /// Positions at the first entry.
    pub fn seek_to_first(&mut self) -> Result<(), BlockError> {
        if self.block.num_restarts == 0 {
            self.invalidate();
            return Ok(());
        }
        self.goto_restart(0)?;
        self.parse_next().map(|_| ())
    }

    /// Positions at the last entry.
    pub fn seek_to_last(&mut self) -> Result<(), BlockError> {
        if self.block.num_restarts == 0 {
            self.invalidate();
            return Ok(());
        }
        self.goto_restart(self.block.num_restarts - 1)?;
        while self.parse_next()? && self.next < self.block.restarts {}
        Ok(())
    }

    /// Positions at the first entry whose key is `>= target`.
    pub fn seek(&mut self, target: &[u8]) -> Result<(), BlockError> {
        if self.block.num_restarts == 0 {
            self.invalidate();
            return Ok(());
        }
        // The last restart point whose key is < target: the answer is in its interval or
        // at the next restart point. The probes' cache lines are requested first.
        self.block.prefetch_restart_keys();
        let lo = match self.block.restart_index_before(target) {
            Ok(i) => i,
            Err(e) => {
                self.invalidate();
                return Err(e);
            }
        };
        self.goto_restart(lo)?;
        while self.parse_next()? {
            if self.key.as_slice() >= target {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Positions at the last entry whose key is `<= target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) -> Result<(), BlockError> {
        self.seek(target)?;
        if !self.valid() {
            return self.seek_to_last();
        }
        if self.key.as_slice() > target {
            self.prev()?;
        }
        Ok(())
    }

    /// Moves to the next entry.
    #[allow(clippy::should_implement_trait)] // a cursor step, not an `Iterator`
    pub fn next(&mut self) -> Result<(), BlockError> {
        if self.valid() {
            self.parse_next()?;
        }
        Ok(())
    }

    /// Moves to the previous entry: back to the restart point before the current entry,
    /// then forward to the entry just before it.
    pub fn prev(&mut self) -> Result<(), BlockError> {
        if !self.valid() {
            return Ok(());
        }
        let original = self.cur;
        // The last restart point before the current entry (binary search on the offsets).
        let (mut lo, mut hi) = (0usize, self.block.num_restarts);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.block.restart(mid)? < original {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let Some(i) = lo.checked_sub(1) else {
            self.invalidate();
            return Ok(());
        };
        self.goto_restart(i)?;
        // Parse until the entry whose successor is the original one.
        loop {
            if !self.parse_next()? {
                return Ok(());
            }
            if self.next >= original {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::testing::Model;
    use crate::iter::InternalIter;
    use proptest::prelude::*;

    /// A block holding `m`, with a restart point every `interval` entries.
    fn build(m: &Model, interval: usize) -> Block {
        let mut b = BlockBuilder::with_restart_interval(interval);
        for (k, v) in m {
            b.add(k, v.as_deref());
        }
        Block::new(Arc::new(b.finish())).unwrap()
    }

    /// A prefetch of any address is a hint only; a seek into a block whose restart array
    /// points past its entries still reports the damage (the prefetch loop stops there).
    #[test]
    fn prefetch_of_any_address_is_harmless() {
        prefetch(std::ptr::null());
        prefetch(usize::MAX as *const u8);
        let mut m = Model::new();
        for i in 0u8..40 {
            m.insert(vec![b'k', i], Some(vec![i; 20]));
        }
        let good = build(&m, 2);
        assert!(good.num_restarts > 4);
        let mut it = BlockIter::new(good.clone());
        it.seek(&[b'k', 17]).unwrap();
        assert_eq!(it.key(), &[b'k', 17]);
        // Restart 3 now points past the entries.
        let mut d = good.data().to_vec();
        let at = good.restarts + 4 * 3;
        d[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let bad = Block::new(Arc::new(d)).unwrap();
        let mut it = BlockIter::new(bad.clone());
        bad.prefetch_restart_keys();
        assert!((0..40u8).any(|i| it.seek(&[b'k', i]).is_err()));
    }

    /// The block iterator seen through the iterator trait, errors mapped.
    struct BlockAsInternal(BlockIter);

    fn err(e: BlockError) -> crate::Error {
        crate::Error::InvalidArgument(format!("block error {e}"))
    }

    impl InternalIter for BlockAsInternal {
        fn valid(&self) -> bool {
            self.0.valid()
        }
        fn key(&self) -> &[u8] {
            self.0.key()
        }
        fn value(&self) -> Option<&[u8]> {
            self.0.value()
        }
        fn seek_to_first(&mut self) -> crate::Result<()> {
            self.0.seek_to_first().map_err(err)
        }
        fn seek_to_last(&mut self) -> crate::Result<()> {
            self.0.seek_to_last().map_err(err)
        }
        fn seek(&mut self, t: &[u8]) -> crate::Result<()> {
            self.0.seek(t).map_err(err)
        }
        fn seek_for_prev(&mut self, t: &[u8]) -> crate::Result<()> {
            self.0.seek_for_prev(t).map_err(err)
        }
        fn next(&mut self) -> crate::Result<()> {
            self.0.next().map_err(err)
        }
        fn prev(&mut self) -> crate::Result<()> {
            self.0.prev().map_err(err)
        }
    }

    proptest! {
        #[test]
        fn roundtrip_and_seek(keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..6), 0..60),
                              target in proptest::collection::vec(any::<u8>(), 0..6)) {
            let mut b = BlockBuilder::new();
            let keys: Vec<_> = keys.into_iter().collect();
            for (i, k) in keys.iter().enumerate() {
                let v = vec![i as u8; i % 5];
                b.add(k, if i % 7 == 3 { None } else { Some(&v) });
            }
            let blk = Block::new(Arc::new(b.finish())).unwrap();
            let e = blk.entries().unwrap();
            prop_assert_eq!(e.iter().map(|x| x.0.clone()).collect::<Vec<_>>(), keys.clone());
            let mut k = Vec::new();
            let got = blk.seek(&target, &mut k).unwrap().map(|_| k.clone());
            prop_assert_eq!(got, keys.iter().find(|x| x.as_slice() >= target.as_slice()).cloned());
        }

        /// Point lookups (`Block::get`) against the model: every stored key, and targets
        /// around them (prefixes, extensions, absent keys), over keys with long shared
        /// prefixes and restart points by count and by bytes.
        #[test]
        fn get_matches_the_model(keys in proptest::collection::btree_map(proptest::collection::vec(0u8..3, 0..10),
                                                                        proptest::option::of(0usize..300), 0..80),
                                 targets in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..11), 0..20),
                                 interval in 1usize..20, spacing in prop_oneof![Just(usize::MAX), 1usize..600]) {
            let mut b = BlockBuilder { spacing, ..BlockBuilder::with_restart_interval(interval) };
            let model: Vec<(Vec<u8>, Option<Vec<u8>>)> = keys.into_iter()
                .map(|(k, v)| { let v = v.map(|n| vec![k.len() as u8 + 1; n]); (k, v) })
                .collect();
            for (k, v) in &model {
                b.add(k, v.as_deref());
            }
            let blk = Block::new(Arc::new(b.finish())).unwrap();
            let mut all: Vec<Vec<u8>> = model.iter().map(|(k, _)| k.clone()).collect();
            all.extend(targets);
            for t in &all {
                let want = model.iter().find(|(k, _)| k == t).map(|(_, v)| v.clone());
                let got = blk.get(t).unwrap().map(|v| blk.value(v));
                prop_assert_eq!(got, want, "target {:?}", t);
            }
        }

        #[test]
        fn block_iter_matches_model(m in crate::iter::testing::model(), ops in crate::iter::testing::ops(), interval in 1usize..5) {
            let blk = build(&m, interval);
            let mut it = BlockAsInternal(BlockIter::new(blk));
            crate::iter::testing::check_ops(&mut it, &m, &ops)?;
        }

        #[test]
        fn garbage_iterates_without_panic(d in proptest::collection::vec(any::<u8>(), 0..80),
                                         ops in crate::iter::testing::ops()) {
            if let Ok(b) = Block::new(Arc::new(d)) {
                for op in &ops {
                    if let crate::iter::testing::Op::Seek(t) = op {
                        let _ = b.get(t);
                    }
                }
                let _ = b.get(b"");
                // The point index of a damaged block: built or not, it never panics.
                if let Some(pi) = super::super::point::PointIndex::build(&b) {
                    for op in &ops {
                        if let crate::iter::testing::Op::Seek(t) = op {
                            let _ = pi.get(&b, t);
                        }
                    }
                }
                let mut it = BlockAsInternal(BlockIter::new(b));
                for op in &ops {
                    let _ = crate::iter::testing::apply(&mut it, op);
                    let _ = (it.key(), it.value());
                }
            }
        }

        #[test]
        fn garbage_never_panics(d in proptest::collection::vec(any::<u8>(), 0..80), t in proptest::collection::vec(any::<u8>(), 0..4)) {
            if let Ok(b) = Block::new(Arc::new(d)) {
                let _ = b.entries();
                let mut k = Vec::new();
                let _ = b.seek(&t, &mut k);
            }
        }
    }
}
