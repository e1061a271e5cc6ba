//! Fuzzes the three namespace decoders with arbitrary bytes: no panic; whatever decodes
//! re-encodes to the same bytes (one encoding per key), starts with its namespace prefix and lies
//! in its namespace's prefix range. The first byte picks the length-prefixed depth (0..=4); the
//! self-delimiting schemes read the whole input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_key::namespace::{AsciiHex, Escaped, LengthPrefixed, Namespacing};
use strata_key::range::contains;

fn check(scheme: &dyn Namespacing, data: &[u8]) {
    let Ok(decoded) = scheme.decode(data) else {
        return;
    };
    let path = decoded.namespace_refs();
    let again = scheme.encode(&path, &decoded.key).expect("re-encode");
    assert_eq!(
        again,
        data,
        "{}: non-canonical encoding accepted",
        scheme.name()
    );
    let prefix = scheme.prefix(&path).expect("prefix");
    assert!(data.starts_with(&prefix), "{}: prefix", scheme.name());
    let (start, end) = scheme.prefix_range(&path).expect("range");
    assert!(
        contains(
            start.as_ref().map(Vec::as_slice),
            end.as_ref().map(Vec::as_slice),
            data
        ),
        "{}: outside its namespace range",
        scheme.name()
    );
}

fuzz_target!(|data: &[u8]| {
    if let Some((&first, rest)) = data.split_first() {
        check(&LengthPrefixed::new(usize::from(first % 5)), rest);
    }
    check(&AsciiHex, data);
    check(&Escaped, data);
});
