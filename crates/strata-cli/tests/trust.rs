//! Trust, with real processes: one owner per directory (exit code 3 for the others), reads
//! that never write (also on a read-only file system and on a full disk), a partitioner that
//! belongs to the database, bit flips that are reported (never taken for a torn tail), and
//! `check` / `repair`.
//!
//! `STRATA_TEST_BIN` runs these tests against another `strata` binary (e.g. an older build,
//! to see them fail there).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    std::env::var_os("STRATA_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_strata")))
}

fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

fn kv(db: &Path, args: &[&str]) -> Output {
    let mut a = vec!["kv", "--db", db.to_str().unwrap()];
    a.extend_from_slice(args);
    run(&a)
}

fn table(db: &Path, args: &[&str]) -> Output {
    let mut a = vec!["--db", db.to_str().unwrap(), "table"];
    a.extend_from_slice(args);
    run(&a)
}

fn with_stdin(args: &[&str], input: &str) -> Output {
    let mut c = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let input = input.to_owned();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let o = c.wait_with_output().unwrap();
    feeder.join().unwrap();
    o
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), err(o));
    out(o)
}

/// Number of keys with `prefix` (the scan output format does not matter: one line per key).
fn count(db: &Path, prefix: &str) -> usize {
    ok(&kv(db, &["scan", "--prefix", prefix])).lines().count()
}

/// Every file under `dir` and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            m.extend(snapshot(&p));
        } else {
            m.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
    m
}

fn records(prefix: &str, from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("{{\"k\":\"{prefix}{i:06}\",\"v\":\"value {i} of {prefix}\"}}\n"))
        .collect()
}

/// A `kv load --sync always --ack` fed `batches` batches of `per` records, `pause` apart.
struct Loader {
    child: Child,
    feeder: std::thread::JoinHandle<()>,
    acks: std::thread::JoinHandle<u64>,
}

impl Loader {
    fn start(db: &Path, prefix: &str, batches: usize, per: usize, pause: Duration) -> Loader {
        let mut child = Command::new(bin())
            .args(["kv", "--db", db.to_str().unwrap(), "load"])
            .args(["--sync", "always", "--ack"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let prefix = prefix.to_owned();
        let feeder = std::thread::spawn(move || {
            for b in 0..batches {
                if stdin
                    .write_all(records(&prefix, b * per, per).as_bytes())
                    .is_err()
                {
                    return;
                }
                let _ = stdin.flush();
                std::thread::sleep(pause);
            }
        });
        let stdout = child.stdout.take().unwrap();
        let acks = std::thread::spawn(move || {
            let mut last = 0;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line.strip_prefix("acked ") {
                    last = n.trim().parse().unwrap();
                }
            }
            last
        });
        Loader {
            child,
            feeder,
            acks,
        }
    }

    /// (exit code, last acknowledged count, stderr, seconds it ran).
    fn finish(mut self, started: Instant) -> (Option<i32>, u64, String, f64) {
        let status = self.child.wait().unwrap();
        let secs = started.elapsed().as_secs_f64();
        let mut e = String::new();
        if let Some(mut s) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut s, &mut e);
        }
        let _ = self.feeder.join();
        (status.code(), self.acks.join().unwrap(), e, secs)
    }
}

#[test]
fn a_second_loader_fails_fast_and_the_first_keeps_every_acknowledged_record() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let t0 = Instant::now();
    let a = Loader::start(&db, "a", 20, 500, Duration::from_millis(60));
    std::thread::sleep(Duration::from_millis(300));
    let t1 = Instant::now();
    let b = Loader::start(&db, "b", 4, 500, Duration::ZERO);
    let (b_code, b_acked, b_err, b_secs) = b.finish(t1);
    let (a_code, a_acked, a_err, _) = a.finish(t0);
    assert_eq!(a_code, Some(0), "first loader: {a_err}");
    assert_eq!(a_acked, 10_000);
    assert_eq!(b_code, Some(3), "second loader: {b_err}");
    assert_eq!(b_acked, 0);
    assert!(b_secs < 5.0, "the second loader took {b_secs:.1} s to fail");
    assert!(
        b_err.trim_end().lines().count() == 1
            && b_err.contains("in use")
            && b_err.contains(db.to_str().unwrap()),
        "{b_err}"
    );
    assert_eq!(count(&db, "a") as u64, a_acked);
    assert_eq!(count(&db, "b"), 0);
}

