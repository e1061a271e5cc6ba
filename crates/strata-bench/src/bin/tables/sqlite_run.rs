//! The SQLite side of the tables benchmark: a `WITHOUT ROWID` table with the same composite
//! primary key, WAL mode, `synchronous = FULL`.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};

use super::{body, timed, user, Rate, Reads, Rng, QUERIES};

/// A loaded SQLite table.
pub struct SqliteRun {
    c: Connection,
    path: PathBuf,
    parts: usize,
    per: usize,
}

type SqlRow = (String, i64, String, i64);

fn open(path: &Path) -> Connection {
    let c = Connection::open(path).expect("open sqlite");
    c.pragma_update(None, "journal_mode", "WAL").expect("wal");
    c.pragma_update(None, "synchronous", "FULL").expect("sync");
    c
}

/// Reads every row into owned values (as the other databases return owned items).
fn count(mut rows: rusqlite::Rows<'_>) -> usize {
    let mut c = 0;
    while let Some(r) = rows.next().expect("row") {
        let _row: SqlRow = (
            r.get(0).expect("col"),
            r.get(1).expect("col"),
            r.get(2).expect("col"),
            r.get(3).expect("col"),
        );
        c += 1;
    }
    c
}

fn scan_range(conn: &Connection, lo: usize, hi: usize) -> usize {
    let mut st = conn
        .prepare(
            "SELECT user, ts, body, n FROM items WHERE user >= ?1 AND user < ?2 ORDER BY user, ts",
        )
        .expect("prep");
    let rows = st.query(params![user(lo), user(hi)]).expect("scan");
    count(rows)
}

impl SqliteRun {
    /// Creates the table in `dir/bench.sqlite` and loads `parts × per` rows, one
    /// transaction per 1,000.
    pub fn load(dir: &Path, parts: usize, per: usize) -> (Self, Rate) {
        std::fs::create_dir_all(dir).expect("sqlite dir");
        let path = dir.join("bench.sqlite");
        let mut c = open(&path);
        c.execute_batch(
            "CREATE TABLE items (user TEXT NOT NULL, ts INTEGER NOT NULL, body TEXT, n INTEGER, PRIMARY KEY (user, ts)) WITHOUT ROWID",
        )
        .expect("create");
        let n = parts * per;
        let load = timed(n as u64, || {
            let mut i = 0;
            while i < n {
                let tx = c.transaction().expect("tx");
                {
                    let mut st = tx
                        .prepare_cached("INSERT OR REPLACE INTO items VALUES (?1, ?2, ?3, ?4)")
                        .expect("prep");
                    for j in i..(i + 1000).min(n) {
                        let (p, s) = (j / per, j % per);
                        st.execute(params![user(p), s as i64, body(p, s), j as i64])
                            .expect("insert");
                    }
                }
                tx.commit().expect("commit");
                i += 1000;
            }
        });
        let run = SqliteRun {
            c,
            path,
            parts,
            per,
        };
        (run, load)
    }

    /// One round of every read row (`gets` random point gets, at most twice the items).
    pub fn reads(&self, gets: usize) -> Reads {
        let (c, parts, per) = (&self.c, self.parts, self.per);
        let n = parts * per;
        let mut rng = Rng(7);
        let gets = gets.min(n * 2);
        let get = timed(gets as u64, || {
            let mut st = c
                .prepare_cached("SELECT user, ts, body, n FROM items WHERE user = ?1 AND ts = ?2")
                .expect("prep");
            for _ in 0..gets {
                let (p, s) = (rng.below(parts), rng.below(per));
                let row: SqlRow = st
                    .query_row(params![user(p), s as i64], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                    })
                    .expect("get");
                debug_assert_eq!(row.3 as usize, p * per + s);
            }
        });
        let query = timed(QUERIES, || {
            let mut st = c
                .prepare_cached(
                    "SELECT user, ts, body, n FROM items WHERE user = ?1 ORDER BY ts LIMIT 100",
                )
                .expect("prep");
            for _ in 0..QUERIES {
                let rows = st.query(params![user(rng.below(parts))]).expect("query");
                assert_eq!(count(rows), per.min(100));
            }
        });
        let range = timed(QUERIES, || {
            let mut st = c
                .prepare_cached("SELECT user, ts, body, n FROM items WHERE user = ?1 AND ts BETWEEN 20 AND 39 ORDER BY ts")
                .expect("prep");
            for _ in 0..QUERIES {
                let rows = st.query(params![user(rng.below(parts))]).expect("query");
                assert_eq!(count(rows), 20.min(per.saturating_sub(20)));
            }
        });
        let scan = timed(n as u64, || assert_eq!(scan_range(c, 0, parts), n));
        let path = &self.path;
        let scan4 = timed(n as u64, || {
            let total = strata_bench::parallel_sum(4, |i| {
                let (i, conn) = (i as usize, open(path));
                scan_range(&conn, parts * i / 4, parts * (i + 1) / 4)
            });
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
}
