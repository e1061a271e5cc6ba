//! [`BlockIter`]: a seekable iterator over one block's entries.

use super::*;

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
