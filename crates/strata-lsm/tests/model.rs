//! Model-based test: random operations against `LsmEngine` and a `BTreeMap`, compared after
//! every step (point reads, forward and reverse scans of random ranges, full scans, cursors
//! with seeks in both directions — some held open across later writes, flushes and
//! compactions), with flushes, compactions and close-and-reopen in the mix.

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use strata_lsm::{
    Condition, Cursor, Direction, Engine, Error, KeyRange, LsmEngine, LsmOptions, Partitioner,
    SyncMode, WriteBatch,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Step {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>, Option<(Vec<u8>, bool)>),
    Get(Vec<u8>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, bool),
    Prefix(Vec<u8>, bool),
    /// A cursor over a range: the ops run at once.
    Cursor(KeyRange, bool, Vec<CursorOp>),
    /// Opens a cursor (over a snapshot taken now) and keeps it for later steps.
    OpenCursor(KeyRange, bool),
    /// Runs ops on the kept cursor, against the state it was opened on.
    UseCursor(Vec<CursorOp>),
    Flush,
    Compact,
    Reopen,
    ReopenReadOnly,
}

#[derive(Debug, Clone)]
enum CursorOp {
    Seek(Vec<u8>),
    Next,
    Rewind,
}

fn cursor_ops() -> impl Strategy<Value = Vec<CursorOp>> {
    proptest::collection::vec(
        prop_oneof![
            3 => key().prop_map(CursorOp::Seek),
            6 => Just(CursorOp::Next),
            1 => Just(CursorOp::Rewind),
        ],
        0..12,
    )
}

fn range() -> impl Strategy<Value = KeyRange> {
    (bound(), bound()).prop_map(|(start, end)| KeyRange { start, end })
}

/// Runs `ops` on `c` (created over `m` restricted to `r`) and compares every position.
fn check_cursor(
    c: &mut dyn Cursor,
    m: &Model,
    r: &KeyRange,
    rev: bool,
    ops: &[CursorOp],
    at: &mut Option<usize>,
    what: &str,
) {
    let mut want: Vec<(&Vec<u8>, &Vec<u8>)> = m.iter().filter(|(k, _)| r.contains(k)).collect();
    if rev {
        want.reverse();
    }
    let check = |c: &dyn Cursor, at: Option<usize>, op: &str| match at {
        None => assert!(!c.valid(), "{what} {op}: valid at {:?}", c.key()),
        Some(a) => {
            assert!(c.valid(), "{what} {op}: invalid, want {:?}", want[a].0);
            assert_eq!(
                (c.key(), c.value()),
                (want[a].0.as_slice(), want[a].1.as_slice()),
                "{what} {op}"
            );
        }
    };
    check(c, *at, "position");
    for op in ops {
        *at = match op {
            CursorOp::Rewind => {
                c.rewind().unwrap();
                (!want.is_empty()).then_some(0)
            }
            CursorOp::Next => {
                c.next().unwrap();
                at.map(|a| a + 1).filter(|a| *a < want.len())
            }
            CursorOp::Seek(k) => {
                c.seek(k).unwrap();
                want.iter()
                    .position(|(x, _)| if rev { *x <= k } else { *x >= k })
            }
        };
        check(c, *at, &format!("{op:?}"));
    }
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(0u8..4, 0..4),
        proptest::collection::vec(any::<u8>(), 0..3),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..40)
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded)
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (key(), value()).prop_map(|(k, v)| Step::Put(k, v)),
        3 => key().prop_map(Step::Delete),
        3 => (proptest::collection::vec((key(), proptest::option::of(value())), 0..20),
              proptest::option::of((key(), any::<bool>()))).prop_map(|(ops, c)| Step::Batch(ops, c)),
        3 => key().prop_map(Step::Get),
        3 => (bound(), bound(), any::<bool>()).prop_map(|(a, b, r)| Step::Range(a, b, r)),
        1 => (proptest::collection::vec(0u8..4, 0..2), any::<bool>()).prop_map(|(p, r)| Step::Prefix(p, r)),
        2 => (range(), any::<bool>(), cursor_ops()).prop_map(|(r, rev, ops)| Step::Cursor(r, rev, ops)),
        1 => (range(), any::<bool>()).prop_map(|(r, rev)| Step::OpenCursor(r, rev)),
        2 => cursor_ops().prop_map(Step::UseCursor),
        1 => Just(Step::Flush),
        1 => Just(Step::Compact),
        1 => Just(Step::Reopen),
        1 => Just(Step::ReopenReadOnly),
    ]
}

fn options(background: bool, partitioned: bool) -> LsmOptions {
    LsmOptions {
        stripes: 4,
        sync: if background {
            SyncMode::Always
        } else {
            SyncMode::None
        },
        partitioner: if partitioned {
            Some(Partitioner::FixedPrefix(1))
        } else {
            None
        },
        block_cache_bytes: 4096,
        memtable_budget_bytes: 3000,
        block_bytes: 64,
        sst_target_bytes: 400,
        l0_compaction_trigger: 2,
        l0_stop_trigger: 6,
        level1_bytes: 600,
        background,
        fs: None,
    }
}

