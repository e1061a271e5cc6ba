//! Power loss at every crash point, in process, on a [`FaultFs`].
//!
//! `tests/crash_maintenance.rs` kills a real process at each crash point, but `kill -9` keeps
//! the page cache: every byte written survives, synced or not. A power loss keeps only what
//! was synced. Here the engine runs in this process on a [`FaultFs`]; an in-process hook
//! (`crash_point::set_hook`) stops it exactly at the N-th hit of a crash point by making
//! every later file-system change fail (nothing more reaches the disk: the engine is frozen
//! as it was there), the engine is dropped without a close, and [`FaultFs::crash`] drops every
//! unsynced byte, removes files whose directory entry was never synced and undoes unsynced
//! renames — with [`FaultFs::tear_last_write`] too, a power loss in the middle of the last
//! (unsynced, in-place) WAL write.
//!
//! Each round writes batches that are a pure function of `(round, batch)` (a marker key,
//! overwrites and deletes of shared keys), acknowledging some with a synced write, some with
//! an unsynced write followed by `sync_wal`, leaving others unsynced. After the crash:
//! `check` finds no problem (a power loss is never corruption), a read-only open finds the
//! round's markers a prefix `0..b` with `b` ≥ the acknowledged count and every key equal to the
//! model after those `b` batches (batches are atomic: no torn batch is visible), and
//! [`repair`] on a copy of the directory loses nothing of it either. The next round's open
//! then replays what the crash left (and reaches the open's own crash points).

mod power_loss_util;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use power_loss_util::*;
use strata_lsm::crash_point::{self, Hook};
use strata_lsm::{Engine, FaultFs, LsmEngine, SyncMode};

/// The hook is process-wide: the tests of this file take turns.
static SERIAL: Mutex<()> = Mutex::new(());

/// Which hits of each point a round stops at. A read-write open reaches its points once; it
/// also writes the first manifest (`manifest.written@1`, `manifest.current-tmp-synced@1`),
/// later hits are roll-overs.
fn hits_of(point: &str) -> &'static [u64] {
    use strata_lsm::crash_point::*;
    match point {
        OPEN_L0_SYNCED | OPEN_MANIFEST_CURRENT => &[1],
        MANIFEST_WRITTEN | MANIFEST_CURRENT_TMP => &[1, 2],
        MANIFEST_ROLLED => &[1, 2],
        _ => &[1, 5],
    }
}

/// Stops the engine at the `nth` hit of `point`: every later change to the file system
/// fails. `fired` says whether it happened.
struct Stop {
    fired: Arc<AtomicBool>,
}

impl Stop {
    fn arm(fs: &Arc<FaultFs>, point: &'static str, nth: u64) -> Stop {
        let fired = Arc::new(AtomicBool::new(false));
        let hits = AtomicU64::new(0);
        let (f, fs) = (Arc::clone(&fired), Arc::clone(fs));
        let hook: Hook = Arc::new(move |name| {
            if name == point && hits.fetch_add(1, Ordering::SeqCst) + 1 == nth {
                fs.fail_after_ops(Some(0));
                f.store(true, Ordering::SeqCst);
            }
        });
        crash_point::set_hook(Some(hook));
        Stop { fired }
    }

    fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        crash_point::set_hook(None);
    }
}

/// Runs round `round` until the `nth` hit of `point` stops it; returns how many of its
/// batches were acknowledged as durable.
fn run_round(db: &Db, round: u64, point: &'static str, nth: u64) -> u64 {
    let stop = Stop::arm(&db.fs, point, nth);
    let e = match LsmEngine::open(&db.dir, db.options()) {
        Ok(e) => e,
        Err(err) => {
            assert!(stop.fired(), "{point}@{nth}: open failed: {err}");
            return 0;
        }
    };
    let mut acked = 0;
    for batch in 0..MAX_BATCHES {
        if stop.fired() {
            break;
        }
        let b = make_batch(round, batch);
        let ok = match mix(round ^ (batch << 20)) % 4 {
            // Synced write: acknowledged once it returns.
            0 | 1 => e.write_with_sync(b, SyncMode::Always).is_ok(),
            // Unsynced, then `sync_wal`: acknowledged when that returns.
            2 => e.write_with_sync(b, SyncMode::None).is_ok() && e.sync_wal().is_ok(),
            // Unsynced: not acknowledged (unless a later sync covers it).
            _ => {
                if e.write_with_sync(b, SyncMode::None).is_err() {
                    break;
                }
                continue;
            }
        };
        if !ok {
            break;
        }
        acked = batch + 1;
    }
    assert!(
        stop.fired(),
        "{point}@{nth}: not reached in {MAX_BATCHES} batches (acked {acked})"
    );
    e.kill();
    acked
}

