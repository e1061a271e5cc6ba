//! The serializer: a `T: Serialize` straight to stored item bytes, byte-identical to
//! [`crate::item_codec::encode_item`] of the equivalent [`crate::Item`] (see the module docs of
//! [`crate::item_serde`] for the mapping).

use std::borrow::Cow;
use std::fmt;

use serde::ser::{self, Impossible, Serialize};

use crate::item_codec::{
    put_bytes, put_varint, zigzag, ITEM_FORMAT, MAX_DEPTH, T_BYTES, T_F32, T_F64, T_FALSE, T_INT,
    T_LIST, T_MAP, T_NULL, T_TEXT, T_TRUE,
};

/// Why a value does not serialize as an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerError(pub(crate) String);

impl fmt::Display for SerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        SerError(msg.to_string())
    }
}

type R = Result<(), SerError>;

/// Serializes `value` as a stored item (format byte, then the attribute map). The value must
/// serialize as a struct or a map with text keys.
pub fn to_item_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, SerError> {
    // Most rows fit; a larger item grows once, in the map's `finish` (which knows its length).
    let mut out = Vec::with_capacity(128);
    value.serialize(Enc {
        out: &mut out,
        depth: 0,
    })?;
    match out.first() {
        // The value was written as a map attribute: its tag becomes the format byte.
        Some(&T_MAP) => {
            out[0] = ITEM_FORMAT;
            Ok(out)
        }
        _ => Err(SerError(
            "an item must serialize as a struct or a map with text keys".into(),
        )),
    }
}

/// Writes one attribute (tag and payload) at nesting level `depth` (a top-level attribute is
/// level 1; the item's own map is level 0).
pub(crate) struct Enc<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) depth: usize,
}

impl Enc<'_> {
    fn int(self, v: i128) -> R {
        self.out.push(T_INT);
        put_varint(self.out, zigzag(v));
        Ok(())
    }

    fn text(self, s: &str) -> R {
        self.out.push(T_TEXT);
        put_bytes(self.out, s.as_bytes());
        Ok(())
    }

    /// A list, map or tuple may sit at levels 1 to `MAX_DEPTH` (the rule of `encode_item`).
    fn nest(&self) -> R {
        if self.depth > MAX_DEPTH {
            return Err(SerError(format!(
                "nested deeper than {MAX_DEPTH} levels of lists and maps"
            )));
        }
        Ok(())
    }

    /// Starts a one-entry map `{variant: …}` (an enum variant with data, externally tagged as
    /// in JSON); returns the level of the entry's value.
    fn variant_map(&mut self, variant: &str) -> Result<usize, SerError> {
        self.nest()?;
        self.out.push(T_MAP);
        put_varint(self.out, 1);
        put_bytes(self.out, variant.as_bytes());
        Ok(self.depth + 1)
    }
}

/// A list being written: elements follow a count, known up front or inserted at the end.
pub(crate) struct SeqEnc<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    /// Where the count goes (when not known up front).
    at: usize,
    expected: Option<usize>,
    n: usize,
}

