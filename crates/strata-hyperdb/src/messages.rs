//! The protobuf messages of `schema.proto`, with the reference's canonical encoding.
//!
//! prost writes fields in tag order, writes `required` fields always (so an empty trie is
//! `22 00`), writes an `Option` exactly when it is `Some` (so a zero-length value is `12 00`),
//! and `packed = "false"` keeps `clock` unpacked (`28 xx` per element), as hyperdb does.

use prost::Message;

/// `message Header { required string protocol = 1; }`: block 0 of every writer's feed.
#[derive(Clone, PartialEq, Message)]
pub struct Header {
    /// Always `"hyperdb"`.
    #[prost(string, required, tag = "1")]
    pub protocol: String,
}

/// `message Feed { required bytes key = 1; }`: one writer's feed key inside an InflatedEntry.
#[derive(Clone, PartialEq, Message)]
pub struct FeedRef {
    /// The 32-byte public key of the feed.
    #[prost(bytes = "vec", required, tag = "1")]
    pub key: Vec<u8>,
}

/// `Entry` and `InflatedEntry` in one message (an Entry has no field 7 or 8).
#[derive(Clone, PartialEq, Message)]
pub struct Entry {
    /// The normalised key (UTF-8; kept as bytes so invalid UTF-8 decodes like JS, lossily).
    #[prost(bytes = "vec", required, tag = "1")]
    pub key: Vec<u8>,
    /// The value; absent for deletes and null puts.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub value: Option<Vec<u8>>,
    /// `Some(true)` on tombstones, otherwise absent.
    #[prost(bool, optional, tag = "3")]
    pub deleted: Option<bool>,
    /// The encoded trie (see [`crate::trie`]).
    #[prost(bytes = "vec", required, tag = "4")]
    pub trie: Vec<u8>,
    /// One element per known feed: `[seq + 1]` for a single writer.
    #[prost(uint64, repeated, packed = "false", tag = "5")]
    pub clock: Vec<u64>,
    /// Seq of this writer's latest InflatedEntry (its own seq in an InflatedEntry).
    #[prost(uint64, optional, tag = "6")]
    pub inflate: Option<u64>,
    /// InflatedEntry only: every known feed, source first.
    #[prost(message, repeated, tag = "7")]
    pub feeds: Vec<FeedRef>,
    /// InflatedEntry only, with content feeds: this writer's content feed key.
    #[prost(bytes = "vec", optional, tag = "8")]
    pub content_feed: Option<Vec<u8>>,
}

/// The header block bytes (`0a 07 "hyperdb"`).
pub fn header_block() -> Vec<u8> {
    Header {
        protocol: "hyperdb".to_string(),
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes() {
        assert_eq!(header_block(), b"\x0a\x07hyperdb");
    }

    #[test]
    fn canonical_entry() {
        let e = Entry {
            key: b"a/c".to_vec(),
            value: Some(b"hello".to_vec()),
            deleted: None,
            trie: vec![0x22, 0x04, 0x00, 0x01],
            clock: vec![3],
            inflate: Some(1),
            feeds: vec![],
            content_feed: None,
        };
        let hex: String = e
            .encode_to_vec()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, "0a03612f63120568656c6c6f22042204000128033001");
        let empty = Entry {
            key: vec![],
            value: Some(vec![]),
            deleted: Some(true),
            trie: vec![],
            clock: vec![0],
            inflate: Some(0),
            feeds: vec![],
            content_feed: None,
        };
        assert_eq!(
            empty.encode_to_vec(),
            vec![0x0a, 0, 0x12, 0, 0x18, 1, 0x22, 0, 0x28, 0, 0x30, 0]
        );
    }
}
