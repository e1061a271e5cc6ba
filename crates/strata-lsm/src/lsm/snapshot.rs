//! Reads: point lookups at a sequence number, and consistent snapshots (the memtables and
//! files of every stripe at one moment) with their cursors.
//!
//! A cursor is a [`DbIter`] over one of:
//! - a [`MergingIter`] of one stripe's sources (memtables, L0 files, one [`LevelIter`] per
//!   deeper level) when the range lies in one stripe;
//! - a [`ConcatIter`] when the partitioner lays the range's stripes out in key order
//!   ([`crate::Partitioner::stripe_span`], Strata's tables): the stripes read one after
//!   another, only the current one open;
//! - else a merge of one [`LazyStripe`] per stripe, each built only when the merge first
//!   positions it.
//!
//! The one-stripe stack is made of concrete types ([`StripeIter`]), and so is each of the
//! three plans: a cursor's only virtual call is the [`Cursor`] call itself.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::concat::ConcatIter;
use super::inner::Inner;
use super::version::{lookup_version_ref, overlaps_range, StripeVersion};
use crate::engine::{Cursor, CursorPairs, Direction, KeyRange, KvIter, Snapshot};
use crate::error::{Error, Result};
use crate::iter::{
    before_lo, past_hi, DbIter, InternalIter, LevelIter, MergingIter, SourceIter, StripeIter,
};
use crate::manifest::LEVELS;
use crate::memtable::Memtable;
use crate::partition::StripeSpan;
use crate::sst::bloom::key_hash;
use crate::sst::iter::SstIter;
use crate::sst::table::Table;
use crate::sync::read;

impl Inner {
    /// The latest value of `key` at `seq` (`None`: the visible sequence; `Some(u64::MAX)`:
    /// including unsynced writes).
    pub fn get_at(&self, key: &[u8], seq: Option<u64>) -> Result<Option<Vec<u8>>> {
        self.get_at_with(key, seq, <[u8]>::to_vec)
    }

    /// [`Inner::get_at`], handing the value (borrowed, not copied) to `f`.
    pub fn get_at_with<R>(
        &self,
        key: &[u8],
        seq: Option<u64>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let s = self.stripe_of(key);
        let hash = key_hash(key);
        // Under the state's read lock, only find which source holds the key's newest version
        // and keep a reference to that one source (one reference-count update per get, not
        // one per source). The lock is released before any block is read and before `f` runs
        // (`f` may call back into the engine).
        let (found, seq) = {
            let st = read(&self.state);
            let seq = seq.unwrap_or_else(|| self.visible.load(Ordering::Acquire));
            if st.active[s].get_ref(key, hash, seq).is_some() {
                (Holder::Mem(Arc::clone(&st.active[s]), seq), seq)
            } else if let Some(m) = st
                .frozen
                .as_ref()
                .map(|fr| &fr.mems[s])
                .filter(|m| m.get_ref(key, hash, u64::MAX).is_some())
            {
                (Holder::Mem(Arc::clone(m), u64::MAX), seq)
            } else {
                (Holder::Files(Arc::clone(&st.versions[s])), seq)
            }
        };
        match found {
            // A memtable's answer at a sequence number it already holds never changes (its
            // versions up to `at` were all inserted before `at` became visible, and later
            // inserts carry larger sequence numbers), so the second lookup finds the same
            // entry (should it not, the read is made again over every source).
            Holder::Mem(m, at) => match m.get_ref(key, hash, at) {
                Some(v) => Ok(v.map(f)),
                None => self.view_now(s).0.get_with(key, seq, f),
            },
            Holder::Files(v) => {
                Ok(lookup_version_ref(&v, key, hash)?.and_then(|found| found.value().map(f)))
            }
        }
    }

    /// The view of stripe `s` now, and the visible sequence.
    fn view_now(&self, s: usize) -> (StripeView, u64) {
        let st = read(&self.state);
        let seq = self.visible.load(Ordering::Acquire);
        (
            StripeView {
                stripe: s,
                active: Arc::clone(&st.active[s]),
                frozen: st.frozen.as_ref().map(|f| Arc::clone(&f.mems[s])),
                version: Arc::clone(&st.versions[s]),
            },
            seq,
        )
    }

