//! A decoded feed entry (a put, a delete or a null put) with its path and trie.

use prost::Message;

use crate::error::{Error, Result};
use crate::messages::{Entry, FeedRef};
use crate::path;
use crate::trie::Trie;

/// Largest accepted number of clock elements (one per writer; hostile feeds get an error).
const MAX_CLOCK: usize = 1 << 16;

/// One database node: the entry at `seq` of feed `feed`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Normalised key.
    pub key: String,
    /// Value bytes; `None` for tombstones and null puts.
    pub value: Option<Vec<u8>>,
    /// True for a tombstone.
    pub deleted: bool,
    /// The trie stored with this node.
    pub trie: Trie,
    /// The vector clock (`[seq + 1]` for a single writer).
    pub clock: Vec<u64>,
    /// Seq of the writer's latest InflatedEntry when this node was written.
    pub inflate: u64,
    /// Block number.
    pub seq: u64,
    /// Feed index (0 = source).
    pub feed: u64,
    /// `path::hash(key, true)`.
    pub path: Vec<u8>,
}

/// What to put into an encoded block besides the node itself.
pub struct Inflation<'a> {
    /// Every feed key (source first).
    pub feeds: &'a [[u8; 32]],
    /// The content feed key, when the database has one.
    pub content_feed: Option<[u8; 32]>,
}

impl Node {
    /// Decodes block `seq` of feed `feed` from untrusted bytes. Trie pointers into the same feed
    /// must point strictly backwards and past the header (`1 <= ptr.seq < seq`), which makes
    /// every walk over the trie finite.
    pub fn decode(feed: u64, seq: u64, block: &[u8]) -> Result<Node> {
        let what = format!("block {seq}");
        let entry =
            Entry::decode(block).map_err(|e| Error::decode(what.clone(), 0, e.to_string()))?;
        if entry.clock.len() > MAX_CLOCK {
            return Err(Error::decode(what, 0, "clock has too many elements"));
        }
        let key = match String::from_utf8(entry.key) {
            Ok(k) => k,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        let path = path::hash(&key, true);
        let trie = Trie::decode(&entry.trie, path.len(), "").map_err(|e| match e {
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
        for (_, bucket) in trie.levels() {
            for p in bucket.iter().flatten() {
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
        Ok(Node {
            key,
            value: entry.value,
            deleted: entry.deleted.unwrap_or(false),
            trie,
            clock: entry.clock,
            inflate: entry.inflate.unwrap_or(0),
            seq,
            feed,
            path,
        })
    }

    /// Encodes the node as hyperdb writes it; `inflation` makes it an InflatedEntry.
    pub fn encode(&self, inflation: Option<&Inflation<'_>>) -> Vec<u8> {
        let mut entry = Entry {
            key: self.key.as_bytes().to_vec(),
            value: self.value.clone(),
            deleted: self.deleted.then_some(true),
            trie: self.trie.to_bytes(),
            clock: self.clock.clone(),
            inflate: Some(self.inflate),
            feeds: Vec::new(),
            content_feed: None,
        };
        if let Some(inf) = inflation {
            entry.feeds = inf
                .feeds
                .iter()
                .map(|k| FeedRef { key: k.to_vec() })
                .collect();
            entry.content_feed = inf.content_feed.map(|k| k.to_vec());
        }
        entry.encode_to_vec()
    }
}
