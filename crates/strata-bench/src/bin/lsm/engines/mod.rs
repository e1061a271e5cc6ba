//! The engine adapters: one module per engine, each implementing [`Kv`].

use std::path::Path;

mod fjall_kv;
mod kstone_kv;
mod lmdb_kv;
mod redb_kv;
#[cfg(feature = "rocksdb")]
mod rocks_kv;
mod sled_kv;
mod strata;

/// What a benchmarked engine must do.
pub trait Kv {
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

/// The engines `open` knows (the names `--engines` and `--child` accept).
pub const NAMES: &[&str] = &[
    "strata",
    "strata-pread",
    "strata-256",
    "fjall",
    "redb",
    "lmdb",
    "sled",
    #[cfg(feature = "rocksdb")]
    "rocksdb",
    "kstone",
];

/// Opens `engine` (a name of `--engines`, one of `NAMES`) in `dir`.
pub fn open(engine: &str, dir: &Path, cache: usize) -> Box<dyn Kv> {
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
