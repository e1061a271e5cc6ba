//! [`ConcatIter`]: a range whose stripes lie one after another in key order (see
//! [`crate::Partitioner::stripe_span`]) read as a concatenation of per-stripe iterators
//! instead of a merge of every stripe. Only the stripe under the cursor is open; moving past
//! its last key opens the next one (a full table scan opens 256 stripes one at a time, and a
//! seek opens one).

use std::ops::Bound;
use std::sync::Arc;

use super::snapshot::StripeView;
use crate::engine::KeyRange;
use crate::error::Result;
use crate::iter::{before_lo, past_hi, InternalIter, StripeIter};
use crate::partition::{Place, StripeSpan};

/// The open stripe: its iterator, clamped to the keys of the range that live in it.
struct Piece {
    stripe: u32,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    it: StripeIter,
    /// The iterator stands at a key inside `[lo, hi]`.
    ok: bool,
    /// The iterator can yield keys below `lo` / above `hi` (false when its sources' key
    /// bounds show it cannot: a compacted stripe read whole, as a table scan does; then
    /// each step skips the comparison).
    check_lo: bool,
    check_hi: bool,
}

impl Piece {
    fn new(stripe: u32, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>, it: StripeIter) -> Piece {
        let check_lo =
            !matches!(lo, Bound::Unbounded) && it.smallest().is_none_or(|s| before_lo(s, &lo));
        let check_hi =
            !matches!(hi, Bound::Unbounded) && it.largest().is_none_or(|l| past_hi(l, &hi));
        Piece {
            stripe,
            lo,
            hi,
            it,
            ok: false,
            check_lo,
            check_hi,
        }
    }

    fn below(&self, k: &[u8]) -> bool {
        self.check_lo && before_lo(k, &self.lo)
    }

    fn above(&self, k: &[u8]) -> bool {
        self.check_hi && past_hi(k, &self.hi)
    }

    fn settle(&mut self) {
        self.ok = self
            .it
            .entry()
            .is_some_and(|(k, _)| !self.below(k) && !self.above(k));
    }

    /// After `next` from a key inside the piece: the new key is greater, so only the upper
    /// bound can have been crossed.
    #[inline]
    fn settle_next(&mut self) {
        self.ok = self.it.entry().is_some_and(|(k, _)| !self.above(k));
    }

    /// After `prev` from a key inside the piece: only the lower bound can have been crossed.
    fn settle_prev(&mut self) {
        self.ok = self.it.entry().is_some_and(|(k, _)| !self.below(k));
    }

    fn first(&mut self) -> Result<()> {
        match &self.lo {
            Bound::Unbounded => self.it.seek_to_first()?,
            Bound::Included(l) | Bound::Excluded(l) => {
                self.it.seek(l)?;
                if matches!(&self.lo, Bound::Excluded(l) if self.it.valid() && self.it.key() == l.as_slice())
                {
                    self.it.next()?;
                }
            }
        }
        self.settle();
        Ok(())
    }

    fn last(&mut self) -> Result<()> {
        match &self.hi {
            Bound::Unbounded => self.it.seek_to_last()?,
            Bound::Included(h) | Bound::Excluded(h) => {
                self.it.seek_for_prev(h)?;
                if matches!(&self.hi, Bound::Excluded(h) if self.it.valid() && self.it.key() == h.as_slice())
                {
                    self.it.prev()?;
                }
            }
        }
        self.settle();
        Ok(())
    }
}

/// The tighter of two lower bounds.
fn max_lo(a: Bound<Vec<u8>>, b: &Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (&a, b) {
        (_, Bound::Unbounded) => a,
        (Bound::Unbounded, _) => b.clone(),
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            if y > x || (y == x && matches!(b, Bound::Excluded(_))) {
                b.clone()
            } else {
                a
            }
        }
    }
}

/// The tighter of two upper bounds.
fn min_hi(a: Bound<Vec<u8>>, b: &Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (&a, b) {
        (_, Bound::Unbounded) => a,
        (Bound::Unbounded, _) => b.clone(),
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            if y < x || (y == x && matches!(b, Bound::Excluded(_))) {
                b.clone()
            } else {
                a
            }
        }
    }
}

/// True when no key lies within `[lo, hi]`.
fn empty(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(l), Bound::Included(h)) => l > h,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) => {
            l >= h
        }
        _ => false,
    }
}

/// The stripes of a [`StripeSpan`], read one after another (see the module documentation).
pub(super) struct ConcatIter {
    /// The snapshot's stripes; `views[i]` is stripe `base + i`.
    views: Arc<[StripeView]>,
    base: u32,
    seq: u64,
    range: KeyRange,
    span: StripeSpan,
    cur: Option<Piece>,
}

impl ConcatIter {
    /// An unpositioned iterator over `range`, whose stripes `span` gives; `views` must hold
    /// stripes `span.first..=span.last` (`views[i]` being stripe `base + i`).
    pub(super) fn new(
        views: Arc<[StripeView]>,
        base: u32,
        seq: u64,
        range: KeyRange,
        span: StripeSpan,
    ) -> ConcatIter {
        ConcatIter {
            views,
            base,
            seq,
            range,
            span,
            cur: None,
        }
    }

