//! Replaying operations given as JSON, in the format of the vectors' `ops` (the engine of
//! `strata centidb apply`): `{"op": "put", "collection": "people", "value": {...}}` → one
//! result line `{"result": ...}` or `{"error": "..."}`.
//!
//! Key functions, index functions and encoders are not stored by centidb (only their
//! names and numbers are); the replayer keeps them in a [`Catalog`] that the command line
//! saves beside the database, so a later run re-applies them to every collection it opens.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};
use strata_key::{Tuple, Value};
use strata_lsm::{Direction, Engine, KeyRange};

use crate::batch::BatchOptions;
use crate::codec;
use crate::collection::{Collection, PutOptions};
use crate::doc::Doc;
use crate::index::IndexQuery;
use crate::iter::Query;
use crate::keyfn::FnSpec;
use crate::store::{CollectionOptions, Store, StoreOptions};
use crate::typed::{self, key_from_json, to_typed, tuple_to_typed};

/// A collection's functions and encoder, as the command line remembers them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CollectionSpec {
    /// Key function (`None`: auto-increment).
    pub key_func: Option<FnSpec>,
    /// Encoder name.
    pub encoder: String,
    /// Counter of auto-increment keys, as bytes (hex), when not `key:<name>`.
    pub counter_name_hex: Option<String>,
    /// Counter name given as text (hex of its UTF-8), when it was unicode.
    pub counter_name_text: Option<String>,
    /// Index name → function.
    pub indexes: BTreeMap<String, FnSpec>,
}

/// Every store prefix (hex) → collection name → spec.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    /// The stores.
    pub stores: BTreeMap<String, BTreeMap<String, CollectionSpec>>,
}

/// Applies operations to a store over one engine.
pub struct Replayer {
    engine: Arc<dyn Engine>,
    opts: StoreOptions,
    store: Option<Store>,
    colls: BTreeMap<String, Collection>,
    /// The functions known so far (restored from and saved to the command line's file).
    pub catalog: Catalog,
    /// True once an operation changed the catalog (the caller saves it).
    pub catalog_changed: bool,
}

type OpResult = Result<Json, String>;

fn arg<'a>(op: &'a Json, name: &str) -> Option<&'a Json> {
    op.get(name).filter(|v| !v.is_null())
}

fn str_arg<'a>(op: &'a Json, name: &str) -> Result<&'a str, String> {
    arg(op, name)
        .and_then(Json::as_str)
        .ok_or_else(|| format!("missing string argument {name:?}"))
}

fn opt_key(op: &Json, name: &str) -> Result<Option<Tuple>, String> {
    arg(op, name)
        .map(|j| key_from_json(j).map_err(|e| format!("{name}: {e}")))
        .transpose()
}

fn opt_usize(op: &Json, name: &str) -> Result<Option<usize>, String> {
    match arg(op, name) {
        None => Ok(None),
        Some(j) => {
            let n = match j {
                Json::Number(n) => n.to_string(),
                Json::String(s) => s.clone(),
                Json::Object(_) => match typed::doc_from_json(j)? {
                    Doc::Int(i) => i.to_string(),
                    other => return Err(format!("{name}: {other} is not a count")),
                },
                other => return Err(format!("{name}: {other} is not a count")),
            };
            n.parse()
                .map(Some)
                .map_err(|_| format!("{name}: {n} is not a non-negative count"))
        }
    }
}

fn opt_bool(op: &Json, name: &str) -> bool {
    arg(op, name).and_then(Json::as_bool).unwrap_or(false)
}

fn int_arg(op: &Json, name: &str, default: i128) -> Result<i128, String> {
    match arg(op, name) {
        None => Ok(default),
        Some(j) => match typed::doc_from_json(j)? {
            Doc::Int(i) => Ok(i),
            Doc::Bool(b) => Ok(i128::from(b)),
            Doc::None => Ok(default),
            other => Err(format!("{name}: {other} is not an integer")),
        },
    }
}

fn spec_arg(op: &Json, name: &str) -> Result<Option<FnSpec>, String> {
    arg(op, name)
        .map(|j| serde_json::from_value(j.clone()).map_err(|e| format!("{name}: {e}")))
        .transpose()
}

/// A name given as a JSON string (Python `str`: bytes) or as a typed value.
fn name_value(j: &Json) -> Result<Value, String> {
    match j {
        Json::String(s) => Ok(Value::Bytes(s.as_bytes().to_vec())),
        other => match typed::doc_from_json(other)? {
            Doc::Bytes(b) => Ok(Value::Bytes(b)),
            Doc::Text(t) => Ok(Value::Text(t)),
            d => Err(format!("a name is str or unicode, not {}", d.kind_name())),
        },
    }
}

