//! Catalog, items, batches and the places where KeystoneDB 0.1.0 is wrong, on the in-memory
//! engine (reopen = a new `Db` over the same engine).

use std::sync::Arc;

use strata::{
    Attr, Batch, Db, Error, Item, Key, KeyField, Query, Scan, SortCondition, TableSchema,
};
use strata_key::{Kind, Value};
use strata_lsm::{Engine, MemEngine};

fn posts_schema() -> TableSchema {
    TableSchema::new("posts", vec![KeyField::new("user", Kind::Text)])
        .with_sort(vec![KeyField::new("ts", Kind::Int).desc().nulls_last()])
}

fn post(user: &str, ts: impl Into<Value>) -> Item {
    Item::new()
        .with("user", user)
        .with("ts", ts.into())
        .with("body", "hello")
}

fn key(user: &str, ts: i64) -> Key {
    Key::new(vec![Value::from(user)], vec![Value::Int(ts as i128)])
}

#[test]
fn catalog_survives_reopen_and_rejects_a_different_schema() {
    let engine: Arc<dyn Engine> = Arc::new(MemEngine::new());
    {
        let db = Db::with_engine(Arc::clone(&engine)).unwrap();
        let t = db.create_table(posts_schema()).unwrap();
        t.put(&post("u1", 1)).unwrap();
        // Same schema again: fine, same table.
        db.create_table(posts_schema()).unwrap();
    }
    let db = Db::with_engine(Arc::clone(&engine)).unwrap();
    assert_eq!(db.tables(), vec![posts_schema()]);
    let t = db.table("posts").unwrap();
    assert_eq!(t.get(&key("u1", 1)).unwrap(), Some(post("u1", 1)));
    let other = TableSchema::new("posts", vec![KeyField::new("user", Kind::Int)]);
    let e = db.create_table(other).unwrap_err();
    assert!(matches!(e, Error::TableExists { .. }), "{e}");
    assert!(e.to_string().contains("posts"));
    // A second table gets another id: the two never see each other's items.
    let t2 = db
        .create_table(
            TableSchema::new("other", vec![KeyField::new("user", Kind::Text)])
                .with_sort(vec![KeyField::new("ts", Kind::Int)]),
        )
        .unwrap();
    t2.put(&post("u1", 1)).unwrap();
    assert_eq!(t.scan(&Scan::all()).unwrap().items.len(), 1);
    assert_eq!(t2.scan(&Scan::all()).unwrap().items.len(), 1);
}

#[test]
fn drop_deletes_data_and_invalidates_handles() {
    let engine: Arc<dyn Engine> = Arc::new(MemEngine::new());
    let db = Db::with_engine(Arc::clone(&engine)).unwrap();
    let t = db.create_table(posts_schema()).unwrap();
    for i in 0..2500 {
        t.put(&post(&format!("u{}", i % 7), i)).unwrap();
    }
    let keys_before = engine
        .range(strata_lsm::KeyRange::all(), strata_lsm::Direction::Forward)
        .unwrap()
        .count();
    assert!(keys_before > 2500);
    db.drop_table("posts").unwrap();
    assert!(matches!(
        t.put(&post("u1", 1)),
        Err(Error::TableNotFound(_))
    ));
    assert!(matches!(t.get(&key("u1", 1)), Err(Error::TableNotFound(_))));
    assert!(matches!(db.table("posts"), Err(Error::TableNotFound(_))));
    assert!(matches!(
        db.drop_table("posts"),
        Err(Error::TableNotFound(_))
    ));
    // Only the catalog's own entries remain.
    let left: Vec<_> = engine
        .range(strata_lsm::KeyRange::all(), strata_lsm::Direction::Forward)
        .unwrap()
        .map(|kv| kv.unwrap().0)
        .collect();
    assert_eq!(left.len(), 2, "format marker and id counter only: {left:?}");
    // Re-created under the same name: empty, and a new id.
    let t = db.create_table(posts_schema()).unwrap();
    assert!(t.scan(&Scan::all()).unwrap().items.is_empty());
    let reopened = Db::with_engine(engine).unwrap();
    assert_eq!(reopened.tables().len(), 1);
}