fn model_range(
    m: &Model,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    rev: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<_> = m
        .iter()
        .filter(|(k, _)| {
            KeyRange {
                start: lo.clone(),
                end: hi.clone(),
            }
            .contains(k)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if rev {
        v.reverse();
    }
    v
}

fn scan(e: &LsmEngine, r: KeyRange, rev: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let d = if rev {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    e.range(r, d)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

fn run(steps: Vec<Step>, background: bool, partitioned: bool) {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(background, partitioned);
    let mut e = LsmEngine::open(dir.path(), opts.clone()).unwrap();
    let mut m = Model::new();
    // A cursor kept across steps: the cursor, the model it was opened on, its range and
    // direction, and its model position.
    type Kept = (Box<dyn Cursor>, Model, KeyRange, bool, Option<usize>);
    let mut kept: Option<Kept> = None;
    for (i, s) in steps.into_iter().enumerate() {
        match s.clone() {
            Step::Put(k, v) => {
                strata_lsm::engine::put(&e, &k, &v).unwrap();
                m.insert(k, v);
            }
            Step::Delete(k) => {
                let mut b = WriteBatch::new();
                b.delete(k.clone());
                e.write(b).unwrap();
                m.remove(&k);
            }
            Step::Batch(ops, cond) => {
                let mut b = WriteBatch::new();
                for (k, v) in &ops {
                    match v {
                        Some(v) => b.put(k.clone(), v.clone()),
                        None => b.delete(k.clone()),
                    };
                }
                let holds = match &cond {
                    Some((k, absent)) => {
                        b.require(if *absent {
                            Condition::Absent(k.clone())
                        } else {
                            Condition::Present(k.clone())
                        });
                        m.contains_key(k) != *absent
                    }
                    None => true,
                };
                match e.write(b) {
                    Ok(()) => {
                        assert!(
                            holds,
                            "step {i}: batch applied although its condition failed"
                        );
                        for (k, v) in ops {
                            match v {
                                Some(v) => m.insert(k, v),
                                None => m.remove(&k),
                            };
                        }
                    }
                    Err(Error::ConditionFailed { .. }) => {
                        assert!(!holds, "step {i}: condition wrongly failed")
                    }
                    Err(err) => panic!("step {i}: {err}"),
                }
            }
            Step::Get(k) => assert_eq!(
                e.get(&k).unwrap(),
                m.get(&k).cloned(),
                "step {i}: get {k:?}"
            ),
            Step::Range(lo, hi, rev) => {
                let want = model_range(&m, &lo, &hi, rev);
                assert_eq!(
                    scan(&e, KeyRange { start: lo, end: hi }, rev),
                    want,
                    "step {i}: {s:?}"
                );
            }
            Step::Prefix(p, rev) => {
                let r = KeyRange::prefix(&p);
                let want = model_range(&m, &r.start, &r.end, rev);
                assert_eq!(scan(&e, r, rev), want, "step {i}: {s:?}");
            }
            Step::Cursor(r, rev, ops) => {
                let d = if rev {
                    Direction::Reverse
                } else {
                    Direction::Forward
                };
                let mut c = e.cursor(r.clone(), d).unwrap();
                let mut at = m.keys().any(|k| r.contains(k)).then_some(0);
                check_cursor(c.as_mut(), &m, &r, rev, &ops, &mut at, &format!("step {i}"));
            }
            Step::OpenCursor(r, rev) => {
                let d = if rev {
                    Direction::Reverse
                } else {
                    Direction::Forward
                };
                let c = e.cursor(r.clone(), d).unwrap();
                let at = m.keys().any(|k| r.contains(k)).then_some(0);
                kept = Some((c, m.clone(), r, rev, at));
            }
            Step::UseCursor(ops) => {
                if let Some((c, km, r, rev, at)) = kept.as_mut() {
                    check_cursor(
                        c.as_mut(),
                        km,
                        r,
                        *rev,
                        &ops,
                        at,
                        &format!("step {i} (kept cursor)"),
                    );
                }
            }
            Step::Flush => e.flush().unwrap(),
            Step::Compact => e.compact().unwrap(),
            Step::Reopen => {
                kept = None;
                e.close().unwrap();
                drop(e);
                e = LsmEngine::open(dir.path(), opts.clone()).unwrap();
            }
            Step::ReopenReadOnly => {
                e.close().unwrap();
                drop(e);
                let ro = LsmEngine::open_read_only(dir.path(), opts.clone()).unwrap();
                let all: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                assert_eq!(
                    scan(&ro, KeyRange::all(), false),
                    all,
                    "step {i}: read-only"
                );
                assert!(matches!(ro.flush(), Err(Error::ReadOnly)));
                drop(ro);
                e = LsmEngine::open(dir.path(), opts.clone()).unwrap();
            }
        }
        // After every step: the whole content, both directions.
        let all: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(
            scan(&e, KeyRange::all(), false),
            all,
            "step {i} ({s:?}): forward scan"
        );
        let mut rev = all;
        rev.reverse();
        assert_eq!(
            scan(&e, KeyRange::all(), true),
            rev,
            "step {i} ({s:?}): reverse scan"
        );
    }
    e.verify().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn lsm_matches_btreemap(steps in proptest::collection::vec(step(), 1..120)) {
        run(steps, false, false);
    }

    #[test]
    fn lsm_matches_btreemap_partitioned_background(steps in proptest::collection::vec(step(), 1..120)) {
        run(steps, true, true);
    }
}

#[test]
fn snapshot_is_isolated_from_later_writes_flushes_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let e = LsmEngine::open(dir.path(), options(false, false)).unwrap();
    for i in 0..200u32 {
        strata_lsm::engine::put(&e, &i.to_be_bytes(), b"old").unwrap();
    }
    let snap = e.snapshot().unwrap();
    for i in 0..200u32 {
        strata_lsm::engine::put(&e, &i.to_be_bytes(), b"new").unwrap();
    }
    e.compact().unwrap();
    let got: Vec<_> = snap
        .range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap().1)
        .collect();
    assert_eq!(got.len(), 200);
    assert!(got.iter().all(|v| v == b"old"));
    assert_eq!(e.get(&5u32.to_be_bytes()).unwrap().unwrap(), b"new");
}
