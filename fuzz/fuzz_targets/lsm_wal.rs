//! The WAL reader (versions 1, 2 and 3) on arbitrary bytes: never panics; what it accepts
//! survives a re-encoding; the check/repair scan of a v2 log and the v3 unsynced-hole test
//! never panic either; a v3 WAL read whole is never shorter than a read of its prefix up to
//! a hole the reader accepted.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use strata_lsm::record::{scan_log_framed, Framing};
use strata_lsm::wal::{
    decode_batch, decode_record, encode_batch, read_wal, unsynced_hole, WAL_MAGIC, WAL_MAGIC_V2,
    WAL_MAGIC_V3,
};

fuzz_target!(|data: &[u8]| {
    let _ = decode_batch(data);
    if let Ok((seq, ops)) = decode_batch(data) {
        let mut again = Vec::new();
        encode_batch(&mut again, seq, &ops);
        assert_eq!(decode_batch(&again).ok(), Some((seq, ops)));
    }
    let _ = decode_record(data, 3);
    for magic in [WAL_MAGIC, WAL_MAGIC_V2, WAL_MAGIC_V3] {
        let mut file = magic.to_vec();
        file.extend_from_slice(data);
        for last in [true, false] {
            let _ = read_wal(&file, Path::new("fuzz.log"), last);
        }
        for at in [8u64, 9, 20, file.len() as u64 / 2] {
            let _ = unsynced_hole(&file, at);
        }
        // A v3 hole accepted by the newest-WAL read ends the replay exactly there.
        if let Ok(r) = read_wal(&file, Path::new("fuzz.log"), true) {
            if let Some(at) = r.torn_at {
                let at = at as usize;
                if at >= 8 && at <= file.len() {
                    let prefix = read_wal(&file[..at], Path::new("fuzz.log"), true)
                        .expect("the prefix before an accepted tail reads");
                    assert_eq!(prefix.batches, r.batches);
                }
            }
        }
    }
    let _ = scan_log_framed(data, 0, Framing::V2);
    let _ = read_wal(data, Path::new("fuzz.log"), true);
});
