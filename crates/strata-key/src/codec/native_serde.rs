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
//! (use [`Value`]).
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
    encode_i64, encode_int, encode_u64, ordered_f32, put_f64, put_string, unordered_f32, Order,
    Reader, MAX_DEPTH, TAG_BYTES, TAG_END, TAG_F32, TAG_F64, TAG_F64_HI, TAG_FALSE, TAG_INT_MAX,
    TAG_INT_MIN, TAG_NULL_FIRST, TAG_NULL_LAST, TAG_TEXT, TAG_TIME, TAG_TRUE, TAG_TUPLE, TAG_UUID,
    TAG_UUID_HI, TRAILER,
};
use super::native::{put_decimal, SHORT_BUF, TAG_DECIMAL};
use crate::decimal::{serde_capture, SERDE_TOKEN};
use crate::error::DecodeError;

/// Errors of the serde bridge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeySerdeError {
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

impl ser::Error for KeySerdeError {
    fn custom<T: Display>(msg: T) -> Self {
        KeySerdeError::Message(msg.to_string())
    }
}

impl de::Error for KeySerdeError {
    fn custom<T: Display>(msg: T) -> Self {
        KeySerdeError::Message(msg.to_string())
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
pub fn to_key_into<T: Serialize + ?Sized>(
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
pub fn from_key<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
    let mut d = KeyDeserializer {
        r: Reader::new(bytes),
        level: 0,
    };
    let v = T::deserialize(&mut d)?;
    if !d.r.at_end() {
        return Err(KeySerdeError::Trailing(bytes.len() - d.r.pos));
    }
    Ok(v)
}

// ---------------------------------------------------------------------------------------------
// Serializer
// ---------------------------------------------------------------------------------------------

/// Levels: 0 = the root (a compound here is flattened), 1 = a top-level element, ≥ 2 = inside
/// a nested tuple.
struct KeySerializer<'a> {
    out: &'a mut Vec<u8>,
    orders: &'a [Order],
    /// Next top-level element index.
    index: usize,
    level: usize,
    /// Start offset of the open top-level nested tuple, when it is descending.
    top_start: Option<usize>,
}

enum CompoundKind {
    /// The root compound: its members are top-level elements.
    Flat,
    /// A nested tuple that is one top-level element.
    TopNested,
    /// A nested tuple inside another.
    Nested,
}

struct Compound<'s, 'a> {
    s: &'s mut KeySerializer<'a>,
    kind: CompoundKind,
}

impl<'a> KeySerializer<'a> {
    /// Before a scalar element: at the root or top level, takes the field's order and returns
    /// the element's start when the field is descending (complemented by [`Self::end`]);
    /// inside tuples elements are ascending.
    #[inline(always)]
    fn begin(&mut self) -> Option<usize> {
        // Without per-field orders every element is ascending (and the index is unused).
        if self.level >= 2 || self.orders.is_empty() {
            return None;
        }
        let order = self.orders.get(self.index).copied().unwrap_or_default();
        self.index += 1;
        order.descending.then_some(self.out.len())
    }

    /// After a scalar element: complements it if its field is descending.
    #[inline(always)]
    fn end(&mut self, descending_start: Option<usize>) -> Result<()> {
        if let Some(start) = descending_start {
            for b in &mut self.out[start..] {
                *b = !*b;
            }
        }
        Ok(())
    }

    /// Writes one scalar element with `write` (see [`Self::begin`]).
    #[inline(always)]
    fn scalar(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        let d = self.begin();
        write(self.out);
        self.end(d)
    }

    /// Writes a NULL: at the root or top level placed by its field's order, inside tuples
    /// first.
    #[inline]
    fn null(&mut self) -> Result<()> {
        if self.level >= 2 {
            self.out.push(TAG_NULL_FIRST);
            return Ok(());
        }
        let order = self.orders.get(self.index).copied().unwrap_or_default();
        self.index += 1;
        // Stored placement is swapped for descending fields (see the native module).
        let last = order.nulls_last != order.descending;
        let tag = if last { TAG_NULL_LAST } else { TAG_NULL_FIRST };
        self.out.push(if order.descending { !tag } else { tag });
        Ok(())
    }

    #[inline]
    fn int(&mut self, v: i128) -> Result<()> {
        self.scalar(|o| encode_int(v, o))
    }

    #[inline]
    fn i64(&mut self, v: i64) -> Result<()> {
        let d = self.begin();
        encode_i64(v, self.out);
        self.end(d)
    }

