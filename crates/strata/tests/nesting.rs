//! One nesting limit for keys and items: what a put accepts, every later read decodes. A put
//! nested deeper than the limit fails at once and leaves the table readable (issue 8, point 6:
//! a 100-deep tuple used to be stored and then break every scan and query of its table).

use strata::{Attr, Db, Item, KeyField, Query, Scan, TableSchema};
use strata_key::codec::native::MAX_DEPTH;
use strata_key::{Kind, Tuple, Value};

fn nested_tuple(levels: usize) -> Value {
    let mut v = Value::Int(1);
    for _ in 0..levels {
        v = Value::Tuple(Tuple(vec![v]));
    }
    v
}

fn nested_list(levels: usize) -> Attr {
    let mut a = Attr::from(1);
    for _ in 0..levels {
        a = Attr::List(vec![a]);
    }
    a
}

#[test]
fn too_deep_puts_fail_at_put_time_and_the_table_stays_readable() {
    let db = Db::memory().unwrap();
    let t = db
        .create_table(
            TableSchema::new("t", vec![KeyField::new("p", Kind::Text)])
                .with_sort(vec![KeyField::new("s", Kind::Tuple)]),
        )
        .unwrap();
    let item = |s: Value| Item::new().with("p", "a").with("s", s);
    // At the limit: stored and read back.
    t.put(&item(nested_tuple(MAX_DEPTH))).unwrap();
    t.put(&item(Value::Tuple(Tuple::new())).with("doc", nested_list(MAX_DEPTH)))
        .unwrap();
    // Beyond it: refused, whether in the key, in a tuple attribute or in a list.
    for (what, bad) in [
        ("100-deep key tuple", item(nested_tuple(100))),
        ("key one level too deep", item(nested_tuple(MAX_DEPTH + 1))),
        (
            "100-deep tuple attribute",
            item(Value::Int(1).into_tuple()).with("x", nested_tuple(100)),
        ),
        (
            "100-deep list attribute",
            item(Value::Int(2).into_tuple()).with("x", nested_list(100)),
        ),
        (
            "list one level too deep",
            item(Value::Int(3).into_tuple()).with("x", nested_list(MAX_DEPTH + 1)),
        ),
    ] {
        let e = t.put(&bad).expect_err(what);
        assert!(e.to_string().contains("nest"), "{what}: {e}");
    }
    // Every read still works.
    assert_eq!(t.scan(&Scan::all()).unwrap().items.len(), 2);
    assert_eq!(
        t.query(&Query::new(vec![Value::from("a")]))
            .unwrap()
            .items
            .len(),
        2
    );
}

trait IntoTuple {
    fn into_tuple(self) -> Value;
}

impl IntoTuple for Value {
    fn into_tuple(self) -> Value {
        Value::Tuple(Tuple(vec![self]))
    }
}
