//! Property tests against obvious models: Query and Scan paging, condition evaluation; and
//! atomicity under concurrency (conditional updates lose nothing, transactions are
//! all-or-nothing).

mod common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use serde_json::{json, Value as Json};
use strata_dynamo::Dynamo;

fn num(v: &Json) -> i64 {
    v["N"].as_str().unwrap().parse().unwrap()
}

/// Every item of a Query or Scan, page after page.
fn all_pages(d: &Dynamo, op: &str, mut body: Json) -> Vec<Json> {
    let mut out = vec![];
    loop {
        let r = ok(d, op, body.clone());
        out.extend(r["Items"].as_array().unwrap().iter().cloned());
        match r.get("LastEvaluatedKey") {
            Some(k) => body["ExclusiveStartKey"] = k.clone(),
            None => return out,
        }
    }
}

#[derive(Debug, Clone)]
enum SortOp {
    None,
    Cmp(&'static str, i64),
    Between(i64, i64),
}

fn sort_op() -> impl Strategy<Value = SortOp> {
    prop_oneof![
        Just(SortOp::None),
        (
            prop::sample::select(vec!["=", "<", "<=", ">", ">="]),
            -60i64..60
        )
            .prop_map(|(o, v)| SortOp::Cmp(o, v)),
        (-60i64..60, -60i64..60).prop_map(|(a, b)| SortOp::Between(a.min(b), a.max(b))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn query_pages_match_the_model(
        rows in prop::collection::btree_set((0u8..3, -50i64..50), 0..60),
        part in 0u8..3,
        op in sort_op(),
        limit in prop::option::of(1i64..9),
        forward in any::<bool>(),
        filter_even in any::<bool>(),
    ) {
        let d = Dynamo::memory().unwrap();
        create(&d, "tab", ("p", "S"), Some(("c", "N")));
        for (p, c) in &rows {
            ok(&d, "PutItem", json!({"TableName": "tab",
                "Item": {"p": s(&p.to_string()), "c": n(c), "even": {"BOOL": c % 2 == 0}}}));
        }
        let (kce, mut values) = match &op {
            SortOp::None => ("p = :p".to_string(), json!({})),
            SortOp::Cmp(o, v) => (format!("p = :p AND c {o} :v"), json!({":v": n(v)})),
            SortOp::Between(a, b) => ("p = :p AND c BETWEEN :a AND :b".to_string(), json!({":a": n(a), ":b": n(b)})),
        };
        values[":p"] = s(&part.to_string());
        let mut body = json!({"TableName": "tab", "KeyConditionExpression": kce,
                              "ScanIndexForward": forward});
        if filter_even {
            body["FilterExpression"] = json!("even = :t");
            values[":t"] = json!({"BOOL": true});
        }
        body["ExpressionAttributeValues"] = values;
        if let Some(l) = limit {
            body["Limit"] = json!(l);
        }
        let got: Vec<i64> = all_pages(&d, "Query", body).iter().map(|i| num(&i["c"])).collect();
        let mut want: Vec<i64> = rows.iter().filter(|(p, _)| *p == part).map(|(_, c)| *c)
            .filter(|c| match &op {
                SortOp::None => true,
                SortOp::Cmp("=", v) => c == v,
                SortOp::Cmp("<", v) => c < v,
                SortOp::Cmp("<=", v) => c <= v,
                SortOp::Cmp(">", v) => c > v,
                SortOp::Cmp(_, v) => c >= v,
                SortOp::Between(a, b) => a <= c && c <= b,
            })
            .filter(|c| !filter_even || c % 2 == 0)
            .collect();
        if !forward {
            want.reverse();
        }
        prop_assert_eq!(got, want);
    }

    #[test]
    fn scan_segments_partition_the_table(
        keys in prop::collection::btree_set(0i64..10_000, 0..80),
        segments in 1i64..9,
        limit in prop::option::of(1i64..12),
    ) {
        let d = Dynamo::memory().unwrap();
        create(&d, "tab", ("p", "N"), None);
        for k in &keys {
            ok(&d, "PutItem", json!({"TableName": "tab", "Item": {"p": n(k)}}));
        }
        let mut got = vec![];
        for seg in 0..segments {
            let mut body = json!({"TableName": "tab", "Segment": seg, "TotalSegments": segments});
            if let Some(l) = limit {
                body["Limit"] = json!(l);
            }
            got.extend(all_pages(&d, "Scan", body).iter().map(|i| num(&i["p"])));
        }
        got.sort();
        prop_assert_eq!(got, keys.into_iter().collect::<Vec<_>>());
    }
}

/// A value of attribute `x` in the condition model: a number, a string or absent.
#[derive(Debug, Clone, PartialEq)]
enum X {
    N(i64),
    S(String),
    Missing,
}

fn x_value() -> impl Strategy<Value = X> {
    prop_oneof![
        (-5i64..5).prop_map(X::N),
        "[ab]{0,2}".prop_map(X::S),
        Just(X::Missing),
    ]
}

fn x_json(x: &X) -> Option<Json> {
    match x {
        X::N(i) => Some(n(i)),
        X::S(s) => Some(json!({ "S": s })),
        X::Missing => None,
    }
}

/// DynamoDB's comparison rules, written directly on the model values.
fn model_cmp(op: &str, a: &X, b: &X) -> bool {
    use std::cmp::Ordering::*;
    let ord = match (a, b) {
        (X::N(x), X::N(y)) => Some(x.cmp(y)),
        (X::S(x), X::S(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => None,
    };
    match op {
        "=" => ord == Some(Equal),
        "<>" => ord != Some(Equal),
        "<" => ord == Some(Less),
        "<=" => matches!(ord, Some(Less | Equal)),
        ">" => ord == Some(Greater),
        _ => matches!(ord, Some(Greater | Equal)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn conditions_match_the_model(
        xs in prop::collection::vec((x_value(), x_value()), 1..12),
        op in prop::sample::select(vec!["=", "<>", "<", "<=", ">", ">="]),
        v in x_value().prop_filter("a constant", |v| *v != X::Missing),
        negate in any::<bool>(),
        with_or_exists in any::<bool>(),
    ) {
        let d = Dynamo::memory().unwrap();
        create(&d, "tab", ("p", "N"), None);
        for (i, (x, y)) in xs.iter().enumerate() {
            let mut item = json!({"p": n(i)});
            if let Some(j) = x_json(x) { item["x"] = j; }
            if let Some(j) = x_json(y) { item["y"] = j; }
            ok(&d, "PutItem", json!({"TableName": "tab", "Item": item}));
        }
        let mut cond = format!("x {op} :v");
        if with_or_exists {
            cond = format!("({cond}) OR (attribute_exists(y) AND y {op} x)");
        }
        if negate {
            cond = format!("NOT ({cond})");
        }
        let got: Vec<i64> = {
            let mut g: Vec<i64> = all_pages(&d, "Scan", json!({"TableName": "tab",
                "FilterExpression": cond, "ExpressionAttributeValues": {":v": x_json(&v)}}))
                .iter().map(|i| num(&i["p"])).collect();
            g.sort();
            g
        };
        let want: Vec<i64> = xs.iter().enumerate().filter(|(_, (x, y))| {
            let mut r = match x {
                X::Missing => op == "<>",
                x => model_cmp(op, x, &v),
            };
            if with_or_exists {
                let second = *y != X::Missing && *x != X::Missing && model_cmp(op, y, x)
                    || (*y != X::Missing && *x == X::Missing && op == "<>");
                r = r || second;
            }
            r != negate
        }).map(|(i, _)| i as i64).collect();
        prop_assert_eq!(got, want, "{}", cond);
    }
}

#[test]
fn concurrent_conditional_increments_lose_nothing() {
    let d = Dynamo::memory().unwrap();
    create(&d, "tab", ("p", "S"), None);
    ok(
        &d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": s("c"), "n": n(0)}}),
    );
    let threads = 8;
    let per = 200;
    std::thread::scope(|sc| {
        for _ in 0..threads {
            let d = d.clone();
            sc.spawn(move || {
                for _ in 0..per {
                    ok(&d, "UpdateItem", json!({"TableName": "tab", "Key": {"p": s("c")},
                        "UpdateExpression": "SET n = n + :one", "ConditionExpression": "attribute_exists(n)",
                        "ExpressionAttributeValues": {":one": n(1)}}));
                }
            });
        }
    });
    let got = ok(
        &d,
        "GetItem",
        json!({"TableName": "tab", "Key": {"p": s("c")}}),
    );
    assert_eq!(num(&got["Item"]["n"]), (threads * per) as i64);
}

#[test]
fn concurrent_transactions_keep_the_total() {
    let d = Dynamo::memory().unwrap();
    create(&d, "acct", ("id", "N"), None);
    let accounts = 5;
    for i in 0..accounts {
        ok(
            &d,
            "PutItem",
            json!({"TableName": "acct", "Item": {"id": n(i), "bal": n(100)}}),
        );
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        let mut writers = vec![];
        for t in 0..4u64 {
            let d = d.clone();
            writers.push(sc.spawn(move || {
                let mut x = t * 7919 + 1;
                for _ in 0..150 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let from = (x >> 33) % accounts;
                    let to = (from + 1 + (x >> 40) % (accounts - 1)) % accounts;
                    let amount = 1 + (x >> 50) % 30;
                    let r = call(&d, "TransactWriteItems", json!({"TransactItems": [
                        {"Update": {"TableName": "acct", "Key": {"id": n(from)},
                            "UpdateExpression": "SET bal = bal - :a", "ConditionExpression": "bal >= :a",
                            "ExpressionAttributeValues": {":a": n(amount)}}},
                        {"Update": {"TableName": "acct", "Key": {"id": n(to)},
                            "UpdateExpression": "SET bal = bal + :a",
                            "ExpressionAttributeValues": {":a": n(amount)}}}]}));
                    if let Err(e) = r {
                        assert_eq!(e.kind, strata_dynamo::ErrorKind::TransactionCanceled, "{e}");
                    }
                }
            }));
        }
        let d = d.clone();
        let stop = &stop;
        sc.spawn(move || {
            // A reader sees the total unchanged at every moment.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let items: Vec<Json> = (0..accounts)
                    .map(|i| json!({"Get": {"TableName": "acct", "Key": {"id": n(i)}}}))
                    .collect();
                let r = ok(&d, "TransactGetItems", json!({"TransactItems": items}));
                let total: i64 = r["Responses"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| num(&x["Item"]["bal"]))
                    .sum();
                assert_eq!(total, 100 * accounts as i64);
            }
        });
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let mut balances = BTreeMap::new();
    for i in 0..accounts {
        let r = ok(
            &d,
            "GetItem",
            json!({"TableName": "acct", "Key": {"id": n(i)}}),
        );
        let b = num(&r["Item"]["bal"]);
        assert!(b >= 0);
        balances.insert(i, b);
    }
    assert_eq!(balances.values().sum::<i64>(), 100 * accounts as i64);
}
