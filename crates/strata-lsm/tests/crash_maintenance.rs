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
//!
//! A kill from outside almost never lands between two steps of a flush or a compaction (the
//! SSTs synced but not yet in the manifest; the manifest edit synced but the WALs or inputs not
//! yet deleted), of a manifest roll-over (the new manifest synced but `CURRENT` not switched;
//! switched but the old manifest not deleted) or of a read-write open (the WALs' data in new
//! L0 SSTs that no manifest lists; the new manifest current but the old files not deleted).
//! The second test kills the writer exactly there: the child runs with a crash
//! point (`strata_lsm::crash_point`, enabled for this crate's tests) and kills itself with
//! SIGKILL the N-th time it reaches it; the same checks follow.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};

use strata_lsm::{Direction, Engine, KeyRange, LsmEngine, LsmOptions, SyncMode, WriteBatch};

#[path = "common/model.rs"]
mod model;
use model::{apply_ops, mix, model_diff, Model, Workload};

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
        // Roll the manifest over every few dozen edits, so that kills land around rolls too.
        manifest_roll_bytes: 32 << 10,
        ..LsmOptions::default()
    }
}

fn marker(round: u64, batch: u64) -> Vec<u8> {
    format!("m{round:02}-{batch:07}").into_bytes()
}

/// This test's batches (see [`Workload`]).
const WORKLOAD: Workload = Workload {
    shared: SHARED,
    max_slots: 8,
    key_digits: 5,
    repeats: 5,
    marker,
};

fn batch_ops(round: u64, batch: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    WORKLOAD.batch_ops(round, batch)
}

fn apply(model: &mut Model, round: u64, batch: u64) {
    apply_ops(model, batch_ops(round, batch));
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
                "maint {} {} {} {} {}",
                w.flushed_bytes, w.compactions, w.l0_merges, w.moves, w.compaction_rounds
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
    /// Manifest records of compaction rounds (fewer than compactions + moves when a round
    /// took jobs of several stripes).
    rounds: u64,
}

/// Starts the writer child for `round` (with the crash point `crash_at`, if any), a thread
/// that collects its report (`acked` receives a message at each acknowledgement) and one that
/// collects its stderr (a panic message, for the assertion that names how it ended).
fn spawn_child(
    dir: &Path,
    round: u64,
    crash_at: Option<&str>,
) -> (
    std::process::Child,
    std::thread::JoinHandle<ChildReport>,
    std::sync::mpsc::Receiver<()>,
    std::thread::JoinHandle<String>,
) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "crash_child",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env("STRATA_CRASH_DIR", dir)
    .env("STRATA_CRASH_ROUND", round.to_string())
    .env_remove(strata_lsm::crash_point::ENV)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if let Some(p) = crash_at {
        cmd.env(strata_lsm::crash_point::ENV, p);
    }
    let mut child = cmd.spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
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
                if let [f, c, l0, mv, rounds] = v[..] {
                    r.flushed = r.flushed.max(f);
                    r.compactions = r.compactions.max(c);
                    r.l0_merges = r.l0_merges.max(l0);
                    r.moves = r.moves.max(mv);
                    r.rounds = r.rounds.max(rounds);
                }
            }
        }
        r
    });
    (child, reader, rx, stderr)
}

fn load_and_kill(dir: &Path, round: u64, delay: Duration, after_first_ack: bool) -> ChildReport {
    let (mut child, reader, rx, _stderr) = spawn_child(dir, round, None);
    if after_first_ack {
        let _ = rx.recv_timeout(Duration::from_secs(30));
    }
    std::thread::sleep(delay);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap()
}

/// Runs the writer with the crash point `point` (`NAME@N`) until it kills itself there;
/// `None` when it did not reach the point within a minute (it is then killed).
fn load_until_crash_point(dir: &Path, round: u64, point: &str) -> Option<ChildReport> {
    let (mut child, reader, _rx, stderr) = spawn_child(dir, round, Some(point));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status: Option<ExitStatus> = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let r = reader.join().unwrap();
    let stderr = stderr.join().unwrap_or_default();
    let status = status?;
    assert_eq!(
        status.signal(),
        Some(9),
        "{point}: the writer ended otherwise than by its crash point: {status:?}; its stderr:\n{stderr}"
    );
    Some(r)
}

