//! SST footer decoding on arbitrary bytes: never panics, and what it accepts points inside
//! the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_lsm::sst::table::{decode_footer, FOOTER};

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let file_len = u64::from_le_bytes(data[..8].try_into().unwrap_or([0; 8]));
    let f = &data[8..];
    if let Ok(ft) = decode_footer(f, file_len) {
        assert_eq!(f.len(), FOOTER);
        assert!(ft.index_off + u64::from(ft.index_len) + 4 <= file_len - FOOTER as u64);
        assert!(ft.bloom_off + u64::from(ft.bloom_len) + 4 <= file_len - FOOTER as u64);
    }
});