    #[inline]
    fn open(&mut self) -> Result<Compound<'_, 'a>> {
        let kind = match self.level {
            0 => {
                self.level = 1;
                CompoundKind::Flat
            }
            1 => {
                let order = self.orders.get(self.index).copied().unwrap_or_default();
                self.index += 1;
                self.top_start = order.descending.then_some(self.out.len());
                self.out.push(TAG_TUPLE);
                self.level = 2;
                CompoundKind::TopNested
            }
            l => {
                if l > MAX_DEPTH {
                    return Err(KeySerdeError::Message(format!(
                        "nested deeper than {MAX_DEPTH}"
                    )));
                }
                self.out.push(TAG_TUPLE);
                self.level += 1;
                CompoundKind::Nested
            }
        };
        Ok(Compound { s: self, kind })
    }
}

impl Compound<'_, '_> {
    #[inline]
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        v.serialize(&mut *self.s)
    }

    #[inline]
    fn close(self) -> Result<()> {
        match self.kind {
            CompoundKind::Flat => self.s.level = 0,
            CompoundKind::TopNested => {
                self.s.out.push(TAG_END);
                self.s.level = 1;
                if let Some(start) = self.s.top_start.take() {
                    for b in &mut self.s.out[start..] {
                        *b = !*b;
                    }
                }
            }
            CompoundKind::Nested => {
                self.s.out.push(TAG_END);
                self.s.level -= 1;
            }
        }
        Ok(())
    }
}

macro_rules! compound_impl {
    ($trait:ident, $method:ident) => {
        impl ser::$trait for Compound<'_, '_> {
            type Ok = ();
            type Error = KeySerdeError;
            #[inline]
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
                self.element(v)
            }
            #[inline]
            fn end(self) -> Result<()> {
                self.close()
            }
        }
    };
}
compound_impl!(SerializeSeq, serialize_element);
compound_impl!(SerializeTuple, serialize_element);
compound_impl!(SerializeTupleStruct, serialize_field);
compound_impl!(SerializeTupleVariant, serialize_field);

impl ser::SerializeStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = KeySerdeError;
    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _key: &'static str, v: &T) -> Result<()> {
        self.element(v)
    }
    #[inline]
    fn end(self) -> Result<()> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = KeySerdeError;
    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _key: &'static str, v: &T) -> Result<()> {
        self.element(v)
    }
    #[inline]
    fn end(self) -> Result<()> {
        self.close()
    }
}

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = KeySerdeError;
    #[inline]
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<()> {
        self.element(k)
    }
    #[inline]
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        self.element(v)
    }
    #[inline]
    fn end(self) -> Result<()> {
        self.close()
    }
}

