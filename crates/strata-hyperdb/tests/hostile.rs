//! Untrusted feeds: crafted blocks (pointer loops, pointers past the end or into unknown feeds,
//! trie indexes beyond the path, bucket values above 4, huge varints, truncated messages,
//! fork bombs, wrong signatures) give errors in bounded time, never a hang or a panic.

use std::time::{Duration, Instant};

use prost::Message;
use strata_hyperdb::messages::{header_block, Entry, FeedRef};
use strata_hyperdb::sleep::{Feed, FeedFiles, KeyPair};
use strata_hyperdb::trie::{Pointer, Trie};
use strata_hyperdb::{path, Hyperdb, ListOptions};

fn kp() -> KeyPair {
    KeyPair::from_seed(&[7u8; 32])
}

fn entry(key: &str, seq: u64, trie: Vec<u8>) -> Vec<u8> {
    Entry {
        key: key.as_bytes().to_vec(),
        value: Some(b"v".to_vec()),
        deleted: None,
        trie,
        clock: vec![seq + 1],
        inflate: Some(1),
        feeds: if seq == 1 {
            vec![FeedRef {
                key: kp().public_key().to_vec(),
            }]
        } else {
            vec![]
        },
        content_feed: None,
    }
    .encode_to_vec()
}

/// A database whose blocks after the header are `blocks` (validly signed).
fn db_with(blocks: &[Vec<u8>]) -> strata_hyperdb::Result<Hyperdb> {
    let k = kp();
    let public = k.public_key();
    let mut feed = Feed::create(FeedFiles::memory(), Some(k), public, true)?;
    feed.append(&[header_block()])?;
    feed.append(blocks)?;
    Hyperdb::open_files(feed.into_files(), false)
}

/// Runs every read over the database; each must finish quickly (errors are fine).
fn exercise(db: &Hyperdb) {
    let t = Instant::now();
    let snap = db.snapshot();
    for key in ["a", "b", "k", "", "x/y", "k0", "k1/k2"] {
        let _ = snap.get_all(key, true);
        let _ = snap.key_history(key);
    }
    for prefix in ["", "k", "a"] {
        for opts in [
            ListOptions::default(),
            ListOptions {
                recursive: false,
                ..Default::default()
            },
            ListOptions {
                reverse: true,
                deletes: true,
                ..Default::default()
            },
        ] {
            let _: Vec<_> = snap.iter(prefix, opts).take(100_000).collect();
        }
    }
    let _: Vec<_> = snap.history(false).collect();
    if let Ok(empty) = db.checkout(&[]) {
        let _ = snap.diff(&empty, "", ListOptions::default());
    }
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "reads took {:?}",
        t.elapsed()
    );
}

/// `(index, digit, [(feed, seq)])` triples.
type Levels<'a> = [(usize, u8, &'a [(u64, u64)])];

fn trie_bytes(levels: &Levels<'_>) -> Vec<u8> {
    let mut t = Trie::new();
    for &(i, v, ptrs) in levels {
        for &(feed, seq) in ptrs {
            t.push(i, v, Pointer { feed, seq });
        }
    }
    t.to_bytes()
}

#[test]
fn pointer_loops_and_forward_pointers_are_rejected() {
    let p = path::hash("a", true);
    let other = (p[0] + 1) % 4;
    // Block 2 points at itself, block 3 points forward at 4: both rejected when decoded.
    let blocks = vec![
        entry("b", 1, vec![]),
        entry("a", 2, trie_bytes(&[(0, other, &[(0, 2)])])),
        entry("a", 3, trie_bytes(&[(0, other, &[(0, 4)])])),
        entry("a", 4, trie_bytes(&[(0, other, &[(0, 1)])])),
    ];
    let db = db_with(&blocks).unwrap();
    assert!(db.node(2).is_err());
    assert!(db.node(3).is_err());
    assert!(db.node(4).is_ok());
    exercise(&db);
}

#[test]
fn header_as_head_and_pointers_to_header_are_rejected() {
    let p = path::hash("zz", true);
    let other = (p[0] + 1) % 4;
    let db = db_with(&[entry("zz", 1, trie_bytes(&[(0, other, &[(0, 0)])]))]);
    // Opening decodes the head, which points at block 0.
    assert!(db.is_err());
}

