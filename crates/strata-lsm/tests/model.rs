//! Model-based test: random operations against `LsmEngine` and a `BTreeMap`, compared after
//! every step (point reads, forward and reverse scans of random ranges, full scans, snapshots,
//! cursors with seeks in both directions — some held open across later writes, flushes and
//! compactions), with flushes, compactions, close-and-reopen and read-only reopens in the mix.
//! The model itself is `engine_model`, shared with the other engines' tests.

mod engine_model;

use std::path::PathBuf;

use engine_model::{step, Step, Target};
use proptest::prelude::*;
use strata_lsm::{Engine, LsmEngine, LsmOptions, Partitioner, SyncMode};

fn options(background: bool, partitioner: Option<Partitioner>) -> LsmOptions {
    LsmOptions {
        stripes: 4,
        sync: if background {
            SyncMode::Always
        } else {
            SyncMode::None
        },
        partitioner,
        block_cache_bytes: 4096,
        memtable_budget_bytes: 3000,
        block_bytes: 64,
        sst_target_bytes: 400,
        l0_compaction_trigger: 2,
        l0_stop_trigger: 6,
        level1_bytes: 600,
        background,
        // Both read paths: mapped blocks with background maintenance, pread without.
        mmap_reads: background,
        // Roll the manifest over every few dozen edits: reopens read rolled manifests.
        manifest_roll_bytes: 8 << 10,
        fs: None,
    }
}

struct Lsm {
    dir: PathBuf,
    opts: LsmOptions,
    engine: Option<LsmEngine>,
}

impl Target for Lsm {
    fn engine(&self) -> &dyn Engine {
        self.engine.as_ref().expect("open engine")
    }
    fn reopen(&mut self) {
        if let Some(e) = self.engine.take() {
            e.close().unwrap();
        }
        self.engine = Some(LsmEngine::open(&self.dir, self.opts.clone()).unwrap());
    }
    fn reopen_read_only(&mut self) -> Option<Box<dyn Engine>> {
        if let Some(e) = self.engine.take() {
            e.close().unwrap();
        }
        let ro = LsmEngine::open_read_only(&self.dir, self.opts.clone()).unwrap();
        Some(Box::new(ro))
    }
    fn verify(&self) {
        self.engine.as_ref().expect("open engine").verify().unwrap();
    }
}

fn run(steps: Vec<Step>, background: bool, partitioner: Option<Partitioner>) {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(background, partitioner);
    let mut t = Lsm {
        dir: dir.path().to_path_buf(),
        engine: Some(LsmEngine::open(dir.path(), opts.clone()).unwrap()),
        opts,
    };
    engine_model::run(steps, &mut t);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn lsm_matches_btreemap(steps in proptest::collection::vec(step(), 1..120)) {
        run(steps, false, None);
    }

    #[test]
    fn lsm_matches_btreemap_partitioned_background(steps in proptest::collection::vec(step(), 1..120)) {
        run(steps, true, Some(Partitioner::FixedPrefix(1)));
    }

    /// Stripes in key order under a table id: ranges inside one id read the stripes one
    /// after another (a concatenation), others merge them.
    #[test]
    fn lsm_matches_btreemap_hashed_stripes(steps in proptest::collection::vec(step(), 1..120)) {
        run(steps, false, Some(Partitioner::NativeTupleHash(2)));
    }
}

#[test]
fn snapshot_is_isolated_from_later_writes_flushes_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let e = LsmEngine::open(dir.path(), options(false, None)).unwrap();
    engine_model::snapshot_is_isolated(&e);
}