    /// A positioned cursor over `range` on a snapshot taken now. A range inside one stripe (a
    /// table Query) reads that stripe's sources directly: no snapshot of the other stripes,
    /// and the partitioner works out the stripes once.
    pub fn cursor(
        self: &Arc<Self>,
        range: KeyRange,
        direction: Direction,
    ) -> Result<Box<dyn Cursor>> {
        // A table Query: both bounds under one `(id, h)`, so one stripe, found without
        // building the stripe span (an allocation and two searches per Query).
        if let Some(s) = self.partitioner.hashed_single_stripe(&range, self.stripes) {
            let (view, seq) = self.view_now(s as usize);
            return positioned(view.iter(&range, seq), range, direction);
        }
        let span = self.stripe_span(&range);
        let only = match &span {
            Some(sp) if sp.first == sp.last => Some(sp.first as usize),
            Some(_) => None,
            None => self.single_stripe(&range),
        };
        if let Some(s) = only {
            let (view, seq) = self.view_now(s);
            return positioned(view.iter(&range, seq), range, direction);
        }
        let stripes = span
            .as_ref()
            .map(|sp| (sp.first as usize, sp.last as usize));
        let snap = self.snapshot_of(stripes);
        let plan = snap.plan_with(&range, span)?;
        snap.start(plan, range, direction)
    }

    /// A snapshot of every stripe, or only of stripes `first..=last`.
    pub fn snapshot_of(self: &Arc<Self>, only: Option<(usize, usize)>) -> LsmSnapshot {
        let st = read(&self.state);
        let seq = self.visible.load(Ordering::Acquire);
        let view = |s: usize| StripeView {
            stripe: s,
            active: Arc::clone(&st.active[s]),
            frozen: st.frozen.as_ref().map(|f| Arc::clone(&f.mems[s])),
            version: Arc::clone(&st.versions[s]),
        };
        let all = self.stripes as usize;
        let (base, last) = only.unwrap_or((0, all - 1));
        let views: Vec<StripeView> = (base..=last.min(all - 1)).map(view).collect();
        LsmSnapshot {
            inner: Arc::clone(self),
            seq,
            base,
            views: views.into(),
        }
    }
}

