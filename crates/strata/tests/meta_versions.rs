//! Table metadata kept in the catalog, and optimistic read-modify-write with item versions.

use strata::{Batch, Db, Error, Item, KeyField, TableSchema};
use strata_key::{Kind, Value};

fn schema(name: &str) -> TableSchema {
    TableSchema::new(name, vec![KeyField::new("p", Kind::Text)])
}

#[test]
fn meta_survives_reopen_and_updates() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path()).unwrap();
        let t = db
            .create_table_with_meta(schema("t"), serde_json::json!({"x": 1}))
            .unwrap();
        assert_eq!(*t.meta().unwrap(), serde_json::json!({"x": 1}));
        // Exclusive: the same schema again is an error, unlike create_table.
        assert!(matches!(
            db.create_table_with_meta(schema("t"), serde_json::json!({})),
            Err(Error::TableExists { .. })
        ));
        db.set_table_meta("t", serde_json::json!({"x": 2})).unwrap();
        assert_eq!(*t.meta().unwrap(), serde_json::json!({"x": 2}));
        assert!(db.create_table(schema("plain")).unwrap().meta().is_none());
        db.close().unwrap();
    }
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(
        *db.table("t").unwrap().meta().unwrap(),
        serde_json::json!({"x": 2})
    );
    assert!(db.table("plain").unwrap().meta().is_none());
    assert!(matches!(
        db.set_table_meta("nope", serde_json::json!({})),
        Err(Error::TableNotFound(_))
    ));
}

#[test]
fn require_unchanged_detects_a_concurrent_write() {
    let db = Db::memory().unwrap();
    let t = db.create_table(schema("t")).unwrap();
    let key = t.key(&Item::new().with("p", "a")).unwrap();
    let (none, v0) = t.get_versioned(&key).unwrap();
    assert!(none.is_none() && v0.is_absent());
    t.put(&Item::new().with("p", "a").with("n", 1)).unwrap();
    // A write conditioned on the stale version fails and writes nothing.
    let mut b = Batch::new();
    b.require_unchanged(&t, &v0, "item a unchanged");
    b.put(&t, &Item::new().with("p", "a").with("n", 99))
        .unwrap();
    assert!(matches!(db.write(b), Err(Error::ConditionFailed { .. })));
    let (item, v1) = t.get_versioned(&key).unwrap();
    assert_eq!(item.unwrap().value("n"), Some(&Value::Int(1)));
    // With the current version it succeeds.
    let mut b = Batch::new();
    b.require_unchanged(&t, &v1, "item a unchanged");
    b.put(&t, &Item::new().with("p", "a").with("n", 2)).unwrap();
    db.write(b).unwrap();
    assert_eq!(
        t.get(&key).unwrap().unwrap().value("n"),
        Some(&Value::Int(2))
    );
}
