//! [`MergingIter`]: several iterators as one, in key order, with a lazily positioned heap.
//!
//! Children are ranked by their position in the vector: a lower index is newer. When several
//! children hold the same key, the merge yields it once, with the newest child's value
//! (tombstones included: hiding them is the database iterator's job).
//!
//! A child whose keys are known (through [`InternalIter::smallest`] / `largest`) to lie
//! beyond a seek target is not positioned by the seek: it enters the heap keyed by that bound
//! and is positioned only when the bound reaches the top. Children whose ranges follow one
//! another (the files of a level, stripes laid out in key order) are therefore read one
//! after the other, like a concatenation, and a short scan positions only what it reads.

use std::cmp::Ordering;

use super::InternalIter;
use crate::error::Result;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    Forward,
    Reverse,
}

/// Where a child stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Not in the heap: nothing to yield in the current direction.
    Out,
    /// In the heap keyed by its bound; positioned (by `lazy`) when it reaches the top.
    Pending,
    /// In the heap keyed by its current key.
    Placed,
}

/// How a pending child is positioned.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lazy {
    First,
    Last,
    Seek,
    SeekForPrev,
}

/// A merge of ranked iterators (see the module documentation). `I` is the children's type:
/// boxed trait objects by default, or a concrete type (the engine's one-stripe stack, see
/// [`crate::iter::StripeIter`]) so that calls into the children are static.
pub struct MergingIter<I = Box<dyn InternalIter>> {
    children: Vec<I>,
    state: Vec<State>,
    heap: Vec<u32>,
    dir: Dir,
    lazy: Lazy,
    /// Target of `lazy` for `Seek`/`SeekForPrev`.
    target: Vec<u8>,
    /// Scratch: the current key while children move past it.
    kbuf: Vec<u8>,
    /// Children whose bounds are the merge's bounds (`None`: some child has none).
    lo_child: Option<usize>,
    hi_child: Option<usize>,
    /// Child positionings since the last seek.
    positioned: usize,
}

/// The child whose bound (`f`) is the extreme one in the `want` direction; `None` when some
/// child has no bound.
fn pick<I: InternalIter>(
    children: &[I],
    f: impl Fn(&I) -> Option<&[u8]>,
    want: Ordering,
) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, c) in children.iter().enumerate() {
        let b = f(c)?;
        if best.is_none_or(|j| f(&children[j]).is_some_and(|o| b.cmp(o) == want)) {
            best = Some(i);
        }
    }
    best
}

impl<I: InternalIter> MergingIter<I> {
    /// Merges `children`; the index of a child is its rank (lower = newer).
    pub fn new(children: Vec<I>) -> MergingIter<I> {
        let n = children.len();
        let lo_child = pick(&children, |c| c.smallest(), Ordering::Less);
        let hi_child = pick(&children, |c| c.largest(), Ordering::Greater);
        MergingIter {
            children,
            state: vec![State::Out; n],
            heap: Vec::with_capacity(n),
            dir: Dir::Forward,
            lazy: Lazy::First,
            target: Vec::new(),
            kbuf: Vec::new(),
            lo_child,
            hi_child,
            positioned: 0,
        }
    }

    /// Number of children.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// True when there is no child.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Number of child positionings since the last seek (for tests and statistics).
    pub fn positioned(&self) -> usize {
        self.positioned
    }

    fn bound(&self, c: usize) -> &[u8] {
        let b = match self.dir {
            Dir::Forward => self.children[c].smallest(),
            Dir::Reverse => self.children[c].largest(),
        };
        b.unwrap_or_default()
    }

    fn hkey(&self, c: usize) -> &[u8] {
        match self.state[c] {
            State::Placed => self.children[c].key(),
            _ => self.bound(c),
        }
    }

    /// True when child `a` belongs above child `b` in the heap.
    fn above(&self, a: u32, b: u32) -> bool {
        let (a, b) = (a as usize, b as usize);
        let (ka, kb) = (self.hkey(a), self.hkey(b));
        let ord = match self.dir {
            Dir::Forward => ka.cmp(kb),
            Dir::Reverse => kb.cmp(ka),
        };
        match ord {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => {
                // A pending child may hold this key too, with a better rank: resolve it first.
                let (pa, pb) = (
                    self.state[a] == State::Pending,
                    self.state[b] == State::Pending,
                );
                if pa != pb {
                    pa
                } else {
                    a < b
                }
            }
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let p = (i - 1) / 2;
            if !self.above(self.heap[i], self.heap[p]) {
                break;
            }
            self.heap.swap(i, p);
            i = p;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.above(self.heap[r], self.heap[l]) {
                r
            } else {
                l
            };
            if !self.above(self.heap[c], self.heap[i]) {
                break;
            }
            self.heap.swap(i, c);
            i = c;
        }
    }

