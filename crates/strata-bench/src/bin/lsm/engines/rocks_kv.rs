//! RocksDB's adapter (`--features rocksdb`).

use super::*;
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, IteratorMode, Options, WriteBatch, WriteOptions,
    DB,
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
