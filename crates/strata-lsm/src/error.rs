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
    /// A remote engine could not serve the request (unreachable, no quorum, timed out before
    /// sending). Nothing was written.
    #[error("{0}")]
    Unavailable(String),
    /// A remote write whose result never came back (timeout or lost connection after the
    /// request was sent, e.g. during a leader change): it may or may not have been applied.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// A read at a snapshot whose version the store has discarded (e.g. compacted away).
    #[error("{0}")]
    SnapshotTooOld(String),
    /// A batch beyond what the engine can apply atomically; nothing was written. The batch
    /// is never split (that would break its atomicity).
    #[error("{0}")]
    TooLarge(String),
}
