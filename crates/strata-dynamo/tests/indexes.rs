//! Global and local secondary indexes: CreateTable and UpdateTable, entries kept in the batch
//! of every write, Query and Scan with IndexName, DescribeTable; and a property test against
//! the obvious model (an index holds exactly the base items that have its key attributes).

mod common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use serde_json::{json, Value as Json};
use strata_dynamo::{Dynamo, ErrorKind};

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

fn sorted(mut v: Vec<Json>) -> Vec<Json> {
    v.sort_by_key(|a| a.to_string());
    v
}

/// Table `t`: p (S) + c (N); GSI `byx` on x (S) + c, ALL; GSI `byy` on y (N), KEYS_ONLY;
/// GSI `inc` on x, INCLUDE [a]; LSI `byz` on p + z (S), KEYS_ONLY.
fn indexed_table(d: &Dynamo, name: &str) {
    ok(
        d,
        "CreateTable",
        json!({"TableName": name, "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"},
                          {"AttributeName": "c", "KeyType": "RANGE"}],
            "AttributeDefinitions": [
                {"AttributeName": "p", "AttributeType": "S"},
                {"AttributeName": "c", "AttributeType": "N"},
                {"AttributeName": "x", "AttributeType": "S"},
                {"AttributeName": "y", "AttributeType": "N"},
                {"AttributeName": "z", "AttributeType": "S"}],
            "GlobalSecondaryIndexes": [
                {"IndexName": "byx", "Projection": {"ProjectionType": "ALL"},
                 "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"},
                               {"AttributeName": "c", "KeyType": "RANGE"}]},
                {"IndexName": "byy", "Projection": {"ProjectionType": "KEYS_ONLY"},
                 "KeySchema": [{"AttributeName": "y", "KeyType": "HASH"}]},
                {"IndexName": "inc",
                 "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a"]},
                 "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"}]}],
            "LocalSecondaryIndexes": [
                {"IndexName": "byz", "Projection": {"ProjectionType": "KEYS_ONLY"},
                 "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"},
                               {"AttributeName": "z", "KeyType": "RANGE"}]}]}),
    );
}

#[test]
fn create_describe_list_delete() {
    let d = Dynamo::memory().unwrap();
    indexed_table(&d, "tab");
    let t = ok(&d, "DescribeTable", json!({"TableName": "tab"}))["Table"].clone();
    let gsis = t["GlobalSecondaryIndexes"].as_array().unwrap();
    assert_eq!(gsis.len(), 3);
    assert_eq!(gsis[0]["IndexName"], "byx");
    assert_eq!(gsis[0]["IndexStatus"], "ACTIVE");
    assert_eq!(
        gsis[0]["IndexArn"],
        format!("{}/index/byx", t["TableArn"].as_str().unwrap())
    );
    assert_eq!(
        gsis[2]["Projection"],
        json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a"]})
    );
    let lsis = t["LocalSecondaryIndexes"].as_array().unwrap();
    assert_eq!(lsis[0]["KeySchema"][1]["AttributeName"], "z");
    assert!(lsis[0].get("IndexStatus").is_none());
    assert_eq!(t["AttributeDefinitions"].as_array().unwrap().len(), 5);
    // The tables holding the entries are not DynamoDB tables.
    let l = ok(&d, "ListTables", json!({}));
    assert_eq!(l["TableNames"], json!(["tab"]));
    assert!(d.db().tables().len() > 1);
    ok(&d, "DeleteTable", json!({"TableName": "tab"}));
    assert!(d.db().tables().is_empty(), "index tables are dropped too");
}

