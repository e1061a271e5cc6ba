//! Strata's escaped namespaces: all five properties at about 1× size.

use super::{NamespaceError, Namespaced, Namespacing};

const SCHEME: &str = "escaped";
/// Follows 0x00 for a literal 0x00 byte inside a component or the key.
const ESCAPE: u8 = 0xff;
/// Follows 0x00 to end a namespace component.
const SEPARATOR: u8 = 0x01;

/// Escaped namespaces: `esc(n1) ‖ 00 01 ‖ … ‖ esc(nm) ‖ 00 01 ‖ esc(key)`, where `esc` writes
/// every 0x00 byte as `00 ff` and leaves the other bytes alone.
///
/// Why this shape (the proofs are property tests in `tests/namespace.rs`; the argument is in
/// `docs/format/namespaces.md`):
///
/// * Inside the escaped stream 0x00 is always followed by `ff` (a data byte) or `01` (a
///   separator), so the separators can be found without knowing the depth: decoding is
///   self-delimiting, and two different (path, key) pairs never share bytes.
/// * The key is escaped too. A raw key could contain `00 01` and pass for one more namespace
///   level: `([a], "b\0\x01c")` would equal `([a, b], "c")`.
/// * The key is not terminated. `esc` keeps byte order and prefixes (`a < b` ⇔
///   `esc(a) < esc(b)`, and `a` is a prefix of `b` ⇔ `esc(a)` is a prefix of `esc(b)`), and the
///   key is the last element, so a terminator would add bytes and change no comparison.
/// * The separator `00 01` sorts below `00 ff` and below every non-zero byte, so a component
///   sorts before its extensions (`fo` < `fo\0` < `foo`), exactly like the bytes themselves.
///
/// Together: the encoding order is the lexicographic order of the list `[n1, …, nm, key]`
/// (elements compared as bytes, a list before its extensions). Keys of a nested namespace `c`
/// sort between the direct keys `≤ c` and `> c`, like files of a directory tree listed in
/// order.
///
/// Size: the raw bytes + 2 per namespace level + 1 per 0x00 byte.
///
/// ```
/// use strata_key::namespace::{Escaped, Namespacing};
/// assert_eq!(Escaped.encode(&[b"a\x00b"], b"k").unwrap(), b"a\x00\xffb\x00\x01k");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Escaped;

fn push_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    let mut rest = bytes;
    while let Some(i) = memchr::memchr(0, rest) {
        out.extend_from_slice(&rest[..=i]);
        out.push(ESCAPE);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
}

fn escaped_len(bytes: &[u8]) -> usize {
    bytes.len() + memchr::memchr_iter(0, bytes).count()
}

impl Namespacing for Escaped {
    fn name(&self) -> &'static str {
        SCHEME
    }

    fn encode_into(
        &self,
        namespaces: &[&[u8]],
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), NamespaceError> {
        out.reserve(namespaces.iter().map(|n| n.len() + 2).sum::<usize>() + key.len());
        for n in namespaces {
            push_escaped(n, out);
            out.extend_from_slice(&[0, SEPARATOR]);
        }
        push_escaped(key, out);
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Namespaced, NamespaceError> {
        let mut namespaces = Vec::new();
        let mut current = Vec::new();
        let mut pos = 0;
        while let Some(i) = memchr::memchr(0, &bytes[pos..]) {
            let zero = pos + i;
            current.extend_from_slice(&bytes[pos..zero]);
            match bytes.get(zero + 1) {
                Some(&ESCAPE) => current.push(0),
                Some(&SEPARATOR) => namespaces.push(std::mem::take(&mut current)),
                Some(&other) => {
                    return Err(NamespaceError::decode(
                        SCHEME,
                        zero + 1,
                        format!(
                            "0x00 followed by 0x{other:02x}; expected 0xff (escaped 0x00) or 0x01 (separator)"
                        ),
                    ))
                }
                None => {
                    return Err(NamespaceError::decode(
                        SCHEME,
                        zero,
                        "0x00 at the end of the input; expected 0xff or 0x01 after it",
                    ))
                }
            }
            pos = zero + 2;
        }
        current.extend_from_slice(&bytes[pos..]);
        Ok(Namespaced {
            namespaces,
            key: current,
        })
    }

    /// `esc(n1) ‖ 00 01 ‖ … ‖ esc(nm) ‖ 00 01`: the range holds the keys of this namespace and
    /// of every namespace nested below it.
    fn prefix(&self, namespaces: &[&[u8]]) -> Result<Vec<u8>, NamespaceError> {
        let mut out =
            Vec::with_capacity(namespaces.iter().map(|n| escaped_len(n) + 2).sum::<usize>());
        for n in namespaces {
            push_escaped(n, &mut out);
            out.extend_from_slice(&[0, SEPARATOR]);
        }
        Ok(out)
    }
}
