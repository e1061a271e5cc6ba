//! db_bench-style comparison of the Strata LSM with its peers, one engine per child process.
//!
//! `cargo run --release -p strata-bench --bin lsm -- [--n N] [--cache-mb MB] [--engines a,b]`
//! `strata` is the configuration `strata kv` creates (one stripe); `strata-256` the same
//! engine with 256 hash stripes (the tables' configuration).
//! (add `--features rocksdb` for RocksDB; see docs/bench/lsm.md). Workloads: fillseq,
//! fillrandom, overwrite (batches of 1,000, no fsync), fillsync (`max(N/1000, 1000)` single
//! writes, fsync each, the same count for every engine: each synced write waits for the
//! device's cache flush, whose time varies from flush to flush, so fewer writes than 1,000 —
//! 100 at 10^5 before session 15 — rank engines by a few slow flushes, not by their cost per
//! write), readrandom, seekrandom (N/10 seeks + 10 next), readseq; 16-byte keys, 100-byte
//! incompressible values, one thread, the same cache budget for every engine.
//! `LSM_BENCH_SHAPE=1`: Strata's child also prints its LSM shape (L0 files, sorted runs,
//! files per level, memtable bytes) before and after readrandom, as `note` lines.
//! Every child prints the fillsync writes' latency spread (first, quantiles, max) as a `note`.
//! `LSM_BENCH_DISKSTAT=/sys/block/<dev>/stat`: every child also prints, as a `note`, the
//! device's write requests, sectors written and cache flushes per fillsync write (the deltas
//! of that file across the phase, whole device: other processes' I/O counts too).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const BATCH: usize = 1000;
const VALUE: usize = 100;
const SEEK_NEXT: usize = 10;

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

/// What a benchmarked engine must do.
trait Kv {
    /// Writes a batch atomically, without fsync.
    fn batch(&mut self, items: &[(Vec<u8>, Vec<u8>)]);
    /// Writes one pair durably (fsync before returning).
    fn put_sync(&mut self, k: &[u8], v: &[u8]);
    /// Point read; true when found.
    fn get(&mut self, k: &[u8]) -> bool;
    /// Seeks to `k` and reads up to `n` pairs; returns how many.
    fn seek(&mut self, k: &[u8], n: usize) -> usize;
    /// Reads everything in order; returns the count.
    fn scan(&mut self) -> usize;
    /// Makes everything durable (timed as its own phase).
    fn sync(&mut self);
    /// The engine's shape, for a `note` line (`LSM_BENCH_SHAPE`): Strata's LSM levels.
    fn shape(&self) -> Option<String> {
        None
    }
}

mod strata {
    use super::*;
    use strata_lsm::{
        Cursor, Direction, Engine, KeyRange, LsmEngine, LsmOptions, SyncMode, WriteBatch,
    };

    pub struct S(pub LsmEngine);

    /// The configuration `strata kv` creates (`LsmOptions::default()`: one stripe, mapped
    /// point reads), or `stripes` when given; `pread`: point reads without the memory map
    /// (`LsmOptions::mmap_reads = false`).
    pub fn open(dir: &Path, cache: usize, stripes: Option<u32>, pread: bool) -> S {
        let d = LsmOptions::default();
        let o = LsmOptions {
            sync: SyncMode::None,
            block_cache_bytes: cache,
            stripes: stripes.unwrap_or(d.stripes),
            mmap_reads: d.mmap_reads && !pread,
            ..d
        };
        S(LsmEngine::open(dir, o).expect("open strata"))
    }

