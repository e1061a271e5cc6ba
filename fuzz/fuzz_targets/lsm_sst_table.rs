//! A whole SST file: open, verify, point reads, both iteration directions and the two-level
//! iterator under seeks and steps never panic (errors are fine). The first input byte selects
//! how the file is made from the rest:
//! - mode 0: the bytes as they are (the checksums must catch the damage);
//! - mode 1: the bytes with their checksums made valid (footer magic and CRC, then every block
//!   the footer and the index point at gets the CRC of its bytes), so that mutations reach the
//!   index, block, bloom and entry decoders behind the CRCs;
//! - mode 2: a valid SST written by `SstWriter` from entries taken from the input, then byte
//!   edits taken from the rest of the input, then the checksums made valid as in mode 1 (a
//!   deep start without a corpus).
#![no_main]

use std::io;
use std::ops::Bound;
use std::path::Path;
use std::sync::{Arc, Mutex};

use libfuzzer_sys::fuzz_target;
use strata_lsm::fs::{Fs, ReadableFile, WritableFile};
use strata_lsm::sst::bloom::key_hash;
use strata_lsm::iter::InternalIter;
use strata_lsm::sst::cache::BlockCache;
use strata_lsm::sst::iter::SstIter;
use strata_lsm::coding::crc;
use strata_lsm::sst::block::Block;
use strata_lsm::sst::table::{
    decode_footer, decode_index, FileMeta, Source, SstWriter, Table, TableIter, FOOTER, SST_MAGIC,
};

struct Bytes(Vec<u8>);

impl ReadableFile for Bytes {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        let start = usize::try_from(off).map_err(|_| io::Error::other("offset"))?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.0.get(start..end))
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "short"))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    // "Mapped": the same bytes, searched in place by point reads of checked blocks.
    fn map(&self) -> Option<Arc<dyn ReadableFile>> {
        Some(Arc::new(Bytes(self.0.clone())))
    }
    fn mapped_bytes(&self) -> Option<&[u8]> {
        Some(&self.0)
    }
}

/// A file system of one file in memory, whatever the path: `SstWriter` writes it, `Table`
/// reads it.
#[derive(Default)]
struct MemFile(Arc<Mutex<Vec<u8>>>);

impl MemFile {
    fn holding(bytes: Vec<u8>) -> MemFile {
        MemFile(Arc::new(Mutex::new(bytes)))
    }
    fn bytes(&self) -> io::Result<Vec<u8>> {
        Ok(self.0.lock().map_err(|_| io::Error::other("poisoned"))?.clone())
    }
}

struct MemWriter(Arc<Mutex<Vec<u8>>>);

impl WritableFile for MemWriter {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.lock().map_err(|_| io::Error::other("poisoned"))?.extend_from_slice(buf);
        Ok(())
    }
    fn write_at(&mut self, off: u64, buf: &[u8]) -> io::Result<()> {
        let mut v = self.0.lock().map_err(|_| io::Error::other("poisoned"))?;
        let off = usize::try_from(off).map_err(|_| io::Error::other("offset"))?;
        if v.len() < off + buf.len() {
            v.resize(off + buf.len(), 0);
        }
        v[off..off + buf.len()].copy_from_slice(buf);
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn syncer(&self) -> io::Result<Arc<dyn strata_lsm::fs::FileSyncer>> {
        Err(io::Error::other("no syncer"))
    }
}

impl Fs for MemFile {
    fn create(&self, _: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(MemWriter(Arc::clone(&self.0))))
    }
    fn open(&self, _: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        Ok(Arc::new(Bytes(self.bytes()?)))
    }
    fn read(&self, _: &Path) -> io::Result<Vec<u8>> {
        self.bytes()
    }
    fn rename(&self, _: &Path, _: &Path) -> io::Result<()> {
        Ok(())
    }
    fn remove(&self, _: &Path) -> io::Result<()> {
        Ok(())
    }
    fn list(&self, _: &Path) -> io::Result<Vec<String>> {
        Ok(Vec::new())
    }
    fn sync_dir(&self, _: &Path) -> io::Result<()> {
        Ok(())
    }
    fn create_dir_all(&self, _: &Path) -> io::Result<()> {
        Ok(())
    }
}

/// Sets the CRC after the `len` bytes at `off` (when block and CRC lie before `end`).
fn fix_block_crc(f: &mut [u8], off: u64, len: u32, end: usize) {
    let (Ok(off), Ok(len)) = (usize::try_from(off), usize::try_from(len)) else { return };
    let Some(stop) = off.checked_add(len).filter(|s| s.saturating_add(4) <= end) else { return };
    let c = crc(&f[off..stop]);
    f[stop..stop + 4].copy_from_slice(&c.to_le_bytes());
}

/// Makes the checksums of `f` valid: the footer's magic and CRC, then the CRCs of the data
/// blocks the index lists, of the bloom filter and of the index block (in that order, so that
/// a block overlapping another ends up with a valid CRC of its final bytes where possible).
fn fix_crcs(f: &mut [u8]) {
    let n = f.len();
    if n < FOOTER {
        return;
    }
    let foot = n - FOOTER;
    f[n - 8..].copy_from_slice(SST_MAGIC);
    let c = crc(&f[foot..foot + 36]);
    f[foot + 36..foot + 40].copy_from_slice(&c.to_le_bytes());
    let Ok(ft) = decode_footer(&f[foot..], n as u64) else { return };
    // `decode_footer` checked that index and filter (with their CRCs) lie before the footer.
    let (io, il) = (ft.index_off as usize, ft.index_len as usize);
    if let Ok(block) = Block::new(Arc::new(f[io..io + il].to_vec())) {
        if let Ok(entries) = decode_index(&block) {
            for e in entries {
                fix_block_crc(f, e.off, e.len, foot);
            }
        }
    }
    fix_block_crc(f, ft.bloom_off, ft.bloom_len, foot);
    fix_block_crc(f, ft.index_off, ft.index_len, foot);
}

