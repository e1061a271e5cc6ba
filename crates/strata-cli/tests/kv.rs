//! `strata kv`: the commands, exactly as scripts use them, and the kill -9 crash test.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

fn strata(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("kv")
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn with_stdin(db: &Path, args: &[&str], input: &str) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("kv")
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

#[test]
fn put_get_del_scan() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    for (k, v) in [("b", "2"), ("a", "1"), ("c", "3"), ("ab", "x"), ("d", "4")] {
        assert!(strata(&db, &["put", k, v]).status.success());
    }
    assert!(strata(&db, &["del", "d"]).status.success());
    assert!(strata(&db, &["del", "never-there"]).status.success());
    let g = strata(&db, &["get", "a"]);
    assert_eq!((g.status.code(), stdout(&g).as_str()), (Some(0), "1\n"));
    let g = strata(&db, &["get", "d"]);
    assert_eq!((g.status.code(), stdout(&g).as_str()), (Some(1), ""));
    let rec = |pairs: &[(&str, &str)]| -> String {
        pairs
            .iter()
            .map(|(k, v)| format!("{{\"k\":\"{k}\",\"v\":\"{v}\"}}\n"))
            .collect()
    };
    assert_eq!(
        stdout(&strata(&db, &["scan"])),
        rec(&[("a", "1"), ("ab", "x"), ("b", "2"), ("c", "3")])
    );
    assert_eq!(
        stdout(&strata(&db, &["scan", "--reverse", "--limit", "2"])),
        rec(&[("c", "3"), ("b", "2")])
    );
    assert_eq!(
        stdout(&strata(&db, &["scan", "--prefix", "a"])),
        rec(&[("a", "1"), ("ab", "x")])
    );
    assert_eq!(
        stdout(&strata(&db, &["scan", "--start", "ab", "--end", "c"])),
        rec(&[("ab", "x"), ("b", "2")])
    );
    assert_eq!(
        stdout(&strata(&db, &["scan", "--prefix", "a", "--reverse"])),
        rec(&[("ab", "x"), ("a", "1")])
    );
    // Hex keys and values.
    assert!(strata(&db, &["--hex", "put", "00ff", "0102"])
        .status
        .success());
    assert_eq!(stdout(&strata(&db, &["--hex", "get", "00ff"])), "0102\n");
    assert_eq!(
        stdout(&strata(&db, &["--hex", "scan", "--limit", "1"])),
        rec(&[("00ff", "0102")])
    );
}

#[test]
fn load_acks_stats_and_check() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let input: String = (0..2500)
        .map(|i| format!("{{\"k\": \"key{i:05}\", \"v\": \"value {i}\"}}\n"))
        .collect();
    let o = with_stdin(&db, &["load", "--ack"], &input);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let acks: Vec<u64> = stdout(&o)
        .lines()
        .map(|l| l.strip_prefix("acked ").unwrap().parse().unwrap())
        .collect();
    assert!(acks.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(acks.last(), Some(&2500));
    assert_eq!(stdout(&strata(&db, &["get", "key01234"])), "value 1234\n");
    // Reads write nothing: the records are still in the WAL. The next writer's open turns
    // them into SSTs.
    assert!(strata(&db, &["put", "x", "y"]).status.success());
    let st: serde_json::Value =
        serde_json::from_str(stdout(&strata(&db, &["stats"])).trim()).unwrap();
    // An ordered key-value store gets one stripe by default (see LsmOptions::stripes).
    assert_eq!(st["stripes"], 1);
    assert_eq!(st["files_per_level"].as_array().unwrap().len(), 5);
    assert!(st["bytes"].as_u64().unwrap() > 0);
    assert!(st.get("memtable_bytes").is_some() && st.get("wal_bytes").is_some());
    let c = strata(&db, &["check"]);
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    // A bad line stops the load with exit code 2, after committing what came before it.
    let o = with_stdin(&db, &["load"], "{\"k\": \"z1\", \"v\": \"1\"}\nnot json\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 2"));
    assert_eq!(stdout(&strata(&db, &["get", "z1"])), "1\n");
}

#[test]
fn invalid_input_and_corruption_fail_cleanly() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let one_line = |o: &Output| {
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(!e.contains("panicked"), "{e}");
        e
    };
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["kv", "get", "a"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    one_line(&o);
    let o = strata(&db, &["--hex", "put", "zz", "00"]);
    assert_eq!(o.status.code(), Some(2));
    one_line(&o);
    let o = strata(&db, &["scan"]);
    assert_ne!(o.status.code(), Some(0), "scan of a missing database");
    one_line(&o);
    // Corrupt one SST: check and reads report the file, exit code != 0.
    let input: String = (0..3000)
        .map(|i| format!("{{\"k\": \"key{i:05}\", \"v\": \"value {i}\"}}\n"))
        .collect();
    assert!(with_stdin(&db, &["load", "--sync", "none"], &input)
        .status
        .success());
    assert!(strata(&db, &["put", "x", "y"]).status.success()); // the WAL becomes SSTs
    assert!(strata(&db, &["check"]).status.success());
    let sst = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .unwrap();
    let mut data = std::fs::read(&sst).unwrap();
    data[5] ^= 0x20;
    std::fs::write(&sst, &data).unwrap();
    let o = strata(&db, &["check"]);
    assert_eq!(o.status.code(), Some(1));
    one_line(&o);
    let listed = stdout(&o);
    assert!(
        listed.contains(sst.file_name().unwrap().to_str().unwrap()) && listed.contains("offset"),
        "{listed}"
    );
    // Truncated footer: the database does not open, one line, no panic.
    std::fs::write(&sst, &data[..data.len() - 3]).unwrap();
    let o = strata(&db, &["scan"]);
    assert_ne!(o.status.code(), Some(0));
    one_line(&o);
}

