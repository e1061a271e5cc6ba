//! The `native` codec (being written: see issue 2). API fixed; encoding lands shortly.

use crate::codec::TupleCodec;
use crate::error::{DecodeError, EncodeError};
use crate::value::{Tuple, Value};

/// Sort order of one key field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Order {
    /// Descending instead of ascending.
    pub descending: bool,
    /// NULL sorts after every value instead of before.
    pub nulls_last: bool,
}

/// Strata's native tuple codec. Fields beyond the schema are ascending, nulls first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NativeCodec {
    orders: Vec<Order>,
}

impl NativeCodec {
    /// Ascending, nulls first everywhere.
    pub fn new() -> NativeCodec {
        NativeCodec::default()
    }

    /// One [`Order`] per leading field.
    pub fn with_orders(orders: Vec<Order>) -> NativeCodec {
        NativeCodec { orders }
    }
}

impl TupleCodec for NativeCodec {
    fn name(&self) -> &'static str {
        "native"
    }

    fn encode_into(&self, tuple: &[Value], _out: &mut Vec<u8>) -> Result<(), EncodeError> {
        Err(EncodeError::Invalid {
            index: tuple.len(),
            reason: "native codec not built yet".into(),
        })
    }

    fn decode(&self, _bytes: &[u8]) -> Result<Tuple, DecodeError> {
        Err(DecodeError::new("native", 0, "native codec not built yet"))
    }
}

/// Length in bytes of the first `n` top-level elements of a native key, or `None` when the key
/// has fewer elements or is malformed. Used to find the partition part of a table key.
pub fn prefix_len(_key: &[u8], _n: usize) -> Option<usize> {
    None
}
