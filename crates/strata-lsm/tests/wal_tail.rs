//! The WAL's preallocated tail around an explicit `sync_wal`: after big batches (written past
//! the WAL's end) `sync_wal` leaves zeros after the last record and makes them durable, so the
//! small synced writes that follow are written in place (no file size change for their
//! `fdatasync` to make durable), and nothing acknowledged is lost.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_lsm::{
    Direction, Engine, FaultFs, Fs, KeyRange, LsmEngine, LsmOptions, SyncMode, WriteBatch,
};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:013}").into_bytes()
}

/// Big batches (1,000 puts of 100-byte values, ~120 KB each): past the WAL's preallocation.
fn load(e: &LsmEngine, batches: u32) {
    for b in 0..batches {
        let mut w = WriteBatch::new();
        for i in 0..1000 {
            w.put(key(b * 1000 + i), [b as u8; 100]);
        }
        e.write_with_sync(w, SyncMode::None).unwrap();
    }
}

/// The newest WAL file of `dir`.
fn live_wal(dir: &Path) -> PathBuf {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.pop().expect("a WAL")
}

fn count(e: &LsmEngine) -> usize {
    e.range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .count()
}

#[test]
fn synced_writes_after_sync_wal_change_no_wal_size() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = LsmEngine::open(dir.path(), LsmOptions::default()).unwrap();
        load(&e, 30);
        e.sync_wal().unwrap();
        let wal = live_wal(dir.path());
        let len = std::fs::metadata(&wal).unwrap().len();
        for i in 0..200 {
            let mut w = WriteBatch::new();
            w.put(key(1_000_000 + i), b"synced");
            e.write_with_sync(w, SyncMode::Always).unwrap();
            assert_eq!(
                std::fs::metadata(&wal).unwrap().len(),
                len,
                "synced write {i} changed the WAL's size"
            );
        }
        assert_eq!(live_wal(dir.path()), wal);
        e.close().unwrap();
    }
    let e = LsmEngine::open(dir.path(), LsmOptions::default()).unwrap();
    assert_eq!(count(&e), 30_200);
}

#[test]
fn sync_wal_after_big_batches_survives_power_loss() {
    for batches in [1u32, 9, 20] {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(FaultFs::new());
        let opts = |fs: &Arc<FaultFs>| LsmOptions {
            fs: Some(fs.clone() as Arc<dyn Fs>),
            ..LsmOptions::default()
        };
        let e = LsmEngine::open(dir.path(), opts(&fs)).unwrap();
        load(&e, batches);
        e.sync_wal().unwrap();
        assert_eq!(fs.unsynced_bytes(&live_wal(dir.path())), 0);
        // Power loss: no close, unsynced bytes vanish.
        e.kill();
        fs.crash().unwrap();
        let e = LsmEngine::open(dir.path(), opts(&Arc::new(FaultFs::new()))).unwrap();
        assert_eq!(count(&e), batches as usize * 1000, "{batches} batches");
        for b in 0..batches {
            let got = e.get(&key(b * 1000 + 999)).unwrap();
            assert_eq!(got.as_deref(), Some(&[b as u8; 100][..]));
        }
    }
}