/// Every point and hit, each stopped by a power loss (`tear`: in the middle of the last
/// unsynced WAL write, keeping that many of its bytes).
fn every_point(tear: impl Fn(u64) -> u64, background: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut db = Db::new();
    db.background = background;
    let mut model = Model::new();
    let mut round = 0;
    for point in crash_point::ALL {
        // With background threads, the first hit of each point only (the test is slower).
        let hits = if background {
            &hits_of(point)[..1]
        } else {
            hits_of(point)
        };
        for &nth in hits {
            let at = format!("{point}@{nth}");
            let acked = run_round(&db, round, point, nth);
            db.fs.tear_last_write(tear(round));
            db.fs.crash().unwrap();
            let b = db.verify_after_crash(round, acked, &mut model, &at);
            eprintln!("{at}: acked {acked}, recovered {b}");
            round += 1;
        }
    }
    // And a writer carries on over what the last crash left.
    let e = LsmEngine::open(&db.dir, db.options()).unwrap();
    assert_eq!(contents(&e), model);
    e.close().unwrap();
}

#[test]
fn power_loss_at_each_crash_point_keeps_every_acknowledged_batch() {
    every_point(|_| 0, false);
}

#[test]
fn power_loss_in_a_wal_write_at_each_crash_point_keeps_every_acknowledged_batch() {
    every_point(|round| 1 + mix(round) % 40, false);
}

/// The same with flush and compaction on the engine's background threads: the point is reached
/// on the flush thread while the writer goes on (its writes fail from then on). No torn write
/// here: the writer often leaves several unsynced records, and `tear_last_write` keeps part of
/// the newest while losing the older ones whole — a hole followed by data, which the WAL reader
/// refuses as damage (see the note in `docs/format/lsm.md`, "Durability protocol").
#[test]
fn power_loss_at_each_crash_point_with_background_threads_keeps_every_acknowledged_batch() {
    every_point(|_| 0, true);
}

/// `FaultFs::crash` undoes a removal that no directory sync made durable (the file comes back
/// with its synced bytes), keeps one that was, and never brings back a file whose own entry
/// was never durable.
#[test]
fn fault_fs_brings_back_removals_not_made_durable() {
    use std::path::Path;
    use strata_lsm::Fs;
    let d = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let write = |name: &str, bytes: &[u8], dir_sync: bool| {
        let mut f = fs.create(&d.path().join(name)).unwrap();
        f.append(bytes).unwrap();
        f.sync().unwrap();
        if dir_sync {
            fs.sync_dir(d.path()).unwrap();
        }
    };
    write("durable-entry", b"synced", true);
    write("made-obsolete", b"also synced", true);
    std::fs::write(d.path().join("foreign"), b"not written through the layer").unwrap();
    let at = |n: &str| d.path().join(n);
    fs.remove(&at("made-obsolete")).unwrap();
    fs.sync_dir(d.path()).unwrap();
    write("never-durable", b"entry not synced", false);
    for n in ["durable-entry", "never-durable", "foreign"] {
        fs.remove(&at(n)).unwrap();
    }
    fs.crash().unwrap();
    let read = |n: &str| std::fs::read(at(n)).ok();
    assert_eq!(read("durable-entry").as_deref(), Some(&b"synced"[..]));
    assert_eq!(
        read("foreign").as_deref(),
        Some(&b"not written through the layer"[..])
    );
    assert!(!Path::new(&at("made-obsolete")).exists());
    assert!(!Path::new(&at("never-durable")).exists());
}

