//! [`LsmEngine`]: the striped LSM (API placeholder; the engine lands in the next commits).

use std::path::Path;
use std::sync::Arc;

use crate::engine::{Engine, Snapshot, WriteBatch};
use crate::error::{Error, Result};
use crate::options::LsmOptions;

/// The striped LSM engine.
pub struct LsmEngine {
    _opts: LsmOptions,
}

impl LsmEngine {
    /// Opens (creating if needed) the database in directory `path`.
    pub fn open(_path: &Path, _options: LsmOptions) -> Result<LsmEngine> {
        Err(Error::InvalidArgument("LsmEngine is not implemented yet".into()))
    }
}

impl Engine for LsmEngine {
    fn get(&self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        Err(Error::Closed)
    }
    fn write(&self, _batch: WriteBatch) -> Result<()> {
        Err(Error::Closed)
    }
    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        Err(Error::Closed)
    }
    fn flush(&self) -> Result<()> {
        Err(Error::Closed)
    }
    fn compact(&self) -> Result<()> {
        Err(Error::Closed)
    }
    fn close(&self) -> Result<()> {
        Ok(())
    }
}