/// The one source of a stripe that a point read found its key in (or the files, where it
/// still has to look), kept alive after the state's lock is released.
enum Holder {
    /// A memtable holding a version of the key visible at the sequence number.
    Mem(Arc<Memtable>, u64),
    /// The stripe's files.
    Files(Arc<StripeVersion>),
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
        self.get_with(key, seq, <[u8]>::to_vec)
    }

    /// The value of `key` at `seq`, borrowed by `f` (nothing is copied).
    fn get_with<R>(&self, key: &[u8], seq: u64, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let hash = key_hash(key);
        if let Some(v) = self.active.get_ref(key, hash, seq) {
            return Ok(v.map(f));
        }
        if let Some(m) = &self.frozen {
            if let Some(v) = m.get_ref(key, hash, u64::MAX) {
                return Ok(v.map(f));
            }
        }
        Ok(lookup_version_ref(&self.version, key, hash)?.and_then(|found| found.value().map(f)))
    }

    /// The sources of this stripe that can hold keys of `range`, newest first, as one
    /// iterator (the source itself when there is only one).
    pub(super) fn iter(&self, range: &KeyRange, seq: u64) -> StripeIter {
        let (lo, hi) = (&range.start, &range.end);
        let v = &self.version;
        let active = (!self.active.is_empty()).then_some(&self.active);
        let frozen = self.frozen.as_ref().filter(|f| !f.is_empty());
        // Per level below 0: the files overlapping the range (sorted, disjoint: a run),
        // found once (two binary searches per level).
        let mut runs: [&[Arc<Table>]; LEVELS - 1] = [&[]; LEVELS - 1];
        for (run, level) in runs.iter_mut().zip(&v.levels[1..]) {
            let first = level.partition_point(|t| before_lo(&t.meta.largest, lo));
            let rest = &level[first..];
            let n = rest.partition_point(|t| !past_hi(&t.meta.smallest, hi));
            *run = &rest[..n];
        }
        let runs = runs.iter().filter(|r| !r.is_empty());
        let l0 = || v.levels[0].iter().filter(|t| overlaps_range(t, lo, hi));
        // Counted first: a stripe of one source (compacted: one level, a Query's usual case)
        // is read without a vector of sources; else the vector is allocated at its size (a
        // few hundred bytes per source, and requests of 1 KiB and more cost glibc a
        // consolidation pass, ~18k instructions per Query when sized for every level).
        let count = usize::from(active.is_some())
            + usize::from(frozen.is_some())
            + l0().count()
            + runs.clone().count();
        let mem = |m: &Arc<Memtable>, at: u64| SourceIter::Mem(m.iter(at));
        let file = |t: &Arc<Table>| SourceIter::Sst(SstIter::new(Arc::clone(t)));
        let level = |files: &&[Arc<Table>]| SourceIter::Level(LevelIter::new(files.to_vec()));
        if count == 1 {
            let only = active
                .map(|m| mem(m, seq))
                .or_else(|| frozen.map(|f| mem(f, u64::MAX)))
                .or_else(|| l0().next().map(file))
                .or_else(|| runs.clone().next().map(level));
            if let Some(only) = only {
                return StripeIter::One(only);
            }
        }
        let mut c: Vec<SourceIter> = Vec::with_capacity(count);
        c.extend(active.map(|m| mem(m, seq)));
        c.extend(frozen.map(|f| mem(f, u64::MAX)));
        c.extend(l0().map(file));
        c.extend(runs.map(level));
        StripeIter::new(c)
    }
}

/// One stripe of a cross-stripe cursor: its sources are gathered the first time it is
/// positioned (a merge that can rule the stripe out by its bounds never gathers them).
struct LazyStripe {
    views: Arc<[StripeView]>,
    index: usize,
    seq: u64,
    range: Arc<KeyRange>,
    it: Option<StripeIter>,
    /// Read bound for the stripe's iterator once built ([`InternalIter::set_read_bound`]).
    bound: Option<Arc<[u8]>>,
}

impl LazyStripe {
    fn built(&mut self) -> &mut StripeIter {
        let (views, index, range, seq) = (&self.views, self.index, &self.range, self.seq);
        let bound = &self.bound;
        self.it.get_or_insert_with(|| {
            let mut it = views[index].iter(range, seq);
            it.set_read_bound(bound.clone());
            it
        })
    }
}

impl InternalIter for LazyStripe {
    fn valid(&self) -> bool {
        self.it.as_ref().is_some_and(|i| i.valid())
    }
    fn key(&self) -> &[u8] {
        self.it.as_ref().map_or(&[], |i| i.key())
    }
    fn value(&self) -> Option<&[u8]> {
        self.it.as_ref().and_then(|i| i.value())
    }
    fn entry(&self) -> Option<crate::iter::EntryRef<'_>> {
        self.it.as_ref()?.entry()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.built().seek_to_first()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.built().seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.built().seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.built().seek_for_prev(target)
    }
    fn next(&mut self) -> Result<()> {
        match &mut self.it {
            Some(it) => it.next(),
            None => Ok(()),
        }
    }
    fn prev(&mut self) -> Result<()> {
        match &mut self.it {
            Some(it) => it.prev(),
            None => Ok(()),
        }
    }
    fn set_read_bound(&mut self, bound: Option<Arc<[u8]>>) {
        if let Some(it) = &mut self.it {
            it.set_read_bound(bound.clone());
        }
        self.bound = bound;
    }
}

/// How a cursor reads its range: each kind is a concrete iterator type, so a cursor makes one
/// virtual call (its own) per step.
// One per cursor, moved once into it: boxing the large variant would cost an allocation.
#[allow(clippy::large_enum_variant)]
enum Plan {
    /// The range lies in one stripe.
    Stripe(StripeIter),
    /// The stripes lie one after another in key order (tables).
    Concat(ConcatIter),
    /// A merge of every stripe, each gathered when first positioned.
    Cross(MergingIter<LazyStripe>),
}

