//! Deleting a whole namespace in bounded requests: one DeleteRange over millions of keys makes
//! the server delete them all in one apply (seconds, past any timeout, and a burst of history
//! the size of the database). [`EtcdEngine::delete_all_with`] walks the keys in key order and
//! deletes them span by span, each span holding at most a chunk of keys.

use std::sync::Arc;

use etcd_client::DeleteOptions;
use strata_lsm::{Direction, KeyRange, Result};

use crate::call;
use crate::engine::{EtcdEngine, Inner};
use crate::range::RangeIter;

/// Keys one request of [`EtcdEngine::delete_all`] deletes at most (as seen when the walk
/// began; keys written into a span meanwhile are deleted with it).
pub const DELETE_CHUNK: usize = 2000;

impl EtcdEngine {
    /// Deletes every key of this database (the whole namespace) in requests of at most
    /// [`DELETE_CHUNK`] keys; returns how many keys were deleted. See
    /// [`EtcdEngine::delete_all_with`].
    pub fn delete_all(&self) -> Result<u64> {
        self.delete_all_with(DELETE_CHUNK, &mut |_| Ok(()))
    }

    /// Deletes every key of this database in key order, in requests that each delete the
    /// span of at most `chunk` keys (keys-only pages walk the namespace at one revision to cut
    /// the spans). After each request `progress` gets the number of keys deleted so far; an
    /// error from it stops the deletion there and is returned.
    ///
    /// Progress-safe: every request is one atomic DeleteRange, so a failure part-way (or a
    /// stop) leaves the namespace with its smallest keys deleted and the rest intact, and
    /// calling again finishes the job. A request that got no answer is retried until the
    /// timeout (deleting a span again is harmless); then the error says the outcome is unknown.
    pub fn delete_all_with(
        &self,
        chunk: usize,
        progress: &mut dyn FnMut(u64) -> Result<()>,
    ) -> Result<u64> {
        let inner = &self.inner;
        inner.check_open()?;
        let chunk = chunk.max(1);
        let walk = RangeIter::new(
            Arc::clone(inner),
            None,
            &KeyRange::all(),
            Direction::Forward,
        )
        .keys_only();
        let mut from = inner.ns.clone();
        let (mut seen, mut deleted) = (0usize, 0u64);
        for pair in walk {
            let (k, _) = pair?;
            seen += 1;
            if seen == chunk {
                let mut to = inner.key(&k);
                to.push(0);
                deleted += delete_span(inner, &from, &to)?;
                progress(deleted)?;
                from = to;
                seen = 0;
            }
        }
        deleted += delete_span(inner, &from, &inner.ns_end)?;
        progress(deleted)?;
        Ok(deleted)
    }
}

/// Deletes `[from, to)` (etcd keys) in one request; returns how many keys it deleted.
fn delete_span(inner: &Inner, from: &[u8], to: &[u8]) -> Result<u64> {
    let kv = inner.kv.clone();
    let ctx = inner.ctx.clone();
    let deadline = inner.deadline();
    let (from, to) = (from.to_vec(), to.to_vec());
    let resp = inner.rt.run(async move {
        call::read(&kv, &ctx, deadline, |mut c| {
            let (k, o) = (from.clone(), DeleteOptions::new().with_range(to.clone()));
            async move { c.delete(k, Some(o)).await }
        })
        .await
        .map_err(|f| f.into_repeatable_write_error(&ctx, "deleting the namespace"))
    })??;
    Ok(resp.deleted().max(0) as u64)
}
