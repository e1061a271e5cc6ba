//! Large ranges on a real cluster (`STRATA_ETCD_ENDPOINTS`; skipped, saying so, when unset):
//! a short read of a large range makes the server walk a window, not the whole range; a full
//! scan walks each key about once; deleting a namespace goes in bounded, resumable requests.

mod common;

use strata_lsm::{Direction, Engine, Error, KeyRange, WriteBatch};

const N: u32 = 20_000;

fn mix(i: u32) -> u64 {
    // splitmix64: keys spread over the whole key space.
    let mut z = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn load(e: &dyn Engine, keys: &[Vec<u8>]) {
    for chunk in keys.chunks(128) {
        let mut b = WriteBatch::new();
        for k in chunk {
            b.put(k.clone(), b"v");
        }
        e.write(b).unwrap();
    }
}

fn spread_keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..N).map(|i| mix(i).to_be_bytes().to_vec()).collect();
    keys.sort();
    keys
}

fn first(e: &dyn Engine, r: KeyRange, dir: Direction, n: usize) -> Vec<Vec<u8>> {
    e.range(r, dir)
        .unwrap()
        .take(n)
        .map(|p| p.unwrap().0)
        .collect()
}

#[test]
fn a_short_read_of_a_large_range_walks_a_window_not_the_range() {
    let Some(e) = common::fresh("short_read") else {
        return;
    };
    let keys = spread_keys();
    load(&*e, &keys);
    // Without the probe, the first request of each forward read below walks all 20,000 keys
    // (or the ~10,000 after the middle key); with it, about 1/64 of them.
    let bound = (N / 64 * 3) as u64;
    let got = first(&*e, KeyRange::all(), Direction::Forward, 100);
    assert_eq!(got, keys[..100]);
    let s = e.range_stats();
    assert!(s.max_walked <= bound, "forward: {s:?}");
    // A cursor seek into the middle: a window of what is left.
    let mid = keys[N as usize / 2].clone();
    let mut c = e.cursor(KeyRange::all(), Direction::Forward).unwrap();
    c.seek(&mid).unwrap();
    assert_eq!(c.key(), mid.as_slice());
    c.next().unwrap();
    assert_eq!(c.key(), keys[N as usize / 2 + 1].as_slice());
    let s = e.range_stats();
    assert!(s.max_walked <= bound, "seek: {s:?}");
    // Reverse reads do not probe (see range.rs): their first request walks the range once.
    let got = first(&*e, KeyRange::all(), Direction::Reverse, 100);
    let want: Vec<_> = keys.iter().rev().take(100).cloned().collect();
    assert_eq!(got, want);
    let s = e.range_stats();
    assert!(s.max_walked <= N as u64, "reverse: {s:?}");
}

#[test]
fn full_scans_walk_each_key_about_once_both_ways() {
    let Some(e) = common::fresh("full_scan") else {
        return;
    };
    let keys = spread_keys();
    load(&*e, &keys);
    let before = e.range_stats();
    let fwd = first(&*e, KeyRange::all(), Direction::Forward, usize::MAX);
    assert_eq!(fwd, keys);
    let mut rev = first(&*e, KeyRange::all(), Direction::Reverse, usize::MAX);
    rev.reverse();
    assert_eq!(rev, keys);
    let s = e.range_stats();
    let walked = s.keys_walked - before.keys_walked;
    // Two scans of N keys; plain paging by 1000 would walk ~N²/2000 = 200,000 per scan.
    assert!(walked <= 6 * N as u64, "{s:?} (walked {walked})");
}

#[test]
fn crowded_keys_read_right_both_ways() {
    let Some(e) = common::fresh("crowded") else {
        return;
    };
    // Keys that differ only past the 8 bytes the windows interpolate on, among spread ones.
    // Read right; not cheaply: every request that touches the crowd walks all of it (see
    // docs/etcd.md, "Windows").
    let mut keys = spread_keys();
    keys.truncate(2000);
    for i in 0..3000u32 {
        keys.push([b"crowded/".as_slice(), &i.to_be_bytes()].concat());
    }
    keys.sort();
    load(&*e, &keys);
    let fwd = first(&*e, KeyRange::all(), Direction::Forward, usize::MAX);
    assert_eq!(fwd, keys);
    let mut rev = first(&*e, KeyRange::all(), Direction::Reverse, usize::MAX);
    rev.reverse();
    assert_eq!(rev, keys);
    let crowded: Vec<_> = keys
        .iter()
        .filter(|k| k.starts_with(b"crowded/"))
        .cloned()
        .collect();
    let got = first(&*e, KeyRange::prefix(b"crowded/"), Direction::Forward, 5);
    assert_eq!(got, crowded[..5]);
    let got = first(&*e, KeyRange::prefix(b"crowded/"), Direction::Reverse, 5);
    let want: Vec<_> = crowded.iter().rev().take(5).cloned().collect();
    assert_eq!(got, want);
}

#[test]
fn delete_all_goes_in_bounded_requests_and_a_rerun_finishes() {
    let Some(e) = common::fresh("delete_chunks") else {
        return;
    };
    let keys: Vec<Vec<u8>> = (0..1000u32).map(|i| i.to_be_bytes().to_vec()).collect();
    load(&*e, &keys);
    // Stopped after three requests of at most 64 keys: the 192 smallest keys are gone, the
    // rest is intact.
    let mut steps = Vec::new();
    let r = e.delete_all_with(64, &mut |n| {
        steps.push(n);
        if steps.len() == 3 {
            Err(Error::Unavailable("stopped by the test".into()))
        } else {
            Ok(())
        }
    });
    assert!(matches!(r, Err(Error::Unavailable(_))), "{r:?}");
    assert_eq!(steps, [64, 128, 192]);
    let left = first(&*e, KeyRange::all(), Direction::Forward, usize::MAX);
    assert_eq!(left, keys[192..]);
    // A rerun finishes, never more than 64 keys per request.
    let mut steps = vec![0u64];
    let n = e
        .delete_all_with(64, &mut |n| {
            steps.push(n);
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 808);
    assert!(steps.windows(2).all(|w| w[1] - w[0] <= 64), "{steps:?}");
    assert_eq!(steps.len() - 1, 808usize.div_ceil(64));
    assert!(first(&*e, KeyRange::all(), Direction::Forward, 1).is_empty());
    // Nothing left: one request, nothing deleted.
    assert_eq!(e.delete_all().unwrap(), 0);
}
