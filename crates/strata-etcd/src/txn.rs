//! A [`WriteBatch`] as one etcd transaction: the batch reduced to the last op per key (etcd
//! refuses a key twice in one transaction), its conditions as compares, checked against the
//! server's limits before anything is sent.

use std::collections::HashMap;

use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp, TxnOpResponse, TxnResponse};
use strata_lsm::{BatchLimits, Condition, Error, Result, WriteBatch};

/// Protobuf overhead counted per op, compare or condition read (tags, lengths, fields).
pub(crate) const PER_OP_OVERHEAD: usize = 24;
/// Fixed protobuf and raft overhead of one request.
const FIXED_OVERHEAD: usize = 256;

/// A batch ready to send: distinct keys, namespaced.
#[derive(Debug, Clone)]
pub(crate) struct PreparedTxn {
    /// `(etcd key, Some(value) | None for delete)`, one per key, the batch's last op.
    pub ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// The conditions with namespaced keys, in the batch's order.
    pub conditions: Vec<Condition>,
    /// The conditions as the caller gave them (for error messages).
    pub original: Vec<Condition>,
}

/// The limits of the server, as the engine knows them.
pub(crate) fn limits(max_txn_ops: usize, max_request_bytes: usize, ns_len: usize) -> BatchLimits {
    BatchLimits {
        max_ops: max_txn_ops,
        max_bytes: max_request_bytes.saturating_sub(FIXED_OVERHEAD),
        per_op_bytes: ns_len + PER_OP_OVERHEAD,
    }
}

/// Reduces, namespaces and checks `batch`.
pub(crate) fn prepare(batch: WriteBatch, ns: &[u8], limits: &BatchLimits) -> Result<PreparedTxn> {
    let with_ns = |k: &[u8]| {
        let mut v = Vec::with_capacity(ns.len() + k.len());
        v.extend_from_slice(ns);
        v.extend_from_slice(k);
        v
    };
    // The last op per key wins (the batch's semantics); etcd wants each key once.
    let mut last: HashMap<&[u8], usize> = HashMap::with_capacity(batch.op_count());
    for (i, (k, _)) in batch.iter().enumerate() {
        last.insert(k, i);
    }
    let mut keep: Vec<usize> = last.into_values().collect();
    keep.sort_unstable();
    let distinct = keep.len();
    let mut bytes = 0usize;
    let mut ops = Vec::with_capacity(distinct);
    for (k, v) in keep.into_iter().filter_map(|i| batch.get(i)) {
        bytes += k.len() + v.map_or(0, <[u8]>::len);
        ops.push((with_ns(k), v.map(<[u8]>::to_vec)));
    }
    for c in &batch.conditions {
        // A compare carries the key (and the value for Equals); the failure branch reads the
        // key back to say which condition failed.
        bytes += 2 * c.key().len();
        if let Condition::Equals(_, Some(v)) = c {
            bytes += v.len();
        }
    }
    let n_cond = batch.conditions.len();
    if distinct > limits.max_ops || n_cond > limits.max_ops {
        return Err(Error::TooLarge(format!(
            "a batch of {distinct} distinct keys and {n_cond} conditions is more than etcd \
             applies in one transaction (--max-txn-ops {}); an atomic batch is never split",
            limits.max_ops
        )));
    }
    // Each op and each condition (compare + read-back) carries the per-op overhead.
    if !limits.admits(distinct + 2 * n_cond, bytes) {
        let need = bytes + (distinct + 2 * n_cond) * limits.per_op_bytes;
        return Err(Error::TooLarge(format!(
            "a batch of about {need} bytes is more than etcd accepts in one request \
             (--max-request-bytes allows about {} for the batch); an atomic batch is never split",
            limits.max_bytes
        )));
    }
    let conditions = batch
        .conditions
        .iter()
        .map(|c| match c {
            Condition::Absent(k) => Condition::Absent(with_ns(k)),
            Condition::Present(k) => Condition::Present(with_ns(k)),
            Condition::Equals(k, v) => Condition::Equals(with_ns(k), v.clone()),
        })
        .collect();
    Ok(PreparedTxn {
        ops,
        conditions,
        original: batch.conditions,
    })
}

impl PreparedTxn {
    /// The etcd transaction: compares, the ops on success, a read of every condition's key
    /// on failure.
    pub fn to_txn(&self) -> Txn {
        let compares: Vec<Compare> = self
            .conditions
            .iter()
            .map(|c| match c {
                Condition::Absent(k) | Condition::Equals(k, None) => {
                    Compare::version(k.clone(), CompareOp::Equal, 0)
                }
                Condition::Present(k) => Compare::version(k.clone(), CompareOp::Greater, 0),
                // etcd fails a value compare on an absent key, as Equals(k, Some(v)) must.
                Condition::Equals(k, Some(v)) => {
                    Compare::value(k.clone(), CompareOp::Equal, v.clone())
                }
            })
            .collect();
        let ops: Vec<TxnOp> = self
            .ops
            .iter()
            .map(|(k, v)| match v {
                Some(v) => TxnOp::put(k.clone(), v.clone(), None),
                None => TxnOp::delete(k.clone(), None),
            })
            .collect();
        // The builder wants `when`, then `and_then`, then `or_else` (it panics otherwise).
        if compares.is_empty() {
            return Txn::new().and_then(ops);
        }
        let reads: Vec<TxnOp> = self
            .conditions
            .iter()
            .map(|c| TxnOp::get(c.key().to_vec(), None::<GetOptions>))
            .collect();
        Txn::new().when(compares).and_then(ops).or_else(reads)
    }

