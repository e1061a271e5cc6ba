//! Opening the on-disk engine: the striped LSM of `strata-lsm`.

use std::path::Path;
use std::sync::Arc;

use strata_lsm::{Engine, LsmEngine, LsmOptions, Partitioner, SyncMode};

use crate::db::DbOptions;
use crate::error::Result;
use crate::keys;

fn lsm_options(options: &DbOptions, partitioner: Partitioner) -> LsmOptions {
    LsmOptions {
        stripes: options.stripes,
        sync: if options.sync {
            SyncMode::Always
        } else {
            SyncMode::None
        },
        partitioner: Some(partitioner),
        block_cache_bytes: options.block_cache_bytes,
        memtable_budget_bytes: options.memtable_budget_bytes,
        mmap_reads: options.mmap_reads,
        ..LsmOptions::default()
    }
}

/// Opens with [`keys::partitioner`], or — for a database created before it, which records
/// (or, older still, was written with) [`keys::legacy_partitioner`] — with that one. Any
/// other recorded kind (such as a `strata kv` database's) is refused with the first error.
fn open_with(
    path: &Path,
    options: &DbOptions,
    open: impl Fn(&Path, LsmOptions) -> strata_lsm::Result<LsmEngine>,
) -> Result<Arc<dyn Engine>> {
    match open(path, lsm_options(options, keys::partitioner())) {
        Err(first @ strata_lsm::Error::PartitionerMismatch { .. }) => {
            match open(path, lsm_options(options, keys::legacy_partitioner())) {
                Ok(e) => Ok(Arc::new(e)),
                Err(strata_lsm::Error::PartitionerMismatch { .. }) => Err(first.into()),
                Err(e) => Err(e.into()),
            }
        }
        r => Ok(Arc::new(r?)),
    }
}

/// Opens the striped LSM engine in `path` for reading and writing, striping on
/// [`keys::partitioner`] (one partition = one stripe; see [`open_with`] for older
/// databases). The engine records that partitioner when it creates the database and refuses
/// a database recorded with another one (such as one written by `strata kv`), so no key is
/// ever re-filed.
pub(crate) fn open_engine(path: &Path, options: &DbOptions) -> Result<Arc<dyn Engine>> {
    open_with(path, options, LsmEngine::open)
}

/// Opens the existing engine in `path` read-only (see [`LsmEngine::open_read_only`]).
pub(crate) fn open_engine_read_only(path: &Path, options: &DbOptions) -> Result<Arc<dyn Engine>> {
    open_with(path, options, LsmEngine::open_read_only)
}
