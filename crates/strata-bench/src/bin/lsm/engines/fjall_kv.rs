//! fjall's adapter.

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
