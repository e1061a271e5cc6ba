//! Shared by the etcd tests: the cluster to use, and a fresh namespace per test.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use strata_etcd::{EtcdEngine, EtcdOptions};

/// The variable naming the test cluster's endpoints (set by `.ci/run`, or by hand after
/// `scripts/etcd-cluster.sh start`).
pub const ENV: &str = "STRATA_ETCD_ENDPOINTS";

/// The cluster's endpoints, or `None` after printing why the test is skipped.
pub fn endpoints(test: &str) -> Option<Vec<String>> {
    match std::env::var(ENV) {
        Ok(v) if !v.trim().is_empty() => Some(v.split(',').map(str::to_owned).collect()),
        _ => {
            eprintln!(
                "SKIPPED {test}: no etcd cluster ({ENV} unset; run scripts/etcd-cluster.sh start \
                 and export {ENV}=$(scripts/etcd-cluster.sh endpoints))"
            );
            None
        }
    }
}

/// A namespace no other test (or earlier run) uses.
pub fn unique_prefix(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "test/{test}/{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Options for a fresh namespace on the test cluster.
pub fn options(test: &str) -> Option<EtcdOptions> {
    Some(EtcdOptions::new(endpoints(test)?, unique_prefix(test)))
}

/// An engine on a fresh namespace, deleted again when the guard drops.
pub struct Fresh(pub EtcdEngine);

impl Drop for Fresh {
    fn drop(&mut self) {
        let _ = self.0.delete_all();
    }
}

impl std::ops::Deref for Fresh {
    type Target = EtcdEngine;
    fn deref(&self) -> &EtcdEngine {
        &self.0
    }
}

pub fn fresh(test: &str) -> Option<Fresh> {
    fresh_with(test, |_| {})
}

pub fn fresh_with(test: &str, f: impl FnOnce(&mut EtcdOptions)) -> Option<Fresh> {
    let mut o = options(test)?;
    f(&mut o);
    Some(Fresh(
        EtcdEngine::connect(o).expect("connect to the test cluster"),
    ))
}