impl<'a> SeqEnc<'a> {
    fn new(enc: Enc<'a>, len: Option<usize>) -> Result<SeqEnc<'a>, SerError> {
        enc.nest()?;
        enc.out.push(T_LIST);
        if let Some(n) = len {
            put_varint(enc.out, n as u128);
        }
        let at = enc.out.len();
        Ok(SeqEnc {
            out: enc.out,
            depth: enc.depth + 1,
            at,
            expected: len,
            n: 0,
        })
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.n += 1;
        v.serialize(Enc {
            out: self.out,
            depth: self.depth,
        })
    }

    fn finish(self) -> R {
        match self.expected {
            Some(n) if n == self.n => Ok(()),
            Some(n) => Err(SerError(format!(
                "a sequence announced {n} elements and gave {}",
                self.n
            ))),
            None => {
                let mut count = Vec::with_capacity(3);
                put_varint(&mut count, self.n as u128);
                self.out.splice(self.at..self.at, count);
                Ok(())
            }
        }
    }
}

/// A map or struct being written: entries are encoded into a scratch buffer, then written in
/// name order (the stored order), each name once.
pub(crate) struct MapEnc<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    scratch: Vec<u8>,
    entries: Vec<(Cow<'static, str>, usize, usize)>,
    key: Option<String>,
}

impl<'a> MapEnc<'a> {
    fn new(enc: Enc<'a>, len: Option<usize>) -> Result<MapEnc<'a>, SerError> {
        enc.nest()?;
        enc.out.push(T_MAP);
        let n = len.unwrap_or(4);
        Ok(MapEnc {
            out: enc.out,
            depth: enc.depth + 1,
            // Room for a typical row at once (growing it costs a copy per doubling).
            scratch: Vec::with_capacity((n * 32).max(128)),
            entries: Vec::with_capacity(n),
            key: None,
        })
    }

    fn entry<T: Serialize + ?Sized>(&mut self, name: Cow<'static, str>, v: &T) -> R {
        let start = self.scratch.len();
        let r = v.serialize(Enc {
            out: &mut self.scratch,
            depth: self.depth,
        });
        if let Err(SerError(e)) = r {
            return Err(SerError(format!("attribute {name:?}: {e}")));
        }
        self.entries.push((name, start, self.scratch.len()));
        Ok(())
    }

    fn finish(mut self) -> R {
        // Struct fields come in declaration order: usually few, often nearly sorted.
        self.entries
            .sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        if let Some(w) = self.entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(SerError(format!("attribute {:?} appears twice", w[0].0)));
        }
        let names: usize = self.entries.iter().map(|e| e.0.len() + 1).sum();
        self.out.reserve(names + self.scratch.len() + 3);
        put_varint(self.out, self.entries.len() as u128);
        for (name, s, e) in &self.entries {
            put_bytes(self.out, name.as_bytes());
            self.out.extend_from_slice(&self.scratch[*s..*e]);
        }
        Ok(())
    }
}

impl<'a> ser::Serializer for Enc<'a> {
    type Ok = ();
    type Error = SerError;
    type SerializeSeq = SeqEnc<'a>;
    type SerializeTuple = SeqEnc<'a>;
    type SerializeTupleStruct = SeqEnc<'a>;
    type SerializeTupleVariant = SeqEnc<'a>;
    type SerializeMap = MapEnc<'a>;
    type SerializeStruct = MapEnc<'a>;
    type SerializeStructVariant = MapEnc<'a>;

