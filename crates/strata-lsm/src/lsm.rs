//! [`LsmEngine`]: the striped LSM.
//!
//! Write path: a writer takes the commit lock, checks its batch's conditions against the
//! latest state, appends one WAL record (to the OS), inserts into the memtables of the
//! stripes it touches and releases the lock; with [`SyncMode::Always`] it then waits until a
//! sync covers its record. Whoever finds no sync running becomes the syncer and fsyncs for
//! everyone queued behind it (group commit). Readers see a batch only once it is
//! acknowledged-durable (`visible` sequence number).
//!
//! When the memtables hold half the budget, they are frozen together and the WAL rotates;
//! a background thread writes one L0 SST per stripe, records them in the manifest, then
//! deletes the old WAL. Writes stall while a frozen set is still being written and the new
//! memtables fill the other half, or while some stripe has too many L0 files.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::{Direction, Engine, KeyRange, KvIter, Op, Snapshot, WriteBatch};
use crate::error::{Error, Result};
use crate::fs::{Fs, RealFs};
use crate::iter::{LevelSource, MemSource, MergeIter};
use crate::manifest::{self, Edit, ManifestState, ManifestWriter, LEVELS};
use crate::memtable::{Memtable, Value};
use crate::options::{LsmOptions, SyncMode};
use crate::sst::bloom::key_hash;
use crate::sst::cache::BlockCache;
use crate::sst::table::{parse_sst_name, sst_name, Source, SstWriter, Table, TableIter};
use crate::wal::{self, WalWriter};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    match l.read() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    match l.write() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The files of one stripe: L0 newest first (ranges may overlap), deeper levels sorted by
/// smallest key with disjoint ranges.
#[derive(Clone, Default)]
pub struct StripeVersion {
    levels: [Vec<Arc<Table>>; LEVELS],
}

impl StripeVersion {
    fn bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|t| t.meta.size).sum()
    }

    fn add(&mut self, level: usize, t: Arc<Table>) {
        if level == 0 {
            self.levels[0].insert(0, t);
        } else {
            let l = &mut self.levels[level];
            let at = l.partition_point(|x| x.meta.smallest < t.meta.smallest);
            l.insert(at, t);
        }
    }

    fn remove(&mut self, level: usize, id: u64) {
        self.levels[level].retain(|t| t.meta.id != id);
    }
}

struct Frozen {
    mems: Vec<Arc<Memtable>>,
    next_log: u64,
    last_seq: u64,
}

struct State {
    active: Vec<Arc<Memtable>>,
    frozen: Option<Arc<Frozen>>,
    versions: Vec<Arc<StripeVersion>>,
}

struct Commit {
    wal: WalWriter,
    last_seq: u64,
}

#[derive(Default)]
struct SyncState {
    synced_seq: u64,
    syncing: bool,
}

struct Maint {
    manifest: ManifestWriter,
    mstate: ManifestState,
    compact_ptr: Vec<[Vec<u8>; LEVELS]>,
    rr: usize,
}

#[derive(Default)]
struct Work {
    pending: bool,
    shutdown: bool,
}

struct Inner {
    dir: PathBuf,
    fs: Arc<dyn Fs>,
    opts: LsmOptions,
    stripes: u32,
    cache: Arc<BlockCache>,
    state: RwLock<State>,
    commit: Mutex<Commit>,
    sync: Mutex<SyncState>,
    sync_cv: Condvar,
    visible: AtomicU64,
    poisoned: AtomicBool,
    poison_msg: Mutex<String>,
    closed: AtomicBool,
    active_bytes: AtomicUsize,
    frozen_bytes: AtomicUsize,
    has_frozen: AtomicBool,
    l0_max: AtomicUsize,
    next_file: AtomicU64,
    maint: Mutex<Option<Maint>>,
    work: Mutex<Work>,
    work_cv: Condvar,
    stall_cv: Condvar,
}

/// The striped LSM engine. See the module documentation and `docs/format/lsm.md`.
pub struct LsmEngine {
    inner: Arc<Inner>,
    bg: Mutex<Option<JoinHandle<()>>>,
}

/// Sizes and counts of a database, for `strata kv stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Number of stripes.
    pub stripes: u32,
    /// Number of SST files per level (all stripes).
    pub files_per_level: Vec<usize>,
    /// Bytes of SST files per level.
    pub bytes_per_level: Vec<u64>,
    /// Bytes of all SST files.
    pub sst_bytes: u64,
    /// Bytes charged to memtables (active and being flushed).
    pub memtable_bytes: usize,
    /// Bytes of live WAL files.
    pub wal_bytes: u64,
    /// Last sequence number.
    pub last_seq: u64,
}

/// What [`LsmEngine::verify`] checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// SST files verified.
    pub files: usize,
    /// Entries read back.
    pub entries: u64,
}

impl Inner {
    fn io(&self, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    }

    fn stripe_of(&self, key: &[u8]) -> usize {
        let part = match &self.opts.partitioner {
            Some(p) => &key[..p(key).min(key.len())],
            None => key,
        };
        (crc32fast::hash(part) % self.stripes) as usize
    }

