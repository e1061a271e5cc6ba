//! The KeystoneDB side of the tables benchmark (`kstone-api` 0.1.0, which fsyncs every put).

use std::collections::HashMap;
use std::path::Path;

use kstone_api::{Database, KeystoneValue as KV, Query as KQuery, Scan as KScan};

use super::{body, timed, user, Rate, Reads, Rng};

/// A loaded KeystoneDB database.
pub struct KstoneRun {
    db: Database,
    parts: usize,
    per: usize,
}

/// Sort keys as 4-byte big-endian integers so that KeystoneDB's byte order is numeric order.
fn sk(s: usize) -> [u8; 4] {
    (s as u32).to_be_bytes()
}

impl KstoneRun {
    /// Creates the database in `dir/kstone` and puts `parts × per` items one by one.
    pub fn load(dir: &Path, parts: usize, per: usize) -> (Self, Rate) {
        let db = Database::create(dir.join("kstone")).expect("create kstone");
        let n = parts * per;
        let load = timed(n as u64, || {
            for p in 0..parts {
                for s in 0..per {
                    let mut item: HashMap<String, KV> = HashMap::new();
                    item.insert("body".into(), KV::S(body(p, s)));
                    item.insert("n".into(), KV::N((p * per + s).to_string()));
                    db.put_with_sk(user(p).as_bytes(), &sk(s), item)
                        .expect("put");
                }
            }
        });
        (KstoneRun { db, parts, per }, load)
    }

    /// One round of every read row.
    pub fn reads(&self) -> Reads {
        let (db, parts, per) = (&self.db, self.parts, self.per);
        let n = parts * per;
        let mut rng = Rng(7);
        let gets = 20_000.min(n * 2);
        let get = timed(gets as u64, || {
            for _ in 0..gets {
                let (p, s) = (rng.below(parts), rng.below(per));
                db.get_with_sk(user(p).as_bytes(), &sk(s))
                    .expect("get")
                    .expect("present");
            }
        });
        let queries = 2_000;
        let query = timed(queries, || {
            for _ in 0..queries {
                let r = db
                    .query(KQuery::new(user(rng.below(parts)).as_bytes()).limit(100))
                    .expect("query");
                assert_eq!(r.items.len(), per.min(100));
            }
        });
        let range = timed(queries, || {
            for _ in 0..queries {
                let r = db
                    .query(
                        KQuery::new(user(rng.below(parts)).as_bytes()).sk_between(&sk(20), &sk(39)),
                    )
                    .expect("query");
                assert_eq!(r.items.len(), 20.min(per.saturating_sub(20)));
            }
        });
        let scan = timed(n as u64, || {
            let r = db.scan(KScan::new()).expect("scan");
            assert_eq!(r.items.len(), n);
        });
        let scan4 = timed(n as u64, || {
            let total = strata_bench::parallel_sum(4, |i| {
                db.scan(KScan::new().segment(i as usize, 4))
                    .expect("scan")
                    .items
                    .len()
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
