//! An OS crash that keeps an arbitrary subset of the WAL's unsynced pages (a later page
//! written back, an earlier one lost): with WAL v3's synced-through watermark the engine opens
//! and holds exactly a prefix of the acknowledged writes, and that prefix holds every write
//! acknowledged under `SyncMode::Always` and every write before the last `sync_wal`
//! (`docs/format/lsm.md`, "WAL v3", "WAL v4": batches of several pages, whose lost middle
//! page is a lost fragment). And the counterpart: a zeroed page or a bit flip inside
//! the synced region of the WAL (a later record says it was synced) is still refused, and
//! `check` reports it. Real files through `FaultFs::crash_keeping`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use strata_lsm::{
    check, Direction, Engine, Error, FaultFs, Fs, KeyRange, LsmEngine, LsmOptions, SyncMode,
    WriteBatch,
};

/// The page size of `FaultFs::crash_keeping`.
const PAGE: u64 = 4096;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// The puts of each batch written, in order.
type Batches = Vec<Vec<(Vec<u8>, Vec<u8>)>>;

fn opts(fs: &Arc<FaultFs>, memtable: usize) -> LsmOptions {
    LsmOptions {
        stripes: 2,
        memtable_budget_bytes: memtable,
        background: false,
        fs: Some(Arc::clone(fs) as Arc<dyn Fs>),
        ..LsmOptions::default()
    }
}

/// One step of a run: a batch of `keys` puts with values of `len` bytes, synced or not, or
/// an explicit `sync_wal`.
#[derive(Debug, Clone)]
enum Step {
    Write { sync: bool, keys: usize, len: usize },
    SyncWal,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (proptest::bool::weighted(0.15), 1..6usize, 1..400usize)
            .prop_map(|(sync, keys, len)| Step::Write { sync, keys, len }),
        // Batches of 1 to 5 pages (WAL v4 cuts them into page-contained fragments).
        2 => (proptest::bool::weighted(0.15), 2..6usize, 1500..4000usize)
            .prop_map(|(sync, keys, len)| Step::Write { sync, keys, len }),
        1 => Just(Step::SyncWal),
    ]
}

/// The puts of batch `b`: keys shared across batches (overwritten), values naming the batch.
fn batch_puts(b: usize, keys: usize, len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..keys)
        .map(|j| {
            let k = format!("k{:02}", (b * 7 + j * 3) % 40).into_bytes();
            let mut v = format!("batch {b} op {j} ").into_bytes();
            v.resize(len.max(v.len()), b as u8);
            (k, v)
        })
        .collect()
}

/// Writes batch `b` (`batch_puts`) with `SyncMode::Always` when `sync`, else `SyncMode::None`;
/// returns its puts.
fn write_puts(
    e: &LsmEngine,
    b: usize,
    keys: usize,
    len: usize,
    sync: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let puts = batch_puts(b, keys, len);
    let mut w = WriteBatch::new();
    for (k, v) in &puts {
        w.put(k, v);
    }
    let mode = if sync {
        SyncMode::Always
    } else {
        SyncMode::None
    };
    e.write_with_sync(w, mode).unwrap();
    puts
}

