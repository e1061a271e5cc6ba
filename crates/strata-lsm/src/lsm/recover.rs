//! Opening a directory: read the manifest, open the live SSTs, replay the WALs, write what
//! they held as L0 files, start a fresh WAL and manifest, and delete what is obsolete.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use super::flush::sync_files;
use super::inner::{Commit, Inner, State, SyncState, Work};
use super::maint::Maint;
use super::version::StripeVersion;
use crate::engine::Op;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{Fs, RealFs};
use crate::manifest::{self, Edit, ManifestState, ManifestWriter};
use crate::memtable::Memtable;
use crate::options::LsmOptions;
use crate::sst::cache::BlockCache;
use crate::sst::table::{sst_name, Table};
use crate::sync::{lock, write};
use crate::wal::{self, WalWriter};

/// Opens the database in `path` (see [`super::LsmEngine::open`]).
pub(super) fn open(path: &Path, options: LsmOptions) -> Result<Inner> {
    let fs: Arc<dyn Fs> = options.fs.clone().unwrap_or_else(|| Arc::new(RealFs));
    let dir = path.to_path_buf();
    fs.create_dir_all(&dir).map_err(Error::io(&dir))?;
    let mut mstate = load_state(fs.as_ref(), &dir, &options)?;
    let names = fs.list(&dir).map_err(Error::io(&dir))?;
    let cache = Arc::new(BlockCache::new(options.block_cache_bytes));
    let (mut versions, mut live) = open_tables(&fs, &dir, &mstate, &names, &cache)?;
    let batches = read_wals(fs.as_ref(), &dir, &names, mstate.log_number)?;
    let next_file = AtomicU64::new(next_free_number(&names, &mstate));
    let wal = WalWriter::create(fs.as_ref(), &dir, next_file.fetch_add(1, Ordering::SeqCst))?;
    let new_wal = wal.number();
    let inner = Inner {
        dir: dir.clone(),
        fs: Arc::clone(&fs),
        stripes: mstate.stripes,
        opts: options,
        cache,
        state: RwLock::new(State {
            active: Vec::new(),
            frozen: None,
            versions: Vec::new(),
        }),
        commit: Mutex::new(Commit { wal, last_seq: 0 }),
        sync: Mutex::new(SyncState::default()),
        sync_cv: Condvar::new(),
        visible: AtomicU64::new(0),
        poisoned: AtomicBool::new(false),
        poison_msg: Mutex::new(String::new()),
        closed: AtomicBool::new(false),
        active_bytes: AtomicUsize::new(0),
        frozen_bytes: AtomicUsize::new(0),
        has_frozen: AtomicBool::new(false),
        l0_max: AtomicUsize::new(0),
        next_file,
        maint: Mutex::new(None),
        work: Mutex::new(Work::default()),
        work_cv: Condvar::new(),
        stall_cv: Condvar::new(),
    };
    let mems = replay(&inner, batches, &mut mstate);
    // What the WALs held becomes L0 files, so that the old WALs can go.
    let mut unsynced = Vec::new();
    for (s, mem) in mems.iter().enumerate() {
        if let Some((t, file)) = inner.write_memtable(s as u32, mem)? {
            unsynced.push(file);
            mstate.apply(Edit::AddFile {
                stripe: s as u32,
                level: 0,
                meta: t.meta.clone(),
            });
            live.insert(sst_name(s as u32, t.meta.id));
            versions[s].add(0, t);
        }
    }
    sync_files(unsynced)?;
    fs.sync_dir(&dir).map_err(Error::io(&dir))?;
    mstate.log_number = new_wal;
    let manifest_number = inner.next_file.fetch_add(1, Ordering::SeqCst);
    mstate.next_file = inner.next_file.load(Ordering::SeqCst);
    let mw = ManifestWriter::create(fs.as_ref(), &dir, manifest_number, &mstate)?;
    delete_obsolete(fs.as_ref(), &dir, &names, &live, new_wal, manifest_number);
    {
        let mut st = write(&inner.state);
        st.active = (0..mstate.stripes)
            .map(|_| Arc::new(Memtable::new()))
            .collect();
        st.versions = versions.into_iter().map(Arc::new).collect();
        inner.update_l0_max(&st);
    }
    let last_seq = mstate.last_seq;
    lock(&inner.commit).last_seq = last_seq;
    lock(&inner.sync).synced_seq = last_seq;
    inner.visible.store(last_seq, Ordering::SeqCst);
    *lock(&inner.maint) = Some(Maint::new(mw, mstate));
    Ok(inner)
}

/// The manifest's state, or a fresh one for a directory without a database.
fn load_state(fs: &dyn Fs, dir: &Path, options: &LsmOptions) -> Result<ManifestState> {
    if let Some((_, st)) = manifest::load_current(fs, dir)? {
        return Ok(st);
    }
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

/// Opens the SSTs the manifest lists: the version of each stripe, and the names of the live
/// files.
fn open_tables(
    fs: &Arc<dyn Fs>,
    dir: &Path,
    mstate: &ManifestState,
    names: &[String],
    cache: &Arc<BlockCache>,
) -> Result<(Vec<StripeVersion>, HashSet<String>)> {
    let stripes = mstate.stripes;
    let mut versions: Vec<StripeVersion> = (0..stripes).map(|_| StripeVersion::default()).collect();
    let mut live = HashSet::new();
    for ((stripe, level), files) in &mstate.files {
        if *stripe >= stripes {
            return Err(Error::corruption(
                dir.join(filename::CURRENT),
                0,
                format!("manifest lists stripe {stripe} of {stripes}"),
            ));
        }
        for meta in files.values() {
            let name = sst_name(*stripe, meta.id);
            let p = dir.join(&name);
            if !names.contains(&name) {
                return Err(Error::corruption(
                    p,
                    0,
                    "SST listed in the manifest is missing",
                ));
            }
            let t = Table::open(Arc::clone(fs), &p, meta.clone(), Arc::clone(cache))?;
            if t.meta.size != meta.size {
                return Err(Error::corruption(
                    p,
                    0,
                    format!("size differs from the manifest ({})", meta.size),
                ));
            }
            versions[*stripe as usize].add(usize::from(*level), Arc::new(t));
            live.insert(name);
        }
    }
    Ok((versions, live))
}

/// The batches of the WALs numbered `from` and up, in order.
fn read_wals(fs: &dyn Fs, dir: &Path, names: &[String], from: u64) -> Result<Vec<(u64, Vec<Op>)>> {
    let mut wals: Vec<u64> = names
        .iter()
        .filter_map(|n| wal::parse_wal_name(n))
        .filter(|n| *n >= from)
        .collect();
    wals.sort_unstable();
    // A torn tail is what a crash leaves at the end of the newest log that holds records;
    // newer logs may exist but be empty (a crash right after a rotation or an open).
    let mut recovered: Vec<(PathBuf, wal::Recovered)> = Vec::new();
    for n in &wals {
        let p = dir.join(wal::wal_name(*n));
        let data = fs.read(&p).map_err(Error::io(&p))?;
        recovered.push((p.clone(), wal::read_wal(&data, &p, true)?));
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
                    "damaged record in a WAL followed by newer records",
                ));
            }
        }
    }
    Ok(recovered.into_iter().flat_map(|(_, r)| r.batches).collect())
}

/// Replays batches into fresh memtables (one per stripe); raises the state's last sequence.
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

/// Deletes what the new manifest makes obsolete: older WALs, unreferenced SSTs, older
/// manifests, a leftover `CURRENT.tmp`.
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
