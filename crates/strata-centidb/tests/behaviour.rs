//! Behaviour where Strata deliberately differs from the original (docs/format/centidb.md,
//! "Differences"), and the store's guarantees: conflicts between stores, user encoders,
//! missing packers, refusal of bad input.

use std::sync::Arc;

use strata_centidb::codec::{key::KeyEncoder, Encoder};
use strata_centidb::{
    BatchOptions, Collection, CollectionOptions, Doc, Error, FnSpec, IndexQuery, PutOptions, Query,
    Store,
};
use strata_key::{tuple, Tuple, Value};
use strata_lsm::{Direction, Engine, KeyRange, MemEngine};

fn mem() -> Arc<dyn Engine> {
    Arc::new(MemEngine::new())
}

fn keyed(store: &Store, name: &str) -> Collection {
    store
        .add_collection(
            name,
            CollectionOptions::new()
                .key_fn(FnSpec::Item { index: 0 }.to_fn())
                .encoder(Arc::new(KeyEncoder)),
        )
        .unwrap()
}

fn row(k: i64, v: &str) -> Doc {
    Doc::Tuple(vec![Doc::Int(k.into()), Doc::Text(v.into())])
}

fn physical(e: &Arc<dyn Engine>, prefix: &[u8]) -> Vec<String> {
    e.range(KeyRange::prefix(prefix), Direction::Forward)
        .unwrap()
        .map(|kv| hex::encode(kv.unwrap().0))
        .collect()
}

fn keys(c: &Collection, q: &Query) -> Vec<Tuple> {
    c.keys(q).unwrap().map(|k| k.unwrap()).collect()
}

