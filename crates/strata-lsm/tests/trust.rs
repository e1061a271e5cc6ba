//! One owner per directory, read-only opens that never write, the recorded partitioner, torn
//! tails versus corruption (every byte of the last manifest and WAL record), `check` and
//! `repair`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_lsm::{
    check, repair, Direction, Engine, Error, FaultFs, Fs, KeyRange, LsmEngine, LsmOptions,
    Partitioner, SyncMode, WriteBatch,
};

fn opts(fs: &Arc<FaultFs>) -> LsmOptions {
    LsmOptions {
        stripes: 4,
        sync: SyncMode::Always,
        memtable_budget_bytes: 16 << 10,
        block_bytes: 256,
        background: false,
        fs: Some(Arc::clone(fs) as Arc<dyn Fs>),
        ..LsmOptions::default()
    }
}

fn plain() -> LsmOptions {
    opts(&Arc::new(FaultFs::new()))
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn val(i: u32) -> Vec<u8> {
    format!("value {i}").into_bytes()
}

fn all(e: &LsmEngine) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
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

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// `n` keys written in batches of 10 (sync always); flushes happen along the way.
fn written(dir: &Path, n: u32) {
    let e = LsmEngine::open(dir, plain()).unwrap();
    for b in 0..n / 10 {
        let mut wb = WriteBatch::new();
        for i in b * 10..b * 10 + 10 {
            wb.put(key(i), val(i));
        }
        e.write(wb).unwrap();
    }
    e.close().unwrap();
}

fn expected(n: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n).map(|i| (key(i), val(i))).collect()
}

fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// `(offset, total length)` of every complete record of a log file. A WAL of version 2 or 3
/// (`STRWAL02`, `STRWAL03`) ends each record in a commit byte and has zeros after the last one.
fn log_records(data: &[u8]) -> Vec<(usize, usize)> {
    // WAL v4: records cut into page-contained fragments, read by the library.
    if data.starts_with(b"STRWAL04") {
        let (recs, _) = strata_lsm::wal::read_records(data, 4);
        return recs
            .iter()
            .map(|r| (r.offset as usize, (r.end - r.offset) as usize))
            .collect();
    }
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

/// The WAL of `dir` that holds records.
fn wal_with_records(dir: &Path) -> PathBuf {
    named(dir, "wal-")
        .into_iter()
        .find(|p| !log_records(&std::fs::read(p).unwrap()).is_empty())
        .unwrap()
}

#[test]
fn one_owner_per_directory() {
    let dir = tempfile::tempdir().unwrap();
    let w = LsmEngine::open(dir.path(), plain()).unwrap();
    strata_lsm::engine::put(&w, b"a", b"1").unwrap();
    let before = snapshot(dir.path());
    for (what, r) in [
        ("writer", LsmEngine::open(dir.path(), plain())),
        ("reader", LsmEngine::open_read_only(dir.path(), plain())),
    ] {
        match r {
            Err(Error::Locked { dir: d, holder }) => {
                assert_eq!(d, dir.path());
                assert!(
                    holder.contains(&std::process::id().to_string()),
                    "{what}: {holder}"
                );
            }
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("a second {what} opened the directory"),
        }
    }
    assert!(matches!(check(dir.path(), None), Err(Error::Locked { .. })));
    assert!(
        snapshot(dir.path()) == before,
        "a refused open changed the directory"
    );
    w.close().unwrap();
    // Readers share; a writer waits for all of them to go.
    let r1 = LsmEngine::open_read_only(dir.path(), plain()).unwrap();
    let r2 = LsmEngine::open_read_only(dir.path(), plain()).unwrap();
    assert!(check(dir.path(), None).unwrap().is_ok());
    assert_eq!(r1.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(r2.get(b"a").unwrap(), Some(b"1".to_vec()));
    match LsmEngine::open(dir.path(), plain()) {
        Err(Error::Locked { holder, .. }) => assert!(holder.contains("read-only"), "{holder}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a writer opened beside readers"),
    }
    drop(r1);
    drop(r2);
    let w = LsmEngine::open(dir.path(), plain()).unwrap();
    assert_eq!(w.get(b"a").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn a_read_only_open_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path(), 2000); // SSTs on several levels
    {
        let e = LsmEngine::open(dir.path(), plain()).unwrap();
        for i in 2000..2010 {
            strata_lsm::engine::put(&e, &key(i), &val(i)).unwrap(); // and a WAL
        }
        e.kill();
    }
    let before = snapshot(dir.path());
    for fault in ["read-only", "disk-full"] {
        let fs = Arc::new(FaultFs::new());
        match fault {
            "read-only" => fs.set_read_only(true),
            _ => fs.set_disk_full(true),
        }
        let e = LsmEngine::open_read_only(dir.path(), opts(&fs)).unwrap();
        assert!(e.is_read_only());
        assert_eq!(all(&e), expected(2010), "{fault}");
        assert_eq!(e.get(&key(2005)).unwrap(), Some(val(2005)));
        assert!(matches!(
            strata_lsm::engine::put(&e, b"x", b"y"),
            Err(Error::ReadOnly)
        ));
        assert!(matches!(e.flush(), Err(Error::ReadOnly)));
        assert!(matches!(e.compact(), Err(Error::ReadOnly)));
        assert!(e.stats().unwrap().memtable_bytes > 0);
        assert!(e.verify().unwrap().files > 0);
        e.close().unwrap();
        let r = check(dir.path(), Some(Arc::clone(&fs) as Arc<dyn Fs>)).unwrap();
        assert!(r.is_ok(), "{:?}", r.problems);
        assert_eq!(fs.mutations(), 0, "{fault}: the file system was changed");
        assert!(snapshot(dir.path()) == before);
        // A writer cannot start there; whatever it leaves behind, the database still opens.
        assert!(LsmEngine::open(dir.path(), opts(&fs)).is_err());
        let e = LsmEngine::open_read_only(dir.path(), plain()).unwrap();
        assert_eq!(all(&e), expected(2010), "{fault}");
    }
    // A missing directory is not created.
    let missing = dir.path().join("missing");
    assert!(LsmEngine::open_read_only(&missing, plain()).is_err());
    assert!(!missing.exists());
}

#[test]
fn the_partitioner_is_recorded_and_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let table = Partitioner::NativeTuplePrefix(2);
    {
        let e = LsmEngine::open(
            dir.path(),
            LsmOptions {
                partitioner: Some(table.clone()),
                ..plain()
            },
        )
        .unwrap();
        for i in 0..500 {
            strata_lsm::engine::put(&e, &key(i), &val(i)).unwrap();
        }
    }
    // Whoever opens it without naming one gets the recorded one; naming another is refused.
    let e = LsmEngine::open(dir.path(), plain()).unwrap();
    assert_eq!(e.partitioner(), &table);
    assert_eq!(all(&e), expected(500));
    drop(e);
    let before = snapshot(dir.path());
    for p in [Partitioner::WholeKey, Partitioner::FixedPrefix(2)] {
        let o = LsmOptions {
            partitioner: Some(p.clone()),
            ..plain()
        };
        match LsmEngine::open(dir.path(), o.clone()) {
            Err(Error::PartitionerMismatch {
                recorded,
                requested,
                ..
            }) => assert_eq!((recorded, requested), (table.name(), p.name())),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("opened with {p}"),
        }
        assert!(LsmEngine::open_read_only(dir.path(), o).is_err());
    }
    assert!(snapshot(dir.path()) == before);
    let r = check(dir.path(), None).unwrap();
    assert!(r.is_ok() && r.partitioner == Some(table.name()), "{r:?}");
}

/// A database in `dir` whose manifest's last record is a flush edit, with 300 keys.
fn flushed(dir: &Path) -> PathBuf {
    written(dir, 300);
    let e = LsmEngine::open(dir, plain()).unwrap();
    e.flush().unwrap(); // nothing to flush: the open wrote the WAL out...
    for i in 300..310 {
        strata_lsm::engine::put(&e, &key(i), &val(i)).unwrap();
    }
    e.flush().unwrap(); // ...this one appends a flush edit
    e.close().unwrap();
    named(dir, "MANIFEST-").pop().unwrap()
}

#[test]
fn every_byte_of_the_last_manifest_record_is_checked() {
    let base = tempfile::tempdir().unwrap();
    let manifest = flushed(base.path());
    let data = std::fs::read(&manifest).unwrap();
    let records = log_records(&data);
    assert!(records.len() >= 2, "expected a snapshot and a flush edit");
    let &(off, len) = records.last().unwrap();
    let name = manifest.file_name().unwrap().to_owned();
    for byte in off..off + len {
        let d = tempfile::tempdir().unwrap();
        copy_dir(base.path(), d.path());
        let m = d.path().join(&name);
        let mut bad = data.clone();
        bad[byte] ^= 1 << (byte % 8);
        std::fs::write(&m, &bad).unwrap();
        let before = snapshot(d.path());
        match LsmEngine::open(d.path(), plain()) {
            Ok(e) => assert_eq!(all(&e), expected(310), "byte {byte}: opened with fewer"),
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!((file, offset), (m.clone(), off as u64), "byte {byte}");
                assert!(
                    snapshot(d.path()) == before,
                    "byte {byte}: a refused open changed files"
                );
                let r = check(d.path(), None).unwrap();
                assert!(
                    r.problems
                        .iter()
                        .any(|p| p.file == m && p.offset == off as u64),
                    "byte {byte}: {:?}",
                    r.problems
                );
                assert!(
                    snapshot(d.path()) == before,
                    "byte {byte}: check changed files"
                );
                if byte % 7 == 0 {
                    // Repair salvages the flush edit: the files it names check out.
                    let rep = repair(d.path(), plain()).unwrap();
                    let e = LsmEngine::open(d.path(), plain()).unwrap();
                    assert_eq!(all(&e), expected(310), "byte {byte}: {rep:?}");
                    drop(e);
                    assert!(check(d.path(), None).unwrap().is_ok());
                }
            }
            Err(e) => panic!("byte {byte}: {e}"),
        }
    }
}

