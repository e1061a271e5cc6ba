//! Property tests against an in-memory model: random collections with indexes, puts,
//! deletes, batches (with splits on later writes), reopens; after every step the store's
//! reads, its index entries and the physical layout agree with the model.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use strata_centidb::codec::{key::encode_key, pickle::PickleEncoder, pyjson::JsonEncoder};
use strata_centidb::format::PhysRecord;
use strata_centidb::index::parse_entry;
use strata_centidb::{
    BatchOptions, Collection, CollectionOptions, Doc, FnSpec, IndexQuery, Query, Store,
};
use strata_key::{Tuple, Value};
use strata_lsm::{Direction, Engine, KeyRange, MemEngine};

/// A key: one or two small ints (so some keys are tuple-prefixes of others).
fn key_strategy() -> impl Strategy<Value = Tuple> {
    prop_oneof![
        (0i64..6).prop_map(|a| Tuple(vec![Value::Int(a.into())])),
        (0i64..6, 0i64..3)
            .prop_map(|(a, b)| Tuple(vec![Value::Int(a.into()), Value::Int(b.into())])),
    ]
}

fn bound_strategy() -> impl Strategy<Value = Option<Tuple>> {
    prop::option::of(key_strategy())
}

#[derive(Debug, Clone)]
enum Op {
    Put {
        c: usize,
        key: Tuple,
        tag: i64,
        tags: Vec<i64>,
        packer: usize,
    },
    /// Several puts in one transaction (`Collection::put_all`).
    PutAll {
        c: usize,
        rows: Vec<(Tuple, i64)>,
    },
    Delete {
        c: usize,
        key: Tuple,
    },
    Batch {
        c: usize,
        lo: Option<Tuple>,
        hi: Option<Tuple>,
        max_recs: usize,
        preserve: bool,
        packer: usize,
        group: bool,
    },
    Read {
        c: usize,
        lo: Option<Tuple>,
        hi: Option<Tuple>,
        prefix: Option<Tuple>,
        reverse: bool,
        max: Option<usize>,
        include: bool,
    },
    Reopen,
}

const PACKERS: [&str; 5] = ["plain", "zlib", "bz2", "zstd", "lz4"];

fn op_strategy() -> impl Strategy<Value = Op> {
    let c = 0usize..2;
    prop_oneof![
        6 => (c.clone(), key_strategy(), 0i64..3, prop::collection::vec(0i64..4, 0..3), 0usize..5)
            .prop_map(|(c, key, tag, tags, packer)| Op::Put { c, key, tag, tags, packer }),
        2 => (c.clone(), key_strategy()).prop_map(|(c, key)| Op::Delete { c, key }),
        1 => (c.clone(), prop::collection::vec((key_strategy(), 0i64..3), 1..5))
            .prop_map(|(c, rows)| Op::PutAll { c, rows }),
        2 => (c.clone(), bound_strategy(), bound_strategy(), 2usize..5, any::<bool>(), 0usize..5, any::<bool>())
            .prop_map(|(c, lo, hi, max_recs, preserve, packer, group)| Op::Batch { c, lo, hi, max_recs, preserve, packer, group }),
        2 => (c, bound_strategy(), bound_strategy(), prop::option::of(key_strategy().prop_map(|t| Tuple(t.0[..1].to_vec()))),
              any::<bool>(), prop::option::of(0usize..5), any::<bool>())
            .prop_map(|(c, lo, hi, prefix, reverse, max, include)| Op::Read { c, lo, hi, prefix, reverse, max, include }),
        1 => Just(Op::Reopen),
    ]
}

/// Value of a record: (key, tag, [tags]).
fn value(key: &Tuple, tag: i64, tags: &[i64]) -> Doc {
    Doc::Tuple(vec![
        Doc::from_tuple(key),
        Doc::Int(tag.into()),
        Doc::List(tags.iter().map(|t| Doc::Int((*t).into())).collect()),
    ])
}

struct Harness {
    engine: Arc<dyn Engine>,
    /// For an engine on disk: its directory (Reopen closes and reopens it).
    dir: Option<tempfile::TempDir>,
    colls: Vec<Collection>,
    /// Per collection: encoded key → (key, value).
    model: Vec<BTreeMap<Vec<u8>, (Tuple, Doc)>>,
}

