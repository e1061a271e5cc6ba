//! Errors of the storage engine.

use std::path::PathBuf;

/// Result of engine operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in the engine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O error on a file.
    #[error("{path}: {source}")]
    Io {
        /// File or directory concerned.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file failed a checksum or structural check.
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption {
        /// File concerned.
        file: PathBuf,
        /// Byte offset in the file.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A condition of a write batch did not hold; nothing of the batch was written.
    #[error("condition {index} of the write batch failed: {reason}")]
    ConditionFailed {
        /// Position of the condition in the batch.
        index: usize,
        /// Which condition, in words.
        reason: String,
    },
    /// An earlier fsync failed: the write path is read-only until the database is reopened.
    #[error("writes are disabled after an earlier I/O failure ({0}); reopen the database")]
    Poisoned(String),
    /// The engine was closed.
    #[error("the engine is closed")]
    Closed,
    /// A bad argument or option.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}
