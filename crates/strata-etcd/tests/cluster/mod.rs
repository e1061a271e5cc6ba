//! A private three-member etcd cluster for one failure test, driven through
//! `scripts/etcd-cluster.sh` (its own ports and data directory; cleaned up on drop). Shared by
//! path with the command line's etcd tests.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

/// True when `etcd` can be run here; otherwise prints why the test is skipped.
pub fn etcd_installed(test: &str) -> bool {
    let ok = Command::new("etcd")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!(
            "SKIPPED {test}: etcd is not installed (apt-get install etcd-server etcd-client)"
        );
    }
    ok
}

pub struct Cluster {
    dir: tempfile::TempDir,
    base: u16,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/etcd-cluster.sh")
}

fn ports_free(base: u16) -> bool {
    [0u16, 1, 2, 10, 11, 12]
        .iter()
        .all(|o| TcpListener::bind(("127.0.0.1", base + o)).is_ok())
}

impl Cluster {
    /// Starts a new cluster on free ports; `None` (after saying so) when etcd is missing.
    pub fn start(test: &str) -> Option<Cluster> {
        if !etcd_installed(test) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut seed = std::process::id() as u64 * 7919 + test.len() as u64 * 104_729;
        for b in test.bytes() {
            seed = seed.wrapping_mul(31).wrapping_add(b as u64);
        }
        let mut c = Cluster { dir, base: 0 };
        let mut starts = 0;
        for attempt in 0..50u64 {
            // Bases below Linux's ephemeral range (32768–60999 by default): a port chosen
            // there can be taken by any outgoing connection between the check below and
            // etcd's bind (a CI run lost a member that way). 600 bases of 20 ports.
            c.base = 20_000 + ((seed + attempt * 7) % 600) as u16 * 20;
            if !ports_free(c.base) {
                continue;
            }
            if c.run(&["start"]) {
                return Some(c);
            }
            // A port taken after the check (or a member that died for another reason): say
            // why from the members' logs, clean up and try other ports, a few times.
            c.print_member_logs();
            c.run(&["clean"]);
            std::fs::create_dir_all(c.dir.path()).unwrap();
            starts += 1;
            assert!(
                starts < 4,
                "etcd-cluster.sh [\"start\"] failed {starts} times"
            );
        }
        panic!("no free ports for a test cluster");
    }

    /// Runs a script command; true on success.
    pub fn run(&self, args: &[&str]) -> bool {
        let out = Command::new("bash")
            .arg(script())
            .args(args)
            .env("STRATA_ETCD_DIR", self.dir.path())
            .env("STRATA_ETCD_PORT", self.base.to_string())
            .output()
            .unwrap();
        if !out.status.success() {
            eprintln!(
                "etcd-cluster.sh {args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        out.status.success()
    }

    /// The last lines of each member's log (stderr), after a failed start.
    fn print_member_logs(&self) {
        for n in 1..=3 {
            let log = self.dir.path().join(format!("m{n}.log"));
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(5)..].join("\n");
            eprintln!("member {n} log ({}), last lines:\n{tail}", log.display());
        }
    }

    pub fn must(&self, args: &[&str]) {
        assert!(self.run(args), "etcd-cluster.sh {args:?} failed");
    }

    /// `HOST:PORT,HOST:PORT,HOST:PORT`.
    pub fn endpoints(&self) -> String {
        (0..3)
            .map(|i| format!("127.0.0.1:{}", self.base + i))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn endpoint_list(&self) -> Vec<String> {
        self.endpoints().split(',').map(str::to_owned).collect()
    }

    /// The member that leads now (1..3), waiting up to 10 s for one.
    pub fn leader(&self) -> u8 {
        for _ in 0..50 {
            let out = Command::new("bash")
                .arg(script())
                .arg("leader")
                .env("STRATA_ETCD_DIR", self.dir.path())
                .env("STRATA_ETCD_PORT", self.base.to_string())
                .output()
                .unwrap();
            if out.status.success() {
                if let Ok(n) = String::from_utf8_lossy(&out.stdout).trim().parse() {
                    return n;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        panic!("no leader");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.run(&["clean"]);
    }
}
