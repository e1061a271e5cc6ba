//! [`Store`]: the record store over one engine and key prefix — collections, indexes,
//! counters and the encoder registry, all kept in the store's metadata.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, RwLock};

use strata_key::{TupleCodec, Value};
use strata_lsm::{Direction, Engine};

use crate::codec::{self, Encoder, Packer};
use crate::collection::{CollState, Collection, KeySource};
use crate::error::{Error, Result};
use crate::format::{self, PhysRecord, MAX_ENCODER_IDX};
use crate::keyfn::ValueFn;
use crate::meta::{self, Info, Kind};
use crate::txn::{self, Txn};
use crate::varint;

/// Options of a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Largest encoded value a single record may unpack to (a batch unpacks to exactly the
    /// size its header gives, within this bound too). Protects readers from hostile data.
    pub max_value_bytes: usize,
    /// A long `batch` commits its work in parts of about this many bytes (each part is
    /// consistent on its own).
    pub batch_commit_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            max_value_bytes: 256 << 20,
            batch_commit_bytes: 8 << 20,
        }
    }
}

/// Settings of a collection (see [`Store::add_collection`]).
#[derive(Clone)]
pub struct CollectionOptions {
    pub(crate) key: Option<ValueFn>,
    pub(crate) encoder: Arc<dyn Encoder>,
    pub(crate) counter_name: Option<Value>,
}

impl Default for CollectionOptions {
    /// Auto-increment keys, the pickle encoder (centidb's defaults).
    fn default() -> CollectionOptions {
        CollectionOptions {
            key: None,
            encoder: Arc::new(codec::pickle::PickleEncoder),
            counter_name: None,
        }
    }
}

impl CollectionOptions {
    /// Auto-increment keys and the pickle encoder.
    pub fn new() -> CollectionOptions {
        CollectionOptions::default()
    }

    /// Keys come from `f(value)`: a tuple, or a scalar (a 1-tuple).
    pub fn key_fn(mut self, f: ValueFn) -> CollectionOptions {
        self.key = Some(f);
        self
    }

    /// The encoder of the values.
    pub fn encoder(mut self, e: Arc<dyn Encoder>) -> CollectionOptions {
        self.encoder = e;
        self
    }

    /// The counter of auto-increment keys (default `key:<name>`; collections may share one).
    pub fn counter_name(mut self, name: Value) -> CollectionOptions {
        self.counter_name = Some(name);
        self
    }
}

/// What the metadata says about a collection or an index.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionInfo {
    /// The name.
    pub name: Value,
    /// Its number (the key prefix is `pack_int(idx)`).
    pub idx: u64,
    /// The encoder name (collections only).
    pub encoder: Option<String>,
    /// The collection an index belongs to (indexes only).
    pub index_for: Option<Value>,
    /// The `blind` attribute, when set.
    pub blind: Option<bool>,
}

#[derive(Default)]
struct Registry {
    encoders: HashMap<String, Arc<dyn Encoder>>,
    packers: HashMap<String, Arc<dyn Packer>>,
    idx_of: HashMap<String, u64>,
    name_of: HashMap<u64, String>,
}

pub(crate) struct Inner {
    pub engine: Arc<dyn Engine>,
    pub prefix: Vec<u8>,
    pub meta_prefix: Vec<u8>,
    pub opts: StoreOptions,
    write_lock: Mutex<()>,
    registry: RwLock<Registry>,
    colls: RwLock<HashMap<Vec<u8>, Arc<CollState>>>,
}

/// A centidb store: every key it writes starts with its prefix, so several stores (and
/// other data) can share one engine.
///
/// ```
/// use std::sync::Arc;
/// use strata_centidb::{Doc, FnSpec, Store, CollectionOptions, codec::pyjson::JsonEncoder};
/// let store = Store::open(Arc::new(strata_lsm::MemEngine::new()), b"").unwrap();
/// let people = store
///     .add_collection(
///         "people",
///         CollectionOptions::new()
///             .key_fn(FnSpec::Field { name: "name".into() }.to_fn())
///             .encoder(Arc::new(JsonEncoder)),
///     )
///     .unwrap();
/// let alice = Doc::Dict(vec![("name".into(), "Alice".into()), ("age".into(), 30i64.into())]);
/// let key = people.put(&alice).unwrap();
/// assert_eq!(people.get(&key).unwrap(), Some(alice));
/// ```
#[derive(Clone)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn read<T>(m: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(m: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Attempts of an operation that meets a conflicting writer.
const CONFLICT_RETRIES: usize = 5;

