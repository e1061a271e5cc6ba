//! [`FaultFs`]: a fault-injecting layer over the real file system, for tests (power loss,
//! failing syncs and writes, read-only and full disks).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{
    missing_dirs, parent_dir, FileSyncer, Fs, ReadableFile, RealFs, RealReadable, WritableFile,
};
use crate::lock::{DirLock, LockError, LockMode};
use crate::sync::lock;

/// What the fault layer knows of one file written through it.
#[derive(Debug, Clone, Default)]
struct FileState {
    /// Bytes made durable by a sync.
    synced: u64,
    /// Bytes appended (the length of the file as written through this layer).
    written: u64,
    /// In-place writes not yet synced, oldest first: offset and the bytes they replaced
    /// (a crash puts them back).
    replaced: Vec<(u64, Vec<u8>)>,
    /// The directory entry is durable (the directory was synced after creation).
    entry_durable: bool,
}

/// A rename that a crash may undo, each side separately: the destination's entry is durable
/// once its directory is synced, the source's removal once the source's directory is (the
/// same one for a rename within a directory; for a move into another directory both must be
/// synced, or a crash may leave the file under both names, or under none).
struct PendingRename {
    from: PathBuf,
    to: PathBuf,
    /// The renamed file (open, so its bytes stay readable) and its durable length.
    moved: File,
    moved_len: u64,
    /// What the destination held before (`None`: it did not exist).
    old_to: Option<Vec<u8>>,
    from_durable: bool,
    to_durable: bool,
}

/// The switches of a [`FaultFs`], shared with the files it hands out.
#[derive(Default)]
struct Faults {
    files: Mutex<HashMap<PathBuf, FileState>>,
    /// Renames not yet made durable by directory syncs, oldest first. A crash undoes them.
    renames: Mutex<Vec<PendingRename>>,
    /// Removals not yet made durable by a directory sync: the removed file (still open, so
    /// its bytes stay readable) and its durable length. A crash brings them back.
    removed: Mutex<HashMap<PathBuf, (File, u64)>>,
    /// Directories created through the layer whose entry no sync of their parent has made
    /// durable yet. A crash removes them with everything in them.
    new_dirs: Mutex<Vec<PathBuf>>,
    fail_sync: AtomicBool,
    write_budget: AtomicU64,
    budget_on: AtomicBool,
    ops_left: AtomicU64,
    ops_on: AtomicBool,
    read_only: AtomicBool,
    disk_full: AtomicBool,
    syncs: AtomicU64,
    mutations: AtomicU64,
    /// With a crash: bytes of the newest unsynced in-place write that reach the disk (0: none,
    /// the write is lost whole).
    tear: AtomicU64,
}

impl Faults {
    /// Called before every operation that changes the file system.
    fn mutate(&self, what: &str) -> io::Result<()> {
        if self.read_only.load(Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::ReadOnlyFilesystem,
                format!("injected fault: read-only file system ({what})"),
            ));
        }
        if self.ops_on.load(Ordering::SeqCst) {
            let left = self.ops_left.load(Ordering::SeqCst);
            if left == 0 {
                return Err(injected(what));
            }
            self.ops_left.store(left - 1, Ordering::SeqCst);
        }
        self.mutations.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn append(&self, len: usize) -> io::Result<()> {
        self.mutate("write failed")?;
        if self.disk_full.load(Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "injected fault: no space left on device",
            ));
        }
        if self.budget_on.load(Ordering::SeqCst) {
            let left = self.write_budget.load(Ordering::SeqCst);
            if (len as u64) > left {
                return Err(injected("write failed"));
            }
            self.write_budget.store(left - len as u64, Ordering::SeqCst);
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        if self.fail_sync.load(Ordering::SeqCst) {
            return Err(injected("fsync failed"));
        }
        self.mutate("fsync failed")
    }
}

/// A fault-injecting layer over [`RealFs`], modelled on LevelDB's fault-injection Env:
/// - [`FaultFs::crash`] drops every byte not protected by a sync (files are truncated to
///   their synced length; files whose directory entry was never synced disappear; renames
///   and removals not made durable by a directory sync are undone), as a power loss would;
/// - [`FaultFs::fail_syncs`] makes every later fsync fail (the engine must poison its
///   write path);
/// - [`FaultFs::fail_writes_after`] makes appends fail once a byte budget is spent;
/// - [`FaultFs::fail_after_ops`] makes every change (create, append, sync, rename, remove)
///   fail after a countdown;
/// - [`FaultFs::set_read_only`] and [`FaultFs::set_disk_full`] behave like a read-only
///   file system and a full disk;
/// - [`FaultFs::mutations`] counts the changes made (a read-only open must make none).
///
/// Truncation and bit flips of closed files are plain file edits done by the tests.
#[derive(Default)]
pub struct FaultFs {
    faults: Arc<Faults>,
}

