//! kill -9 of a real process while flushes, compactions and intra-L0 merges run.
//!
//! The writer is this test binary run again as a child (`crash_child`, which does nothing
//! unless `STRATA_CRASH_DIR` is set). It opens the engine with tiny memtables and SSTs, so that
//! background flushes, L0 → L1 compactions and intra-L0 merges run all the time, and writes
//! batches that are a pure function of `(round, batch number)`: a marker key, puts of keys
//! shared by every round (overwrites) and deletes of them (tombstones that compactions must
//! keep or drop correctly). After each acknowledged (fsynced) batch it prints `acked N`; every
//! few batches it prints what the maintenance threads have done so far.
//!
//! The parent kills the child with SIGKILL after a random delay, runs `check` on the
//! directory as the crash left it (every file must verify), reopens it, finds how many batches
//! of the round survived (the marker keys must be a prefix `0..b`, with `b` ≥ the last
//! acknowledged count), and compares every key of the database with the model after those
//! `b` batches. Earlier rounds' batches must be unchanged by later crashes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use strata_lsm::{Direction, Engine, KeyRange, LsmEngine, LsmOptions, SyncMode, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Keys shared by every round (overwritten and deleted across rounds).
const SHARED: u64 = 1500;

fn options() -> LsmOptions {
    LsmOptions {
        stripes: 4,
        sync: SyncMode::Always,
        block_cache_bytes: 32 << 10,
        memtable_budget_bytes: 6000,
        block_bytes: 256,
        // Intra-L0 merges are allowed while L0 holds at most this many bytes.
        sst_target_bytes: 8 << 10,
        l0_compaction_trigger: 4,
        l0_stop_trigger: 12,
        level1_bytes: 16 << 10,
        background: true,
        ..LsmOptions::default()
    }
}

/// splitmix64: the batch contents are a function of (round, batch, slot).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn marker(round: u64, batch: u64) -> Vec<u8> {
    format!("m{round:02}-{batch:07}").into_bytes()
}

/// The operations of batch `batch` of round `round`: `(key, Some(value))` puts,
/// `(key, None)` deletes, in order.
fn batch_ops(round: u64, batch: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let h = mix((round << 40) | batch);
    let mut ops = vec![(marker(round, batch), Some(format!("b{batch}").into_bytes()))];
    for slot in 0..1 + h % 8 {
        let x = mix(h ^ slot) % SHARED;
        let v = format!("v{round}-{batch}-{slot}-").repeat(1 + (x % 5) as usize);
        ops.push((format!("k{x:05}").into_bytes(), Some(v.into_bytes())));
    }
    if h.is_multiple_of(3) {
        let x = mix(h ^ 0xdead) % SHARED;
        ops.push((format!("k{x:05}").into_bytes(), None));
    }
    ops
}

fn apply(model: &mut Model, round: u64, batch: u64) {
    for (k, v) in batch_ops(round, batch) {
        match v {
            Some(v) => model.insert(k, v),
            None => model.remove(&k),
        };
    }
}

/// The writer. A no-op unless run by [`load_and_kill`].
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os("STRATA_CRASH_DIR") else {
        return;
    };
    let round: u64 = std::env::var("STRATA_CRASH_ROUND")
        .ok()
        .and_then(|r| r.parse().ok())
        .expect("STRATA_CRASH_ROUND");
    let e = LsmEngine::open(Path::new(&dir), options()).expect("open");
    println!("opened");
    for batch in 0..1_000_000u64 {
        let mut b = WriteBatch::new();
        for (k, v) in batch_ops(round, batch) {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            };
        }
        e.write(b).expect("write");
        println!("acked {}", batch + 1);
        if batch.is_multiple_of(16) {
            let w = e.stats().expect("stats").written;
            println!(
                "maint {} {} {} {}",
                w.flushed_bytes, w.compactions, w.l0_merges, w.moves
            );
        }
    }
}

