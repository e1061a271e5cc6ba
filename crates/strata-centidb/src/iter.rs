//! Reading a collection: [`Query`] (centidb's `key`, `lo`, `hi`, `prefix`, `reverse`, `max`,
//! `include`) and the iterators that walk physical records, single or batch, in either
//! direction.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use strata_key::Tuple;
use strata_lsm::Direction;

use crate::codec::{self, Encoder};
use crate::collection::Collection;
use crate::doc::Doc;
use crate::error::Result;
use crate::format::PhysRecord;
use crate::store::Inner;
use crate::txn::{self, Txn, TxnIter};

/// Which records to read. As in centidb: `key` selects one key (and overrides the rest),
/// `prefix` keys that start with a tuple, `lo` is inclusive, `hi` exclusive unless
/// `include`; `max` caps the count; `reverse` walks from the top. Unlike the original, a
/// falsy bound (`0`, `""`) is a bound, `prefix` matches whole tuple elements, `lo`/`hi`
/// narrow a `prefix`, and `max`/`reverse` apply with `key` too.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Exactly this key.
    pub key: Option<Tuple>,
    /// Lowest key (inclusive).
    pub lo: Option<Tuple>,
    /// Highest key (exclusive unless `include`).
    pub hi: Option<Tuple>,
    /// Keys starting with these elements.
    pub prefix: Option<Tuple>,
    /// Highest key first.
    pub reverse: bool,
    /// At most this many records.
    pub max: Option<usize>,
    /// `hi` is inclusive.
    pub include: bool,
}

impl Query {
    /// Every record.
    pub fn all() -> Query {
        Query::default()
    }

    /// One key.
    pub fn key(k: Tuple) -> Query {
        Query {
            key: Some(k),
            ..Query::default()
        }
    }
}

/// Bounds on encoded keys (without the collection prefix) and a tuple-prefix filter.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    pub lo: Bound<Vec<u8>>,
    pub hi: Bound<Vec<u8>>,
    pub prefix: Option<Tuple>,
}

impl Bounds {
    pub fn from_query(q: &Query) -> Result<Bounds> {
        let enc = |t: &Tuple| codec::key::encode_key(t);
        if let Some(k) = &q.key {
            let e = enc(k)?;
            return Ok(Bounds {
                lo: Bound::Included(e.clone()),
                hi: Bound::Included(e),
                prefix: None,
            });
        }
        let mut lo = match &q.lo {
            Some(t) => Bound::Included(enc(t)?),
            None => Bound::Unbounded,
        };
        let mut hi = match &q.hi {
            Some(t) if q.include => Bound::Included(enc(t)?),
            Some(t) => Bound::Excluded(enc(t)?),
            None => Bound::Unbounded,
        };
        if let Some(p) = &q.prefix {
            let pe = enc(p)?;
            if !matches!(&lo, Bound::Included(l) if *l >= pe) {
                lo = Bound::Included(pe.clone());
            }
            if let Some(end) = strata_key::range::prefix_end(&pe) {
                let tighter = match &hi {
                    Bound::Unbounded => true,
                    Bound::Included(h) => *h >= end,
                    Bound::Excluded(h) => *h > end,
                };
                if tighter {
                    hi = Bound::Excluded(end);
                }
            }
        }
        Ok(Bounds {
            lo,
            hi,
            prefix: q.prefix.clone().filter(|p| !p.is_empty()),
        })
    }

    pub fn above_lo(&self, enc: &[u8]) -> bool {
        match &self.lo {
            Bound::Included(l) => enc >= l.as_slice(),
            Bound::Excluded(l) => enc > l.as_slice(),
            Bound::Unbounded => true,
        }
    }

    pub fn below_hi(&self, enc: &[u8]) -> bool {
        match &self.hi {
            Bound::Included(h) => enc <= h.as_slice(),
            Bound::Excluded(h) => enc < h.as_slice(),
            Bound::Unbounded => true,
        }
    }

    pub fn accepts(&self, enc: &[u8], key: &Tuple) -> bool {
        self.above_lo(enc)
            && self.below_hi(enc)
            && self.prefix.as_ref().is_none_or(|p| key.starts_with(p))
    }
}

/// Logical records (members of single and batch records) in key order.
pub struct MemberIter {
    store: Arc<Inner>,
    coll_prefix: Vec<u8>,
    phys: Option<TxnIter>,
    bounds: Bounds,
    reverse: bool,
    remaining: Option<usize>,
    unpack: bool,
    pending: VecDeque<(Tuple, Vec<u8>)>,
}

