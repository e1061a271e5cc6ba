//! Thread-local spare allocations: a buffer whose owner is done with it is kept for the next
//! user on the same thread (the SST iterators' readahead buffer, a written batch's op list).

use std::cell::Cell;
use std::thread::LocalKey;

/// Keeps `v` in `slot` if it has more room than what the slot holds (the other is freed).
/// During thread teardown `v` is simply freed.
pub(crate) fn keep_larger<T>(slot: &'static LocalKey<Cell<Vec<T>>>, v: Vec<T>) {
    let _ = slot.try_with(|s| {
        let kept = s.take();
        s.set(if kept.capacity() >= v.capacity() {
            kept
        } else {
            v
        });
    });
}
