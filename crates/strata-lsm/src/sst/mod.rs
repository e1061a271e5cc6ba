//! Sorted string tables: blocks, bloom filters, the block cache and the table reader/writer.

pub mod block;
pub mod bloom;
pub mod cache;
pub mod table;
