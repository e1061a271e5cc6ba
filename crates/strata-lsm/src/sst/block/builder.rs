//! [`BlockBuilder`]: entries in, one block's bytes out (layout in the parent module).

use super::*;

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
