//! The write path: conditions, the WAL append, group commit, write stalls, and freezing the
//! memtables when they fill half the budget.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use std::sync::MutexGuard;

use super::inner::{Commit, Frozen, Inner, SyncRequest, SyncState};
use crate::engine::WriteBatch;
use crate::error::{Error, Result};
use crate::fs::FileSyncer;
use crate::memtable::Memtable;
use crate::options::SyncMode;
use crate::partition::Partitioner;
use crate::sync::{lock, read, wait, wait_timeout, write};
use crate::wal::{self, WalWriter};

/// Synced batches of at least this many ops have their fsync run by the sync thread while
/// the writer fills the memtables; smaller ones sync on the writer's thread. A single-op
/// synced write through the sync thread took ~4.6 more context switches than an inline
/// fsync (perf `sched:sched_switch`, 10^5 fillsync: 732 per 100 writes against fjall's 271)
/// to overlap a memtable insert of a few microseconds.
const SYNC_AHEAD_OPS: usize = 32;

impl Inner {
    /// Applies a batch: checks its conditions, appends it to the WAL, inserts it into the
    /// memtables and (with [`SyncMode::Always`]) waits until it is durable.
    pub fn write(&self, mut batch: WriteBatch, sync: SyncMode) -> Result<()> {
        let r = self.write_batch(&mut batch, sync);
        crate::batch::recycle(batch);
        r
    }

    /// [`Inner::write`] of a borrowed batch (mutable: its WAL record is framed in its own
    /// buffer, see [`WalWriter::append_in_place`]).
    fn write_batch(&self, batch: &mut WriteBatch, sync: SyncMode) -> Result<()> {
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
            if batch.op_count() == 0 {
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
            if let Err(source) = wal.append_in_place(seq, batch) {
                return Err(self.wal_failed(wal.number(), source));
            }
            // Only a batch whose memtable inserts take long enough to hide behind the fsync
            // is handed to the sync thread; a small one syncs on this thread (the group
            // commit of `wait_durable`): the hand-off costs more than it overlaps.
            let ahead = sync == SyncMode::Always
                && self.opts.background
                && batch.op_count() >= SYNC_AHEAD_OPS;
            let handle = ahead.then(|| (wal.syncer(), wal.number()));
            c.last_seq = seq;
            if let Some(handle) = handle {
                // The sync thread runs the fsync while this writer fills the memtables; the
                // write is still acknowledged, and made visible, only once it is durable
                // (`wait_durable`).
                self.request_sync(seq, handle);
            }
            let added = self.insert(seq, batch);
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
    fn insert(&self, seq: u64, batch: &WriteBatch) -> usize {
        let st = read(&self.state);
        let stripes = stripes_of(
            &self.partitioner,
            self.stripes,
            batch.iter().map(|(k, _)| k),
        );
        let Some(&first) = stripes.first() else {
            return 0;
        };
        if stripes.iter().all(|&s| s == first) {
            return st.active[first as usize].insert_refs(seq, batch.iter());
        }
        // One lock acquisition per stripe touched: the ops in stripe order by a counting sort
        // (stable, so ops keep their order within a stripe and a later op on a key still wins).
        let order = stripe_order(&stripes, self.stripes as usize);
        let mut added = 0;
        let mut at = 0;
        while at < order.len() {
            let s = stripes[order[at] as usize];
            let end = at
                + order[at..]
                    .iter()
                    .position(|&i| stripes[i as usize] != s)
                    .unwrap_or(order.len() - at);
            let group = order[at..end].iter().filter_map(|&i| batch.get(i as usize));
            added += st.active[s as usize].insert_refs(seq, group);
            at = end;
        }
        added
    }

    /// Asks the sync thread to make batch `seq` durable; `wal` is the WAL it was appended to
    /// (every earlier WAL was synced when it was rotated out, see `freeze_locked`). Called
    /// with the commit lock held (the lock order is commit, then sync).
    fn request_sync(&self, seq: u64, (syncer, wal): (Arc<dyn FileSyncer>, u64)) {
        let mut s = lock(&self.sync);
        if s.request.as_ref().is_none_or(|r| r.seq < seq) {
            s.request = Some(SyncRequest { seq, syncer, wal });
        }
        drop(s);
        self.sync_thread_cv.notify_one();
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
                // The sync thread does not publish what it made durable (it runs while the
                // writer still fills the memtables); this writer's batch, and every earlier
                // one (inserted in order under the commit lock), is in the memtables now.
                self.visible.fetch_max(seq, Ordering::AcqRel);
                return Ok(());
            }
            if let Some((upto, path, kind, msg)) = &s.failed {
                if seq <= *upto {
                    // This batch was in the fsync that failed (run by whoever ran it).
                    return Err(Error::io(path)(std::io::Error::new(*kind, msg.clone())));
                }
            }
            self.check_writable()?;
            if s.syncing {
                s = wait(&self.sync_cv, s);
                continue;
            }
            s = self.sync_round(s)?;
        }
    }

