//! Shared helpers of the benchmark binaries in `src/bin/` (one per area: `keys`, `lsm`,
//! `hyperdb`, `tables`). Peer crates are dependencies of this crate only, so they never enter
//! a user's build.

use std::time::{Duration, Instant};

/// Runs `f` repeatedly for at least `min` and returns the mean time per call.
pub fn time_per_call(min: Duration, mut f: impl FnMut()) -> Duration {
    // Warm up.
    f();
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed() < min {
        f();
        n += 1;
    }
    start.elapsed() / n.max(1)
}
