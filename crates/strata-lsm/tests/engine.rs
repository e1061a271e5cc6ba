//! Behaviour of the LSM beyond the model test: recovery, WAL and file lifecycle, levels,
//! stalls under a small budget, group commit, cross-stripe batches and partitioned ranges.

use std::sync::Arc;

use strata_lsm::{
    Direction, Engine, FaultFs, Fs, KeyRange, LsmEngine, LsmOptions, Partitioner, SyncMode,
    WriteBatch,
};

fn small(background: bool) -> LsmOptions {
    LsmOptions {
        stripes: 8,
        memtable_budget_bytes: 64 << 10,
        block_bytes: 512,
        sst_target_bytes: 16 << 10,
        l0_compaction_trigger: 3,
        l0_stop_trigger: 8,
        level1_bytes: 32 << 10,
        block_cache_bytes: 64 << 10,
        background,
        ..LsmOptions::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn files(dir: &std::path::Path, suffix: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(suffix)
        })
        .count()
}

#[test]
fn unflushed_writes_survive_reopen_and_old_wals_go() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = LsmEngine::open(dir.path(), small(false)).unwrap();
        for i in 0..100 {
            strata_lsm::engine::put(&e, &key(i), b"v").unwrap();
        }
        e.close().unwrap();
    }
    let e = LsmEngine::open(dir.path(), small(false)).unwrap();
    assert_eq!(
        e.range(KeyRange::all(), Direction::Forward)
            .unwrap()
            .count(),
        100
    );
    // The replayed WAL became L0 files and was deleted: one fresh WAL remains.
    assert_eq!(files(dir.path(), ".log"), 1);
    assert_eq!(
        files(dir.path(), ".sst") as u64,
        e.stats().unwrap().files_per_level.iter().sum::<usize>() as u64
    );
}

#[test]
fn data_moves_down_the_levels_and_stays_correct() {
    let dir = tempfile::tempdir().unwrap();
    let e = LsmEngine::open(
        dir.path(),
        LsmOptions {
            sync: SyncMode::None,
            ..small(true)
        },
    )
    .unwrap();
    let n = 20_000u32;
    for chunk in 0..(n / 500) {
        let mut b = WriteBatch::new();
        for i in chunk * 500..(chunk + 1) * 500 {
            // Overwrites and deletes to exercise shadowing across levels.
            b.put(key(i % 7000), format!("value-{i}").into_bytes());
            if i % 11 == 0 {
                b.delete(key((i * 7) % 7000));
            }
        }
        e.write(b).unwrap();
    }
    e.wait_for_compactions().unwrap();
    let st = e.stats().unwrap();
    assert!(st.files_per_level[1..].iter().sum::<usize>() > 0, "{st:?}");
    assert!(st.files_per_level[0] <= 8 * 3, "{st:?}");
    // The model: replay the same sequence.
    let mut m = std::collections::BTreeMap::new();
    for i in 0..n {
        m.insert(key(i % 7000), format!("value-{i}").into_bytes());
        if i % 11 == 0 {
            m.remove(&key((i * 7) % 7000));
        }
    }
    let got: Vec<_> = e
        .range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<_> = m.into_iter().collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want);
    let mut rev: Vec<_> = e
        .range(KeyRange::all(), Direction::Reverse)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    rev.reverse();
    assert!(rev == want);
    e.verify().unwrap();
    e.compact().unwrap();
    let st = e.stats().unwrap();
    assert_eq!(st.files_per_level[..4].iter().sum::<usize>(), 0, "{st:?}");
    let again: Vec<_> = e
        .range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(again == want);
}

#[test]
fn memory_budget_bounds_memtables() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LsmOptions {
        sync: SyncMode::None,
        ..small(true)
    };
    let budget = opts.memtable_budget_bytes;
    let e = LsmEngine::open(dir.path(), opts).unwrap();
    let mut peak = 0;
    for i in 0..30_000u32 {
        strata_lsm::engine::put(&e, &key(i), &[7u8; 100]).unwrap();
        if i % 100 == 0 {
            peak = peak.max(e.stats().unwrap().memtable_bytes);
        }
    }
    // The batch that crosses each half may overshoot it: allow two records of slack.
    assert!(peak <= budget + 2 * 200, "peak {peak} > budget {budget}");
}

