//! Opening a directory, step by step:
//!
//! 1. lock the directory (before anything is read or written);
//! 2. find the database: `CURRENT` and the manifest it names, read completely (a torn last
//!    record is ignored; any other damage refuses the open with file and offset);
//! 3. read the WALs the manifest does not cover, up to a torn tail in the newest one;
//! 4. settle the partitioner: the recorded one (checked against the caller's), or for a
//!    database written before it was recorded, the one its files prove;
//! 5. open the live SSTs and replay the WALs into memtables;
//! 6. read-write only: write what the WALs held as L0 files, start a fresh WAL and manifest
//!    (recording the partitioner), and delete what the manifest proves obsolete.
//!
//! A read-only open stops after step 5: it never creates, writes, renames or deletes a file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use super::flush::sync_files;
use super::inner::{Commit, Inner, State, SyncState, Work};
use super::maint::Maint;
use super::version::StripeVersion;
use crate::crash_point;
use crate::engine::Op;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{missing_dirs, parent_dir, Fs, RealFs};
use crate::lock::{DirLock, LockError, LockMode};
use crate::manifest::{self, Edit, ManifestState, ManifestWriter};
use crate::memtable::Memtable;
use crate::options::LsmOptions;
use crate::partition::Partitioner;
use crate::sst::cache::BlockCache;
use crate::sst::table::{sst_name, Table};
use crate::sync::{lock, write};
use crate::wal::{self, WalWriter};

/// How a directory is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Read-write, creating the database if needed.
    ReadWrite,
    /// Read-only: never writes a byte.
    ReadOnly,
}

/// Opens the database in `path` (see [`super::LsmEngine::open`]).
pub(super) fn open(path: &Path, options: LsmOptions, mode: Mode) -> Result<Inner> {
    let fs: Arc<dyn Fs> = options.fs.clone().unwrap_or_else(|| Arc::new(RealFs));
    let dir = path.to_path_buf();
    match mode {
        Mode::ReadWrite => create_durable_dir(fs.as_ref(), &dir)?,
        Mode::ReadOnly if !dir.is_dir() => {
            return Err(Error::InvalidArgument(format!(
                "no database at {}",
                dir.display()
            )))
        }
        Mode::ReadOnly => {}
    }
    let dir_lock = lock_dir(fs.as_ref(), &dir, mode)?;
    let names = fs.list(&dir).map_err(Error::io(&dir))?;
    let existing = find_database(fs.as_ref(), &dir, &names)?;
    let is_new = existing.is_none();
    let mut mstate = match existing {
        Some(st) => st,
        None if mode == Mode::ReadOnly => {
            return Err(Error::InvalidArgument(format!(
                "no database at {}",
                dir.display()
            )))
        }
        None => fresh_state(&options)?,
    };
    let batches = read_wals(fs.as_ref(), &dir, &names, mstate.log_number)?;
    let partitioner = resolve_partitioner(
        &dir,
        &mstate,
        options.partitioner.as_ref(),
        batches.iter().flat_map(|(_, ops)| ops.iter().map(op_key)),
        is_new,
    )?;
    mstate.partitioner = Some(partitioner.name());
    let cache = Arc::new(BlockCache::new(options.block_cache_bytes));
    let versions = open_tables(&fs, &dir, &mstate, &names, &cache, options.mmap_reads)?;
    let inner = new_inner(NewInner {
        dir,
        fs,
        options,
        partitioner,
        stripes: mstate.stripes,
        cache,
        next_file: next_free_number(&names, &mstate),
        read_only: mode == Mode::ReadOnly,
        lock: dir_lock,
    });
    let mems = replay(&inner, batches, &mut mstate);
    match mode {
        Mode::ReadOnly => install(&inner, mems, versions, mstate.last_seq),
        Mode::ReadWrite => finish_read_write(&inner, mems, versions, mstate, &names)?,
    }
    Ok(inner)
}

