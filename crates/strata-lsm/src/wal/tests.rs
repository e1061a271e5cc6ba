//! Tests of the WAL: writer, reader, hole rules.

use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::engine::{Op, WriteBatch};
use crate::error::Error;
use crate::record::{self, Framing};
use crate::wal::fragment;

#[test]
fn writer_preallocates_for_small_records_and_appends_big_ones() {
    let dir = tempfile::tempdir().unwrap();
    let fs = crate::fs::RealFs;
    let mut w = WalWriter::create(&fs, dir.path(), 7).unwrap();
    let path = dir.path().join(wal_name(7));
    let len = || std::fs::metadata(&path).unwrap().len();
    assert_eq!(len(), PREALLOC);
    let small = |i: u64| vec![Op::Put(i.to_be_bytes().to_vec(), vec![7; 100])];
    let big = vec![Op::Put(b"big".to_vec(), vec![9; 3 * PREALLOC as usize / 2])];
    let mut want = Vec::new();
    let mut seq = 0;
    let mut push = |w: &mut WalWriter, ops: Vec<Op>| {
        seq += 1;
        w.append(seq, &ops.iter().cloned().collect()).unwrap();
        want.push((seq, ops));
    };
    for i in 0..10_000 {
        push(&mut w, small(i)); // crosses the first MiB: extended with zeros
    }
    assert_eq!(len(), 2 * PREALLOC);
    push(&mut w, big.clone()); // past the end, no zeros after it
    assert_eq!(len(), w.bytes());
    push(&mut w, small(1)); // extended again
    assert_eq!(len(), w.bytes().div_ceil(PREALLOC) * PREALLOC);
    w.sync().unwrap();
    let data = std::fs::read(&path).unwrap();
    assert_eq!(&data[..8], WAL_MAGIC_V4);
    let r = read_wal(&data, &path, false).unwrap();
    assert_eq!(r.torn_at, None);
    assert_eq!(r.batches, want);
    // The file may also end right after its last record.
    let r = read_wal(&data[..w.bytes() as usize], &path, false).unwrap();
    assert_eq!(r.batches.len(), want.len());
}

#[test]
fn reserve_tail_leaves_zeros_after_big_records() {
    let dir = tempfile::tempdir().unwrap();
    let fs = crate::fs::RealFs;
    let mut w = WalWriter::create(&fs, dir.path(), 5).unwrap();
    let path = dir.path().join(wal_name(5));
    let len = || std::fs::metadata(&path).unwrap().len();
    // Preallocated space left: nothing to do.
    assert!(!w.reserve_tail().unwrap());
    assert_eq!(len(), PREALLOC);
    let big = |b: u8| vec![Op::Put(vec![b], vec![b; 3 * PREALLOC as usize / 2])];
    let mut want = Vec::new();
    for seq in 1..=2u64 {
        let ops = big(seq as u8);
        w.append(seq, &ops.iter().cloned().collect()).unwrap();
        want.push((seq, ops));
    }
    assert_eq!(w.reserved(), 0);
    assert_eq!(len(), w.bytes());
    assert!(w.reserve_tail().unwrap());
    assert!(w.reserved() >= TAIL_RESERVE);
    assert_eq!(len() % PREALLOC, 0);
    let reserved = len();
    assert!(!w.reserve_tail().unwrap());
    // Small records now land in the zeros: the size does not change.
    for seq in 3..100u64 {
        let ops = vec![Op::Put(seq.to_be_bytes().to_vec(), vec![1; 100])];
        w.append(seq, &ops.iter().cloned().collect()).unwrap();
        want.push((seq, ops));
        assert_eq!(len(), reserved);
    }
    w.sync().unwrap();
    let r = read_wal(&std::fs::read(&path).unwrap(), &path, true).unwrap();
    assert_eq!(r.torn_at, None);
    assert_eq!(r.batches, want);
    // With little room left (less than the reserve), it extends to the next chunk.
    let mut w = WalWriter::create_with(&fs, dir.path(), 6, MIN_PREALLOC).unwrap();
    let path = dir.path().join(wal_name(6));
    w.append(
        1,
        &[Op::Put(b"k".to_vec(), vec![2; 100])].into_iter().collect(),
    )
    .unwrap();
    assert!(w.reserve_tail().unwrap());
    let len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(len % MIN_PREALLOC, 0);
    assert!(len - w.bytes() >= TAIL_RESERVE);
}

