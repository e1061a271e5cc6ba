//! Tables keyed by exact decimal numbers (DynamoDB's `N`): numeric order in Query and Scan,
//! digits kept exactly from JSON to JSON, on both directions of the sort field.

use serde_json::json;
use strata::json::{item_for_table, item_to_json, query_for_table};
use strata::{Db, Item, KeyField, Query, TableSchema};
use strata_key::{Decimal, Kind, Value};

fn sorted_values(t: &strata::Table, q: &Query) -> Vec<String> {
    t.query(q)
        .unwrap()
        .items
        .iter()
        .map(|i| match i.value("n") {
            Some(Value::Decimal(d)) => d.to_string(),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn decimal_sort_keys_are_numeric_and_exact() {
    let db = Db::memory().unwrap();
    for desc in [false, true] {
        let name = if desc { "down" } else { "up" };
        let mut sort = KeyField::new("n", Kind::Decimal);
        if desc {
            sort = sort.desc();
        }
        let t = db
            .create_table(
                TableSchema::new(name, vec![KeyField::new("p", Kind::Text)]).with_sort(vec![sort]),
            )
            .unwrap();
        // JSON numbers are read from their text (never through an f64); strings and typed
        // values work too; 1e400 is beyond f64 but a fine decimal.
        for n in [
            json!(10),
            json!(9.5),
            json!(-1),
            // (a json! literal would go through an f64: parse the text)
            serde_json::from_str("0.1234567890123456789012345").unwrap(),
            json!("1e400"),
            json!({"t": "decimal", "v": "-1e-130"}),
            json!(0),
            json!(2),
        ] {
            let item = item_for_table(&t, &json!({"p": "a", "n": n, "body": name})).unwrap();
            t.put(&item).unwrap();
        }
        // 2.0 is the same key as 2: an overwrite, not a second item.
        let item = item_for_table(&t, &json!({"p": "a", "n": 2.0, "body": "again"})).unwrap();
        t.put(&item).unwrap();
        let mut want = vec![
            "-1",
            "-1e-130",
            "0",
            "0.1234567890123456789012345",
            "2",
            "9.5",
            "10",
            "1e+400",
        ];
        if desc {
            want.reverse();
        }
        assert_eq!(sorted_values(&t, &Query::new(vec![Value::from("a")])), want);

        let q = query_for_table(
            &t,
            &json!({"partition": {"p": "a"}, "sort": {"op": "between", "values": [0, 9.5]}}),
        )
        .unwrap();
        let mut want = vec!["0", "0.1234567890123456789012345", "2", "9.5"];
        if desc {
            want.reverse();
        }
        assert_eq!(sorted_values(&t, &q), want);

        // Read back as JSON: the typed decimal keeps every digit.
        let got = t
            .get(
                &t.key(&Item::new().with("p", "a").with(
                    "n",
                    Value::Decimal("0.1234567890123456789012345".parse::<Decimal>().unwrap()),
                ))
                .unwrap(),
            )
            .unwrap()
            .unwrap();
        assert_eq!(
            item_to_json(&got)["n"],
            json!({"t": "decimal", "v": "0.1234567890123456789012345"})
        );
        // Not a decimal: refused with the reason.
        let e = item_for_table(&t, &json!({"p": "a", "n": "dog"})).unwrap_err();
        assert!(e.to_string().contains("not a decimal"), "{e}");
        let e = item_for_table(&t, &json!({"p": "a", "n": 1e300, "x": 1})).map(|_| ());
        assert!(e.is_ok());
    }
}

#[test]
fn json_numbers_beyond_f64_are_refused_in_items() {
    let db = Db::memory().unwrap();
    let t = db
        .create_table(TableSchema::new("t", vec![KeyField::new("p", Kind::Text)]))
        .unwrap();
    for bad in [
        json!({"p": "a", "x": serde_json::from_str::<serde_json::Value>("1e400").unwrap()}),
        json!({"p": "a", "x": [serde_json::from_str::<serde_json::Value>("-1e999").unwrap()]}),
        json!({"p": "a", "x": {"t": "f64", "v": serde_json::from_str::<serde_json::Value>("1e309").unwrap()}}),
    ] {
        let e = item_for_table(&t, &bad).expect_err("an infinite number must be refused");
        assert!(e.to_string().contains("range"), "{e}");
    }
    // The largest finite f64 is fine.
    item_for_table(&t, &json!({"p": "a", "x": 1.7976931348623157e308})).unwrap();
}