#[test]
fn two_loaders_started_together_never_lose_an_acknowledged_record() {
    for round in 0..3 {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("db");
        let t = Instant::now();
        let a = Loader::start(&db, "a", 6, 1000, Duration::from_millis(10));
        let b = Loader::start(&db, "b", 6, 1000, Duration::from_millis(10));
        let results = [("a", a.finish(t)), ("b", b.finish(t))];
        let mut succeeded = 0;
        for (prefix, (code, acked, e, _)) in &results {
            match code {
                Some(0) => {
                    succeeded += 1;
                    assert_eq!(*acked, 6000, "round {round} {prefix}");
                    assert_eq!(count(&db, prefix), 6000, "round {round} {prefix}");
                }
                Some(3) => {
                    assert_eq!(*acked, 0, "round {round} {prefix}: {e}");
                    assert!(e.contains("in use"), "{e}");
                }
                other => panic!("round {round} {prefix}: exit {other:?}: {e}"),
            }
        }
        assert!(succeeded >= 1, "round {round}: neither loader ran");
    }
}

#[test]
fn a_reader_during_a_load_fails_fast_and_costs_the_loader_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let t0 = Instant::now();
    let a = Loader::start(&db, "a", 30, 400, Duration::from_millis(50));
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..8 {
        let t = Instant::now();
        let o = kv(&db, &["get", "a000001"]);
        assert!(t.elapsed() < Duration::from_secs(3), "the reader waited");
        match o.status.code() {
            Some(0) => assert_eq!(out(&o).trim(), "value 1 of a"),
            Some(3) => assert!(err(&o).contains("in use"), "{}", err(&o)),
            other => panic!("get: exit {other:?}: {}", err(&o)),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, acked, e, _) = a.finish(t0);
    assert_eq!(code, Some(0), "{e}");
    assert_eq!(acked, 12_000);
    assert_eq!(count(&db, "a"), 12_000);
}

#[test]
fn two_table_put_loops_in_parallel_leave_every_successful_put() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    ok(&table(
        &db,
        &[
            "create",
            r#"{"name":"t","partition":[{"name":"p","type":"text"}],"sort":[{"name":"n","type":"int"}]}"#,
        ],
    ));
    let loops: Vec<_> = ["x", "y"]
        .into_iter()
        .map(|who| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut done = Vec::new();
                for n in 0..15 {
                    let item = format!(r#"{{"p":"{who}","n":{n},"v":"{who}{n}"}}"#);
                    let o = table(&db, &["put", "t", &item]);
                    match o.status.code() {
                        Some(0) => done.push(n),
                        Some(3) => assert!(err(&o).contains("in use"), "{}", err(&o)),
                        other => panic!("put {who}{n}: exit {other:?}: {}", err(&o)),
                    }
                }
                (who, done)
            })
        })
        .collect();
    // Join both loops before reading: a reader opening while the other loop writes would
    // (correctly) be refused with the lock error.
    let finished: Vec<_> = loops.into_iter().map(|l| l.join().unwrap()).collect();
    let mut puts = 0;
    for (who, done) in finished {
        puts += done.len();
        for n in done {
            let key = format!(r#"{{"p":"{who}","n":{n}}}"#);
            let got = ok(&table(&db, &["get", "t", &key]));
            assert!(got.contains(&format!("\"{who}{n}\"")), "{got}");
        }
    }
    assert!(puts > 0);
    assert_eq!(ok(&table(&db, &["scan", "t"])).lines().count(), puts);
    ok(&kv(&db, &["check"]));
}

/// Offsets of the records of a log file (WAL or manifest): `(offset, length with header)`.
fn log_records(data: &[u8]) -> Vec<(usize, usize)> {
    // WAL v4: records cut into page-contained fragments, read by the library.
    if data.starts_with(b"STRWAL04") {
        let (recs, _) = strata_lsm::wal::read_records(data, 4);
        return recs
            .iter()
            .map(|r| (r.offset as usize, (r.end - r.offset) as usize))
            .collect();
    }
    // A WAL of version 2 or 3 (`STRWAL02`, `STRWAL03`) ends each record in a commit byte and
    // keeps zeros (preallocated space) after the last one.
    let v2 = data.starts_with(b"STRWAL02") || data.starts_with(b"STRWAL03");
    let mut v = Vec::new();
    let mut pos = 8;
    while pos + 12 <= data.len() {
        if v2 && data[pos..pos + 12].iter().all(|&b| b == 0) {
            break;
        }
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        let total = 12 + len + usize::from(v2);
        if pos + total > data.len() {
            break;
        }
        v.push((pos, total));
        pos += total;
    }
    v
}