#[test]
fn every_byte_of_the_last_wal_record_is_checked() {
    let base = tempfile::tempdir().unwrap();
    {
        let e = LsmEngine::open(base.path(), plain()).unwrap();
        for b in 0..5u32 {
            let mut wb = WriteBatch::new();
            for i in b * 4..b * 4 + 4 {
                wb.put(key(i), val(i));
            }
            e.write(wb).unwrap();
        }
        e.kill();
    }
    let wal = wal_with_records(base.path());
    let data = std::fs::read(&wal).unwrap();
    assert!(data.starts_with(b"STRWAL04"), "the engine writes WAL v4");
    let &(off, len) = log_records(&data).last().unwrap();
    let name = wal.file_name().unwrap().to_owned();
    for byte in off..off + len {
        let d = tempfile::tempdir().unwrap();
        copy_dir(base.path(), d.path());
        let w = d.path().join(&name);
        let mut bad = data.clone();
        bad[byte] ^= 1 << (byte % 8);
        std::fs::write(&w, &bad).unwrap();
        let before = snapshot(d.path());
        for ro in [true, false] {
            let r = if ro {
                LsmEngine::open_read_only(d.path(), plain())
            } else {
                LsmEngine::open(d.path(), plain())
            };
            match r {
                Ok(e) => assert_eq!(all(&e), expected(20), "byte {byte}: opened with fewer"),
                Err(Error::Corruption { file, offset, .. }) => {
                    assert_eq!((file, offset), (w.clone(), off as u64), "byte {byte}")
                }
                Err(e) => panic!("byte {byte}: {e}"),
            }
            assert!(
                snapshot(d.path()) == before,
                "byte {byte}: a refused open changed files"
            );
        }
        if byte % 5 == 0 {
            // Repair keeps the batches before the damaged one and moves the WAL aside.
            let rep = repair(d.path(), plain()).unwrap();
            assert!(!rep.lost.is_empty(), "{rep:?}");
            let e = LsmEngine::open(d.path(), plain()).unwrap();
            assert_eq!(all(&e), expected(16), "byte {byte}: {rep:?}");
            let kept = rep.moved_to.unwrap().join(&name);
            assert_eq!(std::fs::read(kept).unwrap(), bad);
        }
    }
}

