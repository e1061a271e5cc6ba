//! [`Collection`]: records under one key prefix, with their secondary indexes.
//!
//! Every write keeps one invariant that reads rely on: taken in engine key order, the
//! physical records (single records and batches) hold disjoint, ascending runs of keys.
//! So the record holding a key is the first one at or after the key's encoding (skipping
//! at most one batch per tuple-prefix of the key, whose physical key sorts there because a
//! batch key continues with SEP), and a range is read by walking records in order. A put of
//! a key that is a batch member, or that falls inside a batch's run, splits that batch
//! first (the original splits only on delete and on puts in collections with indexes).

use std::ops::Bound;
use std::sync::{Arc, Mutex, RwLock};

use strata_key::{Tuple, Value};
use strata_lsm::Direction;

use crate::codec::{self, Encoder};
use crate::doc::Doc;
use crate::error::{Error, Result};
use crate::format::{self, PhysRecord};
use crate::index::{Index, IndexState};
use crate::iter::{Items, Keys, MemberIter, Query};
use crate::keyfn::ValueFn;
use crate::meta::{self, Info, Kind};
use crate::store::Inner;
use crate::txn::{self, Txn};

/// Where a collection's keys come from.
#[derive(Clone)]
pub enum KeySource {
    /// A key function of the value.
    Func(ValueFn),
    /// A store counter (auto-increment), by name.
    Counter(Value),
    /// None known (a collection opened from metadata only): puts need an explicit key.
    None,
}

pub(crate) struct CollState {
    pub name: String,
    pub vname: Value,
    pub idx: u64,
    pub prefix: Vec<u8>,
    pub key: KeySource,
    pub encoder: Arc<dyn Encoder>,
    pub indexes: RwLock<Vec<Arc<IndexState>>>,
    pub info: Mutex<Info>,
}

impl CollState {
    pub fn new(
        name: &str,
        store_prefix: &[u8],
        mut info: Info,
        key: KeySource,
        encoder: Arc<dyn Encoder>,
    ) -> Result<CollState> {
        let idx = match info.get(b"idx".as_slice()) {
            Some(Value::Int(i)) if *i >= 0 && *i <= i128::from(u64::MAX) => *i as u64,
            other => {
                return Err(Error::corrupt(
                    format!("collection {name:?}"),
                    format!("idx {other:?}"),
                ))
            }
        };
        if matches!(key, KeySource::Counter(_)) {
            info.entry(b"blind".to_vec()).or_insert(Value::Bool(true));
        } else {
            info.entry(b"blind".to_vec()).or_insert(Value::Bool(false));
        }
        let mut prefix = store_prefix.to_vec();
        crate::varint::write(idx, &mut prefix);
        Ok(CollState {
            name: name.to_owned(),
            vname: Value::Bytes(name.as_bytes().to_vec()),
            idx,
            prefix,
            key,
            encoder,
            indexes: RwLock::new(Vec::new()),
            info: Mutex::new(info),
        })
    }
}

/// Options of [`Collection::put_with`].
#[derive(Debug, Clone, Default)]
pub struct PutOptions {
    /// The packer (by name; default `plain`).
    pub packer: Option<String>,
    /// A key to use instead of the key function's (or the counter's).
    pub key: Option<Tuple>,
    /// centidb's "blind" write. Accepted and ignored: Strata always looks at the old record
    /// (one seek) so that indexes and batches stay consistent.
    pub blind: bool,
    /// The encoder's output, when the caller has it already (the value is still used for
    /// the key function and the indexes).
    pub encoded: Option<Vec<u8>>,
}

/// A collection of a [`crate::Store`].
#[derive(Clone)]
pub struct Collection {
    pub(crate) store: Arc<Inner>,
    pub(crate) state: Arc<CollState>,
}

/// The physical records around a key: batches that sort after the key's encoding but hold
/// only smaller keys (tuple-prefixes of it), and the record that holds or follows it.
pub(crate) struct Located {
    pub prefix_batches: Vec<PhysRecord>,
    pub at: Option<PhysRecord>,
}

