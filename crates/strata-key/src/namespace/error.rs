//! Errors of the namespace schemes.

use std::borrow::Cow;

/// A namespace path or key that a scheme cannot encode, or bytes that do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    /// A namespace component is longer than the scheme's length field can express.
    #[error(
        "namespace component {index} is {len} bytes; the {scheme} scheme allows at most {max}"
    )]
    ComponentTooLong {
        /// Scheme name.
        scheme: &'static str,
        /// Position of the component in the namespace path.
        index: usize,
        /// Its length in bytes.
        len: usize,
        /// The largest length the scheme accepts.
        max: usize,
    },
    /// A fixed-depth scheme was given a namespace path of another depth.
    #[error("the {scheme} scheme has depth {depth}, got {got} namespace components")]
    WrongDepth {
        /// Scheme name.
        scheme: &'static str,
        /// The depth of the scheme instance.
        depth: usize,
        /// Number of components given.
        got: usize,
    },
    /// A part given to [`crate::namespace::join`] contains the separator byte 0x00.
    #[error("part {index} contains a 0x00 byte at offset {offset}; join needs 0x00-free parts")]
    SeparatorInPart {
        /// Position of the part.
        index: usize,
        /// Offset of the 0x00 byte inside the part.
        offset: usize,
    },
    /// Bytes that do not decode.
    #[error("{scheme} decode error at byte {offset}: {reason}")]
    Decode {
        /// Scheme name.
        scheme: &'static str,
        /// Byte offset in the input where decoding failed.
        offset: usize,
        /// What is wrong.
        reason: Cow<'static, str>,
    },
}

impl NamespaceError {
    pub(crate) fn decode(
        scheme: &'static str,
        offset: usize,
        reason: impl Into<Cow<'static, str>>,
    ) -> NamespaceError {
        NamespaceError::Decode {
            scheme,
            offset,
            reason: reason.into(),
        }
    }
}
