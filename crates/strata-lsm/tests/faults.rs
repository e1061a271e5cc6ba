//! Fault injection: each fault is either survived as documented or detected with the file
//! and offset.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_lsm::{
    Direction, Engine, Error, FaultFs, Fs, KeyRange, LsmEngine, LsmOptions, SyncMode,
};

fn opts(fs: &Arc<FaultFs>, sync: SyncMode) -> LsmOptions {
    LsmOptions {
        stripes: 4,
        sync,
        memtable_budget_bytes: 16 << 10,
        block_bytes: 256,
        background: false,
        // Roll the manifest over every few edits: injected faults land inside roll-overs too.
        manifest_roll_bytes: 4 << 10,
        fs: Some(Arc::clone(fs) as Arc<dyn Fs>),
        ..LsmOptions::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

fn all(e: &LsmEngine) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

fn with_suffix(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Power loss: kills `e` (no close), drops what `fs` holds unsynced, and reopens the directory
/// on a fresh fault-free file system.
fn crash_and_reopen(e: LsmEngine, fs: &FaultFs, dir: &Path, sync: SyncMode) -> LsmEngine {
    e.kill();
    fs.crash().unwrap();
    LsmEngine::open(dir, opts(&Arc::new(FaultFs::new()), sync)).unwrap()
}

/// A power loss after acknowledged writes (sync always): every acknowledged write survives.
#[test]
fn power_loss_keeps_every_acknowledged_write() {
    for n in [0u32, 1, 7, 300, 1000] {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultFs::new());
        let e = LsmEngine::open(dir.path(), opts(&fs, SyncMode::Always)).unwrap();
        for i in 0..n {
            strata_lsm::engine::put(&e, &key(i), &i.to_le_bytes()).unwrap();
        }
        // Crash: no close, unsynced bytes and unsynced directory entries vanish.
        let got = all(&crash_and_reopen(e, &fs, dir.path(), SyncMode::Always));
        assert_eq!(got.len(), n as usize, "n={n}");
        for (i, (k, v)) in got.iter().enumerate() {
            assert_eq!(k, &key(i as u32));
            assert_eq!(v, &(i as u32).to_le_bytes());
        }
    }
}

/// A power loss with sync none: the recovered state is a prefix of the writes.
#[test]
fn power_loss_without_sync_recovers_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(FaultFs::new());
    let e = LsmEngine::open(dir.path(), opts(&fs, SyncMode::None)).unwrap();
    for i in 0..2000u32 {
        strata_lsm::engine::put(&e, &key(i), b"v").unwrap();
    }
    let got = all(&crash_and_reopen(e, &fs, dir.path(), SyncMode::None));
    // Writes go to a new WAL after every rotation, which syncs the previous one: some data
    // survived, and what survived has no holes.
    assert!(!got.is_empty() && got.len() < 2000, "{}", got.len());
    for (i, (k, _)) in got.iter().enumerate() {
        assert_eq!(k, &key(i as u32));
    }
}

/// A failed fsync poisons the write path: the write fails, later writes fail with
/// `Poisoned`, reads still work, and a reopen recovers.
#[test]
fn failed_fsync_poisons_writes_until_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(FaultFs::new());
    let e = LsmEngine::open(dir.path(), opts(&fs, SyncMode::Always)).unwrap();
    strata_lsm::engine::put(&e, b"a", b"1").unwrap();
    fs.fail_syncs(true);
    assert!(matches!(
        strata_lsm::engine::put(&e, b"b", b"2"),
        Err(Error::Io { .. })
    ));
    fs.fail_syncs(false);
    // Even with a working disk again: the failed fsync may have dropped pages (fsyncgate).
    assert!(matches!(
        strata_lsm::engine::put(&e, b"c", b"3"),
        Err(Error::Poisoned(_))
    ));
    assert!(matches!(e.flush(), Err(Error::Poisoned(_))));
    assert_eq!(e.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        e.get(b"b").unwrap(),
        None,
        "an unacknowledged write must not be visible"
    );
    drop(e);
    let e = LsmEngine::open(dir.path(), opts(&fs, SyncMode::Always)).unwrap();
    assert_eq!(e.get(b"a").unwrap(), Some(b"1".to_vec()));
    strata_lsm::engine::put(&e, b"d", b"4").unwrap();
}

