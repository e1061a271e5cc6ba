//! Random-access files: on disk, or in memory for tests and benchmarks.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// One random-access file of a feed.
pub trait RandomAccess: Send {
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Writes `data` at `offset`, growing the file (with zeros) as needed.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// True when the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Flushes to durable storage (a no-op in memory).
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Reads the whole file.
    fn read_all(&self) -> io::Result<Vec<u8>> {
        let n = usize::try_from(self.len()?).map_err(|_| io::Error::other("file too large"))?;
        let mut buf = vec![0u8; n];
        self.read_at(0, &mut buf)?;
        Ok(buf)
    }
}

/// A file in memory.
#[derive(Clone, Debug, Default)]
pub struct MemFile {
    /// The bytes.
    pub bytes: Vec<u8>,
}

impl RandomAccess for MemFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let end = start
            .checked_add(buf.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        let src = self
            .bytes
            .get(start..end)
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::Error::other("offset too large"))?;
        let end = start + data.len();
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        self.bytes[start..end].copy_from_slice(data);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.bytes.len() as u64)
    }
}

/// A file on disk.
///
/// Durability: [`RandomAccess::sync`] makes the file's writes durable and, the first time
/// after an open that created it, the file's name too (a sync of its directory: syncing a
/// file does not make its directory entry durable). Directories the open created are made
/// durable at once ([`create_dir_durable`]).
#[derive(Debug)]
pub struct DiskFile {
    file: File,
    path: PathBuf,
    /// Written since the last sync (true after an open: what an earlier process wrote may
    /// not be durable yet).
    dirty: bool,
    /// The directory to sync at the next sync: the file's, after an open that may have
    /// created it.
    entry_pending: Option<PathBuf>,
}

impl DiskFile {
    /// Opens `path`, creating it (and its directory) when `create`. A file named
    /// `secret_key` is created with mode 0600 (only its owner may read it).
    pub fn open(path: &Path, create: bool, writable: bool) -> io::Result<DiskFile> {
        let dir = parent_dir(path);
        if create {
            create_dir_durable(dir)?;
        }
        let mut options = OpenOptions::new();
        options
            .read(true)
            .write(writable)
            .create(create)
            .truncate(false);
        if path.file_name().is_some_and(|n| n == "secret_key") {
            options.mode(0o600);
        }
        let file = options.open(path)?;
        Ok(DiskFile {
            file,
            path: path.to_path_buf(),
            dirty: writable,
            entry_pending: create.then(|| dir.to_path_buf()),
        })
    }

    /// The path of the file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl RandomAccess for DiskFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.dirty = true;
        self.file.write_all_at(data, offset)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn sync(&mut self) -> io::Result<()> {
        if self.dirty {
            #[cfg(test)]
            dir_syncs::record_file(&self.path);
            self.file.sync_data()?;
            self.dirty = false;
        }
        if let Some(dir) = &self.entry_pending {
            sync_dir(dir)?;
            self.entry_pending = None;
        }
        Ok(())
    }
}

/// The directory holding `path`'s entry (`.` for a bare relative name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Creates `dir` and its missing ancestors and makes their names durable (a sync of each
/// created directory's parent) before anything is written in them. An existing directory
/// costs nothing. (strata-lsm's open applies the same rule through its `Fs` layer,
/// `create_durable_dir` in `lsm/recover.rs`; this crate does not depend on strata-lsm.)
pub(crate) fn create_dir_durable(dir: &Path) -> io::Result<()> {
    let mut created = Vec::new();
    let mut d = dir;
    while !d.exists() {
        created.push(d);
        match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => d = p,
            _ => break,
        }
    }
    std::fs::create_dir_all(dir)?;
    for c in created {
        sync_dir(parent_dir(c))?;
    }
    Ok(())
}

/// Makes the entries (creations, renames, removals) of `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(test)]
    dir_syncs::record(dir);
    File::open(dir)?.sync_all()
}

/// The six files of one feed, by their SLEEP names.
pub struct FeedFiles {
    /// `key`: the 32-byte public key.
    pub key: Box<dyn RandomAccess>,
    /// `secret_key`: the 64-byte secret key, or empty.
    pub secret_key: Box<dyn RandomAccess>,
    /// `tree`: merkle nodes.
    pub tree: Box<dyn RandomAccess>,
    /// `data`: the blocks.
    pub data: Box<dyn RandomAccess>,
    /// `bitfield`: presence bits.
    pub bitfield: Box<dyn RandomAccess>,
    /// `signatures`: Ed25519 signatures.
    pub signatures: Box<dyn RandomAccess>,
}

/// The six SLEEP file names, in the order hypercore opens them.
pub const FILE_NAMES: [&str; 6] = [
    "key",
    "secret_key",
    "tree",
    "data",
    "bitfield",
    "signatures",
];

impl FeedFiles {
    /// Six empty in-memory files.
    pub fn memory() -> FeedFiles {
        FeedFiles {
            key: Box::new(MemFile::default()),
            secret_key: Box::new(MemFile::default()),
            tree: Box::new(MemFile::default()),
            data: Box::new(MemFile::default()),
            bitfield: Box::new(MemFile::default()),
            signatures: Box::new(MemFile::default()),
        }
    }

    /// The six files in directory `dir` (created when `create`).
    pub fn disk(dir: &Path, create: bool, writable: bool) -> io::Result<FeedFiles> {
        let f = |name: &str| -> io::Result<Box<dyn RandomAccess>> {
            Ok(Box::new(DiskFile::open(&dir.join(name), create, writable)?))
        };
        Ok(FeedFiles {
            key: f("key")?,
            secret_key: f("secret_key")?,
            tree: f("tree")?,
            data: f("data")?,
            bitfield: f("bitfield")?,
            signatures: f("signatures")?,
        })
    }

    /// The file called `name` (one of [`FILE_NAMES`]).
    pub fn by_name(&self, name: &str) -> Option<&dyn RandomAccess> {
        Some(match name {
            "key" => self.key.as_ref(),
            "secret_key" => self.secret_key.as_ref(),
            "tree" => self.tree.as_ref(),
            "data" => self.data.as_ref(),
            "bitfield" => self.bitfield.as_ref(),
            "signatures" => self.signatures.as_ref(),
            _ => return None,
        })
    }
}

/// The directories (and files) synced by this thread, for tests.
#[cfg(test)]
pub(crate) mod dir_syncs {
    use std::cell::RefCell;
    use std::path::{Path, PathBuf};

    thread_local! {
        static SYNCED: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) };
    }

    pub(crate) fn record(dir: &Path) {
        SYNCED.with(|s| s.borrow_mut().push(dir.to_path_buf()));
    }

    /// The directories synced since the last call, in order.
    pub(crate) fn take() -> Vec<PathBuf> {
        SYNCED.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }

    thread_local! {
        static FILES: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) };
    }

    pub(crate) fn record_file(path: &Path) {
        FILES.with(|s| s.borrow_mut().push(path.to_path_buf()));
    }

    /// The files whose data was synced since the last call, in order.
    pub(crate) fn take_files() -> Vec<PathBuf> {
        FILES.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }
}
