//! Stored table items are untrusted bytes: decoding never panics, and whatever decodes
//! re-encodes to the same bytes (the encoding is canonical).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(item) = strata::item_codec::decode_item(data) {
        // Whatever decodes is within the nesting limit, so it encodes.
        let again = strata::item_codec::encode_item(&item).expect("a decoded item encodes");
        assert_eq!(again, data);
    }
});