fn read<T>(m: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Collection {
    pub(crate) fn new(store: Arc<Inner>, state: Arc<CollState>) -> Collection {
        Collection { store, state }
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The collection's number (its key prefix is `pack_int(idx)`).
    pub fn idx(&self) -> u64 {
        self.state.idx
    }

    /// The engine key prefix of its records.
    pub fn prefix(&self) -> &[u8] {
        &self.state.prefix
    }

    /// The encoder.
    pub fn encoder(&self) -> &Arc<dyn Encoder> {
        &self.state.encoder
    }

    pub(crate) fn phys_key(&self, enc: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.state.prefix.len() + enc.len());
        k.extend_from_slice(&self.state.prefix);
        k.extend_from_slice(enc);
        k
    }

    pub(crate) fn end_bound(&self) -> Bound<Vec<u8>> {
        Inner::prefix_end(&self.state.prefix)
    }

    /// Stores `value` under the key its key function (or counter) gives; returns the key.
    pub fn put(&self, value: &Doc) -> Result<Tuple> {
        self.put_with(value, &PutOptions::default())
    }

    /// [`put`](Self::put) with options.
    pub fn put_with(&self, value: &Doc, opts: &PutOptions) -> Result<Tuple> {
        let packer_name = opts.packer.as_deref().unwrap_or("plain");
        let packer = self.store.packer_named(packer_name)?;
        let packer_idx = self.store.ensure_idx(packer_name)?;
        let encoded = match &opts.encoded {
            Some(e) => e.clone(),
            None => self.state.encoder.pack(value)?,
        };
        let record = format::single_value(packer_idx, &packer.pack(&encoded)?);
        let key_fn_key = match (&opts.key, &self.state.key) {
            (Some(k), _) => Some(k.clone()),
            (None, KeySource::Func(f)) => {
                let d = f(value).map_err(|r| Error::Function {
                    what: format!("key function of {}", self.state.name),
                    reason: r,
                })?;
                Some(d.to_key()?)
            }
            (None, KeySource::Counter(_)) => None,
            (None, KeySource::None) => {
                return Err(Error::Invalid(format!(
                    "collection {:?} was opened without a key function: give the key, or \
                     add the collection with its key function",
                    self.state.name
                )))
            }
        };
        self.store.write(|txn| {
            let key = match (&key_fn_key, &self.state.key) {
                (Some(k), _) => k.clone(),
                (None, KeySource::Counter(name)) => {
                    Tuple(vec![Value::Int(self.store.count_in(txn, name, 1, 1)?)])
                }
                _ => return Err(Error::Invalid("no key".into())),
            };
            let enc = codec::key::encode_key(&key)?;
            self.put_in(txn, &enc, value, record.clone())?;
            Ok(key)
        })
    }

    /// Stores several values in one atomic transaction (all or none); returns their keys.
    pub fn put_all(&self, values: &[Doc], opts: &PutOptions) -> Result<Vec<Tuple>> {
        let packer_name = opts.packer.as_deref().unwrap_or("plain");
        let packer = self.store.packer_named(packer_name)?;
        let packer_idx = self.store.ensure_idx(packer_name)?;
        let mut prepared = Vec::with_capacity(values.len());
        for v in values {
            let encoded = self.state.encoder.pack(v)?;
            let record = format::single_value(packer_idx, &packer.pack(&encoded)?);
            let key = match (&opts.key, &self.state.key) {
                (Some(_), _) => {
                    return Err(Error::Invalid(
                        "put_all takes keys from the key function or counter".into(),
                    ))
                }
                (None, KeySource::Func(f)) => Some(
                    f(v).map_err(|r| Error::Function {
                        what: format!("key function of {}", self.state.name),
                        reason: r,
                    })?
                    .to_key()?,
                ),
                (None, KeySource::Counter(_)) => None,
                (None, KeySource::None) => {
                    return Err(Error::Invalid(format!(
                        "collection {:?} was opened without a key function",
                        self.state.name
                    )))
                }
            };
            prepared.push((key, record));
        }
        self.store.write(|txn| {
            let mut keys = Vec::with_capacity(values.len());
            for (v, (key, record)) in values.iter().zip(&prepared) {
                let key = match (key, &self.state.key) {
                    (Some(k), _) => k.clone(),
                    (None, KeySource::Counter(name)) => {
                        Tuple(vec![Value::Int(self.store.count_in(txn, name, 1, 1)?)])
                    }
                    _ => return Err(Error::Invalid("no key".into())),
                };
                let enc = codec::key::encode_key(&key)?;
                self.put_in(txn, &enc, v, record.clone())?;
                keys.push(key);
            }
            Ok(keys)
        })
    }

    pub(crate) fn locate(&self, txn: &mut Txn, enc: &[u8]) -> Result<Located> {
        let range = txn::range(Bound::Included(self.phys_key(enc)), self.end_bound());
        let it = txn.range(range, Direction::Forward)?;
        let mut prefix_batches = Vec::new();
        let mut at = None;
        for item in it {
            let item = item?;
            if item.from_snapshot {
                txn.observe(&item.key, Some(&item.value));
            }
            let rec = PhysRecord::parse(&self.state.prefix, item.key, item.value)?;
            if rec.hi().enc.as_slice() >= enc {
                at = Some(rec);
                break;
            }
            prefix_batches.push(rec);
        }
        Ok(Located { prefix_batches, at })
    }

    /// Rewrites a batch as single records (plain packer, as the original), leaving out the
    /// member at `except`.
    fn split(
        &self,
        txn: &mut Txn,
        rec: &PhysRecord,
        data: &[Vec<u8>],
        except: Option<usize>,
    ) -> Result<()> {
        txn.delete(rec.phys_key.clone());
        for (i, m) in rec.members.iter().enumerate() {
            if Some(i) != except {
                txn.put(
                    self.phys_key(&m.enc),
                    format::single_value(codec::PLAIN_IDX, &data[i]),
                );
            }
        }
        Ok(())
    }

    pub(crate) fn index_entries(
        &self,
        idxs: &[Arc<IndexState>],
        enc_key: &[u8],
        value: &Doc,
    ) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for ix in idxs {
            let res = (ix.func)(value).map_err(|r| Error::Function {
                what: format!("index {} of {}", ix.name, self.state.name),
                reason: r,
            })?;
            let tuples = match res {
                Doc::None => vec![],
                Doc::List(items) => items.iter().map(Doc::to_key).collect::<Result<Vec<_>>>()?,
                other => vec![other.to_key()?],
            };
            for t in tuples {
                out.push(ix.entry_key(&t, enc_key)?);
            }
        }
        Ok(out)
    }

    pub(crate) fn put_in(
        &self,
        txn: &mut Txn,
        enc: &[u8],
        value: &Doc,
        record: Vec<u8>,
    ) -> Result<()> {
        let phys = self.phys_key(enc);
        let idxs = read(&self.state.indexes).clone();
        let loc = self.locate(txn, enc)?;
        for b in &loc.prefix_batches {
            let data = self.store.unpack(b)?;
            self.split(txn, b, &data, None)?;
        }
        let mut old: Option<Vec<u8>> = None;
        match &loc.at {
            Some(r) if r.position(enc).is_some() => {
                let pos = r.position(enc).unwrap_or(0);
                if r.is_batch() || !idxs.is_empty() {
                    let mut data = self.store.unpack(r)?;
                    if r.is_batch() {
                        self.split(txn, r, &data, Some(pos))?;
                    }
                    old = Some(std::mem::take(&mut data[pos]));
                }
            }
            Some(r) if r.is_batch() && r.lo().enc.as_slice() < enc => {
                // The key falls inside the batch's run: split it to keep runs disjoint.
                let data = self.store.unpack(r)?;
                self.split(txn, r, &data, None)?;
            }
            _ => {}
        }
        if loc.at.as_ref().map(|r| &r.phys_key) != Some(&phys) {
            txn.observe(&phys, None);
        }
        if !idxs.is_empty() {
            if let Some(old) = old {
                let od = self.state.encoder.unpack(&old)?;
                for k in self.index_entries(&idxs, enc, &od)? {
                    txn.delete(k);
                }
            }
            for k in self.index_entries(&idxs, enc, value)? {
                txn.put(k, Vec::new());
            }
        }
        txn.put(phys, record);
        Ok(())
    }

    /// Deletes the record with `key` (splitting its batch); returns whether there was one.
    pub fn delete(&self, key: &Tuple) -> Result<bool> {
        let enc = codec::key::encode_key(key)?;
        self.store.write(|txn| self.delete_in(txn, &enc))
    }

    pub(crate) fn delete_in(&self, txn: &mut Txn, enc: &[u8]) -> Result<bool> {
        let idxs = read(&self.state.indexes).clone();
        let loc = self.locate(txn, enc)?;
        let Some(r) = loc.at.as_ref().filter(|r| r.position(enc).is_some()) else {
            txn.observe(&self.phys_key(enc), None);
            return Ok(false);
        };
        let pos = r.position(enc).unwrap_or(0);
        let data = if r.is_batch() || !idxs.is_empty() {
            self.store.unpack(r)?
        } else {
            Vec::new()
        };
        if !idxs.is_empty() {
            let od = self.state.encoder.unpack(&data[pos])?;
            for k in self.index_entries(&idxs, enc, &od)? {
                txn.delete(k);
            }
        }
        if r.is_batch() {
            self.split(txn, r, &data, Some(pos))?;
        } else {
            txn.delete(r.phys_key.clone());
        }
        Ok(true)
    }

    /// The encoded value (the encoder's output) of `key`.
    pub fn get_raw(&self, key: &Tuple) -> Result<Option<Vec<u8>>> {
        let enc = codec::key::encode_key(key)?;
        let mut txn = Txn::begin(&self.store.engine)?;
        let loc = self.locate(&mut txn, &enc)?;
        let Some(r) = loc.at else {
            return Ok(None);
        };
        let Some(pos) = r.position(&enc) else {
            return Ok(None);
        };
        let mut data = self.store.unpack(&r)?;
        Ok(Some(std::mem::take(&mut data[pos])))
    }

    /// The value of `key`.
    pub fn get(&self, key: &Tuple) -> Result<Option<Doc>> {
        self.get_raw(key)?
            .map(|d| self.state.encoder.unpack(&d))
            .transpose()
    }

    /// `(key, value)` pairs of the query, in key order (or reverse).
    pub fn items(&self, q: &Query) -> Result<Items> {
        Ok(Items::new(
            MemberIter::new(self, q, true)?,
            Arc::clone(&self.state.encoder),
        ))
    }

    /// Keys of the query (no value is unpacked).
    pub fn keys(&self, q: &Query) -> Result<Keys> {
        Ok(Keys::new(MemberIter::new(self, q, false)?))
    }

    /// Values of the query.
    pub fn values(&self, q: &Query) -> Result<impl Iterator<Item = Result<Doc>>> {
        Ok(self.items(q)?.map(|r| r.map(|(_, v)| v)))
    }

    /// The first value of the query.
    pub fn find(&self, q: &Query) -> Result<Option<Doc>> {
        self.values(q)?.next().transpose()
    }

    /// Records the collection's `blind` attribute in its metadata (compatibility: Strata's
    /// puts never skip the old-record check).
    pub fn set_blind(&self, blind: bool) -> Result<()> {
        let mut info = self
            .state
            .info
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        info.insert(b"blind".to_vec(), Value::Bool(blind));
        let snapshot = info.clone();
        drop(info);
        self.store.write(|txn| {
            self.store
                .set_info(txn, Kind::Table, &self.state.vname, &snapshot)
        })
    }

    /// Adds (or opens) the index `name` whose entries `func` computes. A new index is built
    /// from the records already stored, in the same transaction. Index functions are not
    /// stored: add them every time the collection is opened.
    pub fn add_index(&self, name: &str, func: ValueFn) -> Result<Index> {
        if read(&self.state.indexes).iter().any(|i| i.name == name) {
            return Err(Error::Invalid(format!(
                "collection {:?} already has an index {name:?}",
                self.state.name
            )));
        }
        let info_name = Value::Bytes(format!("index:{}:{name}", self.state.name).into_bytes());
        let mut state = None;
        self.store.write(|txn| {
            let info = self.store.get_info(txn, Kind::Index, &info_name)?;
            let (idx, created) = match info.get(b"idx".as_slice()) {
                Some(Value::Int(i)) if *i >= 0 => (*i as u64, false),
                Some(other) => {
                    return Err(Error::corrupt(
                        format!("index {name:?}"),
                        format!("idx {other:?}"),
                    ))
                }
                None => {
                    let idx = self.store.count_in(
                        txn,
                        &Value::Bytes(meta::COLLECTIONS_COUNTER.to_vec()),
                        1,
                        meta::FIRST_COLLECTION_IDX,
                    )?;
                    let new: Info = [
                        (b"idx".to_vec(), Value::Int(idx)),
                        (b"index_for".to_vec(), self.state.vname.clone()),
                    ]
                    .into_iter()
                    .collect();
                    self.store.set_info(txn, Kind::Index, &info_name, &new)?;
                    (idx as u64, true)
                }
            };
            let ix = Arc::new(IndexState::new(
                name,
                self.store.coll_prefix(idx),
                idx,
                Arc::clone(&func),
            ));
            if created {
                self.backfill(txn, &ix)?;
            }
            state = Some(ix);
            Ok(())
        })?;
        let ix = state.ok_or_else(|| Error::Invalid("index not created".into()))?;
        self.state
            .indexes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(Arc::clone(&ix));
        Ok(Index::new(self.clone(), ix))
    }

    /// Writes the entries of a new index for every record.
    fn backfill(&self, txn: &mut Txn, ix: &Arc<IndexState>) -> Result<()> {
        let range = txn::prefix_range(&self.state.prefix);
        let it = txn.range(range, Direction::Forward)?;
        let mut entries = Vec::new();
        for item in it {
            let item = item?;
            let rec = PhysRecord::parse(&self.state.prefix, item.key, item.value)?;
            let data = self.store.unpack(&rec)?;
            for (m, d) in rec.members.iter().zip(&data) {
                let v = self.state.encoder.unpack(d)?;
                entries.extend(self.index_entries(std::slice::from_ref(ix), &m.enc, &v)?);
            }
        }
        for k in entries {
            txn.put(k, Vec::new());
        }
        Ok(())
    }

    /// An index added to this collection.
    pub fn index(&self, name: &str) -> Result<Index> {
        read(&self.state.indexes)
            .iter()
            .find(|i| i.name == name)
            .map(|ix| Index::new(self.clone(), Arc::clone(ix)))
            .ok_or_else(|| Error::NotFound {
                what: "index",
                name: name.to_owned(),
            })
    }
}