/// Creates `dir` and its missing ancestors, and makes their entries durable before anything
/// goes in: a new directory's name lives in its parent, and syncing the files inside (or the
/// directory itself) does not make that name durable, so without a sync of each created
/// directory's parent a power loss after the first acknowledged write could take the whole new
/// database with it. An existing directory costs no sync.
fn create_durable_dir(fs: &dyn Fs, dir: &Path) -> Result<()> {
    let created = missing_dirs(dir);
    fs.create_dir_all(dir).map_err(Error::io(dir))?;
    for c in created {
        let parent = parent_dir(c);
        fs.sync_dir(parent).map_err(Error::io(parent))?;
    }
    Ok(())
}

/// Step 1: the directory lock.
fn lock_dir(fs: &dyn Fs, dir: &Path, mode: Mode) -> Result<DirLock> {
    let lm = match mode {
        Mode::ReadWrite => LockMode::Exclusive,
        Mode::ReadOnly => LockMode::Shared,
    };
    fs.lock_dir(dir, lm).map_err(|e| match e {
        LockError::Held(holder) => Error::Locked {
            dir: dir.to_path_buf(),
            holder,
        },
        LockError::Io(path, source) => Error::Io { path, source },
    })
}

/// Step 2: the state of the database in `dir`, or `None` when there is none yet. A directory
/// without `CURRENT` that holds data (an SST, or a WAL with records) is not taken for an empty
/// one: it is refused, so that nothing in it is ever overwritten or deleted.
fn find_database(fs: &dyn Fs, dir: &Path, names: &[String]) -> Result<Option<ManifestState>> {
    if let Some(c) = manifest::load_current(fs, dir)? {
        return Ok(Some(c.read.state));
    }
    for n in names {
        let data_file = match FileKind::parse(n) {
            Some(FileKind::Sst(..)) => true,
            Some(FileKind::Wal(_)) => fs
                .read(&dir.join(n))
                .map(|d| wal::may_hold_records(&d))
                .unwrap_or(true),
            _ => false,
        };
        if data_file {
            return Err(Error::corruption(
                dir.join(filename::CURRENT),
                0,
                format!("CURRENT is missing but {n} holds data (run `strata kv repair`)"),
            ));
        }
    }
    Ok(None)
}

/// The state of a new database.
fn fresh_state(options: &LsmOptions) -> Result<ManifestState> {
    if options.stripes == 0 || options.stripes > 65_536 {
        return Err(Error::InvalidArgument(format!(
            "stripes must be in 1..=65536, not {}",
            options.stripes
        )));
    }
    Ok(ManifestState {
        stripes: options.stripes,
        log_number: 0,
        next_file: 1,
        last_seq: 0,
        files: Default::default(),
        partitioner: None,
    })
}

/// One more than the largest file number in use (by the manifest or in the directory).
fn next_free_number(names: &[String], mstate: &ManifestState) -> u64 {
    names
        .iter()
        .filter_map(|n| FileKind::parse(n)?.number())
        .map(|n| n + 1)
        .fold(mstate.next_file, u64::max)
}

/// Step 3: the batches of the WALs numbered `from` and up, in order. A torn tail is accepted
/// only in the newest WAL that holds records (newer WALs may exist but be empty: a crash right
/// after a rotation or an open).
fn read_wals(fs: &dyn Fs, dir: &Path, names: &[String], from: u64) -> Result<Vec<(u64, Vec<Op>)>> {
    let mut numbers: Vec<u64> = names
        .iter()
        .filter_map(|n| wal::parse_wal_name(n))
        .filter(|n| *n >= from)
        .collect();
    numbers.sort_unstable();
    let mut recovered: Vec<(PathBuf, wal::Recovered)> = Vec::new();
    for n in numbers {
        let p = dir.join(wal::wal_name(n));
        let data = fs.read(&p).map_err(Error::io(&p))?;
        let r = wal::read_wal(&data, &p, true)?;
        recovered.push((p, r));
    }
    for (i, (p, rec)) in recovered.iter().enumerate() {
        if let Some(at) = rec.torn_at {
            if recovered[i + 1..]
                .iter()
                .any(|(_, r)| !r.batches.is_empty())
            {
                return Err(Error::corruption(
                    p,
                    at,
                    "incomplete record in a WAL followed by newer records",
                ));
            }
        }
    }
    Ok(recovered.into_iter().flat_map(|(_, r)| r.batches).collect())
}

