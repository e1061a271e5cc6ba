//! Data and index blocks: prefix-compressed entries with restart points.
//!
//! Block = `entry* | restart u32 LE * n | n u32 LE`. Entry = `shared varint | unshared varint
//! | vtag varint | key[shared..] | value`, where `vtag` is 0 for a tombstone and `len + 1`
//! for a value of `len` bytes. Every `RESTART_INTERVAL`-th entry is a restart point: it
//! stores its whole key (`shared = 0`) and its offset is listed in the restart array, so a
//! reader binary-searches restart points, then scans at most one interval.

use std::sync::Arc;

use crate::coding::{get_varint, put_varint, u32_at};
use crate::error::FormatError;

/// Entries between restart points.
pub const RESTART_INTERVAL: usize = 16;

/// Builds one block.
#[derive(Default)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    last_key: Vec<u8>,
    count: usize,
}

impl BlockBuilder {
    /// An empty builder.
    pub fn new() -> BlockBuilder {
        BlockBuilder::default()
    }

    /// Adds an entry; keys must come in strictly increasing order.
    pub fn add(&mut self, key: &[u8], value: Option<&[u8]>) {
        let shared = if self.count % RESTART_INTERVAL == 0 {
            self.restarts.push(self.buf.len() as u32);
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

/// A parsed block (its bytes are shared with the block cache).
#[derive(Clone)]
pub struct Block {
    data: Arc<Vec<u8>>,
    restarts: usize,
    num_restarts: usize,
}

/// Error of block decoding: offset inside the block and reason.
pub type BlockError = FormatError;

impl Block {
    /// Parses the restart array of a block.
    pub fn new(data: Arc<Vec<u8>>) -> Result<Block, BlockError> {
        let len = data.len();
        let n = u32_at(&data, len.wrapping_sub(4))
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
        Ok(Block {
            data,
            restarts,
            num_restarts: n,
        })
    }

    /// The raw bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Offset where entries end.
    pub fn entries_end(&self) -> usize {
        self.restarts
    }

    fn restart(&self, i: usize) -> Result<usize, BlockError> {
        let r = u32_at(&self.data, self.restarts + 4 * i)
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

    /// Decodes the entry at `pos` given the previous key in `key` (replaced by this entry's
    /// key); returns the value and the offset of the next entry.
    pub fn decode_at(
        &self,
        pos: usize,
        key: &mut Vec<u8>,
    ) -> Result<(ValueRef, usize), BlockError> {
        let d = &self.data[..self.restarts];
        let mut p = pos;
        let bad = |what: &str| FormatError::new(pos, format!("bad entry: {what}"));
        let shared = get_varint(d, &mut p).ok_or_else(|| bad("shared length"))? as usize;
        let unshared = get_varint(d, &mut p).ok_or_else(|| bad("key length"))? as usize;
        let vtag = get_varint(d, &mut p).ok_or_else(|| bad("value length"))?;
        if shared > key.len() {
            return Err(bad("shared prefix longer than the previous key"));
        }
        let kend = p
            .checked_add(unshared)
            .filter(|&e| e <= d.len())
            .ok_or_else(|| bad("key runs past the block"))?;
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
            .ok_or_else(|| bad("value runs past the block"))?;
        Ok((
            ValueRef {
                off: kend as u32,
                len: vlen as u32,
                tombstone,
            },
            vend,
        ))
    }

    /// Offset of the last restart point whose key is `< target` (0 when there is none): a
    /// forward scan from there reaches the first key `>= target` within one interval.
    pub fn restart_before(&self, target: &[u8]) -> Result<usize, BlockError> {
        if self.num_restarts == 0 {
            return Ok(0);
        }
        let (mut lo, mut hi) = (0usize, self.num_restarts);
        let mut key = Vec::new();
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            key.clear();
            self.decode_at(self.restart(mid)?, &mut key)?;
            if key.as_slice() < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.restart(lo)
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
        // Last restart point whose key is < target.
        let (mut lo, mut hi) = (0usize, self.num_restarts);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            key.clear();
            self.decode_at(self.restart(mid)?, key)?;
            if key.as_slice() < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let mut pos = self.restart(lo)?;
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
        if v.tombstone {
            None
        } else {
            Some(self.data[v.off as usize..(v.off + v.len) as usize].to_vec())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
