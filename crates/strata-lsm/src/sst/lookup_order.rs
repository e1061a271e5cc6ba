//! The order of a point read's two in-memory steps in a file where the key is expected
//! ([`super::table::Table::get_ref_expected`]): the filter first, or the filter's line asked
//! for and the file index searched while it arrives.
//!
//! Overlapping the two hides the filter's cache miss behind the index search, which pays when
//! the filter lets the key through (the search was needed anyway) and costs the search when
//! it rules the key out. Which happens more depends on the workload (reads of keys that exist,
//! or "does it exist?" checks before inserts), so each file learns it: a saturating counter,
//! moved by a sample of its lookups, picks the order.

use std::sync::atomic::{AtomicU8, Ordering};

/// Counter value at and above which the filter goes first (the filter ruled out at least
/// about half the sampled lookups lately).
const FILTER_FIRST_AT: u8 = 4;
/// The counter's top (it starts at 0: overlap, for the deepest level where keys usually are).
const TOP: u8 = 7;

/// Recent outcomes of a file's filter on its expected-key lookups.
///
/// One byte, declared right after the filter in the [`super::table::Table`] (whose fields
/// every such lookup reads, so it usually shares their cache line), not on a line of its own:
/// a line of its own cost ~4% of the point reads at 10^6 (paired, fastest of 20 runs;
/// `docs/bench/lsm.md`, "Session 23"). Lookups store to it only for a sample and only when the
/// value changes, so a steady workload never writes the line the readers share.
#[derive(Debug, Default)]
pub(crate) struct LookupOrder(AtomicU8);

impl LookupOrder {
    /// Whether the filter should be checked before the index is searched.
    #[inline(always)]
    pub(crate) fn filter_first(&self) -> bool {
        self.0.load(Ordering::Relaxed) >= FILTER_FIRST_AT
    }

    /// Records that the filter ruled the key with `hash` out (`excluded`) or let it through:
    /// for one lookup in eight, picked by hash bits the filter's line does not use (3 of the
    /// low 32, which only seed the bit probes). The store is skipped when the counter is
    /// already at that end, so that a steady workload writes nothing.
    #[inline(always)]
    pub(crate) fn record(&self, hash: u64, excluded: bool) {
        if (hash >> 29) & 7 != 0 {
            return;
        }
        let c = self.0.load(Ordering::Relaxed);
        let next = if excluded {
            (c + 1).min(TOP)
        } else {
            c.saturating_sub(1)
        };
        if next != c {
            // A lost update between two readers only delays the switch by one sample.
            self.0.store(next, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hashes that are sampled (bits 29..32 zero), spread over the rest.
    fn sampled(i: u64) -> u64 {
        (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) & !(7 << 29)) | 1
    }

    #[test]
    fn starts_overlapped_and_follows_the_filter() {
        let o = LookupOrder::default();
        assert!(!o.filter_first());
        // Unsampled hashes change nothing.
        for i in 0..100 {
            o.record(sampled(i) | (1 << 29), true);
        }
        assert!(!o.filter_first());
        for i in 0..4 {
            o.record(sampled(i), true);
        }
        assert!(o.filter_first());
        // Saturates at the top: as many passes as the top's distance bring it back.
        for i in 0..100 {
            o.record(sampled(i), true);
        }
        for i in 0..3 {
            o.record(sampled(i), false);
        }
        assert!(o.filter_first());
        o.record(sampled(9), false);
        assert!(!o.filter_first());
    }

    /// Mixed outcomes: the order follows the majority.
    #[test]
    fn follows_the_majority() {
        for (excluded_per_4, want) in [(1, false), (3, true)] {
            let o = LookupOrder::default();
            for i in 0..400u64 {
                o.record(sampled(i), i % 4 < excluded_per_4);
            }
            assert_eq!(o.filter_first(), want, "{excluded_per_4} of 4 excluded");
        }
    }
}
