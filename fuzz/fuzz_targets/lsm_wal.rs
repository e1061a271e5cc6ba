//! The WAL reader (versions 1 and 2) on arbitrary bytes: never panics; what it accepts
//! survives a re-encoding; the check/repair scan of a v2 log never panics either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use strata_lsm::record::{scan_log_framed, Framing};
use strata_lsm::wal::{decode_batch, encode_batch, read_wal, WAL_MAGIC, WAL_MAGIC_V2};

fuzz_target!(|data: &[u8]| {
    let _ = decode_batch(data);
    if let Ok((seq, ops)) = decode_batch(data) {
        let mut again = Vec::new();
        encode_batch(&mut again, seq, &ops);
        assert_eq!(decode_batch(&again).ok(), Some((seq, ops)));
    }
    for magic in [WAL_MAGIC, WAL_MAGIC_V2] {
        let mut file = magic.to_vec();
        file.extend_from_slice(data);
        for last in [true, false] {
            let _ = read_wal(&file, Path::new("fuzz.log"), last);
        }
    }
    let _ = scan_log_framed(data, 0, Framing::V2);
    let _ = read_wal(data, Path::new("fuzz.log"), true);
});
