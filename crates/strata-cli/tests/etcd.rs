//! `strata … --engine etcd://…`: the same commands and outputs as on a directory, one-line
//! errors in time when the cluster is away, loads that fit etcd's limits, and real-process
//! failures (kill -9 of the leader during `kv load --ack`, a lost quorum) on private clusters.
//!
//! Tests on the shared cluster need `STRATA_ETCD_ENDPOINTS` (set by `.ci/run`); the failure
//! tests need `etcd` installed. Otherwise they say they are skipped and pass.

#[path = "../../strata-etcd/tests/cluster/mod.rs"]
mod cluster;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use cluster::Cluster;

fn endpoints(test: &str) -> Option<String> {
    match std::env::var("STRATA_ETCD_ENDPOINTS") {
        Ok(v) if !v.trim().is_empty() => Some(v),
        _ => {
            eprintln!("SKIPPED {test}: no etcd cluster (STRATA_ETCD_ENDPOINTS unset)");
            None
        }
    }
}

fn unique(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "cli/{test}/{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Where a command runs: `--db DIR` or `--engine URL`.
#[derive(Clone)]
enum At {
    Dir(std::path::PathBuf),
    Url(String),
}

fn run(at: &At, args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
    match at {
        At::Dir(d) => c.arg("--db").arg(d),
        At::Url(u) => c.arg("--engine").arg(u),
    };
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(o: &Output) -> (Option<i32>, String) {
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// Scripts of commands whose outputs must be identical on a directory and on etcd.
#[test]
fn kv_and_table_commands_print_the_same_on_etcd_as_on_a_directory() {
    let Some(eps) = endpoints("same_outputs") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let local = At::Dir(dir.path().join("db"));
    let prefix = unique("same");
    let remote = At::Url(format!("etcd://{eps}/{prefix}"));
    let local_tables = At::Dir(dir.path().join("tables"));
    let remote_tables = At::Url(format!("etcd://{eps}/{prefix}-tables"));
    let records: String = (0..300)
        .map(|i| {
            format!(
                "{{\"k\":\"key{:04}\",\"v\":\"value {i}\"}}\n",
                (i * 7919) % 1000
            )
        })
        .collect();
    let items: String = (0..250)
        .map(|i| {
            format!(
                "{{\"user\":\"u{}\",\"ts\":{i},\"body\":\"post {i}\"}}\n",
                i % 5
            )
        })
        .collect();
    let schema = r#"{"name":"posts","partition":[{"name":"user","type":"text"}],"sort":[{"name":"ts","type":"int","order":"desc"}]}"#;
    let script: Vec<(Vec<&str>, Option<&str>)> = vec![
        (vec!["kv", "put", "a", "1"], None),
        (vec!["kv", "put", "", "empty key"], None),
        (vec!["kv", "get", "a"], None),
        (vec!["kv", "get", "missing"], None),
        // (`--ack` lines differ: batches are cut at each engine's limits.)
        (vec!["kv", "load"], Some(&records)),
        (vec!["kv", "scan"], None),
        (vec!["kv", "scan", "--reverse", "--limit", "7"], None),
        (vec!["kv", "scan", "--prefix", "key01"], None),
        (vec!["kv", "scan", "--prefix", "key01", "--reverse"], None),
        (
            vec![
                "kv",
                "scan",
                "--start",
                "key0100",
                "--end",
                "key0200",
                "--reverse",
            ],
            None,
        ),
        (vec!["kv", "del", "a"], None),
        (vec!["kv", "--hex", "put", "00ff", "0102"], None),
        (vec!["kv", "--hex", "scan", "--limit", "2"], None),
        (
            vec!["kv", "load"],
            Some("{\"k\":\"x\",\"v\":\"1\"}\nnot json\n"),
        ),
        (vec!["kv", "get", "x"], None),
        (vec!["table", "create", schema], None),
        (vec!["table", "list"], None),
        (vec!["table", "put", "posts"], Some(&items)),
        (
            vec![
                "table",
                "put",
                "posts",
                r#"{"user":"u1","ts":1,"body":"again"}"#,
                "--if-not-exists",
            ],
            None,
        ),
        (
            vec!["table", "get", "posts", r#"{"user":"u1","ts":1}"#],
            None,
        ),
        (
            vec![
                "table",
                "query",
                "posts",
                r#"{"partition":{"user":"u3"},"limit":4}"#,
            ],
            None,
        ),
        (
            vec![
                "table",
                "query",
                "posts",
                r#"{"partition":{"user":"u3"},"sort":{"op":"between","values":[10,60]},"reverse":true}"#,
            ],
            None,
        ),
        (vec!["table", "scan", "posts", r#"{"limit":30}"#], None),
        (
            vec!["table", "scan", "posts", r#"{"segment":1,"segments":3}"#],
            None,
        ),
        (
            vec!["table", "delete", "posts", r#"{"user":"u1","ts":1}"#],
            None,
        ),
        (
            vec!["table", "get", "posts", r#"{"user":"u1","ts":1}"#],
            None,
        ),
        (vec!["table", "scan", "posts"], None),
        (vec!["table", "drop", "posts"], None),
        (vec!["table", "list"], None),
        (vec!["kv", "scan", "--limit", "3"], None),
    ];
    for (args, input) in &script {
        // A directory is a kv database or a table database (its recorded partitioner), so the
        // two kinds of command use two directories, and two namespaces.
        let (local, remote) = if args[0] == "table" {
            (&local_tables, &remote_tables)
        } else {
            (&local, &remote)
        };
        let l = run(local, args, *input);
        let r = run(remote, args, *input);
        assert_eq!(
            text(&l),
            text(&r),
            "{args:?}: stderr {}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert_eq!(
            l.stderr.is_empty(),
            r.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
    let _ = run(&remote, &["kv", "scan"], None);
}

#[test]
fn loads_larger_than_etcds_limits_are_cut_into_fitting_batches() {
    let Some(eps) = endpoints("big_loads") else {
        return;
    };
    let url = At::Url(format!("etcd://{eps}/{}", unique("big")));
    // 600 records of 20 KiB: 12 MiB, far beyond one 128-op / 1.5 MiB transaction.
    let big = "x".repeat(20 * 1024);
    let records: String = (0..600)
        .map(|i| format!("{{\"k\":\"k{i:04}\",\"v\":\"{big}\"}}\n"))
        .collect();
    let o = run(&url, &["kv", "load", "--ack"], Some(&records));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let acks: Vec<u64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.strip_prefix("acked ").unwrap().parse().unwrap())
        .collect();
    assert_eq!(acks.last(), Some(&600));
    assert!(acks.windows(2).all(|w| w[1] - w[0] <= 128), "{acks:?}");
    let o = run(&url, &["kv", "scan"], None);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 600);
    // Table items too.
    let schema = r#"{"name":"t","partition":[{"name":"p","type":"int"}]}"#;
    assert!(run(&url, &["table", "create", schema], None)
        .status
        .success());
    let items: String = (0..400)
        .map(|i| format!("{{\"p\":{i},\"body\":\"{big}\"}}\n"))
        .collect();
    let o = run(&url, &["table", "put", "t"], Some(&items));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&url, &["table", "scan", "t"], None);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 400);
    // One record beyond any batch: refused, saying why, with the earlier ones kept.
    let huge = "y".repeat(1600 * 1024);
    let o = run(
        &url,
        &["kv", "load"],
        Some(&format!(
            "{{\"k\":\"ok\",\"v\":\"1\"}}\n{{\"k\":\"huge\",\"v\":\"{huge}\"}}\n"
        )),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--max-request-bytes") && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(
        text(&run(&url, &["kv", "get", "ok"], None)),
        (Some(0), "1\n".into())
    );
}

/// What belongs to directories (the lock, read-only opens, check, repair, partitioners) does
/// not apply on etcd: a second process writes while another holds the database open, and the
/// file commands say they work on directories.
#[test]
fn no_lock_and_no_file_commands_on_etcd() {
    let Some(eps) = endpoints("no_lock") else {
        return;
    };
    let url = At::Url(format!("etcd://{eps}/{}", unique("nolock")));
    // A load that keeps the database open (its stdin stays open) ...
    let mut loader = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--engine"])
        .arg(match &url {
            At::Url(u) => u.as_str(),
            At::Dir(_) => unreachable!(),
        })
        .args(["kv", "load", "--ack"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = loader.stdin.take().unwrap();
    stdin.write_all(b"{\"k\":\"a\",\"v\":\"1\"}\n").unwrap();
    stdin.flush().unwrap();
    let mut acks = BufReader::new(loader.stdout.take().unwrap());
    let mut line = String::new();
    acks.read_line(&mut line).unwrap();
    assert_eq!(line, "acked 1\n");
    // ... does not lock others out: they read and write at once.
    assert_eq!(
        text(&run(&url, &["kv", "get", "a"], None)),
        (Some(0), "1\n".into())
    );
    assert!(run(&url, &["kv", "put", "b", "2"], None).status.success());
    stdin.write_all(b"{\"k\":\"c\",\"v\":\"3\"}\n").unwrap();
    drop(stdin);
    let out = loader.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text(&run(&url, &["kv", "scan"], None)).1,
        "{\"k\":\"a\",\"v\":\"1\"}\n{\"k\":\"b\",\"v\":\"2\"}\n{\"k\":\"c\",\"v\":\"3\"}\n"
    );
    // The file commands refuse, saying where they apply (exit 2, one line).
    for args in [
        &["kv", "check"][..],
        &["kv", "repair"],
        &["kv", "--partitioner", "fixed-prefix:1", "put", "x", "y"],
    ] {
        let o = run(&url, args, None);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("database director"), "{args:?}: {err}");
    }
    assert_eq!(
        text(&run(&url, &["kv", "get", "x"], None)),
        (Some(1), String::new())
    );
}

#[test]
fn an_unreachable_cluster_is_one_line_in_time() {
    for args in [
        vec!["kv", "get", "a"],
        vec!["kv", "put", "a", "1"],
        vec!["table", "list"],
    ] {
        let t = Instant::now();
        let o = run(
            &At::Url("etcd://127.0.0.1:1/x?timeout=1".into()),
            &args,
            None,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("127.0.0.1:1") && err.contains("within 1.0s"),
            "{err}"
        );
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    }
    let o = run(
        &At::Url("etcd://127.0.0.1:1".into()),
        &["kv", "get", "a"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("PREFIX"));
}

/// kill -9 of the leader while `kv load --ack` runs, then restart it: every acknowledged record
/// is there, and the records after the last acknowledgement form whole batches or nothing.
/// What a `kv load --ack` of 20,000 records did when its cluster's leader was kill -9'd after
/// 2,000 acks (the member restarted afterwards).
struct KilledLoad {
    status: std::process::ExitStatus,
    err: String,
    acked: u64,
    /// The records present afterwards.
    present: BTreeSet<u32>,
    total: u32,
}

fn load_and_kill_the_leader(name: &str, extra: &[&str]) -> Option<KilledLoad> {
    let c = Cluster::start(name)?;
    let url = format!("etcd://{}/load?timeout=5", c.endpoints());
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["--engine", &url, "kv", "load", "--ack"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let total = 20_000u32;
    let writer = std::thread::spawn(move || {
        // A steady producer: lines in bursts, so that batches and acks keep coming.
        for chunk in (0..total).collect::<Vec<_>>().chunks(50) {
            let mut s = String::new();
            for i in chunk {
                s.push_str(&format!("{{\"k\":\"r{i:06}\",\"v\":\"{i}\"}}\n"));
            }
            if stdin.write_all(s.as_bytes()).is_err() {
                return; // the load stopped
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut acked = 0u64;
    let mut killed = None;
    for line in out.lines() {
        let Ok(line) = line else { break };
        if let Some(n) = line
            .strip_prefix("acked ")
            .and_then(|x| x.parse::<u64>().ok())
        {
            assert!(n >= acked);
            acked = n;
        }
        if killed.is_none() && acked >= 2000 {
            let leader = c.leader();
            c.must(&["kill", &leader.to_string()]);
            killed = Some((leader, acked));
        }
    }
    writer.join().unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let (leader, acked_at_kill) = killed.expect("the load acknowledged 2000 records");
    eprintln!(
        "killed leader {leader} at {acked_at_kill} acked; load ended with {status} after {acked} \
         acked; stderr: {err}"
    );
    c.must(&["restart", &leader.to_string()]);
    let o = run(&At::Url(url.clone()), &["kv", "scan"], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let present: BTreeSet<u32> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let j: serde_json::Value = serde_json::from_str(l).unwrap();
            j["k"].as_str().unwrap()[1..].parse().unwrap()
        })
        .collect();
    for i in 0..acked as u32 {
        assert!(
            present.contains(&i),
            "acknowledged record {i} lost ({acked} acked)"
        );
    }
    // Records are loaded in order, one batch at a time: what is there is a prefix (a batch
    // applied whole or not at all, never with a hole).
    let n = present.len() as u32;
    assert!(
        present.iter().copied().eq(0..n),
        "not a prefix: {} records",
        present.len()
    );
    Some(KilledLoad {
        status,
        err,
        acked,
        present,
        total,
    })
}

#[test]
fn kill_9_of_the_leader_during_kv_load_keeps_every_acknowledged_record() {
    let Some(r) = load_and_kill_the_leader("cli_kill_leader", &[]) else {
        return;
    };
    let n = r.present.len() as u32;
    if r.status.success() {
        assert_eq!(n, r.total);
    } else {
        assert!(
            r.err.contains("outcome unknown") || r.err.contains("etcd cluster"),
            "{}",
            r.err
        );
        assert_eq!(r.err.lines().count(), 1, "{}", r.err);
        // The batch in flight, if applied, is named in the error: `records A..B`.
        let beyond = n as u64 - r.acked;
        assert!(
            beyond == 0 || r.err.contains(&format!("records {}..{}", r.acked + 1, n)),
            "{}",
            r.err
        );
    }
}

#[test]
fn with_resend_unknown_a_kv_load_rides_through_a_leader_kill() {
    let Some(r) = load_and_kill_the_leader("cli_kill_leader_resend", &["--resend-unknown"]) else {
        return;
    };
    assert!(r.status.success(), "{}", r.err);
    assert_eq!(r.present.len() as u32, r.total, "{}", r.err);
    assert_eq!(r.acked, r.total as u64);
}

#[test]
fn without_quorum_writes_fail_in_time_and_reads_say_if_they_may_be_stale() {
    let Some(c) = Cluster::start("cli_quorum") else {
        return;
    };
    let one = c.endpoint_list()[0].clone();
    let url = At::Url(format!("etcd://{}/q?timeout=2", c.endpoints()));
    assert!(run(&url, &["kv", "put", "k", "v"], None).status.success());
    c.must(&["stop", "2"]);
    c.must(&["stop", "3"]);
    let t = Instant::now();
    let o = run(&url, &["kv", "put", "k2", "v"], None);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    eprintln!("put without quorum ({:?}): {err}", t.elapsed());
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(err.lines().count(), 1);
    assert!(t.elapsed() < Duration::from_millis(4500));
    let o = run(&url, &["kv", "get", "k"], None);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // The client balances over all three endpoints: when its request lands on a stopped
    // member the answer is the transport error, otherwise the live member's "no leader"
    // (seen both ways on a quiet machine). Either way the read fails in time, in one line.
    assert!(
        err.contains("never stale") || err.contains("tcp connect error"),
        "{err}"
    );
    let stale = At::Url(format!("etcd://{one}/q?timeout=2&reads=serializable"));
    let o = run(&stale, &["kv", "get", "k"], None);
    assert_eq!(text(&o), (Some(0), "v\n".into()));
    assert!(String::from_utf8_lossy(&o.stderr).contains("may be stale"));
    c.must(&["restart", "2"]);
    c.must(&["restart", "3"]);
    c.leader();
    let url5 = At::Url(format!("etcd://{}/q?timeout=5", c.endpoints()));
    assert!(run(&url5, &["kv", "put", "k3", "v"], None).status.success());
    assert_eq!(
        text(&run(&url5, &["kv", "get", "k"], None)),
        (Some(0), "v\n".into())
    );
}
