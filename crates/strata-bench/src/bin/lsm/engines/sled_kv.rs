//! sled's adapter.

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
