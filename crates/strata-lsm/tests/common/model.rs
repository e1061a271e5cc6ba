//! What the crash tests share (`crash_maintenance.rs` kills a real process, `power_loss.rs`
//! simulates a power loss): the batch-content hash and the model comparison after a crash.
//! Each test keeps its own workload (key and value shapes tuned to what it provokes).

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
