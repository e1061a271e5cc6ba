//! Key namespaces: several application-level namespaces (a path such as `tenant/acme/users`) and
//! one key, packed into one byte string for a plain ordered key-value store.
//!
//! Three schemes share one trait, [`Namespacing`]:
//!
//! | scheme | bytes | size | decoding |
//! |---|---|---|---|
//! | [`LengthPrefixed`] | `u16be(len n1) ‖ n1 ‖ … ‖ u16be(len nm) ‖ nm ‖ key` (CosmWasm) | n + 2 per level | needs the depth: one instance = one fixed depth |
//! | [`AsciiHex`] | `hex(n1) ‖ 00 ‖ … ‖ hex(nm) ‖ 00 ‖ hex(key)` (key-namespacing) | 2n + 1 per level | self-delimiting |
//! | [`Escaped`] | `esc(n1) ‖ 00 01 ‖ … ‖ esc(nm) ‖ 00 01 ‖ esc(key)`, `esc`: `00` → `00 ff` | n + 2 per level + 1 per `00` byte | self-delimiting |
//!
//! The five properties of the key-namespacing note, and which scheme has them (each claim is
//! proven by a property test in `tests/namespace.rs`, each failure shown by a counterexample):
//!
//! | property | LengthPrefixed | AsciiHex | Escaped |
//! |---|---|---|---|
//! | 1 any length, any bytes | namespaces ≤ 65535 bytes (error above); key any | yes | yes |
//! | 2 collision resistance | yes at one fixed depth; **no** across depths | yes | yes |
//! | 3 order within a namespace | yes | yes | yes |
//! | 4 order of namespaces | **no**: length first (`zing` < `grow1`) | yes | yes |
//! | 5 multi-level | yes (fixed depth) | yes | yes |
//!
//! The byte formats are specified in `docs/format/namespaces.md`.
//!
//! ```
//! use strata_key::namespace::{Escaped, Namespacing};
//! let bytes = Escaped.encode(&[b"tenant", b"acme"], b"user#1").unwrap();
//! assert_eq!(bytes, b"tenant\x00\x01acme\x00\x01user#1");
//! let decoded = Escaped.decode(&bytes).unwrap();
//! assert_eq!(decoded.namespaces, vec![b"tenant".to_vec(), b"acme".to_vec()]);
//! assert_eq!(decoded.key, b"user#1");
//! ```

mod asciihex;
mod error;
mod escaped;
mod length_prefixed;

use std::ops::Bound;

pub use asciihex::{from_asciihex, join, to_asciihex, unjoin, AsciiHex};
pub use error::NamespaceError;
pub use escaped::Escaped;
pub use length_prefixed::{
    namespace_with_key, to_length_prefixed, to_length_prefixed_nested, LengthPrefixed,
};

/// A half-open byte range `(start, end)`, as `BTreeMap::range` takes it.
pub type ByteRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// A decoded key: its namespace path (outermost first) and the application key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Namespaced {
    /// Namespace components, outermost first. Empty for a key at the root.
    pub namespaces: Vec<Vec<u8>>,
    /// The application-level key.
    pub key: Vec<u8>,
}

impl Namespaced {
    /// Builds a decoded key from borrowed parts.
    ///
    /// ```
    /// use strata_key::namespace::Namespaced;
    /// let n = Namespaced::new(&[b"a", b"b"], b"k");
    /// assert_eq!(n.namespaces.len(), 2);
    /// ```
    pub fn new(namespaces: &[&[u8]], key: &[u8]) -> Namespaced {
        Namespaced {
            namespaces: namespaces.iter().map(|n| n.to_vec()).collect(),
            key: key.to_vec(),
        }
    }

    /// The namespace components as borrowed slices, as [`Namespacing::encode`] takes them.
    pub fn namespace_refs(&self) -> Vec<&[u8]> {
        self.namespaces.iter().map(Vec::as_slice).collect()
    }
}

/// A namespacing scheme: packs a namespace path and a key into one byte string, and back.
pub trait Namespacing {
    /// Short name of the scheme (`"length-prefixed"`, `"asciihex"`, `"escaped"`), used in errors.
    fn name(&self) -> &'static str;

    /// Appends the encoding of `key` under the namespace path `namespaces` (outermost first) to
    /// `out`. On error `out` is left unchanged.
    fn encode_into(
        &self,
        namespaces: &[&[u8]],
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), NamespaceError>;

    /// The encoding of `key` under `namespaces`, in a new buffer.
    fn encode(&self, namespaces: &[&[u8]], key: &[u8]) -> Result<Vec<u8>, NamespaceError> {
        let mut out = Vec::new();
        self.encode_into(namespaces, key, &mut out)?;
        Ok(out)
    }

    /// Decodes untrusted bytes into the namespace path and key. Never panics; errors carry the
    /// byte offset at fault.
    fn decode(&self, bytes: &[u8]) -> Result<Namespaced, NamespaceError>;

    /// The byte prefix shared by every key in the namespace path `namespaces` (and, for the
    /// self-delimiting schemes, in every namespace nested below it).
    fn prefix(&self, namespaces: &[&[u8]]) -> Result<Vec<u8>, NamespaceError>;

    /// The half-open byte range `[start, end)` holding exactly the keys of the namespace path
    /// `namespaces` (see [`Namespacing::prefix`] for what "of" means per scheme). The end is
    /// [`crate::range::prefix_end`] of the prefix, or unbounded when there is none.
    ///
    /// ```
    /// use std::ops::Bound;
    /// use strata_key::namespace::{Escaped, Namespacing};
    /// let (start, end) = Escaped.prefix_range(&[b"users"]).unwrap();
    /// assert_eq!(start, Bound::Included(b"users\x00\x01".to_vec()));
    /// assert_eq!(end, Bound::Excluded(b"users\x00\x02".to_vec()));
    /// ```
    fn prefix_range(&self, namespaces: &[&[u8]]) -> Result<ByteRange, NamespaceError> {
        let start = self.prefix(namespaces)?;
        let end = match crate::range::prefix_end(&start) {
            Some(e) => Bound::Excluded(e),
            None => Bound::Unbounded,
        };
        Ok((Bound::Included(start), end))
    }
}