fn e2s(e: crate::Error) -> String {
    e.to_string()
}

fn list<T>(it: impl Iterator<Item = crate::Result<T>>, f: impl Fn(T) -> Json) -> OpResult {
    let mut out = Vec::new();
    for x in it {
        out.push(f(x.map_err(e2s)?));
    }
    Ok(Json::Array(out))
}

fn pair(k: &Tuple, v: &Doc) -> Json {
    json!([tuple_to_typed(k), to_typed(v)])
}

impl Replayer {
    /// A replayer over `engine` with the functions of `catalog`.
    pub fn new(engine: Arc<dyn Engine>, catalog: Catalog) -> Replayer {
        Replayer::with_options(engine, catalog, StoreOptions::default())
    }

    /// [`new`](Self::new) with store options.
    pub fn with_options(engine: Arc<dyn Engine>, catalog: Catalog, opts: StoreOptions) -> Replayer {
        Replayer {
            engine,
            opts,
            store: None,
            colls: BTreeMap::new(),
            catalog,
            catalog_changed: false,
        }
    }

    /// Applies one operation and returns its output line.
    pub fn apply(&mut self, op: &Json) -> Json {
        match self.apply_inner(op) {
            Ok(r) => json!({ "result": r }),
            Err(e) => json!({ "error": e.replace('\n', "; ") }),
        }
    }

    fn store(&mut self) -> Result<Store, String> {
        if self.store.is_none() {
            self.store = Some(
                Store::open_with(Arc::clone(&self.engine), b"", self.opts.clone()).map_err(e2s)?,
            );
        }
        self.store.clone().ok_or_else(|| "no store".into())
    }

    fn prefix_hex(&self) -> String {
        self.store
            .as_ref()
            .map(|s| hex::encode(s.prefix()))
            .unwrap_or_default()
    }

    fn specs(&mut self) -> &mut BTreeMap<String, CollectionSpec> {
        let p = self.prefix_hex();
        self.catalog.stores.entry(p).or_default()
    }

    fn open_collection(&mut self, name: &str, spec: &CollectionSpec) -> Result<Collection, String> {
        let store = self.store()?;
        let encoder = codec::encoder_by_name(&spec.encoder).ok_or_else(|| {
            format!(
                "unknown encoder {:?} (key, pickle, json, plain)",
                spec.encoder
            )
        })?;
        let mut opts = CollectionOptions::new().encoder(encoder);
        if let Some(f) = &spec.key_func {
            opts = opts.key_fn(f.to_fn());
        }
        if let Some(h) = &spec.counter_name_hex {
            opts = opts.counter_name(Value::Bytes(hex::decode(h).map_err(|e| e.to_string())?));
        } else if let Some(h) = &spec.counter_name_text {
            let b = hex::decode(h).map_err(|e| e.to_string())?;
            opts = opts.counter_name(Value::Text(
                String::from_utf8(b).map_err(|e| e.to_string())?,
            ));
        }
        let c = store.add_collection(name, opts).map_err(e2s)?;
        for (iname, f) in &spec.indexes {
            if c.index(iname).is_err() {
                c.add_index(iname, f.to_fn()).map_err(e2s)?;
            }
        }
        self.colls.insert(name.to_owned(), c.clone());
        Ok(c)
    }

    /// The collection named by the op: added in this store, or re-added from the catalog.
    fn coll(&mut self, op: &Json) -> Result<Collection, String> {
        let name = str_arg(op, "collection")?.to_owned();
        self.collection(&name)
    }

    /// The collection `name` of the current store: added in it, or re-added from the
    /// catalog (with its functions and indexes), or opened from the metadata alone.
    pub fn collection(&mut self, name: &str) -> Result<Collection, String> {
        let name = name.to_owned();
        if let Some(c) = self.colls.get(&name) {
            return Ok(c.clone());
        }
        if let Some(spec) = self.specs().get(&name).cloned() {
            return self.open_collection(&name, &spec);
        }
        let c = self.store()?.collection(&name).map_err(e2s)?;
        self.colls.insert(name, c.clone());
        Ok(c)
    }

