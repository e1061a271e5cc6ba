//! The DynamoDB API through its JSON front door: each operation, its errors, and the
//! semantics DynamoDB's users rely on.

mod common;

use common::*;
use serde_json::json;
use strata_dynamo::{Dynamo, ErrorKind};

#[test]
fn table_lifecycle() {
    let d = Dynamo::memory().unwrap();
    create(&d, "tt1", ("p", "S"), Some(("c", "N")));
    let desc = ok(&d, "DescribeTable", json!({"TableName": "tt1"}));
    let t = &desc["Table"];
    assert_eq!(t["TableStatus"], "ACTIVE");
    assert_eq!(t["KeySchema"][1]["AttributeName"], "c");
    assert_eq!(t["AttributeDefinitions"][1]["AttributeType"], "N");
    assert_eq!(t["ItemCount"], 0);
    assert!(t["TableArn"].as_str().unwrap().ends_with(":table/tt1"));
    assert_eq!(
        t["BillingModeSummary"]["LastUpdateToPayPerRequestDateTime"],
        t["CreationDateTime"]
    );
    // The table is a Strata table.
    assert!(d.db().table("tt1").is_ok());
    let e = err(
        &d,
        "CreateTable",
        json!({"TableName": "tt1", "BillingMode": "PAY_PER_REQUEST",
               "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
               "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"}]}),
    );
    assert_eq!(e.kind, ErrorKind::ResourceInUse);
    for name in ["tt2", "tt3", "tt0"] {
        create(&d, name, ("k", "B"), None);
    }
    let l = ok(&d, "ListTables", json!({"Limit": 2}));
    assert_eq!(l["TableNames"], json!(["tt0", "tt1"]));
    assert_eq!(l["LastEvaluatedTableName"], "tt1");
    let l = ok(&d, "ListTables", json!({"ExclusiveStartTableName": "tt1"}));
    assert_eq!(l["TableNames"], json!(["tt2", "tt3"]));
    assert!(l.get("LastEvaluatedTableName").is_none());
    let del = ok(&d, "DeleteTable", json!({"TableName": "tt1"}));
    assert_eq!(del["TableDescription"]["TableStatus"], "DELETING");
    assert!(del["TableDescription"].get("KeySchema").is_none());
    let e = err(&d, "DescribeTable", json!({"TableName": "tt1"}));
    assert_eq!(e.kind, ErrorKind::ResourceNotFound);
    assert_eq!(
        e.message,
        "Requested resource not found: Table: tt1 not found"
    );
}

