//! The etcd engine against a real cluster (`STRATA_ETCD_ENDPOINTS`; skipped, saying so, when
//! unset): condition mapping, batch reduction and limits, large values, namespaces, paging in
//! windows over many keys, snapshots and compaction, calls from inside a tokio runtime, and a
//! cluster that cannot be reached.

mod common;

use std::ops::Bound;
use std::time::{Duration, Instant};

use strata_etcd::{EtcdEngine, EtcdOptions};
use strata_lsm::{Condition, Direction, Engine, Error, KeyRange, WriteBatch};

fn all(e: &dyn Engine, dir: Direction) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.range(KeyRange::all(), dir)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn conditions_map_to_compares() {
    let Some(e) = common::fresh("conditions") else {
        return;
    };
    strata_lsm::engine::put(&*e, b"present", b"v").unwrap();
    let cases: Vec<(Condition, bool)> = vec![
        (Condition::Absent(b"missing".to_vec()), true),
        (Condition::Absent(b"present".to_vec()), false),
        (Condition::Present(b"present".to_vec()), true),
        (Condition::Present(b"missing".to_vec()), false),
        (
            Condition::Equals(b"present".to_vec(), Some(b"v".to_vec())),
            true,
        ),
        (
            Condition::Equals(b"present".to_vec(), Some(b"w".to_vec())),
            false,
        ),
        (
            Condition::Equals(b"present".to_vec(), Some(Vec::new())),
            false,
        ),
        (
            Condition::Equals(b"missing".to_vec(), Some(Vec::new())),
            false,
        ),
        (Condition::Equals(b"missing".to_vec(), None), true),
        (Condition::Equals(b"present".to_vec(), None), false),
    ];
    for (i, (c, holds)) in cases.into_iter().enumerate() {
        let mut b = WriteBatch::new();
        // A holding condition first: the error must name the failing one (index 1).
        b.require(Condition::Present(b"present".to_vec()));
        b.require(c.clone());
        b.put(format!("out{i}"), "x");
        match e.write(b) {
            Ok(()) => assert!(holds, "{c:?} applied although it does not hold"),
            Err(Error::ConditionFailed { index, reason }) => {
                assert!(!holds, "{c:?} failed although it holds");
                assert_eq!(index, 1, "{reason}");
            }
            Err(other) => panic!("{c:?}: {other}"),
        }
        assert_eq!(
            e.get(format!("out{i}").as_bytes()).unwrap().is_some(),
            holds
        );
    }
    // An empty value is a present key.
    strata_lsm::engine::put(&*e, b"empty", b"").unwrap();
    let mut b = WriteBatch::new();
    b.require(Condition::Present(b"empty".to_vec()));
    b.require(Condition::Equals(b"empty".to_vec(), Some(Vec::new())));
    e.write(b).unwrap();
}

#[test]
fn a_batch_keeps_the_last_op_per_key_and_empty_keys_work() {
    let Some(e) = common::fresh("last_op") else {
        return;
    };
    let mut b = WriteBatch::new();
    b.put("k", "1")
        .delete("k")
        .put("k", "2")
        .put("", "empty key")
        .put("d", "x")
        .delete("d");
    e.write(b).unwrap();
    assert_eq!(
        all(&*e, Direction::Forward),
        vec![
            (b"".to_vec(), b"empty key".to_vec()),
            (b"k".to_vec(), b"2".to_vec())
        ]
    );
}

#[test]
fn batches_beyond_the_limits_are_refused_whole() {
    let Some(e) = common::fresh("limits") else {
        return;
    };
    let mut b = WriteBatch::new();
    for i in 0..129u32 {
        b.put(i.to_be_bytes(), "v");
    }
    let err = e.write(b).unwrap_err();
    assert!(matches!(err, Error::TooLarge(_)), "{err}");
    assert!(err.to_string().contains("--max-txn-ops"), "{err}");
    let mut b = WriteBatch::new();
    b.put("big", vec![7u8; 1600 * 1024]);
    let err = e.write(b).unwrap_err();
    assert!(err.to_string().contains("--max-request-bytes"), "{err}");
    assert!(all(&*e, Direction::Forward).is_empty(), "nothing written");
    // Exactly the limit passes.
    let mut b = WriteBatch::new();
    for i in 0..128u32 {
        b.put(i.to_be_bytes(), "v");
    }
    e.write(b).unwrap();
    assert_eq!(all(&*e, Direction::Forward).len(), 128);
    let l = e.batch_limits();
    assert_eq!(l.max_ops, 128);
    assert!(l.admits(128, 1 << 20) && !l.admits(129, 10) && !l.admits(1, 1536 * 1024));
}