#[test]
fn a_torn_tail_is_not_corruption() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = LsmEngine::open(dir.path(), plain()).unwrap();
        for i in 0..20 {
            strata_lsm::engine::put(&e, &key(i), &val(i)).unwrap();
        }
        e.kill();
    }
    let wal = wal_with_records(dir.path());
    let data = std::fs::read(&wal).unwrap();
    let &(off, len) = log_records(&data).last().unwrap();
    // An unfinished write of the last record: the file cut inside it, or (WAL v2, written in
    // place) only its first bytes written and the preallocated zeros after them — the commit
    // byte among the missing ones.
    let mut cases = Vec::new();
    for cut in [off + 3, off + 12, off + len - 1] {
        cases.push(data[..cut].to_vec());
        let mut z = data.clone();
        z[cut..off + len].fill(0);
        cases.push(z);
    }
    for (i, case) in cases.iter().enumerate() {
        std::fs::write(&wal, case).unwrap();
        let e = LsmEngine::open_read_only(dir.path(), plain()).unwrap();
        assert_eq!(all(&e), expected(19), "case {i}");
        drop(e);
        let r = check(dir.path(), None).unwrap();
        assert!(r.is_ok(), "{:?}", r.problems);
        assert!(
            r.notes.iter().any(|n| n.contains("torn tail")),
            "{:?}",
            r.notes
        );
    }
    let mut zeros = data.clone();
    zeros.extend_from_slice(&[0; 64]);
    std::fs::write(&wal, &zeros).unwrap();
    let e = LsmEngine::open(dir.path(), plain()).unwrap();
    assert_eq!(all(&e), expected(20));
}

/// WAL v2/v3 keeps zeros after its last record (preallocated space). A bit flip there is never
/// read as a record and never hides one: the open gets every acknowledged write or refuses
/// with the offset right after the last record (a flip within the first 12 bytes there may
/// also read as a header written in part: a torn tail, which loses nothing acknowledged; in a
/// v3 WAL a flip past the end of the 512-byte sector holding that offset reads as the
/// non-zero bytes after a lost sector with no record claiming it was synced — an unsynced
/// hole, the end of the prefix — which loses nothing either: every write is asserted there).
#[test]
fn bit_flips_in_the_zeros_after_the_last_wal_record() {
    let base = tempfile::tempdir().unwrap();
    {
        let e = LsmEngine::open(base.path(), plain()).unwrap();
        for i in 0..20 {
            strata_lsm::engine::put(&e, &key(i), &val(i)).unwrap();
        }
        e.kill();
    }
    let wal = wal_with_records(base.path());
    let name = wal.file_name().unwrap().to_owned();
    let data = std::fs::read(&wal).unwrap();
    let &(off, len) = log_records(&data).last().unwrap();
    let end = off + len;
    let mut bytes: Vec<usize> = (end..end + 30).collect();
    bytes.extend([end + 100, end + 4095, data.len() / 2, data.len() - 1]);
    for byte in bytes {
        let d = tempfile::tempdir().unwrap();
        copy_dir(base.path(), d.path());
        let w = d.path().join(&name);
        let mut bad = data.clone();
        bad[byte] ^= 1 << (byte % 8);
        std::fs::write(&w, &bad).unwrap();
        let before = snapshot(d.path());
        let mut refused = false;
        for ro in [true, false] {
            let r = if ro {
                LsmEngine::open_read_only(d.path(), plain())
            } else {
                LsmEngine::open(d.path(), plain())
            };
            match r {
                Ok(e) => {
                    let sector_end = (end / 512 + 1) * 512;
                    assert!(
                        byte < end + 12 || byte >= sector_end,
                        "byte {byte}: damage accepted"
                    );
                    assert_eq!(all(&e), expected(20), "byte {byte}");
                }
                Err(Error::Corruption { file, offset, .. }) => {
                    refused = true;
                    assert_eq!((file, offset), (w.clone(), end as u64), "byte {byte}");
                    assert!(snapshot(d.path()) == before, "byte {byte}: files changed");
                }
                Err(e) => panic!("byte {byte}: {e}"),
            }
        }
        if refused {
            let r = check(d.path(), None).unwrap();
            assert!(!r.is_ok(), "byte {byte}: check saw nothing");
            // Repair keeps every record (the damage is after them).
            let rep = repair(d.path(), plain()).unwrap();
            let e = LsmEngine::open(d.path(), plain()).unwrap();
            assert_eq!(all(&e), expected(20), "byte {byte}: {rep:?}");
        }
    }
}

