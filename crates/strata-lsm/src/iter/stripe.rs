//! [`StripeIter`]: the sources of one stripe (memtables, L0 files, deeper levels) as one
//! iterator of a concrete type.
//!
//! A table Query or a scan segment reads one stripe at a time. Built from trait objects, every
//! `next`/`valid`/`key`/`value` of such a read went through one virtual call per layer (the
//! stripe's merge or single source, then the concatenation of stripes). Here the layers are
//! enums and generics: the calls from the database iterator down to the block iterator are
//! static, so the compiler can inline them. The behaviour is that of the trait-object stack
//! (`same_as_the_dyn_stack` checks it).

use super::{InternalIter, LevelIter, MergingIter};
use crate::error::Result;
use crate::memtable::MemIter;
use crate::sst::iter::SstIter;

/// One source of a stripe.
pub enum SourceIter {
    /// A memtable at a snapshot.
    Mem(MemIter),
    /// One L0 file.
    Sst(SstIter),
    /// The files of one deeper level.
    Level(LevelIter),
}

/// Calls `$body` on the source inside, whatever its kind.
macro_rules! on_source {
    ($self:expr, $it:ident => $body:expr) => {
        match $self {
            SourceIter::Mem($it) => $body,
            SourceIter::Sst($it) => $body,
            SourceIter::Level($it) => $body,
        }
    };
}

impl InternalIter for SourceIter {
    #[inline]
    fn valid(&self) -> bool {
        on_source!(self, i => i.valid())
    }
    #[inline]
    fn key(&self) -> &[u8] {
        on_source!(self, i => i.key())
    }
    #[inline]
    fn value(&self) -> Option<&[u8]> {
        on_source!(self, i => i.value())
    }
    #[inline]
    fn entry(&self) -> Option<super::EntryRef<'_>> {
        on_source!(self, i => i.entry())
    }
    fn seek_to_first(&mut self) -> Result<()> {
        on_source!(self, i => i.seek_to_first())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        on_source!(self, i => i.seek_to_last())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        on_source!(self, i => i.seek(target))
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        on_source!(self, i => i.seek_for_prev(target))
    }
    #[inline]
    fn next(&mut self) -> Result<()> {
        on_source!(self, i => i.next())
    }
    #[inline]
    fn prev(&mut self) -> Result<()> {
        on_source!(self, i => i.prev())
    }
    fn smallest(&self) -> Option<&[u8]> {
        on_source!(self, i => i.smallest())
    }
    fn largest(&self) -> Option<&[u8]> {
        on_source!(self, i => i.largest())
    }
    fn set_read_bound(&mut self, bound: Option<std::sync::Arc<[u8]>>) {
        on_source!(self, i => i.set_read_bound(bound))
    }
}

/// The sources of one stripe: the source itself when there is only one (a compacted stripe:
/// one level), else their merge, newest first.
pub enum StripeIter {
    /// The only source.
    One(SourceIter),
    /// Several sources (or none: an empty merge is never valid).
    Merge(MergingIter<SourceIter>),
}

impl StripeIter {
    /// The iterator over `sources`, newest first.
    pub fn new(mut sources: Vec<SourceIter>) -> StripeIter {
        if sources.len() == 1 {
            if let Some(only) = sources.pop() {
                return StripeIter::One(only);
            }
        }
        StripeIter::Merge(MergingIter::new(sources))
    }
}

/// Calls `$body` on the iterator inside, whatever its kind.
macro_rules! on_stripe {
    ($self:expr, $it:ident => $body:expr) => {
        match $self {
            StripeIter::One($it) => $body,
            StripeIter::Merge($it) => $body,
        }
    };
}