    /// The batch's only op when it has one op and no condition.
    pub fn single_op(&self) -> Option<(&[u8], Option<&[u8]>)> {
        match (self.ops.as_slice(), self.conditions.is_empty()) {
            ([(k, v)], true) => Some((k, v.as_deref())),
            _ => None,
        }
    }

    /// True when applying the batch makes one of its own conditions false, so that it cannot
    /// apply a second time (unless another client restores that key in between): such a batch
    /// may be resent after an unknown outcome.
    pub fn self_fencing(&self) -> bool {
        self.conditions.iter().any(|c| {
            let after = self
                .ops
                .iter()
                .find(|(k, _)| k.as_slice() == c.key())
                .map(|(_, v)| v.as_deref());
            match after {
                // Not written by the batch: the condition stays as it was.
                None => false,
                Some(after) => !c.holds(after),
            }
        })
    }

    /// Which condition failed, from the failure branch's reads.
    pub fn failed_condition(&self, resp: &TxnResponse) -> Error {
        let reads = resp.op_responses();
        for (index, c) in self.conditions.iter().enumerate() {
            let current = match reads.get(index) {
                Some(TxnOpResponse::Get(g)) => g.kvs().first().map(|kv| kv.value().to_vec()),
                _ => continue,
            };
            if !c.holds(current.as_deref()) {
                return Error::ConditionFailed {
                    index,
                    reason: format!("{:?}", self.original[index]),
                };
            }
        }
        // The compares failed but the reads (same revision) show every condition holding:
        // cannot happen with a correct server; say what etcd said.
        Error::ConditionFailed {
            index: 0,
            reason: "etcd reported a failed compare".into(),
        }
    }

    /// True when the failure branch's reads show every key holding what the batch writes.
    pub fn looks_applied(&self, resp: &TxnResponse) -> bool {
        // The failure branch reads condition keys only; that is what we can tell.
        let reads = resp.op_responses();
        self.conditions.iter().enumerate().all(|(i, c)| {
            let current = match reads.get(i) {
                Some(TxnOpResponse::Get(g)) => g.kvs().first().map(|kv| kv.value().to_vec()),
                _ => return false,
            };
            match self.ops.iter().find(|(k, _)| k.as_slice() == c.key()) {
                Some((_, v)) => current.as_deref() == v.as_deref(),
                None => true,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim() -> BatchLimits {
        limits(128, 1536 * 1024, 3)
    }

    #[test]
    fn keeps_the_last_op_per_key() {
        let mut b = WriteBatch::new();
        b.put("a", "1")
            .put("b", "1")
            .delete("a")
            .put("b", "2")
            .put("c", "3");
        let p = prepare(b, b"ns:", &lim()).unwrap();
        let mut ops = p.ops.clone();
        ops.sort();
        assert_eq!(
            ops,
            vec![
                (b"ns:a".to_vec(), None),
                (b"ns:b".to_vec(), Some(b"2".to_vec())),
                (b"ns:c".to_vec(), Some(b"3".to_vec())),
            ]
        );
    }

    #[test]
    fn refuses_batches_beyond_the_limits() {
        let mut b = WriteBatch::new();
        for i in 0..129u32 {
            b.put(i.to_be_bytes(), "v");
        }
        let e = prepare(b.clone(), b"ns:", &lim()).unwrap_err();
        assert!(matches!(e, Error::TooLarge(_)), "{e}");
        assert!(e.to_string().contains("--max-txn-ops 128"), "{e}");
        // The same key 129 times is one op: fine.
        let mut same = WriteBatch::new();
        for _ in 0..129 {
            same.put("k", "v");
        }
        assert_eq!(prepare(same, b"ns:", &lim()).unwrap().ops.len(), 1);
        let mut big = WriteBatch::new();
        big.put("k", vec![0u8; 1536 * 1024]);
        let e = prepare(big, b"ns:", &lim()).unwrap_err();
        assert!(e.to_string().contains("--max-request-bytes"), "{e}");
        let mut conds = WriteBatch::new();
        for i in 0..129u32 {
            conds.require(Condition::Present(i.to_be_bytes().to_vec()));
        }
        assert!(matches!(
            prepare(conds, b"ns:", &lim()),
            Err(Error::TooLarge(_))
        ));
    }

    #[test]
    fn self_fencing_batches() {
        let fenced = |b: WriteBatch| prepare(b, b"n:", &lim()).unwrap().self_fencing();
        let mut b = WriteBatch::new();
        b.require(Condition::Absent(b"k".to_vec())).put("k", "v");
        assert!(fenced(b));
        let mut b = WriteBatch::new();
        b.require(Condition::Equals(b"c".to_vec(), Some(b"1".to_vec())))
            .put("c", "2");
        assert!(fenced(b));
        let mut b = WriteBatch::new();
        b.require(Condition::Equals(b"c".to_vec(), Some(b"1".to_vec())))
            .put("c", "1");
        assert!(!fenced(b));
        let mut b = WriteBatch::new();
        b.require(Condition::Present(b"x".to_vec())).put("k", "v");
        assert!(!fenced(b));
        let mut b = WriteBatch::new();
        b.require(Condition::Present(b"x".to_vec())).delete("x");
        assert!(fenced(b));
        let mut b = WriteBatch::new();
        b.put("k", "v");
        assert!(!fenced(b));
    }
}
