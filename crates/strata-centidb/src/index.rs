//! [`Index`]: a secondary index of a collection. Entry key = `pack_int(idx)` +
//! `packs([index_tuple, record_key])`, empty value (`docs/format/centidb.md`).

use std::ops::Bound;
use std::sync::Arc;

use strata_key::codec::centidb::{CentidbCodec, KIND_SEP};
use strata_key::{Tuple, TupleCodec};
use strata_lsm::Direction;

use crate::codec;
use crate::collection::Collection;
use crate::doc::Doc;
use crate::error::{Error, Result};
use crate::iter::{Bounds, Query};
use crate::keyfn::ValueFn;
use crate::store::Inner;
use crate::txn::{self, Txn, TxnIter};

pub(crate) struct IndexState {
    pub name: String,
    pub idx: u64,
    pub prefix: Vec<u8>,
    pub func: ValueFn,
}

impl IndexState {
    pub fn new(name: &str, prefix: Vec<u8>, idx: u64, func: ValueFn) -> IndexState {
        IndexState {
            name: name.to_owned(),
            idx,
            prefix,
            func,
        }
    }

    /// `prefix + packs([index_tuple, record_key])`.
    pub fn entry_key(&self, itup: &Tuple, enc_key: &[u8]) -> Result<Vec<u8>> {
        let mut k = self.prefix.clone();
        CentidbCodec::new().encode_into(itup, &mut k)?;
        k.push(KIND_SEP);
        k.extend_from_slice(enc_key);
        Ok(k)
    }
}

/// Which entries of an index to read: `args` is one exact index tuple (centidb's `args`);
/// otherwise `lo`, `hi` (exclusive unless `include`) and `prefix` bound the index tuples.
/// Entries come in the order of their encodings: index-tuple order when the index tuples
/// have one length (an index tuple that is a proper prefix of another sorts after it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexQuery {
    /// Exactly this index tuple.
    pub args: Option<Tuple>,
    /// Lowest index tuple (inclusive).
    pub lo: Option<Tuple>,
    /// Highest index tuple (exclusive unless `include`).
    pub hi: Option<Tuple>,
    /// Index tuples starting with these elements.
    pub prefix: Option<Tuple>,
    /// Highest first.
    pub reverse: bool,
    /// At most this many entries.
    pub max: Option<usize>,
    /// `hi` is inclusive.
    pub include: bool,
}

impl IndexQuery {
    /// Every entry.
    pub fn all() -> IndexQuery {
        IndexQuery::default()
    }

    /// Entries of exactly this index tuple.
    pub fn args(t: Tuple) -> IndexQuery {
        IndexQuery {
            args: Some(t),
            ..IndexQuery::default()
        }
    }
}

/// An index of a collection.
#[derive(Clone)]
pub struct Index {
    coll: Collection,
    state: Arc<IndexState>,
}

impl Index {
    pub(crate) fn new(coll: Collection, state: Arc<IndexState>) -> Index {
        Index { coll, state }
    }

    /// The index name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The index's number (its key prefix is `pack_int(idx)`).
    pub fn idx(&self) -> u64 {
        self.state.idx
    }

    /// `(index tuple, record key)` pairs.
    pub fn pairs(&self, q: &IndexQuery) -> Result<Entries> {
        let txn = Txn::begin(&self.coll.store.engine)?;
        Entries::new(&self.state.prefix, &txn, q)
    }

    /// Index tuples.
    pub fn tups(&self, q: &IndexQuery) -> Result<impl Iterator<Item = Result<Tuple>>> {
        Ok(self.pairs(q)?.map(|r| r.map(|(t, _)| t)))
    }

    /// Record keys.
    pub fn keys(&self, q: &IndexQuery) -> Result<impl Iterator<Item = Result<Tuple>>> {
        Ok(self.pairs(q)?.map(|r| r.map(|(_, k)| k)))
    }

    /// `(record key, value)` of the records the entries name, read from the same snapshot.
    /// An entry whose record is missing (a stale entry, which Strata's writes never leave,
    /// but a store written by the original can hold) is skipped.
    pub fn items(&self, q: &IndexQuery) -> Result<IndexItems> {
        let txn = Txn::begin(&self.coll.store.engine)?;
        let entries = Entries::new(&self.state.prefix, &txn, q)?;
        Ok(IndexItems {
            coll: self.coll.clone(),
            txn,
            entries,
        })
    }

    /// Values of the records the entries name.
    pub fn values(&self, q: &IndexQuery) -> Result<impl Iterator<Item = Result<Doc>>> {
        Ok(self.items(q)?.map(|r| r.map(|(_, v)| v)))
    }

    /// The first record value.
    pub fn find(&self, q: &IndexQuery) -> Result<Option<Doc>> {
        self.values(q)?.next().transpose()
    }

    /// True when an entry with exactly the index tuple `x` exists.
    pub fn has(&self, x: &Tuple) -> Result<bool> {
        Ok(self
            .pairs(&IndexQuery::args(x.clone()))?
            .next()
            .transpose()?
            .is_some())
    }