#[test]
fn the_servers_own_refusal_is_too_large_too() {
    // The engine believes the server takes 1000 ops; the server (default 128) refuses.
    let Some(e) = common::fresh_with("server_limit", |o| o.max_txn_ops = 1000) else {
        return;
    };
    let mut b = WriteBatch::new();
    for i in 0..200u32 {
        b.put(i.to_be_bytes(), "v");
    }
    let err = e.write(b).unwrap_err();
    assert!(matches!(err, Error::TooLarge(_)), "{err}");
    assert!(all(&*e, Direction::Forward).is_empty());
}

#[test]
fn responses_over_four_mib_are_decoded() {
    let Some(e) = common::fresh("big_values") else {
        return;
    };
    for i in 0..5u8 {
        strata_lsm::engine::put(&*e, &[i], &vec![i; 1200 * 1024]).unwrap();
    }
    // Pages of up to 1000 pairs would make one ~6 MiB answer; the page shrinks by bytes, but
    // even one answer over 4 MiB must decode.
    let got = all(&*e, Direction::Forward);
    assert_eq!(got.len(), 5);
    assert!(got
        .iter()
        .all(|(k, v)| v.len() == 1200 * 1024 && v[0] == k[0]));
    let Some(big) = common::fresh_with("big_page", |o| o.page_bytes = 64 << 20) else {
        return;
    };
    for i in 0..5u8 {
        strata_lsm::engine::put(&*big, &[i], &vec![i; 1200 * 1024]).unwrap();
    }
    assert_eq!(all(&*big, Direction::Reverse).len(), 5);
}

#[test]
fn namespaces_do_not_see_each_other() {
    let Some(eps) = common::endpoints("namespaces") else {
        return;
    };
    let base = common::unique_prefix("ns");
    let a =
        common::Fresh(EtcdEngine::connect(EtcdOptions::new(eps.clone(), base.clone())).unwrap());
    let ab = common::Fresh(
        EtcdEngine::connect(EtcdOptions::new(eps.clone(), format!("{base}/b"))).unwrap(),
    );
    let a2 = common::Fresh(EtcdEngine::connect(EtcdOptions::new(eps, format!("{base}2"))).unwrap());
    strata_lsm::engine::put(&*a, b"k", b"a").unwrap();
    strata_lsm::engine::put(&*ab, b"k", b"ab").unwrap();
    strata_lsm::engine::put(&*a2, b"k", b"a2").unwrap();
    for (e, v) in [(&a, "a"), (&ab, "ab"), (&a2, "a2")] {
        assert_eq!(
            all(&**e, Direction::Forward),
            vec![(b"k".to_vec(), v.as_bytes().to_vec())]
        );
        assert_eq!(all(&**e, Direction::Reverse).len(), 1);
    }
}

/// Keys spread evenly (like hashed partitions) or bunched (like one partition's sort keys):
/// windows must adapt to both and never lose or repeat a pair.
#[test]
fn many_keys_page_through_windows_both_ways() {
    let Some(e) = common::fresh_with("many_keys", |o| o.page_items = 50) else {
        return;
    };
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for i in 0..1500u32 {
        keys.push(crc(i).to_be_bytes().to_vec()); // spread over the space
        let mut k = b"user7/".to_vec();
        k.extend_from_slice(&i.to_be_bytes()); // bunched: one prefix, dense tail
        keys.push(k);
    }
    keys.sort();
    keys.dedup();
    for chunk in keys.chunks(128) {
        let mut b = WriteBatch::new();
        for k in chunk {
            b.put(k.clone(), k.clone());
        }
        e.write(b).unwrap();
    }
    let fwd: Vec<Vec<u8>> = all(&*e, Direction::Forward)
        .into_iter()
        .map(|p| p.0)
        .collect();
    assert_eq!(fwd, keys);
    let mut rev: Vec<Vec<u8>> = all(&*e, Direction::Reverse)
        .into_iter()
        .map(|p| p.0)
        .collect();
    rev.reverse();
    assert_eq!(rev, keys);
    // Sub-ranges with every kind of bound.
    let mut seed = 1u32;
    for _ in 0..40 {
        seed = crc(seed);
        let a = keys[seed as usize % keys.len()].clone();
        seed = crc(seed);
        let b = keys[seed as usize % keys.len()].clone();
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let r = KeyRange {
            start: if seed.is_multiple_of(2) {
                Bound::Included(lo.clone())
            } else {
                Bound::Excluded(lo.clone())
            },
            end: if seed.is_multiple_of(3) {
                Bound::Included(hi.clone())
            } else {
                Bound::Excluded(hi.clone())
            },
        };
        let want: Vec<Vec<u8>> = keys.iter().filter(|k| r.contains(k)).cloned().collect();
        for dir in [Direction::Forward, Direction::Reverse] {
            let mut got: Vec<Vec<u8>> = e
                .range(r.clone(), dir)
                .unwrap()
                .map(|p| p.unwrap().0)
                .collect();
            if dir == Direction::Reverse {
                got.reverse();
            }
            assert_eq!(got, want, "{r:?} {dir:?}");
        }
    }
    let p: Vec<_> = e
        .range(KeyRange::prefix(b"user7/"), Direction::Reverse)
        .unwrap()
        .take(3)
        .map(|p| p.unwrap().0)
        .collect();
    assert_eq!(
        p[0],
        [b"user7/".as_slice(), &1499u32.to_be_bytes()].concat()
    );
}

