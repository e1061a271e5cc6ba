//! Issue 8 point 7, "`table scan`/`query` stream with bounded memory": `Table::scan_rows` and
//! `Table::query_rows` pull items from the engine as they are read, so the CLI, which prints
//! each item as it comes, holds one item at a time (measured: a 1M-item `strata table scan`
//! peaks at ~87 MB RSS, most of it the block cache; see the issue-8 note).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use strata::{Batch, Db, Item, KeyField, Query, Scan, TableSchema};
use strata_key::{Kind, Value};
use strata_lsm::{Cursor, Direction, Engine, KeyRange, KvIter, MemEngine, Snapshot, WriteBatch};

/// An engine that counts the records its range iterators and cursors have handed out.
struct CountingEngine {
    inner: MemEngine,
    pulled: Arc<AtomicUsize>,
}

impl Engine for CountingEngine {
    fn get(&self, key: &[u8]) -> strata_lsm::Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn write(&self, batch: WriteBatch) -> strata_lsm::Result<()> {
        self.inner.write(batch)
    }
    fn snapshot(&self) -> strata_lsm::Result<Arc<dyn Snapshot>> {
        self.inner.snapshot()
    }
    fn range(&self, range: KeyRange, direction: Direction) -> strata_lsm::Result<KvIter> {
        let pulled = Arc::clone(&self.pulled);
        let iter = self.inner.range(range, direction)?;
        Ok(Box::new(iter.inspect(move |_| {
            pulled.fetch_add(1, Ordering::Relaxed);
        })))
    }
    fn cursor(&self, range: KeyRange, direction: Direction) -> strata_lsm::Result<Box<dyn Cursor>> {
        let inner = self.inner.cursor(range, direction)?;
        self.pulled.fetch_add(1, Ordering::Relaxed); // the pair it stands at
        Ok(Box::new(CountingCursor {
            inner,
            pulled: Arc::clone(&self.pulled),
        }))
    }
    fn flush(&self) -> strata_lsm::Result<()> {
        self.inner.flush()
    }
    fn compact(&self) -> strata_lsm::Result<()> {
        self.inner.compact()
    }
    fn close(&self) -> strata_lsm::Result<()> {
        self.inner.close()
    }
}

/// A cursor that counts the pairs it moves to.
struct CountingCursor {
    inner: Box<dyn Cursor>,
    pulled: Arc<AtomicUsize>,
}

impl Cursor for CountingCursor {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn next(&mut self) -> strata_lsm::Result<()> {
        self.pulled.fetch_add(1, Ordering::Relaxed);
        self.inner.next()
    }
    fn seek(&mut self, key: &[u8]) -> strata_lsm::Result<()> {
        self.pulled.fetch_add(1, Ordering::Relaxed);
        self.inner.seek(key)
    }
    fn rewind(&mut self) -> strata_lsm::Result<()> {
        self.pulled.fetch_add(1, Ordering::Relaxed);
        self.inner.rewind()
    }
    fn direction(&self) -> Direction {
        self.inner.direction()
    }
}

#[test]
fn scan_rows_and_query_rows_read_the_engine_as_they_go() {
    let pulled = Arc::new(AtomicUsize::new(0));
    let engine = Arc::new(CountingEngine {
        inner: MemEngine::new(),
        pulled: Arc::clone(&pulled),
    });
    let db = Db::with_engine(engine).unwrap();
    let schema = TableSchema::new("t", vec![KeyField::new("p", Kind::Text)])
        .with_sort(vec![KeyField::new("n", Kind::Int)]);
    let t = db.create_table(schema).unwrap();
    let n = 5000;
    let mut b = Batch::new();
    for i in 0..n {
        let item = Item::new().with("p", "x").with("n", Value::Int(i as i128));
        b.put(&t, &item).unwrap();
    }
    db.write(b).unwrap();

    let scan = || t.scan_rows(&Scan::all()).unwrap();
    let query = || t.query_rows(&Query::new(vec![Value::from("x")])).unwrap();
    for (what, rows) in [
        ("scan_rows", Box::new(scan) as Box<dyn Fn() -> strata::Rows>),
        ("query_rows", Box::new(query)),
    ] {
        pulled.store(0, Ordering::Relaxed);
        let mut rows = rows();
        for _ in 0..3 {
            rows.next().unwrap().unwrap();
        }
        let early = pulled.load(Ordering::Relaxed);
        assert!(
            early <= 10,
            "{what}: {early} records read for the first 3 items"
        );
        assert_eq!(rows.count() + 3, n, "{what}");
        assert!(pulled.load(Ordering::Relaxed) >= n, "{what}");
    }
}
