//! Fuzzes the native decoder and the serde bridge with arbitrary bytes: no panic, and whatever
//! decodes re-encodes to the same bytes (canonical encoding).
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_key::codec::native::{decode_with_orders, prefix_len, NativeCodec};
use strata_key::TupleCodec;

fuzz_target!(|data: &[u8]| {
    if let Ok(items) = decode_with_orders(data) {
        let orders = items.iter().map(|(_, o)| *o).collect();
        let tuple: Vec<_> = items.into_iter().map(|(v, _)| v).collect();
        let again = NativeCodec::with_orders(orders).encode(&tuple).expect("re-encode");
        assert_eq!(again, data, "non-canonical encoding accepted");
        assert_eq!(prefix_len(data, tuple.len()), Some(data.len()));
    }
    let _ = strata_key::from_key::<serde::de::IgnoredAny>(data);
    let _ = strata_key::from_key::<(u64, String, Option<i32>, Vec<u8>)>(data);
});