#[test]
fn create_validation() {
    let d = Dynamo::memory().unwrap();
    let base = |gsis: Json, lsis: Json, defs: Json| {
        let mut b = json!({"TableName": "val", "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"},
                          {"AttributeName": "c", "KeyType": "RANGE"}],
            "AttributeDefinitions": defs});
        if !gsis.is_null() {
            b["GlobalSecondaryIndexes"] = gsis;
        }
        if !lsis.is_null() {
            b["LocalSecondaryIndexes"] = lsis;
        }
        b
    };
    let defs = json!([{"AttributeName": "p", "AttributeType": "S"},
                      {"AttributeName": "c", "AttributeType": "S"},
                      {"AttributeName": "x", "AttributeType": "S"}]);
    let ix = |name: &str, keys: Json, proj: Json| json!({"IndexName": name, "KeySchema": keys, "Projection": proj});
    let hx = json!([{"AttributeName": "x", "KeyType": "HASH"}]);
    let all = json!({"ProjectionType": "ALL"});
    let cases = [
        (
            base(
                json!([
                    ix("ix1", hx.clone(), all.clone()),
                    ix(
                        "ix1",
                        json!([{"AttributeName": "p", "KeyType": "HASH"}]),
                        all.clone()
                    )
                ]),
                Json::Null,
                defs.clone(),
            ),
            "Duplicate index name: ix1",
        ),
        (
            base(
                json!([ix("n", hx.clone(), all.clone())]),
                Json::Null,
                defs.clone(),
            ),
            "at 'indexName'",
        ),
        (
            base(
                json!([ix(
                    "ix1",
                    json!([{"AttributeName": "q", "KeyType": "HASH"}]),
                    all.clone()
                )]),
                Json::Null,
                defs.clone(),
            ),
            "AttributeDefinitions",
        ),
        (
            base(
                json!([ix("ix1", hx.clone(), json!({"ProjectionType": "INCLUDE"}))]),
                Json::Null,
                defs.clone(),
            ),
            "NonKeyAttributes",
        ),
        (
            base(
                json!([ix(
                    "ix1",
                    hx.clone(),
                    json!({"ProjectionType": "ALL", "NonKeyAttributes": ["a"]})
                )]),
                Json::Null,
                defs.clone(),
            ),
            "NonKeyAttributes",
        ),
        (
            base(
                json!([ix(
                    "ix1",
                    hx.clone(),
                    json!({"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a", "a"]})
                )]),
                Json::Null,
                defs.clone(),
            ),
            "Duplicate",
        ),
        (
            base(
                json!([ix("ix1", hx.clone(), json!({"ProjectionType": "nonsense"}))]),
                Json::Null,
                defs.clone(),
            ),
            "nonsense",
        ),
        (
            base(
                json!([ix("ix1", hx.clone(), json!({}))]),
                Json::Null,
                defs.clone(),
            ),
            "ProjectionType",
        ),
        (
            base(
                Json::Null,
                json!([ix(
                    "lx1",
                    json!([{"AttributeName": "x", "KeyType": "HASH"}, {"AttributeName": "c", "KeyType": "RANGE"}]),
                    all.clone()
                )]),
                defs.clone(),
            ),
            "same hash key",
        ),
        (
            base(
                Json::Null,
                json!([ix(
                    "lx1",
                    json!([{"AttributeName": "p", "KeyType": "HASH"}]),
                    all.clone()
                )]),
                defs.clone(),
            ),
            "RANGE",
        ),
        (
            base(
                json!([ix("same", hx.clone(), all.clone())]),
                json!([ix(
                    "same",
                    json!([{"AttributeName": "p", "KeyType": "HASH"}, {"AttributeName": "x", "KeyType": "RANGE"}]),
                    all.clone()
                )]),
                defs.clone(),
            ),
            "Duplicate index name",
        ),
        (
            // An attribute defined but used by no key.
            base(Json::Null, Json::Null, defs.clone()),
            "exactly match",
        ),
    ];
    for (body, want) in cases {
        let e = err(&d, "CreateTable", body.clone());
        assert_eq!(e.kind, ErrorKind::Validation, "{body}");
        assert!(e.message.contains(want), "{} lacks {want:?}", e.message);
    }
    assert!(
        d.db().tables().is_empty(),
        "a refused CreateTable leaves nothing"
    );
}