#[test]
fn group_commit_shares_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(FaultFs::new());
    let e = Arc::new(
        LsmEngine::open(
            dir.path(),
            LsmOptions {
                fs: Some(fs.clone() as Arc<dyn Fs>),
                ..small(true)
            },
        )
        .unwrap(),
    );
    let before = fs.syncs();
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let e = Arc::clone(&e);
            std::thread::spawn(move || {
                for i in 0..150 {
                    strata_lsm::engine::put(e.as_ref(), &key(t * 1000 + i), b"v").unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let syncs = fs.syncs() - before;
    assert!(
        syncs < 600,
        "{syncs} fsyncs for 600 acknowledged writes: no group commit"
    );
    assert_eq!(
        e.range(KeyRange::all(), Direction::Forward)
            .unwrap()
            .count(),
        600
    );
}

/// Small synced batches run their fsync on the writer's thread; big ones (32 ops and more)
/// hand it to the sync thread while they fill the memtables. Writers of both kinds at once
/// must all be acknowledged (no lost wake-up: a hang fails the test after a minute) and every
/// batch must be there afterwards, after a reopen too.
#[test]
fn small_and_big_synced_batches_at_once_are_all_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let e = Arc::new(LsmEngine::open(dir.path(), small(true)).unwrap());
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let e = Arc::clone(&e);
            let done = done_tx.clone();
            std::thread::spawn(move || {
                for i in 0..120u32 {
                    let mut b = WriteBatch::new();
                    // Threads 0 and 1 write single puts, 2 and 3 alternate 1- and 40-op batches.
                    let ops = if t >= 2 && i % 2 == 0 { 40 } else { 1 };
                    for j in 0..ops {
                        b.put(key(t * 1_000_000 + i * 100 + j), b"v");
                    }
                    e.write(b).unwrap();
                }
                done.send(()).unwrap();
            })
        })
        .collect();
    for _ in 0..threads.len() {
        done_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a synced writer was not acknowledged within a minute");
    }
    for t in threads {
        t.join().unwrap();
    }
    let want = 2 * 120 + 2 * (60 * 40 + 60);
    let count = |e: &LsmEngine| {
        e.range(KeyRange::all(), Direction::Forward)
            .unwrap()
            .count()
    };
    assert_eq!(count(&e), want);
    drop(e);
    let e = LsmEngine::open(dir.path(), small(true)).unwrap();
    assert_eq!(count(&e), want);
}

#[test]
fn batches_across_stripes_are_atomic_and_conditions_see_latest_state() {
    let dir = tempfile::tempdir().unwrap();
    let e = Arc::new(
        LsmEngine::open(
            dir.path(),
            LsmOptions {
                sync: SyncMode::None,
                ..small(true)
            },
        )
        .unwrap(),
    );
    // Many threads race to claim the same keys with Absent conditions: each key is claimed once.
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let e = Arc::clone(&e);
            std::thread::spawn(move || {
                let mut won = 0;
                for i in 0..200u32 {
                    let mut b = WriteBatch::new();
                    b.put(key(i), vec![t])
                        .put(key(i + 100_000), vec![t])
                        .require(strata_lsm::Condition::Absent(key(i)));
                    match e.write(b) {
                        Ok(()) => won += 1,
                        Err(strata_lsm::Error::ConditionFailed { .. }) => {}
                        Err(err) => panic!("{err}"),
                    }
                }
                won
            })
        })
        .collect();
    let total: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, 200);
    for i in 0..200 {
        assert_eq!(
            e.get(&key(i)).unwrap(),
            e.get(&key(i + 100_000)).unwrap(),
            "halves of one batch differ"
        );
    }
}

#[test]
fn partitioned_range_touches_one_stripe_and_is_ordered() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LsmOptions {
        partitioner: Some(Partitioner::FixedPrefix(4)),
        sync: SyncMode::None,
        ..small(false)
    };
    let e = LsmEngine::open(dir.path(), opts).unwrap();
    for p in 0..20u32 {
        for s in 0..50u32 {
            let mut k = format!("p{p:03}").into_bytes();
            k.extend_from_slice(&s.to_be_bytes());
            strata_lsm::engine::put(&e, &k, b"x").unwrap();
        }
    }
    // All keys of a partition share a stripe.
    let s0 = e.stripe_of(b"p007\0\0\0\0");
    assert!((0..50u32).all(|s| {
        let mut k = b"p007".to_vec();
        k.extend_from_slice(&s.to_be_bytes());
        e.stripe_of(&k) == s0
    }));
    e.flush().unwrap();
    let got: Vec<_> = e
        .range(KeyRange::prefix(b"p007"), Direction::Reverse)
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(got.len(), 50);
    assert!(got.windows(2).all(|w| w[0] > w[1]));
    assert_eq!(
        e.range(KeyRange::all(), Direction::Forward)
            .unwrap()
            .count(),
        1000
    );
}

