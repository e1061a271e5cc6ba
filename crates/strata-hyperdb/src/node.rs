//! A decoded feed entry (a put, a delete or a null put) with its path and trie.
//!
//! A node is compact: its trie stays encoded (read in place through [`TrieView`]) and its path
//! is one SipHash per key segment ([`KeyPath`]), so a cached node costs a few hundred bytes and
//! a walk touches two allocations per node.

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::path::KeyPath;
use crate::trie::Trie;
use crate::trie_view::{TrieBytes, TrieView};
use crate::wire::{EntryFields, EntryView};

/// Largest accepted number of clock elements (one per writer; hostile feeds get an error).
const MAX_CLOCK: usize = 1 << 16;

/// One database node: the entry at `seq` of feed `feed`.
///
/// The fields are laid out in the order a walk reads them (`repr(C)`): the seq, feed and
/// tombstone flag share the cache line of the `Arc` counts, followed by the key, the path and
/// the trie; what only callers read (value, clock) comes last.
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Node {
    /// Block number.
    pub seq: u64,
    /// Feed index (0 = source).
    pub feed: u64,
    /// True for a tombstone.
    pub deleted: bool,
    /// Normalised key.
    pub key: String,
    /// `path::hash(key, true)`, as segment hashes.
    path: KeyPath,
    /// The trie, encoded and indexed (checked by [`TrieBytes::parse`] or written by us).
    trie: TrieBytes,
    /// Value bytes; `None` for tombstones and null puts.
    pub value: Option<Vec<u8>>,
    /// Seq of the writer's latest InflatedEntry when this node was written.
    pub inflate: u64,
    /// The vector clock (`[seq + 1]` for a single writer).
    clock: SmallVec<[u64; 1]>,
}

/// What to put into an encoded block besides the node itself.
pub struct Inflation<'a> {
    /// Every feed key (source first).
    pub feeds: &'a [[u8; 32]],
    /// The content feed key, when the database has one.
    pub content_feed: Option<[u8; 32]>,
}

impl Node {
    /// A node of feed 0 written by this process; `trie` is an encoding made by
    /// [`LevelBuf`](crate::trie_view::LevelBuf).
    pub(crate) fn build(
        key: &str,
        path: KeyPath,
        value: Option<&[u8]>,
        deleted: bool,
        trie: TrieBytes,
        seq: u64,
        inflate: u64,
    ) -> Node {
        Node {
            key: key.to_string(),
            value: value.map(<[u8]>::to_vec),
            deleted,
            inflate,
            seq,
            feed: 0,
            clock: SmallVec::from_elem(seq + 1, 1),
            trie,
            path,
        }
    }

    /// Decodes block `seq` of feed `feed` from untrusted bytes. Trie pointers into the same feed
    /// must point strictly backwards and past the header (`1 <= ptr.seq < seq`), which makes
    /// every walk over the trie finite.
    pub fn decode(feed: u64, seq: u64, block: &[u8]) -> Result<Node> {
        let entry = EntryView::parse(block)
            .map_err(|e| Error::decode(format!("block {seq}"), e.offset, e.reason))?;
        if entry.clock.len() > MAX_CLOCK {
            return Err(Error::decode(
                format!("block {seq}"),
                0,
                "clock has too many elements",
            ));
        }
        let key = match std::str::from_utf8(entry.key) {
            Ok(k) => k.to_string(),
            Err(_) => String::from_utf8_lossy(entry.key).into_owned(),
        };
        let path = KeyPath::of(&key);
        let trie = TrieBytes::parse(entry.trie, path.len(), "").map_err(|e| match e {
            Error::Decode {
                what: w,
                offset,
                reason,
            } => Error::Decode {
                what: format!("block {seq}{w}"),
                offset,
                reason,
            },
            other => other,
        })?;
        for level in trie.view().levels() {
            for v in 0..5 {
                for p in level.bucket(v) {
                    if p.feed == feed && (p.seq >= seq || p.seq == 0) {
                        return Err(Error::InvalidNode {
                            seq,
                            reason: format!(
                                "trie pointer to block {} of its own feed (must be in 1..{seq})",
                                p.seq
                            ),
                        });
                    }
                }
            }
        }
        Ok(Node {
            key,
            value: entry.value.map(<[u8]>::to_vec),
            deleted: entry.deleted.unwrap_or(false),
            inflate: entry.inflate.unwrap_or(0),
            seq,
            feed,
            clock: entry.clock,
            trie,
            path,
        })
    }

    /// The trie, read in place.
    #[inline]
    pub fn trie(&self) -> TrieView<'_> {
        self.trie.view()
    }

    /// The trie as an owned structure (decoded from the node's bytes).
    pub fn trie_owned(&self) -> Trie {
        let mut t = Trie::new();
        for level in self.trie().levels() {
            for v in 0..5 {
                for p in level.bucket(v) {
                    t.push(level.index, v, p);
                }
            }
        }
        t
    }

    /// The vector clock (`[seq + 1]` for a single writer).
    pub fn clock(&self) -> &[u64] {
        &self.clock
    }

    /// The key's path (`path::hash(key, true)`).
    #[inline]
    pub fn key_path(&self) -> &KeyPath {
        &self.path
    }

    /// The key's path as digits.
    pub fn path(&self) -> Vec<u8> {
        self.path.to_digits()
    }

    /// Appends the block encoding of the node; `inflation` makes it an InflatedEntry.
    pub fn encode_into(&self, inflation: Option<&Inflation<'_>>, out: &mut Vec<u8>) {
        EntryFields {
            key: self.key.as_bytes(),
            value: self.value.as_deref(),
            deleted: self.deleted,
            trie: self.trie.encoded(),
            clock: &self.clock,
            inflate: self.inflate,
            feeds: inflation.map_or(&[], |i| i.feeds),
            content_feed: inflation.and_then(|i| i.content_feed.as_ref()),
        }
        .encode(out);
    }

    /// Encodes the node as hyperdb writes it; `inflation` makes it an InflatedEntry.
    pub fn encode(&self, inflation: Option<&Inflation<'_>>) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            self.key.len()
                + self.value.as_ref().map_or(0, Vec::len)
                + self.trie.encoded().len()
                + 32,
        );
        self.encode_into(inflation, &mut out);
        out
    }
}
