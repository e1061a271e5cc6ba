//! The one value inside a private newtype struct — a [`Decimal`](crate::Decimal)'s string, a
//! [`serde_uuid`](crate::serde_uuid) field's 16 bytes — for the native key serializers, which
//! write those as elements of their own (a decimal element, a Uuid element) instead of text or
//! bytes.

use std::fmt;

use serde::ser::{Serialize, Serializer};

/// What a private newtype struct held.
pub(crate) enum Captured {
    /// A string (a `Decimal`).
    Str(String),
    /// Exactly 16 bytes (a `serde_uuid` field).
    Bytes16([u8; 16]),
}

/// The value inside the newtype struct named `token`: a string or 16 bytes, anything else an
/// error naming the token.
#[inline]
pub(crate) fn capture<T: Serialize + ?Sized>(
    inner: &T,
    token: &'static str,
) -> Result<Captured, String> {
    inner.serialize(Capture(token)).map_err(|e| e.0)
}

/// A serializer that accepts one string or 16 bytes and nothing else.
struct Capture(&'static str);

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

#[cold]
fn refused(token: &str) -> CaptureError {
    CaptureError(format!("{token} must hold a string or 16 bytes"))
}

macro_rules! refuse {
    ($($method:ident($($arg:ty),*)),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<Captured, CaptureError> {
            Err(refused(self.0))
        }
    )*};
}

macro_rules! refuse_compound {
    ($($method:ident($($arg:ty),*) -> $ret:ty),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$ret, CaptureError> {
            Err(refused(self.0))
        }
    )*};
}

type No = serde::ser::Impossible<Captured, CaptureError>;

impl Serializer for Capture {
    type Ok = Captured;
    type Error = CaptureError;
    type SerializeSeq = No;
    type SerializeTuple = No;
    type SerializeTupleStruct = No;
    type SerializeTupleVariant = No;
    type SerializeMap = No;
    type SerializeStruct = No;
    type SerializeStructVariant = No;

    fn serialize_str(self, v: &str) -> Result<Captured, CaptureError> {
        Ok(Captured::Str(v.to_owned()))
    }

    #[inline]
    fn serialize_bytes(self, v: &[u8]) -> Result<Captured, CaptureError> {
        match <[u8; 16]>::try_from(v) {
            Ok(b) => Ok(Captured::Bytes16(b)),
            Err(_) => Err(refused(self.0)),
        }
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
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Captured, CaptureError> {
        Err(refused(self.0))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<Captured, CaptureError> {
        Err(refused(self.0))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Captured, CaptureError> {
        Err(refused(self.0))
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
