//! Opening the on-disk engine: the striped LSM of `strata-lsm`.

use std::path::Path;
use std::sync::Arc;

use strata_lsm::{Engine, LsmEngine, LsmOptions, SyncMode};

use crate::db::DbOptions;
use crate::error::Result;
use crate::keys;

fn lsm_options(options: &DbOptions) -> LsmOptions {
    LsmOptions {
        stripes: options.stripes,
        sync: if options.sync {
            SyncMode::Always
        } else {
            SyncMode::None
        },
        partitioner: Some(keys::partitioner()),
        block_cache_bytes: options.block_cache_bytes,
        memtable_budget_bytes: options.memtable_budget_bytes,
        ..LsmOptions::default()
    }
}

/// Opens the striped LSM engine in `path` for reading and writing, striping on
/// [`keys::partitioner`] (one partition = one stripe). The engine records that partitioner
/// when it creates the database and refuses a database recorded with another one (such as
/// one written by `strata kv`), so no key is ever re-filed.
pub(crate) fn open_engine(path: &Path, options: &DbOptions) -> Result<Arc<dyn Engine>> {
    Ok(Arc::new(LsmEngine::open(path, lsm_options(options))?))
}

/// Opens the existing engine in `path` read-only (see [`LsmEngine::open_read_only`]).
pub(crate) fn open_engine_read_only(path: &Path, options: &DbOptions) -> Result<Arc<dyn Engine>> {
    Ok(Arc::new(LsmEngine::open_read_only(
        path,
        lsm_options(options),
    )?))
}
