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

#[test]
fn a_read_only_db_reads_everything_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let schema = TableSchema::new("t", vec![KeyField::new("pk", Kind::Text)])
        .with_sort(vec![KeyField::new("sk", Kind::Int)]);
    {
        let db = open(&path);
        let t = db.create_table(schema.clone()).unwrap();
        for i in 0..50 {
            t.put(&Item::new().with("pk", "p").with("sk", i)).unwrap();
        }
        db.close().unwrap();
    }
    let before: Vec<(std::path::PathBuf, Vec<u8>)> = {
        let mut v: Vec<_> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        v.sort();
        v
    };
    let ro = Db::open_read_only_with(&path, options()).unwrap();
    // Readers share the directory; a writer is refused while they are open.
    let ro2 = Db::open_read_only_with(&path, options()).unwrap();
    assert!(matches!(
        Db::open_with(&path, options()),
        Err(strata::Error::Engine(strata_lsm::Error::Locked { .. }))
    ));
    assert_eq!(ro.tables(), vec![schema.clone()]);
    let t = ro.table("t").unwrap();
    assert_eq!(t.scan(&Scan::all()).unwrap().items.len(), 50);
    assert_eq!(
        ro2.table("t")
            .unwrap()
            .scan(&Scan::all())
            .unwrap()
            .items
            .len(),
        50
    );
    assert!(t.put(&Item::new().with("pk", "p").with("sk", 99)).is_err());
    assert!(ro
        .create_table(TableSchema::new("u", vec![KeyField::new("k", Kind::Int)]))
        .is_err());
    drop((t, ro, ro2));
    let after: Vec<(std::path::PathBuf, Vec<u8>)> = {
        let mut v: Vec<_> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        v.sort();
        v
    };
    assert!(before == after, "a read-only Db changed the directory");
    // A directory written by the kv command is refused: its partitioner is not the tables'.
    let kv = dir.path().join("kv");
    {
        let e = strata_lsm::LsmEngine::open(&kv, strata_lsm::LsmOptions::default()).unwrap();
        strata_lsm::engine::put(&e, b"key3", b"v").unwrap();
    }
    for r in [Db::open(&kv), Db::open_read_only(&kv)] {
        assert!(matches!(
            r,
            Err(strata::Error::Engine(
                strata_lsm::Error::PartitionerMismatch { .. }
            ))
        ));
    }
}
