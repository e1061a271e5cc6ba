//! The background thread: flushes frozen memtables and runs compactions until none is needed.
//! It starts the sync thread (the fsyncs writers ask for while they fill the memtables) and
//! stops it when it returns.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::inner::Inner;
use crate::sync::{lock, wait_timeout};

/// The thread's body; returns when the engine shuts down.
pub(super) fn run(inner: Arc<Inner>) {
    std::thread::scope(|sc| {
        let syncing = std::thread::Builder::new()
            .name("strata-lsm-sync".into())
            .spawn_scoped(sc, || inner.sync_ahead());
        // Without the thread, writers run their fsyncs themselves (`wait_durable`).
        if syncing.is_err() {
            inner.stop_sync_thread();
        }
        maintain(&inner);
        inner.stop_sync_thread();
    });
}

/// Flushes and compacts until the engine shuts down.
fn maintain(inner: &Inner) {
    loop {
        {
            let mut w = lock(&inner.work);
            while !w.pending && !w.shutdown {
                w = wait_timeout(&inner.work_cv, w, Duration::from_millis(200));
                if inner.has_frozen.load(Ordering::Acquire) || inner.compact_needed() {
                    break;
                }
            }
            if w.shutdown {
                return;
            }
            w.pending = false;
        }
        if inner.poisoned.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        // Errors poison the engine inside these calls; writers see them.
        let _ = inner.flush_frozen();
        loop {
            if lock(&inner.work).shutdown || inner.poisoned.load(Ordering::SeqCst) {
                break;
            }
            if inner.has_frozen.load(Ordering::Acquire) {
                let _ = inner.flush_frozen();
            }
            match inner.compact_one() {
                Ok(true) => continue,
                _ => break,
            }
        }
        inner.stall_cv.notify_all();
    }
}
