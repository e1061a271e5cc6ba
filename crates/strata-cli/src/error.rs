//! The one error type of the command line: a message (one line) and an exit code.

/// Exit code when another process holds the database directory (`kv`, `table`, `hyperdb`).
pub const EXIT_LOCKED: u8 = 3;

/// A failure to report: `message` goes to stderr as one line, `code` is the exit code.
#[derive(Debug)]
pub struct CliError {
    /// Exit code (2 for invalid input, 3 when the database is locked, 141 when stdout was
    /// closed, 1 for other failures).
    pub code: u8,
    /// One line saying what is wrong and where (empty for [`CliError::closed`]: nothing is
    /// printed).
    pub message: String,
}

impl CliError {
    /// Invalid input (exit code 2).
    pub fn input(message: impl Into<String>) -> CliError {
        CliError {
            code: 2,
            message: one_line(message.into()),
        }
    }

    /// Any other failure (exit code 1).
    pub fn failure(message: impl Into<String>) -> CliError {
        CliError {
            code: 1,
            message: one_line(message.into()),
        }
    }

    /// Another process holds the database (exit code [`EXIT_LOCKED`]).
    pub fn locked(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_LOCKED,
            message: one_line(message.into()),
        }
    }

    /// Stdout was closed by its reader (EPIPE): no message, exit code
    /// [`crate::output::EXIT_CLOSED`]. See [`crate::output`].
    pub fn closed() -> CliError {
        CliError {
            code: crate::output::EXIT_CLOSED,
            message: String::new(),
        }
    }

    /// An engine error: [`CliError::locked`] for a lock held elsewhere, input errors for bad
    /// arguments, failures otherwise.
    pub fn engine(e: strata_lsm::Error) -> CliError {
        match e {
            strata_lsm::Error::Locked { .. } => CliError::locked(e.to_string()),
            strata_lsm::Error::InvalidArgument(m) => CliError::input(m),
            other => CliError::failure(other.to_string()),
        }
    }
}

fn one_line(s: String) -> String {
    if s.contains('\n') {
        s.split('\n')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("; ")
    } else {
        s
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> CliError {
        CliError::failure(format!("I/O error: {e}"))
    }
}
