//! The serializer of keys without per-field orders ([`to_key`](super::to_key),
//! [`to_key_into`](super::to_key_into) with no orders): every element ascending, NULL first.
//!
//! It writes exactly the bytes of [`KeySerializer`](super::KeySerializer) with no orders
//! (checked by the property test `asc_serializer_writes_what_the_ordered_one_writes`), without
//! what orders cost per element: no order lookup, no field index, no descending check and no
//! complement pass.
//!
//! The level is a type, not a field tested at run time: [`AscRoot`] is the root (a compound
//! here is flattened: [`AscFlat`]), [`AscSerializer`] writes top-level elements and the members
//! of nested tuples ([`AscNested`]; its `depth` is read only where a nested tuple opens). The
//! root compound owns the output cursor, so in the (usually out-of-line) `serialize` of the
//! key's tuple or struct the cursor is a local that can live in registers, not fields behind
//! the serializer's pointer stored and reloaded around every element. The error type,
//! [`KeySerdeError`], is one pointer, so that every `Result<(), _>` returns in a register.

use super::*;
use crate::codec::native::put::{Cursor, Out};

type SResult<T> = Result<T>;

/// The root value: a compound here is flattened (its members are the top-level elements); a
/// scalar is the one top-level element.
pub(super) struct AscRoot<'a> {
    pub(super) out: &'a mut Vec<u8>,
}

/// Top-level elements (`depth` 1) and members of nested tuples (`depth` ≥ 2: as the ordered
/// serializer's level).
pub(super) struct AscSerializer<'a> {
    out: Cursor<'a>,
    depth: usize,
}

/// The root compound: owns the cursor (see the module).
pub(super) struct AscFlat<'a> {
    s: AscSerializer<'a>,
}

/// A nested tuple being written.
pub(super) struct AscNested<'s, 'a> {
    s: &'s mut AscSerializer<'a>,
}

impl<'a> AscRoot<'a> {
    /// The serializer of the root's elements (or of the root scalar).
    #[inline(always)]
    fn top(&mut self) -> AscSerializer<'_> {
        AscSerializer {
            out: Cursor::new(self.out),
            depth: 1,
        }
    }

    #[inline(always)]
    fn flat(&mut self) -> SResult<AscFlat<'_>> {
        Ok(AscFlat { s: self.top() })
    }
}

impl<'a> AscSerializer<'a> {
    #[inline]
    fn open(&mut self) -> SResult<AscNested<'_, 'a>> {
        // Depth 1 never fails (MAX_DEPTH ≥ 1): the same test as the ordered serializer.
        if self.depth > MAX_DEPTH {
            return Err(too_deep());
        }
        self.out.put_cut([TAG_TUPLE], 1);
        self.depth += 1;
        Ok(AscNested { s: self })
    }

    #[inline(always)]
    fn null(&mut self) -> SResult<()> {
        self.out.put_cut([TAG_NULL_FIRST], 1);
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn too_deep() -> KeySerdeError {
    KeySerdeError::message(format!("nested deeper than {MAX_DEPTH}"))
}

#[cold]
#[inline(never)]
fn u128_too_big(v: u128) -> KeySerdeError {
    KeySerdeError::message(format!("u128 {v} exceeds the key integer range"))
}

impl AscFlat<'_> {
    #[inline(always)]
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> SResult<()> {
        v.serialize(&mut self.s)
    }

    /// Nothing to write: the cursor's drop brings the vector's length up to date.
    #[inline(always)]
    fn close(self) -> SResult<()> {
        Ok(())
    }
}

impl AscNested<'_, '_> {
    #[inline(always)]
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> SResult<()> {
        v.serialize(&mut *self.s)
    }

