//! # strata-server
//!
//! DynamoDB's JSON protocol over HTTP, on the embedded [`strata_dynamo::Dynamo`] API: what
//! `strata serve` runs, and what AWS SDKs, the AWS CLI and DynamoDB test suites talk to.
//!
//! * `POST /` with `X-Amz-Target: DynamoDB_20120810.<Op>` and a JSON body
//!   (`application/x-amz-json-1.0`, `-1.1` or `application/json`): the operation's answer,
//!   with `x-amzn-RequestId` and `x-amz-crc32` (the CRC-32 of the body, which boto3 checks).
//!   Errors are DynamoDB's: `{"__type": "...#ValidationException", "message": ...}`, HTTP 400
//!   (500 for server failures, 413 for a body over the limit).
//! * `GET /`: `200 healthy: <host>` (the health check).
//! * Signatures: any request is accepted by default; with [`ServerConfig::credentials`] set,
//!   every request must carry a valid AWS SigV4 signature by that key pair.
//!
//! Requests share one `Dynamo` (one database); each call runs on tokio's blocking pool, at most
//! [`ServerConfig::max_concurrent_calls`] at once. [`Server::run`] stops on a shutdown future:
//! it stops accepting, lets in-flight requests finish and waits for every running call, so the
//! caller can then close the database with nothing acknowledged lost.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use strata_server::{Server, ServerConfig};
//! let dynamo = strata_dynamo::Dynamo::memory()?;
//! let server = Server::bind("127.0.0.1:8000".parse()?, dynamo.clone(), ServerConfig::default()).await?;
//! server.run(async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! dynamo.db().close()?;
//! # Ok(()) }
//! ```

pub mod fault;
mod service;
pub mod sigv4;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use strata_dynamo::Dynamo;

pub use fault::{Fault, FaultKind};
pub use service::TARGET_PREFIX;
pub use sigv4::Credentials;

/// DynamoDB's limit on the size of a request body: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 << 20;

/// How the server behaves.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Larger request bodies get HTTP 413. Default 16 MiB (DynamoDB's limit).
    pub max_body_bytes: usize,
    /// `Some`: every request must be signed (SigV4) with this key pair. `None` (default): any
    /// signature, or none, is accepted.
    pub credentials: Option<Credentials>,
    /// API calls running at once (the rest wait their turn). Default 64.
    pub max_concurrent_calls: usize,
    /// How long shutdown waits for open connections to finish their requests before it drops
    /// them (calls already running are always waited for). Default 30 s.
    pub shutdown_grace: Duration,
    /// A connection that does not send a complete request head within this time is closed.
    /// Default 30 s.
    pub header_read_timeout: Duration,
    /// A request whose body does not arrive within this time is refused. Default 60 s.
    pub body_read_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            credentials: None,
            max_concurrent_calls: 64,
            shutdown_grace: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
        }
    }
}

/// Errors of starting or running the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listening socket could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Any other I/O failure of the listening socket.
    #[error("server I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// The request → answer path of the server without a socket: what a connection does once it
/// has read a request in full (for tests, fuzzing, and embedding in another HTTP stack).
#[derive(Clone)]
pub struct Endpoint {
    shared: Arc<service::Shared>,
}

impl Endpoint {
    /// An endpoint over `dynamo` with `config`.
    pub fn new(dynamo: Dynamo, config: ServerConfig) -> Endpoint {
        let permits = config.max_concurrent_calls.max(1);
        Endpoint {
            shared: Arc::new(service::Shared {
                dynamo,
                config,
                calls: Arc::new(Semaphore::new(permits)),
                ids: service::RequestIds::new(),
            }),
        }
    }

    /// Answers one complete request (the body-size limit is the caller's business here).
    /// Needs a tokio runtime (API calls run on its blocking pool).
    pub async fn answer(
        &self,
        request: hyper::Request<bytes::Bytes>,
    ) -> hyper::Response<bytes::Bytes> {
        let (parts, body) = request.into_parts();
        let a = service::answer(&self.shared, &parts, body).await;
        let (head, body) = a.into_parts();
        hyper::Response::from_parts(head, body.into_bytes())
    }
}

/// What [`Server::run`] saw while stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Connections that were still busy when the grace period ended and were dropped (their
    /// running calls were still waited for; their answers were not sent).
    pub connections_dropped: bool,
}

/// A bound, not yet running, DynamoDB endpoint.
pub struct Server {
    listener: TcpListener,
    shared: Arc<service::Shared>,
}

impl Server {
    /// Binds `addr` (port 0: any free port; see [`Server::local_addr`]).
    pub async fn bind(
        addr: SocketAddr,
        dynamo: Dynamo,
        config: ServerConfig,
    ) -> Result<Server, ServerError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind { addr, source })?;
        Ok(Server::from_listener(listener, dynamo, config))
    }

    /// Serves on a listener the caller opened.
    pub fn from_listener(listener: TcpListener, dynamo: Dynamo, config: ServerConfig) -> Server {
        Server {
            listener,
            shared: Endpoint::new(dynamo, config).shared,
        }
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, ServerError> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `shutdown` completes, then stops: no new connections, in-flight requests
    /// finish (up to [`ServerConfig::shutdown_grace`]), every running API call is waited for.
    /// When this returns, no call is running and the database can be closed.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<ShutdownReport, ServerError> {
        let graceful = GracefulShutdown::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = self.listener.accept() => {
                    let (stream, _) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            // Out of file descriptors and the like: wait, then go on.
                            eprintln!("strata serve: accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let shared = self.shared.clone();
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        // A client may shut its sending side once the request is out; it
                        // still gets its answer.
                        .half_close(true)
                        .header_read_timeout(self.shared.config.header_read_timeout)
                        .serve_connection(
                            TokioIo::new(stream),
                            service_fn(move |req| service::handle(shared.clone(), req)),
                        );
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                }
                _ = &mut shutdown => break,
            }
        }
        drop(self.listener);
        let dropped = tokio::time::timeout(self.shared.config.shutdown_grace, graceful.shutdown())
            .await
            .is_err();
        // Every call holds a permit until it returns: taking them all waits for the last one.
        let all = self.shared.config.max_concurrent_calls.max(1) as u32;
        let _all = self.shared.calls.acquire_many(all).await;
        self.shared.calls.close();
        Ok(ShutdownReport {
            connections_dropped: dropped,
        })
    }
}

/// Completes on SIGINT or SIGTERM (Ctrl-C elsewhere).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