    /// Makes stripe `s` the open one (kept when it already is); `None` when the range has
    /// no key in it.
    fn open(&mut self, s: u32) -> Option<&mut Piece> {
        if self.cur.as_ref().is_some_and(|p| p.stripe == s) {
            return self.cur.as_mut();
        }
        self.cur = None;
        let piece = self.span.piece(s);
        let lo = max_lo(piece.start, &self.range.start);
        let hi = min_hi(piece.end, &self.range.end);
        if empty(&lo, &hi) {
            return None;
        }
        let view = self.views.get(s.checked_sub(self.base)? as usize)?;
        let sub = KeyRange {
            start: lo.clone(),
            end: hi.clone(),
        };
        let mut it = view.iter(&sub, self.seq);
        // Nothing above the piece's end is read (`settle` stops there): readahead in its
        // files stops at the block holding it (see `InternalIter::set_read_bound`).
        if let Bound::Included(h) | Bound::Excluded(h) = &hi {
            it.set_read_bound(Some(Arc::from(h.as_slice())));
        }
        self.cur = Some(Piece::new(s, lo, hi, it));
        self.cur.as_mut()
    }

    /// The first key at or after the start of stripe `from` (forward through the span).
    fn forward_from(&mut self, from: u32) -> Result<()> {
        for s in from..=self.span.last {
            if let Some(p) = self.open(s) {
                p.first()?;
                if p.ok {
                    return Ok(());
                }
            }
        }
        self.cur = None;
        Ok(())
    }

    /// The last key at or before the end of stripe `from` (backward through the span).
    fn backward_from(&mut self, from: u32) -> Result<()> {
        for s in (self.span.first..=from.min(self.span.last)).rev() {
            if let Some(p) = self.open(s) {
                p.last()?;
                if p.ok {
                    return Ok(());
                }
            }
        }
        self.cur = None;
        Ok(())
    }

    fn guarded(&mut self, f: impl FnOnce(&mut Self) -> Result<()>) -> Result<()> {
        let r = f(self);
        if r.is_err() {
            self.cur = None;
        }
        r
    }
}

impl InternalIter for ConcatIter {
    fn valid(&self) -> bool {
        self.cur.as_ref().is_some_and(|p| p.ok)
    }
    fn key(&self) -> &[u8] {
        match &self.cur {
            Some(p) if p.ok => p.it.key(),
            _ => &[],
        }
    }
    fn value(&self) -> Option<&[u8]> {
        match &self.cur {
            Some(p) if p.ok => p.it.value(),
            _ => None,
        }
    }
    #[inline]
    fn entry(&self) -> Option<crate::iter::EntryRef<'_>> {
        match &self.cur {
            Some(p) if p.ok => p.it.entry(),
            _ => None,
        }
    }
    fn seek_to_first(&mut self) -> Result<()> {
        let first = self.span.first;
        self.guarded(|c| c.forward_from(first))
    }
    fn seek_to_last(&mut self) -> Result<()> {
        let last = self.span.last;
        self.guarded(|c| c.backward_from(last))
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.guarded(|c| {
            let s = match c.span.place(target) {
                Place::Before => c.span.first,
                Place::In(s) if s < c.span.first => c.span.first,
                Place::In(s) if s <= c.span.last => s,
                Place::In(_) | Place::After => {
                    c.cur = None;
                    return Ok(());
                }
            };
            if let Some(p) = c.open(s) {
                if before_lo(target, &p.lo) {
                    p.first()?;
                } else {
                    p.it.seek(target)?;
                    p.settle();
                }
                if p.ok {
                    return Ok(());
                }
            }
            c.forward_from(s + 1)
        })
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.guarded(|c| {
            let s = match c.span.place(target) {
                Place::After => c.span.last,
                Place::In(s) if s > c.span.last => c.span.last,
                Place::In(s) if s >= c.span.first => s,
                Place::In(_) | Place::Before => {
                    c.cur = None;
                    return Ok(());
                }
            };
            if let Some(p) = c.open(s) {
                if past_hi(target, &p.hi) {
                    p.last()?;
                } else {
                    p.it.seek_for_prev(target)?;
                    p.settle();
                }
                if p.ok {
                    return Ok(());
                }
            }
            match s.checked_sub(1) {
                Some(prev) if prev >= c.span.first => c.backward_from(prev),
                _ => {
                    c.cur = None;
                    Ok(())
                }
            }
        })
    }
    fn next(&mut self) -> Result<()> {
        self.guarded(|c| {
            let Some(p) = c.cur.as_mut().filter(|p| p.ok) else {
                return Ok(());
            };
            p.it.next()?;
            p.settle_next();
            if p.ok {
                return Ok(());
            }
            let s = p.stripe;
            c.forward_from(s + 1)
        })
    }
    fn prev(&mut self) -> Result<()> {
        self.guarded(|c| {
            let Some(p) = c.cur.as_mut().filter(|p| p.ok) else {
                return Ok(());
            };
            p.it.prev()?;
            p.settle_prev();
            if p.ok {
                return Ok(());
            }
            match p.stripe.checked_sub(1) {
                Some(prev) if prev >= c.span.first => c.backward_from(prev),
                _ => {
                    c.cur = None;
                    Ok(())
                }
            }
        })
    }
}
