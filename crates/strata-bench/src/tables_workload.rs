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

/// The partition key of partition `p`: `format!("user{p:06}")`, written digit by digit. Every
/// engine's put, get and query builds one (the same function for all of them); through
/// `format!` it took ~790 instructions and two allocations per get (session 15, callgrind),
/// now one allocation of the exact length.
pub fn user(p: usize) -> String {
    // Digits from the right, then the zero padding to 6 digits (`usize` has at most 20).
    let mut digits = [b'0'; 20];
    let mut i = digits.len();
    let mut x = p;
    loop {
        i -= 1;
        digits[i] = b'0' + (x % 10) as u8;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    let start = i.min(digits.len() - 6);
    let mut s = String::with_capacity(4 + digits.len() - start);
    s.push_str("user");
    s.extend(digits[start..].iter().map(|&d| char::from(d)));
    s
}

/// The body of item `s` of partition `p`.
pub fn body(p: usize, s: usize) -> String {
    let mut b = format!("body of {p}/{s} ");
    while b.len() < BODY_LEN {
        b.push((b'a' + (b.len() % 26) as u8) as char);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::user;

    /// `user` is `format!("user{p:06}")`: below, at and above 6 digits, and at the ends.
    #[test]
    fn user_is_the_formatted_key() {
        let edges = [
            0,
            9,
            10,
            99_999,
            100_000,
            999_999,
            1_000_000,
            12_345_678,
            usize::MAX,
        ];
        let all = (0..2_000_000)
            .step_by(997)
            .chain((0..1000).map(|i| i * 1_000_003));
        for p in edges.into_iter().chain(all) {
            assert_eq!(user(p), format!("user{p:06}"), "{p}");
        }
    }
}
