//! Issue 8, "Done when", with real processes: a `strata kv load --sync always --ack` is killed
//! (-9) after its memtable was flushed, so the manifest's last record is a flush edit and the
//! WAL holds the acknowledged batches written since. Then one bit at a time is flipped in the
//! last complete record of the manifest and of the WAL (every header byte and a spread of
//! payload bytes): each time the database either opens with every acknowledged record or
//! refuses to open naming the file and the record's offset — never opens with fewer — and
//! neither a refused writer nor the readers change a byte on disk. The same for bits flipped
//! in the zeros a WAL of version 2 keeps after its last record.
//!
//! `STRATA_TEST_BIN` runs this test against another `strata` binary (e.g. an older build).

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> PathBuf {
    std::env::var_os("STRATA_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_strata")))
}

fn kv(db: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(["kv", "--db", db.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn key(i: u64) -> String {
    format!("m{i:07}")
}

/// Batch `b` of 1,000 records with ~200-byte values (so that a memtable flush comes soon).
fn batch(b: u64) -> String {
    let pad = "x".repeat(200);
    (b * 1000..(b + 1) * 1000)
        .map(|i| format!("{{\"k\":\"{}\",\"v\":\"{pad} {i}\"}}\n", key(i)))
        .collect()
}

/// `(offset, length with header)` of every complete record of a log file.
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

/// Files whose name starts with `prefix`, in name order.
fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// Every file of `dir`: its length and a hash of its bytes.
fn fingerprint(dir: &Path) -> BTreeMap<String, (usize, u64)> {
    named(dir, "")
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            let mut h = DefaultHasher::new();
            h.write(&data);
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            (name, (data.len(), h.finish()))
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for p in named(from, "") {
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
}

/// A manifest with more than its opening snapshot record: a flush has been recorded.
fn flushed(db: &Path) -> bool {
    named(db, "MANIFEST-")
        .last()
        .is_some_and(|m| log_records(&std::fs::read(m).unwrap()).len() >= 2)
}

/// Runs the loader until a flush has been recorded and ≥ 5,000 more records were acknowledged,
/// then kills it (-9). Returns the number of records acknowledged.
fn load_and_kill(db: &Path) -> u64 {
    let mut child = Command::new(bin())
        .args(["kv", "--db", db.to_str().unwrap(), "load"])
        .args(["--sync", "always", "--ack"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        for b in 0..400 {
            if stdin.write_all(batch(b).as_bytes()).is_err() {
                return;
            }
        }
    });
    let mut acked = 0;
    let mut flushed_at = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        if let Some(n) = line.strip_prefix("acked ") {
            acked = n.trim().parse().unwrap();
        }
        if flushed_at.is_none() && flushed(db) {
            flushed_at = Some(acked);
        }
        if flushed_at.is_some_and(|f| acked >= f + 5000) {
            child.kill().unwrap();
            break;
        }
    }
    let _ = child.wait();
    let _ = feeder.join();
    assert!(flushed_at.is_some(), "no flush was recorded by the loader");
    acked
}

/// What one flipped bit did.
enum Outcome {
    /// Every acknowledged record was there.
    Complete,
    /// The open was refused naming the file and offset.
    Refused,
}

/// Reads the damaged database (scan, check) and tries a writer: never fewer records than
/// `acked`, and a refusal names `file` at `offset`.
fn probe(db: &Path, acked: u64, file: &Path, offset: usize, what: &str) -> Outcome {
    let name = file.file_name().unwrap().to_str().unwrap();
    let names_it = |s: &str| s.contains(name) && s.contains(&format!("offset {offset}"));
    let before = fingerprint(db);
    let scan = kv(db, &["scan", "--prefix", "m"]);
    let outcome = if scan.status.success() {
        let text = out(&scan);
        let lines: Vec<&str> = text.lines().collect();
        // Keys are unique and sorted: the first `acked` lines are exactly m0..m(acked-1).
        assert!(
            lines.len() as u64 >= acked
                && lines[acked as usize - 1].contains(&format!("\"{}\"", key(acked - 1))),
            "{what}: opened with {} records, {acked} were acknowledged",
            lines.len()
        );
        Outcome::Complete
    } else {
        assert_eq!(scan.status.code(), Some(1), "{what}: {}", err(&scan));
        assert!(
            names_it(&err(&scan)),
            "{what}: the refusal does not name {name} at offset {offset}: {}",
            err(&scan)
        );
        let check = kv(db, &["check"]);
        assert_eq!(check.status.code(), Some(1), "{what}: {}", out(&check));
        assert!(names_it(&out(&check)), "{what}: {}", out(&check));
        Outcome::Refused
    };
    assert!(
        fingerprint(db) == before,
        "{what}: reading changed the directory"
    );
    let put = kv(db, &["put", "zz", "writer"]);
    match outcome {
        Outcome::Refused => {
            assert_eq!(put.status.code(), Some(1), "{what}: a writer opened");
            assert!(names_it(&err(&put)), "{what}: {}", err(&put));
            assert!(
                fingerprint(db) == before,
                "{what}: a refused writer changed the directory"
            );
        }
        Outcome::Complete => assert!(put.status.success(), "{what}: {}", err(&put)),
    }
    outcome
}

#[test]
fn a_bit_flip_in_the_last_manifest_or_wal_record_never_opens_with_fewer_acknowledged_records() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let pristine = d.path().join("pristine");
    let acked = load_and_kill(&db);
    copy_dir(&db, &pristine);

    // The live manifest (a newer one may exist if the kill came in the middle of a roll).
    let current = std::fs::read_to_string(db.join("CURRENT")).unwrap();
    let manifest = db.join(current.trim());
    // The newest WAL with a complete record (a WAL just started may hold none yet).
    let wal = named(&db, "wal-")
        .into_iter()
        .rev()
        .find(|p| !log_records(&std::fs::read(p).unwrap()).is_empty())
        .unwrap();
    let mut refused = 0;
    let mut positions = 0;
    for (file, payload_step) in [(&manifest, 3), (&wal, 0)] {
        let data = std::fs::read(file).unwrap();
        let &(off, len) = log_records(&data).last().unwrap();
        let payload = len - 12;
        // Every header byte; the payload every `payload_step` bytes (or a spread of six).
        let mut at: Vec<usize> = (0..12).collect();
        if payload_step > 0 {
            at.extend((12..len).step_by(payload_step));
        } else {
            at.extend([0, 1, payload / 3, payload / 2, payload - 2, payload - 1].map(|p| 12 + p));
        }
        let name = file.file_name().unwrap().to_str().unwrap().to_owned();
        for rel in at {
            let byte = off + rel;
            let what = format!("{name} byte {byte} (record at {off}, {acked} acknowledged)");
            let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
            f.write_at(&[data[byte] ^ (1 << (byte % 8))], byte as u64)
                .unwrap();
            positions += 1;
            match probe(&db, acked, file, off, &what) {
                Outcome::Refused => {
                    refused += 1;
                    f.write_at(&data[byte..byte + 1], byte as u64).unwrap();
                }
                // The writer that opened has changed the directory: start again from a copy.
                Outcome::Complete => copy_dir(&pristine, &db),
            }
            assert!(fingerprint(&db) == fingerprint(&pristine), "{what}");
        }
    }
    eprintln!("{positions} bit flips, {refused} refused with file and offset, the others complete");
    // Undamaged, the killed load's directory opens with every acknowledged record.
    let c = kv(&db, &["check"]);
    assert!(c.status.success(), "{}", out(&c));
    assert!(matches!(
        probe(&db, acked, &wal, 0, "undamaged"),
        Outcome::Complete
    ));

    // The writer of that probe started a new WAL and wrote one small record into it (the
    // loader's batches are big records, written past the end): a WAL of version 3 with
    // preallocated zeros after its last record. A flip there loses nothing acknowledged; the
    // open is complete or refused naming the offset right after the last record. (Complete
    // for a flip within the first 12 bytes there — a header written in part — or, in v3, past
    // the end of that offset's 512-byte sector: the bytes after a lost sector that no record
    // claims were synced, an unsynced hole. Every acknowledged record is there either way.)
    let wal = named(&db, "wal-")
        .into_iter()
        .rev()
        .find(|p| !log_records(&std::fs::read(p).unwrap()).is_empty())
        .unwrap();
    copy_dir(&db, &pristine);
    let data = std::fs::read(&wal).unwrap();
    assert!(data.starts_with(b"STRWAL04"), "the engine writes WAL v4");
    let &(off, len) = log_records(&data).last().unwrap();
    let end = off + len;
    assert!(
        data.len() >= end + 4096,
        "no preallocated zeros after the record"
    );
    let name = wal.file_name().unwrap().to_str().unwrap().to_owned();
    let (mut positions, mut refused) = (0, 0);
    for byte in [end, end + 5, end + 11, end + 12, end + 300, data.len() - 1] {
        let what = format!("{name} zero byte {byte} (records end at {end}, {acked} acknowledged)");
        let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
        f.write_at(&[data[byte] ^ (1 << (byte % 8))], byte as u64)
            .unwrap();
        positions += 1;
        match probe(&db, acked, &wal, end, &what) {
            Outcome::Refused => {
                refused += 1;
                f.write_at(&data[byte..byte + 1], byte as u64).unwrap();
            }
            Outcome::Complete => {
                let sector_end = (end / 512 + 1) * 512;
                assert!(
                    byte < end + 12 || byte >= sector_end,
                    "{what}: damage after the records accepted"
                );
                copy_dir(&pristine, &db);
            }
        }
        assert!(fingerprint(&db) == fingerprint(&pristine), "{what}");
    }
    eprintln!("{positions} bit flips in the zeros after the last WAL record, {refused} refused");
}
