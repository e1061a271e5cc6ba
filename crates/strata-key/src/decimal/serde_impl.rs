//! serde: a [`Decimal`] is its canonical string (`"1.5"`), so JSON and other formats keep it
//! exact. It travels as a newtype struct with a private name, which lets the native key
//! serializer (`to_key` / `from_key`) recognise it and write a decimal key element instead of
//! text; every other format sees the string.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use super::Decimal;

/// Name of the newtype struct a [`Decimal`] serializes as.
pub(crate) const SERDE_TOKEN: &str = "$strata_key::private::Decimal";

impl Serialize for Decimal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(SERDE_TOKEN, &self.to_string())
    }
}

struct DecimalVisitor;

impl<'de> Visitor<'de> for DecimalVisitor {
    type Value = Decimal;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a decimal number as a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Decimal, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Decimal, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        d.deserialize_newtype_struct(SERDE_TOKEN, DecimalVisitor)
    }
}

/// Recovers the [`Decimal`] from the inner value of a [`SERDE_TOKEN`] newtype struct (its
/// string), for serializers that encode decimals natively.
pub(crate) fn capture<T: Serialize + ?Sized>(inner: &T) -> Result<Decimal, String> {
    match crate::capture::capture(inner, SERDE_TOKEN)? {
        crate::capture::Captured::Str(s) => s.parse::<Decimal>().map_err(|e| e.to_string()),
        crate::capture::Captured::Bytes16(_) => Err(format!("{SERDE_TOKEN} must hold a string")),
    }
}
