//! Pickles are untrusted: reading never panics, runs no code and stays bounded; a value
//! read back writes and reads again to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_centidb::codec::pickle;

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = pickle::loads(data) {
        if let Ok(b) = pickle::dumps(&v) {
            assert_eq!(pickle::loads(&b).unwrap(), v);
        }
    }
});
