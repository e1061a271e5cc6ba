//! Profiling harness: embedded Query of 100 items (the `dynamodb` benchmark's Query row) on a
//! database in a temporary directory, timed per call; run under `perf record`.
//!
//! ```text
//! cargo build --release -p strata-dynamo --example query_prof
//! target/release/examples/query_prof [CALLS]          # default 20000
//! perf record -g target/release/examples/query_prof 20000
//! ```

use std::time::Instant;

use strata_dynamo::Dynamo;

const PAYLOAD: &str = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqr";

/// Profiling harness: embedded Query of 100 items (the `dynamodb` benchmark's Query row),
/// timed per call; run under `perf record`.
#[derive(clap::Parser)]
#[command(name = "query_prof")]
struct Args {
    /// Query calls to time.
    #[arg(value_name = "CALLS", default_value_t = 20_000)]
    calls: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { calls } = clap::Parser::parse();
    let dir = tempfile::tempdir()?;
    let d = Dynamo::new(strata::Db::open(dir.path())?);
    d.call(
        "CreateTable",
        br#"{"TableName":"bench","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}],"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"N"}],"BillingMode":"PAY_PER_REQUEST"}"#,
    )?;
    for p in 0..8 {
        for chunk in 0..4 {
            let puts: Vec<String> = (chunk * 25..chunk * 25 + 25)
                .map(|i| {
                    format!(
                        r#"{{"PutRequest":{{"Item":{{"pk":{{"S":"q-{p}"}},"sk":{{"N":"{i}"}},"payload":{{"S":"{PAYLOAD}"}}}}}}}}"#
                    )
                })
                .collect();
            let body = format!(r#"{{"RequestItems":{{"bench":[{}]}}}}"#, puts.join(","));
            d.call("BatchWriteItem", body.as_bytes())?;
        }
    }
    let bodies: Vec<String> = (0..8)
        .map(|p| {
            format!(
                r#"{{"TableName":"bench","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{{":p":{{"S":"q-{p}"}}}}}}"#
            )
        })
        .collect();
    let mut bytes = 0usize;
    for b in bodies.iter().take(8) {
        bytes += d.call("Query", b.as_bytes())?.len();
    }
    let start = Instant::now();
    for i in 0..calls {
        bytes += d.call("Query", bodies[(i % 8) as usize].as_bytes())?.len();
    }
    let el = start.elapsed();
    println!(
        "Query (100 items): {calls} calls, {:.1} µs/call ({} answer bytes)",
        el.as_secs_f64() * 1e6 / calls as f64,
        bytes / (calls as usize + 8)
    );
    d.db().close()?;
    Ok(())
}
