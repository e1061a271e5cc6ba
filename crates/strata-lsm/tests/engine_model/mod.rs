//! The engine model test, for any [`Engine`]: random puts, deletes, conditional batches
//! (Absent, Present, Equals a value or absence), point reads, forward and reverse scans of
//! random ranges and prefixes, snapshots read long after later writes, cursors with seeks in
//! both directions (some kept open across later writes, flushes and compactions), flushes,
//! compactions, close-and-reopen and read-only reopens (where the engine has them), all
//! compared with a `BTreeMap` after every step.
//!
//! Used by `tests/model.rs` (the LSM) and, by path, by `crates/strata-etcd/tests/model.rs`
//! (etcd): one model, every engine.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use proptest::prelude::*;
use strata_lsm::{Condition, Cursor, Direction, Engine, Error, KeyRange, Snapshot, WriteBatch};

/// The model: the engine's expected content.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The engine under test.
pub trait Target {
    /// The engine.
    fn engine(&self) -> &dyn Engine;
    /// Closes the engine and opens it again on the same data.
    fn reopen(&mut self);
    /// Closes the engine and opens it read-only on the same data; `None` where the engine
    /// has no read-only mode (the step is then skipped). The runner checks the read-only
    /// engine, drops it and calls [`Target::reopen`].
    fn reopen_read_only(&mut self) -> Option<Box<dyn Engine>> {
        None
    }
    /// Checks the engine's own invariants (after the last step).
    fn verify(&self) {}
}

/// A batch precondition, drawn before the model is known.
#[derive(Debug, Clone)]
pub enum Cond {
    Absent(Vec<u8>),
    Present(Vec<u8>),
    /// Equals the key's current value in the model (so it holds unless the key is absent).
    EqualsCurrent(Vec<u8>),
    Equals(Vec<u8>, Option<Vec<u8>>),
}

#[derive(Debug, Clone)]
pub enum Step {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>, Vec<Cond>),
    Get(Vec<u8>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, bool),
    Prefix(Vec<u8>, bool),
    /// Takes a snapshot (kept with a copy of the model; at most a few live at once).
    Snapshot,
    /// Reads the n-th live snapshot (modulo their number): a range both ways and a get.
    ReadSnapshot(usize, Bound<Vec<u8>>, Bound<Vec<u8>>, Vec<u8>),
    /// Drops the oldest live snapshot.
    DropSnapshot,
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
pub enum CursorOp {
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
    prop_oneof![
        3 => (bound(), bound()).prop_map(|(start, end)| KeyRange { start, end }),
        1 => partition_range(),
    ]
}

/// A range inside one `(id, h)` of Strata's table keys, as a table Query reads: both bounds
/// start with the same `(id, h)` (one stripe of `native-hash:2`), from that prefix itself or
/// a key under it, to a key under it or past every key under such a key (`‖ FE`).
fn partition_range() -> impl Strategy<Value = KeyRange> {
    use strata_key::codec::native::NativeCodec;
    use strata_key::{TupleCodec, Value};
    let h = proptest::sample::select(vec![0i128, 1, 16383, 16384, 32767, 32768, 49152, 65535]);
    let tail = proptest::option::of(proptest::collection::vec(0u8..3, 0..2));
    (1i128..3, h, tail.clone(), tail, any::<(bool, bool, bool)>()).prop_map(
        |(id, h, a, b, (inc_lo, inc_hi, past))| {
            let enc = |t: Option<Vec<u8>>| {
                let mut v = vec![Value::Int(id), Value::Int(h)];
                v.extend(t.map(Value::Bytes));
                NativeCodec::new().encode(&v).unwrap()
            };
            let (lo, mut hi) = (enc(a), enc(b));
            if past {
                hi.push(0xFE);
            }
            KeyRange {
                start: if inc_lo {
                    Bound::Included(lo)
                } else {
                    Bound::Excluded(lo)
                },
                end: if inc_hi {
                    Bound::Included(hi)
                } else {
                    Bound::Excluded(hi)
                },
            }
        },
    )
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

pub fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        2 => proptest::collection::vec(0u8..4, 0..4),
        2 => proptest::collection::vec(any::<u8>(), 0..3),
        3 => tuple_key(),
    ]
}

/// Native tuples shaped like Strata's table keys, `(id, h, tail…)` or shorter, with `h` on
/// and around the stripe bounds of `native-hash:2` over 4 stripes (and some `h` that are not
/// hash values at all: negative, too large, text).
fn tuple_key() -> impl Strategy<Value = Vec<u8>> {
    use strata_key::codec::native::NativeCodec;
    use strata_key::{TupleCodec, Value};
    let h = prop_oneof![
        (0i128..65536).prop_map(Value::Int),
        proptest::sample::select(vec![0i128, 1, 16383, 16384, 32767, 32768, 49152, 65535])
            .prop_map(Value::Int),
        proptest::sample::select(vec![-1i128, 65536, 1 << 40]).prop_map(Value::Int),
        Just(Value::from("t")),
    ];
    (
        1i128..3,
        h,
        proptest::collection::vec(0u8..3, 0..2),
        1usize..4,
    )
        .prop_map(|(id, h, tail, n)| {
            let t = [Value::Int(id), h, Value::Bytes(tail)];
            NativeCodec::new().encode(&t[..n]).unwrap()
        })
}

