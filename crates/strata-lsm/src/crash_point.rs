//! Crash points: named places in flush, compaction, the manifest's roll-over and the end of a
//! read-write open, between two steps whose order matters for durability (see "Durability protocol" in `docs/format/lsm.md`). A test runs a writer
//! process with the environment variable [`ENV`] set to `NAME` or `NAME@N`; the N-th time
//! (default: the first) that process reaches the point `NAME`, it kills itself with SIGKILL,
//! exactly as `kill -9` would there. The windows are far too short for a kill from outside to
//! hit them (`tests/crash_maintenance.rs`).
//!
//! A test may instead stop the engine at a point inside its own process: `set_hook` installs
//! a function that every crash point calls with its name, on the thread that reached it
//! (`tests/power_loss.rs` makes every later file-system change fail there, drops the engine
//! and simulates a power loss with [`crate::FaultFs::crash`]).
//!
//! Only with the feature `crash-points` (which the crate's own tests enable); without it
//! `reached` is an empty inline function and release builds carry no check at all.

/// The environment variable naming the crash point (`NAME` or `NAME@N`).
pub const ENV: &str = "STRATA_LSM_CRASH_AT";

/// Flush: the new L0 SSTs and the directory are synced; the manifest does not list them yet.
pub const FLUSH_SYNCED: &str = "flush.ssts-synced";
/// Flush: the manifest edit (files added, new log number) is synced; the older WALs, which
/// the edit made obsolete, are not deleted yet.
pub const FLUSH_LOGGED: &str = "flush.manifest-logged";
/// Compaction: one job of a round (a merge, intra-L0 merge or trivial move of one stripe) has
/// written its outputs, not yet synced; the manifest lists neither them nor the outputs of the
/// round's earlier jobs, and every input is still live. Reached after each job of a round.
pub const COMPACT_JOB_WRITTEN: &str = "compact.job-written";
/// Compaction (and intra-L0 merge): every output of the round's jobs and the directory are
/// synced; the manifest still lists the inputs only.
pub const COMPACT_SYNCED: &str = "compact.outputs-synced";
/// Compaction: the round's manifest record (every job's inputs removed, outputs added) is
/// synced; the inputs are not marked obsolete (deleted) yet.
pub const COMPACT_LOGGED: &str = "compact.manifest-logged";
/// A new manifest (a snapshot of the state) is written and synced; `CURRENT` still names the
/// old one. Reached when a read-write open starts its manifest and when the live manifest is
/// rolled over (it grew past [`crate::LsmOptions::manifest_roll_bytes`]).
pub const MANIFEST_WRITTEN: &str = "manifest.written";
/// `CURRENT.tmp` naming the new manifest is written and synced; not yet renamed to `CURRENT`.
pub const MANIFEST_CURRENT_TMP: &str = "manifest.current-tmp-synced";
/// Manifest roll-over: `CURRENT` names the new manifest (renamed, directory synced); the old
/// manifest is not deleted yet.
pub const MANIFEST_ROLLED: &str = "manifest.rolled";
/// Read-write open: what the WALs held is written to new L0 SSTs and synced; no manifest lists
/// them yet, and the WALs are still the only record of that data.
pub const OPEN_L0_SYNCED: &str = "open.l0-synced";
/// Read-write open: the new manifest (listing those L0 SSTs, naming the new WAL) is `CURRENT`;
/// the older WALs, manifests and unlisted SSTs are not deleted yet.
pub const OPEN_MANIFEST_CURRENT: &str = "open.manifest-current";
/// Every crash point.
pub const ALL: [&str; 10] = [
    FLUSH_SYNCED,
    FLUSH_LOGGED,
    COMPACT_JOB_WRITTEN,
    COMPACT_SYNCED,
    COMPACT_LOGGED,
    MANIFEST_WRITTEN,
    MANIFEST_CURRENT_TMP,
    MANIFEST_ROLLED,
    OPEN_L0_SYNCED,
    OPEN_MANIFEST_CURRENT,
];

/// A function called at every crash point reached, with the point's name (see [`set_hook`]).
#[cfg(feature = "crash-points")]
pub type Hook = std::sync::Arc<dyn Fn(&'static str) + Send + Sync>;

/// Installs (`Some`) or removes (`None`) the in-process hook: from now on every crash point
/// reached in this process calls it, on the thread that reached it, before the point goes
/// on (or kills the process, when [`ENV`] asks for it). The hook is process-wide: tests that
/// use it must not run side by side in one process.
#[cfg(feature = "crash-points")]
pub fn set_hook(hook: Option<Hook>) {
    *armed::HOOK.lock().unwrap_or_else(|p| p.into_inner()) = hook;
}

/// Marks the crash point `name`: calls the hook of [`set_hook`] (feature `crash-points`),
/// then kills the process there when [`ENV`] asks for it.
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
    use std::sync::{Mutex, OnceLock};

    /// The in-process hook (see [`super::set_hook`]).
    pub(super) static HOOK: Mutex<Option<super::Hook>> = Mutex::new(None);

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
        // Called without the lock held: the hook may take its time (or install another).
        let hook = HOOK.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(hook) = hook {
            hook(name);
        }
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
