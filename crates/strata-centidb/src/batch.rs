//! `Collection::batch`: packing runs of records into batch records.

use std::ops::Bound;

use strata_key::codec::centidb::KIND_SEP;
use strata_key::Tuple;
use strata_lsm::Direction;

use crate::codec;
use crate::collection::Collection;
use crate::doc::Doc;
use crate::error::{Error, Result};
use crate::format::{self, PhysRecord};
use crate::iter::{Bounds, Query};
use crate::keyfn::ValueFn;
use crate::txn::{self, Txn, TxnIter};

/// What to batch and how (centidb's `batch()` arguments).
#[derive(Clone)]
pub struct BatchOptions {
    /// Lowest key (inclusive).
    pub lo: Option<Tuple>,
    /// Highest key (inclusive, as the original's `batch` reads it).
    pub hi: Option<Tuple>,
    /// Keys starting with these elements.
    pub prefix: Option<Tuple>,
    /// Most records in one batch.
    pub max_recs: Option<usize>,
    /// Most bytes of one batch record's value (checked by packing after each append).
    pub max_bytes: Option<usize>,
    /// Leave existing batches alone (a batch in the range ends the run being built).
    /// Otherwise their members join the runs.
    pub preserve: bool,
    /// The packer (by name; default `plain`).
    pub packer: Option<String>,
    /// Visit at most this many physical records (then resume from `last_key`).
    pub max_phys: Option<usize>,
    /// A new batch starts whenever `grouper(value)` changes.
    pub grouper: Option<ValueFn>,
}

impl Default for BatchOptions {
    fn default() -> BatchOptions {
        BatchOptions {
            lo: None,
            hi: None,
            prefix: None,
            max_recs: None,
            max_bytes: None,
            preserve: true,
            packer: None,
            max_phys: None,
            grouper: None,
        }
    }
}

/// What [`Collection::batch`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchReport {
    /// Records now inside batch records made by this call.
    pub found: usize,
    /// Batch records made.
    pub made: usize,
    /// The last key visited (resume from it with `lo` after a `max_phys` stop).
    pub last_key: Option<Tuple>,
}

struct RunItem {
    enc: Vec<u8>,
    data: Vec<u8>,
}

/// True when a batch ending at member `m` may precede (physically) a record whose first
/// key is encoded `next`: a batch key continues `m` with SEP (0x66), so a key that extends
/// `m` by more tuple elements (next byte: a kind byte, below 0x66) would sort before it.
fn may_end_batch(m: &[u8], next: Option<&[u8]>) -> bool {
    match next {
        Some(n) => !(n.len() > m.len() && n.starts_with(m) && n[m.len()] < KIND_SEP),
        None => true,
    }
}

struct Batcher<'a> {
    coll: &'a Collection,
    packer: std::sync::Arc<dyn codec::Packer>,
    packer_idx: u64,
    report: BatchReport,
}

impl Batcher<'_> {
    fn batch_value(&self, run: &[RunItem]) -> Result<Vec<u8>> {
        let lengths: Vec<usize> = run.iter().map(|r| r.data.len()).collect();
        let concat: Vec<u8> = run.iter().flat_map(|r| r.data.iter().copied()).collect();
        Ok(format::batch_value(
            &lengths,
            self.packer_idx,
            &self.packer.pack(&concat)?,
        ))
    }

    /// Writes the whole run as batches (and singles where a batch would break the order
    /// of physical records); `next` is the first key after the run.
    fn close(&mut self, txn: &mut Txn, run: &mut Vec<RunItem>, next: Option<&[u8]>) -> Result<()> {
        while !run.is_empty() {
            let n = run.len();
            let following = |j: usize| {
                if j < n {
                    Some(run[j].enc.as_slice())
                } else {
                    next
                }
            };
            let cut = (1..=n)
                .rev()
                .find(|&j| may_end_batch(&run[j - 1].enc, following(j)))
                .unwrap_or(1);
            if cut == 1 {
                let item = run.remove(0);
                let v = format::single_value(self.packer_idx, &self.packer.pack(&item.data)?);
                txn.put(self.coll.phys_key(&item.enc), v);
            } else {
                let encs: Vec<&[u8]> = run[..cut].iter().map(|r| r.enc.as_slice()).collect();
                let key = format::key_list(self.coll.prefix(), &encs);
                let value = self.batch_value(&run[..cut])?;
                txn.put(key, value);
                self.report.found += cut;
                self.report.made += 1;
                run.drain(..cut);
            }
        }
        Ok(())
    }
}

struct Stream {
    it: TxnIter,
    prefix: Vec<u8>,
    peeked: Option<(PhysRecord, bool)>,
}

impl Stream {
    fn peek(&mut self) -> Result<Option<&PhysRecord>> {
        if self.peeked.is_none() {
            if let Some(item) = self.it.next().transpose()? {
                let rec = PhysRecord::parse(&self.prefix, item.key, item.value)?;
                self.peeked = Some((rec, item.from_snapshot));
            }
        }
        Ok(self.peeked.as_ref().map(|(r, _)| r))
    }

    fn next(&mut self) -> Result<Option<PhysRecord>> {
        self.peek()?;
        Ok(self.peeked.take().map(|(r, _)| r))
    }
}

