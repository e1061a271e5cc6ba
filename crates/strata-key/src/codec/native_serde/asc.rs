//! The serializer of keys without per-field orders ([`to_key`](super::to_key),
//! [`to_key_into`](super::to_key_into) with no orders): every element ascending, NULL first.
//!
//! It writes exactly the bytes of [`KeySerializer`](super::KeySerializer) with no orders
//! (checked by the property test `asc_serializer_writes_what_the_ordered_one_writes`), without
//! what orders cost per element: no order lookup, no field index, no descending check and no
//! complement pass. The nesting level is looked at only where a compound opens or closes.

use super::*;
use crate::codec::native::put::{Cursor, Out};

/// Levels as in [`KeySerializer`](super::KeySerializer): 0 = the root (a compound here is
/// flattened), 1 = a top-level element, ≥ 2 = inside a nested tuple.
pub(super) struct AscSerializer<'a> {
    pub(super) out: Cursor<'a>,
    pub(super) level: usize,
}

/// A compound being written: flattened at the root, else a nested tuple.
pub(super) struct AscCompound<'s, 'a> {
    s: &'s mut AscSerializer<'a>,
    nested: bool,
}

impl<'a> AscSerializer<'a> {
    #[inline]
    fn open(&mut self) -> Result<AscCompound<'_, 'a>> {
        if self.level == 0 {
            self.level = 1;
            return Ok(AscCompound {
                s: self,
                nested: false,
            });
        }
        // Level 1 never fails (MAX_DEPTH ≥ 1): the same test as the ordered serializer.
        if self.level > MAX_DEPTH {
            return Err(too_deep());
        }
        self.out.put_cut([TAG_TUPLE], 1);
        self.level += 1;
        Ok(AscCompound {
            s: self,
            nested: true,
        })
    }

    #[inline(always)]
    fn null(&mut self) -> Result<()> {
        self.out.put_cut([TAG_NULL_FIRST], 1);
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn too_deep() -> KeySerdeError {
    KeySerdeError::Message(format!("nested deeper than {MAX_DEPTH}"))
}

impl AscCompound<'_, '_> {
    #[inline(always)]
    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<()> {
        v.serialize(&mut *self.s)
    }

    #[inline(always)]
    fn close(self) -> Result<()> {
        if self.nested {
            self.s.out.put_cut([TAG_END], 1);
            self.s.level -= 1;
        } else {
            self.s.level = 0;
        }
        Ok(())
    }
}

super::compound::compound_impls!(AscCompound<'_, '_>, #[inline(always)]);

impl<'s, 'a> ser::Serializer for &'s mut AscSerializer<'a> {
    type Ok = ();
    type Error = KeySerdeError;
    type SerializeSeq = AscCompound<'s, 'a>;
    type SerializeTuple = AscCompound<'s, 'a>;
    type SerializeTupleStruct = AscCompound<'s, 'a>;
    type SerializeTupleVariant = AscCompound<'s, 'a>;
    type SerializeMap = AscCompound<'s, 'a>;
    type SerializeStruct = AscCompound<'s, 'a>;
    type SerializeStructVariant = AscCompound<'s, 'a>;

    #[inline(always)]
    fn serialize_bool(self, v: bool) -> Result<()> {
        self.out.put_cut([if v { TAG_TRUE } else { TAG_FALSE }], 1);
        Ok(())
    }
    #[inline(always)]
    fn serialize_i8(self, v: i8) -> Result<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_i16(self, v: i16) -> Result<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_i32(self, v: i32) -> Result<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_i64(self, v: i64) -> Result<()> {
        encode_i64(v, &mut self.out);
        Ok(())
    }
    #[inline]
    fn serialize_i128(self, v: i128) -> Result<()> {
        encode_int(v, &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_u8(self, v: u8) -> Result<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_u16(self, v: u16) -> Result<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_u32(self, v: u32) -> Result<()> {
        encode_i64(v.into(), &mut self.out);
        Ok(())
    }
    #[inline(always)]
    fn serialize_u64(self, v: u64) -> Result<()> {
        encode_u64(v, &mut self.out);
        Ok(())
    }
    #[inline]
    fn serialize_u128(self, v: u128) -> Result<()> {
        let v = i128::try_from(v).map_err(|_| {
            KeySerdeError::Message(format!("u128 {v} exceeds the key integer range"))
        })?;
        encode_int(v, &mut self.out);
        Ok(())
    }
    #[inline]
    fn serialize_f32(self, v: f32) -> Result<()> {
        let b = ordered_f32(v).to_be_bytes();
        self.out
            .put_cut([TAG_F32, b[0], b[1], b[2], b[3], TRAILER], 6);
        Ok(())
    }
    #[inline]
    fn serialize_f64(self, v: f64) -> Result<()> {
        self.out.with_vec(|o| put_f64(o, v));
        Ok(())
    }
    #[inline]
    fn serialize_char(self, v: char) -> Result<()> {
        let mut buf = [0u8; 4];
        self.serialize_str(v.encode_utf8(&mut buf))
    }
    #[inline(always)]
    fn serialize_str(self, v: &str) -> Result<()> {
        put_text(&mut self.out, TAG_TEXT, v);
        Ok(())
    }
    #[inline(always)]
    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        put_string(&mut self.out, TAG_BYTES, v);
        Ok(())
    }
    #[inline]
    fn serialize_none(self) -> Result<()> {
        self.null()
    }
    #[inline(always)]
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<()> {
        v.serialize(self)
    }
    #[inline]
    fn serialize_unit(self) -> Result<()> {
        self.null()
    }
    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        self.null()
    }
    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
    ) -> Result<()> {
        encode_i64(index.into(), &mut self.out);
        Ok(())
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
            self.out.with_vec(|o| put_decimal(o, &d));
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
    ) -> Result<()> {
        let mut c = self.open()?;
        c.element(&index)?;
        c.element(v)?;
        c.close()
    }
    #[inline(always)]
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        self.open()
    }
    #[inline(always)]
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        self.open()
    }
    #[inline(always)]
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
    #[inline(always)]
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
