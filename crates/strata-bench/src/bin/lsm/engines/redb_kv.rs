//! redb's adapter.

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