#[test]
fn the_grouper_starts_a_batch_when_the_group_changes() {
    let e = mem();
    let s = Store::open(Arc::clone(&e), b"").unwrap();
    let c = s
        .add_collection(
            "g",
            CollectionOptions::new()
                .key_fn(
                    FnSpec::Items {
                        indices: vec![0, 1],
                    }
                    .to_fn(),
                )
                .encoder(Arc::new(KeyEncoder)),
        )
        .unwrap();
    for (g, n) in [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("c", 1)] {
        c.put(&Doc::Tuple(vec![
            Doc::Text(g.into()),
            Doc::Int(n),
            Doc::Text("v".into()),
        ]))
        .unwrap();
    }
    let rep = c
        .batch(&BatchOptions {
            max_recs: Some(10),
            grouper: Some(FnSpec::Item { index: 0 }.to_fn()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!((rep.found, rep.made), (5, 2));
    // [a1 a2 a3], [b1 b2], c1 alone (the original: a1 alone, [a2 a3 b1], [b2 c1]).
    assert_eq!(
        physical(&e, &[0x0a]),
        [
            "0a32b0c015036632b0c015026632b0c01501",
            "0a32b18015026632b1801501",
            "0a32b1c01501"
        ]
    );
}

#[test]
fn a_put_over_a_member_splits_the_batch_and_leaves_one_value() {
    let e = mem();
    let s = Store::open(Arc::clone(&e), b"").unwrap();
    let c = keyed(&s, "log");
    for k in 1..=6 {
        c.put(&row(k, "old")).unwrap();
    }
    c.batch(&BatchOptions {
        max_recs: Some(3),
        packer: Some("zlib".into()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        physical(&e, &[0x0a]),
        ["0a1503661502661501", "0a1506661505661504"]
    );
    c.put(&row(5, "new")).unwrap();
    assert_eq!(
        physical(&e, &[0x0a]),
        ["0a1503661502661501", "0a1504", "0a1505", "0a1506"]
    );
    assert_eq!(c.get(&tuple!(5)).unwrap(), Some(row(5, "new")));
    let all: Vec<(Tuple, Doc)> = c
        .items(&Query::all())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(all.len(), 6);
    assert_eq!(all[4], (tuple!(5), row(5, "new")));
}

#[test]
fn a_new_key_inside_a_batch_span_splits_it_so_every_key_stays_readable() {
    let e = mem();
    let s = Store::open(Arc::clone(&e), b"").unwrap();
    let c = keyed(&s, "b");
    for k in [10, 20, 30, 40] {
        c.put(&row(k, "v")).unwrap();
    }
    c.batch(&BatchOptions {
        max_recs: Some(4),
        ..Default::default()
    })
    .unwrap();
    c.put(&row(25, "inside")).unwrap();
    for k in [10, 20, 25, 30, 40] {
        assert!(c.get(&tuple!(k)).unwrap().is_some(), "{k}");
    }
    let rev = keys(
        &c,
        &Query {
            reverse: true,
            ..Query::default()
        },
    );
    assert_eq!(
        rev,
        [tuple!(40), tuple!(30), tuple!(25), tuple!(20), tuple!(10)]
    );
}

#[test]
fn batches_never_end_where_the_next_key_extends_the_last() {
    // (1,) and (1, 5): a batch ending at (1,) would sort after (1, 5).
    let e = mem();
    let s = Store::open(Arc::clone(&e), b"").unwrap();
    let c = s
        .add_collection(
            "p",
            CollectionOptions::new()
                .key_fn(FnSpec::Item { index: 0 }.to_fn())
                .encoder(Arc::new(strata_centidb::codec::pickle::PickleEncoder)),
        )
        .unwrap();
    let k = |t: Tuple| Doc::Tuple(vec![Doc::from_tuple(&t), Doc::None]);
    for t in [tuple!(0), tuple!(1), tuple!(1, 5), tuple!(2)] {
        c.put(&k(t)).unwrap();
    }
    c.batch(&BatchOptions {
        max_recs: Some(2),
        ..Default::default()
    })
    .unwrap();
    let got = keys(&c, &Query::all());
    assert_eq!(got, [tuple!(0), tuple!(1), tuple!(1, 5), tuple!(2)]);
    let rev = keys(
        &c,
        &Query {
            reverse: true,
            hi: Some(tuple!(1, 9)),
            ..Query::default()
        },
    );
    assert_eq!(rev, [tuple!(1, 5), tuple!(1), tuple!(0)]);
    // A later put of a key extending a batch's last key splits that batch.
    c.put(&k(tuple!(0, 1))).unwrap();
    assert_eq!(
        keys(&c, &Query::all()),
        [tuple!(0), tuple!(0, 1), tuple!(1), tuple!(1, 5), tuple!(2)]
    );
}

#[test]
fn preserve_false_replaces_old_batches() {
    let e = mem();
    let s = Store::open(Arc::clone(&e), b"").unwrap();
    let c = keyed(&s, "b");
    for k in 1..=6 {
        c.put(&row(k, "v")).unwrap();
    }
    c.batch(&BatchOptions {
        max_recs: Some(2),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(physical(&e, &[0x0a]).len(), 3);
    c.batch(&BatchOptions {
        max_recs: Some(6),
        preserve: false,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(
        physical(&e, &[0x0a]),
        ["0a150666150566150466150366150266 1501".replace(' ', "")]
    );
    assert_eq!(keys(&c, &Query::all()).len(), 6);
}

#[test]
fn falsy_keys_and_bounds_are_keys_and_bounds() {
    let s = Store::open(mem(), b"").unwrap();
    let c = keyed(&s, "k");
    for k in [-1, 0, 1, 2] {
        c.put(&row(k, "v")).unwrap();
    }
    assert_eq!(c.get(&tuple!(0)).unwrap(), Some(row(0, "v")));
    assert_eq!(c.get(&tuple!(5)).unwrap(), None);
    let q = Query {
        lo: Some(tuple!(0)),
        hi: Some(tuple!(2)),
        ..Query::default()
    };
    assert_eq!(keys(&c, &q), [tuple!(0), tuple!(1)]);
}

#[test]
fn prefix_matches_whole_elements() {
    let s = Store::open(mem(), b"").unwrap();
    let c = keyed(&s, "k");
    for t in ["a", "a\u{0}", "ab"] {
        c.put(&Doc::Tuple(vec![Doc::Text(t.into())])).unwrap();
    }
    let q = Query {
        prefix: Some(tuple!("a")),
        ..Query::default()
    };
    assert_eq!(keys(&c, &q), [tuple!("a")]);
}

#[test]
fn index_values_none_lists_and_falsy_and_a_late_index_is_built() {
    let s = Store::open(mem(), b"").unwrap();
    let c = s
        .add_collection(
            "r",
            CollectionOptions::new().key_fn(FnSpec::Item { index: 0 }.to_fn()),
        )
        .unwrap();
    c.put(&Doc::Tuple(vec![Doc::Int(1), Doc::Int(0)])).unwrap();
    c.put(&Doc::Tuple(vec![Doc::Int(2), Doc::None])).unwrap();
    c.put(&Doc::Tuple(vec![
        Doc::Int(3),
        Doc::List(vec![Doc::None, Doc::Text(String::new())]),
    ]))
    .unwrap();
    let ix = c.add_index("v", FnSpec::Item { index: 1 }.to_fn()).unwrap();
    let pairs: Vec<(Tuple, Tuple)> = ix
        .pairs(&IndexQuery::all())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        pairs,
        [
            (tuple!(Value::Null), tuple!(3)),
            (tuple!(0), tuple!(1)),
            (tuple!(""), tuple!(3)),
        ]
    );
    assert!(ix.has(&tuple!(0)).unwrap());
    assert_eq!(
        ix.get(&tuple!(0)).unwrap(),
        Some(Doc::Tuple(vec![Doc::Int(1), Doc::Int(0)]))
    );
    // args= honours max and reverse.
    c.put(&Doc::Tuple(vec![Doc::Int(4), Doc::Int(0)])).unwrap();
    let q = IndexQuery {
        args: Some(tuple!(0)),
        reverse: true,
        max: Some(1),
        ..IndexQuery::default()
    };
    assert_eq!(
        ix.keys(&q).unwrap().map(|r| r.unwrap()).collect::<Vec<_>>(),
        [tuple!(4)]
    );
}

#[test]
fn two_stores_on_one_engine_lose_no_counter_increment() {
    let e = mem();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let e = Arc::clone(&e);
            std::thread::spawn(move || {
                let s = Store::open(e, b"").unwrap();
                for _ in 0..200 {
                    loop {
                        match s.count(&Value::Bytes(b"n".to_vec()), 1, 0) {
                            Ok(_) => break,
                            Err(Error::Conflict) => continue,
                            Err(other) => panic!("{other}"),
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = Store::open(e, b"").unwrap();
    assert_eq!(s.count(&Value::Bytes(b"n".to_vec()), 0, 0).unwrap(), 800);
}

/// An encoder of the user's: values are UTF-8 text, stored reversed.
struct Reversed;

impl Encoder for Reversed {
    fn name(&self) -> &str {
        "reversed"
    }

    fn pack(&self, v: &Doc) -> strata_centidb::Result<Vec<u8>> {
        match v {
            Doc::Text(t) => Ok(t.bytes().rev().collect()),
            _ => Err(Error::Invalid("text only".into())),
        }
    }

    fn unpack(&self, d: &[u8]) -> strata_centidb::Result<Doc> {
        let b: Vec<u8> = d.iter().rev().copied().collect();
        Ok(Doc::Text(
            String::from_utf8(b).map_err(|e| Error::Invalid(e.to_string()))?,
        ))
    }
}

#[test]
fn user_encoders_and_packers_are_found_by_name_after_reopening() {
    let e = mem();
    let s = Store::open(Arc::clone(&e), b"").unwrap();
    let c = s
        .add_collection("u", CollectionOptions::new().encoder(Arc::new(Reversed)))
        .unwrap();
    let k = c
        .put_with(
            &Doc::Text("hello".into()),
            &PutOptions {
                packer: Some("lz4".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(k, tuple!(1));
    // A new store: the collection's encoder name is in the metadata; the lz4 packer is
    // found by the number the record carries.
    let s2 = Store::open(Arc::clone(&e), b"").unwrap();
    assert!(matches!(
        s2.collection("u"),
        Err(Error::MissingEncoder { .. })
    ));
    s2.register_encoder(Arc::new(Reversed));
    let c2 = s2.collection("u").unwrap();
    assert_eq!(c2.get(&tuple!(1)).unwrap(), Some(Doc::Text("hello".into())));
    assert!(
        c2.put(&Doc::Text("x".into())).is_err(),
        "no key function: a key is needed"
    );
}

#[test]
fn a_record_with_an_unknown_packer_is_a_clear_error() {
    let e = mem();
    let s = Store::open(Arc::clone(&e), b"").unwrap();
    let c = keyed(&s, "k");
    c.put(&row(1, "v")).unwrap();
    // Rewrite the record with packer number 77, which the store never registered.
    strata_lsm::engine::put(e.as_ref(), &hex::decode("0a1501").unwrap(), &[77, 0x15, 1]).unwrap();
    let err = c.get(&tuple!(1)).unwrap_err();
    assert!(
        matches!(err, Error::MissingEncoder { idx: 77, .. }),
        "{err}"
    );
    // A corrupt batch header is an error naming the record, not a panic.
    strata_lsm::engine::put(e.as_ref(), &hex::decode("0a1503661502").unwrap(), &[9, 9]).unwrap();
    let err = keys(&c, &Query::all());
    assert_eq!(err, [tuple!(1), tuple!(2), tuple!(3)], "keys need no value");
    let q = Query {
        lo: Some(tuple!(2)),
        ..Query::default()
    };
    let err = c.items(&q).unwrap().find_map(|r| r.err()).unwrap();
    assert!(err.to_string().contains("0a1503661502"), "{err}");
}

#[test]
fn every_packer_reads_back_through_batches() {
    let s = Store::open(mem(), b"").unwrap();
    let c = keyed(&s, "k");
    for (i, p) in ["plain", "zlib", "bz2", "zstd", "lz4"].iter().enumerate() {
        let base = i as i64 * 10;
        for k in base..base + 5 {
            c.put(&row(k, &"x".repeat(k as usize))).unwrap();
        }
        c.batch(&BatchOptions {
            lo: Some(tuple!(base)),
            hi: Some(tuple!(base + 4)),
            max_recs: Some(5),
            packer: Some((*p).into()),
            ..Default::default()
        })
        .unwrap();
    }
    for i in 0..5 {
        for k in i * 10..i * 10 + 5 {
            assert_eq!(
                c.get(&tuple!(k)).unwrap(),
                Some(row(k, &"x".repeat(k as usize)))
            );
        }
    }
}

#[test]
fn keys_are_flat_so_nested_and_too_deep_keys_are_refused_and_nothing_is_stored() {
    // centidb keys are tuples of scalars (the key codec has no nested tuple), so every key is
    // one level deep, well inside strata_key::MAX_DEPTH; a nested key is refused at put time,
    // however deep, with an error and without a write.
    let e = mem();
    let store = Store::open(Arc::clone(&e), b"").unwrap();
    let c = keyed(&store, "k");
    let c_idx = c
        .add_index("by_1", FnSpec::Item { index: 1 }.to_fn())
        .unwrap();
    let before = physical(&e, b"");
    let nested = Doc::Tuple(vec![Doc::Tuple(vec![Doc::Int(1)]), Doc::Text("x".into())]);
    let err = c.put(&nested).unwrap_err().to_string();
    assert!(err.contains("cannot be part of a centidb key"), "{err}");
    let mut deep = Value::Int(1);
    for _ in 0..=strata_key::MAX_DEPTH {
        deep = Value::Tuple(Tuple(vec![deep]));
    }
    let opts = PutOptions {
        key: Some(Tuple(vec![deep])),
        ..Default::default()
    };
    assert!(c.put_with(&row(1, "a"), &opts).is_err());
    // An index function whose value nests a tuple: the record is refused with it.
    let mut deep_doc = Doc::Int(1);
    for _ in 0..=strata_key::MAX_DEPTH {
        deep_doc = Doc::Tuple(vec![deep_doc]);
    }
    assert!(c.put(&Doc::Tuple(vec![Doc::Int(2), deep_doc])).is_err());
    assert_eq!(physical(&e, b""), before, "a refused put wrote something");
    assert_eq!(c_idx.count(&Default::default()).unwrap(), 0);
    assert_eq!(c.get(&tuple![2]).unwrap(), None);
}

#[test]
fn a_batch_cut_by_hi_never_ends_where_a_split_off_member_extends_it() {
    // Found by the model test: batch [(4), (4, 1)]; then batch(hi=(4, 0), preserve=False)
    // takes (2, 0) and (4) and splits (4, 1) off as a single record, which extends (4): a
    // batch ending at (4) would sort after it and hide (2, 0) from get.
    let e = mem();
    let store = Store::open(Arc::clone(&e), b"").unwrap();
    let c = store
        .add_collection(
            "t",
            CollectionOptions::new()
                .key_fn(FnSpec::Item { index: 0 }.to_fn())
                .encoder(Arc::new(strata_centidb::codec::pickle::PickleEncoder)),
        )
        .unwrap();
    let put = |k: &[i64]| {
        let key = Doc::Tuple(k.iter().map(|&x| Doc::Int(x.into())).collect());
        c.put(&Doc::Tuple(vec![key, Doc::Text("v".into())]))
            .unwrap();
    };
    put(&[4]);
    put(&[4, 1]);
    let opts = |hi: Option<Tuple>| BatchOptions {
        hi,
        max_recs: Some(2),
        preserve: false,
        ..Default::default()
    };
    c.batch(&opts(None)).unwrap();
    put(&[2, 0]);
    c.batch(&opts(Some(tuple![4, 0]))).unwrap();
    for k in [tuple![2, 0], tuple![4], tuple![4, 1]] {
        assert!(c.get(&k).unwrap().is_some(), "get {k:?}");
    }
    assert_eq!(
        keys(&c, &Query::all()),
        vec![tuple![2, 0], tuple![4], tuple![4, 1]]
    );
}
