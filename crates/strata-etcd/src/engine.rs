//! [`EtcdEngine`]: the `Engine` trait over an etcd v3 cluster.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, CompactionOptions, ConnectOptions, GetOptions, KvClient};
use strata_lsm::{
    BatchLimits, Cursor, Direction, Engine, Error, KeyRange, KvIter, RangeCursor, Result, Snapshot,
    WriteBatch,
};
use tokio::time::Instant;

use crate::call::{self, Context};
use crate::cursor::FirstAnswer;
use crate::options::{EtcdOptions, ReadConsistency};
use crate::range::{RangeCounters, RangeIter, RangeStats};
use crate::runtime::Runtime;
use crate::snapshot::{self, EtcdSnapshot, Pin};
use crate::txn;

/// Strata's engine over an etcd v3 cluster: every key under the namespace `PREFIX:`, every
/// batch one etcd transaction, every snapshot an etcd revision. `Send + Sync`; share it.
///
/// The engine owns a small tokio runtime, so it may be called from plain threads and from
/// inside another tokio runtime alike (it never calls `block_on` there).
pub struct EtcdEngine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub rt: Runtime,
    /// Writes and linearizable reads (requires a leader: refused at once without one).
    pub kv: KvClient,
    /// Unpinned reads: `kv`, or a client without the leader requirement for serializable reads.
    pub read_kv: KvClient,
    pub client: Client,
    pub ns: Vec<u8>,
    /// The first key after the namespace.
    pub ns_end: Vec<u8>,
    pub opts: EtcdOptions,
    pub ctx: Context,
    pub limits: BatchLimits,
    /// The cluster's id (from the first answer): pins are per cluster.
    pub cluster_id: AtomicU64,
    pub closed: AtomicBool,
    pub range_stats: RangeCounters,
}

impl Inner {
    pub fn deadline(&self) -> Instant {
        Instant::now() + self.opts.timeout
    }

    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::SeqCst) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    pub fn key(&self, k: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.ns.len() + k.len());
        v.extend_from_slice(&self.ns);
        v.extend_from_slice(k);
        v
    }

    /// Options of an unpinned read (`rev` None) or of a read at a snapshot revision.
    pub fn read_options(&self, rev: Option<i64>) -> GetOptions {
        let o = GetOptions::new();
        match rev {
            // A revision is immutable: any member that has applied it answers correctly (one
            // that has not says "future revision", and the read is retried).
            Some(r) => o.with_revision(r).with_serializable(),
            None if self.opts.reads == ReadConsistency::Serializable => o.with_serializable(),
            None => o,
        }
    }

    /// The client for a read at `rev`.
    pub fn reader(&self, rev: Option<i64>) -> &KvClient {
        if rev.is_some() || self.opts.reads == ReadConsistency::Serializable {
            &self.read_kv
        } else {
            &self.kv
        }
    }

    /// Pins `rev` (compaction stays at or below it) until the guard drops.
    pub fn pin(self: &Arc<Self>, rev: i64) -> Arc<Pin> {
        Pin::new(
            Arc::clone(self),
            self.cluster_id.load(Ordering::SeqCst),
            rev,
        )
    }

    /// The value of `key` (namespaced) at `rev` or, with `None`, now.
    pub fn get_at(&self, key: &[u8], rev: Option<i64>) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        let kv = self.reader(rev).clone();
        let ctx = self.ctx.clone();
        let k = self.key(key);
        let opts = self.read_options(rev);
        let deadline = self.deadline();
        let r = self.rt.run(async move {
            call::read(&kv, &ctx, deadline, |mut c| {
                let (k, o) = (k.clone(), opts.clone());
                async move { c.get(k, Some(o)).await }
            })
            .await
            .map_err(|f| f.into_error(&ctx, "get", rev))
        })??;
        Ok(r.kvs().first().map(|kv| kv.value().to_vec()))
    }

    /// Takes a revision now and pins it.
    pub fn take_snapshot(self: &Arc<Self>) -> Result<Arc<Pin>> {
        self.check_open()?;
        let _gate = snapshot::gate_shared();
        let rev = self.current_revision(self.opts.reads)?;
        Ok(self.pin(rev))
    }

    /// The store's revision now, read with `consistency`.
    pub fn current_revision(&self, consistency: ReadConsistency) -> Result<i64> {
        self.current_revision_as(consistency, "reading the revision")
    }

    fn current_revision_as(&self, consistency: ReadConsistency, what: &'static str) -> Result<i64> {
        let serializable = consistency == ReadConsistency::Serializable;
        let kv = if serializable {
            &self.read_kv
        } else {
            &self.kv
        }
        .clone();
        let ctx = self.ctx.clone();
        let k = self.ns.clone();
        let mut opts = GetOptions::new().with_count_only();
        if serializable {
            opts = opts.with_serializable();
        }
        let deadline = self.deadline();
        let r = self.rt.run(async move {
            call::read(&kv, &ctx, deadline, |mut c| {
                let (k, o) = (k.clone(), opts.clone());
                async move { c.get(k, Some(o)).await }
            })
            .await
            .map_err(|f| f.into_error(&ctx, what, None))
        })??;
        let h = r.header().ok_or_else(|| {
            Error::Unavailable(format!(
                "etcd cluster {}: a response without a header (no revision)",
                self.ctx.cluster
            ))
        })?;
        self.cluster_id.store(h.cluster_id(), Ordering::SeqCst);
        Ok(h.revision())
    }
}

