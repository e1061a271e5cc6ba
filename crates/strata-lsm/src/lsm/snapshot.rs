//! Reads: point lookups at a sequence number, and consistent snapshots (the memtables and
//! files of every stripe at one moment) with their merging range iterators.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::inner::Inner;
use super::version::{lookup_version, overlaps_range, StripeVersion};
use crate::engine::{Direction, KeyRange, KvIter, Snapshot};
use crate::error::{Error, Result};
use crate::iter::{LevelSource, MemSource, MergeIter};
use crate::memtable::Memtable;
use crate::sst::table::{Source, Table, TableIter};
use crate::sync::read;

impl Inner {
    /// The latest value of `key` at `seq` (`None`: the visible sequence; `Some(u64::MAX)`:
    /// including unsynced writes).
    pub fn get_at(&self, key: &[u8], seq: Option<u64>) -> Result<Option<Vec<u8>>> {
        let s = self.stripe_of(key);
        let (view, seq) = {
            let st = read(&self.state);
            let seq = seq.unwrap_or_else(|| self.visible.load(Ordering::Acquire));
            (
                StripeView {
                    stripe: s,
                    active: Arc::clone(&st.active[s]),
                    frozen: st.frozen.as_ref().map(|f| Arc::clone(&f.mems[s])),
                    version: Arc::clone(&st.versions[s]),
                },
                seq,
            )
        };
        view.get(key, seq)
    }

    /// A snapshot of every stripe, or only of stripe `only`.
    pub fn snapshot_of(self: &Arc<Self>, only: Option<usize>) -> LsmSnapshot {
        let st = read(&self.state);
        let seq = self.visible.load(Ordering::Acquire);
        let view = |s: usize| StripeView {
            stripe: s,
            active: Arc::clone(&st.active[s]),
            frozen: st.frozen.as_ref().map(|f| Arc::clone(&f.mems[s])),
            version: Arc::clone(&st.versions[s]),
        };
        let views = match only {
            Some(s) => vec![view(s)],
            None => (0..self.stripes as usize).map(view).collect(),
        };
        LsmSnapshot {
            inner: Arc::clone(self),
            seq,
            views,
        }
    }
}

/// One stripe as a snapshot sees it.
pub(super) struct StripeView {
    stripe: usize,
    active: Arc<Memtable>,
    frozen: Option<Arc<Memtable>>,
    version: Arc<StripeVersion>,
}

impl StripeView {
    /// The value of `key` (of this stripe) at `seq`.
    fn get(&self, key: &[u8], seq: u64) -> Result<Option<Vec<u8>>> {
        if let Some(v) = self.active.get(key, seq) {
            return Ok(v);
        }
        if let Some(f) = &self.frozen {
            if let Some(v) = f.get(key, u64::MAX) {
                return Ok(v);
            }
        }
        Ok(lookup_version(&self.version, key)?.flatten())
    }

    /// The sources of this stripe's entries in `[lo, hi]`, newest first.
    fn sources(
        &self,
        lo: &std::ops::Bound<Vec<u8>>,
        hi: &std::ops::Bound<Vec<u8>>,
        direction: Direction,
        seq: u64,
        out: &mut Vec<Box<dyn Source>>,
    ) {
        let reverse = direction == Direction::Reverse;
        out.push(Box::new(MemSource::new(
            Arc::clone(&self.active),
            lo.clone(),
            hi.clone(),
            direction,
            seq,
        )));
        if let Some(f) = &self.frozen {
            out.push(Box::new(MemSource::new(
                Arc::clone(f),
                lo.clone(),
                hi.clone(),
                direction,
                u64::MAX,
            )));
        }
        for t in &self.version.levels[0] {
            if overlaps_range(t, lo, hi) {
                out.push(Box::new(TableIter::new(
                    Arc::clone(t),
                    lo.clone(),
                    hi.clone(),
                    reverse,
                )));
            }
        }
        for level in &self.version.levels[1..] {
            let mut files: Vec<Arc<Table>> = level
                .iter()
                .filter(|t| overlaps_range(t, lo, hi))
                .cloned()
                .collect();
            if files.is_empty() {
                continue;
            }
            if reverse {
                files.reverse();
            }
            out.push(Box::new(LevelSource::new(
                files,
                lo.clone(),
                hi.clone(),
                reverse,
            )));
        }
    }
}

/// A consistent view: the memtables and files of every stripe, and the visible sequence.
pub(super) struct LsmSnapshot {
    inner: Arc<Inner>,
    seq: u64,
    views: Vec<StripeView>,
}

impl LsmSnapshot {
    fn view(&self, s: usize) -> Option<&StripeView> {
        if self.views.len() == 1 {
            return self.views.first().filter(|v| v.stripe == s);
        }
        self.views.get(s)
    }
}

impl Snapshot for LsmSnapshot {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let s = self.inner.stripe_of(key);
        let Some(v) = self.view(s) else {
            return Err(Error::InvalidArgument(
                "key outside the snapshot's partition".into(),
            ));
        };
        v.get(key, self.seq)
    }

    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        let views: Vec<&StripeView> = match self.inner.single_stripe(&range) {
            Some(s) => self.view(s).into_iter().collect(),
            None => {
                if self.views.len() != self.inner.stripes as usize {
                    return Err(Error::InvalidArgument(
                        "range outside the snapshot's partition".into(),
                    ));
                }
                self.views.iter().collect()
            }
        };
        let (lo, hi) = (range.start, range.end);
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        for v in views {
            v.sources(&lo, &hi, direction, self.seq, &mut sources);
        }
        Ok(Box::new(MergeIter::new(sources, direction)))
    }
}