#[test]
fn small_memtables_preallocate_small_chunks() {
    assert_eq!(prealloc_for(0), MIN_PREALLOC);
    assert_eq!(prealloc_for(2048), MIN_PREALLOC);
    assert_eq!(prealloc_for(3 * 4096), 2 * 4096);
    assert_eq!(prealloc_for(64 << 20), PREALLOC);
    let dir = tempfile::tempdir().unwrap();
    let fs = crate::fs::RealFs;
    let mut w = WalWriter::create_with(&fs, dir.path(), 3, prealloc_for(2048)).unwrap();
    let path = dir.path().join(wal_name(3));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), MIN_PREALLOC);
    let ops: Vec<_> = (0..100u64)
        .map(|i| vec![Op::Put(i.to_be_bytes().to_vec(), vec![1; 100])])
        .collect();
    for (i, o) in ops.iter().enumerate() {
        w.append(i as u64 + 1, &o.iter().cloned().collect())
            .unwrap();
    }
    w.sync().unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(len, w.bytes().div_ceil(MIN_PREALLOC) * MIN_PREALLOC);
    let r = read_wal(&std::fs::read(&path).unwrap(), &path, true).unwrap();
    assert_eq!(r.batches.len(), 100);
    assert_eq!(r.torn_at, None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A batch framed in its own buffer (the write path's way) is byte for byte the
    /// record `encode_batch` + framing v2 give, its count varint one to three bytes long,
    /// in a fresh or recycled buffer; writing it leaves the batch as it was (framed again,
    /// the same record), and a WAL written with `append_in_place` is the file `append`
    /// writes.
    #[test]
    fn in_place_record_is_the_encoded_record(
        seq in any::<u64>(),
        ops in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..4),
             proptest::option::of(proptest::collection::vec(any::<u8>(), 0..200))), 0..300),
        big in proptest::bool::weighted(0.1),
        recycled in any::<bool>(),
        synced in any::<u64>(),
    ) {
        let mut ops: Vec<Op> = ops.into_iter().map(|(k, v)| match v { Some(v) => Op::Put(k, v), None => Op::Delete(k) }).collect();
        // Repeated to 17,000 ops: a three-byte count.
        let n = ops.len();
        if big && n > 0 {
            ops = (0..17_000).map(|i| ops[i % n].clone()).collect();
        }
        if recycled {
            let mut a = WriteBatch::new();
            a.put([1u8; 40], [2u8; 300]).delete(b"x");
            crate::batch::recycle(a);
        }
        let mut batch: WriteBatch = ops.iter().cloned().collect();
        let before = batch.clone();
        let mut payload = synced.to_le_bytes().to_vec();
        encode_batch(&mut payload, seq, &ops);
        let mut want = Vec::new();
        Framing::V2.frame(&mut want, &payload);
        prop_assert_eq!(batch.frame_wal_record(seq, synced), &want[..]);
        batch.unframe_wal_record();
        prop_assert_eq!(batch.encoded_ops(), before.encoded_ops());
        prop_assert_eq!(batch.iter().collect::<Vec<_>>(), before.iter().collect::<Vec<_>>());
        prop_assert_eq!(batch.frame_wal_record(seq, synced), &want[..]);
        batch.unframe_wal_record();
        prop_assert_eq!(&batch, &before);
        // Whole files: the copying append and the in-place one, twice each.
        let dir = tempfile::tempdir().unwrap();
        let mut a = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 1, MIN_PREALLOC).unwrap();
        let mut b = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 2, MIN_PREALLOC).unwrap();
        for s in [seq, seq.wrapping_add(1)] {
            a.append(s, &before).unwrap();
            b.append_in_place(s, &mut batch).unwrap();
            // The second record's watermark: the end of the first.
            a.sync().unwrap();
            b.syncer().sync().unwrap();
        }
        prop_assert_eq!(a.bytes(), b.bytes());
        let read = |n| std::fs::read(dir.path().join(wal_name(n))).unwrap();
        prop_assert!(read(1) == read(2), "the two WAL files differ");
        prop_assert_eq!(&batch, &before);
    }
}

