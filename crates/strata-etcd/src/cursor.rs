//! The engine's cursor without a snapshot round trip: [`strata_lsm::RangeCursor`] over
//! [`FirstAnswer`]. Like [`Engine::range`](strata_lsm::Engine::range) on etcd, the first
//! answer's revision becomes the cursor's snapshot (pinned, so this process's compactions stay
//! below it); every later seek or rewind is a new range at that revision.

use std::sync::Arc;

use strata_lsm::{Direction, KeyRange, KvIter, RangeSource, Result};

use crate::engine::Inner;
use crate::range::RangeIter;
use crate::snapshot::Pin;

/// Ranges at the revision of the first answer (see the module docs).
pub(crate) struct FirstAnswer {
    pub inner: Arc<Inner>,
    /// The revision read; `None` until the first answer fixes it.
    pub pin: Option<Arc<Pin>>,
}

impl RangeSource for FirstAnswer {
    fn open_range(&mut self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        self.inner.check_open()?;
        let mut it = RangeIter::new(Arc::clone(&self.inner), self.pin.clone(), &range, direction);
        if self.pin.is_some() {
            return Ok(Box::new(it));
        }
        // Read the first page now: its answer fixes the revision of every later open.
        let first = it.next().transpose()?;
        self.pin = it.pin();
        Ok(Box::new(first.map(Ok).into_iter().chain(it)))
    }
}
