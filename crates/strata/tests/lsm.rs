//! The same model-based test on the striped LSM engine, with flushes, compactions and reopens
//! between writes; and the KeystoneDB 0.1.0 failures that need a real disk engine: Query and
//! Scan must see flushed data, the schema must survive a reopen.

mod common;

use std::path::Path;

use proptest::prelude::*;
use strata::{Db, DbOptions, Item, KeyField, Query, Scan, TableSchema};
use strata_key::{Kind, Value};

fn options() -> DbOptions {
    DbOptions {
        stripes: 16,
        sync: false,
        ..DbOptions::default()
    }
}

fn open(path: &Path) -> Db {
    Db::open_with(path, options()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn tables_on_the_lsm_agree_with_the_model(seed in any::<u64>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let hook = |rng: &mut common::Rng, db: Db| -> Db {
            match rng.below(3) {
                0 => {
                    db.flush().unwrap();
                    db
                }
                1 => {
                    db.flush().unwrap();
                    db.compact().unwrap();
                    db
                }
                _ => {
                    db.close().unwrap();
                    drop(db);
                    open(&path)
                }
            }
        };
        common::run_case(seed, open(&path), 60, common::Hook::Lsm(&hook));
    }
}

#[test]
fn query_and_scan_see_flushed_data_and_the_schema_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let schema = TableSchema::new("t", vec![KeyField::new("pk", Kind::Text)])
        .with_sort(vec![KeyField::new("sk", Kind::Int).desc()]);
    {
        let db = open(&path);
        let t = db.create_table(schema.clone()).unwrap();
        // KeystoneDB 0.1.0 flushes a stripe at 1,000 records and its Query/Scan then see only
        // what is left in the memtable (5 of 1,005).
        for i in 0..1005 {
            t.put(&Item::new().with("pk", "p").with("sk", i).with("v", "x"))
                .unwrap();
        }
        db.flush().unwrap();
        assert_eq!(
            t.query(&Query::new(vec![Value::from("p")]))
                .unwrap()
                .items
                .len(),
            1005
        );
        assert_eq!(t.scan(&Scan::all()).unwrap().items.len(), 1005);
        db.compact().unwrap();
        let page = t
            .query(&Query::new(vec![Value::from("p")]).limit(3))
            .unwrap();
        let sks: Vec<_> = page
            .items
            .iter()
            .map(|i| i.value("sk").unwrap().clone())
            .collect();
        assert_eq!(
            sks,
            vec![Value::Int(1004), Value::Int(1003), Value::Int(1002)]
        );
        db.close().unwrap();
    }
    let db = open(&path);
    // KeystoneDB forgets its schema on reopen; Strata reads it back from its catalog.
    assert_eq!(db.tables(), vec![schema]);
    let t = db.table("t").unwrap();
    assert_eq!(
        t.query(&Query::new(vec![Value::from("p")]))
            .unwrap()
            .items
            .len(),
        1005
    );
    // Drop deletes the data, also across a reopen.
    db.drop_table("t").unwrap();
    let raw_now = db
        .engine()
        .range(strata_lsm::KeyRange::all(), strata_lsm::Direction::Forward)
        .unwrap()
        .count();
    assert_eq!(
        raw_now, 2,
        "format marker and id counter only, before reopen"
    );
    db.close().unwrap();
    drop(db);
    let db = open(&path);
    assert!(db.tables().is_empty());
    let t = db
        .create_table(TableSchema::new("t", vec![KeyField::new("pk", Kind::Text)]))
        .unwrap();
    assert!(t.scan(&Scan::all()).unwrap().items.is_empty());
    let raw = db
        .engine()
        .range(strata_lsm::KeyRange::all(), strata_lsm::Direction::Forward)
        .unwrap()
        .count();
    assert_eq!(
        raw, 3,
        "format marker, id counter and the new table's entry only"
    );
}

#[path = "concurrency.rs"]
#[allow(dead_code)]
mod concurrency;

#[test]
fn transfers_keep_the_sum_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    // Durable commits (the default options): concurrent transactions share fsyncs.
    let db = Db::open_with(dir.path().join("db"), DbOptions::default()).unwrap();
    let t = std::time::Instant::now();
    concurrency::run_transfers(&db, 4, 60);
    eprintln!("transfers on disk took {:?}", t.elapsed());
    db.close().unwrap();
}