impl FaultFs {
    /// A fault layer with no fault armed.
    pub fn new() -> FaultFs {
        FaultFs::default()
    }

    /// Number of successful file syncs so far (to observe group commit).
    pub fn syncs(&self) -> u64 {
        self.faults.syncs.load(Ordering::SeqCst)
    }

    /// Number of operations that changed the file system so far (creates, appends, syncs,
    /// renames, removes, directory creations and syncs, exclusive locks).
    pub fn mutations(&self) -> u64 {
        self.faults.mutations.load(Ordering::SeqCst)
    }

    /// From now on every fsync (file or directory) fails with an I/O error.
    pub fn fail_syncs(&self, on: bool) {
        self.faults.fail_sync.store(on, Ordering::SeqCst);
    }

    /// Appends fail once `bytes` more bytes have been appended.
    pub fn fail_writes_after(&self, bytes: u64) {
        self.faults.write_budget.store(bytes, Ordering::SeqCst);
        self.faults.budget_on.store(true, Ordering::SeqCst);
    }

    /// Every operation that changes the file system fails once `ops` more have succeeded
    /// (`None`: never).
    pub fn fail_after_ops(&self, ops: Option<u64>) {
        self.faults
            .ops_left
            .store(ops.unwrap_or(0), Ordering::SeqCst);
        self.faults.ops_on.store(ops.is_some(), Ordering::SeqCst);
    }

    /// Behaves like a read-only file system: every change fails with `EROFS`.
    pub fn set_read_only(&self, on: bool) {
        self.faults.read_only.store(on, Ordering::SeqCst);
    }

    /// Behaves like a full disk: every append fails with `ENOSPC`.
    pub fn set_disk_full(&self, on: bool) {
        self.faults.disk_full.store(on, Ordering::SeqCst);
    }

    /// Simulates a power loss: every file written through this layer loses its unsynced
    /// bytes, files whose directory entry was never made durable are removed (and directories
    /// created through the layer whose parent was not synced since, with all they hold), renames not
    /// made durable are undone (the destination holds what it held before) and files removed
    /// since their directory was last synced come back with their durable bytes (unless
    /// their name was taken again). Call it after the engine is dropped (or closed). Disarms
    /// every fault.
    pub fn crash(&self) -> io::Result<()> {
        let mut files = lock(&self.faults.files);
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
            restore(&f, st, self.faults.tear.load(Ordering::SeqCst))?;
        }
        files.clear();
        drop(files);
        // A rename that was not made durable is undone, newest first, each side whose
        // directory was not synced: the destination is back to what it held, the source
        // back with the file's durable bytes.
        let mut renames = std::mem::take(&mut *lock(&self.faults.renames));
        while let Some(r) = renames.pop() {
            if !r.to_durable {
                match r.old_to {
                    Some(bytes) => std::fs::write(&r.to, bytes)?,
                    None if r.to.exists() => std::fs::remove_file(&r.to)?,
                    None => {}
                }
            }
            if !r.from_durable && !r.from.exists() {
                use std::os::unix::fs::FileExt;
                let mut bytes = vec![0u8; r.moved_len as usize];
                r.moved.read_exact_at(&mut bytes, 0)?;
                std::fs::write(&r.from, bytes)?;
            }
        }
        for (path, (file, len)) in lock(&self.faults.removed).drain() {
            if path.exists() {
                continue;
            }
            use std::os::unix::fs::FileExt;
            let mut bytes = vec![0u8; len as usize];
            file.read_exact_at(&mut bytes, 0)?;
            std::fs::write(&path, bytes)?;
        }
        // Shallowest first: removing a directory takes the ones created under it.
        let mut dirs = std::mem::take(&mut *lock(&self.faults.new_dirs));
        dirs.sort_by_key(|d| d.components().count());
        for d in dirs {
            if d.exists() {
                std::fs::remove_dir_all(&d)?;
            }
        }
        self.disarm();
        Ok(())
    }

    /// Simulates a power loss after which the page cache had written back some of the unsynced
    /// pages: `keep(path, page)` says whether page `page` (bytes `page * PAGE ..`, `PAGE`)
    /// of `path` reached the disk with what was last written to it; the unsynced bytes of the
    /// other pages are lost (what they replaced comes back; past the durable length: zeros,
    /// and the file ends after its last kept page or at its durable length). So a later page
    /// may be kept while an earlier one is lost, as an OS crash can leave a file. Then as
    /// [`FaultFs::crash`] (unsynced directory changes undone, and so on).
    pub fn crash_keeping(&self, keep: &dyn Fn(&Path, u64) -> bool) -> io::Result<()> {
        let mut files = lock(&self.faults.files);
        for (path, st) in files.iter_mut() {
            if path.exists() && st.entry_durable {
                keep_pages(path, st, keep)?;
            }
        }
        drop(files);
        self.crash()
    }

    /// Makes the next [`FaultFs::crash`] a power loss in the middle of the newest unsynced
    /// in-place write: its first `bytes` bytes reach the disk, the rest does not (older
    /// unsynced writes are lost whole).
    pub fn tear_last_write(&self, bytes: u64) {
        self.faults.tear.store(bytes, Ordering::SeqCst);
    }

    /// Disarms every fault (the files keep their contents).
    pub fn disarm(&self) {
        let f = &self.faults;
        f.fail_sync.store(false, Ordering::SeqCst);
        f.budget_on.store(false, Ordering::SeqCst);
        f.ops_on.store(false, Ordering::SeqCst);
        f.read_only.store(false, Ordering::SeqCst);
        f.disk_full.store(false, Ordering::SeqCst);
        f.tear.store(0, Ordering::SeqCst);
    }

    /// Bytes appended to `path` but not yet synced (for tests).
    pub fn unsynced_bytes(&self, path: &Path) -> u64 {
        lock(&self.faults.files)
            .get(path)
            .map(|s| s.written - s.synced)
            .unwrap_or(0)
    }
}

