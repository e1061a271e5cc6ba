//! Tests of the block builder, reader and iterator (proptests against the model).

use super::*;
use crate::iter::testing::Model;
use crate::iter::InternalIter;
use proptest::prelude::*;

/// A block holding `m`, with a restart point every `interval` entries.
fn build(m: &Model, interval: usize) -> Block {
    let mut b = BlockBuilder::with_restart_interval(interval);
    for (k, v) in m {
        b.add(k, v.as_deref());
    }
    Block::new(Arc::new(b.finish())).unwrap()
}

/// A prefetch of any address is a hint only; a seek into a block whose restart array
/// points past its entries still reports the damage (the prefetch loop stops there).
#[test]
fn prefetch_of_any_address_is_harmless() {
    prefetch(std::ptr::null());
    prefetch(usize::MAX as *const u8);
    let mut m = Model::new();
    for i in 0u8..40 {
        m.insert(vec![b'k', i], Some(vec![i; 20]));
    }
    let good = build(&m, 2);
    assert!(good.num_restarts > 4);
    let mut it = BlockIter::new(good.clone());
    it.seek(&[b'k', 17]).unwrap();
    assert_eq!(it.key(), &[b'k', 17]);
    // Restart 3 now points past the entries.
    let mut d = good.data().to_vec();
    let at = good.restarts + 4 * 3;
    d[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let bad = Block::new(Arc::new(d)).unwrap();
    let mut it = BlockIter::new(bad.clone());
    bad.prefetch_restart_keys();
    assert!((0..40u8).any(|i| it.seek(&[b'k', i]).is_err()));
}

/// The block iterator seen through the iterator trait, errors mapped.
struct BlockAsInternal(BlockIter);

fn err(e: BlockError) -> crate::Error {
    crate::Error::InvalidArgument(format!("block error {e}"))
}

impl InternalIter for BlockAsInternal {
    fn valid(&self) -> bool {
        self.0.valid()
    }
    fn key(&self) -> &[u8] {
        self.0.key()
    }
    fn value(&self) -> Option<&[u8]> {
        self.0.value()
    }
    fn seek_to_first(&mut self) -> crate::Result<()> {
        self.0.seek_to_first().map_err(err)
    }
    fn seek_to_last(&mut self) -> crate::Result<()> {
        self.0.seek_to_last().map_err(err)
    }
    fn seek(&mut self, t: &[u8]) -> crate::Result<()> {
        self.0.seek(t).map_err(err)
    }
    fn seek_for_prev(&mut self, t: &[u8]) -> crate::Result<()> {
        self.0.seek_for_prev(t).map_err(err)
    }
    fn next(&mut self) -> crate::Result<()> {
        self.0.next().map_err(err)
    }
    fn prev(&mut self) -> crate::Result<()> {
        self.0.prev().map_err(err)
    }
}

proptest! {
    #[test]
    fn roundtrip_and_seek(keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..6), 0..60),
                          target in proptest::collection::vec(any::<u8>(), 0..6)) {
        let mut b = BlockBuilder::new();
        let keys: Vec<_> = keys.into_iter().collect();
        for (i, k) in keys.iter().enumerate() {
            let v = vec![i as u8; i % 5];
            b.add(k, if i % 7 == 3 { None } else { Some(&v) });
        }
        let blk = Block::new(Arc::new(b.finish())).unwrap();
        let e = blk.entries().unwrap();
        prop_assert_eq!(e.iter().map(|x| x.0.clone()).collect::<Vec<_>>(), keys.clone());
        let mut k = Vec::new();
        let got = blk.seek(&target, &mut k).unwrap().map(|_| k.clone());
        prop_assert_eq!(got, keys.iter().find(|x| x.as_slice() >= target.as_slice()).cloned());
    }

    /// Point lookups (`Block::get`) against the model: every stored key, and targets
    /// around them (prefixes, extensions, absent keys), over keys with long shared
    /// prefixes and restart points by count and by bytes.
    #[test]
    fn get_matches_the_model(keys in proptest::collection::btree_map(proptest::collection::vec(0u8..3, 0..10),
                                                                    proptest::option::of(0usize..300), 0..80),
                             targets in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..11), 0..20),
                             interval in 1usize..20, spacing in prop_oneof![Just(usize::MAX), 1usize..600]) {
        let mut b = BlockBuilder::with_spacing(interval, spacing);
        let model: Vec<(Vec<u8>, Option<Vec<u8>>)> = keys.into_iter()
            .map(|(k, v)| { let v = v.map(|n| vec![k.len() as u8 + 1; n]); (k, v) })
            .collect();
        for (k, v) in &model {
            b.add(k, v.as_deref());
        }
        let blk = Block::new(Arc::new(b.finish())).unwrap();
        let mut all: Vec<Vec<u8>> = model.iter().map(|(k, _)| k.clone()).collect();
        all.extend(targets);
        for t in &all {
            let want = model.iter().find(|(k, _)| k == t).map(|(_, v)| v.clone());
            let got = blk.get(t).unwrap().map(|v| blk.value(v));
            prop_assert_eq!(got, want, "target {:?}", t);
        }
    }

    #[test]
    fn block_iter_matches_model(m in crate::iter::testing::model(), ops in crate::iter::testing::ops(), interval in 1usize..5) {
        let blk = build(&m, interval);
        let mut it = BlockAsInternal(BlockIter::new(blk));
        crate::iter::testing::check_ops(&mut it, &m, &ops)?;
    }

    #[test]
    fn garbage_iterates_without_panic(d in proptest::collection::vec(any::<u8>(), 0..80),
                                     ops in crate::iter::testing::ops()) {
        if let Ok(b) = Block::new(Arc::new(d)) {
            for op in &ops {
                if let crate::iter::testing::Op::Seek(t) = op {
                    let _ = b.get(t);
                }
            }
            let _ = b.get(b"");
            // The point index of a damaged block: built or not, it never panics.
            if let Some(pi) = super::super::point::PointIndex::build(&b) {
                for op in &ops {
                    if let crate::iter::testing::Op::Seek(t) = op {
                        let _ = pi.get(&b, t);
                    }
                }
            }
            let mut it = BlockAsInternal(BlockIter::new(b));
            for op in &ops {
                let _ = crate::iter::testing::apply(&mut it, op);
                let _ = (it.key(), it.value());
            }
        }
    }

    #[test]
    fn garbage_never_panics(d in proptest::collection::vec(any::<u8>(), 0..80), t in proptest::collection::vec(any::<u8>(), 0..4)) {
        if let Ok(b) = Block::new(Arc::new(d)) {
            let _ = b.entries();
            let mut k = Vec::new();
            let _ = b.seek(&t, &mut k);
        }
    }
}
