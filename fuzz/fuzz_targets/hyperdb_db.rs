#![no_main]
//! A whole database from untrusted blocks (split on 0xfe 0xfe): opening and every read
//! (get, list with options, history, key history, diff) end without panicking or hanging.

use libfuzzer_sys::fuzz_target;
use strata_hyperdb::messages::header_block;
use strata_hyperdb::sleep::{Feed, FeedFiles, KeyPair};
use strata_hyperdb::{Hyperdb, ListOptions};

fuzz_target!(|data: &[u8]| {
    let kp = KeyPair::from_seed(&[3u8; 32]);
    let public = kp.public_key();
    let Ok(mut feed) = Feed::create(FeedFiles::memory(), Some(kp), public, true) else {
        return;
    };
    let mut blocks = vec![header_block()];
    blocks.extend(
        data.split(|&b| b == 0xfe)
            .filter(|b| !b.is_empty())
            .take(64)
            .map(<[u8]>::to_vec),
    );
    if feed.append(&blocks).is_err() {
        return;
    }
    let Ok(db) = Hyperdb::open_files(feed.into_files(), false) else {
        return;
    };
    let snap = db.snapshot();
    for key in ["a", "b", "", "a/b", "x"] {
        let _ = snap.get_all(key, true);
        let _ = snap.key_history(key);
    }
    for opts in [
        ListOptions::default(),
        ListOptions {
            recursive: false,
            reverse: true,
            gt: true,
            deletes: true,
        },
    ] {
        let _: Vec<_> = snap.iter("", opts).take(10_000).collect();
        let _: Vec<_> = snap.iter("a", opts).take(10_000).collect();
    }
    let _: Vec<_> = snap.history(true).collect();
    if let Ok(empty) = db.checkout(&[]) {
        let _ = snap.diff(&empty, "", ListOptions::default());
    }
});
