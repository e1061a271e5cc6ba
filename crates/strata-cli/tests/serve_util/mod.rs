//! Shared by the `strata serve` process tests: start the binary, find its address, stop it;
//! a Python venv with boto3 and the AWS CLI for the real-client tests.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `strata serve`.
pub struct Serve {
    pub child: Child,
    pub url: String,
    pub addr: std::net::SocketAddr,
}

impl Serve {
    /// Starts `strata serve ARGS --listen 127.0.0.1:0` and waits for its "listening on" line.
    pub fn start(args: &[&str], envs: &[(&str, &str)]) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn strata serve");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the listening line");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        let addr = url.trim_start_matches("http://").parse().unwrap();
        Serve { child, url, addr }
    }

    /// SIGTERM, then waits for the exit; returns the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "strata serve did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL (kill -9), then reaps the process.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        let _ = self.child.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A venv with boto3 and the AWS CLI (`$STRATA_CLIENTS_VENV`, default
/// `~/.cache/strata-clients-venv`), made on first use; `None` (after saying why) when python3
/// or pip is missing.
pub fn client_venv() -> Option<PathBuf> {
    let dir = std::env::var_os("STRATA_CLIENTS_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/strata-clients-venv"))
        })?;
    let python = dir.join("bin/python");
    let ready = |d: &Path| {
        d.join("bin/aws").exists() && d.join("bin/python").exists() && {
            Command::new(d.join("bin/python"))
                .args(["-c", "import boto3"])
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        }
    };
    if ready(&dir) {
        return Some(python);
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !made {
        eprintln!("notice: python3 -m venv failed or python3 missing: real-client tests skipped");
        return None;
    }
    let installed = Command::new(dir.join("bin/pip"))
        .args(["install", "-q", "boto3", "awscli"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !installed || !ready(&dir) {
        eprintln!("notice: pip install boto3 awscli failed: real-client tests skipped");
        return None;
    }
    Some(python)
}
