//! Errors of the database layer. Every message names the table, attribute or position at fault.

/// Result of database operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The storage engine failed (I/O, corruption, closed, ...).
    #[error("storage: {0}")]
    Engine(#[from] strata_lsm::Error),
    /// No table of that name.
    #[error("table {0:?} does not exist")]
    TableNotFound(String),
    /// A table of that name exists with another schema.
    #[error("table {name:?} already exists with a different schema: {existing}")]
    TableExists {
        /// Table name.
        name: String,
        /// The existing schema, as JSON.
        existing: String,
    },
    /// A schema that cannot be used.
    #[error("invalid schema for table {table:?}: {reason}")]
    InvalidSchema {
        /// Table name (may be empty when the name itself is at fault).
        table: String,
        /// What is wrong.
        reason: String,
    },
    /// An item or key lacks a key attribute.
    #[error("table {table:?}: missing key attribute {attr:?}")]
    MissingKeyAttribute {
        /// Table name.
        table: String,
        /// Attribute name.
        attr: String,
    },
    /// A key attribute has the wrong type.
    #[error("table {table:?}: key attribute {attr:?} must be {expected}, found {found}")]
    KeyType {
        /// Table name.
        table: String,
        /// Attribute name.
        attr: String,
        /// The schema's type.
        expected: String,
        /// What was given.
        found: String,
    },
    /// A key, item, query or scan request that does not fit the table.
    #[error("table {table:?}: {reason}")]
    Invalid {
        /// Table name.
        table: String,
        /// What is wrong.
        reason: String,
    },
    /// A conditional write whose condition did not hold; nothing was written.
    #[error("table {table:?}: condition failed: {reason}")]
    ConditionFailed {
        /// Table name (the first one concerned).
        table: String,
        /// Which condition.
        reason: String,
    },
    /// An optimistic transaction kept conflicting with concurrent writers.
    #[error("transaction aborted after {attempts} conflicting attempts")]
    Conflict {
        /// Attempts made.
        attempts: u32,
    },
    /// Stored bytes that do not decode.
    #[error("corrupt {what} at byte {offset}: {reason}")]
    Corrupt {
        /// What was being decoded (item, catalog entry, key).
        what: String,
        /// Byte offset in the stored value or key.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A stored item that does not fit the type it is read into (typed reads,
    /// [`crate::item_serde`]): an attribute missing or of another type.
    #[error("item does not fit {type_name}: attribute {attr:?} at byte {offset}: {reason}")]
    ItemType {
        /// The Rust type being read.
        type_name: String,
        /// Path of the attribute at fault (`a.b.[2]`; empty for the item itself).
        attr: String,
        /// Byte offset in the stored item.
        offset: usize,
        /// What is wrong (serde's message).
        reason: String,
    },
    /// The operation is not available (e.g. the on-disk engine in a build without it).
    #[error("{0}")]
    Unsupported(String),
}

impl Error {
    /// A request error about `table`.
    pub(crate) fn invalid(table: &str, reason: impl Into<String>) -> Error {
        Error::Invalid {
            table: table.to_owned(),
            reason: reason.into(),
        }
    }

    /// True for errors caused by the caller's input (bad schema, key, item, query), as opposed
    /// to the state of the database or the storage.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Error::InvalidSchema { .. }
                | Error::MissingKeyAttribute { .. }
                | Error::KeyType { .. }
                | Error::Invalid { .. }
        )
    }
}
