//! Decodes arbitrary bytes with the centidb codec (single- and multi-tuple APIs). Whatever
//! decodes must re-encode to the very same bytes (the decoder accepts only canonical keys)
//! and decode equal again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_key::codec::centidb::CentidbCodec;
use strata_key::TupleCodec;

fuzz_target!(|data: &[u8]| {
    let c = CentidbCodec::new();
    if let Ok(tuples) = c.decode_list(data) {
        let again = c.encode_list(&tuples).expect("a decoded key re-encodes");
        assert_eq!(again, data, "decode_list is not canonical");
        assert_eq!(c.decode_list(&again).expect("re-decodes"), tuples);
    }
    if let Ok(t) = c.decode(data) {
        let again = c.encode(&t).expect("a decoded tuple re-encodes");
        assert_eq!(again, data, "decode is not canonical");
        assert_eq!(c.decode(&again).expect("re-decodes"), t);
    }
});
