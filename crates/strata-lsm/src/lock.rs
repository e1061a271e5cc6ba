//! One owner per directory: an OS lock (`flock`), taken before anything is read or written.
//!
//! - A read-write open locks the directory itself exclusively, and `LOCK` exclusively when it
//!   exists. Once the open has succeeded (a refused open changes nothing), it creates `LOCK` if
//!   needed and writes its pid into it ([`DirLock::record_owner`]), for the message other
//!   openers print where `/proc/locks` is not available.
//! - A read-only open locks the directory shared, and `LOCK` shared when it exists; it never
//!   creates or writes anything, so it works on a read-only file system.
//!
//! The directory lock is what excludes: it exists in every directory, also in one written
//! before `LOCK` files did, and it is taken first, so a refused opener has created nothing.
//! `LOCK` is the conventional lock file that tools can look at. Locks are released by the OS
//! when the process exits, however it exits.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::filename::LOCK;

/// How a directory is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Readers (many at once; no writer).
    Shared,
    /// The one writer.
    Exclusive,
}

/// A held directory lock; dropping it releases the lock.
#[derive(Debug)]
pub struct DirLock {
    dir: PathBuf,
    _dir: File,
    lock_file: Option<File>,
}

/// Why a lock could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// Someone else holds it: who, in words.
    Held(String),
    /// An I/O error on this path.
    Io(PathBuf, io::Error),
}

fn try_lock(f: &File, mode: LockMode) -> Result<bool, io::Error> {
    let r = match mode {
        LockMode::Shared => f.try_lock_shared(),
        LockMode::Exclusive => f.try_lock(),
    };
    match r {
        Ok(()) => Ok(true),
        Err(TryLockError::WouldBlock) => Ok(false),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

impl DirLock {
    /// Takes the lock of database directory `dir` without waiting.
    pub fn acquire(dir: &Path, mode: LockMode) -> Result<DirLock, LockError> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e| LockError::Io(p, e)
        };
        let d = File::open(dir).map_err(io(dir))?;
        if !try_lock(&d, mode).map_err(io(dir))? {
            return Err(LockError::Held(holder(dir)));
        }
        let path = dir.join(LOCK);
        // The writer opens it writable (to record its pid later), readers read-only.
        let opened = OpenOptions::new()
            .read(true)
            .write(mode == LockMode::Exclusive)
            .open(&path);
        let lock_file = match opened {
            Ok(f) => {
                if !try_lock(&f, mode).map_err(io(&path))? {
                    return Err(LockError::Held(holder(dir)));
                }
                Some(f)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(LockError::Io(path, e)),
        };
        Ok(DirLock {
            dir: dir.to_path_buf(),
            _dir: d,
            lock_file,
        })
    }

    /// For the exclusive owner, once its open has succeeded: creates `LOCK` if needed, locks
    /// it and writes this process's pid into it.
    pub fn record_owner(&mut self) -> io::Result<()> {
        let mut f = match self.lock_file.take() {
            Some(f) => f,
            None => {
                let path = self.dir.join(LOCK);
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&path)?;
                if !try_lock(&f, LockMode::Exclusive)? {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!("{} is locked by another process", path.display()),
                    ));
                }
                f
            }
        };
        let r = f
            .set_len(0)
            .and_then(|()| writeln!(f, "{}", std::process::id()));
        self.lock_file = Some(f);
        r
    }
}

/// Who holds the lock of `dir`, in words: "a writer (pid 123)", "2 readers (pids 4, 5)".
fn holder(dir: &Path) -> String {
    let locks = proc_locks(dir);
    let writers: Vec<u32> = locks.iter().filter(|l| l.1).map(|l| l.0).collect();
    let readers: Vec<u32> = locks.iter().filter(|l| !l.1).map(|l| l.0).collect();
    let pids = |v: &[u32]| {
        v.iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(w) = writers.first() {
        return format!("opened for writing by pid {w}");
    }
    if !readers.is_empty() {
        let s = if readers.len() == 1 { "" } else { "s" };
        return format!("opened read-only by pid{s} {}", pids(&readers));
    }
    // No /proc/locks (not Linux): the pid the writer recorded, if any.
    match std::fs::read_to_string(dir.join(LOCK)) {
        Ok(s) if !s.trim().is_empty() => format!(
            "locked by another process (the last writer was pid {})",
            s.trim()
        ),
        _ => "locked by another process".into(),
    }
}

/// The `flock` holders of `dir` listed in Linux's `/proc/locks`: `(pid, exclusive)`.
fn proc_locks(dir: &Path) -> Vec<(u32, bool)> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string("/proc/locks") else {
        return Vec::new();
    };
    let dev = meta.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let want = format!("{major:02x}:{minor:02x}:{}", meta.ino());
    let mut out = Vec::new();
    for line in text.lines() {
        // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || f[1] != "FLOCK" || f[5] != want {
            continue;
        }
        if let Ok(pid) = f[4].parse() {
            out.push((pid, f[3] == "WRITE"));
        }
    }
    out
}