fn contents(e: &LsmEngine) -> Model {
    e.range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// A keep decision for page `page` of `path` from `seed`: only WAL pages may be kept
/// (everything else the engine relies on is synced before it is).
fn kept(seed: u64, path: &Path, page: u64) -> bool {
    if path.extension().is_none_or(|x| x != "log") {
        return false;
    }
    let mut h = seed ^ page.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 32;
    !h.is_multiple_of(3)
}

/// Runs `steps`, crashes keeping the WAL pages `seed` picks, reopens; returns the batches
/// written, how many had to survive, and what the reopened engine holds (or the open's error).
fn run(steps: &[Step], seed: u64, memtable: usize) -> (Batches, usize, Result<Model, Error>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let fs = Arc::new(FaultFs::new());
    let e = LsmEngine::open(&dir, opts(&fs, memtable)).unwrap();
    let mut batches = Vec::new();
    let mut required = 0;
    for s in steps {
        match *s {
            Step::Write { sync, keys, len } => {
                batches.push(write_puts(&e, batches.len(), keys, len, sync));
                if sync {
                    required = batches.len();
                }
            }
            Step::SyncWal => {
                e.sync_wal().unwrap();
                required = batches.len();
            }
        }
    }
    e.kill();
    fs.crash_keeping(&|p, page| kept(seed, p, page)).unwrap();
    let got = LsmEngine::open(&dir, opts(&fs, memtable)).map(|e| contents(&e));
    if got.is_ok() {
        let r = check(&dir, None).unwrap();
        assert!(r.problems.is_empty(), "check after the crash: {r:?}");
    }
    (batches, required, got)
}

/// The length of the prefix of `batches` whose state `got` is, if any.
fn prefix_of(batches: &[Vec<(Vec<u8>, Vec<u8>)>], got: &Model) -> Option<usize> {
    let mut m = Model::new();
    if &m == got {
        return Some(0);
    }
    for (i, b) in batches.iter().enumerate() {
        for (k, v) in b {
            m.insert(k.clone(), v.clone());
        }
        if &m == got {
            return Some(i + 1);
        }
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// After an OS crash keeping any subset of the WAL's unsynced pages, the engine opens and
    /// holds a prefix of the acknowledged batches that contains every batch that was
    /// acknowledged as durable (synced, or before a `sync_wal`). Batches up to 5 pages: with
    /// WAL v4 a lost middle page of one is a lost fragment, an unsynced hole (in v3 it read as
    /// a complete record with a bad checksum and the open was refused).
    #[test]
    fn an_os_crash_keeps_a_prefix_with_every_durable_write(
        steps in proptest::collection::vec(step(), 1..120),
        seed in any::<u64>(),
        small in any::<bool>(),
    ) {
        // 1 MiB memtables: one WAL; 48 KiB: rotations and flushes in the run.
        let memtable = if small { 48 << 10 } else { 1 << 20 };
        let (batches, required, got) = run(&steps, seed, memtable);
        let got = got.map_err(|e| TestCaseError::fail(format!("open refused: {e}")))?;
        let k = prefix_of(&batches, &got);
        prop_assert!(k.is_some(), "not a prefix of the acknowledged batches");
        let k = k.unwrap_or(0);
        prop_assert!(k >= required, "{k} batches kept, {required} were durable");
    }
}

/// Unsynced writes after synced ones (the later records claim the synced ones), the engine
/// dropped, every unsynced page kept: the WAL's path and the offsets of its synced part.
fn synced_then_unsynced(dir: &Path) -> (std::path::PathBuf, u64) {
    let fs = Arc::new(FaultFs::new());
    let e = LsmEngine::open(dir, opts(&fs, 1 << 20)).unwrap();
    for b in 0..40 {
        let mut w = WriteBatch::new();
        for (k, v) in batch_puts(b, 3, 300) {
            w.put(k, v);
        }
        e.write_with_sync(w, SyncMode::Always).unwrap();
    }
    let wal = std::fs::read_dir(dir)
        .unwrap()
        .map(|d| d.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .unwrap();
    let synced_end = std::fs::read(&wal)
        .unwrap()
        .iter()
        .rposition(|&b| b != 0)
        .unwrap() as u64
        + 1;
    for b in 40..60 {
        let mut w = WriteBatch::new();
        for (k, v) in batch_puts(b, 3, 300) {
            w.put(k, v);
        }
        e.write_with_sync(w, SyncMode::None).unwrap();
    }
    e.kill();
    fs.crash_keeping(&|_, _| true).unwrap();
    (wal, synced_end)
}

#[test]
fn a_zeroed_page_or_a_bit_flip_in_the_synced_region_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let (wal, synced_end) = synced_then_unsynced(base.path());
    let good = std::fs::read(&wal).unwrap();
    // Sanity: as written, everything is there.
    let fs = Arc::new(FaultFs::new());
    {
        let e = LsmEngine::open_read_only(base.path(), opts(&fs, 1 << 20)).unwrap();
        assert_eq!(contents(&e).len(), 40);
    }
    let name = wal.file_name().unwrap();
    let mut damages: Vec<(String, Vec<u8>)> = Vec::new();
    for page in 0..synced_end / PAGE {
        let mut m = good.clone();
        let from = (page * PAGE).max(8) as usize;
        m[from..((page + 1) * PAGE) as usize].fill(0);
        damages.push((format!("page {page} zeroed"), m));
    }
    for at in [100u64, PAGE + 7, synced_end - 300, synced_end - 1] {
        let mut m = good.clone();
        m[at as usize] ^= 0x04;
        damages.push((format!("bit flip at {at}"), m));
    }
    for (what, bytes) in damages {
        let d = tempfile::tempdir().unwrap();
        for f in std::fs::read_dir(base.path()).unwrap() {
            let p = f.unwrap().path();
            std::fs::copy(&p, d.path().join(p.file_name().unwrap())).unwrap();
        }
        std::fs::write(d.path().join(name), &bytes).unwrap();
        let r = LsmEngine::open(d.path(), opts(&Arc::new(FaultFs::new()), 1 << 20));
        assert!(
            matches!(r, Err(Error::Corruption { .. })),
            "{what}: the open did not refuse"
        );
        let c = check(d.path(), None).unwrap();
        assert!(!c.problems.is_empty(), "{what}: check found nothing");
    }
}

#[test]
fn an_unsynced_hole_is_a_note_for_check_and_the_prefix_opens() {
    let base = tempfile::tempdir().unwrap();
    let (wal, synced_end) = synced_then_unsynced(base.path());
    let mut bytes = std::fs::read(&wal).unwrap();
    // Lose the first unsynced page (past the synced region), keep the later ones.
    let lost = synced_end.div_ceil(PAGE) * PAGE;
    assert!(bytes[lost as usize + PAGE as usize..]
        .iter()
        .any(|&b| b != 0));
    bytes[synced_end as usize..(lost + PAGE) as usize].fill(0);
    std::fs::write(&wal, &bytes).unwrap();
    let c = check(base.path(), None).unwrap();
    assert!(c.problems.is_empty(), "{c:?}");
    assert!(
        c.notes.iter().any(|n| n.contains("unsynced hole")),
        "{:?}",
        c.notes
    );
    let e = LsmEngine::open(base.path(), opts(&Arc::new(FaultFs::new()), 1 << 20)).unwrap();
    let got = contents(&e);
    let batches: Vec<_> = (0..60).map(|b| batch_puts(b, 3, 300)).collect();
    let k = prefix_of(&batches, &got).expect("a prefix");
    assert!((40..60).contains(&k), "{k}");
}

/// Synced small batches, then unsynced batches of 2 to 5 pages with small ones between; the
/// WAL as written (every page kept).
fn synced_then_big_unsynced(dir: &Path) -> (std::path::PathBuf, Batches) {
    let fs = Arc::new(FaultFs::new());
    let e = LsmEngine::open(dir, opts(&fs, 1 << 20)).unwrap();
    let mut batches = Batches::new();
    let shapes = [
        (true, 3, 300),
        (true, 2, 100),
        (true, 3, 500),
        (false, 3, 3000),
        (false, 1, 50),
        (false, 4, 3500),
        (false, 5, 3900),
        (false, 2, 60),
        (false, 5, 4000),
        (false, 1, 10),
    ];
    for (sync, keys, len) in shapes {
        batches.push(write_puts(&e, batches.len(), keys, len, sync));
    }
    e.kill();
    fs.crash_keeping(&|_, _| true).unwrap();
    let wal = std::fs::read_dir(dir)
        .unwrap()
        .map(|d| d.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .unwrap();
    (wal, batches)
}

#[test]
fn a_lost_middle_page_of_a_big_unsynced_batch_is_an_unsynced_hole() {
    let base = tempfile::tempdir().unwrap();
    let (wal, batches) = synced_then_big_unsynced(base.path());
    let good = std::fs::read(&wal).unwrap();
    let (records, _) = strata_lsm::wal::read_records(&good, 4);
    assert_eq!(records.len(), batches.len());
    let name = wal.file_name().unwrap();
    let mut middles = 0;
    for (i, r) in records.iter().enumerate() {
        let (first, last) = (r.offset / PAGE, (r.end - 1) / PAGE);
        for page in first + 1..last {
            middles += 1;
            let d = tempfile::tempdir().unwrap();
            for f in std::fs::read_dir(base.path()).unwrap() {
                let p = f.unwrap().path();
                std::fs::copy(&p, d.path().join(p.file_name().unwrap())).unwrap();
            }
            let mut m = good.clone();
            m[(page * PAGE) as usize..((page + 1) * PAGE) as usize].fill(0);
            std::fs::write(d.path().join(name), &m).unwrap();
            let c = check(d.path(), None).unwrap();
            assert!(c.problems.is_empty(), "batch {i} page {page}: {c:?}");
            let e = LsmEngine::open(d.path(), opts(&Arc::new(FaultFs::new()), 1 << 20))
                .unwrap_or_else(|e| panic!("batch {i} page {page}: open refused: {e}"));
            let got = contents(&e);
            // Exactly the batches before the damaged one: every synced one among them.
            assert_eq!(prefix_of(&batches, &got), Some(i), "batch {i} page {page}");
            assert!(i >= 3);
        }
    }
    assert!(middles >= 8, "{middles} middle pages");
}
