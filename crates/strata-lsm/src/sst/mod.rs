//! Sorted string tables: blocks, bloom filters, the block cache, the table reader/writer and
//! the table iterator.

pub mod block;
pub mod bloom;
pub mod cache;
mod format;
pub(crate) mod heads;
pub mod index;
pub mod iter;
pub mod keycmp;
mod lookup_order;
pub mod point;
pub(crate) mod pool;
pub(crate) mod split;
pub mod table;
mod writer;
