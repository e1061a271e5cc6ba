//! `strata table` (being built: see its issue).

use clap::Args;

use crate::CliError;

/// Arguments of `strata table`.
#[derive(Args)]
pub struct TableArgs {
    /// Arguments (not yet parsed).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Runs `strata table`.
pub fn run(_args: TableArgs, _db: Option<std::path::PathBuf>) -> Result<u8, CliError> {
    Err(CliError::failure(
        "strata table is not available in this build yet",
    ))
}
