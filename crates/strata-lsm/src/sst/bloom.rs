//! Bloom filter of an SST: `bits[m/8] | k u8`, probes by double hashing of a 64-bit hash.

/// Hash of a key for the filter (FNV-1a 64 finished with the splitmix64 mixer: every input
/// bit affects every output bit, which double hashing needs).
pub fn key_hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Builds a filter from key hashes with `bits_per_key` bits per key.
pub fn build(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
    let k = ((bits_per_key as f64) * 0.69).round().clamp(1.0, 30.0) as u8;
    let bits = (hashes.len() * bits_per_key).max(64);
    let bytes = bits.div_ceil(8);
    let bits = bytes * 8;
    let mut out = vec![0u8; bytes + 1];
    for &h in hashes {
        let (mut a, b) = (h, h.rotate_right(32) | 1);
        for _ in 0..k {
            let bit = (a % bits as u64) as usize;
            out[bit / 8] |= 1 << (bit % 8);
            a = a.wrapping_add(b);
        }
    }
    out[bytes] = k;
    out
}

/// False when the key is certainly absent. A malformed filter answers "maybe".
pub fn may_contain(filter: &[u8], hash: u64) -> bool {
    if filter.len() < 2 {
        return true;
    }
    let k = filter[filter.len() - 1];
    let bits = ((filter.len() - 1) * 8) as u64;
    let (mut a, b) = (hash, hash.rotate_right(32) | 1);
    for _ in 0..k {
        let bit = (a % bits) as usize;
        if filter[bit / 8] & (1 << (bit % 8)) == 0 {
            return false;
        }
        a = a.wrapping_add(b);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let keys: Vec<u64> = (0..10_000u32).map(|i| key_hash(&i.to_be_bytes())).collect();
        let f = build(&keys, 10);
        assert!(keys.iter().all(|&h| may_contain(&f, h)));
        let fp = (10_000..110_000u32)
            .filter(|i| may_contain(&f, key_hash(&i.to_be_bytes())))
            .count();
        assert!(fp < 2_000, "false positive rate {fp}/100000");
    }
}
