//! `strata key` (being built: see its issue).

use clap::Args;

use crate::CliError;

/// Arguments of `strata key`.
#[derive(Args)]
pub struct KeyArgs {
    /// Arguments (not yet parsed).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Runs `strata key`.
pub fn run(_args: KeyArgs) -> Result<u8, CliError> {
    Err(CliError::failure(
        "strata key is not available in this build yet",
    ))
}
