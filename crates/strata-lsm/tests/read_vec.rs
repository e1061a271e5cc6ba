//! `ReadableFile::read_vec_at` (the real file reads into uninitialised capacity with
//! `pread`) against the model: the file's bytes, or `UnexpectedEof` past its end; and against
//! the trait's zeroing default (`read_at` into a zeroed buffer).

use std::io::ErrorKind;

use proptest::prelude::*;
use strata_lsm::fs::{Fs, RealFs};

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
