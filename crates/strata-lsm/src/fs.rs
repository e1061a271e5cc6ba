//! The file operations the engine uses, behind a trait so that tests can inject faults
//! ([`FaultFs`]): every byte the engine reads or writes goes through an [`Fs`].
//!
//! All files of the engine are written once, append-only, then only read: that is what makes
//! "drop what was not synced" a simple truncation.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

/// A file being written: append-only.
pub trait WritableFile: Send {
    /// Appends `buf` (to the OS buffers; not durable until [`WritableFile::sync`]).
    fn append(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// A handle that syncs this file from another thread while appends continue (group
    /// commit): it makes durable at least what was appended before the call.
    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>>;
}

/// Syncs a file from another thread (see [`WritableFile::syncer`]).
pub trait FileSyncer: Send + Sync {
    /// Makes durable everything appended before this call.
    fn sync(&self) -> io::Result<()>;
}

/// A file opened for positional reads.
pub trait ReadableFile: Send + Sync {
    /// Fills `buf` from offset `off`; an error if the file is shorter.
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()>;
    /// Length of the file in bytes.
    fn len(&self) -> u64;
    /// True when the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The file system under the engine.
pub trait Fs: Send + Sync {
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Opens a file for positional reads.
    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>>;
    /// Reads a whole (small) file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Renames a file (atomic on POSIX; durable once the directory is synced).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Names of the entries of a directory.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealWritable(File);

impl WritableFile for RealWritable {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>> {
        Ok(Arc::new(RealSyncer(self.0.try_clone()?)))
    }
}

struct RealSyncer(File);

impl FileSyncer for RealSyncer {
    fn sync(&self) -> io::Result<()> {
        self.0.sync_data()
    }
}

struct RealReadable {
    file: File,
    len: u64,
}

impl ReadableFile for RealReadable {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.read_exact_at(buf, off)
    }
    fn len(&self) -> u64 {
        self.len
    }
}

impl Fs for RealFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(RealWritable(f)))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(Arc::new(RealReadable { file, len }))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for e in std::fs::read_dir(dir)? {
            names.push(e?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
}

/// What the fault layer knows of one file written through it.
#[derive(Debug, Clone, Copy, Default)]
struct FileState {
    /// Bytes made durable by a sync.
    synced: u64,
    /// Bytes appended.
    written: u64,
    /// The directory entry is durable (the directory was synced after creation).
    entry_durable: bool,
}

/// A fault-injecting layer over [`RealFs`], modelled on LevelDB's fault-injection Env:
/// - [`FaultFs::crash`] drops every byte not protected by a sync (files are truncated to
///   their synced length; files whose directory entry was never synced disappear), as a power
///   loss would;
/// - [`FaultFs::fail_syncs`] makes every later fsync fail (the engine must poison its
///   write path);
/// - [`FaultFs::fail_writes_after`] makes appends fail once a byte budget is spent.
///
/// Truncation and bit flips of closed files are plain file edits done by the tests.
#[derive(Default)]
pub struct FaultFs {
    files: Arc<Mutex<HashMap<PathBuf, FileState>>>,
    fail_sync: Arc<AtomicBool>,
    write_budget: Arc<AtomicU64>,
    budget_on: Arc<AtomicBool>,
    syncs: Arc<AtomicU64>,
}

impl FaultFs {
    /// Number of successful file syncs so far (to observe group commit).
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::SeqCst)
    }

    /// A fault layer with no fault armed.
    pub fn new() -> FaultFs {
        FaultFs::default()
    }

    /// From now on every fsync (file or directory) fails with an I/O error.
    pub fn fail_syncs(&self, on: bool) {
        self.fail_sync.store(on, Ordering::SeqCst);
    }

    /// Appends fail once `bytes` more bytes have been appended.
    pub fn fail_writes_after(&self, bytes: u64) {
        self.write_budget.store(bytes, Ordering::SeqCst);
        self.budget_on.store(true, Ordering::SeqCst);
    }

