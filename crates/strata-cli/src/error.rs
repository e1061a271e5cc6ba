//! The one error type of the command line: a message (one line) and an exit code.

/// A failure to report: `message` goes to stderr as one line, `code` is the exit code.
#[derive(Debug)]
pub struct CliError {
    /// Exit code (2 for invalid input, 1 for other failures).
    pub code: u8,
    /// One line saying what is wrong and where.
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
