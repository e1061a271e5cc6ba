//! One engine call against the cluster, bounded by a deadline: reads retried while they may
//! still succeed; writes sent once, resent only when they surely did nothing, or when their own
//! conditions fence them against applying twice; every failure turned into a one-line error that
//! says what the caller can rely on.

use std::future::Future;
use std::time::Duration;

use etcd_client::{Error as EtcdError, KvClient, TxnResponse};
use strata_lsm::Error;
use tokio::time::Instant;

use crate::error::{classify, detail, Class};
use crate::options::ReadConsistency;
use crate::txn::PreparedTxn;

/// What the error messages need to know about the engine.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// The endpoints, for messages.
    pub cluster: String,
    /// The whole-call bound.
    pub timeout: Duration,
    /// Consistency of unpinned reads.
    pub reads: ReadConsistency,
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis((25u64 << attempt.min(5)).min(500))
}

/// The `what` of the first read of a new engine (its errors carry no advice about reads).
pub(crate) const CONNECTING: &str = "connecting";

/// How a read failed, before it becomes an [`Error`].
#[derive(Debug)]
pub(crate) struct ReadFailure {
    class: Class,
    detail: String,
}

/// Runs a read until it succeeds, fails for good, or `deadline` passes. Each attempt gets at
/// most a third of the timeout, so that a hung member (paused, partitioned) costs one attempt,
/// and the next may go to another member.
pub(crate) async fn read<T, F, Fut>(
    kv: &KvClient,
    ctx: &Context,
    deadline: Instant,
    mut f: F,
) -> Result<T, ReadFailure>
where
    F: FnMut(KvClient) -> Fut,
    Fut: Future<Output = Result<T, EtcdError>>,
{
    let per_attempt = (ctx.timeout / 3).max(Duration::from_millis(300));
    let mut attempt = 0u32;
    let mut last: Option<ReadFailure> = None;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(last.unwrap_or(ReadFailure {
                class: Class::Unknown,
                detail: "no answer".into(),
            }));
        }
        let until = (now + per_attempt).min(deadline);
        match tokio::time::timeout_at(until, f(kv.clone())).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => {
                let class = classify(&e);
                let fail = ReadFailure {
                    class: class.clone(),
                    detail: detail(&e),
                };
                match class {
                    Class::NotApplied | Class::Unknown => last = Some(fail),
                    _ => return Err(fail),
                }
            }
            Err(_) => {
                last = Some(ReadFailure {
                    class: Class::Unknown,
                    detail: format!("no answer within {:.1}s", per_attempt.as_secs_f64()),
                })
            }
        }
        let pause = backoff(attempt);
        attempt += 1;
        if Instant::now() + pause >= deadline {
            continue; // the loop's head reports the failure
        }
        tokio::time::sleep(pause).await;
    }
}

impl ReadFailure {
    /// The caller's error. `rev` is the snapshot's revision when the read was pinned.
    pub fn into_error(self, ctx: &Context, what: &str, rev: Option<i64>) -> Error {
        match self.class {
            Class::Compacted => Error::SnapshotTooOld(format!(
                "etcd cluster {}: {what}: the snapshot at revision {} is gone: the cluster \
                 compacted its history past it (auto-compaction or another client); start the \
                 read again",
                ctx.cluster,
                rev.unwrap_or(0)
            )),
            Class::Permanent | Class::TooLarge | Class::NoSpace => Error::Unavailable(format!(
                "etcd cluster {}: {what} refused: {}",
                ctx.cluster, self.detail
            )),
            Class::NotApplied | Class::Unknown => {
                let hint = match (rev, ctx.reads) {
                    (Some(_), _) => "",
                    // Opening: the advice matters when members are there but cannot serve
                    // (no leader, no answer), not when no connection could be made.
                    _ if what == CONNECTING && self.detail.contains("connect") => "",
                    (None, ReadConsistency::Linearizable) => {
                        "; reads are linearizable: they need a quorum and are never stale \
                         (reads=serializable answers from any one member, possibly stale)"
                    }
                    (None, ReadConsistency::Serializable) => {
                        "; reads are serializable: any member may answer, possibly stale"
                    }
                };
                Error::Unavailable(format!(
                    "etcd cluster {}: {what} failed within {:.1}s: {}{hint}",
                    ctx.cluster,
                    ctx.timeout.as_secs_f64(),
                    self.detail
                ))
            }
        }
    }
}

impl ReadFailure {
    /// The caller's error for a request that is safe to repeat (a delete of a span of keys),
    /// retried by [`read`] like a read: without an answer its outcome is unknown, and the
    /// message says that repeating the whole operation finishes it.
    pub fn into_repeatable_write_error(self, ctx: &Context, what: &str) -> Error {
        let e = format!("etcd cluster {}: {what}: {}", ctx.cluster, self.detail);
        match self.class {
            Class::Unknown => Error::OutcomeUnknown(format!(
                "{e}: it may or may not have been applied; it is safe to run again"
            )),
            Class::NoSpace => Error::Unavailable(format!(
                "{e}: the storage quota is full (compact, defragment and disarm the NOSPACE \
                 alarm; see docs/etcd.md)"
            )),
            _ => Error::Unavailable(e),
        }
    }
}

