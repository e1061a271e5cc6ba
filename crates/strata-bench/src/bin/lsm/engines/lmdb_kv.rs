//! LMDB's adapter (heed).

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