fn open(engine: &Arc<dyn Engine>) -> Vec<Collection> {
    let store = Store::open(Arc::clone(engine), b"").unwrap();
    let mut out = Vec::new();
    for (i, enc) in [("a", true), ("b", false)].into_iter().enumerate() {
        let encoder: Arc<dyn strata_centidb::codec::Encoder> = if enc.1 {
            Arc::new(PickleEncoder)
        } else {
            Arc::new(JsonEncoder)
        };
        let c = store
            .add_collection(
                enc.0,
                CollectionOptions::new()
                    .key_fn(FnSpec::Item { index: 0 }.to_fn())
                    .encoder(encoder),
            )
            .unwrap();
        c.add_index("by_tag", FnSpec::Item { index: 1 }.to_fn())
            .unwrap();
        c.add_index("by_tags", FnSpec::Item { index: 2 }.to_fn())
            .unwrap();
        assert_eq!(c.idx(), 10 + 3 * i as u64);
        out.push(c);
    }
    out
}

/// JSON turns tuples into lists: compare values as lists.
fn norm(d: &Doc) -> Doc {
    match d {
        Doc::Tuple(v) | Doc::List(v) => Doc::List(v.iter().map(norm).collect()),
        other => other.clone(),
    }
}

impl Harness {
    fn new() -> Harness {
        let engine: Arc<dyn Engine> = Arc::new(MemEngine::new());
        let colls = open(&engine);
        Harness {
            engine,
            dir: None,
            colls,
            model: vec![BTreeMap::new(), BTreeMap::new()],
        }
    }

