//! SST block, point index and index decoding on arbitrary bytes: never panics, and the block iterator
//! survives any sequence of seeks and steps (both directions) without panicking or hanging.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use strata_lsm::sst::block::{Block, BlockIter};
use strata_lsm::sst::table::decode_index;

fuzz_target!(|data: &[u8]| {
    // The first byte picks a seek target length; the rest is the block.
    let (t, body) = match data.split_first() {
        Some((n, rest)) => {
            let n = (*n as usize).min(rest.len()).min(8);
            (&rest[..n], &rest[n..])
        }
        None => return,
    };
    if let Ok(b) = Block::new(Arc::new(body.to_vec())) {
        if let Ok(entries) = b.entries() {
            for w in entries.windows(2) {
                assert!(w[0].0 < w[1].0);
            }
        }
        let mut k = Vec::new();
        let _ = b.seek(t, &mut k);
        let _ = b.restart_before(t);
        let _ = b.get(t);
        // The point index built from the same (damaged) bytes never panics either.
        if let Some(pi) = strata_lsm::sst::point::PointIndex::build(&b) {
            let _ = pi.get(&b, t);
        }
        let _ = decode_index(&b);
        // The seek target's bytes also drive an operation sequence.
        let mut it = BlockIter::new(b);
        for (i, op) in t.iter().chain(body.iter().take(32)).enumerate() {
            let r = match op % 6 {
                0 => it.seek_to_first(),
                1 => it.seek_to_last(),
                2 => it.seek(&t[..i.min(t.len())]),
                3 => it.seek_for_prev(&t[..i.min(t.len())]),
                4 => it.next(),
                _ => it.prev(),
            };
            let _ = (r, it.key(), it.value());
        }
    }
});