#[test]
fn stripes_are_fixed_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    let e = LsmEngine::open(
        dir.path(),
        LsmOptions {
            stripes: 16,
            ..small(false)
        },
    )
    .unwrap();
    strata_lsm::engine::put(&e, b"a", b"1").unwrap();
    drop(e);
    let e = LsmEngine::open(
        dir.path(),
        LsmOptions {
            stripes: 256,
            ..small(false)
        },
    )
    .unwrap();
    assert_eq!(e.stripes(), 16);
    assert_eq!(e.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert!(LsmEngine::open(
        &dir.path().join("new"),
        LsmOptions {
            stripes: 0,
            ..small(false)
        }
    )
    .is_err());
}

#[test]
fn closed_engine_refuses_work() {
    let dir = tempfile::tempdir().unwrap();
    let e = LsmEngine::open(dir.path(), small(true)).unwrap();
    e.close().unwrap();
    assert!(matches!(e.get(b"a"), Err(strata_lsm::Error::Closed)));
    assert!(matches!(
        strata_lsm::engine::put(&e, b"a", b"b"),
        Err(strata_lsm::Error::Closed)
    ));
}

/// A sequential load: every flushed file overlaps nothing below it, so compaction moves it
/// down by a manifest edit instead of rewriting it (a trivial move). No SST is ever deleted,
/// files reach the deeper levels, and the data, a reopen and `check` are all intact.
#[test]
fn sequential_loads_move_files_down_without_rewriting_them() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || LsmOptions {
        stripes: 1,
        sync: SyncMode::None,
        ..small(true)
    };
    let mut seen = std::collections::BTreeSet::new();
    let n = 30_000u32;
    {
        let e = LsmEngine::open(dir.path(), opts()).unwrap();
        for chunk in 0..n / 500 {
            let mut b = WriteBatch::new();
            for i in chunk * 500..(chunk + 1) * 500 {
                b.put(key(i), format!("value-{i}").into_bytes());
            }
            e.write(b).unwrap();
            for f in std::fs::read_dir(dir.path()).unwrap() {
                let name = f.unwrap().file_name().to_string_lossy().into_owned();
                if name.ends_with(".sst") {
                    seen.insert(name);
                }
            }
        }
        e.wait_for_compactions().unwrap();
        let st = e.stats().unwrap();
        assert!(st.files_per_level[2..].iter().sum::<usize>() > 0, "{st:?}");
        e.close().unwrap();
    }
    let now: std::collections::BTreeSet<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect();
    assert!(seen.len() > 10, "{seen:?}");
    let gone = seen.difference(&now).count();
    assert_eq!(gone, 0, "{gone} of {} files were rewritten", seen.len());
    let e = LsmEngine::open(dir.path(), opts()).unwrap();
    let got: Vec<_> = e
        .range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<_> = (0..n)
        .map(|i| (key(i), format!("value-{i}").into_bytes()))
        .collect();
    assert!(got == want);
    for i in (0..n).step_by(997) {
        assert_eq!(
            e.get(&key(i)).unwrap(),
            Some(format!("value-{i}").into_bytes())
        );
    }
    e.verify().unwrap();
    drop(e);
    assert!(strata_lsm::check(dir.path(), None).unwrap().is_ok());
}

/// Point reads racing with writes, flushes and compactions (tiny memtables, so keys move
/// from the active memtable to a frozen one to files while being read): a read never returns
/// a value older than one acknowledged before it started, never loses a written key, and
/// through `get_with` sees the same as `get`. One stripe (the `strata kv` default) and eight.
#[test]
fn point_reads_see_every_acknowledged_write_while_data_moves() {
    use std::sync::atomic::{AtomicU32, Ordering};
    const KEYS: u32 = 64;
    const ROUNDS: u32 = 120;
    for stripes in [1, 8] {
        let dir = tempfile::tempdir().unwrap();
        let e = Arc::new(
            LsmEngine::open(
                dir.path(),
                LsmOptions {
                    stripes,
                    sync: SyncMode::None,
                    memtable_budget_bytes: 16 << 10,
                    ..small(true)
                },
            )
            .unwrap(),
        );
        // acked[k]: the latest round whose write of key k was acknowledged.
        let acked: Arc<Vec<AtomicU32>> = Arc::new((0..KEYS).map(|_| AtomicU32::new(0)).collect());
        let value = |k: u32, round: u32| -> Vec<u8> {
            let mut v = round.to_be_bytes().to_vec();
            v.extend(std::iter::repeat_n(k as u8, 100));
            v
        };
        for k in 0..KEYS {
            strata_lsm::engine::put(e.as_ref(), &key(k), &value(k, 0)).unwrap();
        }
        let writer = {
            let (e, acked) = (Arc::clone(&e), Arc::clone(&acked));
            std::thread::spawn(move || {
                for round in 1..=ROUNDS {
                    for k in 0..KEYS {
                        strata_lsm::engine::put(e.as_ref(), &key(k), &value(k, round)).unwrap();
                        acked[k as usize].store(round, Ordering::Release);
                    }
                }
            })
        };
        let mut reads = 0u64;
        loop {
            let done = writer.is_finished();
            for k in 0..KEYS {
                let floor = acked[k as usize].load(Ordering::Acquire);
                let got = e
                    .get(&key(k))
                    .unwrap()
                    .expect("a written key is never absent");
                let round = u32::from_be_bytes(got[..4].try_into().unwrap());
                assert!(
                    round >= floor,
                    "key {k}: read round {round} after round {floor} was acknowledged"
                );
                assert_eq!(got, value(k, round), "key {k}: torn value");
                let floor = acked[k as usize].load(Ordering::Acquire);
                let r2 = e
                    .get_with(&key(k), |v| u32::from_be_bytes(v[..4].try_into().unwrap()))
                    .unwrap()
                    .expect("a written key is never absent");
                assert!(r2 >= floor, "get_with, key {k}: round {r2} after {floor}");
                reads += 2;
            }
            if done {
                break;
            }
        }
        writer.join().unwrap();
        for k in 0..KEYS {
            assert_eq!(e.get(&key(k)).unwrap(), Some(value(k, ROUNDS)));
        }
        assert!(
            files(dir.path(), ".sst") > 0,
            "{stripes} stripes: the data never reached files ({reads} reads)"
        );
    }
}

