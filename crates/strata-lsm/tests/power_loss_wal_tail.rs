//! The last WAL record before the zero tail that `sync_wal` reserves (`WalWriter::reserve_tail`):
//! a bit flip anywhere in it is corruption of a complete, acknowledged record — the open
//! refuses with the record's offset (or, never in practice, reads every batch), it never reads
//! the damage as a torn tail and quietly drops the batch; `check` reports it; `repair` keeps
//! the batches before it and moves the WAL aside. And the counterpart: a power loss in the
//! middle of an unsynced write into that tail is a torn tail, never corruption.
//! (`tests/trust.rs` covers the last record of a WAL written with synced writes only,
//! `tests/wal_tail.rs` the tail's durability.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_lsm::{
    check, repair, Direction, Engine, Error, FaultFs, Fs, KeyRange, LsmEngine, LsmOptions,
    SyncMode, WriteBatch,
};

fn opts(fs: &Arc<FaultFs>) -> LsmOptions {
    LsmOptions {
        stripes: 4,
        // Room for every batch of these tests: no flush, one WAL (preallocated 1 MiB).
        memtable_budget_bytes: 16 << 20,
        background: false,
        fs: Some(Arc::clone(fs) as Arc<dyn Fs>),
        ..LsmOptions::default()
    }
}

fn plain() -> LsmOptions {
    opts(&Arc::new(FaultFs::new()))
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:09}").into_bytes()
}

/// `(key, value)` of every put of the first `big` big batches and `small` small synced ones.
fn expected(big: u32, small: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<_> = (0..big * 1000)
        .map(|i| (key(i), vec![(i / 1000) as u8; 100]))
        .collect();
    v.extend((0..small).map(|i| (key(1_000_000 + i), format!("small {i}").into_bytes())));
    v
}

/// Big unsynced batches (1,000 puts of 100-byte values each: past the WAL's preallocation),
/// `sync_wal` (which reserves a durable zero tail after them), then `small` small synced
/// writes into that tail. Every write is acknowledged as durable.
fn write(e: &LsmEngine, big: u32, small: u32) {
    for b in 0..big {
        let mut w = WriteBatch::new();
        for i in 0..1000 {
            w.put(key(b * 1000 + i), [b as u8; 100]);
        }
        e.write_with_sync(w, SyncMode::None).unwrap();
    }
    e.sync_wal().unwrap();
    for i in 0..small {
        let mut w = WriteBatch::new();
        w.put(key(1_000_000 + i), format!("small {i}"));
        e.write_with_sync(w, SyncMode::Always).unwrap();
    }
}

fn all(e: &LsmEngine) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// The WAL of `dir` (there is one).
fn wal(dir: &Path) -> PathBuf {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    logs.pop().unwrap()
}

