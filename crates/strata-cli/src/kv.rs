//! `strata kv` (being built: see its issue).

use clap::Args;

use crate::CliError;

/// Arguments of `strata kv`.
#[derive(Args)]
pub struct KvArgs {
    /// Arguments (not yet parsed).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Runs `strata kv`.
pub fn run(_args: KvArgs, _db: Option<std::path::PathBuf>) -> Result<u8, CliError> {
    Err(CliError::failure(
        "strata kv is not available in this build yet",
    ))
}
