//! The `note` lines' measurements: device counters, latency spreads, Strata's write
//! amplification, peak RSS, on-disk size.

use std::path::Path;

/// Bytes of the files under `p`, recursively; 0 where unreadable.
pub fn dir_size(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return 0;
    };
    rd.filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The device counters of a block device's `stat` file (the kernel's
/// Documentation/ABI/stat.rst order): write requests (field 5), sectors written (field 7)
/// and cache flushes (field 16); `None` if the file is missing or has fewer fields.
pub fn disk_stat(path: &Path) -> Option<[u64; 3]> {
    let s = std::fs::read_to_string(path).ok()?;
    let f: Vec<u64> = s
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    Some([*f.get(4)?, *f.get(6)?, *f.get(15)?])
}

/// The device's work per fillsync write, from the `stat` counters before and after the phase.
pub fn disk_note(before: &[u64; 3], after: &[u64; 3], writes: u64) -> String {
    let per = |i: usize| after[i].saturating_sub(before[i]) as f64 / writes.max(1) as f64;
    format!(
        "fillsync device per write: {:.2} write requests, {:.1} sectors, {:.2} flushes (whole device)",
        per(0),
        per(1),
        per(2)
    )
}

/// The spread of the fillsync writes' latencies (µs, in write order) in one `note` line: the
/// first write, quantiles, the slowest, and how much of the phase the writes over 1 ms took.
/// With 100 writes (10^5 before session 15) a few slow ones decided the row.
pub fn latency_note(lat: &[f64]) -> String {
    let mut s = lat.to_vec();
    s.sort_by(f64::total_cmp);
    let q = |f: f64| s.get(((s.len() as f64 * f) as usize).min(s.len().saturating_sub(1)));
    let total: f64 = lat.iter().sum();
    let slow: Vec<f64> = lat.iter().copied().filter(|&l| l > 1000.0).collect();
    // A fold from +0.0: an empty `sum()` of floats is -0.0, printed "-0%".
    let slow_sum: f64 = slow.iter().fold(0.0, |a, b| a + b);
    format!(
        "fillsync µs per write: first {:.0}, p50 {:.0}, p90 {:.0}, p99 {:.0}, max {:.0}; {} of {} over 1 ms ({:.0}% of the phase)",
        lat.first().copied().unwrap_or(0.0),
        q(0.5).copied().unwrap_or(0.0),
        q(0.9).copied().unwrap_or(0.0),
        q(0.99).copied().unwrap_or(0.0),
        s.last().copied().unwrap_or(0.0),
        slow.len(),
        lat.len(),
        if total > 0.0 { 100.0 * slow_sum / total } else { 0.0 },
    )
}

/// Strata's flush and compaction bytes in one `note` line: write amplification
/// `(flushed + compacted) / flushed` (SST bytes only, not the WAL).
pub fn written_note(what: &str, w: &strata_lsm::Written) -> String {
    format!(
        "{what}: write-amp {:.2} (flushed {} MB, compacted {} MB in {} merges, moved {} MB in {} moves)",
        w.amplification(),
        w.flushed_bytes / 1_000_000,
        w.compacted_bytes / 1_000_000,
        w.compactions,
        w.moved_bytes / 1_000_000,
        w.moves
    )
}

/// Peak resident set size of this process (`VmHWM`), in bytes; 0 where unknown.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