impl Collection {
    /// Packs runs of records in `lo..=hi` (or `prefix`) into batch records. Reads see
    /// through batches; a put or delete of a member splits its batch. Each batch is
    /// written together with the removal of the records it replaces; a long call commits
    /// in parts, each consistent on its own.
    pub fn batch(&self, o: &BatchOptions) -> Result<BatchReport> {
        if o.max_recs.is_none() && o.max_bytes.is_none() {
            return Err(Error::Invalid(
                "batch needs max_recs and/or max_bytes".into(),
            ));
        }
        if o.max_recs == Some(0) || o.max_bytes == Some(0) {
            return Err(Error::Invalid("batch limits must be positive".into()));
        }
        let packer_name = o.packer.as_deref().unwrap_or("plain");
        let packer = self.store.packer_named(packer_name)?;
        let packer_idx = self.store.ensure_idx(packer_name)?;
        let bounds = Bounds::from_query(&Query {
            lo: o.lo.clone(),
            hi: o.hi.clone(),
            prefix: o.prefix.clone(),
            include: true,
            ..Query::default()
        })?;
        let _guard = self.store.write_guard();
        let mut txn = Txn::begin(&self.store.engine)?;
        let start = match &bounds.lo {
            Bound::Included(e) | Bound::Excluded(e) => Bound::Included(self.phys_key(e)),
            Bound::Unbounded => Bound::Included(self.prefix().to_vec()),
        };
        let mut stream = Stream {
            it: txn.range(txn::range(start, self.end_bound()), Direction::Forward)?,
            prefix: self.prefix().to_vec(),
            peeked: None,
        };
        let mut b = Batcher {
            coll: self,
            packer,
            packer_idx,
            report: BatchReport::default(),
        };
        let mut run: Vec<RunItem> = Vec::new();
        let mut group: Option<Doc> = None;
        let mut full = false;
        let mut visited = 0usize;
        // The first member above the range of a batch record split by this call.
        let mut split_next: Option<Vec<u8>> = None;
        let commit_bytes = self.store.opts.batch_commit_bytes;
        loop {
            if o.max_phys.is_some_and(|m| visited >= m) {
                break;
            }
            let Some(rec) = stream.next()? else { break };
            visited += 1;
            let in_range: Vec<usize> = (0..rec.members.len())
                .filter(|&i| bounds.accepts(&rec.members[i].enc, &rec.members[i].key))
                .collect();
            if in_range.is_empty() {
                if !bounds.below_hi(&rec.lo().enc) {
                    // The first record past the range: it follows the last run.
                    stream.peeked = Some((rec, true));
                    break;
                }
                continue;
            }
            txn.observe(&rec.phys_key, Some(&rec.value));
            if rec.is_batch() && o.preserve {
                b.close(&mut txn, &mut run, Some(&rec.lo().enc))?;
                full = false;
                group = None;
                continue;
            }
            let mut data = self.store.unpack(&rec)?;
            txn.delete(rec.phys_key.clone());
            for (i, m) in rec.members.iter().enumerate() {
                if !in_range.contains(&i) {
                    txn.put(
                        self.phys_key(&m.enc),
                        format::single_value(codec::PLAIN_IDX, &data[i]),
                    );
                }
            }
            // Members above the range, now single records the stream does not see, are
            // the keys that follow the run (the stream's next record lies beyond them).
            split_next = in_range
                .last()
                .and_then(|&l| rec.members.get(l + 1))
                .map(|m| m.enc.clone());
            for i in in_range {
                let m = &rec.members[i];
                let item = RunItem {
                    enc: m.enc.clone(),
                    data: std::mem::take(&mut data[i]),
                };
                b.report.last_key = Some(m.key.clone());
                if full {
                    b.close(&mut txn, &mut run, Some(&item.enc))?;
                    full = false;
                }
                if let Some(g) = &o.grouper {
                    let v = self.encoder().unpack(&item.data)?;
                    let gv = g(&v).map_err(|r| Error::Function {
                        what: format!("grouper of {}", self.name()),
                        reason: r,
                    })?;
                    if !run.is_empty() && !group.as_ref().is_some_and(|p| p.py_eq(&gv)) {
                        b.close(&mut txn, &mut run, Some(&item.enc))?;
                    }
                    group = Some(gv);
                }
                run.push(item);
                if let Some(max) = o.max_bytes {
                    if run.len() > 1 && b.batch_value(&run)?.len() > max {
                        let last = run
                            .pop()
                            .ok_or_else(|| Error::Invalid("empty run".into()))?;
                        b.close(&mut txn, &mut run, Some(&last.enc))?;
                        run.push(last);
                    }
                }
                if o.max_recs.is_some_and(|m| run.len() >= m) {
                    full = true;
                }
            }
            if full {
                let next = match &split_next {
                    Some(n) => Some(n.clone()),
                    None => stream.peek()?.map(|r| r.lo().enc.clone()),
                };
                b.close(&mut txn, &mut run, next.as_deref())?;
                full = false;
            }
            if run.is_empty() && txn.pending_bytes() >= commit_bytes {
                txn.commit_part()?;
            }
        }
        let next = match stream.peek()? {
            Some(r) => {
                let (k, v, lo) = (r.phys_key.clone(), r.value.clone(), r.lo().enc.clone());
                txn.observe(&k, Some(&v));
                Some(lo)
            }
            None => None,
        };
        let next = split_next.or(next);
        b.close(&mut txn, &mut run, next.as_deref())?;
        drop(stream);
        txn.commit()?;
        Ok(b.report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_may_not_end_at_a_key_that_the_next_one_extends() {
        // (1,) then (1, 5): the batch key 15 01 66 … would sort after 15 01 15 05.
        assert!(!may_end_batch(
            &[0x15, 0x01],
            Some(&[0x15, 0x01, 0x15, 0x05])
        ));
        // ("a",) then ("a\0",): the string continues with bytes ≥ 0x80, after SEP.
        assert!(may_end_batch(
            &[0x32, 0xb0, 0xc0],
            Some(&[0x32, 0xb0, 0xc0, 0x80])
        ));
        assert!(may_end_batch(&[0x15, 0x01], Some(&[0x15, 0x02])));
        assert!(may_end_batch(&[0x15, 0x01], None));
    }
}