impl<'s, 'a> ser::Serializer for &'s mut KeySerializer<'a> {
    type Ok = ();
    type Error = KeySerdeError;
    type SerializeSeq = Compound<'s, 'a>;
    type SerializeTuple = Compound<'s, 'a>;
    type SerializeTupleStruct = Compound<'s, 'a>;
    type SerializeTupleVariant = Compound<'s, 'a>;
    type SerializeMap = Compound<'s, 'a>;
    type SerializeStruct = Compound<'s, 'a>;
    type SerializeStructVariant = Compound<'s, 'a>;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<()> {
        self.scalar(|o| o.push(if v { TAG_TRUE } else { TAG_FALSE }))
    }
    #[inline]
    fn serialize_i8(self, v: i8) -> Result<()> {
        self.i64(v.into())
    }
    #[inline]
    fn serialize_i16(self, v: i16) -> Result<()> {
        self.i64(v.into())
    }
    #[inline]
    fn serialize_i32(self, v: i32) -> Result<()> {
        self.i64(v.into())
    }
    #[inline]
    fn serialize_i64(self, v: i64) -> Result<()> {
        self.i64(v)
    }
    #[inline]
    fn serialize_i128(self, v: i128) -> Result<()> {
        self.int(v)
    }
    #[inline]
    fn serialize_u8(self, v: u8) -> Result<()> {
        self.i64(v.into())
    }
    #[inline]
    fn serialize_u16(self, v: u16) -> Result<()> {
        self.i64(v.into())
    }
    #[inline]
    fn serialize_u32(self, v: u32) -> Result<()> {
        self.i64(v.into())
    }
    #[inline]
    fn serialize_u64(self, v: u64) -> Result<()> {
        let d = self.begin();
        encode_u64(v, self.out);
        self.end(d)
    }
    #[inline]
    fn serialize_u128(self, v: u128) -> Result<()> {
        let v = i128::try_from(v).map_err(|_| {
            KeySerdeError::Message(format!("u128 {v} exceeds the key integer range"))
        })?;
        self.int(v)
    }
    #[inline]
    fn serialize_f32(self, v: f32) -> Result<()> {
        self.scalar(|o| {
            o.push(TAG_F32);
            o.extend_from_slice(&ordered_f32(v).to_be_bytes());
            o.push(TRAILER);
        })
    }
    #[inline]
    fn serialize_f64(self, v: f64) -> Result<()> {
        self.scalar(|o| put_f64(o, v))
    }
    #[inline]
    fn serialize_char(self, v: char) -> Result<()> {
        let mut buf = [0u8; 4];
        self.serialize_str(v.encode_utf8(&mut buf))
    }
    #[inline]
    fn serialize_str(self, v: &str) -> Result<()> {
        let d = self.begin();
        put_string(self.out, TAG_TEXT, v.as_bytes());
        self.end(d)
    }
    #[inline]
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        let d = self.begin();
        put_string(self.out, TAG_BYTES, v);
        self.end(d)
    }
    #[inline]
    fn serialize_none(self) -> Result<()> {
        self.null()
    }
    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<()> {
        v.serialize(self)
    }
    #[inline]
    fn serialize_unit(self) -> Result<()> {
        self.null()
    }
    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        self.serialize_unit()
    }
    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
    ) -> Result<()> {
        self.int(index.into())
    }
    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<()> {
        if name == SERDE_TOKEN {
            // A strata_key::Decimal: a decimal element, not its string.
            let d = serde_capture(v).map_err(KeySerdeError::Message)?;
            return self.scalar(|o| put_decimal(o, &d));
        }
        v.serialize(self)
    }
    #[inline]
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        v: &T,
    ) -> Result<()> {
        let mut c = self.open()?;
        c.element(&index)?;
        c.element(v)?;
        c.close()
    }
    #[inline]
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        self.open()
    }
    #[inline]
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        self.open()
    }
    #[inline]
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        self.open()
    }
    #[inline]
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        let mut c = self.open()?;
        c.element(&index)?;
        Ok(c)
    }
    #[inline]
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        self.open()
    }
    #[inline]
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        self.open()
    }
    #[inline]
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        let mut c = self.open()?;
        c.element(&index)?;
        Ok(c)
    }
    #[inline]
    fn is_human_readable(&self) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// Deserializer
// ---------------------------------------------------------------------------------------------

/// Levels as in the serializer: 0 = root, 1 = top-level element, ≥ 2 = nested.
struct KeyDeserializer<'de> {
    r: Reader<'de>,
    level: usize,
}

impl<'de> KeyDeserializer<'de> {
    /// At the root or between top-level elements: set the complement mask from the element's
    /// first byte. Returns the element's tag (relative).
    #[inline]
    fn begin_element(&mut self) -> Result<u8> {
        if self.level >= 2 {
            return self.peek_tag();
        }
        let Some(&raw) = self.r_bytes().get(self.r.pos) else {
            return Err(self.bad_start());
        };
        self.r.mask = match raw {
            0x02..=0x7f => 0,
            0x80..=0xfd => 0xff,
            _ => return Err(self.bad_start()),
        };
        Ok(raw ^ self.r.mask)
    }

    /// The error for a top-level element that is missing or starts with `00`, `01`, `fe` or
    /// `ff`.
    #[cold]
    #[inline(never)]
    fn bad_start(&self) -> KeySerdeError {
        match self.r_bytes().get(self.r.pos) {
            None => self.r.err(self.r.pos, "unexpected end of key").into(),
            Some(raw) => self
                .r
                .err(
                    self.r.pos,
                    format!("byte 0x{raw:02x} cannot start an element"),
                )
                .into(),
        }
    }

    /// The error for integer `v` at `at` that does not fit the type `ty`.
    #[cold]
    #[inline(never)]
    fn out_of_range(&self, at: usize, v: i128, ty: &str) -> KeySerdeError {
        self.r
            .err(at, format!("integer {v} out of range for {ty}"))
            .into()
    }

    /// The error for an element of tag `tag` where `what` was expected.
    #[cold]
    #[inline(never)]
    fn wrong_tag(&self, what: &str, tag: u8) -> KeySerdeError {
        self.r
            .err(
                self.r.pos,
                format!("expected {what}, found tag 0x{tag:02x}"),
            )
            .into()
    }