#[test]
fn key_attributes_are_checked_by_name() {
    let db = Db::memory().unwrap();
    let t = db.create_table(posts_schema()).unwrap();
    let e = t.put(&Item::new().with("user", "u1")).unwrap_err();
    assert!(
        matches!(&e, Error::MissingKeyAttribute { attr, .. } if attr == "ts"),
        "{e}"
    );
    let e = t
        .put(&Item::new().with("user", "u1").with("ts", "x"))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "table \"posts\": key attribute \"ts\" must be int, found text"
    );
    let e = t
        .put(&Item::new().with("user", Attr::List(vec![])).with("ts", 1))
        .unwrap_err();
    assert!(
        e.to_string().contains("\"user\" must be text, found list"),
        "{e}"
    );
    let e = t
        .key(
            &Item::new()
                .with("user", "u")
                .with("ts", 1)
                .with("body", "x"),
        )
        .unwrap_err();
    assert!(
        e.to_string().contains("\"body\" is not a key attribute"),
        "{e}"
    );
    // NULL is a valid key value; it sorts where the schema puts it (last here).
    t.put(&post("u1", Value::Null)).unwrap();
    t.put(&post("u1", 5)).unwrap();
    let page = t.query(&Query::new(vec![Value::from("u1")])).unwrap();
    let ts: Vec<Value> = page
        .items
        .iter()
        .map(|i| i.value("ts").unwrap().clone())
        .collect();
    assert_eq!(ts, vec![Value::Int(5), Value::Null]);
}

#[test]
fn items_hold_nested_documents() {
    let db = Db::memory().unwrap();
    let t = db.create_table(posts_schema()).unwrap();
    let doc = post("u1", 1)
        .with(
            "tags",
            Attr::List(vec![
                Attr::from("a"),
                Attr::from(2),
                Attr::Map(Item::new().with("deep", Attr::List(vec![]))),
            ]),
        )
        .with(
            "meta",
            Attr::Map(Item::new().with("n", 1.5).with("raw", vec![0u8, 255])),
        );
    t.put(&doc).unwrap();
    assert_eq!(t.get(&key("u1", 1)).unwrap(), Some(doc));
    assert_eq!(t.get(&key("u1", 2)).unwrap(), None);
    t.delete(&key("u1", 1)).unwrap();
    t.delete(&key("u1", 1)).unwrap();
    assert_eq!(t.get(&key("u1", 1)).unwrap(), None);
}

#[test]
fn conditional_put_and_atomic_batches() {
    let db = Db::memory().unwrap();
    let a = db.create_table(posts_schema()).unwrap();
    let b = db
        .create_table(TableSchema::new(
            "counts",
            vec![KeyField::new("user", Kind::Text)],
        ))
        .unwrap();
    a.put_if_not_exists(&post("u1", 1)).unwrap();
    let e = a
        .put_if_not_exists(&post("u1", 1).with("body", "second"))
        .unwrap_err();
    assert!(matches!(e, Error::ConditionFailed { .. }), "{e}");
    assert_eq!(
        a.get(&key("u1", 1)).unwrap().unwrap().value("body"),
        Some(&Value::from("hello"))
    );

    // A batch across two tables whose condition fails writes nothing at all.
    let mut batch = Batch::new();
    batch
        .put(&b, &Item::new().with("user", "u1").with("n", 1))
        .unwrap();
    batch.delete(&a, &key("u1", 1)).unwrap();
    batch.put_if_not_exists(&a, &post("u1", 1)).unwrap();
    let e = db.write(batch).unwrap_err();
    assert!(
        e.to_string().contains("posts") && e.to_string().contains("already exists"),
        "{e}"
    );
    assert!(b
        .get(&Key::new(vec![Value::from("u1")], vec![]))
        .unwrap()
        .is_none());
    assert!(a.get(&key("u1", 1)).unwrap().is_some());

    let mut batch = Batch::new();
    batch
        .put(&b, &Item::new().with("user", "u1").with("n", 1))
        .unwrap();
    batch.delete(&a, &key("u1", 1)).unwrap();
    db.write(batch).unwrap();
    assert!(b
        .get(&Key::new(vec![Value::from("u1")], vec![]))
        .unwrap()
        .is_some());
    assert!(a.get(&key("u1", 1)).unwrap().is_none());
}

