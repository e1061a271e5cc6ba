//! `strata`: the command line of the Strata database. Thin: every subcommand parses its
//! arguments, calls the library and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod centidb;
mod error;
mod hyperdb;
mod key;
mod kv;
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

/// Restores the default action of SIGPIPE (terminate the process), which Rust's runtime sets
/// to "ignore" before `main`. Then output into a closed pipe (`strata kv scan | head -1`)
/// ends the process quietly — exit status 141 in a shell, like `cat` or `grep` — instead of
/// failing every later write with EPIPE (and panicking in `println!`). One mechanism for the
/// whole binary, whatever subcommand writes. Nothing is lost: a write is acknowledged only
/// after the engine has it (the same guarantee as under `kill -9`).
///
/// Not for commands that talk to a network peer (`--engine etcd://…`, `serve`): with the
/// default action, `kv load --resend-unknown` on etcd died of SIGPIPE when the test killed an
/// etcd member (`tests/etcd.rs`, seen twice; stdout was still read), most likely from a socket
/// write by `writev`, which, unlike `send` with `MSG_NOSIGNAL`, raises SIGPIPE when the peer is
/// gone; a client hanging up on `serve` is the same risk. Such a peer must fail (or retry) one
/// request, not kill the process. Those commands keep Rust's "ignore", and a closed stdout is an error.
fn default_sigpipe() {
    // SAFETY: `signal` with a valid signal number and `SIG_DFL` only changes this process's
    // disposition of SIGPIPE; it runs in `main` right after argument parsing, before any thread
    // is spawned, and touches no memory of ours. Tested by the `closed_pipe` tests (real processes).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout with success; usage errors are one line on
            // stderr and exit code 2.
            if !e.use_stderr() {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!(
                "strata: {} (see --help)",
                first.trim_start_matches("error: ")
            );
            return ExitCode::from(2);
        }
    };
    if cli.engine.is_none() && !matches!(cli.command, Command::Serve(_)) {
        default_sigpipe();
    }
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
            eprintln!("strata: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}