impl InternalIter for StripeIter {
    #[inline]
    fn valid(&self) -> bool {
        on_stripe!(self, i => i.valid())
    }
    #[inline]
    fn key(&self) -> &[u8] {
        on_stripe!(self, i => i.key())
    }
    #[inline]
    fn value(&self) -> Option<&[u8]> {
        on_stripe!(self, i => i.value())
    }
    #[inline]
    fn entry(&self) -> Option<super::EntryRef<'_>> {
        on_stripe!(self, i => i.entry())
    }
    fn seek_to_first(&mut self) -> Result<()> {
        on_stripe!(self, i => i.seek_to_first())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        on_stripe!(self, i => i.seek_to_last())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        on_stripe!(self, i => i.seek(target))
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        on_stripe!(self, i => i.seek_for_prev(target))
    }
    #[inline]
    fn next(&mut self) -> Result<()> {
        on_stripe!(self, i => i.next())
    }
    #[inline]
    fn prev(&mut self) -> Result<()> {
        on_stripe!(self, i => i.prev())
    }
    fn smallest(&self) -> Option<&[u8]> {
        on_stripe!(self, i => i.smallest())
    }
    fn largest(&self) -> Option<&[u8]> {
        on_stripe!(self, i => i.largest())
    }
    fn set_read_bound(&mut self, bound: Option<std::sync::Arc<[u8]>>) {
        on_stripe!(self, i => i.set_read_bound(bound))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::testing::{apply, check_ops, key, model_at, ops, value, versions, Model};
    use crate::memtable::Memtable;
    use crate::sst::iter::testing::table;
    use crate::sst::table::Table;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// The sources of a stripe, built twice: as concrete sources and as trait objects.
    struct Stripe {
        _dir: tempfile::TempDir,
        mem: Arc<Memtable>,
        snap: u64,
        l0: Vec<Arc<Table>>,
        level: Vec<Arc<Table>>,
    }

    fn stripe(
        vs: &[crate::iter::testing::Version],
        snap: u64,
        l0: &[Model],
        level: &Model,
    ) -> Stripe {
        let dir = tempfile::tempdir().unwrap();
        let mem = Arc::new(Memtable::new());
        for (k, s, v) in vs {
            mem.insert_refs(*s, std::iter::once((k.as_slice(), v.as_deref())));
        }
        let mut id = 1;
        let mut file = |m: &Model| {
            id += 1;
            table(dir.path(), id, m, 40)
        };
        let l0: Vec<_> = l0.iter().filter(|m| !m.is_empty()).map(&mut file).collect();
        let entries: Vec<_> = level.iter().collect();
        let level: Vec<_> = entries
            .chunks(3)
            .map(|c| {
                file(
                    &c.iter()
                        .map(|(k, v)| ((*k).clone(), (*v).clone()))
                        .collect(),
                )
            })
            .collect();
        Stripe {
            _dir: dir,
            mem,
            snap,
            l0,
            level,
        }
    }

    impl Stripe {
        fn concrete(&self, with_mem: bool) -> StripeIter {
            let mut s = Vec::new();
            if with_mem {
                s.push(SourceIter::Mem(self.mem.iter(self.snap)));
            }
            s.extend(
                self.l0
                    .iter()
                    .map(|t| SourceIter::Sst(SstIter::new(Arc::clone(t)))),
            );
            if !self.level.is_empty() {
                s.push(SourceIter::Level(LevelIter::new(self.level.clone())));
            }
            StripeIter::new(s)
        }

        fn dynamic(&self, with_mem: bool) -> Box<dyn InternalIter> {
            let mut s: Vec<Box<dyn InternalIter>> = Vec::new();
            if with_mem {
                s.push(Box::new(self.mem.iter(self.snap)));
            }
            for t in &self.l0 {
                s.push(Box::new(SstIter::new(Arc::clone(t))));
            }
            if !self.level.is_empty() {
                s.push(Box::new(LevelIter::new(self.level.clone())));
            }
            Box::new(MergingIter::new(s))
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// The concrete stack and the trait-object stack over the same sources agree after
        /// every call (position, key, value, bounds), both directions, seeks included.
        #[test]
        fn same_as_the_dyn_stack(vs in versions(), snap in 0u64..12, with_mem in any::<bool>(),
                                 l0 in proptest::collection::vec(
                                     proptest::collection::btree_map(key(), value(), 0..12), 0..3),
                                 level in proptest::collection::btree_map(key(), value(), 0..20),
                                 ops in ops()) {
            let s = stripe(&vs, snap, &l0, &level);
            // The model: the level, then L0 oldest to newest, then the memtable on top.
            let mut want = level.clone();
            for m in l0.iter().rev() {
                want.extend(m.clone());
            }
            if with_mem {
                want.extend(model_at(&vs, snap));
            }
            check_ops(&mut s.concrete(with_mem), &want, &ops)?;
            let (mut a, mut b) = (s.concrete(with_mem), s.dynamic(with_mem));
            prop_assert_eq!(a.smallest(), b.smallest());
            prop_assert_eq!(a.largest(), b.largest());
            for (i, op) in ops.iter().enumerate() {
                apply(&mut a, op).unwrap();
                apply(b.as_mut(), op).unwrap();
                prop_assert_eq!(a.valid(), b.valid(), "op {} {:?}", i, op);
                prop_assert_eq!(a.key(), b.key(), "op {} {:?}", i, op);
                prop_assert_eq!(a.value(), b.value(), "op {} {:?}", i, op);
            }
        }
    }
}