/// After a crash in `round` with `r.acked` batches acknowledged: every file verifies, the
/// round's markers are a prefix `0..b` with `b` ≥ acknowledged, and the database equals the
/// model of every surviving batch (which is extended by the round's `b` batches).
fn verify_after_crash(dir: &Path, round: u64, acked: u64, model: &mut Model, what: &str) -> u64 {
    let report = strata_lsm::check(dir, None).unwrap();
    assert!(
        report.is_ok(),
        "{what} round {round}: check found {:?}",
        report.problems
    );
    let e = LsmEngine::open(dir, options()).unwrap();
    let got = contents(&e);
    let prefix = format!("m{round:02}-").into_bytes();
    let b = got.keys().filter(|k| k.starts_with(&prefix)).count() as u64;
    assert!(
        b >= acked,
        "{what} round {round}: {acked} batches acknowledged, {b} recovered"
    );
    for batch in 0..b {
        apply(model, round, batch);
    }
    if got != *model {
        let diff = model_diff(model, &got);
        panic!("{what} round {round}: {b} batches recovered, but the keys differ from the model: {diff:?}");
    }
    e.close().unwrap();
    b
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
        // The directory as the crash left it: every file verifies; nothing acknowledged lost.
        let b = verify_after_crash(&dir, round, r.acked, &mut model, &format!("seed {seed}"));
        eprintln!("round {round}: acked {}, recovered {b}; {r:?}", r.acked);
        totals.acked += r.acked;
        totals.flushed += r.flushed;
        totals.compactions += r.compactions;
        totals.l0_merges += r.l0_merges;
        totals.moves += r.moves;
        totals.rounds += r.rounds;
    }
    eprintln!("{rounds} rounds in {:?}: {totals:?}", started.elapsed());
    // The kills must have hit a writer whose maintenance was busy.
    assert!(totals.compactions > 0, "no compaction ran: {totals:?}");
    assert!(totals.l0_merges > 0, "no intra-L0 merge ran: {totals:?}");
}

/// Which hits of each crash point the crash-point test kills the writer at. A read-write open
/// reaches its points once per process (the child opens once); `manifest.written` and
/// `manifest.current-tmp-synced` are reached once by the open, then at each roll-over.
fn hits_of(point: &str) -> &'static [u64] {
    use strata_lsm::crash_point::*;
    match point {
        OPEN_L0_SYNCED | OPEN_MANIFEST_CURRENT => &[1],
        MANIFEST_WRITTEN | MANIFEST_CURRENT_TMP => &[1, 3],
        MANIFEST_ROLLED => &[1, 3],
        _ => &[1, 5],
    }
}

#[test]
fn kill_9_at_each_crash_point_keeps_every_acknowledged_batch() {
    use strata_lsm::crash_point;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("db");
    let mut model = Model::new();
    // A database with unflushed batches in its WAL first: the open's points then have work.
    let r = load_and_kill(&dir, 0, Duration::from_millis(300), true);
    verify_after_crash(&dir, 0, r.acked, &mut model, "before the crash points");
    let mut round = 1;
    for point in crash_point::ALL {
        for nth in hits_of(point) {
            let at = format!("{point}@{nth}");
            let r = load_until_crash_point(&dir, round, &at)
                .unwrap_or_else(|| panic!("{at}: not reached within a minute of writes"));
            let b = verify_after_crash(&dir, round, r.acked, &mut model, &at);
            eprintln!("{at}: acked {}, recovered {b}; {r:?}", r.acked);
            round += 1;
        }
    }
    // And the writer goes on over what each crash left.
    let r = load_and_kill(&dir, round, Duration::from_millis(300), true);
    verify_after_crash(&dir, round, r.acked, &mut model, "after the crash points");
}
