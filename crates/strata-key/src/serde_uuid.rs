//! UUIDs in serde keys as native UUID elements: `#[serde(with = "strata_key::serde_uuid")]`.
//!
//! `uuid::Uuid`'s own serde impl writes 16 bytes (or a 36-character string to formats that call
//! themselves human-readable), so [`to_key`](crate::to_key) stores it as a bytes element: an
//! escaped string of 18–19 bytes that sorts as bytes. Through this module the same field is a
//! native **Uuid** element — 17 bytes, the bytes of the dynamic [`Value::Uuid`](crate::Value),
//! sorting with the other UUIDs of the [`Kind`](crate::Kind) order — and reads back with no
//! unescaping (`docs/bench/keys.md`, session 22). Other serde formats see a newtype struct around
//! the 16 bytes. [`from_key`](crate::from_key) of such a field also accepts a bytes element of
//! 16 bytes (keys written through `Uuid`'s own impl).
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use strata_key::{from_key, to_key, tuple, TupleCodec, Value};
//! use strata_key::codec::native::NativeCodec;
//!
//! #[derive(Serialize, Deserialize, PartialEq, Debug)]
//! struct Key {
//!     tenant: u16,
//!     #[serde(with = "strata_key::serde_uuid")]
//!     id: uuid::Uuid,
//! }
//!
//! let id = uuid::Uuid::from_u128(0x1234);
//! let k = to_key(&Key { tenant: 7, id }).unwrap();
//! assert_eq!(k, NativeCodec::new().encode(&tuple!(7, Value::Uuid(id))).unwrap());
//! assert_eq!(from_key::<Key>(&k).unwrap(), Key { tenant: 7, id });
//! ```

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::{Serialize, Serializer};

/// The newtype struct name that the native serde bridge reads as "a UUID element".
pub(crate) const UUID_TOKEN: &str = "$strata_key::private::Uuid";

/// The 16 bytes inside the newtype struct.
struct Inner<'a>(&'a [u8; 16]);

impl Serialize for Inner<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// Serializes `id` as a native Uuid element (through [`to_key`](crate::to_key)); elsewhere a
/// newtype struct around its 16 bytes.
#[inline]
pub fn serialize<S: Serializer>(id: &uuid::Uuid, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_newtype_struct(UUID_TOKEN, &Inner(id.as_bytes()))
}

/// Deserializes what [`serialize`] wrote (through [`from_key`](crate::from_key): a Uuid
/// element, or a bytes element of 16 bytes).
#[inline]
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<uuid::Uuid, D::Error> {
    d.deserialize_newtype_struct(UUID_TOKEN, UuidVisitor)
}

struct UuidVisitor;

impl<'de> Visitor<'de> for UuidVisitor {
    type Value = uuid::Uuid;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a UUID (16 bytes)")
    }

    #[inline]
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<uuid::Uuid, E> {
        match <[u8; 16]>::try_from(v) {
            Ok(b) => Ok(uuid::Uuid::from_bytes(b)),
            Err(_) => Err(E::invalid_length(v.len(), &self)),
        }
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<uuid::Uuid, D::Error> {
        d.deserialize_bytes(self)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<uuid::Uuid, A::Error> {
        let mut b = [0u8; 16];
        for (i, x) in b.iter_mut().enumerate() {
            *x = a
                .next_element()?
                .ok_or_else(|| de::Error::invalid_length(i, &self))?;
        }
        Ok(uuid::Uuid::from_bytes(b))
    }
}

/// The 16 bytes of a [`UUID_TOKEN`] newtype struct's inner value, for serializers that write
/// UUID elements.
#[inline]
pub(crate) fn capture<T: Serialize + ?Sized>(inner: &T) -> Result<[u8; 16], String> {
    match crate::capture::capture(inner, UUID_TOKEN)? {
        crate::capture::Captured::Bytes16(b) => Ok(b),
        crate::capture::Captured::Str(_) => Err(format!("{UUID_TOKEN} must hold 16 bytes")),
    }
}