    impl Kv for S {
        fn batch(&mut self, items: &[(Vec<u8>, Vec<u8>)]) {
            let mut b = WriteBatch::new();
            let bytes = items.iter().map(|(k, v)| k.len() + v.len()).sum();
            b.reserve(items.len(), bytes);
            for (k, v) in items {
                b.put(k, v);
            }
            self.0.write(b).expect("write");
        }
        fn put_sync(&mut self, k: &[u8], v: &[u8]) {
            let mut b = WriteBatch::new();
            b.put(k, v);
            self.0.write_with_sync(b, SyncMode::Always).expect("write");
        }
        fn get(&mut self, k: &[u8]) -> bool {
            // The value is borrowed, as LMDB's and redb's gets borrow theirs.
            self.0.get_with(k, |v| v.len()).expect("get").is_some()
        }
        fn seek(&mut self, k: &[u8], n: usize) -> usize {
            let r = KeyRange {
                start: std::ops::Bound::Included(k.to_vec()),
                end: std::ops::Bound::Unbounded,
            };
            let mut c = self.0.cursor(r, Direction::Forward).expect("cursor");
            let mut got = 0;
            while got < n && c.valid() {
                if !c.value().is_empty() {
                    got += 1;
                }
                c.next().expect("next");
            }
            got
        }
        fn scan(&mut self) -> usize {
            let mut c = self
                .0
                .cursor(KeyRange::all(), Direction::Forward)
                .expect("cursor");
            let mut got = 0;
            while c.valid() {
                if !c.value().is_empty() {
                    got += 1;
                }
                c.next().expect("next");
            }
            got
        }
        fn sync(&mut self) {
            self.0.sync_wal().expect("sync");
        }
        fn shape(&self) -> Option<String> {
            let s = self.0.stats().ok()?;
            Some(format!(
                "L0 files {}, sorted runs {}, files per level {:?}, memtables {} MB",
                s.max_l0_files,
                s.max_sorted_runs,
                s.files_per_level,
                s.memtable_bytes >> 20
            ))
        }
    }
}

mod fjall_kv {
    use super::*;
    use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

    pub struct F(Database, Keyspace);

    pub fn open(dir: &Path, cache: usize) -> F {
        let db = Database::builder(dir)
            .cache_size(cache as u64)
            .open()
            .expect("open fjall");
        let ks = db
            .keyspace("bench", KeyspaceCreateOptions::default)
            .expect("keyspace");
        F(db, ks)
    }

    impl Kv for F {
        fn batch(&mut self, items: &[(Vec<u8>, Vec<u8>)]) {
            let mut b = self.0.batch();
            for (k, v) in items {
                b.insert(&self.1, k.as_slice(), v.as_slice());
            }
            b.commit().expect("commit");
        }
        fn put_sync(&mut self, k: &[u8], v: &[u8]) {
            self.1.insert(k, v).expect("insert");
            self.0.persist(PersistMode::SyncAll).expect("persist");
        }
        fn get(&mut self, k: &[u8]) -> bool {
            self.1.get(k).expect("get").is_some()
        }
        fn seek(&mut self, k: &[u8], n: usize) -> usize {
            self.1
                .range(k..)
                .take(n)
                .map(|g| g.into_inner().expect("read").1.len())
                .filter(|l| *l > 0)
                .count()
        }
        fn scan(&mut self) -> usize {
            self.1
                .iter()
                .map(|g| g.into_inner().expect("read").1.len())
                .filter(|l| *l > 0)
                .count()
        }
        fn sync(&mut self) {
            self.0.persist(PersistMode::SyncAll).expect("persist");
        }
    }
}

mod redb_kv {
    use super::*;
    use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

    const T: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bench");

    pub struct R(Database);

    pub fn open(dir: &Path, cache: usize) -> R {
        let db = Database::builder()
            .set_cache_size(cache)
            .create(dir.join("db.redb"))
            .expect("open redb");
        R(db)
    }

    impl R {
        fn commit(&mut self, items: &[(Vec<u8>, Vec<u8>)], d: Durability) {
            let mut tx = self.0.begin_write().expect("tx");
            tx.set_durability(d).expect("durability");
            {
                let mut t = tx.open_table(T).expect("table");
                for (k, v) in items {
                    t.insert(k.as_slice(), v.as_slice()).expect("insert");
                }
            }
            tx.commit().expect("commit");
        }
    }

