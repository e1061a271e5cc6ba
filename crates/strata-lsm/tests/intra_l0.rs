//! Model test of the compaction policy with intra-L0 merges (L0 files merged into one L0
//! file while L1 is larger): the engine against a `BTreeMap`, with random keys, overwrites,
//! deletes, snapshots held across compactions, and reopens. The options make flush files
//! tiny and L0 → L0 merges frequent; the test checks that they happened.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata_lsm::{
    Direction, Engine, KeyRange, LsmEngine, LsmOptions, Snapshot, SyncMode, WriteBatch,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> LsmOptions {
    LsmOptions {
        stripes: 2,
        sync: SyncMode::None,
        block_cache_bytes: 16 << 10,
        memtable_budget_bytes: 4000,
        block_bytes: 128,
        // Intra-L0 merges are allowed while L0 holds at most this many bytes.
        sst_target_bytes: 8 << 10,
        l0_compaction_trigger: 4,
        l0_stop_trigger: 12,
        level1_bytes: 16 << 10,
        background: false,
        ..LsmOptions::default()
    }
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn all(s: &dyn Snapshot) -> Model {
    s.range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

fn check(e: &LsmEngine, model: &Model, keys: u64, rng: &mut Rng) {
    let snap = e.snapshot().unwrap();
    assert_eq!(&all(snap.as_ref()), model, "full scan");
    let back: Vec<_> = snap
        .range(KeyRange::all(), Direction::Reverse)
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert!(back.iter().rev().eq(model.keys()), "reverse scan");
    for _ in 0..50 {
        let k = key(rng.below(keys));
        assert_eq!(e.get(&k).unwrap().as_ref(), model.get(&k), "get {k:?}");
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn run(seed: u64) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(seed);
    let keys = 400 + rng.below(1200);
    let mut e = LsmEngine::open(dir.path(), options()).unwrap();
    let mut model = Model::new();
    let mut held: Vec<(Arc<dyn Snapshot>, Model)> = Vec::new();
    let mut l0_merges = 0;
    for step in 0..600u32 {
        let mut b = WriteBatch::new();
        for _ in 0..1 + rng.below(12) {
            let k = key(rng.below(keys));
            if rng.below(5) == 0 {
                b.delete(k.clone());
                model.remove(&k);
            } else {
                let v = format!("v{step}-{}", rng.below(1000)).repeat(1 + rng.below(4) as usize);
                b.put(k.clone(), v.clone().into_bytes());
                model.insert(k, v.into_bytes());
            }
        }
        e.write(b).unwrap();
        match rng.below(40) {
            0 => held.push((e.snapshot().unwrap(), model.clone())),
            1 if !held.is_empty() => {
                let i = rng.below(held.len() as u64) as usize;
                let (s, m) = held.swap_remove(i);
                assert_eq!(&all(s.as_ref()), &m, "seed {seed}: snapshot at step {step}");
            }
            2 => check(&e, &model, keys, &mut rng),
            3 if rng.below(4) == 0 => {
                l0_merges += e.stats().unwrap().written.l0_merges;
                for (s, m) in &held {
                    assert_eq!(&all(s.as_ref()), m, "seed {seed}: snapshot before reopen");
                }
                held.clear();
                e.close().unwrap();
                drop(e);
                e = LsmEngine::open(dir.path(), options()).unwrap();
                check(&e, &model, keys, &mut rng);
            }
            _ => {}
        }
        if step % 25 == 0 {
            let s = e.stats().unwrap();
            assert!(s.max_l0_files <= 4, "seed {seed}: {s:?}");
        }
    }
    for (s, m) in &held {
        assert_eq!(&all(s.as_ref()), m, "seed {seed}: snapshot at the end");
    }
    check(&e, &model, keys, &mut rng);
    l0_merges + e.stats().unwrap().written.l0_merges
}

#[test]
fn intra_l0_merges_keep_every_read_right() {
    let mut merges = 0;
    for seed in 1..=4 {
        merges += run(seed);
    }
    println!("{merges} intra-L0 merges");
    // The options must exercise the policy.
    assert!(merges > 50, "only {merges} intra-L0 merges");
}
