//! Crash points: named places in flush and compaction between two steps whose order matters
//! for durability (see "Durability protocol" in `docs/format/lsm.md`). A test runs a writer
//! process with the environment variable [`ENV`] set to `NAME` or `NAME@N`; the N-th time
//! (default: the first) that process reaches the point `NAME`, it kills itself with SIGKILL,
//! exactly as `kill -9` would there. The windows are far too short for a kill from outside to
//! hit them (`tests/crash_maintenance.rs`).
//!
//! Only with the feature `crash-points` (which the crate's own tests enable); without it
//! [`reached`] is an empty inline function and release builds carry no check at all.

/// The environment variable naming the crash point (`NAME` or `NAME@N`).
pub const ENV: &str = "STRATA_LSM_CRASH_AT";

/// Flush: the new L0 SSTs and the directory are synced; the manifest does not list them yet.
pub const FLUSH_SYNCED: &str = "flush.ssts-synced";
/// Flush: the manifest edit (files added, new log number) is synced; the older WALs, which
/// the edit made obsolete, are not deleted yet.
pub const FLUSH_LOGGED: &str = "flush.manifest-logged";
/// Compaction (and intra-L0 merge): the outputs and the directory are synced; the manifest
/// still lists the inputs only.
pub const COMPACT_SYNCED: &str = "compact.outputs-synced";
/// Compaction: the manifest edit (inputs removed, outputs added) is synced; the inputs are
/// not marked obsolete (deleted) yet.
pub const COMPACT_LOGGED: &str = "compact.manifest-logged";
/// Every crash point.
pub const ALL: [&str; 4] = [FLUSH_SYNCED, FLUSH_LOGGED, COMPACT_SYNCED, COMPACT_LOGGED];

/// Marks the crash point `name`: kills the process there when [`ENV`] asks for it.
#[inline(always)]
pub(crate) fn reached(name: &'static str) {
    #[cfg(feature = "crash-points")]
    armed::reached(name);
    #[cfg(not(feature = "crash-points"))]
    let _ = name;
}

#[cfg(feature = "crash-points")]
mod armed {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// The point asked for and at which hit, read once from the environment.
    static WANTED: OnceLock<Option<(String, u64)>> = OnceLock::new();
    /// Hits of the wanted point so far.
    static HITS: AtomicU64 = AtomicU64::new(0);

    fn wanted() -> Option<&'static (String, u64)> {
        WANTED
            .get_or_init(|| {
                let v = std::env::var(super::ENV).ok()?;
                match v.split_once('@') {
                    Some((name, n)) => Some((name.to_string(), n.parse().ok()?)),
                    None => Some((v, 1)),
                }
            })
            .as_ref()
    }

    pub(super) fn reached(name: &'static str) {
        let Some((want, nth)) = wanted() else {
            return;
        };
        if want != name || HITS.fetch_add(1, Ordering::SeqCst) + 1 != *nth {
            return;
        }
        // SAFETY: `getpid` has no preconditions; `kill` with our own pid and SIGKILL ends the
        // process at once (no destructor, no buffered output written), which is the crash the
        // tests want to simulate; no memory of ours is touched. Exercised by
        // `tests/crash_maintenance.rs`, which checks the child died of SIGKILL.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        // SIGKILL cannot be caught: not reached. Never go on past the point.
        loop {
            std::thread::park();
        }
    }
}
