//! `strata serve` with clients that hang up before reading their answer: the server's writes
//! into those sockets fail (ECONNRESET, then EPIPE), and it must go on serving the next client.
//! SIGPIPE stays ignored in `strata` (see `src/output.rs`), so an EPIPE is an error of one
//! connection, never a signal that kills the server.

mod serve_util;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use serde_json::{json, Value};
use serve_util::Serve;

/// Items in the table; each about 380 KB, so one BatchGetItem answer is about 15 MB: far more
/// than the socket buffers hold, so the server is still writing when the client is gone.
const ITEMS: usize = 40;

fn call(url: &str, op: &str, body: &Value) -> Result<Value, String> {
    let r = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build()
        .post(url)
        .set("X-Amz-Target", &format!("DynamoDB_20120810.{op}"))
        .set("Content-Type", "application/x-amz-json-1.0")
        .send_string(&body.to_string());
    match r {
        Ok(resp) => {
            // `into_string` stops at 10 MB; a BatchGetItem answer here is about 15 MB.
            let mut text = String::new();
            resp.into_reader()
                .read_to_string(&mut text)
                .map_err(|e| e.to_string())?;
            serde_json::from_str(&text).map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

fn batch_get_body() -> Value {
    let keys: Vec<Value> = (0..ITEMS)
        .map(|i| json!({"pk": {"S": format!("k{i}")}}))
        .collect();
    json!({"RequestItems": {"big": {"Keys": keys}}})
}

/// One raw HTTP/1.1 request for `op` (no signature: the server accepts any).
fn raw_request(op: &str, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Amz-Target: DynamoDB_20120810.{op}\r\n\
         Content-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// How a client hangs up.
#[derive(Clone, Copy, Debug)]
enum HangUp {
    /// Sends the request and closes at once (FIN; the answer then meets a closed socket).
    BeforeTheAnswer,
    /// Reads the first bytes of the answer, then closes with the rest unread (RST).
    AfterItsFirstBytes,
    /// Sends three pipelined requests, reads a little, closes with the rest unread.
    Pipelined,
    /// Closes its sending side only after the request, then closes the socket.
    HalfClosed,
}

fn hang_up(addr: std::net::SocketAddr, how: HangUp) {
    let mut s = TcpStream::connect(addr).unwrap();
    let req = raw_request("BatchGetItem", &batch_get_body());
    // Writes of the request may fail only if the server is gone: the caller reports that.
    let _ = s.set_write_timeout(Some(Duration::from_secs(30)));
    match how {
        HangUp::BeforeTheAnswer => {
            let _ = s.write_all(&req);
        }
        HangUp::AfterItsFirstBytes => {
            let _ = s.write_all(&req);
            // (A server that died gives 0 bytes or an error: the caller reports it.)
            let mut b = [0u8; 64];
            let _ = s.read(&mut b);
        }
        HangUp::Pipelined => {
            for _ in 0..3 {
                let _ = s.write_all(&req);
            }
            let mut b = [0u8; 4096];
            let _ = s.read(&mut b);
        }
        HangUp::HalfClosed => {
            let _ = s.write_all(&req);
            let _ = s.shutdown(Shutdown::Write);
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    drop(s);
}

#[test]
fn clients_hanging_up_before_reading_the_answer_do_not_stop_the_server() {
    let mut serve = Serve::start(&["--memory"], &[]);
    let url = serve.url.clone();
    call(
        &url,
        "CreateTable",
        &json!({"TableName": "big",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST"}),
    )
    .unwrap();
    let body = "x".repeat(380 * 1024);
    for i in 0..ITEMS {
        call(
            &url,
            "PutItem",
            &json!({"TableName": "big", "Item": {"pk": {"S": format!("k{i}")}, "b": {"S": body}}}),
        )
        .unwrap();
    }
    // A whole answer, read by a client that stays.
    let whole = call(&url, "BatchGetItem", &batch_get_body()).unwrap();
    assert_eq!(
        whole["Responses"]["big"].as_array().map(Vec::len),
        Some(ITEMS)
    );
    for round in 0..4 {
        for how in [
            HangUp::BeforeTheAnswer,
            HangUp::AfterItsFirstBytes,
            HangUp::Pipelined,
            HangUp::HalfClosed,
        ] {
            hang_up(serve.addr, how);
            // Give the server time to write into the dead socket.
            std::thread::sleep(Duration::from_millis(100));
            assert!(
                serve.child.try_wait().unwrap().is_none(),
                "round {round}, {how:?}: strata serve exited: {:?}",
                serve.child.try_wait()
            );
            // The next client is served, whole.
            let got = call(
                &url,
                "GetItem",
                &json!({"TableName": "big", "Key": {"pk": {"S": "k7"}}}),
            )
            .unwrap_or_else(|e| panic!("round {round}, after {how:?}: {e}"));
            assert_eq!(
                got["Item"]["b"]["S"].as_str().map(str::len),
                Some(body.len())
            );
        }
    }
    let whole = call(&url, "BatchGetItem", &batch_get_body()).unwrap();
    assert_eq!(
        whole["Responses"]["big"].as_array().map(Vec::len),
        Some(ITEMS)
    );
    let status = serve.terminate();
    assert!(status.success(), "{status:?}");
}