    fn apply_inner(&mut self, op: &Json) -> OpResult {
        let kind = op
            .get("op")
            .and_then(Json::as_str)
            .ok_or("an op object needs a string field \"op\"")?;
        match kind {
            "open_store" => self.open_store(op),
            "add_collection" => self.add_collection(op),
            "add_index" => self.add_index(op),
            "add_encoder" => {
                self.store()?
                    .add_encoder(str_arg(op, "name")?)
                    .map_err(e2s)?;
                Ok(Json::Null)
            }
            "set_blind" => {
                let c = self.coll(op)?;
                c.set_blind(opt_bool(op, "blind")).map_err(e2s)?;
                Ok(Json::Null)
            }
            "count" => {
                let name = name_value(arg(op, "name").ok_or("count needs a name")?)?;
                let n = int_arg(op, "n", 1)?;
                let init = int_arg(op, "init", 1)?;
                let v = self.store()?.count(&name, n, init).map_err(e2s)?;
                Ok(to_typed(&Doc::Int(v)))
            }
            "put" => self.put(op),
            "delete" => {
                let c = self.coll(op)?;
                let k = opt_key(op, "key")?.ok_or("delete needs a key")?;
                c.delete(&k).map_err(e2s)?;
                Ok(Json::Null)
            }
            "get" => {
                let c = self.coll(op)?;
                let k = opt_key(op, "key")?.ok_or("get needs a key")?;
                Ok(match c.get(&k).map_err(e2s)? {
                    Some(v) => to_typed(&v),
                    None => typed::missing(),
                })
            }
            "items" | "keys" | "values" | "find" => self.read(kind, op),
            "batch" => self.batch(op),
            k if k.starts_with("index_") => self.index_op(&k["index_".len()..], op),
            other => Err(format!("unknown op {other:?}")),
        }
    }

    fn open_store(&mut self, op: &Json) -> OpResult {
        let prefix = match arg(op, "prefix_hex") {
            Some(j) => hex::decode(j.as_str().ok_or("prefix_hex is a hex string")?)
                .map_err(|e| format!("prefix_hex: {e}"))?,
            None => Vec::new(),
        };
        if !opt_bool(op, "reuse_engine") {
            // A new engine: the directory must not hold another store's data.
            let mut it = self
                .engine
                .range(KeyRange::all(), Direction::Forward)
                .map_err(|e| e.to_string())?;
            if it.next().is_some() {
                return Err("open_store with reuse_engine=false needs an empty database (this one holds keys; use reuse_engine=true)".into());
            }
            self.catalog = Catalog::default();
            self.catalog_changed = true;
        }
        self.store = Some(
            Store::open_with(Arc::clone(&self.engine), &prefix, self.opts.clone()).map_err(e2s)?,
        );
        self.colls.clear();
        Ok(Json::Null)
    }

    fn add_collection(&mut self, op: &Json) -> OpResult {
        let name = str_arg(op, "name")?.to_owned();
        let (hex_name, text_name) = match arg(op, "counter_name") {
            None => (None, None),
            Some(j) => match name_value(j)? {
                Value::Bytes(b) => (Some(hex::encode(b)), None),
                Value::Text(t) => (None, Some(hex::encode(t.as_bytes()))),
                _ => (None, None),
            },
        };
        let old = self.specs().get(&name).cloned();
        let spec = CollectionSpec {
            key_func: spec_arg(op, "key_func")?,
            encoder: arg(op, "encoder")
                .and_then(Json::as_str)
                .unwrap_or("pickle")
                .to_owned(),
            counter_name_hex: hex_name,
            counter_name_text: text_name,
            indexes: old.map(|o| o.indexes).unwrap_or_default(),
        };
        self.colls.remove(&name);
        let c = self.open_collection(&name, &spec)?;
        if self.specs().get(&name) != Some(&spec) {
            self.specs().insert(name, spec);
            self.catalog_changed = true;
        }
        Ok(
            json!({"idx": to_typed(&Doc::Int(i128::from(c.idx()))), "prefix_hex": hex::encode(c.prefix())}),
        )
    }

    fn add_index(&mut self, op: &Json) -> OpResult {
        let c = self.coll(op)?;
        let name = str_arg(op, "name")?.to_owned();
        let f = spec_arg(op, "func")?.ok_or("add_index needs a func")?;
        let ix = match c.index(&name) {
            Ok(ix) => ix,
            Err(_) => c.add_index(&name, f.to_fn()).map_err(e2s)?,
        };
        let cname = c.name().to_owned();
        let spec = self.specs().entry(cname).or_insert_with(|| CollectionSpec {
            encoder: c.encoder().name().to_owned(),
            ..CollectionSpec::default()
        });
        if spec.indexes.get(&name) != Some(&f) {
            spec.indexes.insert(name, f);
            self.catalog_changed = true;
        }
        let prefix = hex::encode(crate::varint::pack(ix.idx()));
        let store_prefix = self.prefix_hex();
        Ok(
            json!({"idx": to_typed(&Doc::Int(i128::from(ix.idx()))), "prefix_hex": format!("{store_prefix}{prefix}")}),
        )
    }

