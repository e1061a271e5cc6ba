//! Errors of the storage engine.

use std::path::{Path, PathBuf};

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
    /// Another process (or another engine in this process) holds the directory's lock.
    #[error("database {dir} is in use: {holder}")]
    Locked {
        /// The database directory.
        dir: PathBuf,
        /// Who holds it, in words (with the pid where known).
        holder: String,
    },
    /// A write, flush or compaction on an engine opened read-only.
    #[error("the database is open read-only")]
    ReadOnly,
    /// The partitioner asked for differs from the one the database records.
    #[error("database {dir} is partitioned by {recorded}, not {requested}: opening it with another partitioner would re-file its keys")]
    PartitionerMismatch {
        /// The database directory.
        dir: PathBuf,
        /// The partitioner recorded in the database.
        recorded: String,
        /// The partitioner the caller asked for.
        requested: String,
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

impl Error {
    /// Wraps an I/O error on `path`: `file.read(..).map_err(Error::io(&path))`.
    pub fn io(path: impl AsRef<Path>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.as_ref().to_path_buf();
        move |source| Error::Io { path, source }
    }

    /// Corruption in `file` at `offset`.
    pub fn corruption(file: impl AsRef<Path>, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.as_ref().to_path_buf(),
            offset,
            reason: reason.into(),
        }
    }
}

/// Bytes that do not decode: where (an offset from the start of the decoded buffer) and what
/// is wrong. [`FormatError::in_file`] turns it into an [`Error::Corruption`] naming the file
/// and the absolute offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at offset {offset}: {what}")]
pub struct FormatError {
    /// Offset of the bad bytes in the decoded buffer.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
}

impl FormatError {
    /// A format error at `offset`.
    pub fn new(offset: usize, what: impl Into<String>) -> FormatError {
        FormatError {
            offset: offset as u64,
            what: what.into(),
        }
    }

    /// The same error with its offset moved by `base` (the buffer's place in a larger one).
    pub fn shifted(self, base: u64) -> FormatError {
        FormatError {
            offset: base.saturating_add(self.offset),
            what: self.what,
        }
    }

    /// Corruption of `file`, whose decoded buffer starts at byte `base` of the file.
    pub fn in_file(self, file: impl AsRef<Path>, base: u64) -> Error {
        Error::corruption(file, base.saturating_add(self.offset), self.what)
    }
}
