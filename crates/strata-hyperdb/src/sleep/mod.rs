//! hypercore@6 storage (SLEEP): six files per feed, BLAKE2b merkle tree, Ed25519 signatures.

mod batch_tree;
pub mod bitfield;
pub mod crypto;
pub mod feed;
pub mod flat;
pub mod store;

pub use crypto::KeyPair;
pub use feed::Feed;
pub use store::{DiskFile, FeedFiles, MemFile, RandomAccess};
