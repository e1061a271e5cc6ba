//! The one error type of the crate.

use std::path::PathBuf;

/// Everything that can go wrong in `strata-hyperdb`: I/O, corrupt or hostile feeds, misuse.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system error on one storage file.
    #[error("I/O error on {file}: {source}")]
    Io {
        /// The file (or storage name) involved.
        file: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Bytes that do not decode: `what` names the structure, `offset` is the byte offset in it.
    #[error("corrupt {what} at byte {offset}: {reason}")]
    Decode {
        /// What was being decoded, e.g. `block 12 trie`.
        what: String,
        /// Byte offset inside that structure.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A storage file that is inconsistent with the others (sizes, headers, missing nodes).
    #[error("corrupt storage file {file}: {reason}")]
    Storage {
        /// The storage file name (`tree`, `data`, ...).
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// A block, tree node or signature that does not verify.
    #[error("verification failed: {0}")]
    Verify(String),
    /// A node refers to something it may not (a pointer loop, a block out of range, an unknown feed).
    #[error("invalid node in block {seq}: {reason}")]
    InvalidNode {
        /// The block holding the node.
        seq: u64,
        /// What is wrong.
        reason: String,
    },
    /// A block index past the end of the feed.
    #[error("block {seq} is out of range (feed length {length})")]
    OutOfRange {
        /// Requested block.
        seq: u64,
        /// Feed length.
        length: u64,
    },
    /// A write on a read-only database (no secret key, or a checkout).
    #[error("the database is read-only: {0}")]
    ReadOnly(&'static str),
    /// Another process holds the database directory (a writer, or readers while this one
    /// wants to write): nothing was read or written.
    #[error("database {} is in use by another process (its lock on source/key is held)", dir.display())]
    Locked {
        /// The database directory.
        dir: PathBuf,
    },
    /// A malformed argument (version bytes, key, secret key, ...).
    #[error("invalid argument: {0}")]
    Invalid(String),
}

impl Error {
    pub(crate) fn io(file: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            file: file.into(),
            source,
        }
    }

    pub(crate) fn decode(
        what: impl Into<String>,
        offset: usize,
        reason: impl Into<String>,
    ) -> Error {
        Error::Decode {
            what: what.into(),
            offset: offset as u64,
            reason: reason.into(),
        }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
