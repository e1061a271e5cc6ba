//! One engine's child process: every workload in order, `phase ops seconds` lines on stdout.

use std::path::Path;
use std::time::Instant;

use crate::engines::{open, Kv};
use crate::fillsync;
use crate::notes::{dir_size, peak_rss_bytes, written_note};
use crate::{BATCH, SEEK_NEXT, VALUE};

/// xorshift64*: cheap random keys and incompressible values.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn value(&mut self) -> Vec<u8> {
        let mut v = Vec::with_capacity(VALUE);
        while v.len() < VALUE {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(VALUE);
        v
    }
}

/// The key of entry `i`: 16 ASCII digits.
pub fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

/// Runs every workload on one engine; prints `phase ops seconds` lines. With
/// `serve_fillsync` (the parent's runs) the child answers `ready` after readseq and runs the
/// fillsync rounds the parent sends ([`fillsync::serve`]) with its database open, then goes
/// on; without (`--child` alone) the phase runs right there as one round.
pub fn child(engine: &str, base: &Path, n: u64, cache: usize, serve_fillsync: bool) {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let main_dir = base.join(format!("{engine}-main"));
    let rand_dir = base.join(format!("{engine}-random"));
    for d in [&main_dir, &rand_dir] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).expect("mkdir");
    }
    {
        let mut db = open(engine, &main_dir, cache);
        let t = Instant::now();
        run_writes(db.as_mut(), &mut rng, n, true);
        report("fillseq", n, t);
        let t = Instant::now();
        run_writes(db.as_mut(), &mut rng, n, false);
        report("overwrite", n, t);
        let t = Instant::now();
        db.sync();
        report("sync", 1, t);
        reads(db.as_mut(), engine, n, &mut rng);
        let mut w = fillsync::Writer::new(db, n);
        if serve_fillsync {
            println!("ready");
            fillsync::serve(&mut w, &mut rng);
        } else {
            let syncs = fillsync::writes(n);
            let secs = w.round(&mut rng, syncs);
            println!("fillsync {syncs} {secs}");
        }
        w.print_notes();
        drop(w);
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
        run_writes(db.as_mut(), &mut rng, n, false);
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

/// Prints a phase's `phase ops seconds` line, timed from `t`.
fn report(phase: &str, ops: u64, t: Instant) {
    println!("{phase} {ops} {}", t.elapsed().as_secs_f64());
}

/// Writes `n` pairs in batches of [`BATCH`]: keys in order (`seq`) or uniformly random.
fn run_writes(db: &mut dyn Kv, rng: &mut Rng, n: u64, seq: bool) {
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
}

/// readrandom, seekrandom and readseq on the loaded database, each checked.
fn reads(db: &mut dyn Kv, engine: &str, n: u64, rng: &mut Rng) {
    // `LSM_BENCH_SHAPE`: the LSM's shape (files a get may probe) around readrandom.
    let shape = |db: &dyn Kv, when: &str| {
        if std::env::var_os("LSM_BENCH_SHAPE").is_some() {
            if let Some(s) = db.shape() {
                println!("note {when} readrandom: {s}");
            }
        }
    };
    shape(db, "before");
    let t = Instant::now();
    for _ in 0..n {
        let k = key(rng.next() % n);
        assert!(db.get(&k), "{engine}: key missing");
    }
    report("readrandom", n, t);
    shape(db, "after");
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
}
