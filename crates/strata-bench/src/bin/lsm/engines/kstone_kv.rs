//! kstone's adapter (0.1.0: no atomic batch, no seek).

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
