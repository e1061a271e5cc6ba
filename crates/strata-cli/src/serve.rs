//! `strata serve`: a DynamoDB-compatible HTTP endpoint on a database directory (or in memory).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};

use strata::{Db, DbOptions};
use strata_dynamo::Dynamo;
use strata_server::{Credentials, Server, ServerConfig};

use crate::output::{warn, Out};
use crate::store::Store;
use crate::CliError;

/// The data directory used when neither `--db` nor `--memory` is given.
pub const DEFAULT_DIR: &str = "strata-data";

/// Arguments of `strata serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0: any free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:8000")]
    listen: SocketAddr,
    /// Keep everything in memory (nothing is written; all is lost at exit).
    #[arg(long, conflicts_with = "db")]
    memory: bool,
    /// When a write is acknowledged: `always` = after fsync (default), `none` = in the OS
    /// buffers (survives a crash of the process, not of the machine).
    #[arg(long, value_enum, default_value_t = SyncArg::Always)]
    sync: SyncArg,
    /// Require SigV4 signatures made with this access key id (the secret comes from
    /// `--secret-access-key-file` or the STRATA_SECRET_ACCESS_KEY environment variable).
    /// Without it, any signature is accepted.
    #[arg(long)]
    access_key_id: Option<String>,
    /// File holding the secret access key (one line) for `--access-key-id`.
    #[arg(long, requires = "access_key_id")]
    secret_access_key_file: Option<PathBuf>,
    /// Largest request body accepted, in bytes (larger ones get HTTP 413).
    #[arg(long, default_value_t = strata_server::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// API calls run at once (the rest wait).
    #[arg(long, default_value_t = 64)]
    max_concurrent_calls: usize,
    /// Seconds shutdown waits for open requests before dropping their connections.
    #[arg(long, default_value_t = 30)]
    shutdown_grace_secs: u64,
    /// Read SST blocks with `pread` only, never through memory maps: a failing disk then
    /// fails the requests that touch it with an error, instead of killing the server with
    /// SIGBUS (mapped reads, the default, cost less CPU per uncached point read).
    #[arg(long)]
    no_mmap_reads: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum SyncArg {
    /// fsync before acknowledging (shared by concurrent writers).
    Always,
    /// Leave data in the OS buffers.
    None,
}

fn credentials(a: &ServeArgs) -> Result<Option<Credentials>, CliError> {
    let Some(id) = &a.access_key_id else {
        return Ok(None);
    };
    let secret = match &a.secret_access_key_file {
        Some(f) => std::fs::read_to_string(f)
            .map_err(|e| CliError::input(format!("cannot read {}: {e}", f.display())))?
            .trim()
            .to_string(),
        None => std::env::var("STRATA_SECRET_ACCESS_KEY").map_err(|_| {
            CliError::input(
                "--access-key-id needs --secret-access-key-file or STRATA_SECRET_ACCESS_KEY",
            )
        })?,
    };
    if id.is_empty() || id.contains('/') || secret.is_empty() {
        return Err(CliError::input(
            "the access key id must be non-empty without '/', and the secret non-empty",
        ));
    }
    Ok(Some(Credentials {
        access_key_id: id.clone(),
        secret_access_key: secret,
    }))
}

fn open_db(a: &ServeArgs, store: Option<&Store>) -> Result<(Db, String), CliError> {
    let dir = match store {
        Some(Store::Etcd(url)) if !a.memory => {
            return Ok((crate::store::open_remote_db(url)?, "on etcd".into()))
        }
        Some(Store::Dir(d)) => Some(d.as_path()),
        _ => None,
    };
    if a.memory {
        let db = Db::memory().map_err(|e| CliError::failure(e.to_string()))?;
        return Ok((db, "in memory".into()));
    }
    let dir = dir.unwrap_or(Path::new(DEFAULT_DIR));
    let options = DbOptions {
        sync: matches!(a.sync, SyncArg::Always),
        mmap_reads: !a.no_mmap_reads,
        ..DbOptions::default()
    };
    let db = Db::open_with(dir, options).map_err(|e| {
        let message = format!("cannot open {}: {e}", dir.display());
        match e {
            // Another process has the directory: exit code 3, as for `kv` and `table`.
            strata::Error::Engine(strata_lsm::Error::Locked { .. }) => CliError::locked(message),
            _ => CliError::failure(message),
        }
    })?;
    Ok((db, dir.display().to_string()))
}

/// Runs `strata serve` until SIGINT/SIGTERM; then finishes in-flight requests and closes the
/// database.
pub fn run(a: ServeArgs, store: Option<Store>) -> Result<u8, CliError> {
    let config = ServerConfig {
        max_body_bytes: a.max_body_bytes,
        credentials: credentials(&a)?,
        max_concurrent_calls: a.max_concurrent_calls,
        shutdown_grace: Duration::from_secs(a.shutdown_grace_secs),
        ..ServerConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strata-serve")
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the runtime: {e}")))?;
    let (db, where_) = open_db(&a, store.as_ref())?;
    let dynamo = Dynamo::new(db);
    let auth = if config.credentials.is_some() {
        "SigV4 signatures verified"
    } else {
        "any signature accepted"
    };
    let served = runtime.block_on(async {
        let server = Server::bind(a.listen, dynamo.clone(), config).await?;
        let addr = server.local_addr()?;
        // One line on stdout that scripts can wait for. The server's job is its socket: with
        // stdout closed (nobody waits for the line) it keeps serving, and says so on stderr.
        let mut out = Out::stdout();
        let banner = out
            .line(format_args!(
                "strata serve: listening on http://{addr} ({where_}; {auth})"
            ))
            .and_then(|()| out.flush());
        drop(out);
        if banner.is_err() {
            warn(format_args!(
                "strata serve: listening on http://{addr} (stdout is closed)"
            ));
        }
        let report = server.run(strata_server::shutdown_signal()).await?;
        Ok::<_, strata_server::ServerError>(report)
    });
    // Every call has returned: close the database whatever happened to the listener.
    let closed = dynamo.db().close();
    let report = served.map_err(|e| CliError::failure(e.to_string()))?;
    closed.map_err(|e| CliError::failure(format!("closing the database: {e}")))?;
    if report.connections_dropped {
        warn("strata serve: stopped (connections still busy after the grace period were dropped)");
    } else {
        warn("strata serve: stopped");
    }
    Ok(0)
}