    #[inline]
    fn r_bytes(&self) -> &'de [u8] {
        self.r.bytes()
    }

    #[inline]
    fn peek_tag(&self) -> Result<u8> {
        match self.r_bytes().get(self.r.pos) {
            Some(b) => Ok(b ^ self.r.mask),
            None => Err(self.r.err(self.r.pos, "unexpected end of key").into()),
        }
    }

    /// After a scalar element at the top level, clear the mask.
    #[inline]
    fn end_element(&mut self) {
        if self.level < 2 {
            self.r.mask = 0;
        }
    }

    /// An integer element. The direction comes from the tag byte without a branch (its sign
    /// bit) and stays in a register, and every
    /// byte that cannot start an element (`00`, `01`, `fe`, `ff`) unmasks to a tag outside the
    /// integers, so one range check covers both.
    #[inline(always)]
    fn int(&mut self) -> Result<i128> {
        let at = self.r.pos;
        let Some(&raw) = self.r_bytes().get(at) else {
            return Err(self.int_error());
        };
        let mask = if self.level >= 2 {
            self.r.mask
        } else {
            ((raw as i8) >> 7) as u8
        };
        let tag = raw ^ mask;
        if tag.wrapping_sub(TAG_INT_MIN) > TAG_INT_MAX - TAG_INT_MIN {
            return Err(self.int_error());
        }
        self.r.pos = at + 1;
        let v = self.r.int_after_tag_masked(tag, at, mask)?;
        // As after every top-level element: no mask is left set (an `Option` may have set it).
        self.end_element();
        Ok(v)
    }

    /// The error for an element at the cursor that is not an integer (or is missing).
    #[cold]
    #[inline(never)]
    fn int_error(&mut self) -> KeySerdeError {
        match self.begin_element() {
            Err(e) => e,
            Ok(tag) => self.wrong_tag("an integer", tag),
        }
    }

    #[inline]
    fn decimal(&mut self) -> Result<crate::Decimal> {
        let tag = self.begin_element()?;
        if tag != TAG_DECIMAL {
            return Err(self
                .r
                .err(
                    self.r.pos,
                    format!("expected a decimal, found tag 0x{tag:02x}"),
                )
                .into());
        }
        self.r.pos += 1;
        let d = self.r.decimal_after_tag()?;
        self.end_element();
        Ok(d)
    }

    /// Positions the reader after the tag of a string element of tag `want`.
    #[inline]
    fn string_tag(&mut self, want: u8) -> Result<()> {
        let tag = self.begin_element()?;
        if tag != want {
            let what = if want == TAG_TEXT { "text" } else { "bytes" };
            return Err(self.wrong_tag(what, tag));
        }
        self.r.pos += 1;
        Ok(())
    }

    /// Reads a text element into a `String` of exactly its length.
    #[inline]
    fn text(&mut self) -> Result<String> {
        self.string_tag(TAG_TEXT)?;
        let at = self.r.pos;
        let (buf, ascii) = self.r.escaped_vec()?;
        self.end_element();
        if ascii {
            // SAFETY: `escaped_vec` reports `ascii` only when every byte of `buf` is below
            // 0x80 (it ORs the decoded words, restricted to the string's own lanes, and tests
            // the high bits), and bytes below 0x80 are always valid UTF-8 on their own. Tested
            // by `codec::native_serde::tests::text_ascii_fast_path_validates`.
            return Ok(unsafe { String::from_utf8_unchecked(buf) });
        }
        String::from_utf8(buf).map_err(|e| {
            self.r
                .err(at, format!("text is not valid UTF-8: {}", e.utf8_error()))
                .into()
        })
    }

    /// Opens a compound: the root's members are the top-level elements; below, a nested tuple.
    #[inline]
    fn open(&mut self) -> Result<SeqKind> {
        if self.level == 0 {
            self.level = 1;
            return Ok(SeqKind::Top);
        }
        let tag = self.begin_element()?;
        if tag != TAG_TUPLE {
            return Err(self
                .r
                .err(
                    self.r.pos,
                    format!("expected a tuple, found tag 0x{tag:02x}"),
                )
                .into());
        }
        if self.level > MAX_DEPTH {
            return Err(self.r.err(self.r.pos, "tuples nested too deep").into());
        }
        self.r.pos += 1;
        let kind = if self.level == 1 {
            SeqKind::TopNested
        } else {
            SeqKind::Nested
        };
        self.level += 1;
        Ok(kind)
    }

    #[inline]
    fn close(&mut self, kind: SeqKind) -> Result<()> {
        match kind {
            SeqKind::Top => {
                self.level = 0;
                Ok(())
            }
            SeqKind::TopNested | SeqKind::Nested => {
                let at = self.r.pos;
                match self.r.byte() {
                    Ok(TAG_END) => {}
                    Ok(_) => {
                        return Err(self
                            .r
                            .err(at, "more elements in the tuple than the type has")
                            .into())
                    }
                    Err(e) => return Err(e.into()),
                }
                self.level -= 1;
                if matches!(kind, SeqKind::TopNested) {
                    self.r.mask = 0;
                }
                Ok(())
            }
        }
    }

    #[inline]
    fn with_seq<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        let kind = self.open()?;
        let v = visitor.visit_seq(Seq { d: self, kind })?;
        self.close(kind)?;
        Ok(v)
    }
}

