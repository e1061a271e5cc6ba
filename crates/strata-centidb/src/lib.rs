//! # strata-centidb
//!
//! The centidb record store on Strata's engine, byte-compatible with the original
//! (David Wilson's centidb / acid, github dw/acid at 9402b10, the last code with the record
//! format of the seed `03-centidb-storage-format.rst`):
//!
//! * a [`Store`] over any [`strata_lsm::Engine`] and a key prefix;
//! * [`Collection`]s with a key function or auto-increment keys, values encoded by an
//!   [`codec::Encoder`] (`key`, `pickle`, `json`, `plain`, or your own) and packed by a
//!   [`codec::Packer`] (`plain`, `zlib`, `bz2`, `zstd`, `lz4`, or your own);
//! * secondary [`Index`]es kept consistent on every put and delete;
//! * counters ([`Store::count`]);
//! * batch records ([`Collection::batch`]): runs of records compressed together, which
//!   reads see through in both directions and writes split when a member changes.
//!
//! Every operation commits as one atomic, conditional engine write batch. The byte formats
//! are in `docs/format/centidb.md`, with every place where Strata and the original differ.

pub mod batch;
pub mod codec;
pub mod collection;
pub mod doc;
pub mod error;
pub mod format;
pub mod index;
pub mod iter;
pub mod keyfn;
pub mod meta;
pub mod ops;
pub mod py27;
pub mod store;
pub mod txn;
pub mod typed;
pub mod varint;

pub use batch::{BatchOptions, BatchReport};
pub use collection::{Collection, KeySource, PutOptions};
pub use doc::Doc;
pub use error::{Error, Result};
pub use index::{Index, IndexQuery};
pub use iter::Query;
pub use keyfn::{FnSpec, ValueFn};
pub use store::{CollectionInfo, CollectionOptions, Store, StoreOptions};
