//! The WAL reader (versions 1 to 4) on arbitrary bytes: never panics; what it accepts
//! survives a re-encoding; the check/repair scans and the v3/v4 unsynced-hole test never
//! panic either; a v3/v4 WAL read whole is never shorter than a read of its prefix up to a
//! hole the reader accepted. And v4 from valid fragments: records the input sizes are cut
//! into fragments by the writer's encoder and read back whole; with a page of them zeroed
//! (nothing claimed synced) the read is a prefix; with a byte flipped it is refused, or (a
//! flip in the zeros after the last record) the same records.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use strata_lsm::record::{scan_log_framed, Framing};
use strata_lsm::wal::fragment::{write_fragments, PAGE};
use strata_lsm::wal::{
    decode_batch, decode_record, encode_batch, read_wal, scan_records, unsynced_hole, WAL_MAGIC,
    WAL_MAGIC_V2, WAL_MAGIC_V3, WAL_MAGIC_V4,
};
use strata_lsm::Op;

/// A v4 WAL of records whose sizes and contents come from `data`; its batches.
fn v4_from(data: &[u8]) -> (Vec<u8>, Vec<(u64, Vec<Op>)>) {
    let mut file = WAL_MAGIC_V4.to_vec();
    let mut want = Vec::new();
    let mut rest = data;
    let mut seq = 0u64;
    while let Some((&n, tail)) = rest.split_first() {
        // Sizes up to ~16 KiB: 0..4 pages.
        let len = (usize::from(n) * 67).min(tail.len() * 64);
        let value: Vec<u8> = tail.iter().cycle().take(len).copied().collect();
        rest = &tail[tail.len().min(1 + usize::from(n) % 7)..];
        seq += 1;
        let ops = vec![Op::Put(seq.to_be_bytes().to_vec(), value)];
        let mut payload = 8u64.to_le_bytes().to_vec();
        encode_batch(&mut payload, seq, &ops);
        let at = file.len();
        write_fragments(&mut file, at, &payload);
        want.push((seq, ops));
    }
    file.resize(file.len().next_multiple_of(PAGE), 0);
    (file, want)
}

fuzz_target!(|data: &[u8]| {
    let _ = decode_batch(data);
    if let Ok((seq, ops)) = decode_batch(data) {
        let mut again = Vec::new();
        encode_batch(&mut again, seq, &ops);
        assert_eq!(decode_batch(&again).ok(), Some((seq, ops)));
    }
    let _ = decode_record(data, 3);
    for magic in [WAL_MAGIC, WAL_MAGIC_V2, WAL_MAGIC_V3, WAL_MAGIC_V4] {
        let mut file = magic.to_vec();
        file.extend_from_slice(data);
        for last in [true, false] {
            let _ = read_wal(&file, Path::new("fuzz.log"), last);
        }
        for at in [8u64, 9, 20, file.len() as u64 / 2] {
            let _ = unsynced_hole(&file, at);
        }
        // A v3 hole accepted by the newest-WAL read ends the replay exactly there.
        if let Ok(r) = read_wal(&file, Path::new("fuzz.log"), true) {
            if let Some(at) = r.torn_at {
                let at = at as usize;
                if at >= 8 && at <= file.len() {
                    let prefix = read_wal(&file[..at], Path::new("fuzz.log"), true)
                        .expect("the prefix before an accepted tail reads");
                    assert_eq!(prefix.batches, r.batches);
                }
            }
        }
    }
    let _ = scan_log_framed(data, 0, Framing::V2);
    let p = Path::new("fuzz.log");
    let (file, want) = v4_from(data);
    let _ = scan_records(&file, 4);
    let r = read_wal(&file, p, false).expect("a v4 WAL from the encoder reads");
    assert_eq!(r.batches, want);
    if let (Some(&a), Some(&b)) = (data.first(), data.last()) {
        let pages = file.len() / PAGE;
        // A page lost (nothing claims a sync): a prefix, or the clean file.
        let page = usize::from(a) % pages.max(1);
        let mut m = file.clone();
        m[(page * PAGE).max(8)..(page + 1) * PAGE].fill(0);
        let _ = scan_records(&m, 4);
        let got = read_wal(&m, p, true).expect("a lost page of unsynced records reads");
        assert!(want.starts_with(&got.batches));
        // A byte flipped: refused, or the same records (a flip in the trailing zeros).
        let at = 8 + (usize::from(a) * 257 + usize::from(b) * 13) % (file.len() - 8);
        let mut m = file.clone();
        m[at] ^= 1 << (b % 8);
        let _ = scan_records(&m, 4);
        if let Ok(got) = read_wal(&m, p, true) {
            assert_eq!(got.batches, want, "flip at {at} read as other records");
        }
    }
    let _ = read_wal(data, Path::new("fuzz.log"), true);
});
