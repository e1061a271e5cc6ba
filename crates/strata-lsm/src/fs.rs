//! The file operations the engine uses, behind a trait so that tests can inject faults
//! ([`FaultFs`]): every byte the engine reads or writes goes through an [`Fs`].
//!
//! Files of the engine are written once, then only read. Most are append-only; a WAL of
//! version 2 is first extended with zeros and then written in place
//! ([`WritableFile::write_at`]), so "drop what was not synced" is a truncation plus, for
//! in-place writes, putting back the bytes they replaced.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use crate::lock::{DirLock, LockError, LockMode};

mod fault;
pub use fault::FaultFs;

/// A file being written: append-only.
pub trait WritableFile: Send {
    /// Appends `buf` (to the OS buffers; not durable until [`WritableFile::sync`]).
    fn append(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Writes `buf` at offset `off` (in place, or extending the file), leaving the append
    /// position where it is; not durable until [`WritableFile::sync`].
    fn write_at(&mut self, off: u64, buf: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// A handle that syncs this file from another thread while appends continue (group
    /// commit): it makes durable at least what was appended before the call.
    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>>;
    /// Starts writing the `len` bytes at `off` (already appended) to the device, without
    /// waiting and without making them durable ([`WritableFile::sync`] still must run): so
    /// that a large file reaches the device while it is written, not in one burst at its
    /// sync. Default: nothing (a hint).
    fn start_writeback(&mut self, off: u64, len: u64) -> io::Result<()> {
        let _ = (off, len);
        Ok(())
    }
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
    /// Reads exactly `len` bytes from offset `off` into a new buffer of that length (an
    /// error if the file is shorter). The real file reads into the buffer's uninitialised
    /// capacity (no zeroing pass over a block that is about to be overwritten).
    fn read_vec_at(&self, len: usize, off: u64) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_at(&mut buf, off)?;
        Ok(buf)
    }
    /// Length of the file in bytes.
    fn len(&self) -> u64;
    /// True when the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The same file, read through a memory map: its reads copy from the OS page cache
    /// without a system call. `None` when this file is not mapped (the default, an empty
    /// file, a failed `mmap`, a [`FaultFs`] file): read it as before.
    ///
    /// Only for files that are never written or truncated again (finished SSTs): truncating
    /// a mapped file under a reader makes the reader's next access to the lost pages fault
    /// (`SIGBUS`), and so does a device error while the kernel reads a mapped page in (where
    /// `pread` would return `EIO`). Removing (unlinking) the file is safe: the mapping keeps
    /// its pages.
    fn map(&self) -> Option<Arc<dyn ReadableFile>> {
        None
    }
    /// The whole file in place, when this is a memory map ([`ReadableFile::map`]): a reader
    /// may search bytes it has checked before without copying them. `None` by default.
    fn mapped_bytes(&self) -> Option<&[u8]> {
        None
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
    /// Creates a directory and its parents. Their entries are durable only once each new
    /// directory's parent is synced ([`Fs::sync_dir`]).
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Takes the lock of a database directory without waiting (see [`crate::lock`]).
    fn lock_dir(&self, dir: &Path, mode: LockMode) -> Result<DirLock, LockError> {
        DirLock::acquire(dir, mode)
    }
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealWritable(File);

impl WritableFile for RealWritable {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }
    fn write_at(&mut self, off: u64, buf: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.0.write_all_at(buf, off)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn syncer(&self) -> io::Result<Arc<dyn FileSyncer>> {
        Ok(Arc::new(RealSyncer(self.0.try_clone()?)))
    }
    #[cfg(target_os = "linux")]
    fn start_writeback(&mut self, off: u64, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let (Ok(off), Ok(len)) = (libc::off64_t::try_from(off), libc::off64_t::try_from(len))
        else {
            return Ok(());
        };
        // SAFETY: `sync_file_range` only reads its integer arguments; the descriptor is
        // this open file's, alive for the call. SYNC_FILE_RANGE_WRITE starts writeback of
        // the range's dirty pages and returns without waiting for it.
        let r = unsafe {
            libc::sync_file_range(self.0.as_raw_fd(), off, len, libc::SYNC_FILE_RANGE_WRITE)
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
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
    /// Whether [`ReadableFile::map`] may map the file (not under [`FaultFs`], whose crash
    /// simulation truncates files that readers may still hold).
    mappable: bool,
}

impl RealReadable {
    /// `path` opened for positional reads; `mappable`: whether [`ReadableFile::map`] may map it.
    fn open(path: &Path, mappable: bool) -> io::Result<RealReadable> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(RealReadable {
            file,
            len,
            mappable,
        })
    }
}

impl ReadableFile for RealReadable {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.read_exact_at(buf, off)
    }
    fn read_vec_at(&self, len: usize, off: u64) -> io::Result<Vec<u8>> {
        pread_vec(&self.file, len, off)
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn map(&self) -> Option<Arc<dyn ReadableFile>> {
        if !self.mappable || self.len == 0 {
            return None;
        }
        // SAFETY: the mapping is read-only (`PROT_READ`, shared). The caller promises
        // (trait contract) that the file is never written or truncated again: the engine maps
        // only finished SSTs (every byte written), which it never modifies and only unlinks (the mapping
        // keeps its pages). Reads copy bytes out of the mapping and check them (CRC) before
        // use, so even bytes changed by another process are data, never trusted as valid.
        let map = unsafe { memmap2::Mmap::map(&self.file) }.ok()?;
        // The file's length when it was opened is what readers were told (`len`).
        (map.len() as u64 == self.len).then(|| Arc::new(MappedReadable { map }) as _)
    }
}

/// A read-only memory map of an immutable file (see [`ReadableFile::map`]): a read is a
/// copy from the mapping, with the errors of `pread` (`UnexpectedEof` past the end,
/// `InvalidInput` for a range ending beyond `i64::MAX`; an empty read always succeeds).
struct MappedReadable {
    map: memmap2::Mmap,
}

impl MappedReadable {
    /// The mapped bytes `off..off + len`.
    fn slice(&self, len: usize, off: u64) -> io::Result<&[u8]> {
        if len == 0 {
            return Ok(&[]);
        }
        // As `pread(2)`: a range ending beyond the largest file offset is invalid.
        if (len as u64)
            .checked_add(off)
            .is_none_or(|end| end > i64::MAX as u64)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "offset too large",
            ));
        }
        usize::try_from(off)
            .ok()
            .and_then(|start| self.map.get(start..start.checked_add(len)?))
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::UnexpectedEof, "failed to fill whole buffer")
            })
    }
}