/// A failed fsync during a flush (SST or manifest) poisons too.
#[test]
fn failed_fsync_in_flush_poisons() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(FaultFs::new());
    let e = LsmEngine::open(dir.path(), opts(&fs, SyncMode::None)).unwrap();
    strata_lsm::engine::put(&e, b"a", b"1").unwrap();
    fs.fail_syncs(true);
    assert!(e.flush().is_err());
    fs.fail_syncs(false);
    assert!(matches!(
        strata_lsm::engine::put(&e, b"b", b"2"),
        Err(Error::Poisoned(_))
    ));
    assert_eq!(e.get(b"a").unwrap(), Some(b"1".to_vec()));
}

/// A failing write (disk full) poisons as well, and nothing half-written is visible.
#[test]
fn failed_write_poisons() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(FaultFs::new());
    let e = LsmEngine::open(dir.path(), opts(&fs, SyncMode::Always)).unwrap();
    fs.fail_writes_after(100);
    let mut failed = false;
    for i in 0..50 {
        if strata_lsm::engine::put(&e, &key(i), b"0123456789").is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed);
    assert!(matches!(
        strata_lsm::engine::put(&e, b"x", b"y"),
        Err(Error::Poisoned(_))
    ));
}

fn flushed_db(dir: &Path) {
    let fs = Arc::new(FaultFs::new());
    let e = LsmEngine::open(dir, opts(&fs, SyncMode::None)).unwrap();
    for i in 0..500u32 {
        strata_lsm::engine::put(&e, &key(i), &[i as u8; 50]).unwrap();
    }
    e.flush().unwrap();
    e.close().unwrap();
}

/// A flipped bit anywhere in an SST is detected: by `verify` (data blocks) or at open
/// (footer, index, filter), with the file name and an offset.
#[test]
fn bit_flips_in_ssts_are_detected_with_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    flushed_db(dir.path());
    let sst = with_suffix(dir.path(), ".sst").into_iter().next().unwrap();
    let orig = std::fs::read(&sst).unwrap();
    let step = (orig.len() / 97).max(1);
    for at in (0..orig.len()).step_by(step) {
        let mut m = orig.clone();
        m[at] ^= 0x04;
        std::fs::write(&sst, &m).unwrap();
        let fs = Arc::new(FaultFs::new());
        let err = match LsmEngine::open(dir.path(), opts(&fs, SyncMode::None)) {
            Err(e) => e,
            Ok(e) => match e.verify() {
                Err(e) => e,
                Ok(r) => panic!("flip at {at} not detected ({r:?})"),
            },
        };
        match err {
            Error::Corruption {
                file,
                offset,
                reason,
            } => {
                assert_eq!(file, sst, "flip at {at}");
                assert!(
                    offset <= at as u64,
                    "flip at {at} of {} reported at {offset}: {reason}",
                    orig.len()
                );
            }
            other => panic!("flip at {at}: {other}"),
        }
    }
    std::fs::write(&sst, &orig).unwrap();
    let e = LsmEngine::open(dir.path(), opts(&Arc::new(FaultFs::new()), SyncMode::None)).unwrap();
    assert_eq!(all(&e).len(), 500);
}

/// A truncated SST cannot be opened: the error names the file.
#[test]
fn truncated_sst_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    flushed_db(dir.path());
    let sst = with_suffix(dir.path(), ".sst").into_iter().next().unwrap();
    let len = std::fs::metadata(&sst).unwrap().len();
    for cut in [0, 10, len / 2, len - 1] {
        let f = std::fs::OpenOptions::new().write(true).open(&sst).unwrap();
        f.set_len(cut).unwrap();
        drop(f);
        match LsmEngine::open(dir.path(), opts(&Arc::new(FaultFs::new()), SyncMode::None)) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file, sst),
            Err(other) => panic!("cut {cut}: {other}"),
            Ok(_) => panic!("cut {cut}: opened"),
        }
    }
}

