//! What the crash tests share (`crash_maintenance.rs` kills a real process, `power_loss.rs`
//! simulates a power loss): the batches the writer writes (a function of round and batch,
//! with each test's own [`Workload`] shape) and the model comparison after a crash.

use std::collections::BTreeMap;

/// The model of the engine's contents.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// splitmix64: the batch contents are a function of (round, batch, slot).
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Applies `(key, Some(value))` puts and `(key, None)` deletes to `model`, in order.
pub fn apply_ops(model: &mut Model, ops: Vec<(Vec<u8>, Option<Vec<u8>>)>) {
    for (k, v) in ops {
        match v {
            Some(v) => model.insert(k, v),
            None => model.remove(&k),
        };
    }
}

/// Up to 10 keys on which `got` and `model` differ (for a failure message); empty when equal.
pub fn model_diff(model: &Model, got: &Model) -> Vec<String> {
    model
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(v))
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .chain(
            got.keys()
                .filter(|k| !model.contains_key(*k))
                .map(|k| String::from_utf8_lossy(k).into_owned()),
        )
        .take(10)
        .collect()
}

/// The shape of a crash test's batches: every batch puts its marker (`marker(round, batch)`),
/// `1..=max_slots` of `shared` keys (`k` and `key_digits` digits) with values of 1 to `repeats`
/// parts, and deletes one of them in a third of the batches.
pub struct Workload {
    pub shared: u64,
    pub max_slots: u64,
    pub key_digits: usize,
    pub repeats: u64,
    pub marker: fn(u64, u64) -> Vec<u8>,
}

impl Workload {
    /// The operations of batch `batch` of round `round`: `(key, Some(value))` puts,
    /// `(key, None)` deletes, in order.
    pub fn batch_ops(&self, round: u64, batch: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let h = mix((round << 40) | batch);
        let key = |x: u64| format!("k{x:0w$}", w = self.key_digits).into_bytes();
        let mut ops = vec![(
            (self.marker)(round, batch),
            Some(format!("b{batch}").into_bytes()),
        )];
        for slot in 0..1 + h % self.max_slots {
            let x = mix(h ^ slot) % self.shared;
            let v = format!("v{round}-{batch}-{slot}-").repeat(1 + (x % self.repeats) as usize);
            ops.push((key(x), Some(v.into_bytes())));
        }
        if h.is_multiple_of(3) {
            ops.push((key(mix(h ^ 0xdead) % self.shared), None));
        }
        ops
    }
}