/// A new database in directories that did not exist: once a write is acknowledged, a power
/// loss keeps the directories (the open syncs each created directory's parent) and the write.
/// `FaultFs::crash` removes a directory created through it whose parent was not synced since.
#[test]
fn a_new_database_directory_survives_a_power_loss() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a").join("b").join("db");
    let fs = Arc::new(FaultFs::new());
    let acked = {
        let e = LsmEngine::open(&dir, options_on(Arc::clone(&fs))).unwrap();
        e.write_with_sync(make_batch(0, 0), SyncMode::Always)
            .unwrap();
        contents(&e)
        // Dropped unclosed: the power goes out right after the acknowledgement.
    };
    assert!(!acked.is_empty());
    fs.crash().unwrap();
    assert!(
        dir.is_dir(),
        "a power loss took the new database's directory"
    );
    let e = LsmEngine::open(&dir, options_on(Arc::clone(&fs))).unwrap();
    assert_eq!(contents(&e), acked);
    drop(e);

    // The model itself: a directory made through the layer goes unless its parent is synced.
    use strata_lsm::Fs;
    let (kept, lost) = (
        tmp.path().join("kept"),
        tmp.path().join("lost").join("deeper"),
    );
    fs.create_dir_all(&kept).unwrap();
    fs.sync_dir(tmp.path()).unwrap();
    fs.create_dir_all(&lost).unwrap();
    fs.sync_dir(&tmp.path().join("lost")).unwrap();
    fs.crash().unwrap();
    assert!(kept.is_dir());
    assert!(!tmp.path().join("lost").exists());
}

/// `repair` never deletes: what it cannot use it moves into `repair-*/`. A power loss right
/// after it returned must not take those files either (the move into the new directory must
/// be durable before anything makes the removal from the database directory durable).
#[test]
fn files_repair_moved_aside_survive_a_power_loss() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let db = Db::new();
    {
        let e = LsmEngine::open(&db.dir, db.options()).unwrap();
        for batch in 0..300 {
            e.write_with_sync(make_batch(0, batch), SyncMode::Always)
                .unwrap();
        }
        e.close().unwrap();
    }
    let mut ssts: Vec<_> = std::fs::read_dir(&db.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    ssts.sort();
    let victim = ssts[ssts.len() / 2].clone();
    let mut bad = std::fs::read(&victim).unwrap();
    bad[10] ^= 1;
    std::fs::write(&victim, &bad).unwrap();
    let fs = std::sync::Arc::new(FaultFs::new());
    let rep = strata_lsm::repair(&db.dir, options_on(Arc::clone(&fs))).unwrap();
    let moved = rep.moved_to.clone().expect("the damaged SST moved aside");
    let kept = moved.join(victim.file_name().unwrap());
    assert_eq!(std::fs::read(&kept).unwrap(), bad);
    fs.crash().unwrap();
    let here = std::fs::read(&kept)
        .ok()
        .or_else(|| std::fs::read(&victim).ok());
    assert!(
        here.as_deref() == Some(&bad[..]),
        "after a power loss the SST repair moved aside is gone: {rep:?}"
    );
}

/// A power loss while `repair` runs, at each crash point it reaches (its new manifest, and
/// its final open's points), on a directory a crash left and that lost `CURRENT`: a second
/// `repair` gets every batch that survived the first crash back.
#[test]
fn power_loss_during_repair_at_each_crash_point_loses_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let db = Db::new();
    let mut model = Model::new();
    // Leave unlisted SSTs and WALs with data behind: the repair has work.
    for (round, point, nth) in [
        (0, crash_point::FLUSH_SYNCED, 5),
        (1, crash_point::COMPACT_SYNCED, 2),
    ] {
        let acked = run_round(&db, round, point, nth);
        db.fs.crash().unwrap();
        db.verify_after_crash(round, acked, &mut model, point);
    }
    let mut reached = 0;
    for point in crash_point::ALL {
        for nth in [1, 2] {
            let at = format!("repair stopped at {point}@{nth}");
            let scratch = tempfile::tempdir().unwrap();
            let dir = scratch.path().join("db");
            copy_dir(&db.dir, &dir);
            std::fs::remove_file(dir.join("CURRENT")).unwrap();
            let fs = Arc::new(FaultFs::new());
            let stop = Stop::arm(&fs, point, nth);
            let first = strata_lsm::repair(&dir, options_on(Arc::clone(&fs)));
            let fired = stop.fired();
            drop(stop);
            if !fired {
                assert!(first.is_ok(), "{at}: {first:?}");
                continue;
            }
            reached += 1;
            fs.crash().unwrap();
            let rep = strata_lsm::repair(&dir, options_on(Arc::new(FaultFs::new())))
                .unwrap_or_else(|e| panic!("{at}: the second repair failed: {e}"));
            let e = LsmEngine::open(&dir, options_on(Arc::new(FaultFs::new())))
                .unwrap_or_else(|e| panic!("{at}: open after the second repair: {e} ({rep:?})"));
            assert_eq!(contents(&e), model, "{at}: {first:?} then {rep:?}");
            e.close().unwrap();
        }
    }
    eprintln!("repair stopped at {reached} crash point hits");
    assert!(reached >= 4, "repair reached only {reached} crash points");
}