fn op_key(op: &Op) -> &[u8] {
    match op {
        Op::Put(k, _) | Op::Delete(k) => k,
    }
}

/// The kinds a database written before partitioners were recorded may have used: the
/// `strata kv` command's (the whole key) and Strata tables' (two native tuple elements).
fn historic_partitioners() -> [Partitioner; 2] {
    [Partitioner::WholeKey, Partitioner::NativeTuplePrefix(2)]
}

/// Step 4: the partitioner to open with.
///
/// - Recorded: that one; a caller asking for another is refused.
/// - New database: the caller's, or [`Partitioner::WholeKey`].
/// - Written before partitioners were recorded: each SST's first and last keys must lie in
///   the SST's stripe, which proves which kinds fit. The caller's kind is used if it fits
///   (refused otherwise); without one, the single fitting historic kind; when several fit
///   (no SSTs yet), the table kind if every key seen is a native tuple of at least two
///   elements (Strata tables write no other key), else the whole key.
pub(crate) fn resolve_partitioner<'k>(
    dir: &Path,
    mstate: &'k ManifestState,
    requested: Option<&Partitioner>,
    wal_keys: impl Iterator<Item = &'k [u8]>,
    is_new: bool,
) -> Result<Partitioner> {
    if let Some(name) = &mstate.partitioner {
        let recorded = Partitioner::parse(name).map_err(|e| {
            Error::InvalidArgument(format!(
                "database {} records a partitioner this version does not know: {e}",
                dir.display()
            ))
        })?;
        if let Some(r) = requested.filter(|r| **r != recorded) {
            return Err(Error::PartitionerMismatch {
                dir: dir.to_path_buf(),
                recorded: recorded.name(),
                requested: r.name(),
            });
        }
        return Ok(recorded);
    }
    if is_new {
        return Ok(requested.cloned().unwrap_or_default());
    }
    let stripes = mstate.stripes;
    let fits = |p: &Partitioner| {
        mstate.live_files().all(|(s, _, m)| {
            p.stripe(&m.smallest, stripes) == s && p.stripe(&m.largest, stripes) == s
        })
    };
    let mut candidates = historic_partitioners().to_vec();
    // A kind introduced after partitioners were recorded cannot have written this database.
    let later = |r: &Partitioner| matches!(r, Partitioner::NativeTupleHash(_));
    if let Some(r) = requested.filter(|r| !candidates.contains(r) && !later(r)) {
        candidates.push(r.clone());
    }
    let fitting: Vec<Partitioner> = candidates.into_iter().filter(|p| fits(p)).collect();
    if let Some(r) = requested {
        if fitting.contains(r) {
            return Ok(r.clone());
        }
        return Err(Error::PartitionerMismatch {
            dir: dir.to_path_buf(),
            recorded: match fitting.as_slice() {
                [] => "no known partitioner (its files are not where any puts them)".into(),
                f => f
                    .iter()
                    .map(Partitioner::name)
                    .collect::<Vec<_>>()
                    .join(" or "),
            },
            requested: r.name(),
        });
    }
    match fitting.as_slice() {
        [] => Err(Error::corruption(
            dir,
            0,
            "this database was written before partitioners were recorded, and its files are \
             not where any known partitioner puts them (an older version may have opened it \
             with the wrong one); `strata kv check` lists the misplaced files",
        )),
        [one] => Ok(one.clone()),
        several => {
            let table = Partitioner::NativeTuplePrefix(2);
            let mut keys = mstate
                .live_files()
                .flat_map(|(_, _, m)| [m.smallest.as_slice(), m.largest.as_slice()])
                .chain(wal_keys)
                .peekable();
            let any = keys.peek().is_some();
            let all_tuples = keys.all(|k| strata_key::codec::native::prefix_len(k, 2).is_some());
            if any && all_tuples && several.contains(&table) {
                Ok(table)
            } else {
                Ok(Partitioner::WholeKey)
            }
        }
    }
}

