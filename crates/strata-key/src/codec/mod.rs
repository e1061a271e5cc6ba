//! Tuple codecs behind one trait.
//!
//! | codec | module | ordered | notes |
//! |---|---|---|---|
//! | Strata native | [`native`] | yes, per-field desc / nulls last | the default everywhere |
//! | centidb / acid keylib | [`centidb`] | yes (centidb's kind order) | byte-identical encoder, fixed decoder |
//! | FoundationDB tuple layer | [`fdb`] | yes (FDB's type-code order) | byte-identical |
//! | chogori SKV | [`skv`] | yes, schema-driven | byte-identical for SKV's types, plus ours |
//!
//! Every byte format is specified in `docs/FORMAT.md`.

pub mod centidb;
pub mod fdb;
mod float;
pub mod native;
pub mod native_serde;
pub mod skv;

use crate::error::{DecodeError, EncodeError};
use crate::value::{Tuple, Value};

/// Encodes tuples to bytes and decodes them back.
///
/// Decoders take untrusted bytes: they never panic and report the byte offset at fault.
pub trait TupleCodec {
    /// Short name (`"native"`, `"centidb"`, `"fdb"`, `"skv"`), used in errors.
    fn name(&self) -> &'static str;

    /// Appends the encoding of `tuple` to `out`. On error `out` may hold a partial encoding.
    fn encode_into(&self, tuple: &[Value], out: &mut Vec<u8>) -> Result<(), EncodeError>;

    /// The encoding of `tuple` in a new buffer.
    fn encode(&self, tuple: &[Value]) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(16 * tuple.len().max(1));
        self.encode_into(tuple, &mut out)?;
        Ok(out)
    }

    /// Decodes a whole key.
    fn decode(&self, bytes: &[u8]) -> Result<Tuple, DecodeError>;
}