fn unflushed_db(dir: &Path, n: u32) -> PathBuf {
    let fs = Arc::new(FaultFs::new());
    let e = LsmEngine::open(dir, opts(&fs, SyncMode::Always)).unwrap();
    for i in 0..n {
        strata_lsm::engine::put(&e, &key(i), b"value").unwrap();
    }
    e.kill();
    with_suffix(dir, ".log").pop().unwrap()
}

/// A torn WAL tail (any truncation point) recovers a prefix; the database opens.
#[test]
fn torn_wal_tail_recovers_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let wal = unflushed_db(dir.path(), 40);
    let orig = std::fs::read(&wal).unwrap();
    let copy = tempfile::tempdir().unwrap();
    // The records end where the zeros a WAL of version 2 is preallocated with begin; a torn
    // write there leaves the file cut (v1) or a prefix of the record and zeros (v2).
    let used = orig.iter().rposition(|&b| b != 0).unwrap() + 1;
    let cases = (0..(used + 16).min(orig.len())).step_by(7).flat_map(|cut| {
        let mut zeroed = orig.clone();
        zeroed[cut.max(8)..used.max(cut)].fill(0);
        [orig[..cut].to_vec(), zeroed]
    });
    for (cut, torn) in cases.enumerate() {
        for e in std::fs::read_dir(copy.path()).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, copy.path().join(p.file_name().unwrap())).unwrap();
        }
        let w = copy.path().join(wal.file_name().unwrap());
        std::fs::write(&w, &torn).unwrap();
        let e = LsmEngine::open(
            copy.path(),
            opts(&Arc::new(FaultFs::new()), SyncMode::Always),
        )
        .unwrap();
        let got = all(&e);
        for (i, (k, _)) in got.iter().enumerate() {
            assert_eq!(k, &key(i as u32), "cut {cut}");
        }
        assert!(got.len() <= 40);
        drop(e);
        // And it reopens again (the torn log is gone, nothing is reported twice).
        let e = LsmEngine::open(
            copy.path(),
            opts(&Arc::new(FaultFs::new()), SyncMode::Always),
        )
        .unwrap();
        assert_eq!(all(&e).len(), got.len(), "cut {cut}");
    }
}

/// A flipped bit in the middle of a WAL is corruption, reported with the file and offset.
#[test]
fn corrupt_wal_middle_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let wal = unflushed_db(dir.path(), 40);
    let mut data = std::fs::read(&wal).unwrap();
    // A third into the records (a WAL of version 2 has preallocated zeros after them).
    let used = data.iter().rposition(|&b| b != 0).unwrap() + 1;
    let at = used / 3;
    data[at] ^= 0x01;
    std::fs::write(&wal, &data).unwrap();
    match LsmEngine::open(
        dir.path(),
        opts(&Arc::new(FaultFs::new()), SyncMode::Always),
    ) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, wal);
            assert!(
                offset <= at as u64 && at as u64 - offset < 64,
                "flip at {at}, reported {offset}"
            );
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("opened a corrupt WAL"),
    }
}

/// A flipped bit in the manifest is corruption.
#[test]
fn corrupt_manifest_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    flushed_db(dir.path());
    let m = with_suffix(dir.path(), "")
        .into_iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    let mut data = std::fs::read(&m).unwrap();
    data[20] ^= 0x80;
    std::fs::write(&m, &data).unwrap();
    match LsmEngine::open(dir.path(), opts(&Arc::new(FaultFs::new()), SyncMode::None)) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, m),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("opened a corrupt manifest"),
    }
}

/// A crash at any point of flushes and compactions (simulated by losing everything unsynced
/// after N operations) leaves a database that opens with a prefix of the writes.
#[test]
fn crash_during_flush_and_compaction_leaves_an_openable_database() {
    for stop in [150u32, 600, 1300, 2500] {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultFs::new());
        let o = LsmOptions {
            l0_compaction_trigger: 2,
            level1_bytes: 8 << 10,
            sst_target_bytes: 4 << 10,
            ..opts(&fs, SyncMode::Always)
        };
        let e = LsmEngine::open(dir.path(), o).unwrap();
        for i in 0..stop {
            strata_lsm::engine::put(&e, &key(i), &[1u8; 40]).unwrap();
        }
        let e = crash_and_reopen(e, &fs, dir.path(), SyncMode::Always);
        assert_eq!(all(&e).len(), stop as usize);
        e.verify().unwrap();
    }
}

