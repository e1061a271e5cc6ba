//! A metadata row is untrusted: it decodes or fails cleanly, and what decodes re-encodes to
//! the same key and value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_centidb::meta;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else { return };
    let n = (n as usize).min(rest.len());
    let (key, value) = rest.split_at(n);
    let mut k = vec![0x09];
    k.extend_from_slice(key);
    if let Ok(row) = meta::parse_row(&[0x09], &k, value) {
        if let Some(kind) = meta::Kind::from_number(row.kind) {
            assert_eq!(meta::row_key(b"", kind, &row.name, &row.attr).unwrap(), k);
        }
        assert_eq!(meta::row_value(&row.value).unwrap(), value);
    }
});
