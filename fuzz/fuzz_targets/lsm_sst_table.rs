//! A whole SST file of arbitrary bytes: open, verify, point reads, both iteration directions
//! and the two-level iterator under seeks and steps never panic (errors are fine).
#![no_main]

use std::io;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata_lsm::fs::{Fs, ReadableFile, WritableFile};
use strata_lsm::sst::bloom::key_hash;
use strata_lsm::iter::InternalIter;
use strata_lsm::sst::cache::BlockCache;
use strata_lsm::sst::iter::SstIter;
use strata_lsm::sst::table::{FileMeta, Source, Table, TableIter};

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
}

/// A file system holding one file, read-only.
struct OneFile(Vec<u8>);

impl Fs for OneFile {
    fn create(&self, _: &Path) -> io::Result<Box<dyn WritableFile>> {
        Err(io::Error::other("read-only"))
    }
    fn open(&self, _: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        Ok(Arc::new(Bytes(self.0.clone())))
    }
    fn read(&self, _: &Path) -> io::Result<Vec<u8>> {
        Ok(self.0.clone())
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

fuzz_target!(|data: &[u8]| {
    let meta = FileMeta { id: 1, size: data.len() as u64, entries: 0, smallest: Vec::new(), largest: vec![0xff; 8] };
    let fs: Arc<dyn Fs> = Arc::new(OneFile(data.to_vec()));
    let Ok(t) = Table::open(fs, Path::new("fuzz.sst"), meta, Arc::new(BlockCache::new(1 << 16))) else { return };
    let _ = t.verify();
    let t = Arc::new(t);
    for k in [&b""[..], b"a", b"\x7f\xff"] {
        let _ = t.get(k, key_hash(k));
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