/// Step 5a: the SSTs the manifest lists, opened: the version of each stripe.
fn open_tables(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    mstate: &ManifestState,
    names: &[String],
    cache: &Arc<BlockCache>,
    mmap_reads: bool,
) -> Result<Vec<StripeVersion>> {
    let stripes = mstate.stripes;
    let mut versions: Vec<StripeVersion> = (0..stripes).map(|_| StripeVersion::default()).collect();
    for (stripe, level, meta) in mstate.live_files() {
        if stripe >= stripes {
            return Err(Error::corruption(
                dir.join(filename::CURRENT),
                0,
                format!("manifest lists stripe {stripe} of {stripes}"),
            ));
        }
        let name = sst_name(stripe, meta.id);
        let p = dir.join(&name);
        if !names.contains(&name) {
            return Err(Error::corruption(
                p,
                0,
                "SST listed in the manifest is missing",
            ));
        }
        let t = Table::open(Arc::clone(fs), &p, meta.clone(), Arc::clone(cache))?
            .with_mapped_reads(mmap_reads);
        if t.meta.size != meta.size {
            return Err(Error::corruption(
                p,
                0,
                format!("size differs from the manifest ({})", meta.size),
            ));
        }
        versions[stripe as usize].add(usize::from(level), Arc::new(t));
    }
    Ok(versions)
}

/// The parts of a new [`Inner`] that vary.
struct NewInner {
    dir: PathBuf,
    fs: Arc<dyn Fs>,
    options: LsmOptions,
    partitioner: Partitioner,
    stripes: u32,
    cache: Arc<BlockCache>,
    next_file: u64,
    read_only: bool,
    lock: DirLock,
}

/// An engine with no WAL, no files and empty memtables yet.
fn new_inner(n: NewInner) -> Inner {
    Inner {
        dir: n.dir,
        fs: n.fs,
        opts: n.options,
        partitioner: n.partitioner,
        stripes: n.stripes,
        read_only: n.read_only,
        lock: Mutex::new(Some(n.lock)),
        cache: n.cache,
        state: RwLock::new(State {
            active: Vec::new(),
            frozen: None,
            versions: Vec::new(),
        }),
        commit: Mutex::new(Commit {
            wal: None,
            last_seq: 0,
        }),
        sync: Mutex::new(SyncState::default()),
        sync_cv: Condvar::new(),
        sync_thread_cv: Condvar::new(),
        visible: AtomicU64::new(0),
        poisoned: AtomicBool::new(false),
        poison_msg: Mutex::new(String::new()),
        closed: AtomicBool::new(false),
        active_bytes: AtomicUsize::new(0),
        frozen_bytes: AtomicUsize::new(0),
        has_frozen: AtomicBool::new(false),
        l0_max: AtomicUsize::new(0),
        next_file: AtomicU64::new(n.next_file),
        written: Default::default(),
        maint: Mutex::new(None),
        work: Mutex::new(Work::default()),
        work_cv: Condvar::new(),
        stall_cv: Condvar::new(),
    }
}

/// Step 5b: replays batches into fresh memtables (one per stripe); raises the state's last
/// sequence number.
fn replay(
    inner: &Inner,
    batches: Vec<(u64, Vec<Op>)>,
    mstate: &mut ManifestState,
) -> Vec<Arc<Memtable>> {
    let mems: Vec<Arc<Memtable>> = (0..inner.stripes)
        .map(|_| Arc::new(Memtable::new()))
        .collect();
    for (seq, ops) in batches {
        for op in ops {
            let (k, v) = match op {
                Op::Put(k, v) => (k, Some(v)),
                Op::Delete(k) => (k, None),
            };
            let s = inner.stripe_of(&k);
            mems[s].insert(seq, std::iter::once((k, v)));
        }
        mstate.last_seq = mstate.last_seq.max(seq);
    }
    mems
}

