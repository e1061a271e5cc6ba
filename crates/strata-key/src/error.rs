//! Errors of the codecs: what went wrong, and where.

use std::borrow::Cow;

use crate::value::Kind;

/// A tuple that a codec cannot encode. `index` is the position of the element at fault
/// (top level).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The codec has no encoding for this kind of value.
    #[error("element {index}: the {codec} codec cannot encode {kind} values")]
    Unsupported {
        /// Codec name.
        codec: &'static str,
        /// Element position.
        index: usize,
        /// Kind at fault.
        kind: Kind,
    },
    /// The value is of a supported kind but out of the codec's range, or does not match the
    /// schema.
    #[error("element {index}: {reason}")]
    Invalid {
        /// Element position.
        index: usize,
        /// What is wrong.
        reason: Cow<'static, str>,
    },
}

/// Bytes that do not decode. `offset` is the byte offset in the input where decoding failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{codec} decode error at byte {offset}: {reason}")]
pub struct DecodeError {
    /// Codec name.
    pub codec: &'static str,
    /// Byte offset in the input.
    pub offset: usize,
    /// What is wrong.
    pub reason: Cow<'static, str>,
}

impl DecodeError {
    /// Builds an error.
    pub fn new(codec: &'static str, offset: usize, reason: impl Into<Cow<'static, str>>) -> Self {
        DecodeError {
            codec,
            offset,
            reason: reason.into(),
        }
    }
}
