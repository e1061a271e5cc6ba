//! The systems measured: Strata embedded (`Dynamo::call` in-process), and servers over
//! loopback HTTP — `strata serve`, dynalite (npm, LevelDB) and moto (PyPI, in memory) —
//! each started here as a child process on a free port.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;

use strata_dynamo::Dynamo;

/// Where the peers are installed (`peers/install-dynamodb-peers.sh`).
pub fn peers_dir() -> PathBuf {
    std::env::var_os("STRATA_BENCH_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/strata-bench-peers")
        })
}

/// An HTTP endpoint speaking DynamoDB's protocol, and the process behind it.
pub struct HttpTarget {
    pub name: String,
    pub url: String,
    child: Child,
    pub client: Client<HttpConnector, Full<Bytes>>,
}

/// A system under test.
pub enum Target {
    Embedded { name: String, dynamo: Dynamo },
    Http(HttpTarget),
}

impl Target {
    pub fn name(&self) -> &str {
        match self {
            Target::Embedded { name, .. } => name,
            Target::Http(h) => &h.name,
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Headers every request carries: a SigV4-shaped Authorization (dynalite and moto look at it;
/// none of the three verifies it by default).
pub const AUTH: &str = "AWS4-HMAC-SHA256 Credential=AKIDBENCH/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=0000000000000000000000000000000000000000000000000000000000000000";

impl HttpTarget {
    fn new(name: &str, url: String, child: Child) -> HttpTarget {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .build(connector);
        HttpTarget {
            name: name.to_string(),
            url,
            child,
            client,
        }
    }

    /// One request: (HTTP status, body).
    pub async fn call(&self, op: &str, body: String) -> Result<(u16, Bytes), String> {
        let req = hyper::Request::post(&self.url)
            .header("x-amz-target", format!("DynamoDB_20120810.{op}"))
            .header("content-type", "application/x-amz-json-1.0")
            .header("x-amz-date", "20240101T000000Z")
            .header("authorization", AUTH)
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let resp = self.client.request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((status, body))
    }

    /// Peak resident memory of the server process (VmHWM), in bytes.
    pub fn peak_rss(&self) -> Option<u64> {
        peak_rss(self.child.id())
    }
}

impl Drop for HttpTarget {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// VmHWM of process `pid`, in bytes.
pub fn peak_rss(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

async fn wait_ready(t: &HttpTarget) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match t.call("ListTables", "{}".into()).await {
            Ok((200, _)) => return Ok(()),
            Ok((s, b)) if Instant::now() > deadline => {
                return Err(format!("{}: ListTables answered {s}: {:?}", t.name, b))
            }
            Err(e) if Instant::now() > deadline => return Err(format!("{}: {e}", t.name)),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// `strata serve` (the binary beside this one, or `$STRATA_BIN`) on a directory.
pub async fn strata_http(dir: &Path, sync: &str) -> Result<HttpTarget, String> {
    let bin = std::env::var_os("STRATA_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(|d| d.join("strata")))
                .unwrap_or_else(|| PathBuf::from("strata"))
        });
    if !bin.exists() {
        return Err(format!(
            "{} not found: build it with `cargo build --release -p strata-cli` (or set STRATA_BIN)",
            bin.display()
        ));
    }
    let port = free_port();
    let child = Command::new(&bin)
        .args(["serve", "--db"])
        .arg(dir)
        .args(["--listen", &format!("127.0.0.1:{port}"), "--sync", sync])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let t = HttpTarget::new(
        &format!("strata serve (sync={sync})"),
        format!("http://127.0.0.1:{port}/"),
        child,
    );
    wait_ready(&t).await?;
    Ok(t)
}

/// dynalite on LevelDB in `dir` (`$STRATA_BENCH_PEERS/node_modules/dynalite`).
pub async fn dynalite(dir: &Path) -> Result<HttpTarget, String> {
    let cli = peers_dir().join("node_modules/dynalite/cli.js");
    if !cli.exists() {
        return Err(format!(
            "dynalite not found at {}: run crates/strata-bench/peers/install-dynamodb-peers.sh",
            cli.display()
        ));
    }
    let port = free_port();
    let child = Command::new("node")
        .arg(&cli)
        .args(["--port", &port.to_string(), "--path"])
        .arg(dir)
        .args([
            "--createTableMs",
            "0",
            "--deleteTableMs",
            "0",
            "--updateTableMs",
            "0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("node {}: {e}", cli.display()))?;
    let t = HttpTarget::new(
        "dynalite (LevelDB)",
        format!("http://127.0.0.1:{port}/"),
        child,
    );
    wait_ready(&t).await?;
    Ok(t)
}

/// moto's server (`$STRATA_BENCH_PEERS/venv/bin/moto_server`), in memory.
pub async fn moto() -> Result<HttpTarget, String> {
    let bin = peers_dir().join("venv/bin/moto_server");
    if !bin.exists() {
        return Err(format!(
            "moto_server not found at {}: run crates/strata-bench/peers/install-dynamodb-peers.sh",
            bin.display()
        ));
    }
    let port = free_port();
    let child = Command::new(&bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let t = HttpTarget::new("moto (memory)", format!("http://127.0.0.1:{port}/"), child);
    wait_ready(&t).await?;
    Ok(t)
}

/// Strata embedded: `Dynamo::call` on a database in `dir`.
pub fn embedded(dir: &Path, sync: bool) -> Result<Target, String> {
    let db = strata::Db::open_with(
        dir,
        strata::DbOptions {
            sync,
            ..strata::DbOptions::default()
        },
    )
    .map_err(|e| e.to_string())?;
    Ok(Target::Embedded {
        name: format!(
            "Strata embedded (sync={})",
            if sync { "always" } else { "none" }
        ),
        dynamo: Dynamo::new(db),
    })
}