impl MemberIter {
    pub(crate) fn new(coll: &Collection, q: &Query, unpack: bool) -> Result<MemberIter> {
        let bounds = Bounds::from_query(q)?;
        let prefix = coll.prefix().to_vec();
        let mut txn = Txn::begin(&coll.store.engine)?;
        let start = match &bounds.lo {
            Bound::Included(e) | Bound::Excluded(e) => Bound::Included(coll.phys_key(e)),
            Bound::Unbounded => Bound::Included(prefix.clone()),
        };
        let reverse = q.reverse;
        let end = match (&bounds.hi, reverse) {
            (Bound::Included(e) | Bound::Excluded(e), true) => {
                // The last record that can hold keys up to hi is the first one whose
                // highest key reaches hi (batches of tuple-prefixes of hi sort before it).
                match coll.locate(&mut txn, e)?.at {
                    Some(r) => Bound::Included(r.phys_key),
                    None => coll.end_bound(),
                }
            }
            _ => coll.end_bound(),
        };
        let dir = if reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        };
        let phys = if q.max == Some(0) {
            None
        } else {
            Some(txn.range(txn::range(start, end), dir)?)
        };
        Ok(MemberIter {
            store: Arc::clone(&coll.store),
            coll_prefix: prefix,
            phys,
            bounds,
            reverse,
            remaining: q.max,
            unpack,
            pending: VecDeque::new(),
        })
    }

    fn next_member(&mut self) -> Result<Option<(Tuple, Vec<u8>)>> {
        loop {
            if self.remaining == Some(0) {
                return Ok(None);
            }
            if let Some(x) = self.pending.pop_front() {
                if let Some(r) = self.remaining.as_mut() {
                    *r -= 1;
                }
                return Ok(Some(x));
            }
            let Some(phys) = self.phys.as_mut() else {
                return Ok(None);
            };
            let Some(item) = phys.next().transpose()? else {
                self.phys = None;
                continue;
            };
            let rec = PhysRecord::parse(&self.coll_prefix, item.key, item.value)?;
            // Runs ascend record by record: past the bound, nothing further matches.
            if (!self.reverse && !self.bounds.below_hi(&rec.lo().enc))
                || (self.reverse && !self.bounds.above_lo(&rec.hi().enc))
            {
                self.phys = None;
                continue;
            }
            let mut sel: Vec<usize> = (0..rec.members.len())
                .filter(|&i| {
                    self.bounds
                        .accepts(&rec.members[i].enc, &rec.members[i].key)
                })
                .collect();
            if sel.is_empty() {
                continue;
            }
            if self.reverse {
                sel.reverse();
            }
            let mut data = if self.unpack {
                self.store.unpack(&rec)?
            } else {
                Vec::new()
            };
            for i in sel {
                let d = data.get_mut(i).map(std::mem::take).unwrap_or_default();
                self.pending.push_back((rec.members[i].key.clone(), d));
            }
        }
    }
}

impl Iterator for MemberIter {
    type Item = Result<(Tuple, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_member() {
            Ok(x) => x.map(Ok),
            Err(e) => {
                self.phys = None;
                self.pending.clear();
                Some(Err(e))
            }
        }
    }
}

/// `(key, value)` pairs.
pub struct Items {
    inner: MemberIter,
    encoder: Arc<dyn Encoder>,
}

impl Items {
    pub(crate) fn new(inner: MemberIter, encoder: Arc<dyn Encoder>) -> Items {
        Items { inner, encoder }
    }

    /// The encoded values instead (the encoder's output).
    pub fn raw(self) -> MemberIter {
        self.inner
    }
}

impl Iterator for Items {
    type Item = Result<(Tuple, Doc)>;

    fn next(&mut self) -> Option<Self::Item> {
        let r = self.inner.next()?;
        Some(r.and_then(|(k, d)| Ok((k, self.encoder.unpack(&d)?))))
    }
}

/// Keys.
pub struct Keys {
    inner: MemberIter,
}

impl Keys {
    pub(crate) fn new(inner: MemberIter) -> Keys {
        Keys { inner }
    }
}

impl Iterator for Keys {
    type Item = Result<Tuple>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.inner.next()?.map(|(k, _)| k))
    }
}