/// The key of every tuple starting with the table id `id` (a table's scan prefix).
fn id_prefix() -> impl Strategy<Value = Vec<u8>> {
    use strata_key::codec::native::NativeCodec;
    use strata_key::{TupleCodec, Value};
    (1i128..3).prop_map(|id| NativeCodec::new().encode(&[Value::Int(id)]).unwrap())
}

pub fn value() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..40)
}

pub fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded)
    ]
}

fn cond() -> impl Strategy<Value = Cond> {
    prop_oneof![
        key().prop_map(Cond::Absent),
        key().prop_map(Cond::Present),
        key().prop_map(Cond::EqualsCurrent),
        (key(), proptest::option::of(value())).prop_map(|(k, v)| Cond::Equals(k, v)),
    ]
}

pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (key(), value()).prop_map(|(k, v)| Step::Put(k, v)),
        3 => key().prop_map(Step::Delete),
        3 => (proptest::collection::vec((key(), proptest::option::of(value())), 0..20),
              proptest::collection::vec(cond(), 0..3)).prop_map(|(ops, c)| Step::Batch(ops, c)),
        3 => key().prop_map(Step::Get),
        3 => (bound(), bound(), any::<bool>()).prop_map(|(a, b, r)| Step::Range(a, b, r)),
        1 => (partition_range(), any::<bool>()).prop_map(|(r, rev)| Step::Range(r.start, r.end, rev)),
        1 => (proptest::collection::vec(0u8..4, 0..2), any::<bool>()).prop_map(|(p, r)| Step::Prefix(p, r)),
        2 => (id_prefix(), any::<bool>()).prop_map(|(p, r)| Step::Prefix(p, r)),
        1 => Just(Step::Snapshot),
        2 => (any::<usize>(), bound(), bound(), key()).prop_map(|(i, a, b, k)| Step::ReadSnapshot(i, a, b, k)),
        1 => Just(Step::DropSnapshot),
        2 => (range(), any::<bool>(), cursor_ops()).prop_map(|(r, rev, ops)| Step::Cursor(r, rev, ops)),
        1 => (range(), any::<bool>()).prop_map(|(r, rev)| Step::OpenCursor(r, rev)),
        2 => cursor_ops().prop_map(Step::UseCursor),
        1 => Just(Step::Flush),
        1 => Just(Step::Compact),
        1 => Just(Step::Reopen),
        1 => Just(Step::ReopenReadOnly),
    ]
}

