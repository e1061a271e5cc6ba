//! A physical record of a centidb collection (single or batch) is untrusted: parsing its
//! key and value and unpacking it with every packer never panics and never allocates
//! beyond the bounds; a batch header that parses re-encodes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_centidb::codec::packer_by_name;
use strata_centidb::format::{self, PhysRecord};

const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else { return };
    let n = (n as usize).min(rest.len());
    let (key, value) = rest.split_at(n);
    let mut k = vec![0x0a];
    k.extend_from_slice(key);
    let Ok(rec) = PhysRecord::parse(&[0x0a], k, value.to_vec()) else { return };
    let encs: Vec<&[u8]> = rec.members.iter().map(|m| m.enc.as_slice()).collect();
    assert_eq!(format::key_list(&[0x0a], &encs), rec.phys_key);
    let payload = if rec.is_batch() {
        let Ok(h) = format::parse_batch(&rec.value, rec.members.len(), LIMIT) else { return };
        let rebuilt = format::batch_value(&h.lengths, h.packer_idx, &rec.value[h.payload_start..]);
        assert_eq!(rebuilt, rec.value);
        (&rec.value[h.payload_start..], Some(h))
    } else {
        let Ok((_, p)) = format::parse_single(&rec.value) else { return };
        (p, None)
    };
    for name in ["plain", "zlib", "bz2", "zstd", "lz4"] {
        let p = packer_by_name(name).unwrap();
        let limit = payload.1.as_ref().map_or(LIMIT, |h| h.total());
        if let Ok(out) = p.unpack(payload.0, limit) {
            assert!(out.len() <= limit);
            if let Some(h) = &payload.1 {
                let _ = format::split_members(&out, &h.lengths);
            }
        }
    }
});
