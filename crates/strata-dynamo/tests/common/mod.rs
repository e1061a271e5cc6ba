//! Helpers: calls through the JSON front door, as the HTTP server makes them.

#![allow(dead_code)]

use serde_json::{json, Value as Json};
use strata_dynamo::{ApiError, Dynamo};

pub fn call(d: &Dynamo, op: &str, body: Json) -> Result<Json, ApiError> {
    let out = d.call(op, body.to_string().as_bytes())?;
    if out.is_empty() {
        return Ok(Json::Null);
    }
    Ok(serde_json::from_slice(&out).expect("responses are JSON"))
}

pub fn ok(d: &Dynamo, op: &str, body: Json) -> Json {
    call(d, op, body).unwrap_or_else(|e| panic!("{op} failed: {e}"))
}

/// The error of a call that must fail; its `__type` suffix and message.
pub fn err(d: &Dynamo, op: &str, body: Json) -> ApiError {
    match call(d, op, body) {
        Ok(v) => panic!("{op} should fail, got {v}"),
        Err(e) => e,
    }
}

pub fn create(d: &Dynamo, name: &str, hash: (&str, &str), range: Option<(&str, &str)>) {
    let mut ks = vec![json!({"AttributeName": hash.0, "KeyType": "HASH"})];
    let mut defs = vec![json!({"AttributeName": hash.0, "AttributeType": hash.1})];
    if let Some((n, t)) = range {
        ks.push(json!({"AttributeName": n, "KeyType": "RANGE"}));
        defs.push(json!({"AttributeName": n, "AttributeType": t}));
    }
    ok(
        d,
        "CreateTable",
        json!({"TableName": name, "KeySchema": ks, "AttributeDefinitions": defs,
               "BillingMode": "PAY_PER_REQUEST"}),
    );
}

pub fn s(v: &str) -> Json {
    json!({ "S": v })
}

pub fn n(v: impl ToString) -> Json {
    json!({ "N": v.to_string() })
}