    /// The first record whose entry has exactly the index tuple `x`.
    pub fn get(&self, x: &Tuple) -> Result<Option<Doc>> {
        self.find(&IndexQuery::args(x.clone()))
    }

    /// The number of entries.
    pub fn count(&self, q: &IndexQuery) -> Result<usize> {
        let mut n = 0;
        for e in self.pairs(q)? {
            e?;
            n += 1;
        }
        Ok(n)
    }
}

/// Index entries, decoded.
pub struct Entries {
    prefix: Vec<u8>,
    it: Option<TxnIter>,
    bounds: Bounds,
    remaining: Option<usize>,
}

impl Entries {
    fn new(prefix: &[u8], txn: &Txn, q: &IndexQuery) -> Result<Entries> {
        let with = |e: &[u8], tail: &[u8]| {
            let mut k = prefix.to_vec();
            k.extend_from_slice(e);
            k.extend_from_slice(tail);
            k
        };
        let (bounds, start, end) = if let Some(a) = &q.args {
            let e = codec::key::encode_key(a)?;
            let b = Bounds {
                lo: Bound::Included(e.clone()),
                hi: Bound::Included(e.clone()),
                prefix: None,
            };
            (
                b,
                Bound::Included(with(&e, &[KIND_SEP])),
                Bound::Excluded(with(&e, &[KIND_SEP + 1])),
            )
        } else {
            let b = Bounds::from_query(&Query {
                lo: q.lo.clone(),
                hi: q.hi.clone(),
                prefix: q.prefix.clone(),
                include: q.include,
                ..Query::default()
            })?;
            let start = match &b.lo {
                Bound::Included(e) | Bound::Excluded(e) => Bound::Included(with(e, &[])),
                Bound::Unbounded => Bound::Included(prefix.to_vec()),
            };
            let end = match &b.hi {
                // Entries of exactly hi continue with SEP.
                Bound::Included(e) => Bound::Excluded(with(e, &[KIND_SEP + 1])),
                Bound::Excluded(e) => Bound::Excluded(with(e, &[])),
                Bound::Unbounded => Inner::prefix_end(prefix),
            };
            (b, start, end)
        };
        let dir = if q.reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        };
        let it = if q.max == Some(0) {
            None
        } else {
            Some(txn.range(txn::range(start, end), dir)?)
        };
        Ok(Entries {
            prefix: prefix.to_vec(),
            it,
            bounds,
            remaining: q.max,
        })
    }

    fn next_entry(&mut self) -> Result<Option<(Tuple, Tuple)>> {
        loop {
            if self.remaining == Some(0) {
                return Ok(None);
            }
            let Some(it) = self.it.as_mut() else {
                return Ok(None);
            };
            let Some(item) = it.next().transpose()? else {
                self.it = None;
                return Ok(None);
            };
            let (itup, rkey) = parse_entry(&self.prefix, &item.key)?;
            let enc = CentidbCodec::new().encode(&itup)?;
            if !self.bounds.accepts(&enc, &itup) {
                continue;
            }
            if let Some(r) = self.remaining.as_mut() {
                *r -= 1;
            }
            return Ok(Some((itup, rkey)));
        }
    }
}

impl Iterator for Entries {
    type Item = Result<(Tuple, Tuple)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_entry() {
            Ok(x) => x.map(Ok),
            Err(e) => {
                self.it = None;
                Some(Err(e))
            }
        }
    }
}

/// Decodes an index entry key into (index tuple, record key).
pub fn parse_entry(prefix: &[u8], key: &[u8]) -> Result<(Tuple, Tuple)> {
    let what = || format!("index entry {}", hex::encode(key));
    let rest = key
        .strip_prefix(prefix)
        .ok_or_else(|| Error::corrupt(what(), "outside the index prefix"))?;
    let mut tuples = CentidbCodec::new()
        .decode_list(rest)
        .map_err(|e| Error::corrupt(what(), e.to_string()))?;
    if tuples.len() != 2 {
        return Err(Error::corrupt(
            what(),
            format!("holds {} tuples, not [index tuple, key]", tuples.len()),
        ));
    }
    let rkey = tuples.pop().unwrap_or_default();
    let itup = tuples.pop().unwrap_or_default();
    Ok((itup, rkey))
}

/// Iterator of [`Index::items`].
pub struct IndexItems {
    coll: Collection,
    txn: Txn,
    entries: Entries,
}

impl IndexItems {
    fn next_item(&mut self) -> Result<Option<(Tuple, Doc)>> {
        while let Some((_, rkey)) = self.entries.next_entry()? {
            let enc = codec::key::encode_key(&rkey)?;
            let loc = self.coll.locate(&mut self.txn, &enc)?;
            let Some(r) = loc.at else { continue };
            let Some(pos) = r.position(&enc) else {
                continue;
            };
            let mut data = self.coll.store.unpack(&r)?;
            let v = self
                .coll
                .encoder()
                .unpack(&std::mem::take(&mut data[pos]))?;
            return Ok(Some((rkey, v)));
        }
        Ok(None)
    }
}

impl Iterator for IndexItems {
    type Item = Result<(Tuple, Doc)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_item().transpose()
    }
}
