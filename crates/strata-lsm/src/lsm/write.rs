//! The write path: conditions, the WAL append, group commit, write stalls, and freezing the
//! memtables when they fill half the budget.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::inner::{Commit, Frozen, Inner};
use crate::engine::{Op, WriteBatch};
use crate::error::{Error, Result};
use crate::memtable::{Memtable, Value};
use crate::options::SyncMode;
use crate::sync::{lock, read, wait, wait_timeout, write};
use crate::wal::{self, WalWriter};

impl Inner {
    /// Applies a batch: checks its conditions, appends it to the WAL, inserts it into the
    /// memtables and (with [`SyncMode::Always`]) waits until it is durable.
    pub fn write(&self, batch: WriteBatch, sync: SyncMode) -> Result<()> {
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
            // Memtables that crossed half the budget while a frozen set was still being
            // written are frozen before this batch goes in, so that no frozen set holds more
            // than half the budget plus one batch.
            if self.active_bytes.load(Ordering::Relaxed) >= self.opts.memtable_budget_bytes / 2
                && !self.has_frozen.load(Ordering::Acquire)
            {
                self.freeze_locked(&mut c)?;
            }
            seq = c.last_seq + 1;
            let wal = c.wal()?;
            if let Err(source) = wal.append(seq, &batch.ops) {
                let e = Error::io(self.dir.join(wal::wal_name(wal.number())))(source);
                self.poison(&e);
                return Err(e);
            }
            c.last_seq = seq;
            let added = self.insert(seq, batch.ops);
            if sync == SyncMode::None {
                self.visible.fetch_max(seq, Ordering::AcqRel);
            }
            let total = self.active_bytes.fetch_add(added, Ordering::Relaxed) + added;
            if total >= self.opts.memtable_budget_bytes / 2
                && !self.has_frozen.load(Ordering::Acquire)
            {
                self.freeze_locked(&mut c)?;
            }
        }
        if sync == SyncMode::Always {
            self.wait_durable(seq)?;
        }
        if !self.opts.background
            && (self.has_frozen.load(Ordering::Acquire) || self.compact_needed())
        {
            self.maintain_inline()?;
        }
        Ok(())
    }

    /// Inserts the ops of batch `seq` into the active memtables; returns the bytes added.
    fn insert(&self, seq: u64, ops: Vec<Op>) -> usize {
        // One lock acquisition per stripe touched; ops keep their order within a stripe
        // (the sort is stable), so a later op on a key still wins.
        let mut ops: Vec<(usize, Vec<u8>, Value)> = ops
            .into_iter()
            .map(|op| {
                let (k, v) = match op {
                    Op::Put(k, v) => (k, Some(v)),
                    Op::Delete(k) => (k, None),
                };
                (self.stripe_of(&k), k, v)
            })
            .collect();
        ops.sort_by_key(|o| o.0);
        let st = read(&self.state);
        let mut added = 0;
        let mut it = ops.into_iter().peekable();
        while let Some(&(s, _, _)) = it.peek() {
            let group = std::iter::from_fn(|| it.next_if(|o| o.0 == s)).map(|(_, k, v)| (k, v));
            added += st.active[s].insert(seq, group);
        }
        added
    }

    /// Blocks while the memtables or some stripe's L0 are full.
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
            drop(wait_timeout(&self.stall_cv, g, Duration::from_millis(20)));
        }
    }

    /// Without a background thread: flushes and compacts on the writer's thread.
    fn maintain_inline(&self) -> Result<()> {
        self.flush_frozen()?;
        while self.compact_needed() {
            if !self.compact_one()? {
                break;
            }
        }
        Ok(())
    }

    /// True when some stripe has enough L0 files to compact.
    pub fn compact_needed(&self) -> bool {
        self.l0_max.load(Ordering::Relaxed) >= self.opts.l0_compaction_trigger
    }

    /// Waits until batch `seq` is durable, running the fsync when nobody else is (group
    /// commit).
    pub fn wait_durable(&self, seq: u64) -> Result<()> {
        let mut s = lock(&self.sync);
        loop {
            if s.synced_seq >= seq {
                return Ok(());
            }
            self.check_writable()?;
            if s.syncing {
                s = wait(&self.sync_cv, s);
                continue;
            }
            s.syncing = true;
            drop(s);
            let (target, syncer, number) = {
                let mut c = lock(&self.commit);
                let last = c.last_seq;
                match c.wal() {
                    Ok(w) => (last, w.syncer(), w.number()),
                    Err(e) => {
                        drop(c);
                        lock(&self.sync).syncing = false;
                        return Err(e);
                    }
                }
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
                    let e = Error::io(self.dir.join(wal::wal_name(number)))(source);
                    self.poison(&e);
                    return Err(e);
                }
            }
        }
    }

    /// Freezes the memtables and rotates the WAL. Called with the commit lock held.
    pub fn freeze_locked(&self, c: &mut Commit) -> Result<()> {
        let old = c.wal()?;
        if let Err(source) = old.sync() {
            let e = Error::io(self.dir.join(wal::wal_name(old.number())))(source);
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
        let chunk = crate::wal::prealloc_for(self.opts.memtable_budget_bytes);
        let wal = match WalWriter::create_with(self.fs.as_ref(), &self.dir, number, chunk) {
            Ok(w) => w,
            Err(e) => {
                self.poison(&e);
                return Err(e);
            }
        };
        c.wal = Some(wal);
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
            self.active_bytes.swap(0, Ordering::SeqCst),
            Ordering::SeqCst,
        );
        drop(st);
        self.signal_work();
        Ok(())
    }
}