    /// Makes every acknowledged write durable (see [`crate::LsmEngine::sync_wal`]). When the
    /// live WAL has fewer than [`wal::TAIL_RESERVE`] zeros after its last record (after big
    /// batches, which are written past its end), it is first extended with zeros and synced
    /// under the commit lock, as a WAL rotation syncs the old log: the new size is made
    /// durable here, once, and not by the `fdatasync` of the next small synced write.
    /// Otherwise this is one group-commit fsync ([`Inner::wait_durable`]).
    pub fn sync_wal(&self) -> Result<()> {
        self.check_writable()?;
        let seq = {
            let mut c = lock(&self.commit);
            self.check_writable()?;
            let wal = c.wal()?;
            match wal.reserve_tail() {
                Ok(false) => c.last_seq,
                Ok(true) => return self.sync_live_wal_locked(&mut c),
                Err(source) => return Err(self.wal_failed(wal.number(), source)),
            }
        };
        self.wait_durable(seq)
    }

    /// Syncs the live WAL with the commit lock held (`c`: nothing is appended meanwhile) and
    /// records every batch up to `c.last_seq` as durable and visible — they are all in the
    /// memtables, inserted under that lock. Used when the WAL is rotated out and when
    /// [`Inner::sync_wal`] extended it. A failure poisons the engine.
    fn sync_live_wal_locked(&self, c: &mut Commit) -> Result<()> {
        let last = c.last_seq;
        let wal = c.wal()?;
        if let Err(source) = wal.sync() {
            return Err(self.wal_failed(wal.number(), source));
        }
        let mut s = lock(&self.sync);
        s.synced_seq = s.synced_seq.max(last);
        self.visible.fetch_max(last, Ordering::AcqRel);
        drop(s);
        self.sync_cv.notify_all();
        Ok(())
    }

    /// The error of a failed write or sync of WAL `number`, after poisoning the engine with
    /// it (every WAL failure does both).
    fn wal_failed(&self, number: u64, source: std::io::Error) -> Error {
        let e = Error::io(self.dir.join(wal::wal_name(number)))(source);
        self.poison(&e);
        e
    }