    /// Simulates a power loss: every file written through this layer loses its unsynced
    /// bytes, and files whose directory entry was never made durable are removed. Call it
    /// after the engine is dropped (or closed).
    pub fn crash(&self) -> io::Result<()> {
        let mut files = lock(&self.files);
        for (path, st) in files.iter() {
            if !path.exists() {
                continue;
            }
            if !st.entry_durable {
                std::fs::remove_file(path)?;
                continue;
            }
            let f = OpenOptions::new().write(true).open(path)?;
            f.set_len(st.synced)?;
        }
        files.clear();
        self.fail_sync.store(false, Ordering::SeqCst);
        self.budget_on.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// Bytes appended to `path` but not yet synced (for tests).
    pub fn unsynced_bytes(&self, path: &Path) -> u64 {
        lock(&self.files)
            .get(path)
            .map(|s| s.written - s.synced)
            .unwrap_or(0)
    }
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected fault: {what}"))
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    files: Arc<Mutex<HashMap<PathBuf, FileState>>>,
    fail_sync: Arc<AtomicBool>,
    write_budget: Arc<AtomicU64>,
    budget_on: Arc<AtomicBool>,
    syncs: Arc<AtomicU64>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.budget_on.load(Ordering::SeqCst) {
            let left = self.write_budget.load(Ordering::SeqCst);
            if (buf.len() as u64) > left {
                return Err(injected("write failed"));
            }
            self.write_budget
                .store(left - buf.len() as u64, Ordering::SeqCst);
        }
        self.inner.append(buf)?;
        if let Some(st) = lock(&self.files).get_mut(&self.path) {
            st.written += buf.len() as u64;
        }
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        if self.fail_sync.load(Ordering::SeqCst) {
            return Err(injected("fsync failed"));
        }
        self.inner.sync()?;
        self.syncs.fetch_add(1, Ordering::SeqCst);
        if let Some(st) = lock(&self.files).get_mut(&self.path) {
            st.synced = st.written;
        }
        Ok(())
    }
    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>> {
        Ok(Arc::new(FaultSyncer {
            inner: self.inner.syncer()?,
            path: self.path.clone(),
            files: Arc::clone(&self.files),
            fail_sync: Arc::clone(&self.fail_sync),
            syncs: Arc::clone(&self.syncs),
        }))
    }
}

struct FaultSyncer {
    inner: Arc<dyn FileSyncer>,
    path: PathBuf,
    files: Arc<Mutex<HashMap<PathBuf, FileState>>>,
    fail_sync: Arc<AtomicBool>,
    syncs: Arc<AtomicU64>,
}

impl FileSyncer for FaultSyncer {
    fn sync(&self) -> io::Result<()> {
        if self.fail_sync.load(Ordering::SeqCst) {
            return Err(injected("fsync failed"));
        }
        let written = lock(&self.files).get(&self.path).map(|s| s.written);
        self.inner.sync()?;
        self.syncs.fetch_add(1, Ordering::SeqCst);
        if let (Some(w), Some(st)) = (written, lock(&self.files).get_mut(&self.path)) {
            st.synced = st.synced.max(w);
        }
        Ok(())
    }
}

impl Fs for FaultFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let inner = RealFs.create(path)?;
        lock(&self.files).insert(path.to_path_buf(), FileState::default());
        Ok(Box::new(FaultWritable {
            inner,
            path: path.to_path_buf(),
            files: Arc::clone(&self.files),
            fail_sync: Arc::clone(&self.fail_sync),
            write_budget: Arc::clone(&self.write_budget),
            budget_on: Arc::clone(&self.budget_on),
            syncs: Arc::clone(&self.syncs),
        }))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        RealFs.open(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealFs.read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealFs.rename(from, to)?;
        let mut files = lock(&self.files);
        if let Some(mut st) = files.remove(from) {
            st.entry_durable = false;
            files.insert(to.to_path_buf(), st);
        }
        Ok(())
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        RealFs.remove(path)?;
        lock(&self.files).remove(path);
        Ok(())
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        RealFs.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.fail_sync.load(Ordering::SeqCst) {
            return Err(injected("directory fsync failed"));
        }
        RealFs.sync_dir(dir)?;
        for (path, st) in lock(&self.files).iter_mut() {
            if path.parent() == Some(dir) {
                st.entry_durable = true;
            }
        }
        Ok(())
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        RealFs.create_dir_all(dir)
    }
}