#[test]
fn writes_keep_indexes_and_reads_use_them() {
    let d = Dynamo::memory().unwrap();
    indexed_table(&d, "tab");
    let put = |p: &str, c: i64, extra: Json| {
        let mut item = json!({"p": s(p), "c": n(c)});
        for (k, v) in extra.as_object().unwrap() {
            item[k] = v.clone();
        }
        ok(&d, "PutItem", json!({"TableName": "tab", "Item": item}));
    };
    put(
        "a",
        1,
        json!({"x": s("red"), "y": n(7), "a": s("A1"), "b": s("B1"), "z": s("z1")}),
    );
    put("a", 2, json!({"x": s("red"), "b": s("B2")}));
    put("b", 3, json!({"x": s("blue"), "y": n(7)}));
    put("b", 4, json!({"b": s("sparse")}));
    let q = |index: &str, cond: &str, values: Json| {
        all_pages(
            &d,
            "Query",
            json!({"TableName": "tab", "IndexName": index, "KeyConditionExpression": cond,
                   "ExpressionAttributeValues": values, "Limit": 1}),
        )
    };
    let red = q("byx", "x = :x", json!({":x": s("red")}));
    assert_eq!(red.len(), 2);
    assert_eq!(red[0]["b"], s("B1"), "ALL projects everything, sorted by c");
    let red_gt1 = q(
        "byx",
        "x = :x AND c > :c",
        json!({":x": s("red"), ":c": n(1)}),
    );
    assert_eq!(red_gt1.len(), 1);
    let y7 = sorted(q("byy", "y = :y", json!({":y": n(7)})));
    assert_eq!(
        y7,
        vec![
            json!({"p": s("a"), "c": n(1), "y": n(7)}),
            json!({"p": s("b"), "c": n(3), "y": n(7)})
        ],
        "KEYS_ONLY: the index and base keys"
    );
    let inc = q("inc", "x = :x", json!({":x": s("red")}));
    assert_eq!(
        sorted(inc),
        vec![
            json!({"p": s("a"), "c": n(1), "x": s("red"), "a": s("A1")}),
            json!({"p": s("a"), "c": n(2), "x": s("red")})
        ]
    );
    // A local index reads the base item for attributes it does not hold.
    let z = q("byz", "p = :p", json!({":p": s("a")}));
    assert_eq!(z, vec![json!({"p": s("a"), "c": n(1), "z": s("z1")})]);
    let body = json!({"TableName": "tab", "IndexName": "byz", "KeyConditionExpression": "p = :p",
        "ExpressionAttributeValues": {":p": s("a")}, "Select": "ALL_ATTRIBUTES"});
    assert_eq!(ok(&d, "Query", body)["Items"][0]["b"], s("B1"));
    // ... but a global one refuses.
    let e = err(
        &d,
        "Query",
        json!({"TableName": "tab", "IndexName": "byy", "KeyConditionExpression": "y = :y",
               "ExpressionAttributeValues": {":y": n(7)}, "Select": "ALL_ATTRIBUTES"}),
    );
    assert!(e.message.contains("ALL_ATTRIBUTES"), "{}", e.message);
    // Scan of an index: sparse (item b/4 has no x).
    let scan = all_pages(
        &d,
        "Scan",
        json!({"TableName": "tab", "IndexName": "byx", "Limit": 1}),
    );
    assert_eq!(scan.len(), 3);
    // Update moves the entry; delete removes it.
    ok(
        &d,
        "UpdateItem",
        json!({"TableName": "tab", "Key": {"p": s("a"), "c": n(2)},
               "UpdateExpression": "SET x = :x", "ExpressionAttributeValues": {":x": s("blue")}}),
    );
    assert_eq!(q("byx", "x = :x", json!({":x": s("red")})).len(), 1);
    assert_eq!(q("byx", "x = :x", json!({":x": s("blue")})).len(), 2);
    ok(
        &d,
        "UpdateItem",
        json!({"TableName": "tab", "Key": {"p": s("a"), "c": n(2)}, "UpdateExpression": "REMOVE x"}),
    );
    assert_eq!(q("byx", "x = :x", json!({":x": s("blue")})).len(), 1);
    ok(
        &d,
        "DeleteItem",
        json!({"TableName": "tab", "Key": {"p": s("b"), "c": n(3)}}),
    );
    assert!(q("byx", "x = :x", json!({":x": s("blue")})).is_empty());
    assert_eq!(q("byy", "y = :y", json!({":y": n(7)})).len(), 1);
    // Batch and transaction writes too.
    ok(
        &d,
        "BatchWriteItem",
        json!({"RequestItems": {"tab": [
            {"PutRequest": {"Item": {"p": s("c"), "c": n(1), "x": s("green")}}},
            {"DeleteRequest": {"Key": {"p": s("a"), "c": n(1)}}}]}}),
    );
    assert!(q("byx", "x = :x", json!({":x": s("red")})).is_empty());
    assert_eq!(q("byx", "x = :x", json!({":x": s("green")})).len(), 1);
    ok(
        &d,
        "TransactWriteItems",
        json!({"TransactItems": [
            {"Update": {"TableName": "tab", "Key": {"p": s("c"), "c": n(1)},
                        "UpdateExpression": "SET x = :x", "ExpressionAttributeValues": {":x": s("gold")}}},
            {"Put": {"TableName": "tab", "Item": {"p": s("d"), "c": n(1), "x": s("gold")}}}]}),
    );
    assert!(q("byx", "x = :x", json!({":x": s("green")})).is_empty());
    assert_eq!(q("byx", "x = :x", json!({":x": s("gold")})).len(), 2);
}