/// Sends a prepared transaction. Returns the transaction's response (successful or with a
/// failed compare; `None` for a lone unconditional op, sent as a plain put or delete) or the
/// error to report; `Err` never claims a failure that may have been a success.
pub(crate) async fn write(
    kv: &KvClient,
    ctx: &Context,
    deadline: Instant,
    txn: &PreparedTxn,
) -> Result<Option<TxnResponse>, Error> {
    let ops = txn.ops.len();
    let fenced = txn.self_fencing();
    // Set once an attempt may have been applied: from then on only OutcomeUnknown or a
    // success can be reported.
    let mut uncertain: Option<String> = None;
    let mut attempt = 0u32;
    let mut last_detail = String::from("no answer");
    // A batch that may be resent gets several attempts (a hung member costs one); any other
    // gets one attempt with all the time there is.
    let per_attempt = if fenced {
        (ctx.timeout / 3).max(Duration::from_millis(300))
    } else {
        ctx.timeout
    };
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let mut c = kv.clone();
        let until = (now + per_attempt).min(deadline);
        let send = async {
            match txn.single_op() {
                // One unconditional op: the plain request (cheaper than a transaction).
                Some((k, Some(v))) => c.put(k.to_vec(), v.to_vec(), None).await.map(|_| None),
                Some((k, None)) => c.delete(k.to_vec(), None).await.map(|_| None),
                None => c.txn(txn.to_txn()).await.map(Some),
            }
        };
        match tokio::time::timeout_at(until, send).await {
            Ok(Ok(None)) => return Ok(None),
            Ok(Ok(Some(resp))) => {
                if resp.succeeded() || uncertain.is_none() {
                    return Ok(Some(resp));
                }
                // A resent, self-fenced batch whose conditions no longer hold: either the first
                // attempt applied, or another client changed the keys. Cannot tell for sure.
                let hint = if txn.looks_applied(&resp) {
                    "its keys now hold what it writes: it was most likely applied"
                } else {
                    "its conditions no longer hold"
                };
                return Err(Error::OutcomeUnknown(format!(
                    "etcd cluster {}: a write of {ops} keys got no answer ({}) and, resent, \
                     {hint}; read the keys to find out",
                    ctx.cluster,
                    uncertain.unwrap_or_default()
                )));
            }
            Ok(Err(e)) => {
                last_detail = detail(&e);
                match classify(&e) {
                    Class::NotApplied => {}
                    Class::Unknown => {
                        uncertain.get_or_insert_with(|| last_detail.clone());
                        if !fenced {
                            break;
                        }
                    }
                    Class::TooLarge => {
                        return Err(Error::TooLarge(format!(
                            "etcd cluster {}: the batch is too large for the server: {} \
                             (see --max-request-bytes and --max-txn-ops); nothing was written",
                            ctx.cluster, last_detail
                        )))
                    }
                    Class::NoSpace => {
                        return Err(Error::Unavailable(format!(
                            "etcd cluster {}: {}: the storage quota is full and writes are \
                             refused; nothing was written (compact, defragment and disarm the \
                             NOSPACE alarm; see docs/etcd.md)",
                            ctx.cluster, last_detail
                        )))
                    }
                    Class::Compacted | Class::Permanent => {
                        let e = format!(
                            "etcd cluster {}: the write was refused: {last_detail}",
                            ctx.cluster
                        );
                        return Err(match uncertain {
                            Some(_) => Error::OutcomeUnknown(e),
                            None => Error::Unavailable(e),
                        });
                    }
                }
            }
            Err(_) => {
                last_detail = format!("no answer within {:.1}s", per_attempt.as_secs_f64());
                uncertain.get_or_insert_with(|| last_detail.clone());
                if !fenced {
                    break;
                }
            }
        }
        let pause = backoff(attempt);
        attempt += 1;
        if Instant::now() + pause >= deadline {
            break;
        }
        tokio::time::sleep(pause).await;
    }
    Err(match uncertain {
        Some(first) => Error::OutcomeUnknown(format!(
            "etcd cluster {}: a write of {ops} keys got no answer ({first}; last: \
             {last_detail}): it may or may not have been applied (a leader change or a lost \
             quorum); read the keys to find out",
            ctx.cluster
        )),
        None => Error::Unavailable(format!(
            "etcd cluster {}: write failed within {:.1}s: {last_detail}; nothing was written",
            ctx.cluster,
            ctx.timeout.as_secs_f64()
        )),
    })
}