    fn on_disk() -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let engine = lsm(dir.path());
        let colls = open(&engine);
        Harness {
            engine,
            dir: Some(dir),
            colls,
            model: vec![BTreeMap::new(), BTreeMap::new()],
        }
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Put {
                c,
                key,
                tag,
                tags,
                packer,
            } => {
                let v = value(key, *tag, tags);
                let opts = strata_centidb::PutOptions {
                    packer: Some(PACKERS[*packer].into()),
                    ..Default::default()
                };
                assert_eq!(&self.colls[*c].put_with(&v, &opts).unwrap(), key);
                self.model[*c].insert(encode_key(key).unwrap(), (key.clone(), v));
            }
            Op::PutAll { c, rows } => {
                let vals: Vec<Doc> = rows.iter().map(|(k, t)| value(k, *t, &[*t])).collect();
                let keys = self.colls[*c].put_all(&vals, &Default::default()).unwrap();
                for ((k, _), (got, v)) in rows.iter().zip(keys.iter().zip(vals)) {
                    assert_eq!(got, k);
                    self.model[*c].insert(encode_key(k).unwrap(), (k.clone(), v));
                }
            }
            Op::Delete { c, key } => {
                let had = self.colls[*c].delete(key).unwrap();
                assert_eq!(
                    had,
                    self.model[*c].remove(&encode_key(key).unwrap()).is_some()
                );
            }
            Op::Batch {
                c,
                lo,
                hi,
                max_recs,
                preserve,
                packer,
                group,
            } => {
                let o = BatchOptions {
                    lo: lo.clone(),
                    hi: hi.clone(),
                    max_recs: Some(*max_recs),
                    preserve: *preserve,
                    packer: Some(PACKERS[*packer].into()),
                    grouper: group.then(|| FnSpec::Item { index: 1 }.to_fn()),
                    ..Default::default()
                };
                self.colls[*c].batch(&o).unwrap();
            }
            Op::Read {
                c,
                lo,
                hi,
                prefix,
                reverse,
                max,
                include,
            } => {
                let q = Query {
                    key: None,
                    lo: lo.clone(),
                    hi: hi.clone(),
                    prefix: prefix.clone(),
                    reverse: *reverse,
                    max: *max,
                    include: *include,
                };
                let got: Vec<(Tuple, Doc)> = self.colls[*c]
                    .items(&q)
                    .unwrap()
                    .map(|r| r.unwrap())
                    .collect();
                let lo_e = lo.as_ref().map(|t| encode_key(t).unwrap());
                let hi_e = hi.as_ref().map(|t| encode_key(t).unwrap());
                let mut want: Vec<(Tuple, Doc)> = self.model[*c]
                    .iter()
                    .filter(|(e, (k, _))| {
                        lo_e.as_ref().is_none_or(|l| *e >= l)
                            && hi_e
                                .as_ref()
                                .is_none_or(|h| if *include { *e <= h } else { *e < h })
                            && prefix.as_ref().is_none_or(|p| k.starts_with(p))
                    })
                    .map(|(_, kv)| kv.clone())
                    .collect();
                if *reverse {
                    want.reverse();
                }
                if let Some(m) = max {
                    want.truncate(*m);
                }
                let got: Vec<(Tuple, Doc)> = got.into_iter().map(|(k, v)| (k, norm(&v))).collect();
                let want: Vec<(Tuple, Doc)> =
                    want.into_iter().map(|(k, v)| (k, norm(&v))).collect();
                assert_eq!(got, want, "{op:?}");
            }
            Op::Reopen => {
                if let Some(d) = &self.dir {
                    self.colls.clear();
                    self.engine.close().unwrap();
                    self.engine = lsm(d.path());
                }
                self.colls = open(&self.engine);
            }
        }
    }

    /// Every record readable by get; the index entries exactly those of the records; the
    /// physical records' key runs disjoint and ascending.
    fn check(&self) {
        for (ci, c) in self.colls.iter().enumerate() {
            for (k, v) in self.model[ci].values() {
                assert_eq!(
                    c.get(k).unwrap().map(|d| norm(&d)),
                    Some(norm(v)),
                    "get {k:?}"
                );
            }
            let all: Vec<Tuple> = c.keys(&Query::all()).unwrap().map(|r| r.unwrap()).collect();
            let want: Vec<Tuple> = self.model[ci].values().map(|(k, _)| k.clone()).collect();
            assert_eq!(all, want);
            // Physical layout.
            let recs: Vec<PhysRecord> = self
                .engine
                .range(KeyRange::prefix(c.prefix()), Direction::Forward)
                .unwrap()
                .map(|kv| {
                    let (k, v) = kv.unwrap();
                    PhysRecord::parse(c.prefix(), k, v).unwrap()
                })
                .collect();
            for w in recs.windows(2) {
                assert!(
                    w[0].hi().enc < w[1].lo().enc,
                    "runs overlap: {:?} / {:?}",
                    w[0].phys_key,
                    w[1].phys_key
                );
            }
            // Index entries.
            for (name, f) in [("by_tag", 1usize), ("by_tags", 2)] {
                let ix = c.index(name).unwrap();
                let got: BTreeSet<(Tuple, Tuple)> = ix
                    .pairs(&IndexQuery::all())
                    .unwrap()
                    .map(|r| r.unwrap())
                    .collect();
                let n = ix.count(&IndexQuery::all()).unwrap();
                let mut want = BTreeSet::new();
                for (k, v) in self.model[ci].values() {
                    let Doc::Tuple(items) = v else { unreachable!() };
                    match &items[f] {
                        Doc::List(l) => {
                            for t in l {
                                want.insert((t.to_key().unwrap(), k.clone()));
                            }
                        }
                        other => {
                            want.insert((other.to_key().unwrap(), k.clone()));
                        }
                    }
                }
                assert_eq!(n, want.len(), "{name}: duplicate or extra entries");
                assert_eq!(got, want, "{name}");
                let _ = parse_entry; // entries decode (pairs above parsed them)
            }
        }
    }
}

fn lsm(dir: &std::path::Path) -> Arc<dyn Engine> {
    let o = strata_lsm::LsmOptions {
        stripes: 4,
        sync: strata_lsm::SyncMode::None,
        ..Default::default()
    };
    Arc::new(strata_lsm::LsmEngine::open(dir, o).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_store_agrees_with_the_model(ops in prop::collection::vec(op_strategy(), 1..40)) {
        let mut h = Harness::new();
        for op in &ops {
            h.apply(op);
            h.check();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// The same on the LSM engine, where a reopen closes and reopens the directory.
    #[test]
    fn the_store_on_disk_agrees_with_the_model(ops in prop::collection::vec(op_strategy(), 1..30)) {
        let mut h = Harness::on_disk();
        for op in &ops {
            h.apply(op);
            h.check();
        }
    }
}