#[test]
fn index_errors() {
    let d = Dynamo::memory().unwrap();
    indexed_table(&d, "tab");
    let e = err(
        &d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": s("a"), "c": n(1), "x": n(3)}}),
    );
    assert!(e.message.contains("Type mismatch"), "{}", e.message);
    let e = err(
        &d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": s("a"), "c": n(1), "x": s("")}}),
    );
    assert!(e.message.contains("empty"), "{}", e.message);
    let e = err(
        &d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": s("a"), "c": n(1), "x": {"NULL": true}}}),
    );
    assert!(e.message.contains("NULL"), "{}", e.message);
    let e = err(
        &d,
        "BatchWriteItem",
        json!({"RequestItems": {"tab": [
            {"PutRequest": {"Item": {"p": s("ok"), "c": n(1), "x": s("fine")}}},
            {"PutRequest": {"Item": {"p": s("bad"), "c": n(1), "y": s("text")}}}]}}),
    );
    assert_eq!(e.kind, ErrorKind::Validation);
    put_then_fail_update(&d);
    let scan = ok(&d, "Scan", json!({"TableName": "tab"}));
    assert_eq!(scan["Count"], 1, "nothing of a refused write is stored");
    let e = err(
        &d,
        "Query",
        json!({"TableName": "tab", "IndexName": "nope", "KeyConditionExpression": "x = :x",
               "ExpressionAttributeValues": {":x": s("a")}}),
    );
    assert!(e.message.contains("nope"));
    let e = err(
        &d,
        "Scan",
        json!({"TableName": "missing", "IndexName": "nope"}),
    );
    assert_eq!(e.kind, ErrorKind::ResourceNotFound);
    let e = err(
        &d,
        "Scan",
        json!({"TableName": "tab", "IndexName": "byx", "ConsistentRead": true}),
    );
    assert!(e.message.contains("Consistent"));
    ok(
        &d,
        "Scan",
        json!({"TableName": "tab", "IndexName": "byz", "ConsistentRead": true}),
    );
    let e = err(
        &d,
        "Scan",
        json!({"TableName": "tab", "Select": "ALL_PROJECTED_ATTRIBUTES"}),
    );
    assert!(e.message.contains("IndexName"));
}

fn put_then_fail_update(d: &Dynamo) {
    ok(
        d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": s("u"), "c": n(1), "x": s("x1")}}),
    );
    let e = err(
        d,
        "UpdateItem",
        json!({"TableName": "tab", "Key": {"p": s("u"), "c": n(1)},
               "UpdateExpression": "SET x = :v", "ExpressionAttributeValues": {":v": n(1)}}),
    );
    assert!(e.message.contains("Type mismatch"), "{}", e.message);
    let got = ok(
        d,
        "GetItem",
        json!({"TableName": "tab", "Key": {"p": s("u"), "c": n(1)}}),
    );
    assert_eq!(got["Item"]["x"], s("x1"));
}