/// Makes the memtables and versions current, with everything up to `last_seq` visible.
fn install(inner: &Inner, mems: Vec<Arc<Memtable>>, versions: Vec<StripeVersion>, last_seq: u64) {
    {
        let mut st = write(&inner.state);
        let bytes: usize = mems.iter().map(|m| m.bytes()).sum();
        inner.active_bytes.store(bytes, Ordering::SeqCst);
        st.active = mems;
        st.versions = versions.into_iter().map(Arc::new).collect();
        inner.update_l0_max(&st);
    }
    lock(&inner.commit).last_seq = last_seq;
    lock(&inner.sync).synced_seq = last_seq;
    inner.visible.store(last_seq, Ordering::SeqCst);
}

/// Step 6 (read-write): what the WALs held becomes L0 files, then a fresh WAL and manifest
/// take over and what they make obsolete is deleted.
fn finish_read_write(
    inner: &Inner,
    mems: Vec<Arc<Memtable>>,
    mut versions: Vec<StripeVersion>,
    mut mstate: ManifestState,
    names: &[String],
) -> Result<()> {
    let (fs, dir) = (inner.fs.as_ref(), inner.dir.as_path());
    // The open has succeeded: from here on this process owns the directory, and says so.
    if let Some(l) = lock(&inner.lock).as_mut() {
        l.record_owner()
            .map_err(Error::io(dir.join(filename::LOCK)))?;
    }
    let mut unsynced = Vec::new();
    for (s, mem) in mems.iter().enumerate() {
        if let Some((t, file)) = inner.write_memtable(s as u32, mem)? {
            unsynced.push(file);
            mstate.apply(Edit::AddFile {
                stripe: s as u32,
                level: 0,
                meta: t.meta.clone(),
            });
            versions[s].add(0, t);
        }
    }
    sync_files(unsynced)?;
    crash_point::reached(crash_point::OPEN_L0_SYNCED);
    let number = inner.next_file.fetch_add(1, Ordering::SeqCst);
    let chunk = crate::wal::prealloc_for(inner.opts.memtable_budget_bytes);
    let wal = WalWriter::create_with(fs, dir, number, chunk)?;
    mstate.log_number = wal.number();
    let manifest_number = inner.next_file.fetch_add(1, Ordering::SeqCst);
    mstate.next_file = inner.next_file.load(Ordering::SeqCst);
    let mw = ManifestWriter::create(fs, dir, manifest_number, &mstate)?;
    crash_point::reached(crash_point::OPEN_MANIFEST_CURRENT);
    // The manifest was read completely (any damage refused the open above), so an SST it
    // does not list is an input of a finished compaction or the output of an operation whose
    // edit never became durable (its data is still in a WAL or in the inputs): obsolete.
    let live: HashSet<String> = mstate
        .live_files()
        .map(|(s, _, m)| sst_name(s, m.id))
        .collect();
    delete_obsolete(fs, dir, names, &live, mstate.log_number, manifest_number);
    install(
        inner,
        (0..mstate.stripes)
            .map(|_| Arc::new(Memtable::new()))
            .collect(),
        versions,
        mstate.last_seq,
    );
    inner.active_bytes.store(0, Ordering::SeqCst);
    lock(&inner.commit).wal = Some(wal);
    *lock(&inner.maint) = Some(Maint::new(mw, mstate, inner.opts.manifest_roll_bytes));
    Ok(())
}