    fn push(&mut self, c: usize, s: State) {
        self.state[c] = s;
        self.heap.push(c as u32);
        let last = self.heap.len() - 1;
        self.sift_up(last);
    }

    fn remove_top(&mut self) {
        if let Some(&top) = self.heap.first() {
            self.state[top as usize] = State::Out;
        }
        let Some(last) = self.heap.pop() else {
            return;
        };
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down(0);
        }
    }

    fn clear(&mut self) {
        self.positioned = 0;
        self.heap.clear();
        self.state.iter_mut().for_each(|s| *s = State::Out);
    }

    /// After moving the top child: re-sift it, or drop it when exhausted.
    fn fix_top(&mut self) {
        let Some(&top) = self.heap.first() else {
            return;
        };
        if self.children[top as usize].valid() {
            self.state[top as usize] = State::Placed;
            self.sift_down(0);
        } else {
            self.remove_top();
        }
    }

    /// Positions pending children that reach the top until the top is a placed child.
    fn settle(&mut self) -> Result<()> {
        while let Some(&top) = self.heap.first() {
            let c = top as usize;
            if self.state[c] == State::Placed {
                return Ok(());
            }
            let child = &mut self.children[c];
            let r = match self.lazy {
                Lazy::First => child.seek_to_first(),
                Lazy::Last => child.seek_to_last(),
                Lazy::Seek => child.seek(&self.target),
                Lazy::SeekForPrev => child.seek_for_prev(&self.target),
            };
            self.positioned += 1;
            if let Err(e) = r {
                self.clear();
                return Err(e);
            }
            self.fix_top();
        }
        Ok(())
    }

    /// Places child `c` if the positioning `r` left it valid.
    fn place(&mut self, c: usize, r: Result<()>) -> Result<()> {
        self.positioned += 1;
        if let Err(e) = r {
            self.clear();
            return Err(e);
        }
        if self.children[c].valid() {
            self.push(c, State::Placed);
        }
        Ok(())
    }

    /// Repositions every child for a forward walk from `target` (`None`: from the start);
    /// `after`: strictly after `target`.
    fn start_forward(&mut self, target: Option<&[u8]>, after: bool) -> Result<()> {
        self.clear();
        self.dir = Dir::Forward;
        self.target.clear();
        if let Some(t) = target {
            self.target.extend_from_slice(t);
        }
        self.lazy = if target.is_some() {
            Lazy::Seek
        } else {
            Lazy::First
        };
        for c in 0..self.children.len() {
            let child = &self.children[c];
            let Some(t) = target else {
                if child.smallest().is_some() {
                    self.push(c, State::Pending);
                } else {
                    let r = self.children[c].seek_to_first();
                    self.place(c, r)?;
                }
                continue;
            };
            if child.largest().is_some_and(|l| l < t || (after && l == t)) {
                continue;
            }
            if child.smallest().is_some_and(|s| s > t) {
                self.push(c, State::Pending);
                continue;
            }
            let child = &mut self.children[c];
            let mut r = child.seek(t);
            if r.is_ok() && after && child.valid() && child.key() == t {
                r = child.next();
            }
            self.place(c, r)?;
        }
        self.settle()
    }

    /// Repositions every child for a backward walk from `target` (`None`: from the end);
    /// `before`: strictly before `target`.
    fn start_reverse(&mut self, target: Option<&[u8]>, before: bool) -> Result<()> {
        self.clear();
        self.dir = Dir::Reverse;
        self.target.clear();
        if let Some(t) = target {
            self.target.extend_from_slice(t);
        }
        self.lazy = if target.is_some() {
            Lazy::SeekForPrev
        } else {
            Lazy::Last
        };
        for c in 0..self.children.len() {
            let child = &self.children[c];
            let Some(t) = target else {
                if child.largest().is_some() {
                    self.push(c, State::Pending);
                } else {
                    let r = self.children[c].seek_to_last();
                    self.place(c, r)?;
                }
                continue;
            };
            if child
                .smallest()
                .is_some_and(|s| s > t || (before && s == t))
            {
                continue;
            }
            if child.largest().is_some_and(|l| l < t) {
                self.push(c, State::Pending);
                continue;
            }
            let child = &mut self.children[c];
            let mut r = child.seek_for_prev(t);
            if r.is_ok() && before && child.valid() && child.key() == t {
                r = child.prev();
            }
            self.place(c, r)?;
        }
        self.settle()
    }

    /// Moves every child that holds the current key one step (in the current direction).
    fn step_past_current(&mut self) -> Result<()> {
        let Some(&top) = self.heap.first() else {
            return Ok(());
        };
        self.kbuf.clear();
        self.kbuf
            .extend_from_slice(self.children[top as usize].key());
        while let Some(&top) = self.heap.first() {
            let c = top as usize;
            if self.state[c] != State::Placed || self.children[c].key() != self.kbuf.as_slice() {
                break;
            }
            let r = match self.dir {
                Dir::Forward => self.children[c].next(),
                Dir::Reverse => self.children[c].prev(),
            };
            if let Err(e) = r {
                self.clear();
                return Err(e);
            }
            self.fix_top();
        }
        self.settle()
    }
}

