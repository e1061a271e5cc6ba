//! What `Hyperdb::create` and `Hyperdb::sync` make durable besides file contents: the names
//! of the directories and files they created (a power loss can otherwise take a whole new
//! database, synced writes and all).

use std::path::PathBuf;

use crate::db::{CreateOptions, Hyperdb};
use crate::sleep::store::dir_syncs;

#[test]
fn create_makes_every_new_name_durable_and_later_syncs_add_no_directory_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a").join("db");
    dir_syncs::take();
    dir_syncs::take_files();
    let mut db = Hyperdb::create(
        &dir,
        CreateOptions {
            key_pair: None,
            content_feed: true,
        },
    )
    .unwrap();
    let synced = dir_syncs::take();
    let content = std::fs::read_dir(dir.join("content"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .expect("a content feed directory");
    let want: Vec<PathBuf> = vec![
        tmp.path().to_path_buf(), // holds a/
        tmp.path().join("a"),     // holds db/
        dir.clone(),              // holds source/ and content/
        dir.join("source"),       // holds the six feed files
        dir.join("content"),      // holds the content feed's directory
        content.clone(),          // holds its six files
    ];
    for d in &want {
        assert!(synced.contains(d), "{} not synced: {synced:?}", d.display());
    }
    // Every file of both feeds had its data synced (`key` and `secret_key` included).
    let files = dir_syncs::take_files();
    for feed in [dir.join("source"), content.clone()] {
        for name in crate::sleep::store::FILE_NAMES {
            let f = feed.join(name);
            assert!(files.contains(&f), "{} not synced: {files:?}", f.display());
        }
    }
    db.put("k", b"v").unwrap();
    db.sync().unwrap();
    assert_eq!(dir_syncs::take(), Vec::<PathBuf>::new());
    drop(db);

    // A writable open of the existing database syncs no directory.
    let mut db = Hyperdb::open(&dir).unwrap();
    db.put("k2", b"v").unwrap();
    db.sync().unwrap();
    assert_eq!(dir_syncs::take(), Vec::<PathBuf>::new());
}
