//! Opening the on-disk engine (the striped LSM of `strata-lsm`).

use std::path::Path;
use std::sync::Arc;

use strata_lsm::Engine;

use crate::db::DbOptions;
use crate::error::{Error, Result};

/// Opens the striped LSM engine in `path`, striping on [`crate::keys::partitioner`].
pub(crate) fn open_engine(path: &Path, options: &DbOptions) -> Result<Arc<dyn Engine>> {
    let _ = options;
    Err(Error::Unsupported(format!(
        "{}: the on-disk engine (LsmEngine) is not available in this build",
        path.display()
    )))
}