#[test]
fn create_table_validation() {
    let d = Dynamo::memory().unwrap();
    let base = |extra: serde_json::Value| {
        let mut b = json!({"TableName": "tab", "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "p", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "S"}]});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    for bad in [
        json!({"TableName": "ab"}),
        json!({"TableName": "a@b"}),
        json!({"BillingMode": "pay_per_request"}),
        json!({"BillingMode": "PROVISIONED"}),
        json!({"ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}}),
        json!({"KeySchema": [{"AttributeName": "p", "KeyType": "RANGE"}]}),
        json!({"AttributeDefinitions": [{"AttributeName": "p", "AttributeType": "Q"}]}),
        json!({"AttributeDefinitions": [{"AttributeName": "z", "AttributeType": "S"}]}),
        json!({"AttributeDefinitions": [{"AttributeType": "S"}]}),
    ] {
        let e = err(&d, "CreateTable", base(bad.clone()));
        assert_eq!(e.kind, ErrorKind::Validation, "{bad}: {e}");
    }
    let e = err(
        &d,
        "CreateTable",
        base(json!({"AttributeDefinitions": [
            {"AttributeName": "p", "AttributeType": "S"},
            {"AttributeName": "p", "AttributeType": "N"}]})),
    );
    assert!(
        e.message.contains("Duplicate") && e.message.contains('p'),
        "{e}"
    );
    // Nothing was created by the failures.
    assert!(d.db().tables().is_empty());
}

#[test]
fn items_round_trip_every_type() {
    let d = Dynamo::memory().unwrap();
    create(&d, "tab", ("p", "S"), None);
    let item = json!({
        "p": s("k"), "n": n("12.345"), "i": n(42), "b": {"B": "eHl6"}, "t": {"BOOL": true},
        "z": {"NULL": true}, "l": {"L": [s("hello"), n(42)]},
        "m": {"M": {"x": {"M": {"y": {"L": [n(1), s("hi")]}}}}},
        "ss": {"SS": ["b", "a"]}, "ns": {"NS": ["3.14", "1", "42"]}, "bs": {"BS": ["eHl6", "aGk="]},
        "exact": n("0.1234567890123456789012345"), "empty": s(""), "eb": {"B": ""}
    });
    ok(&d, "PutItem", json!({"TableName": "tab", "Item": item}));
    let got = ok(
        &d,
        "GetItem",
        json!({"TableName": "tab", "Key": {"p": s("k")}}),
    );
    let got = &got["Item"];
    assert_eq!(got["exact"], n("0.1234567890123456789012345"));
    assert_eq!(got["ns"], json!({"NS": ["1", "3.14", "42"]}));
    assert_eq!(got["ss"], json!({"SS": ["a", "b"]}));
    assert_eq!(got["m"], item["m"]);
    assert_eq!(got["eb"], json!({"B": ""}));
    assert!(ok(
        &d,
        "GetItem",
        json!({"TableName": "tab", "Key": {"p": s("none")}})
    )
    .get("Item")
    .is_none());
}

#[test]
fn item_validation() {
    let d = Dynamo::memory().unwrap();
    create(&d, "tab", ("p", "S"), Some(("c", "B")));
    let put =
        |item: serde_json::Value| err(&d, "PutItem", json!({"TableName": "tab", "Item": item}));
    assert!(put(json!({"p": s("x")}))
        .message
        .contains("Missing the key c"));
    assert!(put(json!({"p": n(1), "c": {"B": "AA=="}}))
        .message
        .contains("Type mismatch"));
    assert!(put(json!({"p": s(""), "c": {"B": "AA=="}}))
        .message
        .contains("empty string"));
    assert!(put(json!({"p": s("x"), "c": {"B": ""}}))
        .message
        .contains("empty binary"));
    assert!(
        put(json!({"p": s("x"), "c": {"B": "AA=="}, "a": {"SS": []}}))
            .message
            .contains("empty")
    );
    assert!(
        put(json!({"p": s("x"), "c": {"B": "AA=="}, "a": {"NS": ["1", "1.0"]}}))
            .message
            .contains("duplicates")
    );
    assert!(
        put(json!({"p": s("x"), "c": {"B": "AA=="}, "a": n("1e126")}))
            .message
            .contains("overflow")
    );
    let long = "x".repeat(2049);
    assert!(put(json!({"p": s(&long), "c": {"B": "AA=="}}))
        .message
        .contains("limit"));
    let big = "y".repeat(400 * 1024);
    assert!(put(json!({"p": s("x"), "c": {"B": "AA=="}, "a": s(&big)}))
        .message
        .contains("Item size"));
    let e = err(
        &d,
        "GetItem",
        json!({"TableName": "tab", "Key": {"p": s("x")}}),
    );
    assert!(e.message.contains("does not match the schema"));
    let e = err(
        &d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": {"N": 5}}}),
    );
    assert_eq!(e.kind, ErrorKind::Serialization);
    let e = err(
        &d,
        "PutItem",
        json!({"TableName": "nope", "Item": {"p": s("x")}}),
    );
    assert_eq!(e.kind, ErrorKind::ResourceNotFound);
}

#[test]
fn conditions_and_return_values() {
    let d = Dynamo::memory().unwrap();
    create(&d, "tab", ("p", "S"), None);
    let put = |item: serde_json::Value, cond: &str, values: serde_json::Value| {
        let mut b = json!({"TableName": "tab", "Item": item, "ConditionExpression": cond,
                           "ReturnValues": "ALL_OLD"});
        if !values.is_null() {
            b["ExpressionAttributeValues"] = values;
        }
        call(&d, "PutItem", b)
    };
    put(
        json!({"p": s("a"), "v": n(1)}),
        "attribute_not_exists(p)",
        json!(null),
    )
    .unwrap();
    let e = put(
        json!({"p": s("a"), "v": n(2)}),
        "attribute_not_exists(p)",
        json!(null),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::ConditionalCheckFailed);
    let old = put(
        json!({"p": s("a"), "v": n(2)}),
        "v = :one",
        json!({":one": n(1)}),
    )
    .unwrap();
    assert_eq!(old["Attributes"]["v"], n(1));
    // ReturnValuesOnConditionCheckFailure hands back the item.
    let e = err(
        &d,
        "DeleteItem",
        json!({"TableName": "tab", "Key": {"p": s("a")}, "ConditionExpression": "v = :x",
               "ExpressionAttributeValues": {":x": n(9)},
               "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}),
    );
    assert_eq!(e.item.unwrap()["v"], n(2));
    // Unused references are errors, even when the condition would fail.
    let e = err(
        &d,
        "DeleteItem",
        json!({"TableName": "tab", "Key": {"p": s("a")}, "ConditionExpression": "v = :x",
               "ExpressionAttributeValues": {":x": n(9), ":unused": n(1)}}),
    );
    assert!(e.message.contains(":unused"), "{e}");
    // Legacy Expected.
    let e = err(
        &d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": s("a")},
               "Expected": {"v": {"ComparisonOperator": "GT", "AttributeValueList": [n(5)]}}}),
    );
    assert_eq!(e.kind, ErrorKind::ConditionalCheckFailed);
    ok(
        &d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": s("a")},
               "Expected": {"v": {"Value": n(2)}, "w": {"Exists": false}}}),
    );
}

#[test]
fn update_expressions() {
    let d = Dynamo::memory().unwrap();
    create(&d, "tab", ("p", "S"), None);
    let up = |expr: &str, values: serde_json::Value, rv: &str| {
        let mut b = json!({"TableName": "tab", "Key": {"p": s("a")}, "UpdateExpression": expr,
                           "ReturnValues": rv});
        if !values.is_null() {
            b["ExpressionAttributeValues"] = values;
        }
        call(&d, "UpdateItem", b)
    };
    let r = up(
        "SET a = :a, l = :l, m = :m ADD n :one, s :s",
        json!({":a": n(1), ":l": {"L": [n(1), n(2), n(3)]}, ":m": {"M": {"x": {"M": {}}}},
               ":one": n(1), ":s": {"SS": ["x", "y"]}}),
        "ALL_NEW",
    )
    .unwrap();
    assert_eq!(r["Attributes"]["n"], n(1));
    let r = up(
        "SET a = a + :big, m.x.y = :v, l[1] = :v, l[10] = :v REMOVE l[0] DELETE s :x",
        json!({":big": n("10000000000000000000000"), ":v": s("v"), ":x": {"SS": ["x"]}}),
        "UPDATED_NEW",
    )
    .unwrap();
    let a = &r["Attributes"];
    assert_eq!(a["a"], n("10000000000000000000001"));
    assert_eq!(a["m"], json!({"M": {"x": {"M": {"y": s("v")}}}}));
    assert_eq!(a["s"], json!({"SS": ["y"]}));
    let got = ok(
        &d,
        "GetItem",
        json!({"TableName": "tab", "Key": {"p": s("a")}}),
    );
    // l was [1,2,3]: l[1] replaced, l[10] appended, then the original l[0] removed.
    assert_eq!(got["Item"]["l"], json!({"L": [s("v"), n(3), s("v")]}));
    for (expr, what) in [
        ("SET a = :v, a = :v", "overlap"),
        ("SET a = :v REMOVE a.b", "overlap"),
        ("SET a.b = :v, a[1] = :v", "conflict"),
        ("SET p = :v", "key"),
        ("SET a = :v SET b = :v", "only be used once"),
        ("SET x = list_append(:v, :v)", "operand type"),
        ("SET x = nope(:v)", "function"),
        ("SET x.y.z = :v", "document path"),
        ("SET x = y, w = :v", "does not exist"),
        ("SET a = a + :v", "operand type"),
        ("SET l = l + a, w = :v", "incorrect data type"),
        ("REMOVE m.x.y.z.w SET w = :v", "document path"),
    ] {
        let e = up(expr, json!({":v": s("v")}), "NONE").unwrap_err();
        assert!(e.message.contains(what), "{expr}: {e}");
    }
    let e = up("SET #and = :v", json!({":v": s("v")}), "NONE").unwrap_err();
    assert!(e.message.contains("#and"), "{e}");
    let e = up("SET and = :v", json!({":v": s("v")}), "NONE").unwrap_err();
    assert!(e.message.contains("reserved keyword"), "{e}");
    // An update that only removes does not create a missing item.
    ok(
        &d,
        "UpdateItem",
        json!({"TableName": "tab", "Key": {"p": s("ghost")}, "UpdateExpression": "REMOVE a"}),
    );
    assert!(ok(
        &d,
        "GetItem",
        json!({"TableName": "tab", "Key": {"p": s("ghost")}})
    )
    .get("Item")
    .is_none());
}

#[test]
fn query_paging_and_conditions() {
    let d = Dynamo::memory().unwrap();
    create(&d, "tab", ("p", "S"), Some(("c", "N")));
    for i in 0..30 {
        ok(
            &d,
            "PutItem",
            json!({"TableName": "tab", "Item": {"p": s("a"), "c": n(i), "odd": {"BOOL": i % 2 == 1}}}),
        );
    }
    ok(
        &d,
        "PutItem",
        json!({"TableName": "tab", "Item": {"p": s("b"), "c": n(1)}}),
    );
    let q = |extra: serde_json::Value| {
        let mut b = json!({"TableName": "tab", "KeyConditionExpression": "p = :p AND c BETWEEN :lo AND :hi",
                           "ExpressionAttributeValues": {":p": s("a"), ":lo": n(5), ":hi": n(24)}});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        ok(&d, "Query", b)
    };
    let r = q(json!({}));
    assert_eq!(r["Count"], 20);
    assert_eq!(r["Items"][0]["c"], n(5));
    // Limit counts items read; the filter applies after it.
    let r = q(json!({"Limit": 4, "FilterExpression": "odd = :t",
                     "ExpressionAttributeValues": {":p": s("a"), ":lo": n(5), ":hi": n(24), ":t": {"BOOL": true}}}));
    assert_eq!(
        (r["Count"].as_u64(), r["ScannedCount"].as_u64()),
        (Some(2), Some(4))
    );
    assert_eq!(r["LastEvaluatedKey"], json!({"p": s("a"), "c": n(8)}));
    // Paging in reverse.
    let mut seen = vec![];
    let mut start = serde_json::Value::Null;
    loop {
        let mut extra = json!({"Limit": 7, "ScanIndexForward": false});
        if !start.is_null() {
            extra["ExclusiveStartKey"] = start.clone();
        }
        let r = q(extra);
        for it in r["Items"].as_array().unwrap() {
            seen.push(it["c"]["N"].as_str().unwrap().parse::<i64>().unwrap());
        }
        match r.get("LastEvaluatedKey") {
            Some(k) => start = k.clone(),
            None => break,
        }
    }
    assert_eq!(seen, (5..=24).rev().collect::<Vec<_>>());
    let r = q(json!({"Select": "COUNT"}));
    assert!(r.get("Items").is_none());
    assert_eq!(r["Count"], 20);
    for (kce, what) in [
        ("p < :p", "not supported"),
        ("c = :c", "missed key schema element: p"),
        ("p = :p OR c = :c", "OR"),
        ("p = :p AND c <> :c", "<>"),
        ("p = :p AND begins_with(c, :c)", "begins_with"),
        ("p = :p AND p = :p", "one condition per key"),
        ("p = :c", "type does not match"),
    ] {
        let e = err(
            &d,
            "Query",
            json!({"TableName": "tab", "KeyConditionExpression": kce,
                   "ExpressionAttributeValues": if kce.contains(":c") && kce.contains(":p") {
                       json!({":p": s("a"), ":c": n(1)})
                   } else if kce.contains(":c") { json!({":c": n(1)}) } else { json!({":p": s("a")}) }}),
        );
        assert!(e.message.contains(what), "{kce}: {e}");
    }
    let e = err(
        &d,
        "Query",
        json!({"TableName": "tab", "KeyConditionExpression": "p = :p", "FilterExpression": "c > :c",
               "ExpressionAttributeValues": {":p": s("a"), ":c": n(1)}}),
    );
    assert!(e.message.contains("Primary key attribute: c"), "{e}");
}

#[test]
fn scan_segments_cover_the_table_once() {
    let d = Dynamo::memory().unwrap();
    create(&d, "tab", ("p", "N"), None);
    for i in 0..200 {
        ok(
            &d,
            "PutItem",
            json!({"TableName": "tab", "Item": {"p": n(i)}}),
        );
    }
    let mut all = vec![];
    for seg in 0..7 {
        let mut start = serde_json::Value::Null;
        loop {
            let mut b =
                json!({"TableName": "tab", "Segment": seg, "TotalSegments": 7, "Limit": 13});
            if !start.is_null() {
                b["ExclusiveStartKey"] = start.clone();
            }
            let r = ok(&d, "Scan", b);
            for it in r["Items"].as_array().unwrap() {
                all.push(it["p"]["N"].as_str().unwrap().parse::<i64>().unwrap());
            }
            match r.get("LastEvaluatedKey") {
                Some(k) => start = k.clone(),
                None => break,
            }
        }
    }
    all.sort();
    assert_eq!(all, (0..200).collect::<Vec<_>>());
    let e = err(
        &d,
        "Scan",
        json!({"TableName": "tab", "Segment": 7, "TotalSegments": 7}),
    );
    assert!(e.message.contains("Segment"));
}

#[test]
fn batches() {
    let d = Dynamo::memory().unwrap();
    create(&d, "ta1", ("p", "S"), None);
    create(&d, "tb1", ("p", "S"), None);
    let r = ok(
        &d,
        "BatchWriteItem",
        json!({"RequestItems": {
            "ta1": [{"PutRequest": {"Item": {"p": s("1")}}}, {"PutRequest": {"Item": {"p": s("2")}}}],
            "tb1": [{"PutRequest": {"Item": {"p": s("1"), "x": n(1)}}}]}}),
    );
    assert_eq!(r["UnprocessedItems"], json!({}));
    let r = ok(
        &d,
        "BatchGetItem",
        json!({"RequestItems": {"ta1": {"Keys": [{"p": s("1")}, {"p": s("9")}]},
                                 "tb1": {"Keys": [{"p": s("1")}], "ProjectionExpression": "x"}}}),
    );
    assert_eq!(r["Responses"]["ta1"], json!([{"p": s("1")}]));
    assert_eq!(r["Responses"]["tb1"], json!([{"x": n(1)}]));
    assert_eq!(r["UnprocessedKeys"], json!({}));
    // Duplicates and bad items reject the whole batch before any write.
    let e = err(
        &d,
        "BatchWriteItem",
        json!({"RequestItems": {"ta1": [{"PutRequest": {"Item": {"p": s("3")}}},
                                      {"DeleteRequest": {"Key": {"p": s("3")}}}]}}),
    );
    assert!(e.message.contains("duplicates"));
    let e = err(
        &d,
        "BatchWriteItem",
        json!({"RequestItems": {"ta1": [{"PutRequest": {"Item": {"p": s("4")}}},
                                      {"PutRequest": {"Item": {"p": n(5)}}}]}}),
    );
    assert_eq!(e.kind, ErrorKind::Validation);
    assert!(ok(
        &d,
        "GetItem",
        json!({"TableName": "ta1", "Key": {"p": s("4")}})
    )
    .get("Item")
    .is_none());
    let many: Vec<_> = (0..26)
        .map(|i| json!({"PutRequest": {"Item": {"p": s(&i.to_string())}}}))
        .collect();
    let e = err(&d, "BatchWriteItem", json!({"RequestItems": {"ta1": many}}));
    assert!(e.message.contains("length"));
}

#[test]
fn transactions_are_all_or_nothing() {
    let d = Dynamo::memory().unwrap();
    create(&d, "acct", ("id", "S"), None);
    create(&d, "log", ("id", "S"), None);
    ok(
        &d,
        "PutItem",
        json!({"TableName": "acct", "Item": {"id": s("x"), "bal": n(10)}}),
    );
    let transfer = |amount: i64| {
        call(
            &d,
            "TransactWriteItems",
            json!({"TransactItems": [
                {"Update": {"TableName": "acct", "Key": {"id": s("x")},
                            "UpdateExpression": "SET bal = bal - :a",
                            "ConditionExpression": "bal >= :a",
                            "ExpressionAttributeValues": {":a": n(amount)}}},
                {"Update": {"TableName": "acct", "Key": {"id": s("y")},
                            "UpdateExpression": "ADD bal :a",
                            "ExpressionAttributeValues": {":a": n(amount)}}},
                {"Put": {"TableName": "log", "Item": {"id": s(&format!("t{amount}"))},
                         "ConditionExpression": "attribute_not_exists(id)"}}]}),
        )
    };
    transfer(4).unwrap();
    let e = transfer(7).unwrap_err();
    assert_eq!(e.kind, ErrorKind::TransactionCanceled);
    let codes: Vec<_> = e
        .cancellation_reasons
        .iter()
        .map(|r| r.code.as_str())
        .collect();
    assert_eq!(codes, ["ConditionalCheckFailed", "None", "None"]);
    assert!(e.message.contains("[ConditionalCheckFailed, None, None]"));
    let body: serde_json::Value = serde_json::from_slice(&e.body()).unwrap();
    assert_eq!(
        body["CancellationReasons"][0]["Code"],
        "ConditionalCheckFailed"
    );
    // Nothing of the cancelled transaction was written.
    assert!(ok(
        &d,
        "GetItem",
        json!({"TableName": "log", "Key": {"id": s("t7")}})
    )
    .get("Item")
    .is_none());
    let r = ok(
        &d,
        "TransactGetItems",
        json!({"TransactItems": [
            {"Get": {"TableName": "acct", "Key": {"id": s("x")}}},
            {"Get": {"TableName": "acct", "Key": {"id": s("y")}, "ProjectionExpression": "bal"}},
            {"Get": {"TableName": "acct", "Key": {"id": s("z")}}}]}),
    );
    assert_eq!(r["Responses"][0]["Item"]["bal"], n(6));
    assert_eq!(r["Responses"][1]["Item"], json!({"bal": n(4)}));
    assert_eq!(r["Responses"][2], json!({}));
    let e = err(
        &d,
        "TransactWriteItems",
        json!({"TransactItems": [
            {"ConditionCheck": {"TableName": "acct", "Key": {"id": s("x")},
                                "ConditionExpression": "attribute_exists(id)"}},
            {"Delete": {"TableName": "acct", "Key": {"id": s("x")}}}]}),
    );
    assert!(e.message.contains("multiple operations on one item"));
}

#[test]
fn tags_and_odds() {
    let d = Dynamo::memory().unwrap();
    create(&d, "tab", ("p", "S"), None);
    let arn = ok(&d, "DescribeTable", json!({"TableName": "tab"}))["Table"]["TableArn"].clone();
    let out = d
        .call(
            "TagResource",
            json!({"ResourceArn": arn, "Tags": [{"Key": "k", "Value": "v"}]})
                .to_string()
                .as_bytes(),
        )
        .unwrap();
    assert!(out.is_empty());
    let tags = ok(&d, "ListTagsOfResource", json!({"ResourceArn": arn}));
    assert_eq!(tags["Tags"], json!([{"Key": "k", "Value": "v"}]));
    ok(
        &d,
        "UntagResource",
        json!({"ResourceArn": arn, "TagKeys": ["k"]}),
    );
    assert_eq!(
        ok(&d, "ListTagsOfResource", json!({"ResourceArn": arn}))["Tags"],
        json!([])
    );
    let e = d.call("PutItem", b"{\"TableName\": ").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Serialization);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(d.call("PutItem", deep.as_bytes()).is_err());
    let e = d.call("Frob", b"{}").unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownOperation);
}
