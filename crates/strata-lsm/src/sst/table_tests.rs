//! Tests of the SST writer and of mapped reads of a [`Table`](super::Table).

use super::Table;
use crate::iter::testing::Model;
use crate::iter::InternalIter;
use crate::sst::bloom::key_hash;
use crate::sst::iter::testing::table;
use crate::sst::iter::SstIter;

/// A file of many write chunks (blocks collected and written 2 MiB at a time): every
/// block is where the index says, every entry reads back, in order and by point lookup.
#[test]
fn files_larger_than_a_write_chunk_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::new();
    for i in 0..100_000u32 {
        let v = (i % 7 != 0).then(|| vec![(i % 251) as u8; 20 + (i % 180) as usize]);
        m.insert(format!("key{i:08}").into_bytes(), v);
    }
    let t = table(dir.path(), 1, &m, 4096);
    assert!(t.meta.size > 4 * crate::sst::writer::WRITE_CHUNK as u64);
    let mut it = SstIter::new(t.clone());
    it.seek_to_first().unwrap();
    for (k, v) in &m {
        assert!(it.valid());
        assert_eq!(it.key(), &k[..]);
        assert_eq!(it.value(), v.as_deref());
        it.next().unwrap();
    }
    assert!(!it.valid());
    for (k, v) in m.iter().step_by(97) {
        assert_eq!(t.get(k, key_hash(k)).unwrap(), Some(v.clone()));
    }
}

/// A mapped table of 400 entries in more than 8 blocks of a 64-byte target, no cache.
fn mapped_table(dir: &std::path::Path, m: &Model) -> Table {
    let t = crate::sst::iter::testing::table_with_cache(dir, 1, m, 64, 0);
    let t = std::sync::Arc::try_unwrap(t)
        .ok()
        .expect("one owner")
        .with_mapped_reads(true);
    assert!(t.mapped.is_some(), "a real SST is mapped");
    assert!(t.block_count() > 8);
    t
}

/// Every key of `m` read from `t`: those of block 5 (of `layout`, the same file) fail
/// their checksum, every other one reads back.
fn only_block_5_fails(t: &Table, layout: &Table, m: &Model) {
    for (k, v) in m {
        let got = t.get(k, key_hash(k));
        let idx = layout.index();
        if k.as_slice() <= idx.last_key(5) && k.as_slice() > idx.last_key(4) {
            let e = got.expect_err("the changed block is reported");
            assert!(e.to_string().contains("checksum"), "{e}");
        } else {
            assert_eq!(got.unwrap(), Some(v.clone()));
        }
    }
}

/// Through the map a block's checksum is checked on its first read since the open: later
/// reads of it (cache misses: the cache holds nothing here) return the same entries
/// without the check, and a block changed in the file is reported again by the next open.
#[test]
fn mapped_blocks_are_checked_once_per_open() {
    let dir = tempfile::tempdir().unwrap();
    let m: Model = (0u32..400)
        .map(|i| (i.to_be_bytes().to_vec(), Some(vec![(i % 251) as u8; 20])))
        .collect();
    let t = mapped_table(dir.path(), &m);
    for pass in 0..3 {
        for (k, v) in &m {
            assert_eq!(
                t.get(k, key_hash(k)).unwrap(),
                Some(v.clone()),
                "pass {pass}"
            );
        }
        assert!(t
            .verified
            .iter()
            .all(|w| w.load(super::Ordering::Relaxed) != 0));
    }
    crate::sst::iter::testing::flip_in_block(&t, 5);
    let fs: std::sync::Arc<dyn crate::fs::Fs> = std::sync::Arc::new(crate::fs::RealFs);
    let cache = std::sync::Arc::new(crate::sst::cache::BlockCache::new(0));
    let again = super::Table::open(fs, t.path(), t.meta.clone(), cache)
        .unwrap()
        .with_mapped_reads(true);
    only_block_5_fails(&again, &t, &m);
}

/// Point reads of a real file go through its memory map, and a byte changed in place
/// after the table opened (not through the engine) is still caught by the block's
/// checksum on the next read from the file; the blocks around it still read back.
#[test]
fn mapped_point_reads_check_every_block() {
    let dir = tempfile::tempdir().unwrap();
    let m: Model = (0u32..400)
        .map(|i| (i.to_be_bytes().to_vec(), Some(vec![b'v'; 20])))
        .collect();
    let t = mapped_table(dir.path(), &m);
    crate::sst::iter::testing::flip_in_block(&t, 5);
    only_block_5_fails(&t, &t, &m);
}

/// `get_ref_expected` in both of its orders (overlapped while keys are found, filter first
/// after a run of keys the filter rules out) finds what `get_ref` finds: every present key
/// and tombstone, and nothing for absent keys, on a mapped and an unmapped file.
#[test]
fn expected_reads_find_the_same_in_both_orders() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = Model::new();
    for i in 0..2_000u32 {
        let v = (i % 5 != 0).then(|| format!("v{i}").into_bytes());
        m.insert(format!("key{i:06}").into_bytes(), v);
    }
    let absent: Vec<Vec<u8>> = (0..4_000u32)
        .map(|i| format!("key{:06}x", i % 2_000).into_bytes())
        .collect();
    let plain = table(dir.path(), 1, &m, 512);
    let sub = dir.path().join("m");
    std::fs::create_dir(&sub).unwrap();
    let mapped = mapped_table(&sub, &m);
    for t in [&*plain, &mapped] {
        let value = |k: &[u8], expected: bool| {
            let f = if expected {
                t.get_ref_expected(k, key_hash(k)).unwrap()
            } else {
                t.get_ref(k, key_hash(k)).unwrap()
            };
            f.map(|f| f.value().map(<[u8]>::to_vec))
        };
        assert!(!t.order.filter_first(), "starts overlapped");
        for round in 0..2 {
            for k in &absent {
                assert_eq!(value(k, true), value(k, false), "{k:?}");
            }
            assert!(t.order.filter_first(), "round {round}: absent keys turn it");
            for (k, v) in &m {
                assert_eq!(value(k, true), Some(v.clone()), "{k:?}");
            }
            assert!(
                !t.order.filter_first(),
                "round {round}: present keys turn it back"
            );
        }
    }
}
