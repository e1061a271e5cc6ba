//! The workload of the `tables` benchmark and the `tables_prof` harness: one table of
//! `PARTITIONS × PER_PARTITION` items keyed by `(user, ts)`, with a 64-byte body.

/// Length of every item's body.
pub const BODY_LEN: usize = 64;

/// One row as the typed API reads and writes it (the columns SQLite returns per row).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// Partition key.
    pub user: String,
    /// Sort key.
    pub ts: i64,
    /// 64 bytes of text.
    pub body: String,
    /// The item's number.
    pub n: i64,
}

/// The partition key of partition `p`.
pub fn user(p: usize) -> String {
    format!("user{p:06}")
}

/// The body of item `s` of partition `p`.
pub fn body(p: usize, s: usize) -> String {
    let mut b = format!("body of {p}/{s} ");
    while b.len() < BODY_LEN {
        b.push((b'a' + (b.len() % 26) as u8) as char);
    }
    b
}