    impl Kv for R {
        fn batch(&mut self, items: &[(Vec<u8>, Vec<u8>)]) {
            self.commit(items, Durability::None);
        }
        fn put_sync(&mut self, k: &[u8], v: &[u8]) {
            self.commit(&[(k.to_vec(), v.to_vec())], Durability::Immediate);
        }
        fn get(&mut self, k: &[u8]) -> bool {
            let tx = self.0.begin_read().expect("tx");
            let t = tx.open_table(T).expect("table");
            t.get(k).expect("get").is_some()
        }
        fn seek(&mut self, k: &[u8], n: usize) -> usize {
            let tx = self.0.begin_read().expect("tx");
            let t = tx.open_table(T).expect("table");
            t.range(k..)
                .expect("range")
                .take(n)
                .map(|r| r.expect("read").1.value().len())
                .filter(|l| *l > 0)
                .count()
        }
        fn scan(&mut self) -> usize {
            let tx = self.0.begin_read().expect("tx");
            let t = tx.open_table(T).expect("table");
            t.iter()
                .expect("iter")
                .map(|r| r.expect("read").1.value().len())
                .filter(|l| *l > 0)
                .count()
        }
        fn sync(&mut self) {
            self.commit(&[], Durability::Immediate);
        }
    }
}

mod lmdb_kv {
    use super::*;
    use heed::types::Bytes;
    use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions};

    /// heed ties a database handle to its environment's lifetime: the environment is leaked
    /// (one per benchmark process) so that both can live in one struct.
    pub struct L(&'static Env, Database<'static, Bytes, Bytes>);

    pub fn open(dir: &Path) -> L {
        let mut o = EnvOpenOptions::new();
        o.map_size(16 << 30);
        // SAFETY: heed requires that the environment is not opened twice in one process and
        // that its files are not modified by others while open: this child process opens
        // this fresh directory exactly once.
        unsafe {
            o.flags(EnvFlags::NO_SYNC);
        }
        // SAFETY: as above.
        let env: &'static Env = Box::leak(Box::new(unsafe { o.open(dir) }.expect("open lmdb")));
        let tx = env.write_txn().expect("tx");
        let db = env
            .create_databases_and_commit(tx, |wdo, wtxn| -> Result<_, heed::Error> {
                wdo.create_database::<Bytes, Bytes>(wtxn, None)
                    .map(CommitOrAbort::<_, ()>::Commit)
            })
            .expect("db")
            .unwrap_commit();
        L(env, db)
    }

    impl Kv for L {
        fn batch(&mut self, items: &[(Vec<u8>, Vec<u8>)]) {
            let mut tx = self.0.write_txn().expect("tx");
            for (k, v) in items {
                self.1.put(&mut tx, k, v).expect("put");
            }
            tx.commit().expect("commit");
        }
        fn put_sync(&mut self, k: &[u8], v: &[u8]) {
            let mut tx = self.0.write_txn().expect("tx");
            self.1.put(&mut tx, k, v).expect("put");
            tx.commit().expect("commit");
            // Opened with NO_SYNC: a forced sync makes the commit as durable as a default one.
            self.0.force_sync().expect("sync");
        }
        fn get(&mut self, k: &[u8]) -> bool {
            let tx = self.0.read_txn().expect("tx");
            self.1.get(&tx, k).expect("get").is_some()
        }
        fn seek(&mut self, k: &[u8], n: usize) -> usize {
            let tx = self.0.read_txn().expect("tx");
            let r = (std::ops::Bound::Included(k), std::ops::Bound::Unbounded);
            self.1
                .range(&tx, &r)
                .expect("range")
                .take(n)
                .map(|x| x.expect("read").1.len())
                .filter(|l| *l > 0)
                .count()
        }
        fn scan(&mut self) -> usize {
            let tx = self.0.read_txn().expect("tx");
            self.1
                .iter(&tx)
                .expect("iter")
                .map(|x| x.expect("read").1.len())
                .filter(|l| *l > 0)
                .count()
        }
        fn sync(&mut self) {
            self.0.force_sync().expect("sync");
        }
    }
}

mod sled_kv {
    use super::*;

    pub struct D(sled::Db);

    pub fn open(dir: &Path, cache: usize) -> D {
        D(sled::Config::new()
            .path(dir)
            .cache_capacity(cache as u64)
            .open()
            .expect("open sled"))
    }

