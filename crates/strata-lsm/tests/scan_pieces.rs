//! Scans of table-shaped keys read as a concatenation of stripes (`lsm/concat.rs`), against a
//! `BTreeMap`: several tables share every stripe, so a stripe's sources hold keys on both
//! sides of the piece of the stripe a scan reads. Some stripes are compacted (their sources
//! announce their key bounds, and the piece then skips its per-key bound checks), others also
//! have memtable and L0 entries (no bounds known: every key checked). Forward and reverse
//! scans of each table and of sub-ranges inside one, cursors with seeks both ways.

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use strata_key::codec::native::NativeCodec;
use strata_key::{TupleCodec, Value};
use strata_lsm::{
    Cursor, Direction, Engine, KeyRange, LsmEngine, LsmOptions, Partitioner, SyncMode, WriteBatch,
};

fn options() -> LsmOptions {
    LsmOptions {
        stripes: 4,
        sync: SyncMode::None,
        partitioner: Some(Partitioner::NativeTupleHash(2)),
        block_cache_bytes: 4096,
        memtable_budget_bytes: 1 << 20,
        block_bytes: 64,
        sst_target_bytes: 400,
        l0_compaction_trigger: 8,
        l0_stop_trigger: 16,
        level1_bytes: 600,
        background: false,
        mmap_reads: true,
        ..LsmOptions::default()
    }
}

/// `(table id, hash, tail)` as a table key.
fn key(id: i128, h: i128, tail: u8) -> Vec<u8> {
    NativeCodec::new()
        .encode(&[Value::Int(id), Value::Int(h), Value::Bytes(vec![tail])])
        .unwrap()
}

fn prefix(id: i128, h: Option<i128>) -> Vec<u8> {
    let mut t = vec![Value::Int(id)];
    t.extend(h.map(Value::Int));
    NativeCodec::new().encode(&t).unwrap()
}

/// One write: `(id, h, tail, value or delete)`.
type Op = (i128, i128, u8, Option<u8>);

fn op() -> impl Strategy<Value = Op> {
    let h = prop_oneof![
        0i128..65536,
        proptest::sample::select(vec![0i128, 16383, 16384, 32767, 32768, 49151, 49152, 65535]),
    ];
    (
        1i128..4,
        h,
        0u8..3,
        proptest::option::weighted(0.85, any::<u8>()),
    )
}

fn apply(e: &LsmEngine, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, ops: &[Op]) {
    let mut b = WriteBatch::new();
    for &(id, h, t, v) in ops {
        let k = key(id, h, t);
        match v {
            Some(v) => {
                b.put(k.clone(), vec![v]);
                model.insert(k, vec![v]);
            }
            None => {
                b.delete(k.clone());
                model.remove(&k);
            }
        }
    }
    e.write(b).unwrap();
}

/// The whole cursor, in its direction, from where it stands.
fn drain(c: &mut dyn Cursor) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    while c.valid() {
        out.push((c.key().to_vec(), c.value().to_vec()));
        c.next().unwrap();
    }
    out
}

fn want(
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    r: &KeyRange,
    dir: Direction,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut w: Vec<_> = model
        .iter()
        .filter(|(k, _)| r.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if dir == Direction::Reverse {
        w.reverse();
    }
    w
}

/// Ranges inside table `id`: the whole table, from/to a hash, between two hashes.
fn ranges(id: i128, a: i128, b: i128) -> Vec<KeyRange> {
    let (a, b) = (a.min(b), a.max(b));
    let table = KeyRange::prefix(&prefix(id, None));
    let from_a = KeyRange {
        start: Bound::Included(prefix(id, Some(a))),
        end: table.end.clone(),
    };
    let to_b = KeyRange {
        start: table.start.clone(),
        end: Bound::Excluded(prefix(id, Some(b))),
    };
    let between = KeyRange {
        start: Bound::Excluded(key(id, a, 1)),
        end: Bound::Included(key(id, b, 1)),
    };
    vec![table, from_a, to_b, between]
}

fn check_all(e: &LsmEngine, model: &BTreeMap<Vec<u8>, Vec<u8>>, a: i128, b: i128, seeks: &[Op]) {
    for id in 1..4 {
        for r in ranges(id, a, b) {
            for dir in [Direction::Forward, Direction::Reverse] {
                let mut c = e.cursor(r.clone(), dir).unwrap();
                let w = want(model, &r, dir);
                assert_eq!(drain(c.as_mut()), w, "scan {r:?} {dir:?}");
                for &(sid, h, t, _) in seeks {
                    let target = key(sid, h, t);
                    c.seek(&target).unwrap();
                    let w: Vec<_> = w
                        .iter()
                        .filter(|(k, _)| match dir {
                            Direction::Forward => *k >= target,
                            Direction::Reverse => *k <= target,
                        })
                        .cloned()
                        .collect();
                    assert_eq!(drain(c.as_mut()), w, "seek {target:?} in {r:?} {dir:?}");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Compacted data, then newer writes left in L0 and in the memtables.
    #[test]
    fn table_scans_over_shared_stripes_match_the_model(
        old in proptest::collection::vec(op(), 1..150),
        l0 in proptest::collection::vec(op(), 0..40),
        mem in proptest::collection::vec(op(), 0..40),
        a in 0i128..65536, b in 0i128..65536,
        seeks in proptest::collection::vec(op(), 0..4),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let e = LsmEngine::open(dir.path(), options()).unwrap();
        let mut model = BTreeMap::new();
        apply(&e, &mut model, &old);
        e.flush().unwrap();
        e.compact().unwrap();
        check_all(&e, &model, a, b, &seeks);
        apply(&e, &mut model, &l0);
        e.flush().unwrap();
        apply(&e, &mut model, &mem);
        check_all(&e, &model, a, b, &seeks);
        // Every stripe's memtable holds keys of every table: each piece's sources then
        // have keys on both sides of it, and no known bounds.
        let every: Vec<Op> = (1..4)
            .flat_map(|id| [5i128, 16000, 16500, 32000, 33000, 49000, 50000, 65000].map(|h| (id, h, 1, Some(7))))
            .collect();
        apply(&e, &mut model, &every);
        check_all(&e, &model, a, b, &seeks);
    }
}