#[derive(Clone, Copy)]
enum SeqKind {
    Top,
    TopNested,
    Nested,
}

struct Seq<'a, 'de> {
    d: &'a mut KeyDeserializer<'de>,
    kind: SeqKind,
}

impl<'de> SeqAccess<'de> for Seq<'_, 'de> {
    type Error = KeySerdeError;
    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let more = match self.kind {
            SeqKind::Top => !self.d.r.at_end(),
            _ => self.d.peek_tag()? != TAG_END,
        };
        if more {
            seed.deserialize(&mut *self.d).map(Some)
        } else {
            Ok(None)
        }
    }
}

struct Enum<'a, 'de> {
    d: &'a mut KeyDeserializer<'de>,
    /// Open tuple of a data variant (None: a unit variant, just an integer).
    kind: Option<SeqKind>,
}

impl<'a, 'de> EnumAccess<'de> for Enum<'a, 'de> {
    type Error = KeySerdeError;
    type Variant = Self;
    #[inline]
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        let idx = self.d.int()?;
        let idx = u32::try_from(idx)
            .map_err(|_| KeySerdeError::Message(format!("variant index {idx} out of range")))?;
        let v = seed.deserialize(de::value::U32Deserializer::<KeySerdeError>::new(idx))?;
        Ok((v, self))
    }
}

impl<'de> VariantAccess<'de> for Enum<'_, 'de> {
    type Error = KeySerdeError;
    #[inline]
    fn unit_variant(self) -> Result<()> {
        match self.kind {
            None => Ok(()),
            Some(k) => self.d.close(k),
        }
    }
    #[inline]
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        let kind = self
            .kind
            .ok_or_else(|| KeySerdeError::Message("expected a variant with data".into()))?;
        let v = seed.deserialize(&mut *self.d)?;
        self.d.close(kind)?;
        Ok(v)
    }
    #[inline]
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        let kind = self
            .kind
            .ok_or_else(|| KeySerdeError::Message("expected a variant with data".into()))?;
        let v = visitor.visit_seq(Seq {
            d: &mut *self.d,
            kind,
        })?;
        self.d.close(kind)?;
        Ok(v)
    }
    #[inline]
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.tuple_variant(fields.len(), visitor)
    }
}

macro_rules! de_int {
    ($method:ident, $visit:ident, $t:ty) => {
        #[inline]
        #[allow(irrefutable_let_patterns)] // i128 from i128
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            let at = self.r.pos;
            let v = self.int()?;
            let Ok(v) = <$t>::try_from(v) else {
                return Err(self.out_of_range(at, v, stringify!($t)));
            };
            visitor.$visit(v)
        }
    };
}