/// A power loss in the middle of writing a WAL record (in place, into the preallocated
/// zeros): whatever prefix of it reached the disk, every write acknowledged before it is
/// there, and the unfinished one is there whole or not at all.
#[test]
fn power_loss_in_the_middle_of_a_wal_write() {
    let probe = tempfile::tempdir().unwrap();
    let record_len = {
        let e = LsmEngine::open(probe.path(), plain()).unwrap();
        strata_lsm::engine::put(&e, &key(0), &val(0)).unwrap();
        e.kill();
        let data = std::fs::read(wal_with_records(probe.path())).unwrap();
        log_records(&data)[0].1
    };
    for keep in 0..=record_len as u64 + 1 {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultFs::new());
        {
            let e = LsmEngine::open(dir.path(), opts(&fs)).unwrap();
            for i in 0..5 {
                strata_lsm::engine::put(&e, &key(i), &val(i)).unwrap();
            }
            // Not acknowledged as durable: written, never synced.
            let mut wb = WriteBatch::new();
            wb.put(key(5), val(5));
            e.write_with_sync(wb, SyncMode::None).unwrap();
            e.kill();
        }
        fs.tear_last_write(keep);
        fs.crash().unwrap();
        for ro in [true, false] {
            let e = if ro {
                LsmEngine::open_read_only(dir.path(), plain())
            } else {
                LsmEngine::open(dir.path(), plain())
            }
            .unwrap_or_else(|e| panic!("keep {keep}: {e}"));
            let got = all(&e);
            if keep as usize >= record_len {
                assert_eq!(got, expected(6), "keep {keep}");
            } else {
                assert_eq!(got, expected(5), "keep {keep}");
            }
        }
        let r = check(dir.path(), None).unwrap();
        assert!(r.is_ok(), "keep {keep}: {:?}", r.problems);
    }
}

