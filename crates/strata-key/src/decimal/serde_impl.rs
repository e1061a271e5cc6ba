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
    let s = inner.serialize(StrCapture).map_err(|e| e.0)?;
    s.parse::<Decimal>().map_err(|e| e.to_string())
}

/// A serializer that accepts one string and nothing else.
struct StrCapture;

#[derive(Debug)]
struct CaptureError(String);

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaptureError {}

impl serde::ser::Error for CaptureError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        CaptureError(msg.to_string())
    }
}

macro_rules! refuse {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<String, CaptureError> {
            Err(CaptureError(format!("{SERDE_TOKEN} must hold a string")))
        }
    )*};
}

macro_rules! refuse_compound {
    ($($method:ident($($arg:ty),*) -> $ret:ty),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$ret, CaptureError> {
            Err(CaptureError(format!("{SERDE_TOKEN} must hold a string")))
        }
    )*};
}

type No = serde::ser::Impossible<String, CaptureError>;

impl Serializer for StrCapture {
    type Ok = String;
    type Error = CaptureError;
    type SerializeSeq = No;
    type SerializeTuple = No;
    type SerializeTupleStruct = No;
    type SerializeTupleVariant = No;
    type SerializeMap = No;
    type SerializeStruct = No;
    type SerializeStructVariant = No;

    fn serialize_str(self, v: &str) -> Result<String, CaptureError> {
        Ok(v.to_owned())
    }

    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, CaptureError> {
        Err(CaptureError(format!("{SERDE_TOKEN} must hold a string")))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<String, CaptureError> {
        Err(CaptureError(format!("{SERDE_TOKEN} must hold a string")))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, CaptureError> {
        Err(CaptureError(format!("{SERDE_TOKEN} must hold a string")))
    }

    refuse_compound!(
        serialize_seq(Option<usize>) -> No,
        serialize_tuple(usize) -> No,
        serialize_tuple_struct(&'static str, usize) -> No,
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> No,
        serialize_map(Option<usize>) -> No,
        serialize_struct(&'static str, usize) -> No,
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> No,
    );
}
