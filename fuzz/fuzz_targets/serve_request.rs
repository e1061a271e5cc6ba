//! `strata serve`'s request → answer path (protocol checks, then `Dynamo::call`) on hostile
//! bodies: never a panic, never a 500 on an in-memory database, every answer well-formed JSON
//! with an `x-amz-crc32` that matches, every error a DynamoDB `__type`.
//! Input: byte 0 picks the operation and content type, the rest is the body.
#![no_main]

use std::sync::OnceLock;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strata_server::{Endpoint, ServerConfig};

const OPS: &[&str] = &[
    "PutItem",
    "GetItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "BatchWriteItem",
    "BatchGetItem",
    "TransactWriteItems",
    "TransactGetItems",
    "CreateTable",
    "DescribeTable",
    "ListTables",
    "UpdateTable",
    "DeleteTable",
    "NoSuchOperation",
];
const TYPES: &[&str] = &[
    "application/x-amz-json-1.0",
    "application/x-amz-json-1.1",
    "application/json",
    "text/plain",
];

fn state() -> &'static (tokio::runtime::Runtime, Endpoint) {
    static S: OnceLock<(tokio::runtime::Runtime, Endpoint)> = OnceLock::new();
    S.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dynamo = strata_dynamo::Dynamo::memory().unwrap();
        for t in [
            r#"{"TableName":"t","KeySchema":[{"AttributeName":"p","KeyType":"HASH"},{"AttributeName":"c","KeyType":"RANGE"}],"AttributeDefinitions":[{"AttributeName":"p","AttributeType":"S"},{"AttributeName":"c","AttributeType":"N"}],"BillingMode":"PAY_PER_REQUEST"}"#,
            r#"{"TableName":"s","KeySchema":[{"AttributeName":"p","KeyType":"HASH"}],"AttributeDefinitions":[{"AttributeName":"p","AttributeType":"B"}],"BillingMode":"PAY_PER_REQUEST"}"#,
        ] {
            let _ = dynamo.call("CreateTable", t.as_bytes());
        }
        (rt, Endpoint::new(dynamo, ServerConfig::default()))
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let (rt, endpoint) = state();
    let op = OPS[sel as usize % OPS.len()];
    let ct = TYPES[(sel as usize / OPS.len()) % TYPES.len()];
    let req = hyper::Request::post("/")
        .header("host", "fuzz")
        .header("x-amz-target", format!("DynamoDB_20120810.{op}"))
        .header("content-type", ct)
        .body(Bytes::copy_from_slice(body))
        .unwrap();
    let answer = rt.block_on(endpoint.answer(req));
    let status = answer.status().as_u16();
    assert!(
        matches!(status, 200 | 400 | 404),
        "{op}: status {status}: {:?}",
        String::from_utf8_lossy(answer.body())
    );
    let crc: u32 = answer.headers()["x-amz-crc32"].to_str().unwrap().parse().unwrap();
    assert_eq!(crc, crc32fast::hash(answer.body()));
    if status == 404 {
        return;
    }
    let v: serde_json::Value = serde_json::from_slice(answer.body()).expect("answer is JSON");
    if status == 400 {
        assert!(v["__type"].as_str().is_some_and(|t| t.contains('#')), "{v}");
    }
});