    impl Kv for D {
        fn batch(&mut self, items: &[(Vec<u8>, Vec<u8>)]) {
            let mut b = sled::Batch::default();
            for (k, v) in items {
                b.insert(k.as_slice(), v.as_slice());
            }
            self.0.apply_batch(b).expect("batch");
        }
        fn put_sync(&mut self, k: &[u8], v: &[u8]) {
            self.0.insert(k, v).expect("insert");
            self.0.flush().expect("flush");
        }
        fn get(&mut self, k: &[u8]) -> bool {
            self.0.get(k).expect("get").is_some()
        }
        fn seek(&mut self, k: &[u8], n: usize) -> usize {
            self.0
                .range(k..)
                .take(n)
                .map(|r| r.expect("read").1.len())
                .filter(|l| *l > 0)
                .count()
        }
        fn scan(&mut self) -> usize {
            self.0
                .iter()
                .map(|r| r.expect("read").1.len())
                .filter(|l| *l > 0)
                .count()
        }
        fn sync(&mut self) {
            self.0.flush().expect("flush");
        }
    }
}

#[cfg(feature = "rocksdb")]
mod rocks_kv {
    use super::*;
    use rocksdb::{
        BlockBasedOptions, Cache, DBCompressionType, IteratorMode, Options, WriteBatch,
        WriteOptions, DB,
    };

    pub struct K(DB);

    pub fn open(dir: &Path, cache: usize) -> K {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_compression_type(DBCompressionType::None);
        let mut t = BlockBasedOptions::default();
        t.set_block_cache(&Cache::new_lru_cache(cache).expect("cache"));
        t.set_bloom_filter(10.0, false);
        o.set_block_based_table_factory(&t);
        K(DB::open(&o, dir).expect("open rocksdb"))
    }

    impl Kv for K {
        fn batch(&mut self, items: &[(Vec<u8>, Vec<u8>)]) {
            let mut b = WriteBatch::default();
            for (k, v) in items {
                b.put(k, v);
            }
            self.0.write(b).expect("write");
        }
        fn put_sync(&mut self, k: &[u8], v: &[u8]) {
            let mut w = WriteOptions::default();
            w.set_sync(true);
            self.0.put_opt(k, v, &w).expect("put");
        }
        fn get(&mut self, k: &[u8]) -> bool {
            self.0.get(k).expect("get").is_some()
        }
        fn seek(&mut self, k: &[u8], n: usize) -> usize {
            self.0
                .iterator(IteratorMode::From(k, rocksdb::Direction::Forward))
                .take(n)
                .map(|r| r.expect("read").1.len())
                .filter(|l| *l > 0)
                .count()
        }
        fn scan(&mut self) -> usize {
            self.0
                .iterator(IteratorMode::Start)
                .map(|r| r.expect("read").1.len())
                .filter(|l| *l > 0)
                .count()
        }
        fn sync(&mut self) {
            self.0.flush_wal(true).expect("flush");
        }
    }
}

mod kstone_kv {
    use super::*;
    use kstone_api::{Database, Scan};

    pub struct KS(Database);

    pub fn open(dir: &Path) -> KS {
        KS(Database::create(dir.join("db")).expect("open kstone"))
    }

    fn item(v: &[u8]) -> kstone_core::Item {
        let mut m = std::collections::HashMap::new();
        m.insert("v".to_string(), kstone_core::Value::binary(v.to_vec()));
        m
    }

    impl Kv for KS {
        fn batch(&mut self, items: &[(Vec<u8>, Vec<u8>)]) {
            // kstone 0.1.0 has no atomic batch: batch_write loops over put (one fsync each).
            for (k, v) in items {
                self.0.put(k, item(v)).expect("put");
            }
        }
        fn put_sync(&mut self, k: &[u8], v: &[u8]) {
            self.0.put(k, item(v)).expect("put");
        }
        fn get(&mut self, k: &[u8]) -> bool {
            self.0.get(k).expect("get").is_some()
        }
        fn seek(&mut self, _k: &[u8], _n: usize) -> usize {
            0
        }
        fn scan(&mut self) -> usize {
            self.0.scan(Scan::new()).expect("scan").items.len()
        }
        fn sync(&mut self) {
            self.0.flush().expect("flush");
        }
    }
}

