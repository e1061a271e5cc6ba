//! The background thread: flushes frozen memtables and runs compactions until none is needed.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::inner::Inner;
use crate::sync::{lock, wait_timeout};

/// The thread's body; returns when the engine shuts down.
pub(super) fn run(inner: Arc<Inner>) {
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