/// xorshift64*, seeded from the clock (the seed is printed so a failure can be replayed).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn record(round: usize, i: usize) -> (String, String) {
    (
        format!("r{round:02}-{i:06}"),
        format!("value-{round}-{i}-{}", "x".repeat(i % 50)),
    )
}

/// Runs `load --ack` in a child, kills it with SIGKILL after a random delay (counted from its
/// first acknowledgement when `after_first_ack`, else from its start, which may fall inside
/// recovery); returns the highest acknowledged count.
fn load_and_kill(
    db: &Path,
    sync: &str,
    round: usize,
    n: usize,
    delay: Duration,
    after_first_ack: bool,
) -> u64 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["kv", "--db"])
        .arg(db)
        .args(["load", "--sync", sync, "--ack"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // Feed in small chunks so that the child commits many batches.
        for chunk in (0..n).collect::<Vec<_>>().chunks(50) {
            let s: String = chunk
                .iter()
                .map(|&i| {
                    let (k, v) = record(round, i);
                    format!("{{\"k\": \"{k}\", \"v\": \"{v}\"}}\n")
                })
                .collect();
            if stdin.write_all(s.as_bytes()).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_micros(300));
        }
    });
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut acked = 0;
        for line in BufReader::new(out).lines() {
            let Ok(l) = line else { break };
            if let Some(n) = l.strip_prefix("acked ").and_then(|x| x.parse::<u64>().ok()) {
                assert!(n >= acked);
                acked = n;
                let _ = tx.send(());
            }
        }
        acked
    });
    if after_first_ack {
        let _ = rx.recv_timeout(Duration::from_secs(10));
    }
    std::thread::sleep(delay);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let _ = writer.join();
    reader.join().unwrap()
}

fn crash_loop(sync: &str, rounds: usize) {
    let seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("crash test ({sync}) seed {seed}");
    let mut rng = Rng(seed);
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let n = 20_000;
    let started = Instant::now();
    let mut history: Vec<u64> = Vec::new();
    for round in 0..rounds {
        let delay = Duration::from_millis(rng.next() % 250);
        let acked = load_and_kill(&db, sync, round, n, delay, round % 4 != 3);
        // Reopen: every file verifies.
        let c = strata(&db, &["check"]);
        assert!(
            c.status.success(),
            "seed {seed} round {round}: check failed: {}",
            String::from_utf8_lossy(&c.stderr)
        );
        let scan = stdout(&strata(&db, &["scan"]));
        let mut per_round = vec![0u64; round + 1];
        let pairs: Vec<(String, String)> = scan
            .lines()
            .map(|l| {
                let j: serde_json::Value = serde_json::from_str(l).unwrap();
                let s = |f: &str| j[f].as_str().unwrap().to_string();
                (s("k"), s("v"))
            })
            .collect();
        let mut rows = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        for (r, count) in per_round.iter_mut().enumerate() {
            // Keys of round r come in input order: the recovered state is a prefix of the input.
            let mut i = 0usize;
            let peek = rows.clone();
            for (k, v) in peek {
                if !k.starts_with(&format!("r{r:02}-")) {
                    break;
                }
                let (wk, wv) = record(r, i);
                assert_eq!(
                    (k, v),
                    (wk.as_str(), wv.as_str()),
                    "seed {seed} round {round}: not a prefix of round {r}"
                );
                i += 1;
                rows.next();
            }
            *count = i as u64;
        }
        assert!(rows.next().is_none(), "seed {seed}: unexpected keys");
        // Earlier rounds are unchanged by later crashes.
        for (r, &c) in history.iter().enumerate() {
            assert_eq!(
                per_round[r], c,
                "seed {seed} round {round}: round {r} changed"
            );
        }
        if sync == "always" {
            assert!(
                per_round[round] >= acked,
                "seed {seed} round {round}: {acked} acked, {} recovered",
                per_round[round]
            );
        }
        eprintln!(
            "round {round}: acked {acked}, recovered {}",
            per_round[round]
        );
        history.push(per_round[round]);
    }
    eprintln!("{rounds} rounds in {:?}", started.elapsed());
}

#[test]
fn kill_9_during_load_sync_always_keeps_every_acknowledged_record() {
    crash_loop("always", 12);
}

#[test]
fn kill_9_during_load_sync_none_recovers_a_prefix() {
    crash_loop("none", 8);
}