/// What one killed child did: its last acknowledged batch count and the largest counts of
/// flushed bytes, compactions, intra-L0 merges and moves it reported.
#[derive(Default, Debug)]
struct ChildReport {
    acked: u64,
    flushed: u64,
    compactions: u64,
    l0_merges: u64,
    moves: u64,
}

fn load_and_kill(dir: &Path, round: u64, delay: Duration, after_first_ack: bool) -> ChildReport {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("STRATA_CRASH_DIR", dir)
        .env("STRATA_CRASH_ROUND", round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut r = ChildReport::default();
        for line in BufReader::new(out).lines() {
            let Ok(l) = line else { break };
            if let Some(n) = l.strip_prefix("acked ").and_then(|x| x.parse::<u64>().ok()) {
                assert!(n > r.acked);
                r.acked = n;
                let _ = tx.send(());
            } else if let Some(m) = l.strip_prefix("maint ") {
                let v: Vec<u64> = m.split(' ').filter_map(|x| x.parse().ok()).collect();
                if let [f, c, l0, mv] = v[..] {
                    r.flushed = r.flushed.max(f);
                    r.compactions = r.compactions.max(c);
                    r.l0_merges = r.l0_merges.max(l0);
                    r.moves = r.moves.max(mv);
                }
            }
        }
        r
    });
    if after_first_ack {
        let _ = rx.recv_timeout(Duration::from_secs(30));
    }
    std::thread::sleep(delay);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap()
}

fn contents(e: &LsmEngine) -> Model {
    let snap = e.snapshot().unwrap();
    snap.range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn kill_9_during_flush_and_compaction_keeps_every_acknowledged_batch() {
    let seed = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("crash test seed {seed}");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let started = Instant::now();
    let rounds = 10u64;
    // The model of every earlier round's surviving batches.
    let mut model = Model::new();
    let mut totals = ChildReport::default();
    for round in 0..rounds {
        let delay = Duration::from_millis(100 + mix(seed ^ round) % 900);
        let r = load_and_kill(&dir, round, delay, round % 5 != 4);
        // The directory as the crash left it: every file verifies.
        let report = strata_lsm::check(&dir, None).unwrap();
        assert!(
            report.is_ok(),
            "seed {seed} round {round}: check found {:?}",
            report.problems
        );
        let e = LsmEngine::open(&dir, options()).unwrap();
        let got = contents(&e);
        // The round's markers are a prefix 0..b of its batches, b ≥ acknowledged.
        let prefix = format!("m{round:02}-").into_bytes();
        let b = got.keys().filter(|k| k.starts_with(&prefix)).count() as u64;
        assert!(
            b >= r.acked,
            "seed {seed} round {round}: {} batches acknowledged, {b} recovered",
            r.acked
        );
        for batch in 0..b {
            apply(&mut model, round, batch);
        }
        if got != model {
            let diff: Vec<_> = model
                .iter()
                .filter(|(k, v)| got.get(*k) != Some(v))
                .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
                .chain(
                    got.keys()
                        .filter(|k| !model.contains_key(*k))
                        .map(|k| String::from_utf8_lossy(k).into_owned()),
                )
                .take(10)
                .collect();
            panic!("seed {seed} round {round}: {b} batches recovered, but the keys differ from the model: {diff:?}");
        }
        e.close().unwrap();
        eprintln!("round {round}: acked {}, recovered {b}; {r:?}", r.acked);
        totals.acked += r.acked;
        totals.flushed += r.flushed;
        totals.compactions += r.compactions;
        totals.l0_merges += r.l0_merges;
        totals.moves += r.moves;
    }
    eprintln!("{rounds} rounds in {:?}: {totals:?}", started.elapsed());
    // The kills must have hit a writer whose maintenance was busy.
    assert!(totals.compactions > 0, "no compaction ran: {totals:?}");
    assert!(totals.l0_merges > 0, "no intra-L0 merge ran: {totals:?}");
}
