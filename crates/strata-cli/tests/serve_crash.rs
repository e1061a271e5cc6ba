//! kill -9 of `strata serve` (sync on) in the middle of a BatchWriteItem / TransactWriteItems
//! load: after a restart on the same directory every acknowledged request is there, and every
//! transaction is all there or not at all. Then SIGTERM under load: every acknowledged write is
//! there after the graceful stop.

mod serve_util;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use serve_util::Serve;

/// One API call; `Ok(answer)` on 200, `Err(Some(answer))` on a DynamoDB error, `Err(None)` when
/// the connection failed (the server is gone).
fn call(agent: &ureq::Agent, url: &str, op: &str, body: &Value) -> Result<Value, Option<Value>> {
    let r = agent
        .post(url)
        .set("X-Amz-Target", &format!("DynamoDB_20120810.{op}"))
        .set("Content-Type", "application/x-amz-json-1.0")
        .send_string(&body.to_string());
    match r {
        Ok(resp) => Ok(serde_json::from_str(&resp.into_string().map_err(|_| None)?).unwrap()),
        Err(ureq::Error::Status(_, resp)) => Err(Some(
            serde_json::from_str(&resp.into_string().unwrap()).unwrap(),
        )),
        Err(_) => Err(None),
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build()
}

fn create_tables(url: &str) {
    let a = agent();
    for (name, sk) in [("crash_items", true), ("crash_tx", false)] {
        let mut schema = vec![json!({"AttributeName": "pk", "KeyType": "HASH"})];
        let mut defs = vec![json!({"AttributeName": "pk", "AttributeType": "S"})];
        if sk {
            schema.push(json!({"AttributeName": "sk", "KeyType": "RANGE"}));
            defs.push(json!({"AttributeName": "sk", "AttributeType": "N"}));
        }
        call(
            &a,
            url,
            "CreateTable",
            &json!({"TableName": name, "KeySchema": schema, "AttributeDefinitions": defs,
                    "BillingMode": "PAY_PER_REQUEST"}),
        )
        .unwrap_or_else(|e| panic!("CreateTable {name}: {e:?}"));
    }
}

/// What one writer got acknowledged.
#[derive(Default, Debug)]
struct Acked {
    /// Batches of 25 items (batch numbers), all of `crash_items`, pk = "b{writer}".
    batches: Vec<u64>,
    /// The writer's transactions 0..txns are acknowledged.
    txns: u64,
}

fn batch_body(writer: usize, n: u64) -> Value {
    let puts: Vec<Value> = (0..25)
        .map(|i| {
            json!({"PutRequest": {"Item": {
                "pk": {"S": format!("b{writer}")},
                "sk": {"N": (n * 25 + i).to_string()},
                "payload": {"S": "x".repeat(200)}
            }}})
        })
        .collect();
    json!({"RequestItems": {"crash_items": puts}})
}

/// Transaction `n` of `writer`: an item in each table and the writer's counter += 1, the
/// counter conditioned on its previous value (so a transaction applied twice would fail).
fn txn_body(writer: usize, n: u64) -> Value {
    let mut update = json!({
        "TableName": "crash_tx",
        "Key": {"pk": {"S": format!("counter{writer}")}},
        "UpdateExpression": "ADD c :one",
    });
    if n == 0 {
        update["ConditionExpression"] = json!("attribute_not_exists(pk)");
        update["ExpressionAttributeValues"] = json!({":one": {"N": "1"}});
    } else {
        update["ConditionExpression"] = json!("c = :prev");
        update["ExpressionAttributeValues"] =
            json!({":one": {"N": "1"}, ":prev": {"N": n.to_string()}});
    }
    json!({"TransactItems": [
        {"Put": {"TableName": "crash_items", "Item": {
            "pk": {"S": format!("t{writer}")}, "sk": {"N": n.to_string()}}}},
        {"Put": {"TableName": "crash_tx", "Item": {
            "pk": {"S": format!("t{writer}-{n}")}, "n": {"N": n.to_string()}}}},
        {"Update": update},
    ]})
}

/// Runs one thread per entry of `txn_start` (the writer's next transaction number), mixing
/// batches (numbered from `batch_base`) and transactions, until `stop` or until the server
/// goes away; returns what each writer got acknowledged.
fn load(url: &str, batch_base: u64, txn_start: Vec<u64>, stop: Arc<AtomicBool>) -> Vec<Acked> {
    let handles: Vec<_> = txn_start
        .into_iter()
        .enumerate()
        .map(|(w, first_txn)| {
            let url = url.to_string();
            let stop = stop.clone();
            thread::spawn(move || {
                let a = agent();
                let mut acked = Acked {
                    batches: Vec::new(),
                    txns: first_txn,
                };
                let mut next_batch = batch_base;
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    if i.is_multiple_of(2) {
                        match call(&a, &url, "BatchWriteItem", &batch_body(w, next_batch)) {
                            Ok(r) => {
                                let all_done = r["UnprocessedItems"]
                                    .as_object()
                                    .map(|o| o.is_empty())
                                    .unwrap_or(true);
                                assert!(all_done, "unprocessed items: {r}");
                                acked.batches.push(next_batch);
                                next_batch += 1;
                            }
                            Err(Some(e)) => panic!("BatchWriteItem refused: {e}"),
                            Err(None) => break,
                        }
                    } else {
                        match call(&a, &url, "TransactWriteItems", &txn_body(w, acked.txns)) {
                            Ok(_) => acked.txns += 1,
                            Err(Some(e)) => panic!("TransactWriteItems refused: {e}"),
                            Err(None) => break,
                        }
                    }
                }
                acked
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

fn get(a: &ureq::Agent, url: &str, table: &str, key: Value) -> Option<Value> {
    let r = call(
        a,
        url,
        "GetItem",
        &json!({"TableName": table, "Key": key, "ConsistentRead": true}),
    )
    .unwrap_or_else(|e| panic!("GetItem: {e:?}"));
    r.get("Item").cloned()
}

/// The sort keys of every item of partition `pk` of `crash_items` (Query, all pages).
fn query_all(a: &ureq::Agent, url: &str, pk: &str) -> std::collections::HashSet<u64> {
    let mut out = std::collections::HashSet::new();
    let mut start: Option<Value> = None;
    loop {
        let mut q = json!({
            "TableName": "crash_items",
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": pk}},
            "ProjectionExpression": "sk",
        });
        if let Some(k) = start.take() {
            q["ExclusiveStartKey"] = k;
        }
        let r = call(a, url, "Query", &q).unwrap_or_else(|e| panic!("Query: {e:?}"));
        for i in r["Items"].as_array().unwrap() {
            out.insert(i["sk"]["N"].as_str().unwrap().parse().unwrap());
        }
        match r.get("LastEvaluatedKey") {
            Some(k) => start = Some(k.clone()),
            None => return out,
        }
    }
}

/// Checks every acknowledged write of `acked` (accumulated over runs) and the all-or-nothing
/// of transactions; returns the number of transactions applied per writer (which may exceed
/// the acknowledged count by the one in flight at the kill).
fn verify(url: &str, batches: &[Vec<u64>], txns_acked: &[u64]) -> Vec<u64> {
    let a = agent();
    let mut applied = Vec::new();
    for (w, bs) in batches.iter().enumerate() {
        let present = query_all(&a, url, &format!("b{w}"));
        for &b in bs {
            for i in 0..25 {
                assert!(
                    present.contains(&(b * 25 + i)),
                    "writer {w}: item {i} of acknowledged batch {b} lost"
                );
            }
        }
    }
    for (w, &acked) in txns_acked.iter().enumerate() {
        let counter = get(
            &a,
            url,
            "crash_tx",
            json!({"pk": {"S": format!("counter{w}")}}),
        )
        .map(|i| i["c"]["N"].as_str().unwrap().parse::<u64>().unwrap())
        .unwrap_or(0);
        assert!(
            counter >= acked && counter <= acked + 1,
            "writer {w}: counter {counter}, acknowledged transactions {acked}"
        );
        // Every applied transaction is whole; none beyond the counter is there at all.
        for n in 0..counter + 2 {
            let x = get(
                &a,
                url,
                "crash_items",
                json!({"pk": {"S": format!("t{w}")}, "sk": {"N": n.to_string()}}),
            );
            let y = get(
                &a,
                url,
                "crash_tx",
                json!({"pk": {"S": format!("t{w}-{n}")}}),
            );
            let expect = n < counter;
            assert_eq!(
                x.is_some(),
                expect,
                "writer {w} txn {n}: item in crash_items (counter {counter})"
            );
            assert_eq!(
                y.is_some(),
                expect,
                "writer {w} txn {n}: item in crash_tx (counter {counter})"
            );
        }
        applied.push(counter);
    }
    applied
}

#[test]
fn kill_9_during_batch_and_transaction_load_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let writers = 6;
    let mut batches: Vec<Vec<u64>> = vec![Vec::new(); writers];
    let mut txns: Vec<u64> = vec![0; writers];
    let mut total_acks = 0;
    for round in 0..3u64 {
        let s = Serve::start(&["--db", db, "--sync", "always"], &[]);
        if round == 0 {
            create_tables(&s.url);
        } else {
            // Each writer's next transaction number is where its counter is.
            txns = verify(&s.url, &batches, &txns);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let url = s.url.clone();
        let start = txns.clone();
        let loader = thread::spawn(move || load(&url, round * 1_000_000, start, stop));
        thread::sleep(Duration::from_millis(1500 + 500 * round));
        s.kill9();
        let acked = loader.join().unwrap();
        for (w, a) in acked.into_iter().enumerate() {
            total_acks += a.batches.len() as u64 + (a.txns - txns[w]);
            batches[w].extend(a.batches);
            txns[w] = a.txns;
        }
    }
    eprintln!("kill -9 test: {total_acks} acknowledged requests over 3 kills");
    assert!(
        total_acks > 50,
        "the load was too small to mean anything: {total_acks}"
    );
    let s = Serve::start(&["--db", db], &[]);
    verify(&s.url, &batches, &txns);
    assert!(s.terminate().success());
}

#[test]
fn sigterm_under_load_stops_cleanly_with_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let s = Serve::start(&["--db", db], &[]);
    create_tables(&s.url);
    let stop = Arc::new(AtomicBool::new(false));
    let url = s.url.clone();
    let loader = thread::spawn(move || load(&url, 0, vec![0; 4], stop));
    thread::sleep(Duration::from_millis(1000));
    let t = Instant::now();
    let status = s.terminate();
    assert!(status.success(), "strata serve exited with {status}");
    assert!(t.elapsed() < Duration::from_secs(30));
    let acked = loader.join().unwrap();
    let batches: Vec<Vec<u64>> = acked.iter().map(|a| a.batches.clone()).collect();
    let txns: Vec<u64> = acked.iter().map(|a| a.txns).collect();
    assert!(txns.iter().sum::<u64>() > 0);
    let s = Serve::start(&["--db", db], &[]);
    let applied = verify(&s.url, &batches, &txns);
    // A graceful stop answers every request it ran: nothing applied without an answer.
    assert_eq!(applied, txns);
    assert!(s.terminate().success());
}