/// The page size of [`FaultFs::crash_keeping`].
pub const PAGE: u64 = 4096;

/// Writes the bytes of `path` that a power loss keeping the pages `keep` says leaves, and
/// records them as durable in `st`.
fn keep_pages(
    path: &Path,
    st: &mut FileState,
    keep: &dyn Fn(&Path, u64) -> bool,
) -> io::Result<()> {
    let now = std::fs::read(path)?;
    let mut kept: HashMap<u64, bool> = HashMap::new();
    let mut kept_at = |i: u64| *kept.entry(i / PAGE).or_insert_with(|| keep(path, i / PAGE));
    let mut disk = now.clone();
    // In place below the durable length: a lost page gets back what the oldest unsynced
    // write replaced (newest first, so the oldest wins).
    for (off, old) in st.replaced.iter().rev() {
        for (j, &b) in old.iter().enumerate() {
            let i = off + j as u64;
            if i < st.synced && (i as usize) < disk.len() && !kept_at(i) {
                disk[i as usize] = b;
            }
        }
    }
    // Past it: a kept page's bytes, zeros in a lost one; the file ends after its last kept page.
    let durable = (st.synced as usize).min(now.len());
    let mut len = durable;
    for (i, b) in disk.iter_mut().enumerate().skip(durable) {
        if kept_at(i as u64) {
            len = (((i as u64 / PAGE) + 1) * PAGE).min(now.len() as u64) as usize;
        } else {
            *b = 0;
        }
    }
    disk.truncate(len);
    std::fs::write(path, &disk)?;
    st.synced = len as u64;
    st.written = len as u64;
    st.replaced.clear();
    Ok(())
}

/// Puts back what the unsynced in-place writes of a file replaced, newest first (bytes beyond
/// the synced length are already gone); the newest such write keeps its first `tear` bytes.
fn restore(f: &File, st: &FileState, tear: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    if st.replaced.is_empty() {
        return Ok(());
    }
    for (i, (off, old)) in st.replaced.iter().enumerate().rev() {
        let keep = if i + 1 == st.replaced.len() {
            (tear as usize).min(old.len())
        } else {
            0
        };
        let from = off + keep as u64;
        let end = (off + old.len() as u64).min(st.synced);
        if from < end {
            f.write_all_at(&old[keep..(end - off) as usize], from)?;
        }
    }
    f.sync_all()
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected fault: {what}"))
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    faults: Arc<Faults>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.faults.append(buf.len())?;
        self.inner.append(buf)?;
        if let Some(st) = lock(&self.faults.files).get_mut(&self.path) {
            st.written += buf.len() as u64;
        }
        Ok(())
    }
    fn write_at(&mut self, off: u64, buf: &[u8]) -> io::Result<()> {
        self.faults.append(buf.len())?;
        // What the write replaces within the file as written so far.
        let old = {
            let files = lock(&self.faults.files);
            let written = files.get(&self.path).map_or(0, |s| s.written);
            let end = (off + buf.len() as u64).min(written);
            let mut old = vec![0u8; end.saturating_sub(off) as usize];
            if !old.is_empty() {
                use std::os::unix::fs::FileExt;
                File::open(&self.path)?.read_exact_at(&mut old, off)?;
            }
            old
        };
        self.inner.write_at(off, buf)?;
        if let Some(st) = lock(&self.faults.files).get_mut(&self.path) {
            st.written = st.written.max(off + buf.len() as u64);
            st.replaced.push((off, old));
        }
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.faults.sync()?;
        self.inner.sync()?;
        self.faults.syncs.fetch_add(1, Ordering::SeqCst);
        if let Some(st) = lock(&self.faults.files).get_mut(&self.path) {
            st.synced = st.written;
            st.replaced.clear();
        }
        Ok(())
    }
    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>> {
        Ok(Arc::new(FaultSyncer {
            inner: self.inner.syncer()?,
            path: self.path.clone(),
            faults: Arc::clone(&self.faults),
        }))
    }
}

