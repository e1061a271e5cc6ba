//! The serializer: serde values to native key bytes.

use super::*;

// ---------------------------------------------------------------------------------------------
// Serializer
// ---------------------------------------------------------------------------------------------

/// Levels: 0 = the root (a compound here is flattened), 1 = a top-level element, ≥ 2 = inside
/// a nested tuple.
pub(super) struct KeySerializer<'a> {
    pub(super) out: &'a mut Vec<u8>,
    pub(super) orders: &'a [Order],
    /// Next top-level element index.
    pub(super) index: usize,
    pub(super) level: usize,
    /// Start offset of the open top-level nested tuple, when it is descending.
    pub(super) top_start: Option<usize>,
}

pub(super) enum CompoundKind {
    /// The root compound: its members are top-level elements.
    Flat,
    /// A nested tuple that is one top-level element.
    TopNested,
    /// A nested tuple inside another.
    Nested,
}

pub(super) struct Compound<'s, 'a> {
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
                    return Err(KeySerdeError::message(format!(
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

super::compound::compound_impls!(Compound<'_, '_>, KeySerdeError, #[inline]);

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
            KeySerdeError::message(format!("u128 {v} exceeds the key integer range"))
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
        put_text(self.out, TAG_TEXT, v);
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
            let d = serde_capture(v).map_err(KeySerdeError::message)?;
            return self.scalar(|o| put_decimal(o, &d));
        }
        if name == UUID_TOKEN {
            // A `strata_key::serde_uuid` field: a Uuid element, not a bytes element.
            let b = uuid_capture(v).map_err(KeySerdeError::message)?;
            return self.scalar(|o| put_uuid(o, &b));
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
