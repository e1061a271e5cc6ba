//! Strings (bytes and text): the prefix-free code of `docs/FORMAT.md`, "Strings".

use super::{Reader, STR_END, STR_HIGH, STR_SHIFT};
use crate::error::DecodeError;

/// A string: each byte `b < 0xfc` as `b + 2`, each byte `b ≥ 0xfc` as `fe, b − 0xfa`, then
/// the terminator `01`. The code is prefix-free (no content byte is below `02`), keeps byte
/// order, and never ends in `00` or `ff`. UTF-8 text never has a byte `≥ 0xf8`, so text costs
/// exactly `len + 2`.
#[inline]
pub(crate) fn put_escaped(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 1);
    if s.iter().all(|&b| b < 0xfc) {
        out.extend(s.iter().map(|&b| b + STR_SHIFT));
    } else {
        for &b in s {
            if b < 0xfc {
                out.push(b + STR_SHIFT);
            } else {
                out.push(STR_HIGH);
                out.push(b - 0xfa);
            }
        }
    }
    out.push(STR_END);
}

impl Reader<'_> {
    /// A string up to and including its terminator (see [`put_escaped`]).
    pub(crate) fn escaped(&mut self) -> Result<Vec<u8>, DecodeError> {
        let end = STR_END ^ self.mask;
        let rest = &self.bytes[self.pos..];
        let Some(n) = memchr::memchr(end, rest) else {
            return Err(self.err(self.bytes.len(), "string without its terminator"));
        };
        let body = &rest[..n];
        let mask = self.mask;
        // Fast path (ascending, no two-byte code, no invalid byte): one vectorizable pass.
        if mask == 0 && body.iter().all(|&b| (0x02..=0xfd).contains(&b)) {
            self.pos += n + 1;
            return Ok(body.iter().map(|&b| b - STR_SHIFT).collect());
        }
        let mut out = Vec::with_capacity(n);
        let mut i = 0;
        while i < body.len() {
            let b = body[i] ^ mask;
            match b {
                0x02..=0xfd => out.push(b - STR_SHIFT),
                STR_HIGH => {
                    let c = body.get(i + 1).map(|x| x ^ mask);
                    match c {
                        Some(c @ 0x02..=0x05) => out.push(c + 0xfa),
                        _ => {
                            return Err(self.err(self.pos + i + 1, "bad two-byte code in a string"))
                        }
                    }
                    i += 1;
                }
                other => {
                    return Err(self.err(
                        self.pos + i,
                        format!("byte 0x{other:02x} cannot appear in a string"),
                    ))
                }
            }
            i += 1;
        }
        self.pos += n + 1;
        Ok(out)
    }
}