/// A WAL of `version` (2 or 3) written by hand: `n` one-put records, the watermark of
/// record `i` being `marks(i, offsets so far)`; then `pad` zeros. Returns the file and the
/// records' `(offset, length)`.
fn hand_wal(
    version: u8,
    n: usize,
    value: usize,
    pad: usize,
    marks: impl Fn(usize, &[(usize, usize)]) -> u64,
) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut v = if version == 3 {
        WAL_MAGIC_V3
    } else {
        WAL_MAGIC_V2
    }
    .to_vec();
    let mut at: Vec<(usize, usize)> = Vec::new();
    for i in 0..n {
        let mut payload = Vec::new();
        if version == 3 {
            payload.extend_from_slice(&marks(i, &at).to_le_bytes());
        }
        let op = Op::Put(format!("key{i:04}").into_bytes(), vec![i as u8; value]);
        encode_batch(&mut payload, i as u64 + 1, &[op]);
        let start = v.len();
        Framing::V2.frame(&mut v, &payload);
        at.push((start, v.len() - start));
    }
    v.resize(v.len() + pad, 0);
    (v, at)
}

/// The ways a sector lost in an OS crash leaves record `r`: zero from its start to the end
/// of that sector; zero from its start to the end of the sector of its last byte; its
/// commit byte's sector lost from there (the rest of the record written).
fn lose(data: &mut [u8], (off, len): (usize, usize), how: usize) {
    let sector_end = |q: usize| ((q / SECTOR + 1) * SECTOR).min(data.len());
    let (from, to) = match how {
        0 => (off, sector_end(off)),
        1 => (off, sector_end(off + len - 1)),
        _ => (off + len - 1, sector_end(off + len - 1)),
    };
    data[from..to].fill(0);
}

#[test]
fn v3_a_lost_unsynced_write_followed_by_records_ends_the_prefix() {
    // Records 0..5 synced (the later ones claim the end of record 4), 5..12 not.
    let (l, at) = hand_wal(3, 12, 200, 300, |i, at| {
        if i <= 5 {
            MAGIC_LEN as u64
        } else {
            (at[4].0 + at[4].1) as u64
        }
    });
    let p = Path::new("w.log");
    assert_eq!(read_wal(&l, p, true).unwrap().batches.len(), 12);
    for r in 0..11 {
        for how in 0..3 {
            let mut m = l.clone();
            lose(&mut m, at[r], how);
            let got = read_wal(&m, p, true);
            if r >= 5 {
                // Unsynced: the prefix before it, the hole a torn tail.
                let got = got.unwrap_or_else(|e| panic!("record {r} how {how}: {e}"));
                assert_eq!(got.batches.len(), r, "record {r} how {how}");
                // (Zeros to the end of the file are the clean end of any v2/v3 WAL.)
                let clean = m[at[r].0..].iter().all(|&b| b == 0);
                let want = (!clean).then_some(at[r].0 as u64);
                assert_eq!(got.torn_at, want, "record {r} how {how}");
                // Not in a WAL that is not the newest.
                assert_eq!(
                    read_wal(&m, p, false).is_err(),
                    !clean,
                    "record {r} how {how}"
                );
            } else {
                // Synced (a later record says so): corruption.
                let e = got
                    .err()
                    .unwrap_or_else(|| panic!("record {r} how {how} read"));
                assert!(
                    matches!(e, Error::Corruption { offset, .. } if offset == at[r].0 as u64),
                    "{e}"
                );
            }
        }
        // A complete record whose checksum fails stays corruption, synced or not.
        let mut m = l.clone();
        m[at[r].0 + record::HEADER + 3] ^= 0x10;
        assert!(read_wal(&m, p, true).is_err(), "record {r} flip");
    }
    // Several unsynced sectors lost: the prefix up to the first.
    let mut m = l.clone();
    lose(&mut m, at[7], 0);
    lose(&mut m, at[10], 2);
    let got = read_wal(&m, p, true).unwrap();
    assert_eq!((got.batches.len(), got.torn_at), (7, Some(at[7].0 as u64)));
    // Zeros in the middle of a sector are no lost write: corruption.
    let mut m = l.clone();
    m[at[8].0..at[8].0 + 5].fill(0);
    assert!(read_wal(&m, p, true).is_err());
}

#[test]
fn v3_every_bit_flip_in_the_last_record_is_corruption() {
    // Nothing after it claims it was synced; still no flip reads as a lost write.
    let (l, at) = hand_wal(3, 4, 300, 700, |_, _| MAGIC_LEN as u64);
    let (off, len) = at[3];
    for byte in off..off + len {
        for bit in 0..8 {
            let mut m = l.clone();
            m[byte] ^= 1 << bit;
            let r = read_wal(&m, Path::new("w"), true);
            assert!(r.is_err(), "flip at {byte}.{bit} read");
        }
    }
}

