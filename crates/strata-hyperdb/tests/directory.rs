//! A database directory on disk: one writer at a time (an OS lock), the secret key readable by
//! its owner only, and `verify_dir` catching damage that the merkle tree does not cover
//! (file headers, a secret key of another key pair).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use strata_hyperdb::{CreateOptions, Error, Hyperdb, KeyPair};

fn create(dir: &Path) {
    let mut db = Hyperdb::create(dir, CreateOptions::default()).unwrap();
    for i in 0..20 {
        db.put(&format!("k/{i}"), format!("v{i}").as_bytes())
            .unwrap();
    }
}

#[test]
fn one_writer_or_many_readers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Hyperdb::create(&dir, CreateOptions::default()).unwrap();
    // While it is being created, nobody else gets in.
    assert!(matches!(Hyperdb::open(&dir), Err(Error::Locked { .. })));
    assert!(matches!(
        Hyperdb::open_read_only(&dir),
        Err(Error::Locked { .. })
    ));
    assert!(matches!(
        Hyperdb::create(&dir, CreateOptions::default()),
        Err(Error::Locked { .. })
    ));
    assert!(matches!(
        Hyperdb::verify_dir(&dir),
        Err(Error::Locked { .. })
    ));
    drop(db);
    // Readers share.
    let r1 = Hyperdb::open_read_only(&dir).unwrap();
    let r2 = Hyperdb::open_read_only(&dir).unwrap();
    Hyperdb::verify_dir(&dir).unwrap();
    let e = Hyperdb::open(&dir).err().unwrap();
    assert!(matches!(e, Error::Locked { .. }));
    assert!(e.to_string().contains(dir.to_str().unwrap()), "{e}");
    drop((r1, r2));
    let mut w = Hyperdb::open(&dir).unwrap();
    w.put("a", b"1").unwrap();
    drop(w);
    // A finished database cannot be created again.
    assert!(matches!(
        Hyperdb::create(&dir, CreateOptions::default()),
        Err(Error::Invalid(_))
    ));
}

#[test]
fn the_secret_key_is_readable_by_its_owner_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    create(&dir);
    let mode = std::fs::metadata(dir.join("source/secret_key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    // The content feed's (empty) secret_key file too.
    let tmp2 = tempfile::tempdir().unwrap();
    let dir2 = tmp2.path().join("db");
    Hyperdb::create(
        &dir2,
        CreateOptions {
            key_pair: None,
            content_feed: true,
        },
    )
    .unwrap();
    let content = std::fs::read_dir(dir2.join("content"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mode = std::fs::metadata(content.join("secret_key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
}

fn flip(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[at] ^= 0x01;
    std::fs::write(path, b).unwrap();
}

#[test]
fn verify_checks_every_header_byte() {
    for file in ["tree", "signatures", "bitfield"] {
        // Byte 0 is the magic number; 4 the version; 5..7 the entry size; 8.. the name.
        for at in [0usize, 2, 3, 4, 5, 6, 7, 8, 9, 20, 31] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("db");
            create(&dir);
            Hyperdb::verify_dir(&dir).unwrap();
            flip(&dir.join("source").join(file), at);
            let e = Hyperdb::verify_dir(&dir).err();
            let msg = e.map(|e| e.to_string()).unwrap_or_default();
            assert!(
                msg.contains(file) && msg.contains("header"),
                "flipping {file} header byte {at}: {msg:?}"
            );
        }
    }
}

#[test]
fn verify_checks_that_the_secret_key_belongs_to_the_public_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    create(&dir);
    let sk = dir.join("source/secret_key");
    // Another key pair's (self-consistent) secret key.
    let other = KeyPair::from_seed(&[9u8; 32]);
    std::fs::write(&sk, other.secret_key()).unwrap();
    let msg = Hyperdb::verify_dir(&dir).unwrap_err().to_string();
    assert!(msg.contains("secret_key"), "{msg}");
    // A damaged one (halves that disagree).
    let mine = {
        std::fs::write(&sk, b"").unwrap();
        Hyperdb::open_read_only(&dir).unwrap().key()
    };
    let mut bad = other.secret_key();
    bad[32..].copy_from_slice(&mine);
    std::fs::write(&sk, bad).unwrap();
    let msg = Hyperdb::verify_dir(&dir).unwrap_err().to_string();
    assert!(msg.contains("secret_key"), "{msg}");
    // Empty (a read-only copy): fine.
    std::fs::write(&sk, b"").unwrap();
    Hyperdb::verify_dir(&dir).unwrap();
}