fn crc(i: u32) -> u32 {
    // A cheap mixer (splitmix32-ish) to spread keys.
    let mut z = i.wrapping_add(0x9e37_79b9);
    z = (z ^ (z >> 16)).wrapping_mul(0x85eb_ca6b);
    z = (z ^ (z >> 13)).wrapping_mul(0xc2b2_ae35);
    z ^ (z >> 16)
}

#[test]
fn a_snapshot_older_than_a_compaction_says_so() {
    let Some(e) = common::fresh("compacted") else {
        return;
    };
    for i in 0..10u8 {
        strata_lsm::engine::put(&*e, &[i], b"old").unwrap();
    }
    let snap = e.snapshot().unwrap();
    for i in 0..10u8 {
        strata_lsm::engine::put(&*e, &[i], b"new").unwrap();
    }
    // Our own compaction keeps the snapshot readable...
    e.compact().unwrap();
    assert_eq!(snap.get(&[3]).unwrap(), Some(b"old".to_vec()));
    // ...another client's does not: compact past it with the raw client, as another process
    // (or etcd's auto-compaction) would.
    let eps: Vec<String> = e
        .options()
        .endpoints
        .iter()
        .map(|h| format!("http://{h}"))
        .collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let now = e.revision().unwrap();
    rt.block_on(async {
        let mut c = etcd_client::Client::connect(&eps, None).await.unwrap();
        c.compact(now, None).await.unwrap();
    });
    let err = snap.get(&[3]).unwrap_err();
    assert!(matches!(err, Error::SnapshotTooOld(_)), "{err}");
    assert!(err.to_string().contains("compacted"), "{err}");
    // Each member applies the compaction in turn: a member that has not yet may still answer
    // at the old revision (correctly); within a few seconds every member refuses.
    let deadline = Instant::now() + Duration::from_secs(5);
    let err = loop {
        match snap
            .range(KeyRange::all(), Direction::Forward)
            .unwrap()
            .next()
        {
            Some(Err(e)) => break e,
            other if Instant::now() > deadline => panic!("still readable: {other:?}"),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    assert!(matches!(err, Error::SnapshotTooOld(_)), "{err}");
    // The engine itself reads on.
    assert_eq!(e.get(&[3]).unwrap(), Some(b"new".to_vec()));
}

#[test]
fn closed_engine_refuses_calls() {
    let Some(e) = common::fresh("closed") else {
        return;
    };
    e.close().unwrap();
    assert!(matches!(e.get(b"k"), Err(Error::Closed)));
    assert!(matches!(
        strata_lsm::engine::put(&*e, b"k", b"v"),
        Err(Error::Closed)
    ));
}

#[test]
fn an_unreachable_cluster_fails_within_the_timeout_in_one_line() {
    // Port 1 on loopback: nothing listens (connection refused at once).
    let mut o = EtcdOptions::new(vec!["127.0.0.1:1".into(), "127.0.0.1:2".into()], "x");
    o.timeout = Duration::from_millis(1500);
    let t = Instant::now();
    let err = EtcdEngine::connect(o).err().expect("no cluster there");
    let took = t.elapsed();
    let msg = err.to_string();
    assert!(matches!(err, Error::Unavailable(_)), "{msg}");
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.contains("127.0.0.1:1"), "{msg}");
    eprintln!("unreachable cluster: {msg} ({took:?})");
}

#[test]
fn the_engine_works_inside_a_tokio_runtime() {
    let Some(opts) = common::options("in_runtime") else {
        return;
    };
    for flavor in ["current_thread", "multi_thread"] {
        let rt = match flavor {
            "current_thread" => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            _ => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build(),
        }
        .unwrap();
        let o = opts.clone();
        rt.block_on(async move {
            // Opened, used and dropped inside async code: no "runtime within a runtime" panic.
            let e = EtcdEngine::connect(o).unwrap();
            strata_lsm::engine::put(&e, b"k", flavor.as_bytes()).unwrap();
            assert_eq!(e.get(b"k").unwrap(), Some(flavor.as_bytes().to_vec()));
            let n = e
                .range(KeyRange::all(), Direction::Reverse)
                .unwrap()
                .count();
            assert_eq!(n, 1);
            let s = e.snapshot().unwrap();
            assert!(s.get(b"k").unwrap().is_some());
            // From a spawned task too.
            let e = std::sync::Arc::new(e);
            let e2 = e.clone();
            tokio::spawn(async move { e2.get(b"k").unwrap() })
                .await
                .unwrap();
            e.delete_all().unwrap();
            drop(s);
            drop(e);
        });
    }
}
