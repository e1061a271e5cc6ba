//! centidb's `pack_int` / `read_int` for non-negative integers (SQLite4 varints), as used in
//! collection prefixes, packer prefixes and batch headers.

/// Appends the varint of `v`.
pub fn write(v: u64, out: &mut Vec<u8>) {
    if v <= 240 {
        out.push(v as u8);
    } else if v <= 2287 {
        let w = v - 240;
        out.extend_from_slice(&[(241 + (w >> 8)) as u8, (w & 0xff) as u8]);
    } else if v <= 67823 {
        let w = v - 2288;
        out.extend_from_slice(&[0xf9, (w >> 8) as u8, (w & 0xff) as u8]);
    } else {
        let n = (8 - v.leading_zeros() as usize / 8).max(3);
        out.push((0xfa + (n - 3)) as u8);
        out.extend_from_slice(&v.to_be_bytes()[8 - n..]);
    }
}

/// The varint of `v` on its own (centidb's `pack_int`).
pub fn pack(v: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    write(v, &mut out);
    out
}

/// Reads the varint at `pos`; returns the value and the position after it. Only the
/// shortest form of each value is accepted.
pub fn read(bytes: &[u8], pos: usize) -> Result<(u64, usize), String> {
    let b0 = *bytes
        .get(pos)
        .ok_or_else(|| format!("missing varint at byte {pos}"))?;
    let need = match b0 {
        0..=240 => return Ok((u64::from(b0), pos + 1)),
        241..=248 => 2,
        249 => 3,
        _ => usize::from(b0 - 250) + 4,
    };
    let p = bytes
        .get(pos..pos + need)
        .ok_or_else(|| format!("truncated varint at byte {pos}: needs {need} bytes"))?;
    let (v, floor) = match b0 {
        241..=248 => (240 + 256 * u64::from(b0 - 241) + u64::from(p[1]), 240),
        249 => (2288 + 256 * u64::from(p[1]) + u64::from(p[2]), 2287),
        _ => {
            let v = p[1..].iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
            let floor = if need == 4 {
                67823
            } else {
                (1u64 << (8 * (need - 2))) - 1
            };
            (v, floor)
        }
    };
    if v <= floor {
        return Err(format!("non-canonical varint at byte {pos}"));
    }
    Ok((v, pos + need))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_at_the_boundaries() {
        for v in [
            0u64,
            9,
            240,
            241,
            2287,
            2288,
            67823,
            67824,
            (1 << 24) - 1,
            1 << 24,
            u64::from(u32::MAX),
            1 << 56,
            u64::MAX,
        ] {
            let b = pack(v);
            assert_eq!(read(&b, 0), Ok((v, b.len())), "{v}");
        }
        assert_eq!(pack(10), [0x0a]);
        assert_eq!(pack(1099511627777), hex::decode("fd010000000001").unwrap());
    }

    #[test]
    fn rejects_bad_input() {
        assert!(read(&[], 0).is_err());
        assert!(read(&[0xf1], 0).is_err());
        assert!(read(&[0xf1, 0x00], 0).is_err()); // 240 in two bytes
        assert!(read(&[0xfa, 0x00, 0xff, 0xff], 0).is_err());
        assert!(read(&[0xff, 1, 2], 0).is_err());
    }
}
