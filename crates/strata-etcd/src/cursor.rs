//! [`EtcdCursor`]: the engine's cursor without a snapshot round trip. Like
//! [`Engine::range`](strata_lsm::Engine::range) on etcd, the first answer's revision becomes the
//! cursor's snapshot (pinned, so this process's compactions stay below it); every later seek
//! or rewind is a new range at that revision.

use std::sync::Arc;

use strata_lsm::engine::narrow;
use strata_lsm::{Cursor, Direction, KeyRange, KvPair, Result};

use crate::engine::Inner;
use crate::range::RangeIter;
use crate::snapshot::Pin;

/// A seekable position in a range of one etcd revision (see the module docs).
pub(crate) struct EtcdCursor {
    inner: Arc<Inner>,
    /// The revision read; `None` until the first answer fixes it.
    pin: Option<Arc<Pin>>,
    range: KeyRange,
    direction: Direction,
    iter: Option<RangeIter>,
    cur: Option<KvPair>,
}

impl EtcdCursor {
    /// A cursor over `range`, positioned at its first pair (`pin`: a snapshot's revision, or
    /// `None` to read the current one).
    pub fn new(
        inner: Arc<Inner>,
        pin: Option<Arc<Pin>>,
        range: KeyRange,
        direction: Direction,
    ) -> Result<EtcdCursor> {
        let mut c = EtcdCursor {
            inner,
            pin,
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
        let mut it = RangeIter::new(
            Arc::clone(&self.inner),
            self.pin.clone(),
            &range,
            self.direction,
        );
        let first = it.next().transpose()?;
        if self.pin.is_none() {
            self.pin = it.pin();
        }
        self.cur = first;
        self.iter = Some(it);
        Ok(())
    }
}

impl Cursor for EtcdCursor {
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
