//! `strata`: the command line of the Strata database. Thin: every subcommand parses its
//! arguments, calls the library and prints through [`output`], the one output path.

// Stdout and stderr only through `output` (a closed pipe is an error handled there, never a
// panic in `println!`); `tests/hygiene.rs` also checks the sources for `io::stdout`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod centidb;
mod error;
mod hyperdb;
mod key;
mod kv;
mod output;
mod serve;
mod store;
mod table;

use strata_cli::{lines, record};

pub use error::CliError;

/// Strata: typed tuple keys whose bytes keep their order.
#[derive(Parser)]
#[command(name = "strata", version, about)]
struct Cli {
    /// Database directory (for `kv`, `table` and `centidb`).
    #[arg(long, global = true)]
    db: Option<PathBuf>,
    /// The database on an etcd cluster instead of a directory (for `kv`, `table`, `serve`):
    /// `etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?timeout=SECONDS&reads=serializable]`.
    #[arg(long, global = true)]
    engine: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Encode, decode and stripe keys.
    Key(key::KeyArgs),
    /// Raw key-value access to a database directory.
    Kv(kv::KvArgs),
    /// Tables with typed partition and sort keys.
    Table(table::TableArgs),
    /// hyperdb (DEP-0004) databases.
    Hyperdb(hyperdb::HyperdbArgs),
    /// The centidb record store: collections, indexes, counters, batch compression.
    Centidb(centidb::CentidbArgs),
    /// A DynamoDB-compatible HTTP endpoint (AWS SDKs and CLI talk to it).
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout with success; usage errors are one line on
            // stderr and exit code 2.
            if !e.use_stderr() {
                return match e.print() {
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                        ExitCode::from(output::EXIT_CLOSED)
                    }
                    _ => ExitCode::SUCCESS,
                };
            }
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            output::warn(format_args!(
                "strata: {} (see --help)",
                first.trim_start_matches("error: ")
            ));
            return ExitCode::from(2);
        }
    };
    // SIGPIPE stays ignored (as Rust's runtime sets it before `main`) for every command: a
    // closed stdout, a client hanging up on `serve`, an etcd member going away are write errors
    // (EPIPE) handled where they happen; a closed stdout ends the command quietly with exit
    // code 141 (see `output`). The default action (terminate) once killed `strata serve` and
    // `kv load` on etcd from a socket write (`writev` raises SIGPIPE, unlike `send` with
    // `MSG_NOSIGNAL`), so it is not restored for any command.
    let result = store::from_args(cli.db, cli.engine).and_then(|store| match cli.command {
        Command::Key(a) => key::run(a),
        Command::Kv(a) => kv::run(a, store),
        Command::Table(a) => table::run(a, store),
        Command::Hyperdb(a) => hyperdb::run(a),
        Command::Centidb(a) => centidb::run(a, store),
        Command::Serve(a) => serve::run(a, store),
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // A closed stdout (`CliError::closed`) has no message: it ends quietly.
            if !e.message.is_empty() {
                output::warn(format_args!("strata: {}", e.message));
            }
            ExitCode::from(e.code)
        }
    }
}
