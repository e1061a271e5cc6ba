//! `ReadableFile::read_vec_at` (the real file reads into uninitialised capacity with
//! `pread`) against the model: the file's bytes, or `UnexpectedEof` past its end; and against
//! the trait's zeroing default (`read_at` into a zeroed buffer). The memory-mapped reader
//! (`ReadableFile::map`, used for the point reads of SSTs) against the same model, error kinds
//! included.

use std::io::ErrorKind;

use proptest::prelude::*;
use strata_lsm::fs::{FaultFs, Fs, RealFs};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn read_vec_at_reads_exactly_the_files_bytes(
        data in proptest::collection::vec(any::<u8>(), 0..20_000),
        reads in proptest::collection::vec((0u64..21_000, 0usize..9_000), 1..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &data).unwrap();
        let f = RealFs.open(&path).unwrap();
        for (off, len) in reads {
            let got = f.read_vec_at(len, off);
            let end = off as usize + len;
            // An empty read is always complete (as `read_exact_at`).
            if len == 0 || end <= data.len() {
                let got = got.unwrap();
                prop_assert_eq!(got.len(), len);
                if len > 0 {
                    prop_assert_eq!(&got[..], &data[off as usize..end]);
                }
                let mut zeroed = vec![0u8; len];
                f.read_at(&mut zeroed, off).unwrap();
                prop_assert_eq!(got, zeroed);
            } else {
                prop_assert_eq!(got.unwrap_err().kind(), ErrorKind::UnexpectedEof);
            }
        }
    }
}

/// A read far past the end, and an empty read at the end, of a real file.
#[test]
fn read_vec_at_edges() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, b"abcdef").unwrap();
    let f = RealFs.open(&path).unwrap();
    assert_eq!(f.read_vec_at(0, 6).unwrap(), Vec::<u8>::new());
    assert_eq!(f.read_vec_at(2, 4).unwrap(), b"ef");
    assert_eq!(
        f.read_vec_at(1, u64::MAX - 1).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        f.read_vec_at(3, 5).unwrap_err().kind(),
        ErrorKind::UnexpectedEof
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Reads through the file's memory map return what `pread` returns (the file's bytes), or
    /// the same error kind (`UnexpectedEof` past the end, `InvalidInput` for offsets beyond
    /// `i64::MAX` at its end), for `read_vec_at` and `read_at`, at offsets in, at and past the
    /// end.
    #[test]
    fn mapped_reads_equal_pread(
        data in proptest::collection::vec(any::<u8>(), 1..20_000),
        reads in proptest::collection::vec(
            (prop_oneof![0u64..21_000, Just(u64::MAX - 1), Just(1u64 << 63), Just((1u64 << 63) - 2)],
             0usize..9_000),
            1..40),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &data).unwrap();
        let f = RealFs.open(&path).unwrap();
        let m = f.map().expect("a non-empty real file maps");
        prop_assert_eq!(m.len(), data.len() as u64);
        for (off, len) in reads {
            let want = f.read_vec_at(len, off).map_err(|e| e.kind());
            let got = m.read_vec_at(len, off).map_err(|e| e.kind());
            prop_assert_eq!(&got, &want, "read_vec_at({}, {})", len, off);
            let mut a = vec![7u8; len];
            let mut b = vec![7u8; len];
            let wa = f.read_at(&mut a, off).map_err(|e| e.kind());
            let ga = m.read_at(&mut b, off).map_err(|e| e.kind());
            prop_assert_eq!(ga, wa, "read_at({}, {})", len, off);
            if wa.is_ok() {
                prop_assert_eq!(&b, &a);
            }
        }
    }
}

/// What is never mapped: an empty file, and files of the fault-injecting file system (its
/// simulated crash truncates files under open readers).
#[test]
fn empty_and_fault_fs_files_are_not_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, b"").unwrap();
    assert!(RealFs.open(&path).unwrap().map().is_none());
    std::fs::write(&path, b"abc").unwrap();
    assert!(RealFs.open(&path).unwrap().map().is_some());
    assert!(FaultFs::new().open(&path).unwrap().map().is_none());
}

/// A mapped file stays readable after it is unlinked (an obsolete SST still held by a
/// reader), and reads see bytes another writer changed in place (a bit flip on disk is read,
/// and then caught by the block's checksum, not hidden by the mapping).
#[test]
fn mapped_file_after_unlink_and_in_place_change() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, b"abcdef").unwrap();
    let m = RealFs.open(&path).unwrap().map().unwrap();
    let w = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    w.write_all_at(b"X", 2).unwrap();
    assert_eq!(m.read_vec_at(4, 1).unwrap(), b"bXde");
    std::fs::remove_file(&path).unwrap();
    assert_eq!(m.read_vec_at(6, 0).unwrap(), b"abXdef");
}