impl EtcdEngine {
    /// Connects to the cluster named by an `etcd://HOST:PORT[,…]/PREFIX[?…]` URL.
    pub fn open_url(url: &str) -> Result<EtcdEngine> {
        EtcdEngine::connect(EtcdOptions::from_url(url)?)
    }

    /// Connects and checks that the cluster answers within `options.timeout` (a one-line
    /// [`Error::Unavailable`] otherwise).
    pub fn connect(options: EtcdOptions) -> Result<EtcdEngine> {
        options.validate()?;
        let rt = Runtime::new(1)?;
        let urls = options.endpoint_urls();
        let cluster = options.endpoints.join(",");
        let connect = |require_leader: bool| {
            ConnectOptions::new()
                .with_connect_timeout(options.timeout.min(Duration::from_secs(3)))
                .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2))
                .with_keep_alive_while_idle(true)
                .with_require_leader(require_leader)
        };
        let serializable = options.reads == ReadConsistency::Serializable;
        let (u1, o1, o2) = (urls.clone(), connect(true), connect(false));
        let timeout = options.timeout;
        let clients = rt.run(async move {
            let main = tokio::time::timeout(timeout, Client::connect(&u1, Some(o1))).await;
            let main = match main {
                Ok(r) => r.map_err(|e| crate::error::detail(&e))?,
                Err(_) => return Err("connecting timed out".to_owned()),
            };
            let reads = if serializable {
                match tokio::time::timeout(timeout, Client::connect(&u1, Some(o2))).await {
                    Ok(r) => Some(r.map_err(|e| crate::error::detail(&e))?),
                    Err(_) => return Err("connecting timed out".to_owned()),
                }
            } else {
                None
            };
            Ok((main, reads))
        })?;
        let (client, read_client) = clients.map_err(|d| {
            Error::Unavailable(format!("etcd cluster {cluster}: cannot connect: {d}"))
        })?;
        let limit = options.max_response_bytes;
        let kv = client.kv_client().max_decoding_message_size(limit);
        let read_kv = match &read_client {
            Some(c) => c.kv_client().max_decoding_message_size(limit),
            None => kv.clone(),
        };
        let ns = options.namespace();
        let mut ns_end = ns.clone();
        if let Some(last) = ns_end.last_mut() {
            *last += 1; // ':' + 1 = ';': no carry
        }
        let ctx = Context {
            cluster,
            timeout: options.timeout,
            reads: options.reads,
        };
        let limits = txn::limits(options.max_txn_ops, options.max_request_bytes, ns.len());
        let inner = Arc::new(Inner {
            rt,
            kv,
            read_kv,
            client,
            ns,
            ns_end,
            opts: options,
            ctx,
            limits,
            cluster_id: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            range_stats: RangeCounters::default(),
        });
        // One read proves the cluster answers (connecting is lazy).
        inner.current_revision_as(inner.opts.reads, call::CONNECTING)?;
        Ok(EtcdEngine { inner })
    }

    /// The options the engine was opened with.
    pub fn options(&self) -> &EtcdOptions {
        &self.inner.opts
    }

    /// The revision a snapshot taken now would read (the cluster's current revision).
    pub fn revision(&self) -> Result<i64> {
        Ok(self.inner.take_snapshot()?.rev)
    }

    /// What this engine's range requests have made the cluster do so far (requests, keys the
    /// server walked to answer them).
    pub fn range_stats(&self) -> RangeStats {
        self.inner.range_stats.get()
    }

    /// The status of the member that answers: version, revision, leader, sizes.
    pub fn status(&self) -> Result<ClusterStatus> {
        self.inner.check_open()?;
        let mut m = self.inner.client.maintenance_client();
        let ctx = self.inner.ctx.clone();
        let deadline = self.inner.deadline();
        self.inner.rt.run(async move {
            let s = match tokio::time::timeout_at(deadline, m.status()).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    return Err(Error::Unavailable(format!(
                        "etcd cluster {}: status: {}",
                        ctx.cluster,
                        crate::error::detail(&e)
                    )))
                }
                Err(_) => {
                    return Err(Error::Unavailable(format!(
                        "etcd cluster {}: status: no answer in time",
                        ctx.cluster
                    )))
                }
            };
            Ok(ClusterStatus {
                version: s.version().to_owned(),
                member: s.header().map(|h| h.member_id()).unwrap_or(0),
                leader: s.leader(),
                raft_term: s.raft_term(),
                revision: s.header().map(|h| h.revision()).unwrap_or(0),
                db_size: s.db_size(),
            })
        })?
    }
}

