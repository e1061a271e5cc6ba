//! CosmWasm's length-prefixed namespaces: `u16be(len) ‖ component` per namespace, then the raw
//! key. Byte-identical to cosmwasm-std `storage_keys` (`to_length_prefixed`,
//! `to_length_prefixed_nested`, `namespace_with_key`) and hence to cw-storage-plus `Map` keys.

use super::{NamespaceError, Namespaced, Namespacing};

const SCHEME: &str = "length-prefixed";

/// The longest namespace component the u16 length field can express.
pub const MAX_COMPONENT_LEN: usize = 0xFFFF;

/// Length-prefixed namespaces at one fixed depth.
///
/// The key is not length-prefixed, so the bytes alone do not say how many namespace components
/// they hold: `([b"a"], b"\x00\x01bx")` and `([b"a", b"b"], b"x")` are the same bytes. An
/// instance therefore has a fixed depth, and [`Namespacing::encode`] rejects paths of another
/// depth. This is the rule of the key-namespacing note ("at every level either all keys or no
/// key uses the length-prefixed format"): keep keys of different depths in different
/// keyspaces, and collision resistance holds.
///
/// Namespaces sort by length first, then bytes (`"zing"` < `"grow1"`): property 4 does not hold.
///
/// ```
/// use strata_key::namespace::{LengthPrefixed, Namespacing};
/// let scheme = LengthPrefixed::new(2);
/// let bytes = scheme.encode(&[b"bar", b"cool"], b"foo").unwrap();
/// assert_eq!(bytes, b"\x00\x03bar\x00\x04coolfoo");
/// assert_eq!(scheme.decode(&bytes).unwrap().key, b"foo");
/// // Another depth is another keyspace.
/// assert!(scheme.encode(&[b"bar"], b"foo").is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LengthPrefixed {
    depth: usize,
}

impl LengthPrefixed {
    /// The scheme for keys under exactly `depth` namespace components.
    pub const fn new(depth: usize) -> LengthPrefixed {
        LengthPrefixed { depth }
    }

    /// The number of namespace components of every key of this instance.
    pub const fn depth(&self) -> usize {
        self.depth
    }
}

fn check_lengths(components: &[&[u8]]) -> Result<usize, NamespaceError> {
    let mut total = 0;
    for (index, c) in components.iter().enumerate() {
        if c.len() > MAX_COMPONENT_LEN {
            return Err(NamespaceError::ComponentTooLong {
                scheme: SCHEME,
                index,
                len: c.len(),
                max: MAX_COMPONENT_LEN,
            });
        }
        total += 2 + c.len();
    }
    Ok(total)
}

fn push_nested(components: &[&[u8]], out: &mut Vec<u8>) {
    for c in components {
        // check_lengths ran first, so the length fits.
        let len = c.len() as u16;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(c);
    }
}

/// `u16be(len) ‖ component`, as cosmwasm-std `to_length_prefixed`. A component longer than
/// 65535 bytes is an error (upstream panics).
///
/// ```
/// use strata_key::namespace::to_length_prefixed;
/// assert_eq!(to_length_prefixed(b"a").unwrap(), b"\x00\x01a");
/// assert!(to_length_prefixed(&vec![0; 0x10000]).is_err());
/// ```
pub fn to_length_prefixed(component: &[u8]) -> Result<Vec<u8>, NamespaceError> {
    to_length_prefixed_nested(&[component])
}

/// Every component length-prefixed, concatenated, as cosmwasm-std `to_length_prefixed_nested`.
///
/// ```
/// use strata_key::namespace::to_length_prefixed_nested;
/// assert_eq!(
///     to_length_prefixed_nested(&[b"a", b"ab"]).unwrap(),
///     b"\x00\x01a\x00\x02ab"
/// );
/// ```
pub fn to_length_prefixed_nested(components: &[&[u8]]) -> Result<Vec<u8>, NamespaceError> {
    let mut out = Vec::with_capacity(check_lengths(components)?);
    push_nested(components, &mut out);
    Ok(out)
}

/// The length-prefixed namespaces followed by the raw key, as cosmwasm-std
/// `namespace_with_key`.
///
/// ```
/// use strata_key::namespace::namespace_with_key;
/// assert_eq!(namespace_with_key(&[b"people"], b"john").unwrap(), b"\x00\x06peoplejohn");
/// assert_eq!(namespace_with_key(&[], b"foo").unwrap(), b"foo");
/// ```
pub fn namespace_with_key(components: &[&[u8]], key: &[u8]) -> Result<Vec<u8>, NamespaceError> {
    let mut out = Vec::with_capacity(check_lengths(components)? + key.len());
    push_nested(components, &mut out);
    out.extend_from_slice(key);
    Ok(out)
}

impl Namespacing for LengthPrefixed {
    fn name(&self) -> &'static str {
        SCHEME
    }

    fn encode_into(
        &self,
        namespaces: &[&[u8]],
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), NamespaceError> {
        if namespaces.len() != self.depth {
            return Err(NamespaceError::WrongDepth {
                scheme: SCHEME,
                depth: self.depth,
                got: namespaces.len(),
            });
        }
        out.reserve(check_lengths(namespaces)? + key.len());
        push_nested(namespaces, out);
        out.extend_from_slice(key);
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Namespaced, NamespaceError> {
        let mut namespaces = Vec::with_capacity(self.depth);
        let mut pos = 0;
        for index in 0..self.depth {
            let Some(len_bytes) = bytes.get(pos..pos + 2) else {
                return Err(NamespaceError::decode(
                    SCHEME,
                    pos,
                    format!(
                        "truncated length of namespace component {index}: need 2 bytes, have {}",
                        bytes.len() - pos
                    ),
                ));
            };
            let len = usize::from(u16::from_be_bytes([len_bytes[0], len_bytes[1]]));
            pos += 2;
            let Some(component) = bytes.get(pos..pos + len) else {
                return Err(NamespaceError::decode(
                    SCHEME,
                    pos,
                    format!(
                        "namespace component {index} claims {len} bytes, only {} remain",
                        bytes.len() - pos
                    ),
                ));
            };
            namespaces.push(component.to_vec());
            pos += len;
        }
        Ok(Namespaced {
            namespaces,
            key: bytes[pos..].to_vec(),
        })
    }

    /// The length-prefixed leading components. `namespaces` may be shorter than the depth (a
    /// scan over the leading components, as cw-storage-plus `prefix`), never longer.
    fn prefix(&self, namespaces: &[&[u8]]) -> Result<Vec<u8>, NamespaceError> {
        if namespaces.len() > self.depth {
            return Err(NamespaceError::WrongDepth {
                scheme: SCHEME,
                depth: self.depth,
                got: namespaces.len(),
            });
        }
        to_length_prefixed_nested(namespaces)
    }
}
