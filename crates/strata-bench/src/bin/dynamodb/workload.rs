//! The five operations measured, as DynamoDB JSON request bodies, and the data they need.

/// The benchmark table: `pk` (S, HASH) + `sk` (N, RANGE).
pub const TABLE: &str = "bench";

/// Items preloaded for GetItem and UpdateItem.
pub const PRELOAD: u64 = 10_000;
/// Partitions of 100 items preloaded for Query.
pub const QUERY_PARTITIONS: u64 = 8;
/// Items per Query answer.
pub const QUERY_ITEMS: u64 = 100;

const PAYLOAD: &str = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqr";

/// One measured operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    PutItem,
    GetItem,
    Query,
    UpdateItem,
    BatchWriteItem,
}

impl Op {
    pub const ALL: [Op; 5] = [
        Op::PutItem,
        Op::GetItem,
        Op::Query,
        Op::UpdateItem,
        Op::BatchWriteItem,
    ];

    /// The `X-Amz-Target` operation name.
    pub fn name(self) -> &'static str {
        match self {
            Op::PutItem => "PutItem",
            Op::GetItem => "GetItem",
            Op::Query => "Query",
            Op::UpdateItem => "UpdateItem",
            Op::BatchWriteItem => "BatchWriteItem",
        }
    }

    /// How the row is labelled in the table.
    pub fn label(self) -> &'static str {
        match self {
            Op::PutItem => "PutItem",
            Op::GetItem => "GetItem",
            Op::Query => "Query (100 items)",
            Op::UpdateItem => "UpdateItem + condition",
            Op::BatchWriteItem => "BatchWriteItem (25 puts)",
        }
    }

    /// The body of request number `seq` of client `client` (`run` keeps keys of separate
    /// runs apart).
    pub fn body(self, run: u32, client: usize, seq: u64) -> String {
        let spread = (client as u64)
            .wrapping_mul(7919)
            .wrapping_add(seq * 104_729)
            % PRELOAD;
        match self {
            Op::PutItem => format!(
                r#"{{"TableName":"{TABLE}","Item":{{"pk":{{"S":"put-{run}-{client}-{seq}"}},"sk":{{"N":"0"}},"n":{{"N":"{seq}"}},"payload":{{"S":"{PAYLOAD}"}}}}}}"#
            ),
            Op::GetItem => format!(
                r#"{{"TableName":"{TABLE}","Key":{{"pk":{{"S":"item-{spread}"}},"sk":{{"N":"0"}}}}}}"#
            ),
            Op::Query => format!(
                r#"{{"TableName":"{TABLE}","KeyConditionExpression":"pk = :p","ExpressionAttributeValues":{{":p":{{"S":"q-{}"}}}}}}"#,
                (client as u64 + seq) % QUERY_PARTITIONS
            ),
            Op::UpdateItem => format!(
                r#"{{"TableName":"{TABLE}","Key":{{"pk":{{"S":"item-{spread}"}},"sk":{{"N":"0"}}}},"UpdateExpression":"SET v = v + :one","ConditionExpression":"attribute_exists(pk) AND v >= :zero","ExpressionAttributeValues":{{":one":{{"N":"1"}},":zero":{{"N":"0"}}}}}}"#
            ),
            Op::BatchWriteItem => {
                let puts: Vec<String> = (0..25)
                    .map(|i| {
                        format!(
                            r#"{{"PutRequest":{{"Item":{{"pk":{{"S":"batch-{run}-{client}-{seq}"}},"sk":{{"N":"{i}"}},"payload":{{"S":"{PAYLOAD}"}}}}}}}}"#
                        )
                    })
                    .collect();
                format!(r#"{{"RequestItems":{{"{TABLE}":[{}]}}}}"#, puts.join(","))
            }
        }
    }

    /// Whether the answer says the request did all it was asked (BatchWriteItem: nothing
    /// unprocessed; Query: 100 items).
    pub fn complete(self, answer: &[u8]) -> bool {
        match self {
            Op::BatchWriteItem => {
                let v: serde_json::Value = match serde_json::from_slice(answer) {
                    Ok(v) => v,
                    Err(_) => return false,
                };
                v.get("UnprocessedItems")
                    .and_then(|u| u.as_object())
                    .map(|o| o.is_empty())
                    .unwrap_or(true)
            }
            Op::Query => {
                let v: serde_json::Value = match serde_json::from_slice(answer) {
                    Ok(v) => v,
                    Err(_) => return false,
                };
                v["Count"].as_u64() == Some(QUERY_ITEMS)
            }
            Op::GetItem => answer.windows(7).any(|w| w == b"\"Item\":"),
            _ => true,
        }
    }
}

/// CreateTable.
pub fn create_table() -> String {
    format!(
        r#"{{"TableName":"{TABLE}","KeySchema":[{{"AttributeName":"pk","KeyType":"HASH"}},{{"AttributeName":"sk","KeyType":"RANGE"}}],"AttributeDefinitions":[{{"AttributeName":"pk","AttributeType":"S"}},{{"AttributeName":"sk","AttributeType":"N"}}],"BillingMode":"PAY_PER_REQUEST"}}"#
    )
}

/// BatchWriteItem bodies that load the GetItem/UpdateItem items and the Query partitions.
pub fn preload() -> Vec<String> {
    let mut items: Vec<String> = (0..PRELOAD)
        .map(|k| {
            format!(
                r#"{{"PutRequest":{{"Item":{{"pk":{{"S":"item-{k}"}},"sk":{{"N":"0"}},"v":{{"N":"0"}},"payload":{{"S":"{PAYLOAD}"}}}}}}}}"#
            )
        })
        .collect();
    for p in 0..QUERY_PARTITIONS {
        for i in 0..QUERY_ITEMS {
            items.push(format!(
                r#"{{"PutRequest":{{"Item":{{"pk":{{"S":"q-{p}"}},"sk":{{"N":"{i}"}},"payload":{{"S":"{PAYLOAD}"}}}}}}}}"#
            ));
        }
    }
    items
        .chunks(25)
        .map(|c| format!(r#"{{"RequestItems":{{"{TABLE}":[{}]}}}}"#, c.join(",")))
        .collect()
}