    /// Runs one fsync of the live WAL, for every batch appended so far; `s` says nobody is
    /// syncing. Returns the lock again once the sync is done and recorded.
    fn sync_round<'a>(
        &'a self,
        mut s: MutexGuard<'a, SyncState>,
    ) -> Result<MutexGuard<'a, SyncState>> {
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
                    self.sync_cv.notify_all();
                    return Err(e);
                }
            }
        };
        let r = syncer.sync();
        let mut s = lock(&self.sync);
        self.record_sync(&mut s, r, target, number)?;
        // Every batch up to `target` was in the memtables when the commit lock was taken.
        self.visible.fetch_max(target, Ordering::AcqRel);
        Ok(s)
    }

    /// Records the outcome of an fsync of WAL `number` that covered every batch up to
    /// `target` (with the sync lock held): durable, or failed — then the writers of those
    /// batches get the I/O error and the engine is poisoned. Wakes the waiting writers.
    fn record_sync(
        &self,
        s: &mut SyncState,
        r: std::io::Result<()>,
        target: u64,
        number: u64,
    ) -> Result<()> {
        s.syncing = false;
        self.sync_cv.notify_all();
        // A request the sync thread left because this fsync was running, and that it did not
        // cover (the writer that asked also runs one itself if it finds nobody syncing).
        if s.request
            .as_ref()
            .is_some_and(|q| q.seq > s.synced_seq.max(target))
        {
            self.sync_thread_cv.notify_one();
        }
        match r {
            Ok(()) => {
                s.synced_seq = s.synced_seq.max(target);
                Ok(())
            }
            Err(source) => {
                let path = self.dir.join(wal::wal_name(number));
                s.failed = Some((target, path.clone(), source.kind(), source.to_string()));
                let e = Error::io(path)(source);
                self.poison(&e);
                Err(e)
            }
        }
    }

    /// The sync thread's body (started by the background thread): runs the fsync a writer
    /// asked for with [`Inner::request_sync`], until told to stop.
    pub(super) fn sync_ahead(&self) {
        let mut s = lock(&self.sync);
        loop {
            if s.stop {
                return;
            }
            let due = s.request.clone().filter(|r| r.seq > s.synced_seq);
            if let Some(r) = due {
                if !s.syncing
                    && !self.poisoned.load(Ordering::SeqCst)
                    && self.check_writable().is_ok()
                {
                    // A failure poisons the engine; the writers report it.
                    s = self.sync_requested(s, r);
                    continue;
                }
            }
            s = wait(&self.sync_thread_cv, s);
        }
    }

    /// The sync thread's fsync of the WAL of request `r`, without the commit lock. It records
    /// what is durable but does not make it visible: the writer that asked may still be
    /// filling the memtables, so each writer publishes its own batch in `wait_durable`.
    fn sync_requested<'a>(
        &'a self,
        mut s: MutexGuard<'a, SyncState>,
        r: SyncRequest,
    ) -> MutexGuard<'a, SyncState> {
        s.syncing = true;
        drop(s);
        let outcome = r.syncer.sync();
        let mut s = lock(&self.sync);
        // A failure is reported to the writers through `s.failed`.
        let _ = self.record_sync(&mut s, outcome, r.seq, r.wal);
        s
    }

    /// Stops the sync thread.
    pub(super) fn stop_sync_thread(&self) {
        lock(&self.sync).stop = true;
        self.sync_thread_cv.notify_all();
    }

    /// Freezes the memtables and rotates the WAL. Called with the commit lock held.
    pub fn freeze_locked(&self, c: &mut Commit) -> Result<()> {
        self.sync_live_wal_locked(c)?;
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

/// The stripe of each of `keys` among `stripes` (as [`Partitioner::stripe`] of each), routing
/// a key that starts with the previous routed key's closed partition
/// ([`Partitioner::closed_partition`]: every key starting with it has that partition, hence
/// that stripe) without parsing it: a batch's keys come in runs of one partition.
fn stripes_of<'k>(
    partitioner: &Partitioner,
    stripes: u32,
    keys: impl ExactSizeIterator<Item = &'k [u8]>,
) -> Vec<u32> {
    let mut out = Vec::with_capacity(keys.len());
    // The last routed key's closed partition and its stripe.
    let mut run: Option<(&[u8], u32)> = None;
    for k in keys {
        let s = match run {
            Some((p, s)) if k.starts_with(p) => s,
            _ => {
                let s = partitioner.stripe(k, stripes);
                run = partitioner.closed_partition(k).map(|p| (p, s));
                s
            }
        };
        out.push(s);
    }
    out
}

