//! [`check`]: examines every file of a database directory without changing anything, and
//! reports every problem it finds with the file and offset (it does not stop at the first).
//!
//! It reads `CURRENT`, the whole manifest (resuming after damaged records), every SST the
//! manifest lists (every block, checksums and key order, and whether its keys lie in its
//! stripe), and every WAL the manifest does not cover (every record). It takes the directory
//! lock shared, like a read-only open: it runs beside readers, never beside a writer.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{Fs, RealFs};
use crate::lock::{LockError, LockMode};
use crate::lsm::resolve_partitioner;
use crate::manifest::{self, ManifestState, MANIFEST_MAGIC};
use crate::partition::Partitioner;
use crate::record;
use crate::sst::cache::BlockCache;
use crate::sst::table::{sst_name, Table};
use crate::wal;

/// One problem: a file, a byte offset in it, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file concerned.
    pub file: PathBuf,
    /// Byte offset of the damage in the file (0 when it concerns the whole file).
    pub offset: u64,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at offset {}: {}",
            self.file.display(),
            self.offset,
            self.what
        )
    }
}

impl Problem {
    /// The problem an engine error describes.
    pub fn from_error(e: Error, fallback: &Path) -> Problem {
        match e {
            Error::Corruption {
                file,
                offset,
                reason,
            } => Problem {
                file,
                offset,
                what: reason,
            },
            Error::Io { path, source } => Problem {
                file: path,
                offset: 0,
                what: format!("cannot read: {source}"),
            },
            other => Problem {
                file: fallback.to_path_buf(),
                offset: 0,
                what: other.to_string(),
            },
        }
    }
}

/// What [`check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Every problem found (empty: the database is sound).
    pub problems: Vec<Problem>,
    /// Observations that are not damage: a torn tail, files left for deletion, a database
    /// written before partitioners were recorded.
    pub notes: Vec<String>,
    /// SSTs the manifest lists.
    pub ssts: usize,
    /// Entries read back from them.
    pub entries: u64,
    /// WAL files read.
    pub wals: usize,
    /// Complete WAL records read.
    pub wal_records: u64,
    /// The partitioner (recorded, or inferred for an old database).
    pub partitioner: Option<String>,
}

impl CheckReport {
    /// True when no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, file: impl Into<PathBuf>, offset: u64, what: impl Into<String>) {
        self.problems.push(Problem {
            file: file.into(),
            offset,
            what: what.into(),
        });
    }
}

/// Checks the database in `dir` (see the module documentation). `fs`: the file system layer
/// (`None`: the real one). Fails only when the directory cannot be examined at all (no
/// database, locked by a writer, unreadable); damage is reported in the [`CheckReport`].
pub fn check(dir: &Path, fs: Option<Arc<dyn Fs>>) -> Result<CheckReport> {
    let fs: Arc<dyn Fs> = fs.unwrap_or_else(|| Arc::new(RealFs));
    if !dir.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "no database at {}",
            dir.display()
        )));
    }
    let _lock = fs.lock_dir(dir, LockMode::Shared).map_err(|e| match e {
        LockError::Held(holder) => Error::Locked {
            dir: dir.to_path_buf(),
            holder,
        },
        LockError::Io(path, source) => Error::Io { path, source },
    })?;
    let names = fs.list(dir).map_err(Error::io(dir))?;
    let mut r = CheckReport::default();
    let Some(state) = check_manifest(fs.as_ref(), dir, &names, &mut r)? else {
        return Err(Error::InvalidArgument(format!(
            "no database at {}",
            dir.display()
        )));
    };
    let partitioner = check_partitioner(dir, &state, &mut r);
    check_ssts(&fs, dir, &names, &state, partitioner.as_ref(), &mut r);
    check_wals(fs.as_ref(), dir, &names, state.log_number, &mut r);
    Ok(r)
}