#[test]
fn conditional_put_is_atomic_under_concurrency() {
    // KeystoneDB's put_conditional is check-then-act: two racing writers can both "win".
    // Here exactly one writer wins each key.
    let db = Db::memory().unwrap();
    let t = db.create_table(posts_schema()).unwrap();
    let wins: Vec<usize> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|w| {
                let t = t.clone();
                s.spawn(move || {
                    (0..300)
                        .filter(|i| {
                            t.put_if_not_exists(&post("race", *i).with("writer", w as i64))
                                .is_ok()
                        })
                        .count()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(wins.iter().sum::<usize>(), 300);
}

#[test]
fn sort_keys_are_in_value_order_not_length_first() {
    // KeystoneDB 0.1.0 returns b, c, aa, ab (length first); DynamoDB and Strata: aa, ab, b, c.
    let db = Db::memory().unwrap();
    let t = db
        .create_table(
            TableSchema::new("t", vec![KeyField::new("pk", Kind::Text)])
                .with_sort(vec![KeyField::new("sk", Kind::Text)]),
        )
        .unwrap();
    for sk in ["b", "aa", "c", "ab"] {
        t.put(&Item::new().with("pk", "p").with("sk", sk)).unwrap();
    }
    let got: Vec<Value> = t
        .query(&Query::new(vec![Value::from("p")]))
        .unwrap()
        .items
        .iter()
        .map(|i| i.value("sk").unwrap().clone())
        .collect();
    assert_eq!(got, ["aa", "ab", "b", "c"].map(Value::from).to_vec());
}

#[test]
fn pagination_with_limit_one_never_skips() {
    // KeystoneDB 0.1.0: a limit(1) scan over b, aa, ccc, d returns only b and d.
    let db = Db::memory().unwrap();
    let t = db
        .create_table(TableSchema::new("t", vec![KeyField::new("pk", Kind::Text)]))
        .unwrap();
    for pk in ["b", "aa", "ccc", "d"] {
        t.put(&Item::new().with("pk", pk)).unwrap();
    }
    let mut scan = Scan::all().limit(1);
    let mut seen = Vec::new();
    loop {
        let page = t.scan(&scan).unwrap();
        seen.extend(page.items.iter().map(|i| i.value("pk").unwrap().clone()));
        match page.last_key {
            Some(k) => scan.after = Some(k),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ["aa", "b", "ccc", "d"].map(Value::from).to_vec());
}

#[test]
fn query_operators_on_a_descending_sort_key() {
    let db = Db::memory().unwrap();
    let t = db.create_table(posts_schema()).unwrap();
    for ts in 1..=9 {
        t.put(&post("u1", ts)).unwrap();
    }
    t.put(&post("u2", 5)).unwrap();
    let run = |c: Option<SortCondition>, reverse: bool| -> Vec<i128> {
        let mut q = Query::new(vec![Value::from("u1")]).reverse(reverse);
        q.sort = c;
        t.query(&q)
            .unwrap()
            .items
            .iter()
            .map(|i| match i.value("ts") {
                Some(Value::Int(x)) => *x,
                _ => unreachable!(),
            })
            .collect()
    };
    let v = |x: i128| vec![Value::Int(x)];
    assert_eq!(run(None, false), vec![9, 8, 7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(run(None, true), vec![1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Operators compare values, whatever the field's direction; the order of the results
    // follows the schema (descending here).
    assert_eq!(
        run(Some(SortCondition::Between(v(3), v(7))), false),
        vec![7, 6, 5, 4, 3]
    );
    assert_eq!(
        run(Some(SortCondition::Between(v(7), v(3))), false),
        Vec::<i128>::new()
    );
    assert_eq!(run(Some(SortCondition::Eq(v(4))), false), vec![4]);
    assert_eq!(run(Some(SortCondition::Lt(v(4))), false), vec![3, 2, 1]);
    assert_eq!(run(Some(SortCondition::Le(v(4))), false), vec![4, 3, 2, 1]);
    assert_eq!(run(Some(SortCondition::Gt(v(7))), false), vec![9, 8]);
    assert_eq!(
        run(Some(SortCondition::Ge(v(4))), true),
        vec![4, 5, 6, 7, 8, 9]
    );
}

#[test]
fn bad_requests_name_what_is_wrong() {
    let db = Db::memory().unwrap();
    let t = db.create_table(posts_schema()).unwrap();
    let e = t.query(&Query::new(vec![Value::Int(1)])).unwrap_err();
    assert!(e.to_string().contains("\"user\" must be text"), "{e}");
    let e = t
        .query(
            &Query::new(vec![Value::from("u")])
                .sort(SortCondition::BeginsWith(vec![Value::Int(1)])),
        )
        .unwrap_err();
    assert!(e.to_string().contains("begins_with"), "{e}");
    let e = t
        .query(&Query::new(vec![Value::from("u")]).limit(0))
        .unwrap_err();
    assert!(e.to_string().contains("limit"), "{e}");
    let e = t.scan(&Scan::segment(4, 4)).unwrap_err();
    assert!(e.to_string().contains("segment 4 of 4"), "{e}");
    let e = t
        .query(&Query::new(vec![Value::from("u")]).after(Some(key("v", 1))))
        .unwrap_err();
    assert!(e.to_string().contains("after"), "{e}");
}

#[test]
fn scan_segments_up_to_a_million() {
    let db = Db::memory().unwrap();
    let t = db.create_table(posts_schema()).unwrap();
    for u in 0..300 {
        t.put(&post(&format!("user{u}"), 1)).unwrap();
    }
    for n in [1u32, 4, 256, 1024, 70_000] {
        let mut total = 0;
        let mut nonempty = 0;
        for s in 0..n.min(2048) {
            let c = t.scan(&Scan::segment(s, n)).unwrap().items.len();
            total += c;
            nonempty += (c > 0) as u32;
        }
        if n <= 2048 {
            assert_eq!(total, 300, "{n} segments");
            assert!(
                nonempty >= n.min(150),
                "{n} segments: only {nonempty} hold items"
            );
        }
    }
    assert!(t.scan(&Scan::segment(999_999, 1_000_000)).is_ok());
}

/// The sort values a query returns, in order.
fn sort_values(t: &strata::Table, c: SortCondition) -> Vec<Value> {
    t.query(&Query::new(vec![Value::from("u")]).sort(c))
        .unwrap()
        .items
        .iter()
        .map(|i| i.value("s").unwrap().clone())
        .collect()
}

#[test]
fn a_null_sort_value_never_satisfies_a_comparison() {
    use SortCondition::*;
    let int = |i: i128| Value::Int(i);
    let text = |s: &str| Value::from(s);
    // Every direction and NULL placement of an int and a text sort field.
    for (desc, nulls_last) in [(false, false), (false, true), (true, false), (true, true)] {
        let db = Db::memory().unwrap();
        let field = |kind| {
            let mut f = KeyField::new("s", kind);
            if desc {
                f = f.desc();
            }
            if nulls_last {
                f = f.nulls_last();
            }
            f
        };
        let ints = db
            .create_table(
                TableSchema::new("ints", vec![KeyField::new("p", Kind::Text)])
                    .with_sort(vec![field(Kind::Int)]),
            )
            .unwrap();
        let texts = db
            .create_table(
                TableSchema::new("texts", vec![KeyField::new("p", Kind::Text)])
                    .with_sort(vec![field(Kind::Text)]),
            )
            .unwrap();
        for v in [Value::Null, int(1), int(5), int(9)] {
            ints.put(&Item::new().with("p", "u").with("s", v)).unwrap();
        }
        for v in [Value::Null, text(""), text("ab"), text("b")] {
            texts.put(&Item::new().with("p", "u").with("s", v)).unwrap();
        }
        let order = |mut v: Vec<Value>| {
            if desc {
                v.reverse();
            }
            v
        };
        let what = format!("desc {desc}, nulls_last {nulls_last}");
        assert_eq!(
            sort_values(&ints, Lt(vec![int(5)])),
            order(vec![int(1)]),
            "{what}"
        );
        assert_eq!(
            sort_values(&ints, Le(vec![int(5)])),
            order(vec![int(1), int(5)]),
            "{what}"
        );
        assert_eq!(
            sort_values(&ints, Gt(vec![int(1)])),
            order(vec![int(5), int(9)]),
            "{what}"
        );
        assert_eq!(
            sort_values(&ints, Ge(vec![int(1)])),
            order(vec![int(1), int(5), int(9)]),
            "{what}"
        );
        assert_eq!(
            sort_values(&ints, Between(vec![int(0)], vec![int(100)])),
            order(vec![int(1), int(5), int(9)]),
            "{what}"
        );
        // A NULL in the condition is unknown too: nothing matches.
        for c in [Lt, Le, Gt, Ge] {
            assert_eq!(sort_values(&ints, c(vec![Value::Null])), vec![], "{what}");
        }
        assert_eq!(
            sort_values(&ints, Between(vec![Value::Null], vec![int(9)])),
            vec![]
        );
        // `eq` is key identity: `eq null` selects the NULL item, `eq 5` never matches NULL.
        assert_eq!(
            sort_values(&ints, Eq(vec![Value::Null])),
            vec![Value::Null],
            "{what}"
        );
        assert_eq!(sort_values(&ints, Eq(vec![int(5)])), vec![int(5)], "{what}");
        // The empty prefix begins every text, never NULL.
        assert_eq!(
            sort_values(&texts, BeginsWith(vec![text("")])),
            order(vec![text(""), text("ab"), text("b")]),
            "{what}"
        );
    }
}

#[test]
fn a_multi_field_condition_compares_like_sql_rows() {
    use SortCondition::*;
    let db = Db::memory().unwrap();
    let t = db
        .create_table(
            TableSchema::new("t", vec![KeyField::new("p", Kind::Text)]).with_sort(vec![
                KeyField::new("a", Kind::Int),
                KeyField::new("b", Kind::Text),
            ]),
        )
        .unwrap();
    let n = Value::Null;
    let rows = [
        (n.clone(), Value::from("x")),
        (Value::Int(0), n.clone()),
        (Value::Int(1), n.clone()),
        (Value::Int(1), Value::from("a")),
        (Value::Int(1), Value::from("ab")),
        (Value::Int(2), n.clone()),
    ];
    for (a, b) in &rows {
        t.put(
            &Item::new()
                .with("p", "u")
                .with("a", a.clone())
                .with("b", b.clone()),
        )
        .unwrap();
    }
    let got = |c: SortCondition| -> Vec<(Value, Value)> {
        t.query(&Query::new(vec![Value::from("u")]).sort(c))
            .unwrap()
            .items
            .iter()
            .map(|i| (i.value("a").unwrap().clone(), i.value("b").unwrap().clone()))
            .collect()
    };
    // (0, NULL) < (1, "b") is decided by the first field; (1, NULL) and (NULL, "x") are unknown.
    assert_eq!(
        got(Lt(vec![Value::Int(1), Value::from("b")])),
        vec![rows[1].clone(), rows[3].clone(), rows[4].clone()]
    );
    // A one-field prefix ignores the second field, NULL or not.
    assert_eq!(
        got(Ge(vec![Value::Int(1)])),
        vec![
            rows[2].clone(),
            rows[3].clone(),
            rows[4].clone(),
            rows[5].clone()
        ]
    );
    assert_eq!(
        got(Eq(vec![Value::Int(1), n.clone()])),
        vec![rows[2].clone()]
    );
    assert_eq!(
        got(BeginsWith(vec![Value::Int(1), Value::from("a")])),
        vec![rows[3].clone(), rows[4].clone()]
    );
    assert_eq!(
        got(BeginsWith(vec![n.clone(), Value::from("")])),
        vec![rows[0].clone()]
    );
}

/// An engine that records where each range read starts.
struct RecordingEngine {
    inner: MemEngine,
    starts: std::sync::Mutex<Vec<std::ops::Bound<Vec<u8>>>>,
}

impl Engine for RecordingEngine {
    fn get(&self, key: &[u8]) -> strata_lsm::Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn write(&self, batch: strata_lsm::WriteBatch) -> strata_lsm::Result<()> {
        self.inner.write(batch)
    }
    fn snapshot(&self) -> strata_lsm::Result<Arc<dyn strata_lsm::Snapshot>> {
        self.inner.snapshot()
    }
    fn range(
        &self,
        range: strata_lsm::KeyRange,
        direction: strata_lsm::Direction,
    ) -> strata_lsm::Result<strata_lsm::KvIter> {
        self.starts.lock().unwrap().push(range.start.clone());
        self.inner.range(range, direction)
    }
    fn flush(&self) -> strata_lsm::Result<()> {
        self.inner.flush()
    }
    fn compact(&self) -> strata_lsm::Result<()> {
        self.inner.compact()
    }
    fn close(&self) -> strata_lsm::Result<()> {
        self.inner.close()
    }
}

#[test]
fn drop_reads_each_key_once() {
    // On an LSM, a deleted key stays as a tombstone that every later read from the table's
    // start has to step over: a drop whose batches each restart there is quadratic. Each
    // batch must resume after the last key it deleted.
    let engine = Arc::new(RecordingEngine {
        inner: MemEngine::new(),
        starts: Default::default(),
    });
    let db = Db::with_engine(engine.clone()).unwrap();
    let t = db.create_table(posts_schema()).unwrap();
    let mut b = Batch::new();
    for ts in 0..3500 {
        b.put(&t, &post("u", ts)).unwrap();
    }
    db.write(b).unwrap();
    engine.starts.lock().unwrap().clear();
    db.drop_table("posts").unwrap();
    let starts = engine.starts.lock().unwrap().clone();
    assert!(starts.len() >= 4, "{} range reads", starts.len());
    let key_of = |b: &std::ops::Bound<Vec<u8>>| match b {
        std::ops::Bound::Included(k) | std::ops::Bound::Excluded(k) => k.clone(),
        std::ops::Bound::Unbounded => Vec::new(),
    };
    for w in starts.windows(2) {
        assert!(
            key_of(&w[0]) < key_of(&w[1]),
            "a batch of the drop re-read from {:?}",
            w[1]
        );
    }
    // And the data is gone: only the catalog's few keys are left.
    let left = engine
        .inner
        .range(strata_lsm::KeyRange::all(), strata_lsm::Direction::Forward)
        .unwrap()
        .count();
    assert!(left < 5, "{left} keys left after the drop");
}