/// A database iterator over `it`, positioned at the start of `range`.
fn positioned<I: InternalIter + 'static>(
    it: I,
    range: KeyRange,
    direction: Direction,
) -> Result<Box<dyn Cursor>> {
    let mut c = DbIter::new(it, range, direction);
    c.rewind()?;
    Ok(Box::new(c))
}

/// A consistent view: the memtables and files of every stripe, and the visible sequence.
pub(super) struct LsmSnapshot {
    inner: Arc<Inner>,
    seq: u64,
    /// The stripe of `views[0]` (the views are of consecutive stripes).
    base: usize,
    views: Arc<[StripeView]>,
}

fn outside() -> Error {
    Error::InvalidArgument("range outside the snapshot's stripes".into())
}

impl LsmSnapshot {
    fn view(&self, s: usize) -> Option<&StripeView> {
        self.views
            .get(s.checked_sub(self.base)?)
            .filter(|v| v.stripe == s)
    }

    /// The entries of `range` (tombstones included): how they are read.
    fn plan(&self, range: &KeyRange) -> Result<Plan> {
        self.plan_with(range, self.inner.stripe_span(range))
    }

    /// [`LsmSnapshot::plan`] with the range's stripe span already worked out.
    fn plan_with(&self, range: &KeyRange, span: Option<StripeSpan>) -> Result<Plan> {
        if let Some(span) = span {
            let (first, last) = (span.first as usize, span.last as usize);
            if self.view(first).is_none() || self.view(last).is_none() {
                return Err(outside());
            }
            if first == last {
                return Ok(Plan::Stripe(
                    self.views[first - self.base].iter(range, self.seq),
                ));
            }
            return Ok(Plan::Concat(ConcatIter::new(
                Arc::clone(&self.views),
                self.base as u32,
                self.seq,
                range.clone(),
                span,
            )));
        }
        if let Some(s) = self.inner.single_stripe(range) {
            let Some(v) = self.view(s) else {
                return Err(Error::InvalidArgument(
                    "range outside the snapshot's partition".into(),
                ));
            };
            return Ok(Plan::Stripe(v.iter(range, self.seq)));
        }
        if self.inner.stripes == 1 {
            if let Some(v) = self.views.first() {
                return Ok(Plan::Stripe(v.iter(range, self.seq)));
            }
        }
        if self.views.len() != self.inner.stripes as usize {
            return Err(outside());
        }
        let shared = Arc::new(range.clone());
        let children = (0..self.views.len())
            .map(|index| LazyStripe {
                views: Arc::clone(&self.views),
                index,
                seq: self.seq,
                range: Arc::clone(&shared),
                it: None,
                bound: None,
            })
            .collect();
        Ok(Plan::Cross(MergingIter::new(children)))
    }

    /// A positioned cursor over `range` that owns what it reads.
    pub(super) fn db_iter(&self, range: KeyRange, direction: Direction) -> Result<Box<dyn Cursor>> {
        let plan = self.plan(&range)?;
        self.start(plan, range, direction)
    }

    /// The cursor of a plan, positioned.
    fn start(&self, plan: Plan, range: KeyRange, direction: Direction) -> Result<Box<dyn Cursor>> {
        match plan {
            Plan::Stripe(it) => positioned(it, range, direction),
            Plan::Concat(it) => {
                // Each stripe's piece is clamped to the range (`ConcatIter`).
                let mut c = DbIter::new(it, range, direction).inner_in_range();
                c.rewind()?;
                Ok(Box::new(c))
            }
            Plan::Cross(it) => positioned(it, range, direction),
        }
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
        Ok(Box::new(CursorPairs::new(self.db_iter(range, direction)?)))
    }

    fn cursor(&self, range: KeyRange, direction: Direction) -> Result<Box<dyn Cursor + '_>> {
        self.db_iter(range, direction)
    }
}