struct FaultSyncer {
    inner: Arc<dyn FileSyncer>,
    path: PathBuf,
    faults: Arc<Faults>,
}

impl FileSyncer for FaultSyncer {
    fn sync(&self) -> io::Result<()> {
        self.faults.sync()?;
        // What was written before the call is covered: the file length and the in-place
        // writes made so far.
        let covered = lock(&self.faults.files)
            .get(&self.path)
            .map(|s| (s.written, s.replaced.len()));
        self.inner.sync()?;
        self.faults.syncs.fetch_add(1, Ordering::SeqCst);
        if let (Some((w, n)), Some(st)) = (covered, lock(&self.faults.files).get_mut(&self.path)) {
            st.synced = st.synced.max(w);
            let n = n.min(st.replaced.len());
            st.replaced.drain(..n);
        }
        Ok(())
    }
}

impl Fs for FaultFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.faults.mutate("create failed")?;
        let inner = RealFs.create(path)?;
        lock(&self.faults.files).insert(path.to_path_buf(), FileState::default());
        Ok(Box::new(FaultWritable {
            inner,
            path: path.to_path_buf(),
            faults: Arc::clone(&self.faults),
        }))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        // Never mapped: `crash` truncates files to what was synced, under open readers.
        Ok(Arc::new(RealReadable::open(path, false)?))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealFs.read(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.faults.mutate("rename failed")?;
        let old_to = std::fs::read(to).ok();
        let moved = File::open(from)?;
        let mut files = lock(&self.faults.files);
        // The bytes the source holds after a crash (a file this layer did not write is durable).
        let moved_len = match files.get(from) {
            Some(st) => st.synced,
            None => moved.metadata()?.len(),
        };
        let from_entry_durable = files.get(from).is_none_or(|st| st.entry_durable);
        RealFs.rename(from, to)?;
        if let Some(mut st) = files.remove(from) {
            st.entry_durable = false;
            files.insert(to.to_path_buf(), st);
        }
        drop(files);
        lock(&self.faults.renames).push(PendingRename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            moved,
            moved_len,
            old_to,
            // A source whose own entry was never durable does not come back.
            from_durable: !from_entry_durable,
            to_durable: false,
        });
        Ok(())
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.faults.mutate("remove failed")?;
        // What a crash before the next directory sync brings back: the durable bytes of a
        // file whose entry is durable (a file this layer did not create is taken as durable).
        let durable = match lock(&self.faults.files).get(path) {
            Some(st) => st.entry_durable.then_some(st.synced),
            None => Some(std::fs::metadata(path)?.len()),
        };
        let keep = match durable {
            Some(len) => Some((File::open(path)?, len)),
            None => None,
        };
        RealFs.remove(path)?;
        lock(&self.faults.files).remove(path);
        if let Some(keep) = keep {
            lock(&self.faults.removed)
                .entry(path.to_path_buf())
                .or_insert(keep);
        }
        Ok(())
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        RealFs.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.faults.sync()?;
        RealFs.sync_dir(dir)?;
        lock(&self.faults.renames).retain_mut(|r| {
            r.to_durable |= r.to.parent() == Some(dir);
            r.from_durable |= r.from.parent() == Some(dir);
            !(r.to_durable && r.from_durable)
        });
        lock(&self.faults.removed).retain(|p, _| p.parent() != Some(dir));
        lock(&self.faults.new_dirs).retain(|d| parent_dir(d) != dir);
        for (path, st) in lock(&self.faults.files).iter_mut() {
            if path.parent() == Some(dir) {
                st.entry_durable = true;
            }
        }
        Ok(())
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        if dir.is_dir() && self.faults.read_only.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.faults.mutate("mkdir failed")?;
        let missing: Vec<PathBuf> = missing_dirs(dir)
            .into_iter()
            .map(Path::to_path_buf)
            .collect();
        RealFs.create_dir_all(dir)?;
        lock(&self.faults.new_dirs).extend(missing);
        Ok(())
    }
    fn lock_dir(&self, dir: &Path, mode: LockMode) -> Result<DirLock, LockError> {
        if mode == LockMode::Exclusive {
            self.faults
                .mutate("lock failed")
                .map_err(|e| LockError::Io(dir.join(crate::filename::LOCK), e))?;
        }
        DirLock::acquire(dir, mode)
    }
}
