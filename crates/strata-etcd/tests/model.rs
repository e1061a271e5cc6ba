//! The model tests of the other engines, run against etcd: the engine model test of
//! `strata-lsm` (random puts, deletes, conditional batches, ranges both ways, snapshots,
//! compaction, reconnects) and the tables model test of `strata` (random schemas, items,
//! queries and scans), both included from their crates — one model for every engine.
//!
//! They need a cluster: `STRATA_ETCD_ENDPOINTS` (set by `.ci/run`); without it they say they
//! are skipped and pass.

mod common;
#[path = "../../strata-lsm/tests/engine_model/mod.rs"]
mod engine_model;
#[path = "../../strata/tests/common/mod.rs"]
mod tables_model;

use std::sync::Arc;

use engine_model::{step, Target};
use proptest::prelude::*;
use strata_etcd::{EtcdEngine, EtcdOptions};
use strata_lsm::Engine;

struct Etcd {
    opts: EtcdOptions,
    engine: Option<EtcdEngine>,
}

impl Target for Etcd {
    fn engine(&self) -> &dyn Engine {
        self.engine.as_ref().expect("open engine")
    }
    fn reopen(&mut self) {
        if let Some(e) = self.engine.take() {
            e.close().unwrap();
        }
        self.engine = Some(EtcdEngine::connect(self.opts.clone()).unwrap());
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        if let Some(e) = &self.engine {
            let _ = e.delete_all();
        }
    }
}

fn target(test: &str, page: usize, windows: bool) -> Option<Etcd> {
    let mut opts = common::options(test)?;
    // Tiny pages, and windows for any range: every scan of the model's few keys crosses many
    // pages and windows.
    opts.page_items = page;
    opts.windows = windows;
    opts.window_min = 0;
    Some(Etcd {
        engine: Some(EtcdEngine::connect(opts.clone()).unwrap()),
        opts,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn etcd_matches_btreemap_in_windows(
        steps in proptest::collection::vec(step(), 1..80),
        page in 2usize..8,
    ) {
        if let Some(mut t) = target("model_windows", page, true) {
            engine_model::run(steps, &mut t);
        }
    }

    #[test]
    fn etcd_matches_btreemap_without_windows(
        steps in proptest::collection::vec(step(), 1..60),
        page in 1usize..5,
    ) {
        if let Some(mut t) = target("model_plain", page, false) {
            engine_model::run(steps, &mut t);
        }
    }
}

#[test]
fn etcd_snapshot_is_isolated_from_later_writes_and_compaction() {
    if let Some(e) = common::fresh("snapshot_isolated") {
        engine_model::snapshot_is_isolated(&*e);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    #[test]
    fn tables_on_etcd_agree_with_the_model(seed in any::<u64>()) {
        let Some(opts) = common::options("tables_model") else { return Ok(()) };
        let e = Arc::new(EtcdEngine::connect(EtcdOptions { page_items: 7, ..opts }).unwrap());
        let db = strata::Db::with_engine(e.clone()).unwrap();
        tables_model::run_case(seed, db, 60, tables_model::Hook::None);
        e.delete_all().unwrap();
    }
}
