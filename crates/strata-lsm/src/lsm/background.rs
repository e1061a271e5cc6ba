//! The background thread: flushes frozen memtables and runs compactions until none is needed.
//! It starts the sync thread (the fsyncs writers ask for while they fill the memtables) and
//! stops it when it returns.
//!
//! The sync thread asks the scheduler for a short time slice ([`request_short_slice`]): it
//! wakes when the device completes a WAL fsync, and a writer waits for it to record that. On a
//! machine whose CPUs are busy (the writer inserting, this thread compacting), a woken thread
//! with the default slice waits until the running one has used its own (1.4 ms on 2 CPUs), and
//! at 10^6-10^7 bulk loads that wait was about half of each group commit's fsync wait (session
//! 19, `docs/bench/tables.md`). With a shorter slice than the running thread's, the woken
//! thread preempts it (Linux 6.12+: EEVDF's custom slices; older kernels ignore the request).

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
            .spawn_scoped(sc, || {
                request_short_slice();
                inner.sync_ahead()
            });
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

/// The slice the sync thread asks for: the shortest Linux accepts (100 µs). It runs briefly
/// after each wake-up (record the fsync, wake the writers), so it rarely uses even that.
const SYNC_SLICE_NS: u64 = 100_000;

/// `struct sched_attr` of `sched_setattr(2)`, its first version (48 bytes).
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Asks the scheduler to give the calling thread a slice of [`SYNC_SLICE_NS`], keeping its
/// policy and nice value; for the normal and batch policies only (a real-time or idle thread
/// is left alone). Best effort: returns whether the kernel took the request (a kernel before
/// 6.12 takes it and ignores the slice).
#[cfg(target_os = "linux")]
pub(super) fn request_short_slice() -> bool {
    const SCHED_OTHER: u32 = 0;
    const SCHED_BATCH: u32 = 3;
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: `attr` is a live, writable `sched_attr` of `size` bytes (the layout above is
    // the kernel's SCHED_ATTR_SIZE_VER0); pid 0 is the calling thread; flags must be 0. The
    // kernel writes at most `size` bytes into it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut SchedAttr,
            size,
            0,
        )
    };
    if r != 0 || !(attr.policy == SCHED_OTHER || attr.policy == SCHED_BATCH) {
        return false;
    }
    attr.size = size;
    attr.flags = 0;
    attr.runtime = SYNC_SLICE_NS;
    // SAFETY: `attr` is a valid `sched_attr` of `size` bytes, read by the kernel only; pid 0
    // is the calling thread; flags must be 0. Same policy and nice: only the slice changes.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    r == 0
}

/// Elsewhere: nothing to ask for.
#[cfg(not(target_os = "linux"))]
pub(super) fn request_short_slice() -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The `se.slice` the kernel reports for the calling thread (`None` on kernels that do
    /// not report one).
    fn own_slice() -> Option<u64> {
        let s = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
        let line = s.lines().find(|l| l.starts_with("se.slice"))?;
        line.split(':').nth(1)?.trim().parse().ok()
    }

    /// The request is taken, and on a kernel with custom slices (one that reports
    /// `se.slice`) the thread's slice is then the short one; the nice value is kept.
    #[test]
    fn the_sync_thread_gets_a_short_slice_and_keeps_its_nice() {
        std::thread::spawn(|| {
            // SAFETY: `nice` only changes the calling thread's nice value (Linux: per
            // thread); lowering priority needs no privilege.
            let before = unsafe { libc::nice(3) };
            assert!(before >= 0, "nice failed");
            let had = own_slice();
            assert!(request_short_slice(), "sched_setattr refused");
            if let Some(old) = had {
                assert_ne!(old, SYNC_SLICE_NS, "the default slice was already short");
                assert_eq!(own_slice(), Some(SYNC_SLICE_NS));
            }
            // SAFETY: `getpriority` reads the calling thread's nice value (who 0 = self).
            let now = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
            assert_eq!(now, before, "the nice value changed");
        })
        .join()
        .unwrap();
    }
}