/// Mode 2: an SST written from entries of the input, then edited. The input: entry count,
/// block size, then per entry a key gap, a tombstone flag and a value length (values are
/// input bytes); what is left is edits, `(offset u16, xor u8)` each. Also returns whether the
/// file is as written (no edit changed it). Checks that `fix_crcs` leaves a file as written
/// unchanged (it agrees with the writer on where every checksum is).
fn built_then_edited(data: &[u8]) -> Option<(Vec<u8>, FileMeta, bool)> {
    let (&count, data) = data.split_first()?;
    let (&bs, mut data) = data.split_first()?;
    let mem = MemFile::default();
    let mut w = SstWriter::create(&mem, Path::new("fuzz.sst"), 1, 32 + usize::from(bs)).ok()?;
    let mut key = 0u32;
    for _ in 0..=count % 64 {
        let [gap, flag, vlen, rest @ ..] = data else { break };
        data = rest;
        key += 1 + u32::from(*gap);
        let k = format!("k{key:08}").into_bytes();
        let (v, rest) = data.split_at(usize::from(*vlen).min(data.len()));
        data = rest;
        w.add(&k, (flag % 4 != 0).then_some(v)).ok()?;
    }
    let meta = w.finish().ok()?;
    let mut f = mem.bytes().ok()?;
    let written = f.clone();
    fix_crcs(&mut f);
    assert!(f == written, "fix_crcs changed a file as SstWriter wrote it");
    let len = f.len().max(1);
    for e in data.chunks_exact(3) {
        let off = usize::from(u16::from_le_bytes([e[0], e[1]]));
        if let Some(b) = f.get_mut(off % len) {
            *b ^= e[2];
        }
    }
    fix_crcs(&mut f);
    let pristine = f == written;
    Some((f, meta, pristine))
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else { return };
    let any_meta = |len: usize| FileMeta { id: 1, size: len as u64, entries: 0, smallest: Vec::new(), largest: vec![0xff; 8] };
    let (file, meta, pristine) = match mode % 3 {
        0 => (rest.to_vec(), any_meta(rest.len()), false),
        1 => {
            let mut f = rest.to_vec();
            fix_crcs(&mut f);
            (f, any_meta(rest.len()), false)
        }
        _ => match built_then_edited(rest) {
            Some(x) => x,
            None => return,
        },
    };
    let data = &file[..];
    let fs: Arc<dyn Fs> = Arc::new(MemFile::holding(data.to_vec()));
    let opened = Table::open(fs, Path::new("fuzz.sst"), meta, Arc::new(BlockCache::new(1 << 16)));
    // A file as SstWriter wrote it opens and verifies.
    assert!(!pristine || opened.is_ok(), "a written SST does not open");
    let Ok(t) = opened else { return };
    let verified = t.verify();
    assert!(!pristine || verified.is_ok(), "a written SST does not verify: {verified:?}");
    let t = Arc::new(t);
    for k in [&b""[..], b"a", b"\x7f\xff"] {
        let _ = t.get(k, key_hash(k));
    }
    // Point reads through the "map" with no cache: the first read of a block checks it, the
    // second searches it in place (`Table::get_in_place`) — of keys the file holds (so that
    // the bloom filter lets them through) and of bytes around them.
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut it = TableIter::new(Arc::clone(&t), Bound::Unbounded, Bound::Unbounded, false);
    while keys.len() < 16 {
        match it.next_entry() {
            Ok(Some((k, _))) => keys.push(k),
            _ => break,
        }
    }
    let fs: Arc<dyn Fs> = Arc::new(MemFile::holding(data.to_vec()));
    if let Ok(m) = Table::open(fs, Path::new("fuzz.sst"), t.meta.clone(), Arc::new(BlockCache::new(0))) {
        let m = m.with_mapped_reads(true);
        for k in &keys {
            let mut above = k.clone();
            above.push(0);
            for _ in 0..2 {
                let first = m.get(k, key_hash(k));
                let _ = m.get(&above, key_hash(&above));
                let _ = m.get(&k[..k.len() / 2], key_hash(&k[..k.len() / 2]));
                // In a file as SstWriter wrote it, a key reads the same through the map as
                // from the file (damaged blocks that pass their CRC may read differently).
                if pristine {
                    assert_eq!(first.ok(), t.get(k, key_hash(k)).ok(), "mapped point read differs");
                }
            }
        }
    }
    let mut it = SstIter::new(Arc::clone(&t));
    for (i, op) in data.iter().take(64).enumerate() {
        let target = &data[..i.min(4)];
        let r = match op % 6 {
            0 => it.seek_to_first(),
            1 => it.seek_to_last(),
            2 => it.seek(target),
            3 => it.seek_for_prev(target),
            4 => it.next(),
            _ => it.prev(),
        };
        let _ = (r, it.key(), it.value());
    }
    for reverse in [false, true] {
        let mut it = TableIter::new(Arc::clone(&t), Bound::Unbounded, Bound::Excluded(b"zz".to_vec()), reverse);
        for _ in 0..10_000 {
            match it.next_entry() {
                Ok(Some(_)) => {}
                _ => break,
            }
        }
    }
});
