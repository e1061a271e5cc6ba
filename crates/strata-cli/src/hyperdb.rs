//! `strata hyperdb` (being built: see its issue).

use clap::Args;

use crate::CliError;

/// Arguments of `strata hyperdb`.
#[derive(Args)]
pub struct HyperdbArgs {
    /// Arguments (not yet parsed).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

/// Runs `strata hyperdb`.
pub fn run(_args: HyperdbArgs) -> Result<u8, CliError> {
    Err(CliError::failure(
        "strata hyperdb is not available in this build yet",
    ))
}
