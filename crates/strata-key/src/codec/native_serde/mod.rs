//! Your own types as keys: serde straight to and from the native format, with no [`Value`]
//! in between.
//!
//! The top-level struct, tuple or sequence is *flattened*: each field is one top-level element,
//! so a key prefix made of the leading fields is a byte prefix, and the bytes are those of the
//! equivalent dynamic [`Tuple`](crate::Tuple). Below the top level, structs, tuples, sequences
//! and maps become nested tuples. Mapping:
//!
//! | serde | native element |
//! |---|---|
//! | `bool` | Bool |
//! | integers (`i8`…`i128`; `u8`…`u128` up to `i128::MAX`) | Int |
//! | `f32` / `f64` | F32 / Float |
//! | `char`, `str` | Text |
//! | bytes (e.g. `serde_bytes`) | Bytes |
//! | `None`, `()`, unit struct | Null |
//! | `Some(x)` | x |
//! | unit variant | Int (the variant index: declaration order) |
//! | other variants | tuple (index, fields…) |
//! | struct, tuple, seq | tuple (flattened at the top level) |
//! | map | tuple of alternating keys and values |
//! | [`Decimal`](crate::Decimal) (a newtype struct with a private name) | Decimal |
//!
//! Decoding a Uuid element gives its 16 bytes; Time elements are not supported through serde
//! (use [`Value`]). A `uuid::Uuid` field is written as bytes by uuid's own serde impl; with
//! `#[serde(with = "strata_key::serde_uuid")]` it is a Uuid element (the bytes of the dynamic
//! tuple's `Value::Uuid`, 17 bytes, sorting as a UUID) and reads back faster.
//!
//! [`Value`]: crate::Value
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use strata_key::codec::native_serde::{from_key, to_key};
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct PostKey { user: String, ts: i64 }
//!
//! let k = to_key(&PostKey { user: "ann".into(), ts: 7 }).unwrap();
//! assert_eq!(from_key::<PostKey>(&k).unwrap(), PostKey { user: "ann".into(), ts: 7 });
//! // The same bytes as the dynamic tuple:
//! use strata_key::{tuple, TupleCodec, codec::native::NativeCodec};
//! assert_eq!(k, NativeCodec::new().encode(&tuple!("ann", 7)).unwrap());
//! ```

use std::fmt::Display;

use serde::de::{self, DeserializeSeed, EnumAccess, SeqAccess, VariantAccess, Visitor};
use serde::ser::{self, Serialize};

use super::native::{
    encode_i64, encode_int, encode_u64, ordered_f32, put_f64, put_string, put_text, put_uuid,
    unordered_f32, Order, Reader, MAX_DEPTH, TAG_BYTES, TAG_END, TAG_F32, TAG_F64, TAG_F64_HI,
    TAG_FALSE, TAG_INT_MAX, TAG_INT_MIN, TAG_NULL_FIRST, TAG_NULL_LAST, TAG_TEXT, TAG_TIME,
    TAG_TRUE, TAG_TUPLE, TAG_UUID, TAG_UUID_HI, TRAILER,
};
use super::native::{put_decimal, SHORT_BUF, TAG_DECIMAL};
use crate::decimal::{serde_capture, SERDE_TOKEN};
use crate::error::DecodeError;
use crate::serde_uuid::{capture as uuid_capture, UUID_TOKEN};

/// The error of the serde bridge: one pointer to a [`KeySerdeErrorKind`] (what went wrong).
///
/// Errors are rare, and a one-register error lets every `Result` of the encoder and decoder
/// that holds a small value (an integer, `()`, `Option<u64>`) return in registers instead of
/// through the stack (`docs/bench/keys.md`, session 22).
///
/// ```
/// use strata_key::codec::native_serde::{from_key, to_key, KeySerdeErrorKind};
/// let k = to_key(&(1u8, 2u8)).unwrap();
/// let e = from_key::<(u8,)>(&k).unwrap_err();
/// assert!(matches!(e.kind(), KeySerdeErrorKind::Trailing(1)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySerdeError(Box<KeySerdeErrorKind>);

/// What went wrong in the serde bridge: [`KeySerdeError::kind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeySerdeErrorKind {
    /// A serde error message (from a Serialize/Deserialize impl or a type mismatch).
    #[error("{0}")]
    Message(String),
    /// The bytes are not a valid native key.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// Bytes left after the value was read.
    #[error("{0} trailing bytes after the key's value")]
    Trailing(usize),
}

impl KeySerdeError {
    /// What went wrong.
    pub fn kind(&self) -> &KeySerdeErrorKind {
        &self.0
    }