#[test]
fn update_table_adds_and_removes_global_indexes() {
    let d = Dynamo::memory().unwrap();
    create(&d, "upd", ("p", "S"), None);
    for i in 0..30 {
        let mut item = json!({"p": s(&format!("k{i}"))});
        match i % 3 {
            0 => item["x"] = s(&format!("v{}", i % 2)),
            1 => item["x"] = n(i), // the wrong type: left out of the index
            _ => {}
        }
        ok(&d, "PutItem", json!({"TableName": "upd", "Item": item}));
    }
    let create_x = json!({"TableName": "upd",
        "AttributeDefinitions": [{"AttributeName": "x", "AttributeType": "S"}],
        "GlobalSecondaryIndexUpdates": [{"Create": {"IndexName": "byx",
            "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"}}}]});
    let out = ok(&d, "UpdateTable", create_x.clone());
    assert_eq!(
        out["TableDescription"]["GlobalSecondaryIndexes"][0]["IndexStatus"],
        "ACTIVE"
    );
    assert_eq!(
        out["TableDescription"]["GlobalSecondaryIndexes"][0]["ItemCount"],
        10
    );
    let scan = all_pages(&d, "Scan", json!({"TableName": "upd", "IndexName": "byx"}));
    assert_eq!(scan.len(), 10);
    let e = err(&d, "UpdateTable", create_x);
    assert!(e.message.contains("already exists"), "{}", e.message);
    let e = err(
        &d,
        "UpdateTable",
        json!({"TableName": "upd",
            "AttributeDefinitions": [{"AttributeName": "x", "AttributeType": "N"}],
            "GlobalSecondaryIndexUpdates": [{"Create": {"IndexName": "byx2",
                "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"}}}]}),
    );
    assert!(e.message.contains("redefined"), "{}", e.message);
    // New writes go to the new index.
    ok(
        &d,
        "PutItem",
        json!({"TableName": "upd", "Item": {"p": s("new"), "x": s("v0")}}),
    );
    let v0 = all_pages(
        &d,
        "Query",
        json!({"TableName": "upd", "IndexName": "byx", "KeyConditionExpression": "x = :x",
               "ExpressionAttributeValues": {":x": s("v0")}}),
    );
    assert_eq!(v0.len(), 6);
    ok(
        &d,
        "UpdateTable",
        json!({"TableName": "upd", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "byx"}}]}),
    );
    let t = ok(&d, "DescribeTable", json!({"TableName": "upd"}));
    assert!(t["Table"].get("GlobalSecondaryIndexes").is_none());
    assert_eq!(d.db().tables().len(), 1, "the index table is dropped");
    let e = err(&d, "Scan", json!({"TableName": "upd", "IndexName": "byx"}));
    assert!(e.message.contains("byx"));
    let e = err(
        &d,
        "UpdateTable",
        json!({"TableName": "upd", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "byx"}}]}),
    );
    assert_eq!(e.kind, ErrorKind::ResourceNotFound);
    // A second index after a removed one gets a table of its own.
    ok(
        &d,
        "UpdateTable",
        json!({"TableName": "upd",
            "AttributeDefinitions": [{"AttributeName": "x", "AttributeType": "S"}],
            "GlobalSecondaryIndexUpdates": [{"Create": {"IndexName": "again",
                "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}}}]}),
    );
    let scan = all_pages(
        &d,
        "Scan",
        json!({"TableName": "upd", "IndexName": "again"}),
    );
    assert_eq!(scan.len(), 11);
}

#[test]
fn indexes_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let d = Dynamo::new(strata::Db::open(dir.path()).unwrap());
        indexed_table(&d, "tab");
        ok(
            &d,
            "PutItem",
            json!({"TableName": "tab", "Item": {"p": s("a"), "c": n(1), "x": s("red")}}),
        );
        d.db().close().unwrap();
    }
    let d = Dynamo::new(strata::Db::open(dir.path()).unwrap());
    ok(
        &d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": s("a"), "c": n(1), "x": s("blue")}}),
    );
    let scan = all_pages(&d, "Scan", json!({"TableName": "tab", "IndexName": "byx"}));
    assert_eq!(scan, vec![json!({"p": s("a"), "c": n(1), "x": s("blue")})]);
    d.db().close().unwrap();
}

// ---- property test against the model -------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Put(u8, Option<u8>, Option<i8>, Option<u8>),
    SetX(u8, u8),
    RemoveX(u8),
    SetY(u8, i8),
    Delete(u8),
    Batch(Vec<(u8, Option<u8>)>),
    Transact(u8, u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..12;
    prop_oneof![
        (
            key.clone(),
            prop::option::of(0u8..3),
            prop::option::of(-3i8..3),
            prop::option::of(0u8..4)
        )
            .prop_map(|(k, x, y, z)| Op::Put(k, x, y, z)),
        (key.clone(), 0u8..3).prop_map(|(k, x)| Op::SetX(k, x)),
        key.clone().prop_map(Op::RemoveX),
        (key.clone(), -3i8..3).prop_map(|(k, y)| Op::SetY(k, y)),
        key.clone().prop_map(Op::Delete),
        prop::collection::btree_map(key.clone(), prop::option::of(0u8..3), 1..5)
            .prop_map(|m| Op::Batch(m.into_iter().collect())),
        (key.clone(), key, 0u8..3).prop_map(|(a, b, x)| Op::Transact(a, b, x)),
    ]
}

/// The base key of item number `k`: partition `p{k % 4}`, sort `k`.
fn key(k: u8) -> Json {
    json!({"p": s(&format!("p{}", k % 4)), "c": n(k)})
}

fn apply(d: &Dynamo, op: &Op) {
    let with = |k: u8, attrs: &[(&str, Json)]| {
        let mut item = key(k);
        for (n, v) in attrs {
            item[*n] = v.clone();
        }
        item
    };
    match op {
        Op::Put(k, x, y, z) => {
            let mut attrs = vec![("a", s("payload"))];
            if let Some(x) = x {
                attrs.push(("x", s(&format!("x{x}"))));
            }
            if let Some(y) = y {
                attrs.push(("y", n(y)));
            }
            if let Some(z) = z {
                attrs.push(("z", s(&format!("z{z}"))));
            }
            ok(
                d,
                "PutItem",
                json!({"TableName": "mod", "Item": with(*k, &attrs)}),
            );
        }
        Op::SetX(k, x) => {
            ok(
                d,
                "UpdateItem",
                json!({"TableName": "mod", "Key": key(*k), "UpdateExpression": "SET x = :x",
                       "ExpressionAttributeValues": {":x": s(&format!("x{x}"))}}),
            );
        }
        Op::RemoveX(k) => {
            ok(
                d,
                "UpdateItem",
                json!({"TableName": "mod", "Key": key(*k), "UpdateExpression": "REMOVE x"}),
            );
        }
        Op::SetY(k, y) => {
            ok(
                d,
                "UpdateItem",
                json!({"TableName": "mod", "Key": key(*k), "UpdateExpression": "SET y = :y",
                       "ExpressionAttributeValues": {":y": n(y)}}),
            );
        }
        Op::Delete(k) => {
            ok(d, "DeleteItem", json!({"TableName": "mod", "Key": key(*k)}));
        }
        Op::Batch(writes) => {
            let reqs: Vec<Json> = writes
                .iter()
                .map(|(k, x)| match x {
                    Some(x) => {
                        json!({"PutRequest": {"Item": with(*k, &[("x", s(&format!("x{x}")))])}})
                    }
                    None => json!({"DeleteRequest": {"Key": key(*k)}}),
                })
                .collect();
            ok(d, "BatchWriteItem", json!({"RequestItems": {"mod": reqs}}));
        }
        Op::Transact(a, b, x) => {
            let mut items = vec![json!({"Update": {"TableName": "mod", "Key": key(*a),
                "UpdateExpression": "SET x = :x",
                "ExpressionAttributeValues": {":x": s(&format!("x{x}"))}}})];
            if a != b {
                items.push(json!({"Delete": {"TableName": "mod", "Key": key(*b)}}));
            }
            ok(d, "TransactWriteItems", json!({"TransactItems": items}));
        }
    }
}

/// What index `(hash, range, projection)` must hold: every base item with the key
/// attributes, cut down to the projection.
fn model(base: &[Json], keys: &[&str], projected: Option<&[&str]>) -> Vec<Json> {
    sorted(
        base.iter()
            .filter(|i| keys.iter().all(|k| i.get(*k).is_some()))
            .map(|i| match projected {
                None => i.clone(),
                Some(p) => {
                    let m: BTreeMap<String, Json> = i
                        .as_object()
                        .unwrap()
                        .iter()
                        .filter(|(k, _)| p.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    json!(m)
                }
            })
            .collect(),
    )
}

/// An index's name, key attributes, and projected attributes (`None`: all).
type IndexCase = (
    &'static str,
    &'static [&'static str],
    Option<&'static [&'static str]>,
);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn indexes_hold_exactly_the_filtered_base(ops in prop::collection::vec(op(), 1..40)) {
        let d = Dynamo::memory().unwrap();
        ok(&d, "CreateTable", json!({"TableName": "mod", "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"},
                          {"AttributeName": "c", "KeyType": "RANGE"}],
            "AttributeDefinitions": [
                {"AttributeName": "p", "AttributeType": "S"},
                {"AttributeName": "c", "AttributeType": "N"},
                {"AttributeName": "x", "AttributeType": "S"},
                {"AttributeName": "y", "AttributeType": "N"},
                {"AttributeName": "z", "AttributeType": "S"}],
            "GlobalSecondaryIndexes": [
                {"IndexName": "gix", "Projection": {"ProjectionType": "ALL"},
                 "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"},
                               {"AttributeName": "y", "KeyType": "RANGE"}]},
                {"IndexName": "gixk", "Projection": {"ProjectionType": "KEYS_ONLY"},
                 "KeySchema": [{"AttributeName": "x", "KeyType": "HASH"}]}],
            "LocalSecondaryIndexes": [
                {"IndexName": "liz",
                 "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["x"]},
                 "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"},
                               {"AttributeName": "z", "KeyType": "RANGE"}]}]}));
        for o in &ops {
            apply(&d, o);
        }
        let base = all_pages(&d, "Scan", json!({"TableName": "mod"}));
        let cases: [IndexCase; 3] = [
            ("gix", &["x", "y"], None),
            ("gixk", &["x"], Some(&["p", "c", "x"])),
            ("liz", &["z"], Some(&["p", "c", "z", "x"])),
        ];
        for (index, keys, projected) in cases {
            let want = model(&base, keys, projected);
            let scan = all_pages(&d, "Scan", json!({"TableName": "mod", "IndexName": index, "Limit": 3}));
            prop_assert_eq!(sorted(scan), want.clone(), "scan of {}", index);
            // A Query per hash value returns that hash's share, in index order.
            let hash = if index == "liz" { "p" } else { "x" };
            let mut by_query = Vec::new();
            let hashes: std::collections::BTreeSet<String> =
                want.iter().map(|i| i[hash].to_string()).collect();
            for h in hashes {
                let v: Json = serde_json::from_str(&h).unwrap();
                let got = all_pages(&d, "Query", json!({"TableName": "mod", "IndexName": index,
                    "KeyConditionExpression": "#h = :h", "ExpressionAttributeNames": {"#h": hash},
                    "ExpressionAttributeValues": {":h": v}, "Limit": 2}));
                if index == "gix" {
                    let ys: Vec<i64> = got.iter()
                        .map(|i| i["y"]["N"].as_str().unwrap().parse().unwrap()).collect();
                    let mut sorted_ys = ys.clone();
                    sorted_ys.sort();
                    prop_assert_eq!(ys, sorted_ys, "index order");
                }
                by_query.extend(got);
            }
            prop_assert_eq!(sorted(by_query), want, "queries of {}", index);
        }
    }
}
