//! Decodes arbitrary bytes with the FoundationDB tuple codec. Whatever decodes must re-encode
//! and decode equal (bytes may differ: FoundationDB's decoders, and ours, accept non-minimal
//! integer forms).
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_key::codec::fdb::FdbCodec;
use strata_key::TupleCodec;

fuzz_target!(|data: &[u8]| {
    let c = FdbCodec::new();
    if let Ok(t) = c.decode(data) {
        let again = c.encode(&t).expect("a decoded tuple re-encodes");
        assert_eq!(c.decode(&again).expect("re-decodes"), t);
        // The canonical form is a fixed point.
        assert_eq!(c.encode(&c.decode(&again).unwrap()).unwrap(), again);
    }
});