fn named(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| pred(p.file_name().unwrap().to_str().unwrap()))
        .collect();
    v.sort();
    v
}

/// Flips one bit in the payload of the last complete record of `file`; returns the record's
/// offset.
fn flip_in_last_record(file: &Path) -> usize {
    let mut data = std::fs::read(file).unwrap();
    let &(off, len) = log_records(&data).last().unwrap();
    data[off + 12 + (len - 12) / 2] ^= 0x04;
    std::fs::write(file, &data).unwrap();
    off
}

/// Either the database refuses to open naming `file` and `offset`, or it opens with every
/// one of the `n` records with `prefix`: never with fewer.
fn refuses_or_complete(db: &Path, prefix: &str, n: usize, file: &Path, offset: usize) {
    let before = snapshot(db);
    let o = kv(db, &["scan", "--prefix", prefix]);
    if o.status.success() {
        assert_eq!(out(&o).lines().count(), n, "opened with fewer records");
    } else {
        let e = err(&o);
        let name = file.file_name().unwrap().to_str().unwrap();
        assert!(
            e.contains(name) && e.contains(&format!("offset {offset}")),
            "the refusal does not name {name} at offset {offset}: {e}"
        );
    }
    assert!(snapshot(db) == before, "reading changed the directory");
}

#[test]
fn a_flipped_bit_in_the_last_wal_record_is_corruption_not_a_torn_tail() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    for b in 0..5 {
        ok(&with_stdin(
            &[
                "kv",
                "--db",
                db.to_str().unwrap(),
                "load",
                "--sync",
                "always",
            ],
            &records("w", b * 100, 100),
        ));
    }
    let wal = named(&db, |n| {
        n.starts_with("wal-") && !log_records(&std::fs::read(db.join(n)).unwrap()).is_empty()
    })
    .pop()
    .unwrap();
    let off = flip_in_last_record(&wal);
    refuses_or_complete(&db, "w", 500, &wal, off);
    let before = snapshot(&db);
    let c = kv(&db, &["check"]);
    assert_eq!(c.status.code(), Some(1), "{}", out(&c));
    let wal_name = wal.file_name().unwrap().to_str().unwrap();
    assert!(
        out(&c).contains(&format!("{wal_name} at offset {off}")),
        "{}",
        out(&c)
    );
    assert!(snapshot(&db) == before, "check changed the directory");
    // Repair keeps the records before the damaged one, and says what was lost.
    let r = kv(&db, &["repair"]);
    assert!(r.status.success(), "{}{}", out(&r), err(&r));
    assert!(out(&r).contains("lost:"), "{}", out(&r));
    let survivors = count(&db, "w");
    assert!((400..500).contains(&survivors), "{survivors}");
    ok(&kv(&db, &["check"]));
    // Nothing was deleted: the damaged WAL was moved aside, byte for byte.
    let kept: Vec<Vec<u8>> = snapshot(&db)
        .into_iter()
        .filter(|(p, _)| p.to_str().unwrap().contains("repair-"))
        .map(|(_, b)| b)
        .collect();
    assert!(kept.iter().any(|b| before.get(&wal) == Some(b)));
}

#[test]
fn a_flipped_bit_in_the_last_manifest_record_is_reported_where_it_is() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    ok(&with_stdin(
        &[
            "kv",
            "--db",
            db.to_str().unwrap(),
            "load",
            "--sync",
            "always",
        ],
        &records("m", 0, 2000),
    ));
    // A writer's open turns the WAL into SSTs and starts a manifest with a snapshot record.
    ok(&kv(&db, &["put", "m999999", "last"]));
    let manifest = named(&db, |n| n.starts_with("MANIFEST-")).pop().unwrap();
    let off = flip_in_last_record(&manifest);
    refuses_or_complete(&db, "m", 2001, &manifest, off);
    let before = snapshot(&db);
    let c = kv(&db, &["check"]);
    assert_eq!(c.status.code(), Some(1));
    let name = manifest.file_name().unwrap().to_str().unwrap();
    assert!(
        out(&c).contains(&format!("{name} at offset {off}")),
        "{}",
        out(&c)
    );
    assert!(snapshot(&db) == before, "check changed the directory");
    let r = kv(&db, &["repair"]);
    assert!(r.status.success(), "{}{}", out(&r), err(&r));
    assert_eq!(count(&db, "m"), 2001, "{}", out(&r));
    ok(&kv(&db, &["check"]));
}

