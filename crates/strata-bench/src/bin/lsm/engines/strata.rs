//! Strata's adapter: the configuration `strata kv` creates, or with stripes / without the map.

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