/// What one member says about the cluster ([`EtcdEngine::status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStatus {
    /// etcd server version.
    pub version: String,
    /// The answering member's id.
    pub member: u64,
    /// The leader's member id (0: none known).
    pub leader: u64,
    /// Raft term.
    pub raft_term: u64,
    /// The store's current revision.
    pub revision: i64,
    /// Size of the member's backend file in bytes.
    pub db_size: i64,
}

impl Engine for EtcdEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get_at(key, None)
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.check_open()?;
        if batch.is_empty() {
            return Ok(());
        }
        let prepared = txn::prepare(batch, &self.inner.ns, &self.inner.limits)?;
        let kv = self.inner.kv.clone();
        let ctx = self.inner.ctx.clone();
        let deadline = self.inner.deadline();
        let p = prepared.clone();
        let resp = self
            .inner
            .rt
            .run(async move { call::write(&kv, &ctx, deadline, &p).await })??;
        match resp {
            Some(r) if !r.succeeded() => Err(prepared.failed_condition(&r)),
            _ => Ok(()),
        }
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        let pin = self.inner.take_snapshot()?;
        Ok(Arc::new(EtcdSnapshot { pin }))
    }

    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        self.inner.check_open()?;
        // The first page's answer fixes the revision: no extra round trip for a snapshot.
        Ok(Box::new(RangeIter::new(
            Arc::clone(&self.inner),
            None,
            &range,
            direction,
        )))
    }

    fn cursor(&self, range: KeyRange, direction: Direction) -> Result<Box<dyn Cursor>> {
        self.inner.check_open()?;
        // Like `range`: the first answer fixes the revision (no snapshot round trip first).
        let source = FirstAnswer {
            inner: Arc::clone(&self.inner),
            pin: None,
        };
        Ok(Box::new(RangeCursor::new(source, range, direction)?))
    }

    fn flush(&self) -> Result<()> {
        // An acknowledged etcd write is already durable on a quorum.
        self.inner.check_open()
    }

    /// Compacts the cluster's history up to the oldest snapshot this engine holds open (or up
    /// to now). Compaction is cluster-wide: it also drops history of other databases on the
    /// cluster, and snapshots held by other processes older than that fail with
    /// [`Error::SnapshotTooOld`].
    fn compact(&self) -> Result<()> {
        self.inner.check_open()?;
        let _gate = snapshot::gate_exclusive();
        let now = self.inner.current_revision(ReadConsistency::Linearizable)?;
        let oldest = snapshot::oldest_pin(self.inner.cluster_id.load(Ordering::SeqCst));
        let target = oldest.unwrap_or(now).min(now);
        if target <= 1 {
            return Ok(());
        }
        let mut kv = self.inner.kv.clone();
        let ctx = self.inner.ctx.clone();
        let deadline = self.inner.deadline();
        self.inner.rt.run(async move {
            let c = kv.compact(target, Some(CompactionOptions::new().with_physical()));
            match tokio::time::timeout_at(deadline, c).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) if crate::error::classify(&e) == crate::error::Class::Compacted => {
                    Ok(()) // already compacted at or past the target
                }
                Ok(Err(e)) => Err(Error::Unavailable(format!(
                    "etcd cluster {}: compaction to revision {target}: {}",
                    ctx.cluster,
                    crate::error::detail(&e)
                ))),
                Err(_) => Err(Error::Unavailable(format!(
                    "etcd cluster {}: compaction to revision {target}: no answer in time",
                    ctx.cluster
                ))),
            }
        })?
    }

    fn close(&self) -> Result<()> {
        self.inner.closed.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn batch_limits(&self) -> BatchLimits {
        self.inner.limits
    }
}
