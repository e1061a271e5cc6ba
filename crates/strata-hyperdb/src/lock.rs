//! One writer per database directory: an OS file lock (`flock`) on `DIR/source/key`, the one
//! file every hyperdb directory has (ours and the reference's), so that locking adds no file
//! and a read-only open writes nothing. Writers hold it exclusively, readers shared; a process
//! that cannot get it fails at once with [`Error::Locked`]. The OS releases the lock when the
//! process exits, however it exits.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::sleep::store::create_dir_durable;

/// A held lock; released when dropped.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

/// How a lock is taken.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum LockMode {
    /// Several readers at once, no writer.
    Shared,
    /// One writer, no reader.
    Exclusive,
}

/// The file whose lock stands for the database in `dir`.
pub(crate) fn lock_path(dir: &Path) -> PathBuf {
    dir.join("source").join("key")
}

/// Locks the database in `dir`; with `create`, makes `DIR/source/key` first (empty). Returns
/// the lock and the size of the key file when it was locked (0: no database yet).
pub(crate) fn lock_dir(dir: &Path, mode: LockMode, create: bool) -> Result<(DirLock, u64)> {
    let path = lock_path(dir);
    let file = if create {
        let source = dir.join("source");
        create_dir_durable(&source).map_err(|e| Error::io(&source, e))?;
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
    } else {
        File::open(&path)
    }
    .map_err(|e| Error::io(&path, e))?;
    let got = match mode {
        LockMode::Shared => file.try_lock_shared(),
        LockMode::Exclusive => file.try_lock(),
    };
    match got {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(Error::Locked {
                dir: dir.to_path_buf(),
            })
        }
        Err(TryLockError::Error(e)) => return Err(Error::io(&path, e)),
    }
    let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
    Ok((DirLock { _file: file }, len))
}
