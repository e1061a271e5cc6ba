//! The error type of the record store.

use strata_key::{DecodeError, EncodeError};

/// Result of the record store.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in the record store. Every message says what and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The engine failed (I/O, closed, corruption below the record layer).
    #[error("engine: {0}")]
    Engine(#[from] strata_lsm::Error),
    /// Another writer changed what this write read (a different `Store` over the same
    /// engine); nothing was written. Retrying the operation is safe.
    #[error("write conflict: another writer changed the store during this operation")]
    Conflict,
    /// A key cannot be encoded (e.g. a float in a key tuple).
    #[error("key: {0}")]
    Key(#[from] EncodeError),
    /// Stored bytes that do not decode: `what` names the record or metadata row.
    #[error("corrupt {what}: {reason}")]
    Corrupt {
        /// Which stored item (e.g. "batch record 0a1503661502").
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value the collection's encoder cannot represent, or encoded bytes it cannot read.
    #[error("encoder {encoder}: {reason}")]
    Encoding {
        /// Encoder or packer name.
        encoder: String,
        /// What is wrong.
        reason: String,
    },
    /// A record refers to an encoder or packer index that is not registered.
    #[error("missing encoder: {name} / {idx} (register it before reading these records)")]
    MissingEncoder {
        /// The name recorded in the store's metadata, or `?` when there is none.
        name: String,
        /// The index found in the record.
        idx: u64,
    },
    /// No collection (or index) of that name.
    #[error("no {what} named {name:?}")]
    NotFound {
        /// "collection" or "index".
        what: &'static str,
        /// The name asked for.
        name: String,
    },
    /// A stored attribute disagrees with the one given (e.g. reopening a collection with a
    /// different encoder).
    #[error("collection {name:?}: attribute {attr}: stored {stored} != given {given}")]
    Config {
        /// Collection name.
        name: String,
        /// Attribute name.
        attr: String,
        /// The stored value.
        stored: String,
        /// The value given now.
        given: String,
    },
    /// A key function, index function or grouper failed on a value.
    #[error("{what}: {reason}")]
    Function {
        /// Which function ("key function of people", "index by_tag", "grouper").
        what: String,
        /// Why it failed.
        reason: String,
    },
    /// An argument is out of range or inconsistent.
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    pub(crate) fn corrupt(what: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            what: what.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn encoding(encoder: &str, reason: impl Into<String>) -> Error {
        Error::Encoding {
            encoder: encoder.to_owned(),
            reason: reason.into(),
        }
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Error {
        Error::corrupt("key", e.to_string())
    }
}
