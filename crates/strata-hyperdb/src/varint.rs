//! Protocol-buffer varints (LEB128, at most 10 bytes, no overflow past 64 bits).

/// Appends `v` as a varint.
pub fn encode(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The encoding of `v` (as [`encode`] writes it) in a buffer: `(bytes, length)`.
#[inline]
pub fn encode_array(mut v: u64) -> ([u8; 10], usize) {
    let mut out = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        out[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    (out, n + 1)
}

/// Number of bytes [`encode`] writes for `v`.
pub fn encoded_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Why a varint did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The input ended inside the varint.
    Truncated,
    /// More than 10 bytes, or a value above `u64::MAX`.
    Overflow,
}

impl VarintError {
    /// A short description.
    pub fn as_str(self) -> &'static str {
        match self {
            VarintError::Truncated => "truncated varint",
            VarintError::Overflow => "varint longer than 64 bits",
        }
    }
}

/// Decodes a varint at `*pos`, advancing `*pos` past it.
#[inline]
pub fn decode(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    match buf.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            Ok(u64::from(b))
        }
        _ => decode_long(buf, pos),
    }
}

/// [`decode`] for varints of two bytes or more (and errors).
fn decode_long(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = buf.get(*pos) else {
            return Err(VarintError::Truncated);
        };
        *pos += 1;
        if shift == 63 && b > 1 {
            return Err(VarintError::Overflow);
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err(VarintError::Overflow);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_bounds() {
        for v in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX] {
            let mut out = Vec::new();
            encode(v, &mut out);
            assert_eq!(out.len(), encoded_len(v));
            let (a, n) = encode_array(v);
            assert_eq!(&a[..n], &out[..]);
            let mut pos = 0;
            assert_eq!(decode(&out, &mut pos), Ok(v));
            assert_eq!(pos, out.len());
        }
        let mut pos = 0;
        assert_eq!(decode(&[0x80, 0x80], &mut pos), Err(VarintError::Truncated));
        let mut pos = 0;
        assert_eq!(decode(&[0xff; 11], &mut pos), Err(VarintError::Overflow));
        let mut pos = 0;
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert_eq!(decode(&over, &mut pos), Err(VarintError::Overflow));
    }
}