/// With the background thread, the fsync of a synced write runs on the sync thread while the
/// writer fills the memtables: several writers, batches across stripes, then a power loss —
/// every acknowledged write survives.
#[test]
fn power_loss_keeps_every_write_synced_by_the_sync_thread() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(FaultFs::new());
    let o = LsmOptions {
        background: true,
        ..opts(&fs, SyncMode::Always)
    };
    let e = LsmEngine::open(dir.path(), o).unwrap();
    std::thread::scope(|sc| {
        for t in 0..3u32 {
            let e = &e;
            sc.spawn(move || {
                for b in 0..60u32 {
                    let mut batch = strata_lsm::WriteBatch::new();
                    for j in 0..5u32 {
                        let i = t * 10_000 + b * 5 + j;
                        batch.put(key(i), i.to_le_bytes());
                    }
                    e.write(batch).unwrap();
                }
            });
        }
    });
    let got = all(&crash_and_reopen(e, &fs, dir.path(), SyncMode::Always));
    assert_eq!(got.len(), 3 * 300);
    for (k, v) in got {
        let i = u32::from_le_bytes(v.as_slice().try_into().unwrap());
        assert_eq!(k, key(i));
    }
}

/// A failed fsync run by the sync thread fails the write whose batch it held with the I/O
/// error (as when the writer runs it), then poisons the engine.
#[test]
fn failed_fsync_on_the_sync_thread_fails_the_write() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(FaultFs::new());
    let o = LsmOptions {
        background: true,
        memtable_budget_bytes: 64 << 20,
        ..opts(&fs, SyncMode::Always)
    };
    let e = LsmEngine::open(dir.path(), o).unwrap();
    strata_lsm::engine::put(&e, b"a", b"1").unwrap();
    fs.fail_syncs(true);
    // A large batch: the sync thread runs (and fails) the fsync while the writer is still
    // filling the memtables.
    let mut batch = strata_lsm::WriteBatch::new();
    batch.put(b"b", b"2");
    for i in 0..20_000u32 {
        batch.put(key(i), i.to_le_bytes());
    }
    let r = e.write(batch);
    assert!(matches!(r, Err(Error::Io { .. })), "{r:?}");
    fs.fail_syncs(false);
    assert!(matches!(
        strata_lsm::engine::put(&e, b"c", b"3"),
        Err(Error::Poisoned(_))
    ));
    assert_eq!(e.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(e.get(b"b").unwrap(), None);
    drop(e);
    let e = LsmEngine::open(dir.path(), opts(&fs, SyncMode::Always)).unwrap();
    assert_eq!(e.get(b"a").unwrap(), Some(b"1".to_vec()));
}

/// The sync thread runs its fsync while the writer still fills the memtables, so it must not
/// make a batch visible: readers see a synced batch whole or not at all. A reader checks, in
/// one snapshot, that a big batch's first key is never seen without its last key.
#[test]
fn a_batch_synced_by_the_sync_thread_becomes_visible_whole() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(FaultFs::new());
    let o = LsmOptions {
        background: true,
        stripes: 1,
        memtable_budget_bytes: 256 << 20,
        ..opts(&fs, SyncMode::Always)
    };
    let e = LsmEngine::open(dir.path(), o).unwrap();
    const BATCHES: u32 = 40;
    const PER: u32 = 10_000;
    let done = std::sync::atomic::AtomicBool::new(false);
    let torn = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let s = e.snapshot().unwrap();
                for b in 0..BATCHES {
                    let first = s.get(&key(b * PER)).unwrap();
                    if first.is_none() {
                        break;
                    }
                    if s.get(&key(b * PER + PER - 1)).unwrap().is_none() {
                        torn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        });
        for b in 0..BATCHES {
            let mut batch = strata_lsm::WriteBatch::new();
            for j in 0..PER {
                batch.put(key(b * PER + j), vec![1]);
            }
            e.write(batch).unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
    });
    assert_eq!(
        torn.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "snapshots saw the first key of a batch without its last"
    );
    assert_eq!(all(&e).len(), (BATCHES * PER) as usize);
}
