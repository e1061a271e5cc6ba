//! Opening the on-disk engine: the striped LSM of `strata-lsm`.

use std::path::Path;
use std::sync::Arc;

use strata_lsm::{Engine, LsmEngine, LsmOptions, SyncMode};

use crate::db::DbOptions;
use crate::error::Result;
use crate::keys;

/// Opens the striped LSM engine in `path`, striping on [`keys::partitioner`] (one partition =
/// one stripe).
pub(crate) fn open_engine(path: &Path, options: &DbOptions) -> Result<Arc<dyn Engine>> {
    let lsm = LsmOptions {
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
    };
    Ok(Arc::new(LsmEngine::open(path, lsm)?))
}
