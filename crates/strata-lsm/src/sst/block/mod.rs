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

mod builder;
mod iter;
#[cfg(test)]
mod tests;

pub use builder::BlockBuilder;
pub use iter::BlockIter;

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