/// `Engine::get_borrowed` (what Strata's tables read items through) agrees with `get` on
/// present, overwritten, deleted and absent keys, in the memtable and in files, for the LSM
/// and for an engine that uses the trait's default; `f` may read the engine again.
#[test]
fn get_borrowed_agrees_with_get() {
    let dir = tempfile::tempdir().unwrap();
    let lsm = LsmEngine::open(
        dir.path(),
        LsmOptions {
            sync: SyncMode::None,
            ..small(false)
        },
    )
    .unwrap();
    let mem = strata_lsm::MemEngine::new();
    let engines: [&dyn Engine; 2] = [&lsm, &mem];
    for e in engines {
        for i in 0..300u32 {
            strata_lsm::engine::put(e, &key(i), format!("v{i}").as_bytes()).unwrap();
        }
        e.flush().unwrap();
        for i in (0..300u32).step_by(3) {
            strata_lsm::engine::put(e, &key(i), format!("w{i}").as_bytes()).unwrap();
        }
        let mut b = WriteBatch::new();
        for i in (0..300u32).step_by(7) {
            b.delete(key(i));
        }
        e.write(b).unwrap();
        for i in 0..320u32 {
            let want = e.get(&key(i)).unwrap();
            let mut got = None;
            let found = e
                .get_borrowed(&key(i), &mut |v| {
                    // Reading again from inside `f` neither deadlocks nor disagrees.
                    assert_eq!(e.get(&key(i)).unwrap().as_deref(), Some(v));
                    got = Some(v.to_vec());
                })
                .unwrap();
            assert_eq!(found, want.is_some(), "key {i}");
            assert_eq!(got, want, "key {i}");
        }
    }
}

/// Compactions delete the files they replace on a thread of their own (the reaper), not
/// under the maintenance lock; `compact`, `wait_for_compactions` and `close` still return
/// with every replaced file gone (nothing else holds them here).
#[test]
fn replaced_files_are_gone_when_compaction_returns() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || LsmOptions {
        sync: SyncMode::None,
        ..small(true)
    };
    let live = |e: &LsmEngine| e.stats().unwrap().files_per_level.iter().sum::<usize>();
    let e = LsmEngine::open(dir.path(), opts()).unwrap();
    let mut x = 7u32;
    for round in 0..3 {
        for _ in 0..40 {
            let mut b = WriteBatch::new();
            for _ in 0..200 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                b.put(key(x % 20_000), format!("value-{round}-{x}").into_bytes());
            }
            e.write(b).unwrap();
        }
        e.wait_for_compactions().unwrap();
        assert_eq!(
            files(dir.path(), ".sst"),
            live(&e),
            "round {round}: after the wait"
        );
        assert!(e.stats().unwrap().written.compactions > 0);
    }
    e.compact().unwrap();
    assert_eq!(files(dir.path(), ".sst"), live(&e), "after compact");
    for _ in 0..40 {
        let mut b = WriteBatch::new();
        for _ in 0..200 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            b.put(key(x % 20_000), b"again");
        }
        e.write(b).unwrap();
    }
    e.close().unwrap();
    drop(e);
    // No file left behind by close (an orphan would be more files than the reopened
    // engine knows; replaying the WAL may only add some).
    let after_close = files(dir.path(), ".sst");
    let e = LsmEngine::open(dir.path(), opts()).unwrap();
    assert!(
        after_close <= live(&e),
        "{after_close} files after close, {} live",
        live(&e)
    );
}