/// The manifest `CURRENT` names (or, when `CURRENT` is unusable, the newest one), every
/// damaged record of it reported; `None` when the directory holds no database at all.
fn check_manifest(
    fs: &dyn Fs,
    dir: &Path,
    names: &[String],
    r: &mut CheckReport,
) -> Result<Option<ManifestState>> {
    let current = dir.join(filename::CURRENT);
    let newest = names
        .iter()
        .filter_map(|n| match FileKind::parse(n) {
            Some(FileKind::Manifest(m)) => Some(m),
            _ => None,
        })
        .max();
    let number = match fs.read(&current) {
        Ok(data) => match manifest::parse_current(&data, &current) {
            Ok(n) => Some(n),
            Err(e) => {
                r.problems.push(Problem::from_error(e, &current));
                newest
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let any = names.iter().any(|n| {
                matches!(
                    FileKind::parse(n),
                    Some(FileKind::Sst(..) | FileKind::Wal(_) | FileKind::Manifest(_))
                )
            });
            if !any {
                return Ok(None);
            }
            r.problem(&current, 0, "missing");
            newest
        }
        Err(e) => {
            r.problem(&current, 0, format!("cannot read: {e}"));
            newest
        }
    };
    let Some(number) = number else {
        r.problem(dir, 0, "no manifest");
        return Ok(Some(ManifestState::default()));
    };
    let path = dir.join(manifest::manifest_name(number));
    let data = match fs.read(&path) {
        Ok(d) => d,
        Err(e) => {
            r.problem(&path, 0, format!("cannot read: {e}"));
            return Ok(Some(ManifestState::default()));
        }
    };
    let mut state = ManifestState::default();
    if data.len() < MANIFEST_MAGIC.len() || &data[..MANIFEST_MAGIC.len()] != MANIFEST_MAGIC {
        r.problem(&path, 0, "bad manifest magic");
        return Ok(Some(state));
    }
    let scan = record::scan_log(&data, MANIFEST_MAGIC.len());
    for d in scan.damage {
        r.problem(&path, d.offset, d.reason);
    }
    if let Some((offset, why)) = scan.torn {
        r.notes.push(format!(
            "{} has a torn tail at offset {offset} ({why}): an unfinished append, ignored",
            path.display()
        ));
    }
    for (off, payload) in scan.records {
        match manifest::decode_edits(payload) {
            Ok(edits) => edits.into_iter().for_each(|e| state.apply(e)),
            Err(e) => r.problems.push(Problem::from_error(
                e.in_file(&path, off + record::HEADER as u64),
                &path,
            )),
        }
    }
    if state.stripes == 0 {
        r.problem(&path, 0, "the manifest records no stripe count");
    }
    Ok(Some(state))
}

/// The partitioner files must follow: the recorded one, or the one an old database's files
/// prove.
fn check_partitioner(
    dir: &Path,
    state: &ManifestState,
    r: &mut CheckReport,
) -> Option<Partitioner> {
    if state.stripes == 0 {
        return None;
    }
    if state.partitioner.is_none() {
        r.notes.push(
            "no partitioner recorded (written before partitioners were recorded): inferred from \
             where its files lie; the next read-write open records it"
                .into(),
        );
    }
    match resolve_partitioner(dir, state, None, std::iter::empty(), false) {
        Ok(p) => {
            r.partitioner = Some(p.name());
            Some(p)
        }
        Err(e) => {
            r.problems.push(Problem::from_error(e, dir));
            None
        }
    }
}

/// Every SST the manifest lists: present, readable, every block sound, the entry count and
/// size the manifest says, keys in the file's stripe. SSTs it does not list are noted.
fn check_ssts(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    names: &[String],
    state: &ManifestState,
    partitioner: Option<&Partitioner>,
    r: &mut CheckReport,
) {
    let cache = Arc::new(BlockCache::new(1 << 20));
    let mut listed = HashSet::new();
    for (stripe, _, meta) in state.live_files() {
        let name = sst_name(stripe, meta.id);
        let path = dir.join(&name);
        listed.insert(name.clone());
        r.ssts += 1;
        if stripe >= state.stripes {
            r.problem(
                &path,
                0,
                format!("listed in stripe {stripe} of {}", state.stripes),
            );
        }
        if !names.contains(&name) {
            r.problem(&path, 0, "listed in the manifest but missing");
            continue;
        }
        if let Some(p) = partitioner {
            for key in [&meta.smallest, &meta.largest] {
                let s = p.stripe(key, state.stripes);
                if s != stripe {
                    r.problem(
                        &path,
                        0,
                        format!(
                            "holds key {} of stripe {s} (partitioner {p}): misfiled",
                            printable(key)
                        ),
                    );
                }
            }
        }
        let t = match Table::open(Arc::clone(fs), &path, meta.clone(), Arc::clone(&cache)) {
            Ok(t) => t,
            Err(e) => {
                r.problems.push(Problem::from_error(e, &path));
                continue;
            }
        };
        if let Ok(f) = fs.open(&path) {
            if f.len() != meta.size {
                r.problem(
                    &path,
                    0,
                    format!("{} bytes, the manifest says {}", f.len(), meta.size),
                );
            }
        }
        match t.verify() {
            Ok(n) => {
                r.entries += n;
                if n != meta.entries {
                    r.problem(
                        &path,
                        0,
                        format!("{n} entries, the manifest says {}", meta.entries),
                    );
                }
            }
            Err(e) => r.problems.push(Problem::from_error(e, &path)),
        }
    }
    for n in names {
        if matches!(FileKind::parse(n), Some(FileKind::Sst(..))) && !listed.contains(n) {
            r.notes.push(format!(
                "{n} is not listed in the manifest (left over by an interrupted flush or \
                 compaction; the next read-write open deletes it)"
            ));
        }
    }
}

/// A torn tail: the file, the offset of the incomplete record, and what was incomplete.
type Torn = (PathBuf, u64, String);

/// Every WAL the manifest does not cover: every record sound; a torn tail only at the end of
/// the newest WAL that holds records.
fn check_wals(fs: &dyn Fs, dir: &Path, names: &[String], from: u64, r: &mut CheckReport) {
    let mut numbers: Vec<u64> = names
        .iter()
        .filter_map(|n| wal::parse_wal_name(n))
        .collect();
    numbers.sort_unstable();
    // Per WAL read: whether it holds records, and its torn tail.
    let mut seen: Vec<(bool, Option<Torn>)> = Vec::new();
    for n in numbers {
        let path = dir.join(wal::wal_name(n));
        if n < from {
            r.notes.push(format!(
                "{} is older than the manifest's log number (obsolete; the next read-write \
                 open deletes it)",
                path.display()
            ));
            continue;
        }
        r.wals += 1;
        let data = match fs.read(&path) {
            Ok(d) => d,
            Err(e) => {
                r.problem(&path, 0, format!("cannot read: {e}"));
                continue;
            }
        };
        if wal::is_unwritten(&data) {
            let why = if data.len() < wal::MAGIC_LEN {
                "shorter than its magic"
            } else {
                "only zeros"
            };
            seen.push((false, Some((path, 0, why.into()))));
            continue;
        }
        let Some(version) = wal::version_of(&data) else {
            r.problem(&path, 0, "bad WAL magic");
            seen.push((true, None));
            continue;
        };
        let mut scan = wal::scan_records(&data, version);
        // An unsynced hole (v3, v4: a write lost in an OS crash that no later record says was
        // synced) ends the recoverable prefix, like a torn tail: what follows is not damage.
        if let Some(first) = scan.damage.first() {
            if let Some(why) = wal::unsynced_hole(&data, first.offset) {
                let at = first.offset;
                scan.records.retain(|rec| rec.offset < at);
                scan.damage.clear();
                scan.torn = Some((at, why));
            }
        }
        for d in &scan.damage {
            r.problem(&path, d.offset, d.reason.clone());
        }
        for rec in &scan.records {
            r.wal_records += 1;
            if let Err(e) = wal::decode_record(&rec.payload, version) {
                r.problems.push(Problem::from_error(
                    e.in_file(&path, rec.offset + record::HEADER as u64),
                    &path,
                ));
            }
        }
        let holds = !scan.records.is_empty() || !scan.damage.is_empty();
        seen.push((holds, scan.torn.map(|(o, why)| (path, o, why))));
    }
    for i in 0..seen.len() {
        let Some((path, offset, why)) = seen[i].1.clone() else {
            continue;
        };
        if seen[i + 1..].iter().any(|(holds, _)| *holds) {
            r.problem(
                &path,
                offset,
                format!("incomplete record ({why}) in a WAL followed by newer records"),
            );
        } else {
            r.notes.push(format!(
                "{} has a torn tail at offset {offset} ({why}): an unfinished write that was \
                 never acknowledged, ignored",
                path.display()
            ));
        }
    }
}

/// A key for a message: text when it is printable, else hex.
pub(crate) fn printable(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => format!("{s:?}"),
        _ => format!("0x{}", hex(key)),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