    /// What went wrong, by value.
    pub fn into_kind(self) -> KeySerdeErrorKind {
        *self.0
    }

    /// A [`KeySerdeErrorKind::Message`] error.
    #[cold]
    #[inline(never)]
    pub(crate) fn message(msg: String) -> KeySerdeError {
        KeySerdeErrorKind::Message(msg).into()
    }
}

impl From<KeySerdeErrorKind> for KeySerdeError {
    #[cold]
    #[inline(never)]
    fn from(kind: KeySerdeErrorKind) -> KeySerdeError {
        KeySerdeError(Box::new(kind))
    }
}

impl From<DecodeError> for KeySerdeError {
    #[cold]
    #[inline(never)]
    fn from(e: DecodeError) -> KeySerdeError {
        KeySerdeErrorKind::Decode(e).into()
    }
}

impl Display for KeySerdeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for KeySerdeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&*self.0)
    }
}

impl ser::Error for KeySerdeError {
    #[cold]
    fn custom<T: Display>(msg: T) -> Self {
        KeySerdeError::message(msg.to_string())
    }
}

impl de::Error for KeySerdeError {
    #[cold]
    fn custom<T: Display>(msg: T) -> Self {
        KeySerdeError::message(msg.to_string())
    }
}

type Result<T> = std::result::Result<T, KeySerdeError>;

/// Encodes `value` as a native key (all fields ascending, nulls first).
pub fn to_key<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    to_key_with_orders(value, &[])
}

/// Encodes `value` as a native key with one [`Order`] per leading top-level field.
///
/// ```
/// use strata_key::codec::native::Order;
/// use strata_key::codec::native_serde::{from_key, to_key_with_orders};
/// let o = [Order::ASC, Order::DESC];
/// let a = to_key_with_orders(&("u", 2u32), &o).unwrap();
/// let b = to_key_with_orders(&("u", 1u32), &o).unwrap();
/// assert!(a < b);
/// assert_eq!(from_key::<(String, u32)>(&a).unwrap(), ("u".to_string(), 2));
/// ```
pub fn to_key_with_orders<T: Serialize + ?Sized>(value: &T, orders: &[Order]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(32);
    to_key_into(value, orders, &mut out)?;
    Ok(out)
}

/// Appends the native key of `value` to `out` (reuse one buffer for many keys).
#[inline(always)]
pub fn to_key_into<T: Serialize + ?Sized>(
    value: &T,
    orders: &[Order],
    out: &mut Vec<u8>,
) -> Result<()> {
    if orders.is_empty() {
        // Every element ascending: the serializer without per-element order checks, inlined
        // into the caller (whose `orders` is usually the constant `&[]`).
        return value.serialize(&mut AscRoot { out });
    }
    to_key_ordered(value, orders, out)
}

/// [`to_key_into`] with per-field orders.
#[inline(never)]
fn to_key_ordered<T: Serialize + ?Sized>(
    value: &T,
    orders: &[Order],
    out: &mut Vec<u8>,
) -> Result<()> {
    let mut s = KeySerializer {
        out,
        orders,
        index: 0,
        level: 0,
        top_start: None,
    };
    value.serialize(&mut s)
}

/// Decodes a native key into `T` (strings are decoded into owned `String`s / byte buffers:
/// the format shifts string bytes, so nothing can be borrowed).
#[inline]
// `matches!` rather than `is_ok()`: the value must not be borrowed (see the body).
#[allow(clippy::redundant_pattern_matching)]
pub fn from_key<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
    let mut d = KeyDeserializer {
        r: Reader::new(bytes),
        level: 0,
    };
    // The value is returned as it is (no move through a `?`), and `v` is only matched on,
    // never borrowed, so that rustc can put it in the return place: the value is built there
    // instead of in a local copied out at the end (a copy that read fields back with loads
    // wider than the stores that wrote them, which cannot be store-forwarded and stall;
    // `docs/bench/keys.md`, session 13).
    let v = T::deserialize(De::<Root>::new(&mut d));
    if matches!(v, Ok(_)) && !d.r.at_end() {
        drop(v);
        return Err(KeySerdeErrorKind::Trailing(bytes.len() - d.r.pos).into());
    }
    v
}

mod asc;
mod compound;
#[cfg(test)]
mod de_equivalence;
mod deserializer;
#[cfg(test)]
mod plain_de;
mod serializer;
#[cfg(test)]
mod tests;

use asc::AscRoot;
use deserializer::{De, KeyDeserializer, Root};
use serializer::KeySerializer;
