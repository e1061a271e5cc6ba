//! One engine's child process: every workload in order, `phase ops seconds` lines on stdout.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::engines::{open, Kv};
use crate::notes::{dir_size, disk_note, disk_stat, latency_note, peak_rss_bytes, written_note};
use crate::{BATCH, SEEK_NEXT, VALUE};

/// xorshift64*: cheap random keys and incompressible values.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn value(&mut self) -> Vec<u8> {
        let mut v = Vec::with_capacity(VALUE);
        while v.len() < VALUE {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(VALUE);
        v
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

/// Runs every workload on one engine; prints `phase ops seconds` lines.
pub fn child(engine: &str, base: &Path, n: u64, cache: usize) {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let main_dir = base.join(format!("{engine}-main"));
    let rand_dir = base.join(format!("{engine}-random"));
    for d in [&main_dir, &rand_dir] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let report =
        |phase: &str, ops: u64, t: Instant| println!("{phase} {ops} {}", t.elapsed().as_secs_f64());
    let run_writes = |db: &mut Box<dyn Kv>, rng: &mut Rng, seq: bool| {
        let mut items = Vec::with_capacity(BATCH);
        for i in 0..n {
            let k = if seq { key(i) } else { key(rng.next() % n) };
            items.push((k, rng.value()));
            if items.len() == BATCH {
                db.batch(&items);
                items.clear();
            }
        }
        if !items.is_empty() {
            db.batch(&items);
        }
    };
    {
        let mut db = open(engine, &main_dir, cache);
        let t = Instant::now();
        run_writes(&mut db, &mut rng, true);
        report("fillseq", n, t);
        let t = Instant::now();
        run_writes(&mut db, &mut rng, false);
        report("overwrite", n, t);
        let t = Instant::now();
        db.sync();
        report("sync", 1, t);
        // `LSM_BENCH_SHAPE`: the LSM's shape (files a get may probe) around readrandom.
        let shape = |db: &dyn Kv, when: &str| {
            if std::env::var_os("LSM_BENCH_SHAPE").is_some() {
                if let Some(s) = db.shape() {
                    println!("note {when} readrandom: {s}");
                }
            }
        };
        shape(db.as_ref(), "before");
        let t = Instant::now();
        for _ in 0..n {
            let k = key(rng.next() % n);
            assert!(db.get(&k), "{engine}: key missing");
        }
        report("readrandom", n, t);
        shape(db.as_ref(), "after");
        if engine != "kstone" && std::env::var_os("LSM_BENCH_NO_SEEK").is_none() {
            let seeks = (n / 10).max(1);
            let t = Instant::now();
            for _ in 0..seeks {
                let k = key(rng.next() % n);
                let got = db.seek(&k, SEEK_NEXT);
                assert!(got >= 1, "{engine}: seek found nothing");
            }
            report("seekrandom", seeks, t);
        }
        let t = Instant::now();
        let c = db.scan();
        if engine == "kstone" {
            // kstone 0.1.0's Scan reads only the memtables (its own TODO): report what it saw.
            println!("note kstone-scan-returned {c} of {n}");
        } else {
            assert_eq!(c as u64, n, "{engine}: readseq count");
        }
        report("readseq", n, t);
        let syncs = fillsync_writes(n);
        let mut lat = Vec::with_capacity(syncs as usize);
        let stat_path = std::env::var_os("LSM_BENCH_DISKSTAT").map(PathBuf::from);
        let before = stat_path.as_deref().and_then(disk_stat);
        let t = Instant::now();
        for i in 0..syncs {
            let v = rng.value();
            let w = Instant::now();
            db.put_sync(&key(n + i), &v);
            lat.push(w.elapsed().as_secs_f64() * 1e6);
        }
        report("fillsync", syncs, t);
        let after = stat_path.as_deref().and_then(disk_stat);
        println!("note {}", latency_note(&lat));
        if let (Some(b), Some(a)) = (before, after) {
            println!("note {}", disk_note(&b, &a, syncs));
        }
        drop(db);
        println!("size {} 0", dir_size(&main_dir));
        if engine == "strata" {
            println!(
                "note {}",
                written_note("fillseq+overwrite+fillsync", &strata_lsm::process_written())
            );
        }
    }
    let main_written = strata_lsm::process_written();
    {
        let mut db = open(engine, &rand_dir, cache);
        let t = Instant::now();
        run_writes(&mut db, &mut rng, false);
        report("fillrandom", n, t);
        drop(db);
        if engine == "strata" {
            println!(
                "note {}",
                written_note(
                    "fillrandom",
                    &strata_lsm::process_written().since(&main_written)
                )
            );
        }
    }
    let _ = std::fs::remove_dir_all(&main_dir);
    let _ = std::fs::remove_dir_all(&rand_dir);
    println!("rss {} 0", peak_rss_bytes());
}

/// The fillsync phase's synced writes at `n` entries: N/1000, at least 1,000, for every
/// engine alike. Each write waits for the device's cache flush (~90 µs on a quiet run of the
/// reference VM, whose disk has a write-back cache and no FUA), and that flush's time varies;
/// with 100 writes (10^5 before session 15, a ~9 ms phase) one slow flush moved an engine's
/// row by 10%, so engines with the same flush per write swapped places from run to run.
fn fillsync_writes(n: u64) -> u64 {
    (n / 1000).max(1000)
}