/// The indices of `stripes` (each below `n`) in stripe order, keeping their order within a
/// stripe (a counting sort).
fn stripe_order(stripes: &[u32], n: usize) -> Vec<u32> {
    let mut start = vec![0u32; n + 1];
    for &s in stripes {
        start[s as usize + 1] += 1;
    }
    for i in 1..=n {
        start[i] += start[i - 1];
    }
    let mut order = vec![0u32; stripes.len()];
    for (i, &s) in stripes.iter().enumerate() {
        let at = &mut start[s as usize];
        order[*at as usize] = i as u32;
        *at += 1;
    }
    order
}

#[cfg(test)]
mod tests {
    use super::{stripe_order, stripes_of};
    use crate::partition::Partitioner;
    use proptest::prelude::*;

    /// Keys in runs sharing prefixes: native tuples `(id, h, p, s)` of a few ids, hashes and
    /// partitions (a whole run of one partition, as a table batch holds), short tuples, and
    /// arbitrary bytes (not tuples).
    fn keys() -> impl Strategy<Value = Vec<Vec<u8>>> {
        let tuple =
            (0u8..3, 0u16..4, 0u8..3, any::<u8>(), 0usize..5).prop_map(|(id, h, p, s, elems)| {
                let h = [0u16, 255, 8191, 65535][usize::from(h)];
                let mut k = Vec::new();
                let c = strata_key::codec::native::Order::default();
                strata_key::codec::native::encode_int_element(id.into(), c, &mut k);
                if elems > 0 {
                    strata_key::codec::native::encode_int_element(h.into(), c, &mut k);
                }
                if elems > 1 {
                    strata_key::codec::native::encode_text_element(
                        &"ab"[..usize::from(p % 3).min(2)],
                        c,
                        &mut k,
                    );
                }
                if elems > 2 {
                    strata_key::codec::native::encode_int_element(s.into(), c, &mut k);
                }
                k
            });
        let key = prop_oneof![
            6 => tuple,
            1 => proptest::collection::vec(any::<u8>(), 0..6),
        ];
        // Each key repeated a few times with other tails (one partition's run).
        proptest::collection::vec((key, 1usize..4, any::<u8>()), 0..40).prop_map(|runs| {
            let mut out = Vec::new();
            for (k, n, t) in runs {
                for i in 0..n {
                    let mut k = k.clone();
                    k.extend_from_slice(&[t, i as u8][..i.min(2)]);
                    out.push(k);
                }
            }
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        /// Routing a batch's keys by runs of one closed partition gives each key the stripe
        /// `Partitioner::stripe` gives it, for every kind of partitioner.
        #[test]
        fn stripes_of_runs_are_each_keys_stripe(
            keys in keys(),
            kind in 0usize..6,
            stripes in prop_oneof![Just(1u32), Just(3), Just(256)],
        ) {
            let p = [
                Partitioner::WholeKey,
                Partitioner::FixedPrefix(2),
                Partitioner::NativeTuplePrefix(1),
                Partitioner::NativeTuplePrefix(2),
                Partitioner::NativeTupleHash(2),
                Partitioner::NativeTupleHash(3),
            ][kind]
                .clone();
            let want: Vec<u32> = keys.iter().map(|k| p.stripe(k, stripes)).collect();
            prop_assert_eq!(stripes_of(&p, stripes, keys.iter().map(|k| k.as_slice())), want);
        }

        /// The counting sort gives the indices a stable sort by stripe gives.
        #[test]
        fn stripe_order_is_a_stable_sort(n in 1usize..300, raw in proptest::collection::vec(any::<u32>(), 0..400)) {
            let stripes: Vec<u32> = raw.iter().map(|&s| s % n as u32).collect();
            let mut model: Vec<u32> = (0..stripes.len() as u32).collect();
            model.sort_by_key(|&i| stripes[i as usize]);
            prop_assert_eq!(stripe_order(&stripes, n), model);
        }
    }
}