impl Store {
    /// A store over `engine` whose keys all start with `prefix`.
    pub fn open(engine: Arc<dyn Engine>, prefix: &[u8]) -> Result<Store> {
        Store::open_with(engine, prefix, StoreOptions::default())
    }

    /// [`open`](Self::open) with options.
    pub fn open_with(engine: Arc<dyn Engine>, prefix: &[u8], opts: StoreOptions) -> Result<Store> {
        let mut reg = Registry::default();
        for name in ["key", "pickle", "plain", "zlib"] {
            if let Some(idx) = codec::builtin_idx(name) {
                reg.idx_of.insert(name.to_owned(), idx);
                reg.name_of.insert(idx, name.to_owned());
            }
        }
        Ok(Store {
            inner: Arc::new(Inner {
                engine,
                prefix: prefix.to_vec(),
                meta_prefix: meta::meta_prefix(prefix),
                opts,
                write_lock: Mutex::new(()),
                registry: RwLock::new(reg),
                colls: RwLock::new(HashMap::new()),
            }),
        })
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<dyn Engine> {
        &self.inner.engine
    }

    /// The key prefix.
    pub fn prefix(&self) -> &[u8] {
        &self.inner.prefix
    }

    /// Makes a user encoder known by its name (before opening collections that use it).
    pub fn register_encoder(&self, e: Arc<dyn Encoder>) {
        write(&self.inner.registry)
            .encoders
            .insert(e.name().to_owned(), e);
    }

    /// Makes a user packer known by its name (before reading records it packed).
    pub fn register_packer(&self, p: Arc<dyn Packer>) {
        write(&self.inner.registry)
            .packers
            .insert(p.name().to_owned(), p);
    }

    /// Gives the encoder or packer `name` its number in this store now (centidb's
    /// `add_encoder`; otherwise it happens on first use). The name must be registered or
    /// one Strata knows (`json`, `bz2`, `zstd`, `lz4`, and the built-ins).
    pub fn add_encoder(&self, name: &str) -> Result<u64> {
        if self.inner.encoder_named(name).is_err() && self.inner.packer_named(name).is_err() {
            return Err(Error::MissingEncoder {
                name: name.to_owned(),
                idx: 0,
            });
        }
        self.inner.ensure_idx(name)
    }

    /// The packer of this name: registered, or one Strata knows.
    pub fn packer(&self, name: &str) -> Result<Arc<dyn Packer>> {
        self.inner.packer_named(name)
    }

    /// Increments the counter `name` by `n` and returns its value before (`init` when it did
    /// not exist; `n = 0` only reads). Names starting with `\x00` are the store's own.
    pub fn count(&self, name: &Value, n: i128, init: i128) -> Result<i128> {
        self.inner
            .write(|txn| self.inner.count_in(txn, name, n, init))
    }

    /// Creates the collection `name` or opens it (checking the stored encoder name), and
    /// makes it available under [`collection`](Self::collection).
    pub fn add_collection(&self, name: &str, opts: CollectionOptions) -> Result<Collection> {
        let key = name.as_bytes().to_vec();
        if let Some(c) = read(&self.inner.colls).get(&key) {
            if c.encoder.name() != opts.encoder.name() {
                return Err(Error::Config {
                    name: name.to_owned(),
                    attr: "encoder".into(),
                    stored: c.encoder.name().to_owned(),
                    given: opts.encoder.name().to_owned(),
                });
            }
            return Ok(Collection::new(Arc::clone(&self.inner), Arc::clone(c)));
        }
        let enc_name = opts.encoder.name().to_owned();
        self.register_encoder(Arc::clone(&opts.encoder));
        let vname = Value::Bytes(key.clone());
        let info = self.inner.write(|txn| {
            let old = self.inner.get_info(txn, Kind::Table, &vname)?;
            let given: Info = [
                (b"name".to_vec(), vname.clone()),
                (
                    b"encoder".to_vec(),
                    Value::Bytes(enc_name.as_bytes().to_vec()),
                ),
            ]
            .into_iter()
            .collect();
            if old.is_empty() {
                let idx = self.inner.count_in(
                    txn,
                    &Value::Bytes(meta::COLLECTIONS_COUNTER.to_vec()),
                    1,
                    meta::FIRST_COLLECTION_IDX,
                )?;
                let mut new = given;
                new.insert(b"idx".to_vec(), Value::Int(idx));
                self.inner.set_info(txn, Kind::Table, &vname, &new)?;
                Ok(new)
            } else {
                for (attr, v) in &given {
                    if let Some(stored) = old.get(attr) {
                        if stored != v {
                            return Err(Error::Config {
                                name: name.to_owned(),
                                attr: String::from_utf8_lossy(attr).into_owned(),
                                stored: format!("{stored:?}"),
                                given: format!("{v:?}"),
                            });
                        }
                    }
                }
                Ok(old)
            }
        })?;
        // The encoder gets its number (metadata) when the collection is first opened.
        self.inner.ensure_idx(&enc_name)?;
        let key_src = match opts.key {
            Some(f) => KeySource::Func(f),
            None => KeySource::Counter(
                opts.counter_name
                    .unwrap_or_else(|| Value::Bytes(format!("key:{name}").into_bytes())),
            ),
        };
        let state = Arc::new(CollState::new(
            name,
            &self.inner.prefix,
            info,
            key_src,
            opts.encoder,
        )?);
        write(&self.inner.colls).insert(key, Arc::clone(&state));
        Ok(Collection::new(Arc::clone(&self.inner), state))
    }

    /// A collection added in this `Store`, or one that exists in the store's metadata (then
    /// opened with its stored encoder and no key function: puts need an explicit key, and
    /// its indexes must be added again to be kept up to date).
    pub fn collection(&self, name: &str) -> Result<Collection> {
        if let Some(c) = read(&self.inner.colls).get(name.as_bytes()) {
            return Ok(Collection::new(Arc::clone(&self.inner), Arc::clone(c)));
        }
        let vname = Value::Bytes(name.as_bytes().to_vec());
        let mut txn = Txn::begin(&self.inner.engine)?;
        let info = self.inner.get_info(&mut txn, Kind::Table, &vname)?;
        if info.is_empty() {
            return Err(Error::NotFound {
                what: "collection",
                name: name.to_owned(),
            });
        }
        let enc_name = match info.get(b"encoder".as_slice()).and_then(meta::name_bytes) {
            Some(b) => String::from_utf8_lossy(b).into_owned(),
            None => "pickle".to_owned(),
        };
        let encoder = self.inner.encoder_named(&enc_name)?;
        let state = Arc::new(CollState::new(
            name,
            &self.inner.prefix,
            info,
            KeySource::None,
            encoder,
        )?);
        Ok(Collection::new(Arc::clone(&self.inner), state))
    }

    /// Every collection and index recorded in the store's metadata, in metadata order.
    pub fn collections(&self) -> Result<Vec<CollectionInfo>> {
        let txn = Txn::begin(&self.inner.engine)?;
        let it = txn.range(
            txn::prefix_range(&self.inner.meta_prefix),
            Direction::Forward,
        )?;
        let mut out: Vec<CollectionInfo> = Vec::new();
        let mut cur: Option<(i128, Value, CollectionInfo)> = None;
        for item in it {
            let item = item?;
            let row = meta::parse_row(&self.inner.meta_prefix, &item.key, &item.value)?;
            if row.kind != Kind::Table as i128 && row.kind != Kind::Index as i128 {
                continue;
            }
            if cur
                .as_ref()
                .is_none_or(|(k, n, _)| *k != row.kind || *n != row.name)
            {
                if let Some((_, _, c)) = cur.take() {
                    out.push(c);
                }
                cur = Some((
                    row.kind,
                    row.name.clone(),
                    CollectionInfo {
                        name: row.name.clone(),
                        idx: 0,
                        encoder: None,
                        index_for: None,
                        blind: None,
                    },
                ));
            }
            if let Some((_, _, c)) = cur.as_mut() {
                match meta::name_bytes(&row.attr) {
                    Some(b"idx") => {
                        if let Value::Int(i) = row.value {
                            c.idx = u64::try_from(i).unwrap_or(0);
                        }
                    }
                    Some(b"encoder") => {
                        c.encoder = meta::name_bytes(&row.value)
                            .map(|b| String::from_utf8_lossy(b).into_owned());
                    }
                    Some(b"index_for") => c.index_for = Some(row.value.clone()),
                    Some(b"blind") => {
                        c.blind = match row.value {
                            Value::Bool(b) => Some(b),
                            Value::Int(i) => Some(i != 0),
                            _ => None,
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some((_, _, c)) = cur {
            out.push(c);
        }
        Ok(out)
    }
}

impl Inner {
    /// Runs `f` in a write transaction and commits it atomically; retried when another
    /// writer changed what it read.
    pub fn write<T>(&self, mut f: impl FnMut(&mut Txn) -> Result<T>) -> Result<T> {
        let _g = lock(&self.write_lock);
        let mut attempt = 0;
        loop {
            let mut txn = Txn::begin(&self.engine)?;
            let r = f(&mut txn)?;
            match txn.commit() {
                Ok(()) => return Ok(r),
                Err(Error::Conflict) if attempt + 1 < CONFLICT_RETRIES => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// The write lock, for operations that commit in parts (`batch`).
    pub fn write_guard(&self) -> std::sync::MutexGuard<'_, ()> {
        lock(&self.write_lock)
    }

    /// See [`Store::count`]; inside a transaction.
    pub fn count_in(&self, txn: &mut Txn, name: &Value, n: i128, init: i128) -> Result<i128> {
        let key = meta::row_key(&self.prefix, Kind::Counter, name, &Value::Null)?;
        let value = match txn.get(&key)? {
            None => init,
            Some(v) => {
                let row = meta::parse_row(&self.meta_prefix, &key, &v)?;
                match row.value {
                    Value::Int(i) => i,
                    other => {
                        return Err(Error::corrupt(
                            format!("counter {name:?}"),
                            format!("value {other:?} is not an integer"),
                        ))
                    }
                }
            }
        };
        if n != 0 {
            let next = value
                .checked_add(n)
                .ok_or_else(|| Error::Invalid(format!("counter {name:?} overflows")))?;
            txn.put(key, meta::row_value(&Value::Int(next))?);
        }
        Ok(value)
    }

    /// The rows of one (kind, name), attribute → value.
    pub fn get_info(&self, txn: &mut Txn, kind: Kind, name: &Value) -> Result<Info> {
        let p = meta::rows_prefix(&self.prefix, kind, name)?;
        let it = txn.range(txn::prefix_range(&p), Direction::Forward)?;
        let mut info = Info::new();
        let mut seen = Vec::new();
        for item in it {
            let item = item?;
            let row = meta::parse_row(&self.meta_prefix, &item.key, &item.value)?;
            // The byte prefix also matches longer names whose packing starts the same way.
            if row.kind != kind as i128 || row.name != *name {
                continue;
            }
            if item.from_snapshot {
                seen.push((item.key.clone(), item.value.clone()));
            }
            let attr = meta::name_bytes(&row.attr)
                .map(<[u8]>::to_vec)
                .unwrap_or_default();
            info.insert(attr, row.value);
        }
        for (k, v) in seen {
            txn.observe(&k, Some(&v));
        }
        Ok(info)
    }

    /// Replaces the rows of one (kind, name).
    pub fn set_info(&self, txn: &mut Txn, kind: Kind, name: &Value, info: &Info) -> Result<()> {
        let old = self.get_info(txn, kind, name)?;
        for attr in old.keys() {
            if !info.contains_key(attr) {
                let k = meta::row_key(&self.prefix, kind, name, &Value::Bytes(attr.clone()))?;
                txn.delete(k);
            }
        }
        for (attr, v) in info {
            let k = meta::row_key(&self.prefix, kind, name, &Value::Bytes(attr.clone()))?;
            txn.put(k, meta::row_value(v)?);
        }
        Ok(())
    }

    /// The number of an encoder or packer, giving it one (and recording it) on first use.
    pub fn ensure_idx(&self, name: &str) -> Result<u64> {
        if let Some(&i) = read(&self.registry).idx_of.get(name) {
            return Ok(i);
        }
        let vname = Value::Bytes(name.as_bytes().to_vec());
        let idx = self.write(|txn| {
            let info = self.get_info(txn, Kind::Encoder, &vname)?;
            if let Some(v) = info.get(b"idx".as_slice()) {
                return match v {
                    Value::Int(i) if (1..=i128::from(MAX_ENCODER_IDX)).contains(i) => Ok(*i as u64),
                    other => Err(Error::corrupt(
                        format!("encoder {name:?}"),
                        format!("idx {other:?} is not a one-byte index"),
                    )),
                };
            }
            let idx = self.count_in(
                txn,
                &Value::Bytes(meta::ENCODERS_COUNTER.to_vec()),
                1,
                meta::FIRST_ENCODER_IDX,
            )?;
            if idx > i128::from(MAX_ENCODER_IDX) {
                return Err(Error::Invalid(format!(
                    "no encoder index left for {name:?} (at most {MAX_ENCODER_IDX})"
                )));
            }
            let info: Info = [(b"idx".to_vec(), Value::Int(idx))].into_iter().collect();
            self.set_info(txn, Kind::Encoder, &vname, &info)?;
            Ok(idx as u64)
        })?;
        let mut reg = write(&self.registry);
        reg.idx_of.insert(name.to_owned(), idx);
        reg.name_of.insert(idx, name.to_owned());
        Ok(idx)
    }

    pub fn encoder_named(&self, name: &str) -> Result<Arc<dyn Encoder>> {
        if let Some(e) = read(&self.registry).encoders.get(name) {
            return Ok(Arc::clone(e));
        }
        codec::encoder_by_name(name).ok_or_else(|| Error::MissingEncoder {
            name: name.to_owned(),
            idx: read(&self.registry).idx_of.get(name).copied().unwrap_or(0),
        })
    }

    pub fn packer_named(&self, name: &str) -> Result<Arc<dyn Packer>> {
        if let Some(p) = read(&self.registry).packers.get(name) {
            return Ok(Arc::clone(p));
        }
        codec::packer_by_name(name).ok_or_else(|| Error::MissingEncoder {
            name: name.to_owned(),
            idx: read(&self.registry).idx_of.get(name).copied().unwrap_or(0),
        })
    }

    /// The packer a record's prefix names.
    pub fn packer_for(&self, idx: u64) -> Result<Arc<dyn Packer>> {
        let known = read(&self.registry).name_of.get(&idx).cloned();
        let name = match known {
            Some(n) => n,
            None => {
                let n = self.find_encoder_name(idx)?;
                let mut reg = write(&self.registry);
                if let Some(n) = &n {
                    reg.name_of.insert(idx, n.clone());
                    reg.idx_of.insert(n.clone(), idx);
                }
                n.ok_or(Error::MissingEncoder {
                    name: "?".into(),
                    idx,
                })?
            }
        };
        self.packer_named(&name)
            .map_err(|_| Error::MissingEncoder { name, idx })
    }

    /// The name the metadata gives encoder number `idx`.
    fn find_encoder_name(&self, idx: u64) -> Result<Option<String>> {
        let txn = Txn::begin(&self.engine)?;
        let mut p = self.meta_prefix.clone();
        strata_key::codec::centidb::CentidbCodec::new()
            .encode_into(&[Value::Int(Kind::Encoder as i128)], &mut p)?;
        let it = txn.range(txn::prefix_range(&p), Direction::Forward)?;
        let mut found = None;
        for item in it {
            let item = item?;
            let row = meta::parse_row(&self.meta_prefix, &item.key, &item.value)?;
            if row.kind == Kind::Encoder as i128
                && meta::name_bytes(&row.attr) == Some(b"idx")
                && row.value == Value::Int(i128::from(idx))
            {
                found =
                    meta::name_bytes(&row.name).map(|b| String::from_utf8_lossy(b).into_owned());
            }
        }
        Ok(found)
    }

    /// The members' encoded values of a physical record, ascending key order.
    pub fn unpack(&self, rec: &PhysRecord) -> Result<Vec<Vec<u8>>> {
        let what = || format!("record {}", hex::encode(&rec.phys_key));
        if !rec.is_batch() {
            let (idx, packed) =
                format::parse_single(&rec.value).map_err(|r| Error::corrupt(what(), r))?;
            let packer = self.packer_for(idx)?;
            let data = packer
                .unpack(packed, self.opts.max_value_bytes)
                .map_err(|e| Error::corrupt(what(), e.to_string()))?;
            return Ok(vec![data]);
        }
        let hd = format::parse_batch(&rec.value, rec.members.len(), self.opts.max_value_bytes)
            .map_err(|r| Error::corrupt(what(), r))?;
        let packer = self.packer_for(hd.packer_idx)?;
        let concat = packer
            .unpack(&rec.value[hd.payload_start..], hd.total())
            .map_err(|e| Error::corrupt(what(), e.to_string()))?;
        let parts =
            format::split_members(&concat, &hd.lengths).map_err(|r| Error::corrupt(what(), r))?;
        Ok(parts.into_iter().map(<[u8]>::to_vec).collect())
    }

    /// The end of a key prefix's range.
    pub fn prefix_end(prefix: &[u8]) -> Bound<Vec<u8>> {
        match strata_key::range::prefix_end(prefix) {
            Some(e) => Bound::Excluded(e),
            None => Bound::Unbounded,
        }
    }

    /// `store prefix + pack_int(idx)`.
    pub fn coll_prefix(&self, idx: u64) -> Vec<u8> {
        let mut p = self.prefix.clone();
        varint::write(idx, &mut p);
        p
    }
}