impl<I: InternalIter> InternalIter for MergingIter<I> {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn key(&self) -> &[u8] {
        match self.heap.first() {
            Some(&c) => self.children[c as usize].key(),
            None => &[],
        }
    }

    fn value(&self) -> Option<&[u8]> {
        let c = *self.heap.first()?;
        self.children[c as usize].value()
    }

    #[inline]
    fn entry(&self) -> Option<super::EntryRef<'_>> {
        let c = *self.heap.first()?;
        self.children[c as usize].entry()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.start_forward(None, false)
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.start_reverse(None, false)
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.start_forward(Some(target), false)
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.start_reverse(Some(target), false)
    }

    fn next(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        if self.dir == Dir::Reverse {
            let k = self.key().to_vec();
            return self.start_forward(Some(&k), true);
        }
        self.step_past_current()
    }

    fn prev(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        if self.dir == Dir::Forward {
            let k = self.key().to_vec();
            return self.start_reverse(Some(&k), true);
        }
        self.step_past_current()
    }

    fn smallest(&self) -> Option<&[u8]> {
        self.children[self.lo_child?].smallest()
    }

    fn largest(&self) -> Option<&[u8]> {
        self.children[self.hi_child?].largest()
    }

    fn set_read_bound(&mut self, bound: Option<std::sync::Arc<[u8]>>) {
        for c in &mut self.children {
            c.set_read_bound(bound.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::testing::{check_ops, key, ops, value, Model};
    use crate::iter::LevelIter;
    use crate::memtable::Memtable;
    use crate::sst::iter::{testing::table, SstIter};
    use proptest::prelude::*;
    use std::sync::Arc;

    /// A vector-backed iterator, optionally announcing bounds (to exercise laziness) and
    /// counting positionings.
    struct VecIter {
        e: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        at: Option<usize>,
        bounds: bool,
    }

    impl InternalIter for VecIter {
        fn valid(&self) -> bool {
            self.at.is_some()
        }
        fn key(&self) -> &[u8] {
            self.at.map_or(&[], |i| &self.e[i].0)
        }
        fn value(&self) -> Option<&[u8]> {
            self.at.and_then(|i| self.e[i].1.as_deref())
        }
        fn seek_to_first(&mut self) -> Result<()> {
            self.at = (!self.e.is_empty()).then_some(0);
            Ok(())
        }
        fn seek_to_last(&mut self) -> Result<()> {
            self.at = self.e.len().checked_sub(1);
            Ok(())
        }
        fn seek(&mut self, t: &[u8]) -> Result<()> {
            let i = self.e.partition_point(|x| x.0.as_slice() < t);
            self.at = (i < self.e.len()).then_some(i);
            Ok(())
        }
        fn seek_for_prev(&mut self, t: &[u8]) -> Result<()> {
            self.at = self
                .e
                .partition_point(|x| x.0.as_slice() <= t)
                .checked_sub(1);
            Ok(())
        }
        fn next(&mut self) -> Result<()> {
            self.at = self.at.map(|i| i + 1).filter(|i| *i < self.e.len());
            Ok(())
        }
        fn prev(&mut self) -> Result<()> {
            self.at = self.at.and_then(|i| i.checked_sub(1));
            Ok(())
        }
        fn smallest(&self) -> Option<&[u8]> {
            if self.bounds {
                self.e.first().map(|x| x.0.as_slice())
            } else {
                None
            }
        }
        fn largest(&self) -> Option<&[u8]> {
            if self.bounds {
                self.e.last().map(|x| x.0.as_slice())
            } else {
                None
            }
        }
    }

    fn layers() -> impl Strategy<Value = Vec<(Model, bool)>> {
        proptest::collection::vec(
            (
                proptest::collection::btree_map(key(), value(), 0..15),
                any::<bool>(),
            ),
            0..6,
        )
    }

    /// The newest layer's entry wins.
    fn merged(layers: &[(Model, bool)]) -> Model {
        let mut m = Model::new();
        for (l, _) in layers.iter().rev() {
            for (k, v) in l {
                m.insert(k.clone(), v.clone());
            }
        }
        m
    }

    fn vec_iters(layers: &[(Model, bool)]) -> Vec<Box<dyn InternalIter>> {
        layers
            .iter()
            .map(|(l, b)| {
                Box::new(VecIter {
                    e: l.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    at: None,
                    bounds: *b,
                }) as Box<dyn InternalIter>
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn merge_matches_model(layers in layers(), ops in ops()) {
            let want = merged(&layers);
            let mut it = MergingIter::new(vec_iters(&layers));
            check_ops(&mut it, &want, &ops)?;
        }

        /// Nested merges (stripes of merges), as the engine builds them.
        #[test]
        fn nested_merge_matches_model(a in layers(), b in layers(), ops in ops()) {
            // Two groups with disjoint keys: group 0 keys start with 0x00.., group 1 others.
            let split = |ls: &[(Model, bool)], low: bool| -> Vec<(Model, bool)> {
                ls.iter().map(|(m, bd)| (m.iter().filter(|(k, _)| (k.first() == Some(&0)) == low)
                    .map(|(k, v)| (k.clone(), v.clone())).collect(), *bd)).collect()
            };
            let (g0, g1) = (split(&a, true), split(&b, false));
            let mut want = merged(&g0);
            want.extend(merged(&g1));
            let mut it = MergingIter::new(vec![
                Box::new(MergingIter::new(vec_iters(&g0))),
                Box::new(MergingIter::new(vec_iters(&g1))),
            ]);
            check_ops(&mut it, &want, &ops)?;
        }

        /// The real sources together: a memtable at a snapshot over two SSTs and a level.
        #[test]
        fn merge_of_real_sources(vs in crate::iter::testing::versions(), snap in 0u64..12,
                                 t1 in proptest::collection::btree_map(key(), value(), 0..20),
                                 t2 in proptest::collection::btree_map(key(), value(), 0..20),
                                 ops in ops()) {
            let dir = tempfile::tempdir().unwrap();
            let mem = Arc::new(Memtable::new());
            for (k, s, v) in &vs {
                mem.insert_refs(*s, std::iter::once((k.as_slice(), v.as_deref())));
            }
            let top = crate::iter::testing::model_at(&vs, snap);
            let mut children: Vec<Box<dyn InternalIter>> = vec![Box::new(mem.iter(snap))];
            let mut want = Model::new();
            if !t2.is_empty() {
                children.push(Box::new(SstIter::new(table(dir.path(), 2, &t2, 40))));
            }
            if !t1.is_empty() {
                let half = t1.len() / 2;
                let a: Model = t1.iter().take(half).map(|(k, v)| (k.clone(), v.clone())).collect();
                let b: Model = t1.iter().skip(half).map(|(k, v)| (k.clone(), v.clone())).collect();
                let mut files = Vec::new();
                for (i, part) in [a, b].into_iter().enumerate() {
                    if !part.is_empty() {
                        files.push(table(dir.path(), 10 + i as u64, &part, 40));
                    }
                }
                children.push(Box::new(LevelIter::new(files)));
            }
            want.extend(t1);
            want.extend(t2);
            want.extend(top);
            let mut it = MergingIter::new(children);
            check_ops(&mut it, &want, &ops)?;
        }
    }

    /// Children laid out in key order are positioned one at a time: a short scan from a
    /// seek touches only the children it reads.
    #[test]
    fn ordered_children_are_positioned_lazily() {
        let children: Vec<Box<dyn InternalIter>> = (0..50u8)
            .map(|s| {
                Box::new(VecIter {
                    e: (0..10u8).map(|i| (vec![s, i], Some(vec![i]))).collect(),
                    at: None,
                    bounds: true,
                }) as Box<dyn InternalIter>
            })
            .collect();
        let mut it = MergingIter::new(children);
        it.seek(&[20, 5]).unwrap();
        for _ in 0..7 {
            it.next().unwrap();
        }
        assert_eq!(it.key(), &[21, 2]);
        assert_eq!(it.positioned(), 2, "only stripes 20 and 21 positioned");
        it.seek_for_prev(&[30, 1]).unwrap();
        it.prev().unwrap();
        it.prev().unwrap();
        assert_eq!(it.key(), &[29, 9]);
        assert_eq!(it.positioned(), 2, "only stripes 30 and 29 positioned");
    }
}