/// A directory written before WAL v2 (its WAL is `STRWAL01`, see `tests/vectors/README.md`)
/// opens read-only without a change, checks clean, and a writer replays it and carries on
/// with a WAL of version 3.
#[test]
fn a_v1_wal_directory_still_opens() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/wal-v1");
    let d = tempfile::tempdir().unwrap();
    copy_dir(&src, d.path());
    let want: Vec<(Vec<u8>, Vec<u8>)> = std::iter::once((b"a".to_vec(), b"1".to_vec()))
        .chain((1..=30).map(|i| {
            (
                format!("k{i:02}").into_bytes(),
                format!("v{i}").into_bytes(),
            )
        }))
        .collect();
    let one = LsmOptions {
        stripes: 1,
        ..plain()
    };
    let v1 = std::fs::read(d.path().join("wal-000004.log")).unwrap();
    assert!(v1.starts_with(b"STRWAL01"));
    let before = snapshot(d.path());
    {
        let e = LsmEngine::open_read_only(d.path(), one.clone()).unwrap();
        assert_eq!(all(&e), want);
    }
    assert!(
        snapshot(d.path()) == before,
        "a read-only open changed files"
    );
    let r = check(d.path(), None).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    {
        let e = LsmEngine::open(d.path(), one.clone()).unwrap();
        assert_eq!(all(&e), want);
        strata_lsm::engine::put(&e, b"k31", b"v31").unwrap();
        e.kill();
    }
    let wal = std::fs::read(wal_with_records(d.path())).unwrap();
    assert!(wal.starts_with(b"STRWAL04"));
    let e = LsmEngine::open(d.path(), one).unwrap();
    assert_eq!(all(&e).len(), 32);
}

/// A directory written before WAL v3 (`tests/vectors/wal-v2`, see its README) opens
/// read-only without a change, checks clean, and a writer replays it and carries on with a WAL
/// of version 3. A v2 WAL keeps the v2 rules: a lost sector followed by records (what an OS
/// crash can leave; v2 records carry no watermark to prove it unsynced) is refused.
#[test]
fn a_v2_wal_directory_still_opens_with_v2_rules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/wal-v2");
    let d = tempfile::tempdir().unwrap();
    copy_dir(&src, d.path());
    let one = LsmOptions {
        stripes: 1,
        ..plain()
    };
    let v2 = std::fs::read(d.path().join("wal-000001.log")).unwrap();
    assert!(v2.starts_with(b"STRWAL02"));
    assert_eq!(log_records(&v2).len(), 2);
    let before = snapshot(d.path());
    let want = {
        let e = LsmEngine::open_read_only(d.path(), one.clone()).unwrap();
        all(&e)
    };
    assert_eq!(want.len(), 20);
    assert!(want.iter().all(|(k, v)| k.len() == 16 && v.len() == 100));
    assert!(
        snapshot(d.path()) == before,
        "a read-only open changed files"
    );
    let r = check(d.path(), None).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    // The first record's sector lost, the second record on disk: corruption in v2.
    let holed = tempfile::tempdir().unwrap();
    copy_dir(&src, holed.path());
    let mut h = v2.clone();
    h[8..512].fill(0);
    std::fs::write(holed.path().join("wal-000001.log"), &h).unwrap();
    assert!(matches!(
        LsmEngine::open(holed.path(), one.clone()),
        Err(Error::Corruption { .. })
    ));
    assert!(!check(holed.path(), None).unwrap().is_ok());
    {
        let e = LsmEngine::open(d.path(), one.clone()).unwrap();
        assert_eq!(all(&e), want);
        strata_lsm::engine::put(&e, b"zz", b"new").unwrap();
        e.kill();
    }
    let wal = std::fs::read(wal_with_records(d.path())).unwrap();
    assert!(wal.starts_with(b"STRWAL04"));
    let e = LsmEngine::open(d.path(), one).unwrap();
    assert_eq!(all(&e).len(), 21);
}

