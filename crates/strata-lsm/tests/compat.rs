//! Databases written by older versions still open and read back (see `tests/data/*/README.md`).

use std::path::Path;

use strata_lsm::{Cursor, Direction, Engine, KeyRange, LsmEngine, LsmOptions, SyncMode};

/// Copies a fixture database (not its README) into a fresh temporary directory.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "README.md" {
            std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
        }
    }
    dir
}

fn key(i: u32) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

#[test]
fn version_1_ssts_read_back_next_to_version_2() {
    let dir = copy_fixture("sst-v1");
    let opts = LsmOptions {
        sync: SyncMode::None,
        background: false,
        ..LsmOptions::default()
    };
    let check = |e: &LsmEngine, extra: u32| {
        // Every key is found: a classic filter read as a blocked one would drop most.
        for i in 0..1000 {
            let v = e.get(&key(i)).unwrap();
            assert_eq!(v.map(|v| v.len()), Some(100), "key {i}");
        }
        for i in 0..extra {
            assert_eq!(e.get(&key(5000 + i)).unwrap(), Some(b"new".to_vec()));
        }
        let n = e
            .range(KeyRange::all(), Direction::Forward)
            .unwrap()
            .count();
        assert_eq!(n as u32, 1000 + extra);
        let mut c = e.cursor(KeyRange::all(), Direction::Reverse).unwrap();
        c.seek(&key(500)).unwrap();
        assert_eq!(c.key(), key(500).as_slice());
        c.next().unwrap();
        assert_eq!(c.key(), key(499).as_slice());
    };
    let e = LsmEngine::open(dir.path(), opts.clone()).unwrap();
    check(&e, 0);
    // New writes land in version 2 files beside the old one.
    for i in 0..200 {
        strata_lsm::engine::put(&e, &key(5000 + i), b"new").unwrap();
    }
    e.flush().unwrap();
    check(&e, 200);
    e.close().unwrap();
    drop(e);
    let e = LsmEngine::open(dir.path(), opts).unwrap();
    check(&e, 200);
    e.verify().unwrap();
    // Compaction rewrites everything as version 2.
    e.compact().unwrap();
    check(&e, 200);
}
