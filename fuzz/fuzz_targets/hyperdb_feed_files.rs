#![no_main]
//! A feed's six SLEEP files from untrusted bytes (split on 0xfe 0xfe 0xfe): opening, the
//! header and secret-key checks of `verify`, the merkle/signature check and block reads end
//! with a value or an error, never a panic or a hang.

use libfuzzer_sys::fuzz_target;
use strata_hyperdb::sleep::{Feed, FeedFiles, MemFile};

fuzz_target!(|data: &[u8]| {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    let mut rest = data;
    while parts.len() < 5 {
        match rest.windows(3).position(|w| w == [0xfe, 0xfe, 0xfe]) {
            Some(i) => {
                parts.push(rest[..i].to_vec());
                rest = &rest[i + 3..];
            }
            None => break,
        }
    }
    parts.push(rest.to_vec());
    parts.resize(6, Vec::new());
    let make = || {
        let file = |i: usize| Box::new(MemFile { bytes: parts[i].clone() });
        FeedFiles {
            key: file(0),
            secret_key: file(1),
            tree: file(2),
            data: file(3),
            bitfield: file(4),
            signatures: file(5),
        }
    };
    for writable in [false, true] {
        let Ok(feed) = Feed::open(make(), writable) else {
            continue;
        };
        let _ = feed.verify_files();
        let _ = feed.verify();
        for seq in 0..feed.len().min(8) {
            let _ = feed.get(seq);
        }
    }
});
