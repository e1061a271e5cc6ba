//! Record encoders (value ↔ bytes) and packers (bytes ↔ compressed bytes).
//!
//! centidb numbers both in one space: the built-ins `key` = 1, `pickle` = 2, `plain` = 3 and
//! `zlib` = 4 are never written to the store; every other one gets the next number of the
//! counter `\x00encoder_idx` (from 10) on first use, recorded in the metadata by name, so a
//! reopened store finds it again. Strata knows `json`, `bz2`, `zstd` and `lz4` by name (they
//! are "user" encoders to the original, registered the same way), and takes any other through
//! the [`Encoder`] and [`Packer`] traits.

use std::sync::Arc;

use crate::doc::Doc;
use crate::error::{Error, Result};

pub mod key;
pub mod packers;
pub mod pickle;
pub mod pyjson;

/// Serialises record values.
pub trait Encoder: Send + Sync {
    /// The name recorded in the store (`"json"`, `"pickle"`, …).
    fn name(&self) -> &str;
    /// The bytes of a value.
    fn pack(&self, value: &Doc) -> Result<Vec<u8>>;
    /// The value of bytes written by `pack` (untrusted: errors, never panics).
    fn unpack(&self, data: &[u8]) -> Result<Doc>;
}

/// Compresses encoded values (single records and batch payloads).
pub trait Packer: Send + Sync {
    /// The name recorded in the store (`"zlib"`, `"zstd"`, …).
    fn name(&self) -> &str;
    /// Compresses `data`.
    fn pack(&self, data: &[u8]) -> Result<Vec<u8>>;
    /// Decompresses `data` (untrusted) into at most `limit` bytes; more is an error.
    fn unpack(&self, data: &[u8], limit: usize) -> Result<Vec<u8>>;
}

/// The built-in indices, never written to the store.
pub const KEY_IDX: u64 = 1;
/// Index of the pickle encoder.
pub const PICKLE_IDX: u64 = 2;
/// Index of the plain packer (and plain encoder).
pub const PLAIN_IDX: u64 = 3;
/// Index of the zlib packer.
pub const ZLIB_IDX: u64 = 4;

/// The fixed index of a built-in name.
pub fn builtin_idx(name: &str) -> Option<u64> {
    match name {
        "key" => Some(KEY_IDX),
        "pickle" => Some(PICKLE_IDX),
        "plain" => Some(PLAIN_IDX),
        "zlib" => Some(ZLIB_IDX),
        _ => None,
    }
}

/// An encoder Strata knows by this name.
pub fn encoder_by_name(name: &str) -> Option<Arc<dyn Encoder>> {
    Some(match name {
        "key" => Arc::new(key::KeyEncoder),
        "pickle" => Arc::new(pickle::PickleEncoder),
        "json" => Arc::new(pyjson::JsonEncoder),
        "plain" => Arc::new(PlainEncoder),
        _ => return None,
    })
}

/// A packer Strata knows by this name.
pub fn packer_by_name(name: &str) -> Option<Arc<dyn Packer>> {
    Some(match name {
        "plain" => Arc::new(packers::Plain),
        "zlib" => Arc::new(packers::Zlib),
        "bz2" => Arc::new(packers::Bz2),
        "zstd" => Arc::new(packers::Zstd::default()),
        "lz4" => Arc::new(packers::Lz4),
        _ => return None,
    })
}

/// The `plain` encoder: a value is a byte string stored as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainEncoder;

impl Encoder for PlainEncoder {
    fn name(&self) -> &str {
        "plain"
    }

    fn pack(&self, value: &Doc) -> Result<Vec<u8>> {
        match value {
            Doc::Bytes(b) => Ok(b.clone()),
            other => Err(Error::encoding(
                "plain",
                format!("stores byte strings, not a {}", other.kind_name()),
            )),
        }
    }

    fn unpack(&self, data: &[u8]) -> Result<Doc> {
        Ok(Doc::Bytes(data.to_vec()))
    }
}