impl<'de> de::Deserializer<'de> for &mut KeyDeserializer<'de> {
    type Error = KeySerdeError;

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.level == 0 {
            // The root of a self-described key: a sequence of top-level elements.
            return self.with_seq(visitor);
        }
        let tag = self.begin_element()?;
        match tag {
            t if self.is_null_tag(t) => {
                self.r.pos += 1;
                self.end_element();
                visitor.visit_unit()
            }
            TAG_FALSE | TAG_TRUE => {
                self.r.pos += 1;
                self.end_element();
                visitor.visit_bool(tag == TAG_TRUE)
            }
            TAG_INT_MIN..=TAG_INT_MAX => {
                let v = self.int()?;
                if let Ok(x) = i64::try_from(v) {
                    visitor.visit_i64(x)
                } else if let Ok(x) = u64::try_from(v) {
                    visitor.visit_u64(x)
                } else {
                    visitor.visit_i128(v)
                }
            }
            TAG_F32 => self.deserialize_f32(visitor),
            TAG_F64 | TAG_F64_HI => self.deserialize_f64(visitor),
            TAG_TEXT => self.deserialize_str(visitor),
            TAG_BYTES => self.deserialize_bytes(visitor),
            TAG_UUID | TAG_UUID_HI => {
                self.r.pos += 1;
                let a = self.r.uuid_after_tag(tag)?;
                self.end_element();
                visitor.visit_bytes(&a)
            }
            TAG_TUPLE => self.with_seq(visitor),
            TAG_DECIMAL => {
                let d = self.decimal()?;
                visitor.visit_string(d.to_string())
            }
            TAG_TIME => Err(self
                .r
                .err(
                    self.r.pos,
                    "time elements cannot be read through serde; use Value",
                )
                .into()),
            other => Err(self
                .r
                .err(self.r.pos, format!("unexpected tag 0x{other:02x}"))
                .into()),
        }
    }

    #[inline]
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        match tag {
            TAG_FALSE | TAG_TRUE => {
                self.r.pos += 1;
                self.end_element();
                visitor.visit_bool(tag == TAG_TRUE)
            }
            other => Err(self
                .r
                .err(
                    self.r.pos,
                    format!("expected a bool, found tag 0x{other:02x}"),
                )
                .into()),
        }
    }

    de_int!(deserialize_i8, visit_i8, i8);
    de_int!(deserialize_i16, visit_i16, i16);
    de_int!(deserialize_i32, visit_i32, i32);
    de_int!(deserialize_i64, visit_i64, i64);
    de_int!(deserialize_i128, visit_i128, i128);
    de_int!(deserialize_u8, visit_u8, u8);
    de_int!(deserialize_u16, visit_u16, u16);
    de_int!(deserialize_u32, visit_u32, u32);
    de_int!(deserialize_u64, visit_u64, u64);
    de_int!(deserialize_u128, visit_u128, u128);

    #[inline]
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        if tag != TAG_F32 {
            return Err(self
                .r
                .err(
                    self.r.pos,
                    format!("expected an f32, found tag 0x{tag:02x}"),
                )
                .into());
        }
        self.r.pos += 1;
        let b = self.r.take(4)?;
        let u = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) ^ u32::from_ne_bytes([self.r.mask; 4]);
        self.r.trailer()?;
        self.end_element();
        visitor.visit_f32(unordered_f32(u))
    }

    #[inline]
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        if tag != TAG_F64 && tag != TAG_F64_HI {
            return Err(self
                .r
                .err(
                    self.r.pos,
                    format!("expected an f64, found tag 0x{tag:02x}"),
                )
                .into());
        }
        self.r.pos += 1;
        let f = self.r.f64_after_tag(tag)?;
        self.end_element();
        visitor.visit_f64(f)
    }

    #[inline]
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let at = self.r.pos;
        let s = self.text()?;
        let mut it = s.chars();
        match (it.next(), it.next()) {
            (Some(c), None) => visitor.visit_char(c),
            _ => Err(self.r.err(at, "expected a single character").into()),
        }
    }

    #[inline]
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_string(self.text()?)
    }

    #[inline]
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    #[inline]
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        match tag {
            TAG_BYTES => self.r.pos += 1,
            // A UUID element reads as its 16 bytes.
            TAG_UUID | TAG_UUID_HI if self.level >= 1 => return self.deserialize_any(visitor),
            _ => return Err(self.wrong_tag("bytes", tag)),
        }
        if let Some((c, n)) = self.r.plain16() {
            // A UUID: one 16-byte store, no loop.
            let a = c.to_le_bytes();
            self.r.pos += n + 1;
            self.end_element();
            return visitor.visit_bytes(&a[..n]);
        }
        if let Some((c, n, len)) = self.r.short16() {
            // At most 16 bytes with two-byte codes (a UUID with bytes ≥ 0xfc).
            let a = c.to_le_bytes();
            self.r.pos += len;
            self.end_element();
            return visitor.visit_bytes(&a[..n]);
        }
        // Short (a hash, escaped bytes): decoded on the stack, no allocation.
        let mut a = [0u8; SHORT_BUF];
        if let Some(n) = self.r.unescape_short(&mut a)? {
            self.end_element();
            return visitor.visit_bytes(&a[..n]);
        }
        let mut buf = Vec::new();
        self.r.escaped_into(&mut buf)?;
        self.end_element();
        visitor.visit_byte_buf(buf)
    }

    #[inline]
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    #[inline]
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        if self.is_null_tag(tag) {
            self.r.pos += 1;
            self.end_element();
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    #[inline]
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        if self.is_null_tag(tag) {
            self.r.pos += 1;
            self.end_element();
            visitor.visit_unit()
        } else {
            Err(self
                .r
                .err(self.r.pos, format!("expected null, found tag 0x{tag:02x}"))
                .into())
        }
    }

    #[inline]
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_unit(visitor)
    }

    #[inline]
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == SERDE_TOKEN {
            let d = self.decimal()?;
            return visitor.visit_str(&d.to_string());
        }
        visitor.visit_newtype_struct(self)
    }

    #[inline]
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.with_seq(visitor)
    }

    #[inline]
    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.with_seq(visitor)
    }

    #[inline]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.with_seq(visitor)
    }

    #[inline]
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let kind = self.open()?;
        let v = visitor.visit_map(Seq { d: self, kind })?;
        self.close(kind)?;
        Ok(v)
    }

    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.with_seq(visitor)
    }

    #[inline]
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        if self.level == 0 {
            // A root enum is flattened: (index, fields...) as top-level elements.
            let kind = self.open()?;
            return visitor.visit_enum(Enum {
                d: self,
                kind: Some(kind),
            });
        }
        let tag = self.begin_element()?;
        if tag == TAG_TUPLE {
            let kind = self.open()?;
            visitor.visit_enum(Enum {
                d: self,
                kind: Some(kind),
            })
        } else {
            visitor.visit_enum(Enum {
                d: self,
                kind: None,
            })
        }
    }

    #[inline]
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }

    #[inline]
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }

    #[inline]
    fn is_human_readable(&self) -> bool {
        false
    }
}

