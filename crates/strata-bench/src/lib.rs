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

/// xorshift64 (shifts 13, 7, 17): the deterministic generator of the `tables`, `tables_prof`,
/// `centidb` and `etcd` benchmarks (the same seed gives the same workload in every round).
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A clap value parser for a count of at least 1 (`--rounds 0` is an error saying so).
pub fn count_at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A clap value parser for a count that may group its digits with `_` (`1_000_000`).
pub fn count_with_underscores(s: &str) -> Result<usize, String> {
    s.replace('_', "").parse().map_err(|e| format!("{e}"))
}

/// `n` threads, thread `i` running `f(i)`; the sum of their results (the 4-segment scans).
pub fn parallel_sum(n: u32, f: impl Fn(u32) -> usize + Sync) -> usize {
    let f = &f;
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..n).map(|i| sc.spawn(move || f(i))).collect();
        hs.into_iter().map(|h| h.join().expect("thread")).sum()
    })
}

pub mod tables_workload;