#[test]
fn unknown_feeds_and_out_of_range_values() {
    let p = path::hash("a", true);
    let other = (p[0] + 1) % 4;
    let blocks = vec![
        entry("b", 1, vec![]),
        entry("a", 2, trie_bytes(&[(0, other, &[(9, 1)])])),
    ];
    let db = db_with(&blocks).unwrap();
    exercise(&db);
    // Following the pointer into feed 9 is an error, not a panic.
    let snap = db.snapshot();
    let mut key = String::new();
    for i in 0..1000 {
        let k = format!("q{i}");
        if path::hash(&k, true)[0] == other {
            key = k;
            break;
        }
    }
    assert!(snap.get(&key).is_err());

    // Trie index beyond the path, value 5, value 4 off a boundary, huge varints, truncation.
    let bad_tries: Vec<Vec<u8>> = vec![
        vec![0xc8, 0x01, 0x01, 0x00, 0x01], // index 200 > path length 33
        vec![0x00, 0x20, 0x00, 0x01],       // value 5
        vec![0x03, 0x10, 0x00, 0x01],       // value 4 at index 3
        vec![
            0x00, 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ], // 11-byte varint
        vec![0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], // bits 2^63-1
        vec![0x00, 0x01, 0x01],             // truncated pointer chain
    ];
    for t in bad_tries {
        let db = db_with(&[entry("b", 1, vec![]), entry("a", 2, t.clone())]);
        assert!(db.is_err(), "trie {t:02x?} accepted");
    }
    // Truncated and garbage protobuf messages.
    let good = entry("b", 1, vec![]);
    for cut in [1, 3, good.len() - 1] {
        assert!(db_with(&[good[..cut].to_vec()]).is_err());
    }
    assert!(db_with(&[vec![0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]]).is_err()); // length 4 GB
    assert!(db_with(&[vec![
        0x2a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01
    ]])
    .is_err());
}

#[test]
fn fork_bomb_is_bounded() {
    // Every node points, in every bucket of every index of its first segment, at every earlier
    // node: a DAG with exponentially many paths.
    let n = 60u64;
    let mut blocks = Vec::new();
    blocks.push(entry("k0", 1, vec![]));
    for seq in 2..=n {
        let key = format!("k{seq}");
        let p = path::hash(&key, true);
        let prev: Vec<(u64, u64)> = (1..seq).map(|s| (0, s)).collect();
        let mut levels = Vec::new();
        for (i, &d) in p.iter().enumerate().take(32) {
            for v in 0..4u8 {
                if v != d {
                    levels.push((i, v, prev.as_slice()));
                }
            }
        }
        blocks.push(entry(&key, seq, trie_bytes(&levels)));
    }
    let db = db_with(&blocks).unwrap();
    exercise(&db);
}

#[test]
fn wrong_signature_fails_verify() {
    let k = kp();
    let public = k.public_key();
    let mut feed = Feed::create(FeedFiles::memory(), Some(k), public, true).unwrap();
    feed.append(&[header_block()]).unwrap();
    feed.append(&[entry("a", 1, vec![])]).unwrap();
    assert_eq!(feed.verify().unwrap(), 2);
    let mut files = feed.into_files();
    let mut sig = [0u8; 1];
    files.signatures.read_at(32 + 64 + 5, &mut sig).unwrap();
    files
        .signatures
        .write_at(32 + 64 + 5, &[sig[0] ^ 0x40])
        .unwrap();
    let feed = Feed::open(files, false).unwrap();
    assert!(feed.verify().is_err());
}

#[test]
fn truncated_storage_files_are_errors() {
    let k = kp();
    let public = k.public_key();
    let mut feed = Feed::create(FeedFiles::memory(), Some(k), public, true).unwrap();
    feed.append(&[header_block()]).unwrap();
    feed.append(&[entry("a", 1, vec![])]).unwrap();
    let files = feed.into_files();
    // A tree file cut short.
    let mut t = FeedFiles::memory();
    t.key = files.key;
    t.bitfield = files.bitfield;
    t.data = files.data;
    let mut short = strata_hyperdb::sleep::MemFile::default();
    let mut head = vec![0u8; 60];
    files.tree.read_at(0, &mut head).unwrap();
    strata_hyperdb::sleep::RandomAccess::write_at(&mut short, 0, &head).unwrap();
    t.tree = Box::new(short);
    assert!(Feed::open(t, false).is_err());
}