    fn put(&mut self, op: &Json) -> OpResult {
        let c = self.coll(op)?;
        let value = typed::doc_from_json(arg(op, "value").ok_or("put needs a value")?)?;
        let encoded = arg(op, "encoded_hex")
            .map(|j| {
                j.as_str()
                    .ok_or("encoded_hex is a hex string".to_owned())
                    .and_then(|s| hex::decode(s).map_err(|e| format!("encoded_hex: {e}")))
            })
            .transpose()?;
        let opts = PutOptions {
            packer: arg(op, "packer").and_then(Json::as_str).map(str::to_owned),
            key: opt_key(op, "key")?,
            blind: opt_bool(op, "blind"),
            encoded,
        };
        let k = c.put_with(&value, &opts).map_err(e2s)?;
        Ok(json!({"key": tuple_to_typed(&k)}))
    }

    fn query(op: &Json) -> Result<Query, String> {
        Ok(Query {
            key: opt_key(op, "key")?,
            lo: opt_key(op, "lo")?,
            hi: opt_key(op, "hi")?,
            prefix: opt_key(op, "prefix")?,
            reverse: opt_bool(op, "reverse"),
            max: opt_usize(op, "max")?,
            include: opt_bool(op, "include"),
        })
    }

    fn read(&mut self, kind: &str, op: &Json) -> OpResult {
        let c = self.coll(op)?;
        let q = Self::query(op)?;
        match kind {
            "items" => list(c.items(&q).map_err(e2s)?, |(k, v)| pair(&k, &v)),
            "keys" => list(c.keys(&q).map_err(e2s)?, |k| tuple_to_typed(&k)),
            "values" => list(c.values(&q).map_err(e2s)?, |v| to_typed(&v)),
            _ => Ok(match c.find(&q).map_err(e2s)? {
                Some(v) => to_typed(&v),
                None => typed::missing(),
            }),
        }
    }

    fn index_op(&mut self, kind: &str, op: &Json) -> OpResult {
        let c = self.coll(op)?;
        let ix = c.index(str_arg(op, "index")?).map_err(e2s)?;
        let q = IndexQuery {
            args: opt_key(op, "args")?,
            lo: opt_key(op, "lo")?,
            hi: opt_key(op, "hi")?,
            prefix: opt_key(op, "prefix")?,
            reverse: opt_bool(op, "reverse"),
            max: opt_usize(op, "max")?,
            include: opt_bool(op, "include"),
        };
        let x = || opt_key(op, "x")?.ok_or_else(|| format!("index_{kind} needs x"));
        let found = |v: Option<Doc>| v.map_or_else(typed::missing, |v| to_typed(&v));
        match kind {
            "pairs" => list(ix.pairs(&q).map_err(e2s)?, |(t, k)| {
                json!([tuple_to_typed(&t), tuple_to_typed(&k)])
            }),
            "tups" => list(ix.tups(&q).map_err(e2s)?, |t| tuple_to_typed(&t)),
            "keys" => list(ix.keys(&q).map_err(e2s)?, |k| tuple_to_typed(&k)),
            "items" => list(ix.items(&q).map_err(e2s)?, |(k, v)| pair(&k, &v)),
            "values" => list(ix.values(&q).map_err(e2s)?, |v| to_typed(&v)),
            "count" => Ok(to_typed(&Doc::Int(ix.count(&q).map_err(e2s)? as i128))),
            "has" => Ok(to_typed(&Doc::Bool(ix.has(&x()?).map_err(e2s)?))),
            "get" => Ok(found(ix.get(&x()?).map_err(e2s)?)),
            "find" => Ok(found(ix.find(&q).map_err(e2s)?)),
            other => Err(format!("unknown op index_{other}")),
        }
    }

    fn batch(&mut self, op: &Json) -> OpResult {
        let c = self.coll(op)?;
        let o = BatchOptions {
            lo: opt_key(op, "lo")?,
            hi: opt_key(op, "hi")?,
            prefix: opt_key(op, "prefix")?,
            max_recs: opt_usize(op, "max_recs")?,
            max_bytes: opt_usize(op, "max_bytes")?,
            preserve: arg(op, "preserve").and_then(Json::as_bool).unwrap_or(true),
            packer: arg(op, "packer").and_then(Json::as_str).map(str::to_owned),
            max_phys: opt_usize(op, "max_phys")?,
            grouper: spec_arg(op, "grouper")?.map(|f| f.to_fn()),
        };
        c.batch(&o).map_err(e2s)?;
        // The original's batch() returns None (its docstring promises a report).
        Ok(to_typed(&Doc::None))
    }
}
