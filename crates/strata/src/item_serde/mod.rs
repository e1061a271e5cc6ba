//! Items as the caller's own types, through serde: [`to_item_bytes`] serializes a value
//! straight to the stored item bytes and [`from_item_bytes`] decodes stored bytes straight into
//! a value, with no intermediate [`crate::Item`] (no map, no owned attribute names). The bytes
//! are the item format of `docs/format/tables.md`, unchanged: a value and its equivalent
//! [`crate::Item`] encode to the same bytes, so typed and [`crate::Item`] reads and writes mix
//! freely on one table.
//!
//! | serde (Rust) | item attribute |
//! |---|---|
//! | struct, map with text keys | map (the top level must be one: the item's attributes) |
//! | `bool` | bool |
//! | integers (`i8`…`i128`, `u8`…`u128` up to `i128::MAX`) | int |
//! | `f32` / `f64` | f32 / float |
//! | `char`, `str`, `String` | text |
//! | bytes (`serde_bytes`) | bytes |
//! | `None`, `()`, unit struct | NULL |
//! | `Some(x)`, newtype struct | `x` |
//! | sequence, tuple, tuple struct (`Vec`, arrays, …) | list |
//! | unit enum variant | text (the variant's name) |
//! | variant with data | map of one entry `{variant: data}` (serde's external tagging) |
//!
//! Reading, attributes the type does not name are skipped; a missing attribute is an error
//! unless the field is an `Option` (read as `None`) or has `#[serde(default)]`; `None` is
//! written as NULL (add `#[serde(skip_serializing_if = "Option::is_none")]` to leave the
//! attribute out instead). uuid, time and decimal values, which serde has no type for, are read
//! as their text form (`uuid::Uuid`'s `Deserialize` takes it); sets and key tuples as
//! sequences. A value that does not fit fails with [`crate::Error::ItemType`], naming the
//! attribute (`a.b.[2]` for nested ones) and its byte offset; bytes that are not an item fail
//! with [`crate::Error::Corrupt`].

mod de;
mod ser;

pub use de::from_item_bytes;
pub use ser::{to_item_bytes, SerError};
pub(crate) use ser::{to_item_bytes_keyed_into, KeySpots};

/// [`from_item_bytes`] for owned types, as a plain `fn` (the decoder of typed [`crate::Rows`]).
pub(crate) fn decode_owned<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> crate::Result<T> {
    from_item_bytes(bytes)
}

#[cfg(test)]
mod de_tests;
#[cfg(test)]
mod tests;