#[test]
fn check_lists_every_damaged_file_and_reads_never_write() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    ok(&with_stdin(
        &["kv", "--db", db.to_str().unwrap(), "load"],
        &records("c", 0, 3000),
    ));
    ok(&kv(&db, &["put", "c999999", "x"]));
    ok(&with_stdin(
        &["kv", "--db", db.to_str().unwrap(), "load"],
        &records("c", 3000, 10),
    ));
    let before = snapshot(&db);
    for args in [
        &["check"][..],
        &["stats"],
        &["get", "c000001"],
        &["scan", "--prefix", "c0000"],
    ] {
        ok(&kv(&db, args));
        assert!(snapshot(&db) == before, "kv {args:?} changed the directory");
    }
    // Damage three SSTs: check names all three.
    let ssts = named(&db, |n| n.ends_with(".sst"));
    for p in ssts.iter().take(3) {
        let mut data = std::fs::read(p).unwrap();
        data[3] ^= 0x40;
        std::fs::write(p, &data).unwrap();
    }
    let before = snapshot(&db);
    let c = kv(&db, &["check"]);
    assert_eq!(c.status.code(), Some(1));
    for p in ssts.iter().take(3) {
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(out(&c).contains(name), "{name} missing from: {}", out(&c));
    }
    assert_eq!(err(&c).trim_end().lines().count(), 1, "{}", err(&c));
    assert!(snapshot(&db) == before, "check changed the directory");
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> Option<Mount> {
        std::fs::create_dir_all(at).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .ok()?;
        if !o.status.success() {
            eprintln!(
                "notice: cannot mount a tmpfs ({}); this test is skipped (the FaultFs tests in \
                 strata-lsm cover the same ground)",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return None;
        }
        Some(Mount(at.to_path_buf()))
    }

    fn remount(&self, opt: &str) {
        let o = Command::new("mount")
            .args(["-o", &format!("remount,{opt}")])
            .arg(&self.0)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}

fn build_kv_and_table(root: &Path) -> (PathBuf, PathBuf) {
    let kvdb = root.join("kv");
    ok(&with_stdin(
        &["kv", "--db", kvdb.to_str().unwrap(), "load"],
        &records("r", 0, 500),
    ));
    ok(&kv(&kvdb, &["put", "r999999", "x"])); // SSTs
    ok(&with_stdin(
        &["kv", "--db", kvdb.to_str().unwrap(), "load"],
        &records("r", 500, 20),
    )); // and a WAL
    let tdb = root.join("table");
    ok(&table(
        &tdb,
        &[
            "create",
            r#"{"name":"t","partition":[{"name":"p","type":"text"}],"sort":[{"name":"n","type":"int"}]}"#,
        ],
    ));
    ok(&table(&tdb, &["put", "t", r#"{"p":"a","n":1,"v":"one"}"#]));
    ok(&table(&tdb, &["put", "t", r#"{"p":"a","n":2,"v":"two"}"#]));
    (kvdb, tdb)
}

fn reads_work(kvdb: &Path, tdb: &Path) {
    assert_eq!(ok(&kv(kvdb, &["get", "r000510"])).trim(), "value 510 of r");
    assert_eq!(count(kvdb, "r"), 521);
    ok(&kv(kvdb, &["stats"]));
    ok(&kv(kvdb, &["check"]));
    assert_eq!(ok(&table(tdb, &["list"])).lines().count(), 1);
    assert!(ok(&table(tdb, &["get", "t", r#"{"p":"a","n":2}"#])).contains("two"));
    assert_eq!(ok(&table(tdb, &["scan", "t"])).lines().count(), 2);
    let q = r#"{"partition":{"p":"a"},"sort":{"op":"ge","values":[2]}}"#;
    assert_eq!(ok(&table(tdb, &["query", "t", q])).lines().count(), 1);
}

#[test]
fn reads_work_on_a_read_only_file_system() {
    let d = tempfile::tempdir().unwrap();
    let Some(m) = Mount::tmpfs(&d.path().join("mnt"), "16m") else {
        return;
    };
    let (kvdb, tdb) = build_kv_and_table(&m.0);
    m.remount("ro");
    reads_work(&kvdb, &tdb);
    let o = kv(&kvdb, &["put", "a", "b"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).to_lowercase().contains("read-only"), "{}", err(&o));
    m.remount("rw");
}

#[test]
fn reads_work_on_a_full_disk() {
    let d = tempfile::tempdir().unwrap();
    let Some(m) = Mount::tmpfs(&d.path().join("mnt"), "4m") else {
        return;
    };
    let (kvdb, tdb) = build_kv_and_table(&m.0);
    // Fill the file system.
    let mut f = std::fs::File::create(m.0.join("filler")).unwrap();
    let block = vec![0x5a; 64 << 10];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
    while f.write_all(&block[..512]).is_ok() {}
    drop(f);
    reads_work(&kvdb, &tdb);
}

#[test]
fn kv_commands_never_refile_table_keys() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    ok(&table(
        &db,
        &[
            "create",
            r#"{"name":"t","partition":[{"name":"p","type":"text"}],"sort":[{"name":"n","type":"int"}]}"#,
        ],
    ));
    for n in 0..20 {
        ok(&table(
            &db,
            &["put", "t", &format!(r#"{{"p":"q{}","n":{n}}}"#, n % 3)],
        ));
    }
    let _ = kv(&db, &["check"]);
    let _ = kv(&db, &["stats"]);
    let _ = kv(&db, &["put", "raw", "key"]); // a writer open by the kv command
    assert_eq!(ok(&table(&db, &["scan", "t"])).lines().count(), 20);
    for n in 0..20 {
        let key = format!(r#"{{"p":"q{}","n":{n}}}"#, n % 3);
        let o = table(&db, &["get", "t", &key]);
        assert_eq!(o.status.code(), Some(0), "item {n} lost: {}", err(&o));
    }
    ok(&table(&db, &["delete", "t", r#"{"p":"q1","n":19}"#]));
    let _ = kv(&db, &["check"]);
    let _ = kv(&db, &["put", "raw2", "key"]);
    let o = table(&db, &["get", "t", r#"{"p":"q1","n":19}"#]);
    assert_eq!(o.status.code(), Some(1), "a deleted item came back");
    assert_eq!(ok(&table(&db, &["scan", "t"])).lines().count(), 19);
}

#[test]
fn table_commands_refuse_a_kv_database() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    for i in 1..=5 {
        ok(&kv(&db, &["put", &format!("key{i}"), &format!("v{i}")]));
    }
    let before = snapshot(&db);
    let o = table(&db, &["list"]);
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(err(&o).contains("partitioned by whole-key"), "{}", err(&o));
    let o = table(
        &db,
        &[
            "create",
            r#"{"name":"t","partition":[{"name":"p","type":"text"}]}"#,
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        snapshot(&db) == before,
        "a refused open changed the directory"
    );
    for i in 1..=5 {
        assert_eq!(
            ok(&kv(&db, &["get", &format!("key{i}")])).trim(),
            format!("v{i}")
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn databases_written_before_partitioners_were_recorded_still_open() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let d = tempfile::tempdir().unwrap();
    let kvdb = d.path().join("kv");
    let tdb = d.path().join("table");
    copy_dir(&data.join("legacy-kv"), &kvdb);
    copy_dir(&data.join("legacy-table"), &tdb);
    // Read-only first: nothing recorded, nothing changed.
    let before = snapshot(&kvdb);
    assert_eq!(count(&kvdb, "k0"), 45);
    assert_eq!(ok(&kv(&kvdb, &["get", "k044"])).trim(), "value 44");
    assert_eq!(kv(&kvdb, &["get", "k010"]).status.code(), Some(1));
    ok(&kv(&kvdb, &["check"]));
    assert!(snapshot(&kvdb) == before);
    assert_eq!(ok(&table(&tdb, &["scan", "posts"])).lines().count(), 17);
    ok(&kv(&tdb, &["check"]));
    // Each refuses the other's partitioner.
    assert_eq!(table(&kvdb, &["list"]).status.code(), Some(1));
    let o = kv(&tdb, &["--partitioner", "whole-key", "put", "x", "y"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    // A writer records the inferred partitioner; everything is still there.
    ok(&kv(&kvdb, &["put", "k047", "value 47"]));
    ok(&table(
        &tdb,
        &["put", "posts", r#"{"user":"frank","ts":1}"#],
    ));
    assert_eq!(count(&kvdb, "k0"), 46);
    assert_eq!(ok(&table(&tdb, &["scan", "posts"])).lines().count(), 18);
    let c = ok(&kv(&tdb, &["check"]));
    assert!(!c.contains("no partitioner recorded"), "{c}");
    assert!(
        ok(&table(&tdb, &["get", "posts", r#"{"user":"erin","ts":1}"#])).contains("erin says 1")
    );
}
