//! The manifest reader on arbitrary bytes: never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use strata_lsm::manifest::{decode_edits, encode_edits, read_manifest, MANIFEST_MAGIC};

fuzz_target!(|data: &[u8]| {
    if let Ok(edits) = decode_edits(data) {
        assert_eq!(decode_edits(&encode_edits(&edits)).ok(), Some(edits));
    }
    let mut file = MANIFEST_MAGIC.to_vec();
    file.extend_from_slice(data);
    let _ = read_manifest(&file, Path::new("MANIFEST-000001"));
});
