//! The engine's flush and compaction byte counters (`Stats::written`, `process_written`):
//! they must add up to the bytes of the SST files the engine wrote.

use strata_lsm::{Engine, LsmEngine, LsmOptions, SyncMode, WriteBatch};

fn small() -> LsmOptions {
    LsmOptions {
        stripes: 4,
        sync: SyncMode::None,
        memtable_budget_bytes: 64 << 10,
        block_bytes: 512,
        sst_target_bytes: 16 << 10,
        l0_compaction_trigger: 3,
        l0_stop_trigger: 8,
        level1_bytes: 32 << 10,
        block_cache_bytes: 64 << 10,
        background: false,
        ..LsmOptions::default()
    }
}

fn sst_bytes_on_disk(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// The next value of the tests' key generator (a 64-bit linear congruential step).
fn lcg(x: u64) -> u64 {
    x.wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
}

#[test]
fn counters_add_up_to_the_files_written() {
    let dir = tempfile::tempdir().unwrap();
    let e = LsmEngine::open(dir.path(), small()).unwrap();
    let mut x: u64 = 1;
    for round in 0..40u32 {
        let mut b = WriteBatch::new();
        for _ in 0..200 {
            x = lcg(x);
            b.put(
                format!("k{:06}", (x >> 33) % 5000).into_bytes(),
                vec![round as u8; 40],
            );
        }
        e.write(b).unwrap();
    }
    e.flush().unwrap();
    e.wait_for_compactions().unwrap();
    let s = e.stats().unwrap();
    let w = s.written;
    assert!(w.flushed_bytes > 0 && w.compactions > 0, "{w:?}");
    // Every SST ever written was a flush or a compaction output; live ones are on disk and
    // in the stats. Nothing was deleted without being counted as a compaction input.
    let written = w.flushed_bytes + w.compacted_bytes;
    assert_eq!(
        written - w.compaction_input_bytes,
        s.sst_bytes,
        "written {w:?}, live {}",
        s.sst_bytes
    );
    assert_eq!(s.sst_bytes, sst_bytes_on_disk(dir.path()));
    assert!(w.amplification() > 1.0);
    assert!(s.max_l0_files < 3, "{s:?}");
    assert!(s.max_sorted_runs >= 1 && s.total_sorted_runs >= s.stripes as usize / 2);
    // The process totals include this engine's.
    let p = strata_lsm::process_written();
    assert!(p.flushed_bytes >= w.flushed_bytes && p.compacted_bytes >= w.compacted_bytes);
    // A full compaction writes everything once more, counted as one merge per stripe.
    e.compact().unwrap();
    let after = e.stats().unwrap().written.since(&w);
    assert_eq!(after.compacted_bytes, e.stats().unwrap().sst_bytes);
    assert_eq!(after.compaction_input_bytes, s.sst_bytes);
    // One record per stripe there (a full compaction commits each stripe on its own).
    assert_eq!(after.compaction_rounds, after.compactions, "{after:?}");
}

/// Every flush adds an L0 file to each stripe, so the stripes reach their L0 trigger in the
/// same flush: one round then takes a job of each, made durable by one manifest record (one
/// directory fsync, one manifest fsync) instead of one per job. What the jobs wrote is all
/// there after a reopen.
#[test]
fn a_round_commits_the_jobs_of_several_stripes_in_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let e = LsmEngine::open(dir.path(), small()).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let mut x: u64 = 7;
    for round in 0..40u32 {
        let mut b = WriteBatch::new();
        for _ in 0..200 {
            x = lcg(x);
            let k = format!("k{:06}", (x >> 33) % 5000).into_bytes();
            let v = vec![round as u8; 40];
            model.insert(k.clone(), v.clone());
            b.put(k, v);
        }
        e.write(b).unwrap();
    }
    e.flush().unwrap();
    e.wait_for_compactions().unwrap();
    let w = e.stats().unwrap().written;
    let jobs = w.compactions + w.moves;
    assert!(w.compaction_rounds > 0, "{w:?}");
    assert!(
        w.compaction_rounds < jobs,
        "{jobs} jobs in {} manifest records: no round took two jobs ({w:?})",
        w.compaction_rounds
    );
    e.close().unwrap();
    let e = LsmEngine::open(dir.path(), small()).unwrap();
    let snap = e.snapshot().unwrap();
    let got: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = snap
        .range(strata_lsm::KeyRange::all(), strata_lsm::Direction::Forward)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got, model);
    e.close().unwrap();
}