impl<'de> KeyDeserializer<'de> {
    /// NULL tags: nulls-last only at the top level (inside tuples NULL always sorts first).
    #[inline]
    fn is_null_tag(&self, tag: u8) -> bool {
        tag == TAG_NULL_FIRST || (tag == TAG_NULL_LAST && self.level < 2)
    }
}

/// Maps are tuples of alternating keys and values: the same sequence access.
impl<'de> de::MapAccess<'de> for Seq<'_, 'de> {
    type Error = KeySerdeError;
    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        self.next_element_seed(seed)
    }
    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(&mut *self.d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::native::put_escaped;
    use crate::codec::native::NativeCodec;
    use crate::{tuple, TupleCodec, Value};
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;

    /// The ASCII fast path of text decoding (which skips UTF-8 validation) agrees with
    /// `String::from_utf8` for every byte value at every position of strings of 0 to 19 bytes,
    /// ascending and descending, followed by an element whose bytes have the high bit set
    /// (so the lanes past the string are never taken for content).
    #[test]
    fn text_ascii_fast_path_validates() {
        let follow = "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}".to_string();
        for len in 1..20 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut s: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                    s[at] = b;
                    for desc in [false, true] {
                        let mut k = vec![TAG_TEXT];
                        put_escaped(&mut k, &s);
                        if desc {
                            k.iter_mut().for_each(|x| *x = !*x);
                        }
                        k.extend(to_key(&(follow.as_str(),)).unwrap());
                        let got = from_key::<(String, String)>(&k);
                        match String::from_utf8(s.clone()) {
                            Ok(want) => assert_eq!(got.unwrap(), (want, follow.clone())),
                            Err(_) => assert!(got.is_err(), "{s:?} decoded"),
                        }
                    }
                }
            }
        }
        assert_eq!(from_key::<String>(&to_key(&"").unwrap()).unwrap(), "");
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
    enum Kind {
        A,
        B(i32),
        C { x: String, y: Option<u8> },
        D(u8, u8),
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
    struct Key {
        tenant: u16,
        name: String,
        ts: i64,
        id: Option<u64>,
        inner: (bool, f64),
        kind: Kind,
        tags: Vec<String>,
        map: BTreeMap<String, i32>,
    }

    fn sample(kind: Kind) -> Key {
        Key {
            tenant: 3,
            name: "a\0\u{1}b".into(),
            ts: -5,
            id: None,
            inner: (true, -0.0),
            kind,
            tags: vec!["x".into(), "".into()],
            map: [("k".to_string(), 1)].into_iter().collect(),
        }
    }

    #[test]
    fn round_trip_structs_enums_maps() {
        for kind in [
            Kind::A,
            Kind::B(-7),
            Kind::C {
                x: "q".into(),
                y: Some(2),
            },
            Kind::D(1, 2),
        ] {
            let k = sample(kind);
            let bytes = to_key(&k).unwrap();
            assert_eq!(from_key::<Key>(&bytes).unwrap(), k);
            // The dynamic decoder reads the same bytes.
            let t = NativeCodec::new().decode(&bytes).unwrap();
            assert_eq!(t.len(), 8);
        }
    }

    #[test]
    fn same_bytes_as_dynamic_tuples() {
        let k = to_key(&(1u8, "x", Some(2i64), None::<i64>, (3u8, "y"))).unwrap();
        let t = tuple!(1, "x", 2, Value::Null, tuple!(3, "y"));
        assert_eq!(k, NativeCodec::new().encode(&t).unwrap());
    }

    #[test]
    fn descending_fields_round_trip() {
        let o = [
            Order::DESC,
            Order {
                descending: true,
                nulls_last: true,
            },
            Order::DESC,
        ];
        let v = (5u32, None::<String>, (1u8, "z".to_string()));
        let k = to_key_with_orders(&v, &o).unwrap();
        let codec = NativeCodec::with_orders(o.to_vec());
        assert_eq!(
            codec
                .encode(&tuple!(5, Value::Null, tuple!(1, "z")))
                .unwrap(),
            k
        );
        assert_eq!(
            from_key::<(u32, Option<String>, (u8, String))>(&k).unwrap(),
            v
        );
        let k2 = to_key_with_orders(&(6u32, None::<String>, (1u8, "z".to_string())), &o).unwrap();
        assert!(k2 < k);
    }

    #[test]
    fn borrowed_strings_and_errors() {
        let k = to_key(&("plain", 1u8)).unwrap();
        let (s, _): (String, u8) = from_key(&k).unwrap();
        assert_eq!(s, "plain");
        assert!(from_key::<(String, u8, u8)>(&k).is_err());
        assert!(matches!(
            from_key::<String>(&k),
            Err(KeySerdeError::Trailing(_))
        ));
        assert!(from_key::<(u8, u8)>(&k).is_err());
        assert!(from_key::<(i8,)>(&to_key(&(300u16,)).unwrap()).is_err());
    }

    /// Integer elements: errors say what and where (bad start byte, wrong kind, missing,
    /// cut-off payload, out of range), and directions are read per element (a descending
    /// `Option` before an ascending integer leaves no mask behind).
    #[test]
    fn integer_errors_say_what_and_where() {
        fn err(bytes: &[u8]) -> DecodeError {
            match from_key::<(u16, u64)>(bytes) {
                Err(KeySerdeError::Decode(e)) => e,
                other => panic!("{bytes:02x?}: {other:?}"),
            }
        }
        let k = to_key(&(7u16, 300_000u64)).unwrap();
        assert_eq!(from_key::<(u16, u64)>(&k).unwrap(), (7, 300_000));
        let second = to_key(&(7u16,)).unwrap().len();
        for bad in [0x00u8, 0x01, 0xfe, 0xff] {
            let mut b = k.clone();
            b[second] = bad;
            let e = err(&b);
            assert_eq!(e.offset, second, "{e}");
            assert!(e.reason.contains("cannot start an element"), "{e}");
        }
        // A missing element is serde's "invalid length".
        let mut b = k[..second].to_vec();
        assert!(
            matches!(from_key::<(u16, u64)>(&b), Err(KeySerdeError::Message(m)) if m.contains("invalid length 1"))
        );
        to_key_into(&"x", &[], &mut b).unwrap();
        let e = err(&b);
        assert_eq!(e.offset, second, "{e}");
        assert!(
            e.reason.contains("expected an integer, found tag 0x79"),
            "{e}"
        );
        for cut in second + 1..k.len() {
            let e = err(&k[..cut]);
            assert!(e.offset >= second && e.offset <= k.len(), "{e}");
        }
        let big = to_key(&(70_000u32, 1u64)).unwrap();
        let e = err(&big);
        assert_eq!(e.offset, 0, "{e}");
        assert!(e.reason.contains("out of range for u16"), "{e}");
        // Descending fields, also after a descending Option.
        let o = [Order::DESC, Order::ASC, Order::DESC];
        for v in [
            (Some(-5i32), 9u64, 3i64),
            (None, 0, -1),
            (Some(i32::MIN), u64::MAX, i64::MIN),
        ] {
            let k = to_key_with_orders(&v, &o).unwrap();
            assert_eq!(from_key::<(Option<i32>, u64, i64)>(&k).unwrap(), v);
        }
    }
}