    /// The one stripe a range can touch, when the range lies inside one partition.
    fn single_stripe(&self, range: &KeyRange) -> Option<usize> {
        if let (Bound::Included(s), Bound::Included(e)) = (&range.start, &range.end) {
            if s == e {
                return Some(self.stripe_of(s));
            }
        }
        let p = self.opts.partitioner.as_ref()?;
        let start = match &range.start {
            Bound::Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => return None,
        };
        let part = &start[..p(start).min(start.len())];
        if part.is_empty() {
            return None;
        }
        let inside = match (&range.end, strata_key::range::prefix_end(part)) {
            (_, None) => true,
            (Bound::Excluded(e), Some(pe)) => *e <= pe,
            (Bound::Included(e), Some(pe)) => *e < pe,
            (Bound::Unbounded, Some(_)) => false,
        };
        inside.then(|| (crc32fast::hash(part) % self.stripes) as usize)
    }

    fn poison(&self, why: &Error) {
        let mut m = lock(&self.poison_msg);
        if !self.poisoned.swap(true, Ordering::SeqCst) {
            *m = why.to_string();
        }
        drop(m);
        self.sync_cv.notify_all();
        self.stall_cv.notify_all();
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.poisoned.load(Ordering::SeqCst) {
            return Err(Error::Poisoned(lock(&self.poison_msg).clone()));
        }
        Ok(())
    }

    fn signal_work(&self) {
        lock(&self.work).pending = true;
        self.work_cv.notify_all();
    }

    /// The latest value of `key` at `seq` (`u64::MAX`: including unsynced writes).
    fn get_at(&self, key: &[u8], seq: Option<u64>) -> Result<Option<Vec<u8>>> {
        let s = self.stripe_of(key);
        let (active, frozen, version, seq) = {
            let st = read(&self.state);
            let seq = seq.unwrap_or_else(|| self.visible.load(Ordering::Acquire));
            (
                Arc::clone(&st.active[s]),
                st.frozen.as_ref().map(|f| Arc::clone(&f.mems[s])),
                Arc::clone(&st.versions[s]),
                seq,
            )
        };
        if let Some(v) = active.get(key, seq) {
            return Ok(v);
        }
        if let Some(f) = frozen {
            if let Some(v) = f.get(key, u64::MAX) {
                return Ok(v);
            }
        }
        Ok(lookup_version(&version, key)?.flatten())
    }

    fn stall(&self) -> Result<()> {
        loop {
            self.check_writable()?;
            let half = self.opts.memtable_budget_bytes / 2;
            let mem_full = self.has_frozen.load(Ordering::Acquire)
                && self.active_bytes.load(Ordering::Relaxed) >= half;
            let l0_full = self.l0_max.load(Ordering::Relaxed) >= self.opts.l0_stop_trigger;
            if !mem_full && !l0_full {
                return Ok(());
            }
            if !self.opts.background {
                self.maintain_inline()?;
                if self.l0_max.load(Ordering::Relaxed) >= self.opts.l0_stop_trigger
                    && !self.compact_one()?
                {
                    return Ok(());
                }
                continue;
            }
            self.signal_work();
            let g = lock(&self.work);
            let _ = self.stall_cv.wait_timeout(g, Duration::from_millis(20));
        }
    }

    fn maintain_inline(&self) -> Result<()> {
        self.flush_frozen()?;
        while self.compact_needed() {
            if !self.compact_one()? {
                break;
            }
        }
        Ok(())
    }

    fn compact_needed(&self) -> bool {
        self.l0_max.load(Ordering::Relaxed) >= self.opts.l0_compaction_trigger
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        self.check_writable()?;
        if batch.is_empty() {
            return Ok(());
        }
        self.stall()?;
        let seq;
        {
            let mut c = lock(&self.commit);
            self.check_writable()?;
            for (index, cond) in batch.conditions.iter().enumerate() {
                let cur = self.get_at(cond.key(), Some(u64::MAX))?;
                if !cond.holds(cur.as_deref()) {
                    return Err(Error::ConditionFailed {
                        index,
                        reason: format!("{cond:?}"),
                    });
                }
            }
            if batch.ops.is_empty() {
                return Ok(());
            }
            seq = c.last_seq + 1;
            if let Err(source) = c.wal.append(seq, &batch.ops) {
                let e = Error::Io {
                    path: self.dir.join(wal::wal_name(c.wal.number())),
                    source,
                };
                self.poison(&e);
                return Err(e);
            }
            c.last_seq = seq;
            let mut added = 0;
            {
                let st = read(&self.state);
                for op in batch.ops {
                    let (k, v) = match op {
                        Op::Put(k, v) => (k, Some(v)),
                        Op::Delete(k) => (k, None),
                    };
                    let s = self.stripe_of(&k);
                    added += st.active[s].insert(seq, std::iter::once((k, v)));
                }
            }
            if self.opts.sync == SyncMode::None {
                self.visible.store(seq, Ordering::Release);
            }
            let total = self.active_bytes.fetch_add(added, Ordering::Relaxed) + added;
            if total >= self.opts.memtable_budget_bytes / 2
                && !self.has_frozen.load(Ordering::Acquire)
            {
                self.freeze_locked(&mut c)?;
            }
        }
        if self.opts.sync == SyncMode::Always {
            self.wait_durable(seq)?;
        }
        if !self.opts.background
            && (self.has_frozen.load(Ordering::Acquire) || self.compact_needed())
        {
            self.maintain_inline()?;
        }
        Ok(())
    }