    fn serialize_bool(self, v: bool) -> R {
        self.out.push(if v { T_TRUE } else { T_FALSE });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> R {
        self.int(v.into())
    }
    fn serialize_i16(self, v: i16) -> R {
        self.int(v.into())
    }
    fn serialize_i32(self, v: i32) -> R {
        self.int(v.into())
    }
    fn serialize_i64(self, v: i64) -> R {
        self.int(v.into())
    }
    fn serialize_i128(self, v: i128) -> R {
        self.int(v)
    }
    fn serialize_u8(self, v: u8) -> R {
        self.int(v.into())
    }
    fn serialize_u16(self, v: u16) -> R {
        self.int(v.into())
    }
    fn serialize_u32(self, v: u32) -> R {
        self.int(v.into())
    }
    fn serialize_u64(self, v: u64) -> R {
        self.int(v.into())
    }
    fn serialize_u128(self, v: u128) -> R {
        let v = i128::try_from(v)
            .map_err(|_| SerError(format!("integer {v} is out of range (128-bit signed)")))?;
        self.int(v)
    }
    fn serialize_f32(self, v: f32) -> R {
        self.out.push(T_F32);
        self.out.extend_from_slice(&v.to_bits().to_be_bytes());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> R {
        self.out.push(T_F64);
        self.out.extend_from_slice(&v.to_bits().to_be_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> R {
        self.text(v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_str(self, v: &str) -> R {
        self.text(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        self.out.push(T_BYTES);
        put_bytes(self.out, v);
        Ok(())
    }
    fn serialize_none(self) -> R {
        self.out.push(T_NULL);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> R {
        value.serialize(self)
    }
    fn serialize_unit(self) -> R {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _name: &'static str) -> R {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _name: &'static str, _i: u32, variant: &'static str) -> R {
        self.text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        v: &T,
    ) -> R {
        let depth = self.variant_map(variant)?;
        v.serialize(Enc {
            out: self.out,
            depth,
        })
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqEnc<'a>, SerError> {
        SeqEnc::new(self, len)
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqEnc<'a>, SerError> {
        SeqEnc::new(self, Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SeqEnc<'a>, SerError> {
        SeqEnc::new(self, Some(len))
    }
    fn serialize_tuple_variant(
        mut self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqEnc<'a>, SerError> {
        let depth = self.variant_map(variant)?;
        SeqEnc::new(
            Enc {
                out: self.out,
                depth,
            },
            Some(len),
        )
    }
    fn serialize_map(self, len: Option<usize>) -> Result<MapEnc<'a>, SerError> {
        MapEnc::new(self, len)
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<MapEnc<'a>, SerError> {
        MapEnc::new(self, Some(len))
    }
    fn serialize_struct_variant(
        mut self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<MapEnc<'a>, SerError> {
        let depth = self.variant_map(variant)?;
        MapEnc::new(
            Enc {
                out: self.out,
                depth,
            },
            Some(len),
        )
    }
}

/// Sequences, tuples, tuple structs and tuple variants all encode as a list: one impl each, as
/// serde requires, all forwarding to `SeqEnc::element` / `SeqEnc::finish`.
macro_rules! seq_like {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for SeqEnc<'_> {
            type Ok = ();
            type Error = SerError;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
                self.element(v)
            }
            fn end(self) -> R {
                self.finish()
            }
        }
    )*};
}

seq_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for MapEnc<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> R {
        self.key = Some(key.serialize(KeyName)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        let name = self
            .key
            .take()
            .ok_or_else(|| SerError("a map value without a key".into()))?;
        self.entry(Cow::Owned(name), v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

impl ser::SerializeStruct for MapEnc<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> R {
        self.entry(Cow::Borrowed(name), v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

impl ser::SerializeStructVariant for MapEnc<'_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> R {
        self.entry(Cow::Borrowed(name), v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

/// Serializes a map key: attribute names are text.
struct KeyName;

fn not_text<T>(what: &str) -> Result<T, SerError> {
    Err(SerError(format!(
        "attribute names are text, a map key was {what}"
    )))
}

impl ser::Serializer for KeyName {
    type Ok = String;
    type Error = SerError;
    type SerializeSeq = Impossible<String, SerError>;
    type SerializeTuple = Impossible<String, SerError>;
    type SerializeTupleStruct = Impossible<String, SerError>;
    type SerializeTupleVariant = Impossible<String, SerError>;
    type SerializeMap = Impossible<String, SerError>;
    type SerializeStruct = Impossible<String, SerError>;
    type SerializeStructVariant = Impossible<String, SerError>;

    fn serialize_str(self, v: &str) -> Result<String, SerError> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, SerError> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(
        self,
        _n: &'static str,
        _i: u32,
        variant: &'static str,
    ) -> Result<String, SerError> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _n: &'static str,
        v: &T,
    ) -> Result<String, SerError> {
        v.serialize(self)
    }
    fn serialize_bool(self, _: bool) -> Result<String, SerError> {
        not_text("a bool")
    }
    fn serialize_i8(self, _: i8) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_i16(self, _: i16) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_i32(self, _: i32) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_i64(self, _: i64) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_u8(self, _: u8) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_u16(self, _: u16) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_u32(self, _: u32) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_u64(self, _: u64) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_f32(self, _: f32) -> Result<String, SerError> {
        not_text("a float")
    }
    fn serialize_f64(self, _: f64) -> Result<String, SerError> {
        not_text("a float")
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, SerError> {
        not_text("bytes")
    }
    fn serialize_none(self) -> Result<String, SerError> {
        not_text("none")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, SerError> {
        not_text("an option")
    }
    fn serialize_unit(self) -> Result<String, SerError> {
        not_text("unit")
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, SerError> {
        not_text("a unit struct")
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, SerError> {
        not_text("an enum variant with data")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, SerError> {
        not_text("a sequence")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, SerError> {
        not_text("a tuple")
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, SerError> {
        not_text("a tuple struct")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, SerError> {
        not_text("an enum variant with data")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, SerError> {
        not_text("a map")
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, SerError> {
        not_text("a struct")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, SerError> {
        not_text("an enum variant with data")
    }
}
