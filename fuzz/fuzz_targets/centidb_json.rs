//! JSON record values are untrusted: reading never panics; what reads writes back in
//! Python's form and reads again to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_centidb::codec::{pyjson::JsonEncoder, Encoder};

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = JsonEncoder.unpack(data) {
        if let Ok(b) = JsonEncoder.pack(&v) {
            assert_eq!(JsonEncoder.unpack(&b).unwrap(), v);
        }
    }
});