    fn wait_durable(&self, seq: u64) -> Result<()> {
        let mut s = lock(&self.sync);
        loop {
            if s.synced_seq >= seq {
                return Ok(());
            }
            self.check_writable()?;
            if s.syncing {
                s = match self.sync_cv.wait(s) {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
                continue;
            }
            s.syncing = true;
            drop(s);
            let (target, syncer, number) = {
                let c = lock(&self.commit);
                (c.last_seq, c.wal.syncer(), c.wal.number())
            };
            let r = syncer.sync();
            s = lock(&self.sync);
            s.syncing = false;
            match r {
                Ok(()) => {
                    s.synced_seq = s.synced_seq.max(target);
                    self.visible.fetch_max(target, Ordering::AcqRel);
                    self.sync_cv.notify_all();
                }
                Err(source) => {
                    let e = Error::Io {
                        path: self.dir.join(wal::wal_name(number)),
                        source,
                    };
                    self.poison(&e);
                    return Err(e);
                }
            }
        }
    }

    /// Freezes the memtables and rotates the WAL. Called with the commit lock held.
    fn freeze_locked(&self, c: &mut Commit) -> Result<()> {
        if let Err(source) = c.wal.sync() {
            let e = Error::Io {
                path: self.dir.join(wal::wal_name(c.wal.number())),
                source,
            };
            self.poison(&e);
            return Err(e);
        }
        {
            let mut s = lock(&self.sync);
            s.synced_seq = s.synced_seq.max(c.last_seq);
            self.visible.fetch_max(c.last_seq, Ordering::AcqRel);
        }
        self.sync_cv.notify_all();
        let number = self.next_file.fetch_add(1, Ordering::SeqCst);
        let wal = match WalWriter::create(self.fs.as_ref(), &self.dir, number) {
            Ok(w) => w,
            Err(e) => {
                self.poison(&e);
                return Err(e);
            }
        };
        c.wal = wal;
        let mut st = write(&self.state);
        let fresh: Vec<Arc<Memtable>> = (0..self.stripes)
            .map(|_| Arc::new(Memtable::new()))
            .collect();
        let mems = std::mem::replace(&mut st.active, fresh);
        st.frozen = Some(Arc::new(Frozen {
            mems,
            next_log: number,
            last_seq: c.last_seq,
        }));
        self.has_frozen.store(true, Ordering::Release);
        self.frozen_bytes.store(
            self.active_bytes.swap(0, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        drop(st);
        self.signal_work();
        Ok(())
    }

    /// Writes the frozen memtables as L0 files. Returns false when there was nothing to do.
    fn flush_frozen(&self) -> Result<bool> {
        let mut mg = lock(&self.maint);
        let Some(m) = mg.as_mut() else {
            return Err(Error::Closed);
        };
        let Some(frozen) = read(&self.state).frozen.clone() else {
            return Ok(false);
        };
        let r = self.flush_frozen_inner(m, &frozen);
        if let Err(e) = &r {
            self.poison(e);
        }
        r.map(|()| true)
    }

    fn flush_frozen_inner(&self, m: &mut Maint, frozen: &Frozen) -> Result<()> {
        let mut new_tables = Vec::new();
        let mut edits = Vec::new();
        for (s, mem) in frozen.mems.iter().enumerate() {
            if let Some(t) = self.write_memtable(s as u32, mem)? {
                edits.push(Edit::AddFile {
                    stripe: s as u32,
                    level: 0,
                    meta: t.meta.clone(),
                });
                new_tables.push((s, t));
            }
        }
        if !new_tables.is_empty() {
            self.fs.sync_dir(&self.dir).map_err(self.io(&self.dir))?;
        }
        edits.push(Edit::LogNumber(frozen.next_log));
        edits.push(Edit::NextFile(self.next_file.load(Ordering::SeqCst)));
        edits.push(Edit::LastSeq(frozen.last_seq));
        m.manifest.append(&edits)?;
        for e in edits {
            m.mstate.apply(e);
        }
        {
            let mut st = write(&self.state);
            for (s, t) in new_tables {
                let mut v = (*st.versions[s]).clone();
                v.add(0, t);
                st.versions[s] = Arc::new(v);
            }
            st.frozen = None;
            self.has_frozen.store(false, Ordering::Release);
            self.frozen_bytes.store(0, Ordering::Relaxed);
            self.update_l0_max(&st);
        }
        self.stall_cv.notify_all();
        self.delete_old_wals(frozen.next_log);
        self.maybe_roll_manifest(m)?;
        Ok(())
    }

    fn update_l0_max(&self, st: &State) {
        let max = st
            .versions
            .iter()
            .map(|v| v.levels[0].len())
            .max()
            .unwrap_or(0);
        self.l0_max.store(max, Ordering::Relaxed);
    }

    fn delete_old_wals(&self, keep_from: u64) {
        if let Ok(names) = self.fs.list(&self.dir) {
            for n in names {
                if wal::parse_wal_name(&n).is_some_and(|num| num < keep_from) {
                    let _ = self.fs.remove(&self.dir.join(n));
                }
            }
        }
    }

    fn maybe_roll_manifest(&self, m: &mut Maint) -> Result<()> {
        if m.manifest.bytes < 4 << 20 {
            return Ok(());
        }
        let number = self.next_file.fetch_add(1, Ordering::SeqCst);
        m.mstate.next_file = m.mstate.next_file.max(number + 1);
        let old = m.manifest.number;
        m.manifest = ManifestWriter::create(self.fs.as_ref(), &self.dir, number, &m.mstate)?;
        let _ = self.fs.remove(&self.dir.join(manifest::manifest_name(old)));
        Ok(())
    }

    fn write_memtable(&self, stripe: u32, mem: &Memtable) -> Result<Option<Arc<Table>>> {
        if mem.is_empty() {
            return Ok(None);
        }
        let id = self.next_file.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.join(sst_name(stripe, id));
        let mut w = SstWriter::create(self.fs.as_ref(), &path, id, self.opts.block_bytes)?;
        mem.for_each_newest(|k, v| w.add(k, v))?;
        let meta = w.finish()?;
        Ok(Some(Arc::new(Table::open(
            Arc::clone(&self.fs),
            &path,
            meta,
            Arc::clone(&self.cache),
        )?)))
    }

    /// Runs one compaction job somewhere; false when no stripe needs one.
    fn compact_one(&self) -> Result<bool> {
        let mut mg = lock(&self.maint);
        let Some(m) = mg.as_mut() else {
            return Err(Error::Closed);
        };
        let versions = read(&self.state).versions.clone();
        let n = versions.len();
        for i in 0..n {
            let s = (m.rr + i) % n;
            if let Some(job) = self.pick(s, &versions[s], m) {
                m.rr = (s + 1) % n;
                let r = self.run_job(m, s, &versions[s], job);
                if let Err(e) = &r {
                    self.poison(e);
                }
                return r.map(|()| true);
            }
        }
        Ok(false)
    }

    fn pick(&self, s: usize, v: &StripeVersion, m: &mut Maint) -> Option<Job> {
        if v.levels[0].len() >= self.opts.l0_compaction_trigger {
            let inputs0 = v.levels[0].clone();
            let lo = inputs0
                .iter()
                .map(|t| t.meta.smallest.clone())
                .min()
                .unwrap_or_default();
            let hi = inputs0
                .iter()
                .map(|t| t.meta.largest.clone())
                .max()
                .unwrap_or_default();
            let l1 = overlapping(&v.levels[1], &lo, &hi);
            return Some(Job {
                upper: inputs0,
                upper_level: 0,
                lower: l1,
                out_level: 1,
            });
        }
        let mut target = self.opts.level1_bytes.max(1);
        for level in 1..LEVELS - 1 {
            if v.bytes(level) > target {
                let files = &v.levels[level];
                let ptr = &m.compact_ptr[s][level];
                let pick = files
                    .iter()
                    .find(|t| t.meta.smallest > *ptr)
                    .or(files.first())?;
                m.compact_ptr[s][level] = pick.meta.largest.clone();
                let lower = overlapping(
                    &v.levels[level + 1],
                    &pick.meta.smallest,
                    &pick.meta.largest,
                );
                return Some(Job {
                    upper: vec![Arc::clone(pick)],
                    upper_level: level,
                    lower,
                    out_level: level + 1,
                });
            }
            target = target.saturating_mul(10);
        }
        None
    }

    /// Merges the job's inputs into new files of the output level and installs them.
    fn run_job(&self, m: &mut Maint, s: usize, v: &StripeVersion, job: Job) -> Result<()> {
        let bottom = (job.out_level + 1..LEVELS).all(|l| v.levels[l].is_empty());
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        if job.upper_level == 0 {
            for t in &job.upper {
                sources.push(Box::new(TableIter::new(
                    Arc::clone(t),
                    Bound::Unbounded,
                    Bound::Unbounded,
                    false,
                )));
            }
        } else {
            sources.push(Box::new(LevelSource::new(
                job.upper.clone(),
                Bound::Unbounded,
                Bound::Unbounded,
                false,
            )));
        }
        sources.push(Box::new(LevelSource::new(
            job.lower.clone(),
            Bound::Unbounded,
            Bound::Unbounded,
            false,
        )));
        let removed: Vec<(usize, Arc<Table>)> = job
            .upper
            .iter()
            .map(|t| (job.upper_level, Arc::clone(t)))
            .chain(job.lower.iter().map(|t| (job.out_level, Arc::clone(t))))
            .collect();
        self.merge_into(m, s, sources, bottom, job.out_level, removed)
    }

    fn merge_into(
        &self,
        m: &mut Maint,
        s: usize,
        sources: Vec<Box<dyn Source>>,
        bottom: bool,
        out_level: usize,
        removed: Vec<(usize, Arc<Table>)>,
    ) -> Result<()> {
        let mut merge = MergeIter::new(sources, Direction::Forward);
        if !bottom {
            merge = merge.keep_tombstones();
        }
        let mut outputs: Vec<Arc<Table>> = Vec::new();
        let mut w: Option<SstWriter> = None;
        let finish = |w: SstWriter, outputs: &mut Vec<Arc<Table>>| -> Result<()> {
            let meta = w.finish()?;
            let path = self.dir.join(sst_name(s as u32, meta.id));
            outputs.push(Arc::new(Table::open(
                Arc::clone(&self.fs),
                &path,
                meta,
                Arc::clone(&self.cache),
            )?));
            Ok(())
        };
        while let Some((k, v)) = merge.next_entry()? {
            if w.is_none() {
                let id = self.next_file.fetch_add(1, Ordering::SeqCst);
                w = Some(SstWriter::create(
                    self.fs.as_ref(),
                    &self.dir.join(sst_name(s as u32, id)),
                    id,
                    self.opts.block_bytes,
                )?);
            }
            if let Some(cur) = w.as_mut() {
                cur.add(&k, v.as_deref())?;
                if cur.estimated_size() >= self.opts.sst_target_bytes {
                    if let Some(done) = w.take() {
                        finish(done, &mut outputs)?;
                    }
                }
            }
        }
        if let Some(done) = w.take() {
            finish(done, &mut outputs)?;
        }
        if !outputs.is_empty() {
            self.fs.sync_dir(&self.dir).map_err(self.io(&self.dir))?;
        }
        let mut edits = Vec::new();
        for (level, t) in &removed {
            edits.push(Edit::RemoveFile {
                stripe: s as u32,
                level: *level as u8,
                id: t.meta.id,
            });
        }
        for t in &outputs {
            edits.push(Edit::AddFile {
                stripe: s as u32,
                level: out_level as u8,
                meta: t.meta.clone(),
            });
        }
        edits.push(Edit::NextFile(self.next_file.load(Ordering::SeqCst)));
        m.manifest.append(&edits)?;
        for e in edits {
            m.mstate.apply(e);
        }
        {
            let mut st = write(&self.state);
            let mut nv = (*st.versions[s]).clone();
            for (level, t) in &removed {
                nv.remove(*level, t.meta.id);
            }
            for t in outputs {
                nv.add(out_level, t);
            }
            st.versions[s] = Arc::new(nv);
            self.update_l0_max(&st);
        }
        for (_, t) in removed {
            t.mark_obsolete();
        }
        self.stall_cv.notify_all();
        self.maybe_roll_manifest(m)
    }

    /// Merges every file of every stripe into the last level, dropping tombstones.
    fn compact_all(&self) -> Result<()> {
        let mut mg = lock(&self.maint);
        let Some(m) = mg.as_mut() else {
            return Err(Error::Closed);
        };
        for s in 0..self.stripes as usize {
            let v = Arc::clone(&read(&self.state).versions[s]);
            let files: usize = v.levels.iter().map(Vec::len).sum();
            if files == 0
                || (files == 1 && v.levels[0].is_empty() && !v.levels[LEVELS - 1].is_empty())
            {
                continue;
            }
            let mut sources: Vec<Box<dyn Source>> = Vec::new();
            let mut removed = Vec::new();
            for t in &v.levels[0] {
                sources.push(Box::new(TableIter::new(
                    Arc::clone(t),
                    Bound::Unbounded,
                    Bound::Unbounded,
                    false,
                )));
                removed.push((0, Arc::clone(t)));
            }
            for level in 1..LEVELS {
                sources.push(Box::new(LevelSource::new(
                    v.levels[level].clone(),
                    Bound::Unbounded,
                    Bound::Unbounded,
                    false,
                )));
                removed.extend(v.levels[level].iter().map(|t| (level, Arc::clone(t))));
            }
            let r = self.merge_into(m, s, sources, true, LEVELS - 1, removed);
            if let Err(e) = &r {
                self.poison(e);
            }
            r?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        self.check_writable()?;
        loop {
            self.flush_frozen()?;
            let mut c = lock(&self.commit);
            self.check_writable()?;
            if self.has_frozen.load(Ordering::Acquire) {
                continue;
            }
            if self.active_bytes.load(Ordering::Relaxed) == 0 {
                return Ok(());
            }
            self.freeze_locked(&mut c)?;
            drop(c);
            self.flush_frozen()?;
            return Ok(());
        }
    }

    fn snapshot_of(self: &Arc<Self>, only: Option<usize>) -> LsmSnapshot {
        let st = read(&self.state);
        let seq = self.visible.load(Ordering::Acquire);
        let view = |s: usize| StripeView {
            stripe: s,
            active: Arc::clone(&st.active[s]),
            frozen: st.frozen.as_ref().map(|f| Arc::clone(&f.mems[s])),
            version: Arc::clone(&st.versions[s]),
        };
        let views = match only {
            Some(s) => vec![view(s)],
            None => (0..self.stripes as usize).map(view).collect(),
        };
        LsmSnapshot {
            inner: Arc::clone(self),
            seq,
            views,
        }
    }
}

struct Job {
    upper: Vec<Arc<Table>>,
    upper_level: usize,
    lower: Vec<Arc<Table>>,
    out_level: usize,
}

fn overlapping(files: &[Arc<Table>], lo: &[u8], hi: &[u8]) -> Vec<Arc<Table>> {
    files
        .iter()
        .filter(|t| t.meta.largest.as_slice() >= lo && t.meta.smallest.as_slice() <= hi)
        .cloned()
        .collect()
}

/// Looks a key up in the files of a stripe: `None` when no file has it.
fn lookup_version(v: &StripeVersion, key: &[u8]) -> Result<Option<Value>> {
    let hash = key_hash(key);
    for t in &v.levels[0] {
        if let Some(val) = t.get(key, hash)? {
            return Ok(Some(val));
        }
    }
    for level in &v.levels[1..] {
        let i = level.partition_point(|t| t.meta.largest.as_slice() < key);
        if let Some(t) = level.get(i) {
            if let Some(val) = t.get(key, hash)? {
                return Ok(Some(val));
            }
        }
    }
    Ok(None)
}

struct StripeView {
    stripe: usize,
    active: Arc<Memtable>,
    frozen: Option<Arc<Memtable>>,
    version: Arc<StripeVersion>,
}

/// A consistent view: the memtables and files of every stripe, and the visible sequence.
struct LsmSnapshot {
    inner: Arc<Inner>,
    seq: u64,
    views: Vec<StripeView>,
}

fn overlaps_range(t: &Table, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above_lo = match lo {
        Bound::Included(l) => t.meta.largest >= *l,
        Bound::Excluded(l) => t.meta.largest > *l,
        Bound::Unbounded => true,
    };
    let below_hi = match hi {
        Bound::Included(h) => t.meta.smallest <= *h,
        Bound::Excluded(h) => t.meta.smallest < *h,
        Bound::Unbounded => true,
    };
    above_lo && below_hi
}

impl LsmSnapshot {
    fn view(&self, s: usize) -> Option<&StripeView> {
        if self.views.len() == 1 {
            return self.views.first().filter(|v| v.stripe == s);
        }
        self.views.get(s)
    }
}

impl Snapshot for LsmSnapshot {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let s = self.inner.stripe_of(key);
        let Some(v) = self.view(s) else {
            return Err(Error::InvalidArgument(
                "key outside the snapshot's partition".into(),
            ));
        };
        if let Some(val) = v.active.get(key, self.seq) {
            return Ok(val);
        }
        if let Some(f) = &v.frozen {
            if let Some(val) = f.get(key, u64::MAX) {
                return Ok(val);
            }
        }
        Ok(lookup_version(&v.version, key)?.flatten())
    }

    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        let views: Vec<&StripeView> = match self.inner.single_stripe(&range) {
            Some(s) => self.view(s).into_iter().collect(),
            None => {
                if self.views.len() != self.inner.stripes as usize {
                    return Err(Error::InvalidArgument(
                        "range outside the snapshot's partition".into(),
                    ));
                }
                self.views.iter().collect()
            }
        };
        let (lo, hi) = (range.start, range.end);
        let reverse = direction == Direction::Reverse;
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        for v in views {
            sources.push(Box::new(MemSource::new(
                Arc::clone(&v.active),
                lo.clone(),
                hi.clone(),
                direction,
                self.seq,
            )));
            if let Some(f) = &v.frozen {
                sources.push(Box::new(MemSource::new(
                    Arc::clone(f),
                    lo.clone(),
                    hi.clone(),
                    direction,
                    u64::MAX,
                )));
            }
            for t in &v.version.levels[0] {
                if overlaps_range(t, &lo, &hi) {
                    sources.push(Box::new(TableIter::new(
                        Arc::clone(t),
                        lo.clone(),
                        hi.clone(),
                        reverse,
                    )));
                }
            }
            for level in &v.version.levels[1..] {
                let mut files: Vec<Arc<Table>> = level
                    .iter()
                    .filter(|t| overlaps_range(t, &lo, &hi))
                    .cloned()
                    .collect();
                if files.is_empty() {
                    continue;
                }
                if reverse {
                    files.reverse();
                }
                sources.push(Box::new(LevelSource::new(
                    files,
                    lo.clone(),
                    hi.clone(),
                    reverse,
                )));
            }
        }
        Ok(Box::new(MergeIter::new(sources, direction)))
    }
}

impl LsmEngine {
    /// Opens (creating if needed) the database in directory `path`: reads the manifest,
    /// replays the WALs it does not cover, writes what they held as L0 files, and starts a
    /// fresh WAL and manifest.
    pub fn open(path: &Path, options: LsmOptions) -> Result<LsmEngine> {
        let fs: Arc<dyn Fs> = options.fs.clone().unwrap_or_else(|| Arc::new(RealFs));
        let dir = path.to_path_buf();
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| Error::Io { path: p, source }
        };
        fs.create_dir_all(&dir).map_err(io(&dir))?;
        let mut mstate = match manifest::load_current(fs.as_ref(), &dir)? {
            Some((_, st)) => st,
            None => {
                if options.stripes == 0 || options.stripes > 65_536 {
                    return Err(Error::InvalidArgument(format!(
                        "stripes must be in 1..=65536, not {}",
                        options.stripes
                    )));
                }
                ManifestState {
                    stripes: options.stripes,
                    log_number: 0,
                    next_file: 1,
                    last_seq: 0,
                    files: Default::default(),
                }
            }
        };
        let stripes = mstate.stripes;
        let cache = Arc::new(BlockCache::new(options.block_cache_bytes));
        let names = fs.list(&dir).map_err(io(&dir))?;
        let mut max_number = mstate.next_file;
        for n in &names {
            let num = wal::parse_wal_name(n)
                .or_else(|| parse_sst_name(n).map(|x| x.1))
                .or_else(|| n.strip_prefix("MANIFEST-").and_then(|x| x.parse().ok()));
            if let Some(num) = num {
                max_number = max_number.max(num + 1);
            }
        }
        let next_file = AtomicU64::new(max_number);
        // Live files.
        let mut versions: Vec<StripeVersion> =
            (0..stripes).map(|_| StripeVersion::default()).collect();
        let mut live = std::collections::HashSet::new();
        for ((stripe, level), files) in &mstate.files {
            if *stripe >= stripes {
                return Err(Error::Corruption {
                    file: dir.join("CURRENT"),
                    offset: 0,
                    reason: format!("manifest lists stripe {stripe} of {stripes}"),
                });
            }
            for meta in files.values() {
                let p = dir.join(sst_name(*stripe, meta.id));
                if !names.iter().any(|n| *n == sst_name(*stripe, meta.id)) {
                    return Err(Error::Corruption {
                        file: p,
                        offset: 0,
                        reason: "SST listed in the manifest is missing".into(),
                    });
                }
                let t = Table::open(Arc::clone(&fs), &p, meta.clone(), Arc::clone(&cache))?;
                if t.meta.size != meta.size {
                    return Err(Error::Corruption {
                        file: p,
                        offset: 0,
                        reason: format!("size differs from the manifest ({})", meta.size),
                    });
                }
                versions[*stripe as usize].add(usize::from(*level), Arc::new(t));
                live.insert(sst_name(*stripe, meta.id));
            }
        }
        // WAL replay.
        let mut wals: Vec<u64> = names
            .iter()
            .filter_map(|n| wal::parse_wal_name(n))
            .filter(|n| *n >= mstate.log_number)
            .collect();
        wals.sort_unstable();
        let mems: Vec<Arc<Memtable>> = (0..stripes).map(|_| Arc::new(Memtable::new())).collect();
        let mut last_seq = mstate.last_seq;
        let proto = Inner {
            dir: dir.clone(),
            fs: Arc::clone(&fs),
            opts: options.clone(),
            stripes,
            cache: Arc::clone(&cache),
            state: RwLock::new(State {
                active: mems.clone(),
                frozen: None,
                versions: Vec::new(),
            }),
            commit: Mutex::new(Commit {
                wal: WalWriter::create(
                    fs.as_ref(),
                    &dir,
                    next_file.fetch_add(1, Ordering::SeqCst),
                )?,
                last_seq: 0,
            }),
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
        let new_wal = lock(&proto.commit).wal.number();
        // A torn tail is what a crash leaves at the end of the newest log that holds records;
        // newer logs may exist but be empty (a crash right after a rotation or an open).
        let mut recovered = Vec::new();
        for n in &wals {
            let p = dir.join(wal::wal_name(*n));
            let data = fs.read(&p).map_err(io(&p))?;
            recovered.push((p.clone(), wal::read_wal(&data, &p, true)?));
        }
        for (i, (p, rec)) in recovered.iter().enumerate() {
            if let Some(at) = rec.torn_at {
                if recovered[i + 1..]
                    .iter()
                    .any(|(_, r)| !r.batches.is_empty())
                {
                    return Err(Error::Corruption {
                        file: p.clone(),
                        offset: at,
                        reason: "damaged record in a WAL followed by newer records".into(),
                    });
                }
            }
        }
        for (_, rec) in recovered {
            for (seq, ops) in rec.batches {
                for op in ops {
                    let (k, v) = match op {
                        Op::Put(k, v) => (k, Some(v)),
                        Op::Delete(k) => (k, None),
                    };
                    let s = proto.stripe_of(&k);
                    mems[s].insert(seq, std::iter::once((k, v)));
                }
                last_seq = last_seq.max(seq);
            }
        }
        // What the WALs held becomes L0 files, so that the old WALs can go.
        for (s, mem) in mems.iter().enumerate() {
            if let Some(t) = proto.write_memtable(s as u32, mem)? {
                mstate.apply(Edit::AddFile {
                    stripe: s as u32,
                    level: 0,
                    meta: t.meta.clone(),
                });
                live.insert(sst_name(s as u32, t.meta.id));
                versions[s].add(0, t);
            }
        }
        fs.sync_dir(&dir).map_err(io(&dir))?;
        mstate.log_number = new_wal;
        mstate.last_seq = last_seq;
        let manifest_number = proto.next_file.fetch_add(1, Ordering::SeqCst);
        mstate.next_file = proto.next_file.load(Ordering::SeqCst);
        let mw = ManifestWriter::create(fs.as_ref(), &dir, manifest_number, &mstate)?;
        // Everything not live is garbage of an earlier run.
        for n in &names {
            let stale = wal::parse_wal_name(n).is_some_and(|w| w < new_wal)
                || (parse_sst_name(n).is_some() && !live.contains(n))
                || (n.starts_with("MANIFEST-") && *n != manifest::manifest_name(manifest_number))
                || n == "CURRENT.tmp";
            if stale {
                let _ = fs.remove(&dir.join(n));
            }
        }
        {
            let mut st = write(&proto.state);
            st.active = (0..stripes).map(|_| Arc::new(Memtable::new())).collect();
            st.versions = versions.into_iter().map(Arc::new).collect();
            proto.update_l0_max(&st);
        }
        lock(&proto.commit).last_seq = last_seq;
        lock(&proto.sync).synced_seq = last_seq;
        proto.visible.store(last_seq, Ordering::SeqCst);
        *lock(&proto.maint) = Some(Maint {
            manifest: mw,
            mstate,
            compact_ptr: (0..stripes).map(|_| Default::default()).collect(),
            rr: 0,
        });
        let inner = Arc::new(proto);
        let bg = if options.background {
            let i2 = Arc::clone(&inner);
            Some(
                std::thread::Builder::new()
                    .name("strata-lsm-bg".into())
                    .spawn(move || background(i2))
                    .map_err(|source| Error::Io {
                        path: dir.clone(),
                        source,
                    })?,
            )
        } else {
            None
        };
        Ok(LsmEngine {
            inner,
            bg: Mutex::new(bg),
        })
    }

    /// Reads every block of every live SST and checks its checksum and key order (the WALs
    /// and the manifest were checked when the database was opened).
    pub fn verify(&self) -> Result<VerifyReport> {
        self.inner.check_open()?;
        let versions = read(&self.inner.state).versions.clone();
        let mut r = VerifyReport::default();
        for v in versions {
            for level in &v.levels {
                for t in level {
                    let n = t.verify()?;
                    if n != t.meta.entries {
                        return Err(Error::Corruption {
                            file: t.path().to_path_buf(),
                            offset: 0,
                            reason: format!("{n} entries, the manifest says {}", t.meta.entries),
                        });
                    }
                    r.files += 1;
                    r.entries += n;
                }
            }
        }
        Ok(r)
    }

    /// Sizes and counts.
    pub fn stats(&self) -> Result<Stats> {
        let i = &self.inner;
        i.check_open()?;
        let versions = read(&i.state).versions.clone();
        let mut s = Stats {
            stripes: i.stripes,
            files_per_level: vec![0; LEVELS],
            bytes_per_level: vec![0; LEVELS],
            memtable_bytes: i.active_bytes.load(Ordering::Relaxed)
                + i.frozen_bytes.load(Ordering::Relaxed),
            last_seq: lock(&i.commit).last_seq,
            ..Stats::default()
        };
        for v in versions {
            for (l, files) in v.levels.iter().enumerate() {
                s.files_per_level[l] += files.len();
                let b: u64 = files.iter().map(|t| t.meta.size).sum();
                s.bytes_per_level[l] += b;
                s.sst_bytes += b;
            }
        }
        for n in i.fs.list(&i.dir).map_err(i.io(&i.dir))? {
            if wal::parse_wal_name(&n).is_some() {
                if let Ok(f) = i.fs.open(&i.dir.join(&n)) {
                    s.wal_bytes += f.len();
                }
            }
        }
        Ok(s)
    }

    /// Waits until no flush or compaction is pending (for benchmarks and tests).
    pub fn wait_for_compactions(&self) -> Result<()> {
        let i = &self.inner;
        loop {
            i.check_open()?;
            if i.has_frozen.load(Ordering::Acquire) {
                i.flush_frozen()?;
                continue;
            }
            if !i.compact_one()? {
                return Ok(());
            }
        }
    }

    /// The stripe of a key.
    pub fn stripe_of(&self, key: &[u8]) -> u32 {
        self.inner.stripe_of(key) as u32
    }

    /// The number of stripes (as recorded on disk).
    pub fn stripes(&self) -> u32 {
        self.inner.stripes
    }
}

fn background(inner: Arc<Inner>) {
    loop {
        {
            let mut w = lock(&inner.work);
            while !w.pending && !w.shutdown {
                w = match inner.work_cv.wait_timeout(w, Duration::from_millis(200)) {
                    Ok(g) => g.0,
                    Err(p) => p.into_inner().0,
                };
                if inner.has_frozen.load(Ordering::Acquire) || inner.compact_needed() {
                    break;
                }
            }
            if w.shutdown {
                return;
            }
            w.pending = false;
        }
        if inner.poisoned.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        // Errors poison the engine inside these calls; writers see them.
        let _ = inner.flush_frozen();
        loop {
            if lock(&inner.work).shutdown || inner.poisoned.load(Ordering::SeqCst) {
                break;
            }
            if inner.has_frozen.load(Ordering::Acquire) {
                let _ = inner.flush_frozen();
            }
            match inner.compact_one() {
                Ok(true) => continue,
                _ => break,
            }
        }
        inner.stall_cv.notify_all();
    }
}

impl Engine for LsmEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.check_open()?;
        self.inner.get_at(key, None)
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.write(batch)
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        self.inner.check_open()?;
        Ok(Arc::new(self.inner.snapshot_of(None)))
    }

    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        self.inner.check_open()?;
        let only = self.inner.single_stripe(&range);
        self.inner.snapshot_of(only).range(range, direction)
    }

    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    fn compact(&self) -> Result<()> {
        self.inner.flush()?;
        self.inner.compact_all()
    }

    fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        {
            lock(&self.inner.work).shutdown = true;
            self.inner.work_cv.notify_all();
        }
        if let Some(h) = lock(&self.bg).take() {
            let _ = h.join();
        }
        self.inner.stall_cv.notify_all();
        if self.inner.poisoned.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut c = lock(&self.inner.commit);
        let number = c.wal.number();
        c.wal.sync().map_err(|source| Error::Io {
            path: self.inner.dir.join(wal::wal_name(number)),
            source,
        })?;
        *lock(&self.inner.maint) = None;
        Ok(())
    }
}

impl Drop for LsmEngine {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
