//! Decodes arbitrary bytes with the SKV codec. The first byte picks the number of fields
//! (1–4), the next ones each field's type, direction and null order; the rest is the key.
//! Whatever decodes must re-encode to the very same bytes and decode equal again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_key::codec::skv::{SkvCodec, SkvField, SkvSchema, SkvType};
use strata_key::TupleCodec;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = 1 + (n % 4) as usize;
    if rest.len() < n {
        return;
    }
    let (spec, key) = rest.split_at(n);
    let fields = spec
        .iter()
        .map(|&b| SkvField {
            ty: SkvType::ALL[(b & 0x3f) as usize % SkvType::ALL.len()],
            descending: b & 0x40 != 0,
            nulls_last: b & 0x80 != 0,
        })
        .collect();
    let c = SkvCodec::new(SkvSchema::new(fields));
    if let Ok(t) = c.decode(key) {
        let again = c.encode(&t).expect("a decoded tuple re-encodes");
        assert_eq!(again, key, "decode is not canonical");
        assert_eq!(c.decode(&again).expect("re-decodes"), t);
    }
});