fn open(engine: &str, dir: &Path, cache: usize) -> Box<dyn Kv> {
    match engine {
        "strata" => Box::new(strata::open(dir, cache, None, false)),
        "strata-pread" => Box::new(strata::open(dir, cache, None, true)),
        "strata-256" => Box::new(strata::open(dir, cache, Some(256), false)),
        "fjall" => Box::new(fjall_kv::open(dir, cache)),
        "redb" => Box::new(redb_kv::open(dir, cache)),
        "lmdb" => Box::new(lmdb_kv::open(dir)),
        "sled" => Box::new(sled_kv::open(dir, cache)),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Box::new(rocks_kv::open(dir, cache)),
        "kstone" => Box::new(kstone_kv::open(dir)),
        other => panic!("unknown engine {other}"),
    }
}

fn dir_size(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return 0;
    };
    rd.filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Runs every workload on one engine; prints `phase ops seconds` lines.
fn child(engine: &str, base: &Path, n: u64, cache: usize) {
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

/// The device counters of a block device's `stat` file (the kernel's
/// Documentation/ABI/stat.rst order): write requests (field 5), sectors written (field 7)
/// and cache flushes (field 16); `None` if the file is missing or has fewer fields.
fn disk_stat(path: &Path) -> Option<[u64; 3]> {
    let s = std::fs::read_to_string(path).ok()?;
    let f: Vec<u64> = s
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    Some([*f.get(4)?, *f.get(6)?, *f.get(15)?])
}

/// The device's work per fillsync write, from the `stat` counters before and after the phase.
fn disk_note(before: &[u64; 3], after: &[u64; 3], writes: u64) -> String {
    let per = |i: usize| after[i].saturating_sub(before[i]) as f64 / writes.max(1) as f64;
    format!(
        "fillsync device per write: {:.2} write requests, {:.1} sectors, {:.2} flushes (whole device)",
        per(0),
        per(1),
        per(2)
    )
}

/// The spread of the fillsync writes' latencies (µs, in write order) in one `note` line: the
/// first write, quantiles, the slowest, and how much of the phase the writes over 1 ms took.
/// With 100 writes (10^5 before session 15) a few slow ones decided the row.
fn latency_note(lat: &[f64]) -> String {
    let mut s = lat.to_vec();
    s.sort_by(f64::total_cmp);
    let q = |f: f64| s.get(((s.len() as f64 * f) as usize).min(s.len().saturating_sub(1)));
    let total: f64 = lat.iter().sum();
    let slow: Vec<f64> = lat.iter().copied().filter(|&l| l > 1000.0).collect();
    let slow_sum: f64 = slow.iter().sum();
    format!(
        "fillsync µs per write: first {:.0}, p50 {:.0}, p90 {:.0}, p99 {:.0}, max {:.0}; {} of {} over 1 ms ({:.0}% of the phase)",
        lat.first().copied().unwrap_or(0.0),
        q(0.5).copied().unwrap_or(0.0),
        q(0.9).copied().unwrap_or(0.0),
        q(0.99).copied().unwrap_or(0.0),
        s.last().copied().unwrap_or(0.0),
        slow.len(),
        lat.len(),
        if total > 0.0 { 100.0 * slow_sum / total } else { 0.0 },
    )
}

/// Strata's flush and compaction bytes in one `note` line: write amplification
/// `(flushed + compacted) / flushed` (SST bytes only, not the WAL).
fn written_note(what: &str, w: &strata_lsm::Written) -> String {
    format!(
        "{what}: write-amp {:.2} (flushed {} MB, compacted {} MB in {} merges, moved {} MB in {} moves)",
        w.amplification(),
        w.flushed_bytes / 1_000_000,
        w.compacted_bytes / 1_000_000,
        w.compactions,
        w.moved_bytes / 1_000_000,
        w.moves
    )
}

/// Peak resident set size of this process (`VmHWM`), in bytes; 0 where unknown.
fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

const PHASES: [&str; 7] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "fillsync",
    "readrandom",
    "seekrandom",
    "readseq",
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let n: u64 = arg("--n")
        .map(|s| s.parse().expect("--n N"))
        .unwrap_or(1_000_000);
    let kstone_n: u64 = arg("--kstone-n")
        .map(|s| s.parse().expect("--kstone-n N"))
        .unwrap_or(20_000);
    let cache = arg("--cache-mb")
        .map(|s| s.parse::<usize>().expect("--cache-mb MB"))
        .unwrap_or(256)
        << 20;
    let base = PathBuf::from(arg("--dir").unwrap_or_else(|| "target/bench-lsm".into()));
    if let Some(engine) = arg("--child") {
        child(&engine, &base, n, cache);
        return;
    }
    let mut default_engines = vec!["strata", "strata-256", "fjall", "redb", "lmdb", "sled"];
    if cfg!(feature = "rocksdb") {
        default_engines.push("rocksdb");
    }
    default_engines.push("kstone");
    let engines: Vec<String> = match arg("--engines") {
        Some(s) => s.split(',').map(str::to_string).collect(),
        None => default_engines.iter().map(|s| s.to_string()).collect(),
    };
    let exe = std::env::current_exe().expect("exe");
    // results[engine][phase] = (ops, seconds)
    let mut results: BTreeMap<String, BTreeMap<String, (u64, f64)>> = BTreeMap::new();
    let mut notes = Vec::new();
    let mut wall = BTreeMap::new();
    for e in &engines {
        let en = if e == "kstone" { kstone_n } else { n };
        eprintln!("running {e} with {en} entries ...");
        let t = Instant::now();
        let out = Command::new(&exe)
            .args([
                "--child",
                e,
                "--n",
                &en.to_string(),
                "--cache-mb",
                &(cache >> 20).to_string(),
            ])
            .arg("--dir")
            .arg(&base)
            .output()
            .expect("spawn child");
        wall.insert(e.clone(), t.elapsed().as_secs_f64());
        if !out.status.success() {
            eprintln!("{e} failed: {}", String::from_utf8_lossy(&out.stderr));
            continue;
        }
        let r = results.entry(e.clone()).or_default();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if parts.first() == Some(&"note") {
                notes.push(format!("{e}: {}", parts[1..].join(" ")));
                continue;
            }
            if let [phase, ops, secs] = parts[..] {
                r.insert(
                    phase.to_string(),
                    (ops.parse().unwrap_or(0), secs.parse().unwrap_or(0.0)),
                );
            }
        }
    }
    let names: Vec<&String> = results.keys().collect();
    let order: Vec<&String> = engines.iter().filter(|e| names.contains(e)).collect();
    println!("N = {n} (kstone: {kstone_n}), 16-byte keys, 100-byte random values, batches of {BATCH}, cache {} MiB, one thread", cache >> 20);
    println!();
    print!("| workload |");
    for e in &order {
        print!(" {e} |");
    }
    println!();
    print!("|---|");
    for _ in &order {
        print!("---:|");
    }
    println!();
    let strata = results.get("strata").cloned().unwrap_or_default();
    for p in PHASES {
        print!("| {p} |");
        for e in &order {
            match results[*e].get(p) {
                Some(&(ops, s)) if s > 0.0 => {
                    let rate = ops as f64 / s;
                    let us = s * 1e6 / ops as f64;
                    match strata.get(p) {
                        Some(&(sops, ss)) if *e != "strata" && ss > 0.0 => {
                            let srate = sops as f64 / ss;
                            print!(" {rate:.0} ops/s, {us:.2} µs ({:.2}×) |", srate / rate);
                        }
                        _ => print!(" {rate:.0} ops/s, {us:.2} µs |"),
                    }
                }
                _ => print!(" n/a |"),
            }
        }
        println!();
    }
    print!("| on-disk after run |");
    for e in &order {
        match results[*e].get("size") {
            Some(&(b, _)) => print!(" {:.1} MB |", b as f64 / 1e6),
            None => print!(" n/a |"),
        }
    }
    println!();
    print!("| peak RSS |");
    for e in &order {
        match results[*e].get("rss") {
            Some(&(b, _)) if b > 0 => print!(" {:.0} MB |", b as f64 / 1e6),
            _ => print!(" n/a |"),
        }
    }
    println!();
    print!("| final sync |");
    for e in &order {
        match results[*e].get("sync") {
            Some(&(_, s)) => print!(" {:.1} ms |", s * 1e3),
            None => print!(" n/a |"),
        }
    }
    println!();
    print!("| process wall time |");
    for e in &order {
        print!(" {:.1} s |", wall.get(*e).copied().unwrap_or(0.0));
    }
    println!();
    println!();
    println!("(×) = Strata's throughput divided by the engine's: above 1 Strata is faster.");
    for note in notes {
        println!("note: {note}");
    }
}
