//! Model-based property test on the in-memory engine: random schemas (types, asc/desc, NULL
//! first/last, 1–2 partition and 1–3 sort fields), random puts / conditional puts / deletes,
//! random queries with every operator, both directions, limits and pagination, and scans in
//! random numbers of segments — all checked against a straightforward in-memory model.

mod common;

use proptest::prelude::*;
use strata::Db;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn tables_agree_with_the_model(seed in any::<u64>()) {
        common::run_case(seed, Db::memory().unwrap(), 80, common::Hook::None);
    }
}