#[test]
fn v3_hole_rules_need_the_watermark() {
    // The same hole in a v2 WAL is corruption (v2 rules kept).
    let (l, at) = hand_wal(2, 6, 200, 100, |_, _| 0);
    let mut m = l.clone();
    lose(&mut m, at[2], 0);
    assert!(read_wal(&l, Path::new("w"), true).is_ok());
    assert!(read_wal(&m, Path::new("w"), true).is_err());
    // A record that claims the hole was synced makes it corruption, even after damage.
    let (l, at) = hand_wal(3, 6, 200, 100, |i, at| match i {
        5 => (at[2].0 + 1) as u64,
        _ => MAGIC_LEN as u64,
    });
    let mut m = l.clone();
    lose(&mut m, at[2], 0);
    lose(&mut m, at[4], 0);
    assert!(read_wal(&m, Path::new("w"), true).is_err());
    // Exactly at the watermark: unsynced (the watermark is an end, exclusive).
    let (l, at) = hand_wal(3, 6, 200, 100, |i, at| match i {
        5 => at[2].0 as u64,
        _ => MAGIC_LEN as u64,
    });
    let mut m = l.clone();
    lose(&mut m, at[2], 0);
    assert_eq!(read_wal(&m, Path::new("w"), true).unwrap().batches.len(), 2);
}

#[test]
fn writer_records_the_synced_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 1, MIN_PREALLOC).unwrap();
    let syncer = w.syncer();
    let b: WriteBatch = [Op::Put(b"k".to_vec(), b"v".to_vec())]
        .into_iter()
        .collect();
    let mut ends = Vec::new();
    for seq in 1..=6u64 {
        let mut batch = b.clone();
        if seq % 2 == 0 {
            w.append(seq, &b).unwrap();
        } else {
            w.append_in_place(seq, &mut batch).unwrap();
        }
        ends.push(w.bytes());
        match seq {
            2 => w.sync().unwrap(),
            4 => syncer.sync().unwrap(),
            _ => {}
        }
    }
    let data = std::fs::read(dir.path().join(wal_name(1))).unwrap();
    let marks: Vec<u64> = record::read_log_framed(&data, MAGIC_LEN, Framing::V2)
        .records
        .iter()
        .map(|(_, p)| watermark_of(p).unwrap())
        .collect();
    let m = MAGIC_LEN as u64;
    assert_eq!(marks, vec![m, m, ends[1], ends[1], ends[3], ends[3]]);
}

proptest! {
    #[test]
    fn batch_roundtrip(seq in any::<u64>(), ops in proptest::collection::vec(
        (proptest::collection::vec(any::<u8>(), 0..5), proptest::option::of(proptest::collection::vec(any::<u8>(), 0..5))), 0..6)) {
        let ops: Vec<Op> = ops.into_iter().map(|(k, v)| match v { Some(v) => Op::Put(k, v), None => Op::Delete(k) }).collect();
        let mut b = Vec::new();
        encode_batch(&mut b, seq, &ops);
        prop_assert_eq!(decode_batch(&b).unwrap(), (seq, ops.clone()));
        // A WriteBatch appended by the writer reads back as the same ops.
        let dir = tempfile::tempdir().unwrap();
        let mut w = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 1, MIN_PREALLOC).unwrap();
        let batch: WriteBatch = ops.iter().cloned().collect();
        w.append(seq, &batch).unwrap();
        let path = dir.path().join(wal_name(1));
        let r = read_wal(&std::fs::read(&path).unwrap(), &path, true).unwrap();
        prop_assert_eq!(r.batches, vec![(seq, ops)]);
    }

    #[test]
    fn decode_never_panics(b in proptest::collection::vec(any::<u8>(), 0..40)) {
        let _ = decode_batch(&b);
        let _ = read_wal(&b, Path::new("x"), true);
    }
}

/// A v4 WAL written by [`WalWriter`]: one put per record with a value of `sizes[i]` bytes;
/// synced after record `sync_after` (when some). Returns the file and each record's
/// `(offset, end)` as read back.
fn v4_wal(sizes: &[usize], sync_after: Option<usize>) -> (Vec<u8>, Vec<(usize, usize)>) {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WalWriter::create_with(&crate::fs::RealFs, dir.path(), 1, MIN_PREALLOC).unwrap();
    for (i, &n) in sizes.iter().enumerate() {
        let ops = [Op::Put(
            format!("key{i:04}").into_bytes(),
            vec![i as u8 + 1; n],
        )];
        w.append(i as u64 + 1, &ops.into_iter().collect()).unwrap();
        if sync_after == Some(i) {
            w.sync().unwrap();
        }
    }
    let data = std::fs::read(dir.path().join(wal_name(1))).unwrap();
    assert_eq!(&data[..MAGIC_LEN], WAL_MAGIC_V4);
    let (recs, end) = read_records(&data, 4);
    assert_eq!(end, record::LogEnd::Clean);
    assert_eq!(recs.len(), sizes.len());
    let at = recs
        .iter()
        .map(|r| (r.offset as usize, r.end as usize))
        .collect();
    (data, at)
}

