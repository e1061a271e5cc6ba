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

/// `(offset, total length)` of every complete record of a log file.
fn log_records(data: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut pos = 8;
    while pos + 12 <= data.len() {
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        if pos + 12 + len > data.len() {
            break;
        }
        v.push((pos, 12 + len));
        pos += 12 + len;
    }
    v
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
    let wal = named(base.path(), "wal-")
        .into_iter()
        .find(|p| std::fs::metadata(p).unwrap().len() > 8)
        .unwrap();
    let data = std::fs::read(&wal).unwrap();
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
    let wal = named(dir.path(), "wal-")
        .into_iter()
        .find(|p| std::fs::metadata(p).unwrap().len() > 8)
        .unwrap();
    let data = std::fs::read(&wal).unwrap();
    let &(off, len) = log_records(&data).last().unwrap();
    // Cut inside the last record, or leave zeros after it: an unfinished write.
    for cut in [off + 3, off + 12, off + len - 1] {
        std::fs::write(&wal, &data[..cut]).unwrap();
        let e = LsmEngine::open_read_only(dir.path(), plain()).unwrap();
        assert_eq!(all(&e), expected(19), "cut at {cut}");
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
