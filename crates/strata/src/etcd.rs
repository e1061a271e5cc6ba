//! Opening a database on an etcd cluster (feature `etcd`): the same tables, queries and
//! batches over a replicated store. See `docs/etcd.md`.

use std::sync::Arc;

use strata_etcd::{EtcdEngine, EtcdOptions};

use crate::db::Db;
use crate::error::Result;

impl Db {
    /// Opens (or creates) the database named by
    /// `etcd://HOST:PORT[,HOST:PORT…]/PREFIX[?timeout=SECONDS&reads=serializable…]`: every key
    /// under `PREFIX:` on that cluster. Fails with a one-line error when the cluster does not
    /// answer within the timeout (default 5 s).
    pub fn open_etcd(url: &str) -> Result<Db> {
        Db::with_engine(Arc::new(EtcdEngine::open_url(url)?))
    }

    /// [`Db::open_etcd`] with options built in code.
    pub fn open_etcd_with(options: EtcdOptions) -> Result<Db> {
        Db::with_engine(Arc::new(EtcdEngine::connect(options)?))
    }
}