impl ReadableFile for MappedReadable {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        buf.copy_from_slice(self.slice(buf.len(), off)?);
        Ok(())
    }
    fn read_vec_at(&self, len: usize, off: u64) -> io::Result<Vec<u8>> {
        Ok(self.slice(len, off)?.to_vec())
    }
    fn len(&self) -> u64 {
        self.map.len() as u64
    }
    fn mapped_bytes(&self) -> Option<&[u8]> {
        Some(&self.map)
    }
}

/// `len` bytes of `file` from `off`, read with `pread(2)` straight into a new buffer's
/// spare capacity: the buffer is never zeroed, and its length only ever covers bytes the
/// kernel wrote. Short reads continue; end of file before `len` bytes is `UnexpectedEof`.
fn pread_vec(file: &File, len: usize, off: u64) -> io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let mut buf: Vec<u8> = Vec::with_capacity(len);
    while buf.len() < len {
        let done = buf.len();
        let at = off
            .checked_add(done as u64)
            .and_then(|a| libc::off_t::try_from(a).ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "offset too large"))?;
        let want = len - done;
        let spare = buf.spare_capacity_mut();
        debug_assert!(spare.len() >= want);
        // SAFETY: `spare` is the buffer's unused capacity, at least `want` bytes long (the
        // capacity is `len`, the length `done`); `pread` writes at most `want` bytes through
        // the raw pointer and reads none. No reference to uninitialised bytes is formed.
        let n = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast::<libc::c_void>(),
                want,
                at,
            )
        };
        match n {
            0 => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "failed to fill whole buffer",
                ))
            }
            n if n < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            n => {
                let n = (n as usize).min(want);
                // SAFETY: `pread` initialised the `n <= want` bytes after the first `done`,
                // and `done + n <= len <= capacity`.
                unsafe { buf.set_len(done + n) };
            }
        }
    }
    Ok(buf)
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
        Ok(Arc::new(RealReadable::open(path, true)?))
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

/// The directory holding `path`'s entry (`.` for a bare relative name): the one to sync to
/// make a creation, rename or removal of `path` durable.
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `dir` and those of its ancestors that do not exist, deepest first: what
/// [`Fs::create_dir_all`] of `dir` creates.
pub(crate) fn missing_dirs(dir: &Path) -> Vec<&Path> {
    let mut missing = Vec::new();
    let mut d = dir;
    while !d.exists() {
        missing.push(d);
        match d.parent() {
            Some(p) if !p.as_os_str().is_empty() => d = p,
            _ => break,
        }
    }
    missing
}
