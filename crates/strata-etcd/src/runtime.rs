//! The engine's own tokio runtime. The `Engine` trait is synchronous and `etcd-client` is
//! async: every call runs its future on this runtime and waits for the answer. The caller may
//! itself be inside another tokio runtime (a server): then the future is spawned here and the
//! caller waits on a channel, never calling `block_on` inside a runtime (which would panic);
//! dropping the engine there is safe too (the runtime is shut down in the background).

use std::future::Future;

use strata_lsm::{Error, Result};

/// A small multi-thread runtime owned by one engine.
pub(crate) struct Runtime {
    rt: Option<tokio::runtime::Runtime>,
}

impl Runtime {
    /// A runtime with `threads` worker threads.
    pub fn new(threads: usize) -> Result<Runtime> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("strata-etcd")
            .enable_all()
            .build()
            .map_err(|e| {
                Error::Unavailable(format!("cannot start the etcd client runtime: {e}"))
            })?;
        Ok(Runtime { rt: Some(rt) })
    }

    /// Runs `fut` to completion on this runtime and returns its output.
    pub fn run<F>(&self, fut: F) -> Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let rt = self.rt.as_ref().ok_or(Error::Closed)?;
        if tokio::runtime::Handle::try_current().is_err() {
            // A plain thread: drive the future here (one thread hop fewer).
            return Ok(rt.block_on(fut));
        }
        // Inside some runtime (maybe a server's): run the future on ours, wait for the answer.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| Error::Closed)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            // Never blocks, so dropping the engine inside an async context cannot panic.
            rt.shutdown_background();
        }
    }
}
