//! The writer, the model and the checks after a crash for `tests/power_loss.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_lsm::{
    check, repair, Direction, Engine, FaultFs, Fs, KeyRange, LsmEngine, LsmOptions, SyncMode,
    WriteBatch,
};

#[path = "../common/model.rs"]
mod model;
use model::{apply_ops, model_diff, Workload};
pub use model::{mix, Model};

/// Keys shared by every round (overwritten and deleted across rounds).
const SHARED: u64 = 600;

/// A round that has not reached its crash point after this many batches fails.
pub const MAX_BATCHES: u64 = 3000;

fn marker_prefix(round: u64) -> Vec<u8> {
    format!("m{round:03}-").into_bytes()
}

fn marker(round: u64, batch: u64) -> Vec<u8> {
    let mut m = marker_prefix(round);
    m.extend_from_slice(format!("{batch:06}").as_bytes());
    m
}

/// This test's batches (see [`Workload`]); keys fall in every stripe.
const WORKLOAD: Workload = Workload {
    shared: SHARED,
    max_slots: 6,
    key_digits: 4,
    repeats: 4,
    marker,
};

fn batch_ops(round: u64, batch: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    WORKLOAD.batch_ops(round, batch)
}

pub fn make_batch(round: u64, batch: u64) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in batch_ops(round, batch) {
        match v {
            Some(v) => b.put(k, v),
            None => b.delete(k),
        };
    }
    b
}

fn apply(model: &mut Model, round: u64, batch: u64) {
    apply_ops(model, batch_ops(round, batch));
}

pub fn contents(e: &LsmEngine) -> Model {
    e.range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// Every file under `dir` (relative path) and its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, m: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, m);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_path_buf();
                m.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(dir, dir, &mut m);
    m
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// A database directory on a [`FaultFs`] that lives across rounds.
pub struct Db {
    _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub fs: Arc<FaultFs>,
    /// Flush and compaction on the engine's background threads (else on the writer's).
    pub background: bool,
}

impl Db {
    pub fn new() -> Db {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        Db {
            _tmp: tmp,
            dir,
            fs: Arc::new(FaultFs::new()),
            background: false,
        }
    }

    /// Tiny memtables, SSTs and manifest roll-over: flushes, compactions, intra-L0 merges
    /// and manifest roll-overs every few dozen batches, all on the writer's thread (the
    /// crash point a round stops at is then reached in a reproducible place).
    pub fn options(&self) -> LsmOptions {
        LsmOptions {
            background: self.background,
            ..options_on(Arc::clone(&self.fs))
        }
    }

    /// After a power loss in `round` with `acked` batches acknowledged as durable: `check`
    /// finds no problem; the round's markers are a prefix `0..b` with `b` ≥ `acked`; the
    /// database equals the model after every earlier round's surviving batches and these `b`
    /// (which extend `model`); a read-only open changes no file; `repair` loses nothing.
    pub fn verify_after_crash(&self, round: u64, acked: u64, model: &mut Model, what: &str) -> u64 {
        let report = check(&self.dir, Some(Arc::clone(&self.fs) as Arc<dyn Fs>)).unwrap();
        assert!(report.is_ok(), "{what}: check found {:?}", report.problems);
        let before = files(&self.dir);
        let e = LsmEngine::open_read_only(&self.dir, self.options())
            .unwrap_or_else(|err| panic!("{what}: read-only open failed: {err}"));
        let got = contents(&e);
        drop(e);
        assert!(
            files(&self.dir) == before,
            "{what}: a read-only open changed files"
        );
        let prefix = marker_prefix(round);
        let markers: Vec<&Vec<u8>> = got.keys().filter(|k| k.starts_with(&prefix)).collect();
        let b = markers.len() as u64;
        for (i, m) in markers.iter().enumerate() {
            assert_eq!(
                **m,
                marker(round, i as u64),
                "{what}: batches recovered out of order"
            );
        }
        assert!(
            b >= acked,
            "{what}: {acked} batches acknowledged, {b} recovered"
        );
        for batch in 0..b {
            apply(model, round, batch);
        }
        if got != *model {
            let diff = model_diff(model, &got);
            panic!("{what}: {b} batches recovered, but keys differ from the model (a torn batch?): {diff:?}");
        }
        self.repair_loses_nothing(model, what);
        b
    }

    /// `repair` on copies of the directory: of the directory as the crash left it (sound:
    /// nothing to do, nothing changed) and of it without `CURRENT` (repair must then rebuild
    /// from the newest manifest, the SSTs and the WALs). Neither loses a key of `model`, and
    /// the second deletes no file that a normal open of the crash-left directory would keep
    /// (everything else it does not use is moved aside, byte for byte).
    fn repair_loses_nothing(&self, model: &Model, what: &str) {
        let scratch = tempfile::tempdir().unwrap();
        let sound = scratch.path().join("sound");
        copy_dir(&self.dir, &sound);
        let before = files(&sound);
        let rep = repair(&sound, options_on(Arc::new(FaultFs::new()))).unwrap();
        assert!(
            rep.nothing_to_do(),
            "{what}: repair of a sound directory: {rep:?}"
        );
        assert!(
            files(&sound) == before,
            "{what}: repair changed a sound directory"
        );
        // What a normal open deletes as obsolete.
        let e = LsmEngine::open(&sound, options_on(Arc::new(FaultFs::new()))).unwrap();
        assert_eq!(contents(&e), *model, "{what}: a normal open");
        e.close().unwrap();
        let after_open = files(&sound);
        let obsolete: BTreeSet<&PathBuf> = before
            .keys()
            .filter(|p| !after_open.contains_key(*p))
            .collect();

        let lost = scratch.path().join("no-current");
        copy_dir(&self.dir, &lost);
        std::fs::remove_file(lost.join("CURRENT")).unwrap();
        let before = files(&lost);
        let rep = repair(&lost, options_on(Arc::new(FaultFs::new())))
            .unwrap_or_else(|err| panic!("{what}: repair without CURRENT failed: {err}"));
        let e = LsmEngine::open(&lost, options_on(Arc::new(FaultFs::new()))).unwrap();
        assert_eq!(
            contents(&e),
            *model,
            "{what}: repair without CURRENT: {rep:?}"
        );
        e.close().unwrap();
        let after = files(&lost);
        let aside = rep
            .moved_to
            .as_ref()
            .map(|m| m.strip_prefix(&lost).unwrap().to_path_buf());
        for (p, bytes) in &before {
            if after.contains_key(p) || p.as_os_str() == "CURRENT" {
                continue;
            }
            let kept = aside.as_ref().and_then(|a| after.get(&a.join(p)));
            assert!(
                kept == Some(bytes) || obsolete.contains(p),
                "{what}: repair without CURRENT deleted {p:?}, which a normal open keeps: {rep:?}"
            );
        }
    }
}

pub fn options_on(fs: Arc<FaultFs>) -> LsmOptions {
    LsmOptions {
        stripes: 4,
        sync: SyncMode::Always,
        block_cache_bytes: 32 << 10,
        memtable_budget_bytes: 6000,
        block_bytes: 256,
        sst_target_bytes: 8 << 10,
        l0_compaction_trigger: 4,
        l0_stop_trigger: 12,
        level1_bytes: 16 << 10,
        background: false,
        manifest_roll_bytes: 4 << 10,
        fs: Some(fs as Arc<dyn Fs>),
        ..LsmOptions::default()
    }
}
