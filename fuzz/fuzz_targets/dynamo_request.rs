//! Request bodies are untrusted: any bytes given to any operation get an answer or a
//! DynamoDB error, never a panic or a hang; internal errors never happen.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use strata_dynamo::{Dynamo, ErrorKind};

fn dynamo() -> &'static Dynamo {
    static D: OnceLock<Dynamo> = OnceLock::new();
    D.get_or_init(|| {
        let d = Dynamo::memory().unwrap();
        d.call(
            "CreateTable",
            br#"{"TableName":"fuzz","BillingMode":"PAY_PER_REQUEST",
                "KeySchema":[{"AttributeName":"p","KeyType":"HASH"},{"AttributeName":"c","KeyType":"RANGE"}],
                "AttributeDefinitions":[{"AttributeName":"p","AttributeType":"S"},{"AttributeName":"c","AttributeType":"N"}]}"#,
        )
        .unwrap();
        d
    })
}

const OPS: &[&str] = &[
    "PutItem", "GetItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchWriteItem",
    "BatchGetItem", "TransactWriteItems", "TransactGetItems",
];

fuzz_target!(|data: &[u8]| {
    let Some((&op, body)) = data.split_first() else { return };
    let op = OPS[op as usize % OPS.len()];
    if let Err(e) = dynamo().call(op, body) {
        assert_ne!(e.kind, ErrorKind::InternalServerError, "{op}: {e}");
    }
});
