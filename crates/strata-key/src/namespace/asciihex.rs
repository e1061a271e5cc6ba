//! The "0x00 separated ASCIIHEX" scheme of webmaster128/key-namespacing: every component and the
//! key as lowercase ASCII hex, joined with 0x00.

use super::{NamespaceError, Namespaced, Namespacing};

const SCHEME: &str = "asciihex";
const HEX: &[u8; 16] = b"0123456789abcdef";

/// ASCII-hex namespaces: `hex(n1) ‖ 00 ‖ … ‖ hex(nm) ‖ 00 ‖ hex(key)`.
///
/// Hex digits are `30..=39` and `61..=66`, so 0x00 never occurs inside a component and the number
/// of 0x00 bytes is the depth: decoding is self-delimiting, and all five properties hold, at
/// about twice the size. 0x00 sorts below every hex digit, so a namespace sorts before its own
/// extensions (`fo` < `foo`).
///
/// ```
/// use strata_key::namespace::{AsciiHex, Namespacing};
/// assert_eq!(AsciiHex.encode(&[b"fo"], b"obar").unwrap(), b"666f\x006f626172");
/// assert_eq!(AsciiHex.encode(&[b"foo"], b"bar").unwrap(), b"666f6f\x00626172");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AsciiHex;

fn push_hex(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        out.push(HEX[usize::from(b >> 4)]);
        out.push(HEX[usize::from(b & 0x0f)]);
    }
}

/// Lowercase ASCII hex of `bytes` (`asciihex(x) := ascii(hex(x))`).
///
/// ```
/// assert_eq!(strata_key::namespace::to_asciihex(&[0xa0, 0x0a]), b"a00a");
/// ```
pub fn to_asciihex(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    push_hex(bytes, &mut out);
    out
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn hex_into(text: &[u8], base: usize, out: &mut Vec<u8>) -> Result<(), NamespaceError> {
    if !text.len().is_multiple_of(2) {
        return Err(NamespaceError::decode(
            SCHEME,
            base + text.len(),
            format!("odd number of hex digits ({})", text.len()),
        ));
    }
    out.reserve(text.len() / 2);
    for (i, pair) in text.chunks_exact(2).enumerate() {
        let at = base + 2 * i;
        let hi = nibble(pair[0]).ok_or_else(|| bad_digit(pair[0], at))?;
        let lo = nibble(pair[1]).ok_or_else(|| bad_digit(pair[1], at + 1))?;
        out.push(hi << 4 | lo);
    }
    Ok(())
}

fn bad_digit(c: u8, offset: usize) -> NamespaceError {
    NamespaceError::decode(
        SCHEME,
        offset,
        format!("byte 0x{c:02x} is not a lowercase hex digit"),
    )
}

/// Decodes lowercase ASCII hex. Uppercase digits, other bytes and odd lengths are errors (with
/// the offset), so every byte string has at most one decoding.
///
/// ```
/// use strata_key::namespace::from_asciihex;
/// assert_eq!(from_asciihex(b"a00a").unwrap(), vec![0xa0, 0x0a]);
/// assert!(from_asciihex(b"A00A").is_err());
/// ```
pub fn from_asciihex(text: &[u8]) -> Result<Vec<u8>, NamespaceError> {
    let mut out = Vec::new();
    hex_into(text, 0, &mut out)?;
    Ok(out)
}

/// Joins parts with a 0x00 byte between them (key-namespacing `join`). The parts must not
/// contain 0x00 (an error names the part and offset). `join(&[])` and `join(&[b""])` are both
/// empty: [`AsciiHex`] always has at least the key part, so it never hits that ambiguity.
///
/// ```
/// use strata_key::namespace::join;
/// assert_eq!(join(&[b"\x11\x22", b"\x33\x44"]).unwrap(), b"\x11\x22\x00\x33\x44");
/// assert_eq!(join(&[b"", b""]).unwrap(), b"\x00");
/// ```
pub fn join(parts: &[&[u8]]) -> Result<Vec<u8>, NamespaceError> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (index, part) in parts.iter().enumerate() {
        if let Some(offset) = memchr::memchr(0, part) {
            return Err(NamespaceError::SeparatorInPart { index, offset });
        }
        if index > 0 {
            out.push(0);
        }
        out.extend_from_slice(part);
    }
    Ok(out)
}

/// Splits at every 0x00 byte (key-namespacing `unjoin`): `n` separators give `n + 1` parts, so
/// the empty input gives one empty part.
///
/// ```
/// use strata_key::namespace::unjoin;
/// assert_eq!(unjoin(b"\x11\x00\x22"), vec![&b"\x11"[..], &b"\x22"[..]]);
/// assert_eq!(unjoin(b"\x00"), vec![&b""[..], &b""[..]]);
/// ```
pub fn unjoin(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split(|&b| b == 0).collect()
}

impl Namespacing for AsciiHex {
    fn name(&self) -> &'static str {
        SCHEME
    }

    fn encode_into(
        &self,
        namespaces: &[&[u8]],
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), NamespaceError> {
        out.reserve(namespaces.iter().map(|n| 2 * n.len() + 1).sum::<usize>() + 2 * key.len());
        for n in namespaces {
            push_hex(n, out);
            out.push(0);
        }
        push_hex(key, out);
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Namespaced, NamespaceError> {
        let mut parts = Vec::new();
        let mut start = 0;
        for part in unjoin(bytes) {
            let mut decoded = Vec::new();
            hex_into(part, start, &mut decoded)?;
            parts.push(decoded);
            start += part.len() + 1;
        }
        // unjoin always yields at least one part: the key.
        let key = parts.pop().unwrap_or_default();
        Ok(Namespaced {
            namespaces: parts,
            key,
        })
    }

    /// `hex(n1) ‖ 00 ‖ … ‖ hex(nm) ‖ 00`: the range holds the keys of this namespace and of
    /// every namespace nested below it.
    fn prefix(&self, namespaces: &[&[u8]]) -> Result<Vec<u8>, NamespaceError> {
        let mut out = Vec::new();
        for n in namespaces {
            push_hex(n, &mut out);
            out.push(0);
        }
        Ok(out)
    }
}