    #[inline(always)]
    fn close(self) -> SResult<()> {
        self.s.out.put_cut([TAG_END], 1);
        self.s.depth -= 1;
        Ok(())
    }
}

super::compound::compound_impls!(AscFlat<'_>, KeySerdeError, #[inline(always)]);
super::compound::compound_impls!(AscNested<'_, '_>, KeySerdeError, #[inline(always)]);

/// Root methods that write one top-level element: those of [`AscSerializer`].
macro_rules! root_scalars {
    ($($name:ident($($arg:ident: $t:ty),*);)*) => {$(
        #[inline(always)]
        fn $name(self, $($arg: $t),*) -> SResult<()> {
            self.top().$name($($arg),*)
        }
    )*};
}

impl<'s, 'a> ser::Serializer for &'s mut AscRoot<'a> {
    type Ok = ();
    type Error = KeySerdeError;
    type SerializeSeq = AscFlat<'s>;
    type SerializeTuple = AscFlat<'s>;
    type SerializeTupleStruct = AscFlat<'s>;
    type SerializeTupleVariant = AscFlat<'s>;
    type SerializeMap = AscFlat<'s>;
    type SerializeStruct = AscFlat<'s>;
    type SerializeStructVariant = AscFlat<'s>;

    root_scalars! {
        serialize_bool(v: bool);
        serialize_i8(v: i8);
        serialize_i16(v: i16);
        serialize_i32(v: i32);
        serialize_i64(v: i64);
        serialize_i128(v: i128);
        serialize_u8(v: u8);
        serialize_u16(v: u16);
        serialize_u32(v: u32);
        serialize_u64(v: u64);
        serialize_u128(v: u128);
        serialize_f32(v: f32);
        serialize_f64(v: f64);
        serialize_char(v: char);
        serialize_str(v: &str);
        serialize_bytes(v: &[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(name: &'static str);
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str);
    }
    #[inline(always)]
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> SResult<()> {
        v.serialize(self)
    }
    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> SResult<()> {
        if name == SERDE_TOKEN || name == UUID_TOKEN {
            return self.top().serialize_newtype_struct(name, v);
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
    ) -> SResult<()> {
        let mut c = self.flat()?;
        c.element(&index)?;
        c.element(v)?;
        c.close()
    }
    #[inline(always)]
    fn serialize_seq(self, _len: Option<usize>) -> SResult<Self::SerializeSeq> {
        self.flat()
    }
    #[inline(always)]
    fn serialize_tuple(self, _len: usize) -> SResult<Self::SerializeTuple> {
        self.flat()
    }
    #[inline(always)]
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> SResult<Self::SerializeTupleStruct> {
        self.flat()
    }
    #[inline]
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> SResult<Self::SerializeTupleVariant> {
        let mut c = self.flat()?;
        c.element(&index)?;
        Ok(c)
    }
    #[inline]
    fn serialize_map(self, _len: Option<usize>) -> SResult<Self::SerializeMap> {
        self.flat()
    }
    #[inline(always)]
    fn serialize_struct(self, _name: &'static str, _len: usize) -> SResult<Self::SerializeStruct> {
        self.flat()
    }
    #[inline]
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> SResult<Self::SerializeStructVariant> {
        let mut c = self.flat()?;
        c.element(&index)?;
        Ok(c)
    }
    #[inline]
    fn is_human_readable(&self) -> bool {
        false
    }
}

impl<'s, 'a> ser::Serializer for &'s mut AscSerializer<'a> {
    type Ok = ();
    type Error = KeySerdeError;
    type SerializeSeq = AscNested<'s, 'a>;
    type SerializeTuple = AscNested<'s, 'a>;
    type SerializeTupleStruct = AscNested<'s, 'a>;
    type SerializeTupleVariant = AscNested<'s, 'a>;
    type SerializeMap = AscNested<'s, 'a>;
    type SerializeStruct = AscNested<'s, 'a>;
    type SerializeStructVariant = AscNested<'s, 'a>;

    #[inline(always)]
    fn serialize_bool(self, v: bool) -> SResult<()> {
        self.out.put_cut([if v { TAG_TRUE } else { TAG_FALSE }], 1);
        Ok(())
    }
    #[inline(always)]
    fn serialize_i8(self, v: i8) -> SResult<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_i16(self, v: i16) -> SResult<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_i32(self, v: i32) -> SResult<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_i64(self, v: i64) -> SResult<()> {
        encode_i64(v, &mut self.out);
        Ok(())
    }
    #[inline]
    fn serialize_i128(self, v: i128) -> SResult<()> {
        encode_int(v, &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_u8(self, v: u8) -> SResult<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_u16(self, v: u16) -> SResult<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_u32(self, v: u32) -> SResult<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_u64(self, v: u64) -> SResult<()> {
        encode_u64(v, &mut self.out);
        Ok(())
    }
    #[inline]
    fn serialize_u128(self, v: u128) -> SResult<()> {
        let v = i128::try_from(v).map_err(|_| u128_too_big(v))?;
        encode_int(v, &mut self.out);
        Ok(())
    }
    #[inline]
    fn serialize_f32(self, v: f32) -> SResult<()> {
        let b = ordered_f32(v).to_be_bytes();
        self.out
            .put_cut([TAG_F32, b[0], b[1], b[2], b[3], TRAILER], 6);
        Ok(())
    }
    #[inline]
    fn serialize_f64(self, v: f64) -> SResult<()> {
        self.out.with_vec(|o| put_f64(o, v));
        Ok(())
    }
    #[inline]
    fn serialize_char(self, v: char) -> SResult<()> {
        let mut buf = [0u8; 4];
        self.serialize_str(v.encode_utf8(&mut buf))
    }
    #[inline(always)]
    fn serialize_str(self, v: &str) -> SResult<()> {
        put_text(&mut self.out, TAG_TEXT, v);
        Ok(())
    }
    #[inline(always)]
    fn serialize_bytes(self, v: &[u8]) -> SResult<()> {
        put_string(&mut self.out, TAG_BYTES, v);
        Ok(())
    }
    #[inline]
    fn serialize_none(self) -> SResult<()> {
        self.null()
    }
    #[inline(always)]
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> SResult<()> {
        v.serialize(self)
    }
    #[inline]
    fn serialize_unit(self) -> SResult<()> {
        self.null()
    }
    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> SResult<()> {
        self.null()
    }
    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
    ) -> SResult<()> {
        encode_i64(index.into(), &mut self.out);
        Ok(())
    }
    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> SResult<()> {
        if name == SERDE_TOKEN {
            // A strata_key::Decimal: a decimal element, not its string.
            let d = serde_capture(v).map_err(KeySerdeError::message)?;
            self.out.with_vec(|o| put_decimal(o, &d));
            return Ok(());
        }
        if name == UUID_TOKEN {
            // A `strata_key::serde_uuid` field: a Uuid element, not a bytes element.
            let b = uuid_capture(v).map_err(KeySerdeError::message)?;
            put_uuid(&mut self.out, &b);
            return Ok(());
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
    ) -> SResult<()> {
        let mut c = self.open()?;
        c.element(&index)?;
        c.element(v)?;
        c.close()
    }
    #[inline(always)]
    fn serialize_seq(self, _len: Option<usize>) -> SResult<Self::SerializeSeq> {
        self.open()
    }
    #[inline(always)]
    fn serialize_tuple(self, _len: usize) -> SResult<Self::SerializeTuple> {
        self.open()
    }
    #[inline(always)]
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> SResult<Self::SerializeTupleStruct> {
        self.open()
    }
    #[inline]
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> SResult<Self::SerializeTupleVariant> {
        let mut c = self.open()?;
        c.element(&index)?;
        Ok(c)
    }
    #[inline]
    fn serialize_map(self, _len: Option<usize>) -> SResult<Self::SerializeMap> {
        self.open()
    }
    #[inline(always)]
    fn serialize_struct(self, _name: &'static str, _len: usize) -> SResult<Self::SerializeStruct> {
        self.open()
    }
    #[inline]
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> SResult<Self::SerializeStructVariant> {
        let mut c = self.open()?;
        c.element(&index)?;
        Ok(c)
    }
    #[inline]
    fn is_human_readable(&self) -> bool {
        false
    }
}
