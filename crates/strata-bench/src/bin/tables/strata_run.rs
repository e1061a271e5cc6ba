//! The Strata side of the tables benchmark: one loaded table, read as often as asked.

use std::time::Instant;

use strata::{
    Batch, Db, DbOptions, Item, Key, KeyField, Query, Scan, SortCondition, Table, TableSchema,
};
use strata_key::{Kind, Value};

use super::{body, timed, user, Rate, Reads, Rng, Row, QUERIES};

/// Which Strata API a run uses.
#[derive(Clone, Copy, PartialEq)]
pub enum Api {
    /// `put_as` / `get_as` / `query_rows_as` / `scan_rows_as` with [`Row`].
    Typed,
    /// [`Item`]s.
    Items,
}

/// A loaded Strata table.
pub struct StrataRun {
    db: Db,
    t: Table,
    api: Api,
    parts: usize,
    per: usize,
}

impl StrataRun {
    /// Creates the table in `dir` (or in memory; `mmap_reads` as `DbOptions`), loads `parts × per` items in batches of
    /// 1,000, then flushes and compacts so that reads do not race background compaction.
    pub fn load(
        dir: &std::path::Path,
        parts: usize,
        per: usize,
        memory: bool,
        api: Api,
        mmap_reads: bool,
    ) -> (Self, Rate) {
        let db = if memory {
            Db::memory().expect("memory db")
        } else {
            let options = DbOptions {
                mmap_reads,
                ..DbOptions::default()
            };
            Db::open_with(dir, options).expect("open strata")
        };
        let t = db
            .create_table(
                TableSchema::new("items", vec![KeyField::new("user", Kind::Text)])
                    .with_sort(vec![KeyField::new("ts", Kind::Int)]),
            )
            .expect("create table");
        let n = parts * per;
        let before_load = strata_lsm::process_written();
        let load = timed(n as u64, || {
            let mut batch = Batch::new();
            for p in 0..parts {
                for s in 0..per {
                    if api == Api::Typed {
                        let row = Row {
                            user: user(p),
                            ts: s as i64,
                            body: body(p, s),
                            n: (p * per + s) as i64,
                        };
                        batch.put_as(&t, &row).expect("put");
                    } else {
                        let item = Item::new()
                            .with("user", user(p))
                            .with("ts", s as i64)
                            .with("body", body(p, s))
                            .with("n", (p * per + s) as i64);
                        batch.put(&t, &item).expect("put");
                    }
                    if batch.len() == 1000 {
                        db.write(std::mem::take(&mut batch)).expect("write");
                    }
                }
            }
            db.write(batch).expect("write");
        });
        // Let the LSM reach a steady state before the reads (flush the memtables, then
        // compact), so that reads do not race background compaction; reported apart.
        let loaded = strata_lsm::process_written();
        let settle = Instant::now();
        db.compact().expect("compact");
        eprintln!(
            "strata: flush + compaction after the load took {:?}",
            settle.elapsed()
        );
        if !memory {
            // Flush + compaction bytes of the load (background work done during it), then of
            // the full compaction after it: SST bytes written per byte flushed.
            let w = loaded.since(&before_load);
            let all = strata_lsm::process_written().since(&before_load);
            eprintln!(
                "strata: write amplification of the load {:.2} (flushed {} MB, compacted {} MB in {} merges, moved {} MB in {} moves); with the final full compaction {:.2}",
                w.amplification(),
                w.flushed_bytes / 1_000_000,
                w.compacted_bytes / 1_000_000,
                w.compactions,
                w.moved_bytes / 1_000_000,
                w.moves,
                all.amplification()
            );
        }
        let run = StrataRun {
            db,
            t,
            api,
            parts,
            per,
        };
        (run, load)
    }

    /// Items a query returns, read through the API under test: each row decoded and dropped
    /// in turn (`Rows`), as SQLite steps its statement and as the scans read. Until the sixth
    /// round this collected a page (`query_as` / `query`), which keeps every row alive at once.
    fn query_count(&self, q: &Query) -> usize {
        match self.api {
            Api::Typed => self
                .t
                .query_rows_as::<Row>(q)
                .expect("query")
                .map(|r| r.map(|_row: Row| ()).expect("row"))
                .count(),
            Api::Items => self
                .t
                .query_rows(q)
                .expect("query")
                .map(|r| r.map(|_item: Item| ()).expect("row"))
                .count(),
        }
    }

    /// A scan streams its segment from one snapshot, each row decoded and dropped in turn,
    /// as SQLite steps one statement over the range (`Rows`: bounded memory, no pages).
    fn scan_segment(&self, seg: u32, of: u32) -> usize {
        let s = Scan::segment(seg, of);
        let mut count = 0;
        match self.api {
            Api::Typed => {
                for r in self.t.scan_rows_as::<Row>(&s).expect("scan") {
                    let _row: Row = r.expect("row");
                    count += 1;
                }
            }
            Api::Items => {
                for r in self.t.scan_rows(&s).expect("scan") {
                    let _item: Item = r.expect("row");
                    count += 1;
                }
            }
        }
        count
    }

    /// One round of every read row (`gets` random point gets, at most twice the items).
    pub fn reads(&self, gets: usize) -> Reads {
        let (parts, per) = (self.parts, self.per);
        let n = parts * per;
        let mut rng = Rng(7);
        let gets = gets.min(n * 2);
        let get = timed(gets as u64, || {
            for _ in 0..gets {
                let (p, s) = (rng.below(parts), rng.below(per));
                let k = Key::new(vec![Value::from(user(p))], vec![Value::Int(s as i128)]);
                if self.api == Api::Typed {
                    let row: Row = self.t.get_as(&k).expect("get").expect("present");
                    debug_assert_eq!(row.n as usize, p * per + s);
                } else {
                    let it = self.t.get(&k).expect("get").expect("present");
                    debug_assert_eq!(it.value("n"), Some(&Value::Int((p * per + s) as i128)));
                }
            }
        });
        let query = timed(QUERIES, || {
            for _ in 0..QUERIES {
                let q = Query::new(vec![Value::from(user(rng.below(parts)))]).limit(100);
                assert_eq!(self.query_count(&q), per.min(100));
            }
        });
        let range = timed(QUERIES, || {
            for _ in 0..QUERIES {
                let q = Query::new(vec![Value::from(user(rng.below(parts)))]).sort(
                    SortCondition::Between(vec![Value::Int(20)], vec![Value::Int(39)]),
                );
                assert_eq!(self.query_count(&q), 20.min(per.saturating_sub(20)));
            }
        });
        let scan = timed(n as u64, || assert_eq!(self.scan_segment(0, 1), n));
        let scan4 = timed(n as u64, || {
            let total = strata_bench::parallel_sum(4, |i| self.scan_segment(i, 4));
            assert_eq!(total, n);
        });
        Reads {
            get,
            query,
            range,
            scan,
            scan4,
        }
    }

    /// Closes the database.
    pub fn close(self) {
        self.db.close().expect("close");
    }
}
