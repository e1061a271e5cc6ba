//! Several threads transfer money between accounts with optimistic transactions while others
//! query and scan: no update is lost (the sum is kept and every transfer is counted exactly
//! once) and no read is torn (every page is one snapshot, where the sum holds).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use strata::{Db, Item, Key, KeyField, Query, Scan, TableSchema};
use strata_key::{Kind, Value};

const ACCOUNTS: i64 = 16;
const START: i64 = 1_000;

fn int(it: &Item, name: &str) -> i64 {
    match it.value(name) {
        Some(Value::Int(b)) => *b as i64,
        other => panic!("bad {name}: {other:?}"),
    }
}

fn key(id: i64) -> Key {
    Key::new(vec![Value::from("b")], vec![Value::Int(id as i128)])
}

/// Runs the transfer workload; shared with the on-disk test.
pub fn run_transfers(db: &Db, writers: usize, transfers_per_writer: usize) {
    let t = db
        .create_table(
            TableSchema::new("accounts", vec![KeyField::new("bank", Kind::Text)])
                .with_sort(vec![KeyField::new("id", Kind::Int)]),
        )
        .unwrap();
    for id in 0..ACCOUNTS {
        t.put(
            &Item::new()
                .with("bank", "b")
                .with("id", id)
                .with("balance", START)
                .with("moves", 0),
        )
        .unwrap();
    }
    let done = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    // Stops the readers even when a writer panics (else the scope would wait for them forever).
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    let transfers = std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (t, done, reads) = (t.clone(), &done, &reads);
                s.spawn(move || {
                    while !done.load(Ordering::Acquire) {
                        let items = if r == 0 {
                            t.query(&Query::new(vec![Value::from("b")])).unwrap().items
                        } else {
                            t.scan(&Scan::all()).unwrap().items
                        };
                        assert_eq!(items.len(), ACCOUNTS as usize);
                        let sum: i64 = items.iter().map(|i| int(i, "balance")).sum();
                        assert_eq!(sum, ACCOUNTS * START, "torn read");
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        let writers: Vec<_> = (0..writers)
            .map(|w| {
                let (t, db) = (t.clone(), db.clone());
                s.spawn(move || {
                    let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(w as u64 + 1);
                    let mut done = 0u64;
                    for _ in 0..transfers_per_writer {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let from = (x % ACCOUNTS as u64) as i64;
                        let to = ((x >> 20) % ACCOUNTS as u64) as i64;
                        let amount = ((x >> 40) % 50) as i64;
                        if from == to {
                            continue;
                        }
                        db.transaction(|tx| {
                            let a = tx.get(&t, &key(from))?.expect("account");
                            let b = tx.get(&t, &key(to))?.expect("account");
                            let a2 = a
                                .clone()
                                .with("balance", int(&a, "balance") - amount)
                                .with("moves", int(&a, "moves") + 1);
                            let b2 = b
                                .clone()
                                .with("balance", int(&b, "balance") + amount)
                                .with("moves", int(&b, "moves") + 1);
                            tx.put(&t, &a2)?;
                            tx.put(&t, &b2)?;
                            Ok(())
                        })
                        .unwrap_or_else(|e| panic!("transfer {from} -> {to}: {e}"));
                        done += 1;
                    }
                    done
                })
            })
            .collect();
        let stop = StopOnDrop(&done);
        let n: u64 = writers.into_iter().map(|h| h.join().unwrap()).sum();
        drop(stop);
        for r in readers {
            r.join().unwrap();
        }
        n
    });
    let items = t.scan(&Scan::all()).unwrap().items;
    let sum: i64 = items.iter().map(|i| int(i, "balance")).sum();
    let moves: i64 = items.iter().map(|i| int(i, "moves")).sum();
    assert_eq!(sum, ACCOUNTS * START);
    assert_eq!(moves as u64, 2 * transfers, "lost update");
    assert!(reads.load(Ordering::Relaxed) > 0);
}

#[test]
fn transfers_keep_the_sum_in_memory() {
    let db = Db::memory().unwrap();
    run_transfers(&db, 4, 400);
}