/// `(offset, total length)` of every complete record of the WAL (v4: a record cut into
/// page-contained fragments spans from its first fragment to its last; zeros after the last).
fn records(data: &[u8]) -> Vec<(usize, usize)> {
    assert!(data.starts_with(strata_lsm::wal::WAL_MAGIC_V4));
    let (recs, _) = strata_lsm::wal::read_records(data, 4);
    recs.iter()
        .map(|r| (r.offset as usize, (r.end - r.offset) as usize))
        .collect()
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

/// Flips one bit in each of `bytes` (offsets into the last record) of a copy of the
/// database `big` big and `small` small batches left, and checks every open, `check` and
/// `repair` of it.
fn flip_last_record(big: u32, small: u32, pick: impl Fn(usize) -> Vec<usize>) {
    let base = tempfile::tempdir().unwrap();
    {
        let e = LsmEngine::open(base.path(), plain()).unwrap();
        write(&e, big, small);
        // Power loss right after: everything written was acknowledged as durable.
        e.kill();
    }
    let w = wal(base.path());
    let name = w.file_name().unwrap().to_owned();
    let data = std::fs::read(&w).unwrap();
    let recs = records(&data);
    assert_eq!(recs.len() as u32, big + small);
    let &(off, len) = recs.last().unwrap();
    let tail = data.len() - (off + len);
    assert!(
        tail >= 4096,
        "no zero tail after the last record ({tail} bytes)"
    );
    let (want_all, want_before) = if small > 0 {
        (expected(big, small), expected(big, small - 1))
    } else {
        (expected(big, 0), expected(big - 1, 0))
    };
    for at in pick(len) {
        let byte = off + at;
        let d = tempfile::tempdir().unwrap();
        copy_dir(base.path(), d.path());
        let path = d.path().join(&name);
        let mut bad = data.clone();
        bad[byte] ^= 1 << (byte % 8);
        std::fs::write(&path, &bad).unwrap();
        let mut refused = false;
        for ro in [true, false] {
            let r = if ro {
                LsmEngine::open_read_only(d.path(), plain())
            } else {
                LsmEngine::open(d.path(), plain())
            };
            match r {
                Ok(e) => assert!(
                    all(&e) == want_all,
                    "byte {at} of the last record: opened without the acknowledged batch (read as a torn tail)"
                ),
                Err(Error::Corruption { file, offset, .. }) => {
                    refused = true;
                    assert_eq!((&file, offset), (&path, off as u64), "byte {at}");
                }
                Err(e) => panic!("byte {at}: {e}"),
            }
        }
        if !refused {
            continue;
        }
        let r = check(d.path(), None).unwrap();
        assert!(
            r.problems
                .iter()
                .any(|p| p.file == path && p.offset == off as u64),
            "byte {at}: check: {:?}",
            r.problems
        );
        if at % 3 == 0 {
            let rep = repair(d.path(), plain()).unwrap();
            assert!(!rep.lost.is_empty(), "byte {at}: {rep:?}");
            let e = LsmEngine::open(d.path(), plain()).unwrap();
            assert!(all(&e) == want_before, "byte {at}: repair: {rep:?}");
            let kept = rep.moved_to.unwrap().join(&name);
            assert_eq!(std::fs::read(kept).unwrap(), bad, "byte {at}");
        }
    }
}

/// Every header byte, the first payload bytes, the middle, the last payload byte and the
/// commit byte of a record `len` bytes long.
fn sampled(len: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..16).collect();
    v.extend([len / 2, len - 2, len - 1]);
    v
}

#[test]
fn a_bit_flip_in_the_big_record_before_a_sync_wal_tail_is_corruption() {
    flip_last_record(12, 0, sampled);
}

#[test]
fn a_bit_flip_in_a_small_record_in_a_sync_wal_tail_is_corruption() {
    flip_last_record(12, 3, |len| (0..len).collect());
}

/// A power loss in the middle of an unsynced write into the tail `sync_wal` reserved: whatever
/// prefix of it reached the disk, the database opens with every acknowledged batch, the torn
/// one whole or not at all, and `check` finds nothing wrong.
#[test]
fn a_torn_write_into_a_sync_wal_tail_is_not_corruption() {
    for keep in [0u64, 1, 4, 11, 12, 13, 30, 44, 45, 46, 200] {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultFs::new());
        {
            let e = LsmEngine::open(dir.path(), opts(&fs)).unwrap();
            write(&e, 12, 2);
            let mut w = WriteBatch::new();
            w.put(key(1_000_002), "small 2");
            e.write_with_sync(w, SyncMode::None).unwrap();
            e.kill();
        }
        fs.tear_last_write(keep);
        fs.crash().unwrap();
        let e = LsmEngine::open_read_only(dir.path(), plain())
            .unwrap_or_else(|e| panic!("keep {keep}: {e}"));
        let got = all(&e);
        drop(e);
        assert!(
            got == expected(12, 2) || got == expected(12, 3),
            "keep {keep}: {} keys",
            got.len()
        );
        let r = check(dir.path(), None).unwrap();
        assert!(r.is_ok(), "keep {keep}: {:?}", r.problems);
    }
}
