//! Flush: frozen memtables become L0 SSTs (LevelDB's `builder`), the manifest records them,
//! then the WALs they came from are deleted.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::inner::{Frozen, Inner};
use super::maint::Maint;
use crate::crash_point;
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::manifest::Edit;
use crate::memtable::Memtable;
use crate::sst::table::{sst_name, SstWriter, Table};
use crate::sync::{lock, read, write};
use crate::wal;

/// An SST written but not yet synced.
pub(super) type Unsynced = (PathBuf, Box<dyn WritableFile>);

impl Inner {
    /// Freezes what the memtables hold and writes it out.
    pub fn flush(&self) -> Result<()> {
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

    /// Writes the frozen memtables as L0 files. Returns false when there was nothing to do.
    pub fn flush_frozen(&self) -> Result<bool> {
        self.with_maint(|m| {
            let Some(frozen) = read(&self.state).frozen.clone() else {
                return Ok(false);
            };
            let r = self.flush_frozen_into(m, &frozen);
            if let Err(e) = &r {
                self.poison(e);
            }
            r.map(|()| true)
        })
    }

    fn flush_frozen_into(&self, m: &mut Maint, frozen: &Frozen) -> Result<()> {
        let mut new_tables = Vec::new();
        let mut edits = Vec::new();
        let mut unsynced = Vec::new();
        for (s, mem) in frozen.mems.iter().enumerate() {
            if let Some((t, file)) = self.write_memtable(s as u32, mem)? {
                unsynced.push(file);
                edits.push(Edit::AddFile {
                    stripe: s as u32,
                    level: 0,
                    meta: t.meta.clone(),
                });
                new_tables.push((s, t));
            }
        }
        sync_files(unsynced)?;
        if !new_tables.is_empty() {
            self.fs.sync_dir(&self.dir).map_err(Error::io(&self.dir))?;
        }
        edits.push(Edit::LogNumber(frozen.next_log));
        edits.push(Edit::NextFile(self.next_file.load(Ordering::SeqCst)));
        edits.push(Edit::LastSeq(frozen.last_seq));
        crash_point::reached(crash_point::FLUSH_SYNCED);
        m.log_and_apply(edits)?;
        crash_point::reached(crash_point::FLUSH_LOGGED);
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
        m.maybe_roll(self.fs.as_ref(), &self.dir, &self.next_file)
    }

    /// Deletes the WALs older than `keep_from` (the manifest says they are obsolete).
    fn delete_old_wals(&self, keep_from: u64) {
        if let Ok(names) = self.fs.list(&self.dir) {
            for n in names {
                if wal::parse_wal_name(&n).is_some_and(|num| num < keep_from) {
                    let _ = self.fs.remove(&self.dir.join(n));
                }
            }
        }
    }

    /// Writes a memtable as an SST, not yet synced (see [`sync_files`]).
    pub fn write_memtable(
        &self,
        stripe: u32,
        mem: &Memtable,
    ) -> Result<Option<(Arc<Table>, Unsynced)>> {
        if mem.is_empty() {
            return Ok(None);
        }
        let id = self.next_file.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.join(sst_name(stripe, id));
        let mut w = SstWriter::create(self.fs.as_ref(), &path, id, self.opts.block_bytes)?;
        mem.for_each_newest(|k, v| w.add(k, v))?;
        let (meta, file) = w.finish_unsynced()?;
        self.written.flushed(meta.size);
        let t = Arc::new(
            Table::open(Arc::clone(&self.fs), &path, meta, Arc::clone(&self.cache))?
                .with_mapped_reads(self.opts.mmap_reads),
        );
        Ok(Some((t, (path, file))))
    }
}

/// Syncs files in parallel: on journaling file systems concurrent fsyncs share journal
/// commits, so the 256 small files of one flush cost far less than 256 serial fsyncs.
pub(super) fn sync_files(files: Vec<Unsynced>) -> Result<()> {
    const THREADS: usize = 16;
    let sync_group = |g: Vec<Unsynced>| -> Result<()> {
        for (path, mut f) in g {
            f.sync().map_err(Error::io(path))?;
        }
        Ok(())
    };
    if files.len() <= 1 {
        return sync_group(files);
    }
    let per = files.len().div_ceil(THREADS);
    let mut groups: Vec<Vec<Unsynced>> = Vec::new();
    let mut it = files.into_iter().peekable();
    while it.peek().is_some() {
        groups.push(it.by_ref().take(per).collect());
    }
    let results: Vec<Result<()>> = std::thread::scope(|sc| {
        let handles: Vec<_> = groups
            .into_iter()
            .map(|g| sc.spawn(move || sync_group(g)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::InvalidArgument("fsync thread panicked".into())))
            })
            .collect()
    });
    results.into_iter().collect()
}