const P: usize = fragment::PAGE;

#[test]
fn v4_records_of_every_size_and_alignment_read_back() {
    // Sizes around the page and its padding, crossing 1 to 6 pages, at drifting offsets.
    let mut sizes = Vec::new();
    for i in 0..120usize {
        sizes.push(match i % 6 {
            0 => 1 + i * 37 % 200,
            1 => P - 40 + i % 60,
            2 => 2 * P + i * 13,
            3 => 4017 + i % 30,
            4 => 5 * P + 7,
            _ => 60 + i,
        });
    }
    let (data, at) = v4_wal(&sizes, None);
    let r = read_wal(&data, Path::new("w"), false).unwrap();
    assert_eq!(r.torn_at, None);
    for (i, (seq, ops)) in r.batches.iter().enumerate() {
        assert_eq!(*seq, i as u64 + 1);
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].as_kv().1.map(<[u8]>::len), Some(sizes[i]));
    }
    // A record that fits the rest of its page is one fragment, the v3 record: the records
    // after the first big one start exactly where their predecessor ended or at a page.
    for w in at.windows(2) {
        let (end, next) = (w[0].1, w[1].0);
        assert!(
            next == end || (next == fragment::page_end(end) && next - end < fragment::MIN_FRAGMENT),
            "{end} -> {next}"
        );
    }
    let s = scan_records(&data, 4);
    assert_eq!((s.records.len(), s.damage.len(), s.torn), (120, 0, None));
}

/// Records 0..3 small, then big records of 2 to 5 pages, small ones between.
fn big_sizes() -> Vec<usize> {
    vec![
        100,
        200,
        300,
        2 * P,
        50,
        3 * P + 100,
        4 * P - 500,
        70,
        5 * P - 10,
        30,
        40,
    ]
}

#[test]
fn v4_a_lost_middle_page_of_an_unsynced_record_is_an_unsynced_hole() {
    let sizes = big_sizes();
    // Synced after record 2: the big ones are unsynced.
    let (data, at) = v4_wal(&sizes, Some(2));
    let mut tested = 0;
    for (i, &(off, end)) in at.iter().enumerate().skip(3) {
        // Every page of the record, the first and last (shared with neighbours) included.
        for page in off / P..=(end - 1) / P {
            let mut m = data.clone();
            let from = (page * P).max(MAGIC_LEN);
            m[from..(page + 1) * P].fill(0);
            let first_hit = at.iter().position(|&(o, e)| e > from && o < (page + 1) * P);
            let k = first_hit.unwrap();
            let got = read_wal(&m, Path::new("w"), true);
            if k < 3 {
                // The page also holds synced records (record 3's watermark says so).
                assert!(
                    got.is_err(),
                    "record {i} page {page}: synced bytes lost, read"
                );
                continue;
            }
            let got = got.unwrap_or_else(|e| panic!("record {i} page {page}: {e}"));
            assert_eq!(got.batches.len(), k, "record {i} page {page}");
            if page > off / P && page < (end - 1) / P {
                tested += 1; // a middle page
                assert_eq!(got.torn_at, Some(off as u64));
            }
            // The same in a WAL that is not the newest: refused.
            assert!(read_wal(&m, Path::new("w"), false).is_err());
        }
    }
    assert!(tested >= 6, "{tested} middle pages");
    // Several pages lost: the prefix up to the first.
    let mut m = data.clone();
    m[at[5].0 / P * P + P..at[5].0 / P * P + 2 * P].fill(0);
    m[at[8].0 / P * P + P..at[8].0 / P * P + 2 * P].fill(0);
    assert_eq!(read_wal(&m, Path::new("w"), true).unwrap().batches.len(), 5);
}

