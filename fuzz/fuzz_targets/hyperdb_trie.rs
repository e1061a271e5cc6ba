#![no_main]
//! Trie decoding of untrusted bytes: never panics; decode(encode(t)) == t.

use libfuzzer_sys::fuzz_target;
use strata_hyperdb::trie::Trie;

fuzz_target!(|data: &[u8]| {
    let (len, bytes) = match data.split_first() {
        Some((&l, rest)) => (usize::from(l) * 8 + 1, rest),
        None => return,
    };
    if let Ok(t) = Trie::decode(bytes, len, "fuzz") {
        let enc = t.to_bytes();
        assert!(enc.len() <= bytes.len());
        assert_eq!(
            Trie::decode(&enc, len, "fuzz").expect("canonical trie decodes"),
            t
        );
    }
});
