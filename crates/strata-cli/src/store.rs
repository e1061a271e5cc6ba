//! Where `kv`, `table` and `serve` find their data: a local directory (`--db DIR`) or a
//! remote engine (`--engine etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?…]`). The one place that
//! opens remote engines and databases, so that the subcommands stay the same for both.

use std::ops::Deref;
use std::path::{Path, PathBuf};

use strata::Db;
use strata_etcd::{EtcdEngine, EtcdOptions, ReadConsistency};
use strata_lsm::{Engine, LsmEngine};

use crate::CliError;

/// The data of one command.
#[derive(Debug, Clone)]
pub enum Store {
    /// A database directory (`--db DIR`).
    Dir(PathBuf),
    /// An etcd cluster and namespace (`--engine etcd://…`).
    Etcd(String),
}

/// The store named by the global options, if any (`--db` and `--engine` exclude each other).
pub fn from_args(db: Option<PathBuf>, engine: Option<String>) -> Result<Option<Store>, CliError> {
    match (db, engine) {
        (Some(_), Some(_)) => Err(CliError::input(
            "--db and --engine name two different databases: give one",
        )),
        (Some(d), None) => Ok(Some(Store::Dir(d))),
        (None, Some(url)) if url.starts_with("etcd://") => Ok(Some(Store::Etcd(url))),
        (None, Some(url)) => Err(CliError::input(format!(
            "--engine {url:?}: unknown engine (expected etcd://HOST:PORT[,HOST:PORT…]/PREFIX)"
        ))),
        (None, None) => Ok(None),
    }
}

impl Store {
    /// The directory, for commands that only make sense on files (`what` says which).
    pub fn dir(&self, what: &str) -> Result<&Path, CliError> {
        match self {
            Store::Dir(d) => Ok(d),
            Store::Etcd(_) => Err(on_files_only(what)),
        }
    }
}

fn on_files_only(what: &str) -> CliError {
    CliError::input(format!(
        "{what} works on a database directory; an etcd cluster checks and reports on itself \
         (etcdctl endpoint health / endpoint status; etcdctl snapshot save for backups)"
    ))
}

fn engine_error(e: strata_lsm::Error) -> CliError {
    CliError::engine(e)
}

/// Connects to the etcd cluster of `url`; says on stderr when reads may be stale.
pub fn open_etcd(url: &str) -> Result<EtcdEngine, CliError> {
    let options = EtcdOptions::from_url(url).map_err(engine_error)?;
    let serializable = options.reads == ReadConsistency::Serializable;
    let e = EtcdEngine::connect(options).map_err(engine_error)?;
    if serializable {
        crate::output::warn(
            "strata: note: reads=serializable: reads are answered by any one etcd member and \
             may be stale",
        );
    }
    Ok(e)
}

/// The database of a remote store (a directory is opened by the caller, with its options).
pub fn open_remote_db(url: &str) -> Result<Db, CliError> {
    let e = open_etcd(url)?;
    Db::with_engine(std::sync::Arc::new(e)).map_err(|e| CliError::failure(e.to_string()))
}

/// An engine opened by `kv`: the local LSM or etcd.
pub enum Opened {
    /// A database directory.
    Local(LsmEngine),
    /// An etcd cluster.
    Etcd(EtcdEngine),
}

impl Opened {
    /// The local engine, for commands that only make sense on files (`what` says which).
    pub fn local(&self, what: &str) -> Result<&LsmEngine, CliError> {
        match self {
            Opened::Local(e) => Ok(e),
            Opened::Etcd(_) => Err(on_files_only(what)),
        }
    }
}

impl Deref for Opened {
    type Target = dyn Engine;
    fn deref(&self) -> &(dyn Engine + 'static) {
        match self {
            Opened::Local(e) => e,
            Opened::Etcd(e) => e,
        }
    }
}