/// The manifest's counterpart of `a_torn_tail_is_not_corruption`: a crash while appending
/// one more record leaves part of its header, its header and part of its payload, or zeros
/// (a file system that extended the file before writing). The database opens with every
/// record, `check` notes the torn tail and reports no problem, and a writer carries on.
#[test]
fn a_torn_manifest_tail_is_not_corruption() {
    let base = tempfile::tempdir().unwrap();
    let manifest = flushed(base.path());
    let data = std::fs::read(&manifest).unwrap();
    let &(off, len) = log_records(&data).last().unwrap();
    let last = &data[off..off + len];
    let name = manifest.file_name().unwrap().to_owned();
    for tail in [&last[..5], &last[..12 + (len - 12) / 2], &[0u8; 40][..]] {
        let d = tempfile::tempdir().unwrap();
        copy_dir(base.path(), d.path());
        let mut torn = data.clone();
        torn.extend_from_slice(tail);
        std::fs::write(d.path().join(&name), &torn).unwrap();
        let before = snapshot(d.path());
        let e = LsmEngine::open_read_only(d.path(), plain()).unwrap();
        assert_eq!(all(&e), expected(310), "tail of {} bytes", tail.len());
        drop(e);
        let r = check(d.path(), None).unwrap();
        assert!(r.is_ok(), "tail of {} bytes: {:?}", tail.len(), r.problems);
        assert!(
            r.notes.iter().any(|n| n.contains("torn tail")),
            "{:?}",
            r.notes
        );
        assert!(snapshot(d.path()) == before, "reading changed files");
        let e = LsmEngine::open(d.path(), plain()).unwrap();
        strata_lsm::engine::put(&e, &key(310), &val(310)).unwrap();
        e.close().unwrap();
        let e = LsmEngine::open_read_only(d.path(), plain()).unwrap();
        assert_eq!(all(&e), expected(311), "tail of {} bytes", tail.len());
        drop(e);
        assert!(check(d.path(), None).unwrap().is_ok());
    }
}

#[test]
fn a_damaged_manifest_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = flushed(dir.path());
    // Damage the snapshot record: the manifest no longer says which files are live.
    let mut data = std::fs::read(&manifest).unwrap();
    data[8 + 12 + 3] ^= 0x10;
    std::fs::write(&manifest, &data).unwrap();
    let before = snapshot(dir.path());
    assert!(matches!(
        LsmEngine::open(dir.path(), plain()),
        Err(Error::Corruption { .. })
    ));
    assert!(matches!(
        LsmEngine::open_read_only(dir.path(), plain()),
        Err(Error::Corruption { .. })
    ));
    assert!(snapshot(dir.path()) == before);
    // A directory without CURRENT but with data is not taken for an empty one.
    std::fs::remove_file(dir.path().join("CURRENT")).unwrap();
    let before = snapshot(dir.path());
    assert!(LsmEngine::open(dir.path(), plain()).is_err());
    assert!(snapshot(dir.path()) == before);
}

#[test]
fn repair_moves_a_damaged_sst_aside_and_says_what_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path(), 1000);
    let ssts = named(dir.path(), "");
    let ssts: Vec<PathBuf> = ssts
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    let victim = &ssts[ssts.len() / 2];
    let mut data = std::fs::read(victim).unwrap();
    data[10] ^= 0x01;
    std::fs::write(victim, &data).unwrap();
    let before = snapshot(dir.path());
    let r = check(dir.path(), None).unwrap();
    assert!(
        r.problems.iter().any(|p| &p.file == victim),
        "{:?}",
        r.problems
    );
    let rep = repair(dir.path(), plain()).unwrap();
    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    assert!(rep.lost.iter().any(|l| l.contains(&name)), "{rep:?}");
    assert!(check(dir.path(), None).unwrap().is_ok());
    // Nothing was deleted: the damaged file is in the repair directory, byte for byte.
    let after = snapshot(dir.path());
    let moved = rep.moved_to.unwrap().join(&name);
    assert_eq!(after.get(&moved), before.get(victim));
    let e = LsmEngine::open(dir.path(), plain()).unwrap();
    let got = all(&e);
    assert!(got.len() < 1000 && got.len() > 500, "{}", got.len());
    for (k, v) in got {
        let i: u32 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
        assert_eq!(v, val(i));
    }
    // A sound database is left alone.
    drop(e);
    let before = snapshot(dir.path());
    assert!(repair(dir.path(), plain()).unwrap().nothing_to_do());
    assert!(snapshot(dir.path()) == before);
}