pub fn model_range(
    m: &Model,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    rev: bool,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let r = KeyRange {
        start: lo.clone(),
        end: hi.clone(),
    };
    let mut v: Vec<_> = m
        .iter()
        .filter(|(k, _)| r.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if rev {
        v.reverse();
    }
    v
}

fn dir(rev: bool) -> Direction {
    if rev {
        Direction::Reverse
    } else {
        Direction::Forward
    }
}

pub fn scan(e: &dyn Engine, r: KeyRange, rev: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.range(r, dir(rev))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

fn scan_snapshot(s: &dyn Snapshot, r: KeyRange, rev: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    s.range(r, dir(rev))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
}

const MAX_SNAPSHOTS: usize = 3;

/// Runs `steps` against `target`, checking every answer against the model and the whole
/// content (both directions) after every step.
pub fn run(steps: Vec<Step>, target: &mut dyn Target) {
    let mut m = Model::new();
    let mut snaps: Vec<(Arc<dyn Snapshot>, Model)> = Vec::new();
    // A cursor kept across steps: the cursor, the model it was opened on, its range and
    // direction, and its model position.
    type Kept = (Box<dyn Cursor>, Model, KeyRange, bool, Option<usize>);
    let mut kept: Option<Kept> = None;
    for (i, s) in steps.into_iter().enumerate() {
        let e = target.engine();
        match s.clone() {
            Step::Put(k, v) => {
                strata_lsm::engine::put(e, &k, &v).unwrap();
                m.insert(k, v);
            }
            Step::Delete(k) => {
                let mut b = WriteBatch::new();
                b.delete(k.clone());
                e.write(b).unwrap();
                m.remove(&k);
            }
            Step::Batch(ops, conds) => {
                let mut b = WriteBatch::new();
                for (k, v) in &ops {
                    match v {
                        Some(v) => b.put(k.clone(), v.clone()),
                        None => b.delete(k.clone()),
                    };
                }
                let mut holds = true;
                let mut first_failing = None;
                for (ci, c) in conds.iter().enumerate() {
                    let c = match c {
                        Cond::Absent(k) => Condition::Absent(k.clone()),
                        Cond::Present(k) => Condition::Present(k.clone()),
                        Cond::EqualsCurrent(k) => Condition::Equals(k.clone(), m.get(k).cloned()),
                        Cond::Equals(k, v) => Condition::Equals(k.clone(), v.clone()),
                    };
                    if !c.holds(m.get(c.key()).map(Vec::as_slice)) {
                        holds = false;
                        first_failing.get_or_insert(ci);
                    }
                    b.require(c);
                }
                match e.write(b) {
                    Ok(()) => {
                        assert!(holds, "step {i}: batch applied although a condition failed");
                        for (k, v) in ops {
                            match v {
                                Some(v) => m.insert(k, v),
                                None => m.remove(&k),
                            };
                        }
                    }
                    Err(Error::ConditionFailed { index, .. }) => {
                        assert!(!holds, "step {i}: condition wrongly failed");
                        assert_eq!(Some(index), first_failing, "step {i}: failing condition");
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
                    scan(e, KeyRange { start: lo, end: hi }, rev),
                    want,
                    "step {i}: {s:?}"
                );
            }
            Step::Prefix(p, rev) => {
                let r = KeyRange::prefix(&p);
                let want = model_range(&m, &r.start, &r.end, rev);
                assert_eq!(scan(e, r, rev), want, "step {i}: {s:?}");
            }
            Step::Snapshot => {
                if snaps.len() == MAX_SNAPSHOTS {
                    snaps.remove(0);
                }
                snaps.push((e.snapshot().unwrap(), m.clone()));
            }
            Step::ReadSnapshot(n, lo, hi, k) => {
                if !snaps.is_empty() {
                    let (snap, sm) = &snaps[n % snaps.len()];
                    for rev in [false, true] {
                        let r = KeyRange {
                            start: lo.clone(),
                            end: hi.clone(),
                        };
                        assert_eq!(
                            scan_snapshot(snap.as_ref(), r, rev),
                            model_range(sm, &lo, &hi, rev),
                            "step {i}: {s:?}"
                        );
                    }
                    assert_eq!(
                        snap.get(&k).unwrap(),
                        sm.get(&k).cloned(),
                        "step {i}: {s:?}"
                    );
                }
            }
            Step::DropSnapshot => {
                if !snaps.is_empty() {
                    snaps.remove(0);
                }
            }
            Step::Cursor(r, rev, ops) => {
                let mut c = e.cursor(r.clone(), dir(rev)).unwrap();
                let mut at = m.keys().any(|k| r.contains(k)).then_some(0);
                check_cursor(c.as_mut(), &m, &r, rev, &ops, &mut at, &format!("step {i}"));
            }
            Step::OpenCursor(r, rev) => {
                let c = e.cursor(r.clone(), dir(rev)).unwrap();
                let at = m.keys().any(|k| r.contains(k)).then_some(0);
                kept = Some((c, m.clone(), r, rev, at));
            }
            Step::UseCursor(ops) => {
                if let Some((c, km, r, rev, at)) = kept.as_mut() {
                    let what = format!("step {i} (kept cursor)");
                    check_cursor(c.as_mut(), km, r, *rev, &ops, at, &what);
                }
            }
            Step::Flush => e.flush().unwrap(),
            Step::Compact => e.compact().unwrap(),
            Step::Reopen => {
                // A closed engine's snapshots and cursors need not outlive it.
                snaps.clear();
                kept = None;
                target.reopen();
            }
            Step::ReopenReadOnly => {
                if let Some(ro) = target.reopen_read_only() {
                    snaps.clear();
                    let all: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    assert_eq!(
                        scan(ro.as_ref(), KeyRange::all(), false),
                        all,
                        "step {i}: read-only"
                    );
                    assert!(
                        matches!(ro.flush(), Err(Error::ReadOnly)),
                        "step {i}: read-only flush"
                    );
                    drop(ro);
                    target.reopen();
                }
            }
        }
        // After every step: the whole content, both directions.
        let e = target.engine();
        let all: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(
            scan(e, KeyRange::all(), false),
            all,
            "step {i} ({s:?}): forward scan"
        );
        let mut rev = all;
        rev.reverse();
        assert_eq!(
            scan(e, KeyRange::all(), true),
            rev,
            "step {i} ({s:?}): reverse scan"
        );
    }
    // Every surviving snapshot still reads its moment.
    for (snap, sm) in &snaps {
        let all: Vec<_> = sm.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(
            scan_snapshot(snap.as_ref(), KeyRange::all(), false),
            all,
            "final snapshot read"
        );
    }
    drop(snaps);
    target.verify();
}

/// Snapshot isolation under later writes and compaction, for any engine.
pub fn snapshot_is_isolated(e: &dyn Engine) {
    for i in 0..200u32 {
        strata_lsm::engine::put(e, &i.to_be_bytes(), b"old").unwrap();
    }
    let snap = e.snapshot().unwrap();
    for i in 0..200u32 {
        strata_lsm::engine::put(e, &i.to_be_bytes(), b"new").unwrap();
    }
    e.compact().unwrap();
    let got: Vec<_> = snap
        .range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap().1)
        .collect();
    assert_eq!(got.len(), 200);
    assert!(got.iter().all(|v| v == b"old"));
    assert_eq!(snap.get(&7u32.to_be_bytes()).unwrap().unwrap(), b"old");
    assert_eq!(e.get(&5u32.to_be_bytes()).unwrap().unwrap(), b"new");
}
