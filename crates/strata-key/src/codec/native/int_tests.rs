//! Tests of the integer codec (`int.rs`).

use super::*;

/// The table lookup finds the class that a linear search finds, for every bit length.
#[test]
fn class_by_bits_is_exact() {
    for (starts, side) in [(&POS_STARTS, &SIDES[0]), (&NEG_STARTS, &SIDES[1])] {
        for l in 1..=63u32 {
            let lo = 1u64 << (l - 1);
            let hi = (1u64 << l) - 1;
            for m in [lo, lo + 1, hi - 1, hi] {
                let want = class_of(m as u128, starts);
                let (next, c) = side.by_bits[l as usize];
                assert_eq!(u128::from(next), starts[c as usize + 1]);
                let got = c as usize + usize::from(m >= next);
                assert_eq!(got, want, "m = {m}");
            }
            // The class can change at most once within one bit length.
            assert!(class_of(hi as u128, starts) - class_of(lo as u128, starts) <= 1);
        }
    }
}

/// `div254` is the division by 254 below 2^57: around every multiple of 254 near the
/// powers of two and the top of the range, and at pseudo-random values.
#[test]
fn div254_divides_below_2_pow_57() {
    let mut ns: Vec<u64> = Vec::new();
    for s in 0..=57u32 {
        let t = (1u64 << s) / 254 * 254;
        for d in 0..600u64 {
            ns.push((t + d).saturating_sub(300).min((1 << 57) - 1));
        }
    }
    let top = ((1u64 << 57) - 1) / 254 * 254;
    ns.extend(top - 254..=(1 << 57) - 1);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..200_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ns.push(state >> 7);
    }
    for n in ns {
        assert_eq!(div254(n), n / 254, "{n}");
    }
}

/// The branch-free 64-bit encoder writes the bytes of the general `u128` path, at every
/// class and tag boundary (± 1) and at pseudo-random values of every bit length.
#[test]
fn i64_path_matches_the_general_path() {
    let mut xs: Vec<i64> = vec![0, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1];
    for starts in [&POS_STARTS, &NEG_STARTS] {
        for &start in &starts[..10] {
            for step in [1u128, 254, 254 * 256] {
                for k in 0..40u128 {
                    let m = start + k * step;
                    for d in [-1i128, 0, 1] {
                        let m = m as i128 + d;
                        if let Ok(v) = i64::try_from(m) {
                            xs.push(v);
                            xs.push(!v);
                        }
                    }
                }
            }
        }
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..20_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let v = (state >> (state % 64)) as i64;
        xs.push(v);
        xs.push(!v);
    }
    for x in xs {
        let (mut a, mut b) = (vec![0xaa], vec![0xaa]);
        encode_i64(x, &mut a);
        encode_int_wide(x.into(), &mut b);
        assert_eq!(a, b, "{x}");
        if let Ok(u) = u64::try_from(x) {
            let mut c = vec![0xaa];
            encode_u64(u, &mut c);
            assert_eq!(c, b, "{x}");
        }
    }
    let mut a = Vec::new();
    encode_u64(u64::MAX, &mut a);
    let mut b = Vec::new();
    encode_int_wide(u64::MAX.into(), &mut b);
    assert_eq!(a, b);
}

/// `int_fast_at_raw` (the top-level integer read through `RAW_FAST_TAGS`) agrees with
/// `int_fast_at` on the tag and mask taken from the byte's top bit: every first byte, after
/// payloads of every byte value in every lane, pseudo-random payloads and payloads cut to
/// every length (`None` from both where fewer than 8 bytes follow).
#[test]
fn int_fast_at_raw_is_int_fast_at() {
    let mut payloads: Vec<[u8; 8]> = Vec::new();
    for lane in 0..8 {
        for v in 0..=255u8 {
            let mut w = [0x41u8; 8];
            w[lane] = v;
            payloads.push(w);
        }
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        payloads.push(x.to_be_bytes());
    }
    payloads.extend([[0u8; 8], [0xff; 8], [1; 8], [0xfe; 8]]);
    let mut fast = 0;
    for raw in 0..=255u8 {
        let mask = ((raw as i8) >> 7) as u8;
        for w in &payloads {
            let mut key = vec![raw];
            key.extend_from_slice(w);
            for len in 1..=key.len() {
                let r = Reader::new(&key[..len]);
                let want = r.int_fast_at(0, raw ^ mask, mask);
                assert_eq!(r.int_fast_at_raw(0, raw), want, "{:02x?}", &key[..len]);
                fast += usize::from(want.is_some());
            }
        }
    }
    assert!(fast > 100_000, "{fast}");
}