/// Deletes what the new manifest makes obsolete: older WALs, unreferenced SSTs, older
/// manifests, a leftover `CURRENT.tmp`. Only names listed before the open are considered.
fn delete_obsolete(
    fs: &dyn Fs,
    dir: &Path,
    names: &[String],
    live: &HashSet<String>,
    new_wal: u64,
    manifest_number: u64,
) {
    for n in names {
        let stale = match FileKind::parse(n) {
            Some(FileKind::Wal(w)) => w < new_wal,
            Some(FileKind::Sst(..)) => !live.contains(n),
            Some(FileKind::Manifest(m)) => m != manifest_number,
            Some(FileKind::CurrentTmp) => true,
            _ => false,
        };
        if stale {
            let _ = fs.remove(&dir.join(n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::table::FileMeta;
    use strata_key::codec::native::NativeCodec;
    use strata_key::{TupleCodec, Value};

    fn state(stripes: u32, keys: &[(&[u8], Partitioner)]) -> ManifestState {
        let mut st = fresh_state(&LsmOptions {
            stripes,
            ..LsmOptions::default()
        })
        .unwrap();
        for (i, (k, p)) in keys.iter().enumerate() {
            st.apply(Edit::AddFile {
                stripe: p.stripe(k, stripes),
                level: 0,
                meta: FileMeta {
                    id: i as u64 + 1,
                    size: 100,
                    entries: 1,
                    smallest: k.to_vec(),
                    largest: k.to_vec(),
                },
            });
        }
        st
    }

    fn tuple(a: i128, b: i128, c: &str) -> Vec<u8> {
        NativeCodec::new()
            .encode(&[Value::Int(a), Value::Int(b), Value::from(c)])
            .unwrap()
    }

    fn resolve(st: &ManifestState, req: Option<Partitioner>, wal: &[&[u8]]) -> Result<Partitioner> {
        resolve_partitioner(
            Path::new("db"),
            st,
            req.as_ref(),
            wal.iter().copied(),
            false,
        )
    }

    const TABLE: Partitioner = Partitioner::NativeTuplePrefix(2);

    #[test]
    fn a_recorded_partitioner_wins_and_another_is_refused() {
        let mut st = state(16, &[]);
        st.partitioner = Some(TABLE.name());
        assert_eq!(resolve(&st, None, &[]).unwrap(), TABLE);
        assert_eq!(resolve(&st, Some(TABLE), &[]).unwrap(), TABLE);
        assert!(matches!(
            resolve(&st, Some(Partitioner::WholeKey), &[]),
            Err(Error::PartitionerMismatch { .. })
        ));
        st.partitioner = Some("from-the-future:1".into());
        assert!(resolve(&st, None, &[]).is_err());
    }

    #[test]
    fn where_old_files_lie_proves_their_partitioner() {
        let keys: Vec<Vec<u8>> = (0..40).map(|i| tuple(i % 3, i, "x")).collect();
        let kv: Vec<(&[u8], Partitioner)> = keys
            .iter()
            .map(|k| (k.as_slice(), Partitioner::WholeKey))
            .collect();
        let table: Vec<(&[u8], Partitioner)> = keys.iter().map(|k| (k.as_slice(), TABLE)).collect();
        assert_eq!(
            resolve(&state(256, &kv), None, &[]).unwrap(),
            Partitioner::WholeKey
        );
        assert_eq!(resolve(&state(256, &table), None, &[]).unwrap(), TABLE);
        // The caller's choice is checked against the evidence.
        assert!(matches!(
            resolve(&state(256, &kv), Some(TABLE), &[]),
            Err(Error::PartitionerMismatch { .. })
        ));
        // Files filed by both (an old bug): no known partitioner explains them.
        let mixed: Vec<(&[u8], Partitioner)> =
            kv[..20].iter().chain(&table[20..]).cloned().collect();
        assert!(matches!(
            resolve(&state(256, &mixed), None, &[]),
            Err(Error::Corruption { .. })
        ));
    }

    #[test]
    fn without_files_the_shape_of_the_keys_decides() {
        let st = state(256, &[]);
        let t1 = tuple(0, 1, "meta");
        let t2 = tuple(1, 7, "p");
        assert_eq!(resolve(&st, None, &[&t1, &t2]).unwrap(), TABLE);
        assert_eq!(
            resolve(&st, None, &[&t1, b"plain key"]).unwrap(),
            Partitioner::WholeKey
        );
        assert_eq!(resolve(&st, None, &[]).unwrap(), Partitioner::WholeKey);
        // With no evidence, the caller's choice stands.
        assert_eq!(
            resolve(&st, Some(Partitioner::FixedPrefix(3)), &[b"plain"]).unwrap(),
            Partitioner::FixedPrefix(3)
        );
    }
}