#[test]
fn v4_a_lost_middle_page_of_a_synced_record_is_corruption() {
    let sizes = big_sizes();
    // Synced after record 9: every big record is claimed synced by record 10's watermark.
    let (data, at) = v4_wal(&sizes, Some(9));
    for (i, &(off, end)) in at.iter().enumerate().take(10).skip(3) {
        for page in off / P + 1..(end - 1) / P {
            let mut m = data.clone();
            m[page * P..(page + 1) * P].fill(0);
            let e = read_wal(&m, Path::new("w"), true)
                .err()
                .unwrap_or_else(|| panic!("record {i} page {page} read"));
            assert!(
                matches!(e, Error::Corruption { offset, .. } if offset == off as u64),
                "{e}"
            );
        }
    }
}

#[test]
fn v4_every_bit_flip_in_a_multi_fragment_record_is_corruption() {
    // Nothing after it claims it was synced; still no flip reads as a lost write or a tail.
    let (data, at) = v4_wal(&[100, 3 * P + 200, 50], None);
    let (off, end) = at[1];
    // From the padding before it (if any) through the zeros right after the next record.
    for byte in at[0].1..end {
        for bit in 0..8 {
            let mut m = data.clone();
            m[byte] ^= 1 << bit;
            let r = read_wal(&m, Path::new("w"), true);
            assert!(
                r.is_err(),
                "flip at {byte}.{bit} (record {off}..{end}) read"
            );
        }
    }
}

#[test]
fn v4_fragments_out_of_order_are_corruption() {
    let (data, at) = v4_wal(&[100, 3 * P, 60, 2 * P, 80], Some(3));
    let p = Path::new("w");
    // The FIRST fragment's page lost in the synced region: corruption at that page.
    let mut m = data.clone();
    let first_page = at[1].0 / P;
    m[(first_page * P).max(MAGIC_LEN)..(first_page + 1) * P].fill(0);
    assert!(read_wal(&m, p, true).is_err());
    // A middle page replaced by a valid FULL fragment: a cut record followed by a new one.
    let mut m = data.clone();
    let mid = (at[1].0 / P + 1) * P;
    let mut full = Vec::new();
    fragment::write_fragments(&mut full, mid, &[8u8, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9]);
    m[mid..mid + full.len()].copy_from_slice(&full);
    m[mid + full.len()..mid + P].fill(0);
    let e = read_wal(&m, p, true).err().expect("refused");
    assert!(
        matches!(e, Error::Corruption { offset, .. } if offset == at[1].0 as u64),
        "{e}"
    );
    // A middle page of record 1 copied over one of record 3: its watermark differs or the
    // continuation has no FIRST; never read.
    let mut m = data.clone();
    let mid3 = (at[3].0 / P + 1) * P;
    m.copy_within(mid..mid + P, mid3);
    assert!(read_wal(&m, p, true).is_err());
    // Non-zero padding is corruption.
    let (data, at) = v4_wal(&[4037, 10], None); // record 0 ends at 4086
    let pad = at[0].1;
    assert!(
        fragment::page_end(pad) - pad < fragment::MIN_FRAGMENT,
        "{pad}"
    );
    let mut m = data.clone();
    m[pad] = 1;
    assert!(read_wal(&m, p, true).is_err());
    assert_eq!(read_wal(&data, p, true).unwrap().batches.len(), 2);
}

#[test]
fn v3_vector_written_by_the_old_code_still_reads() {
    let data = include_bytes!("../../tests/vectors/wal-v3.log");
    assert_eq!(version_of(data), Some(3));
    let r = read_wal(data, Path::new("wal-v3.log"), false).unwrap();
    assert_eq!(r.torn_at, None);
    let got: Vec<(u64, Vec<Op>)> = r.batches;
    let mut want = Vec::new();
    for i in 1..=6u64 {
        let (k, v) = if i == 4 {
            (b"big".to_vec(), vec![b'x'; 6000])
        } else {
            (
                format!("key{i}").into_bytes(),
                format!("value number {i}").into_bytes(),
            )
        };
        want.push((i, vec![Op::Put(k, v)]));
    }
    assert_eq!(got, want);
    // Its records are framing v2 with the watermark, as v3 says.
    let (recs, _) = read_records(data, 3);
    let marks: Vec<u64> = recs
        .iter()
        .map(|r| watermark_of(&r.payload).unwrap())
        .collect();
    assert_eq!(marks[0], 8);
    assert!(marks.windows(2).all(|w| w[0] <= w[1]), "{marks:?}");
    assert!(
        recs.iter().zip(&marks).all(|(r, m)| *m <= r.offset),
        "{marks:?}"
    );
    eprintln!("v3 vector watermarks {marks:?}");
}
