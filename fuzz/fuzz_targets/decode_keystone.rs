//! Fuzzes both KeystoneDB key decoders with arbitrary bytes: no panic; whatever decodes
//! re-encodes to the same bytes, and the stripe depends on the partition key only.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_key::keystone::{stripe, Key};

fuzz_target!(|data: &[u8]| {
    if let Ok(key) = Key::decode(data) {
        assert_eq!(key.encode().expect("re-encode"), data, "length-prefixed");
        assert_eq!(key.stripe(), stripe(&key.pk));
    }
    if let Ok(key) = Key::decode_ordered(data) {
        assert_eq!(key.encode_ordered().expect("re-encode"), data, "ordered");
    }
});
