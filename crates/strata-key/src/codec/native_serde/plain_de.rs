//! The model for the deserializer's property tests: the deserializer as it was before the
//! nesting level became a type parameter (one run-time `level`, tested per element). Test
//! code only; `level_typed_deserializer_matches_the_plain_one` compares the two on valid and
//! damaged keys.

use super::*;

// ---------------------------------------------------------------------------------------------
// Deserializer
// ---------------------------------------------------------------------------------------------

/// Levels as in the serializer: 0 = root, 1 = top-level element, ≥ 2 = nested.
pub(super) struct PlainDeserializer<'de> {
    pub(super) r: Reader<'de>,
    pub(super) level: usize,
}

impl<'de> PlainDeserializer<'de> {
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
        // One level test: a nested element keeps the mask of its top-level element; a
        // top-level one takes it from its tag and leaves none set (an `Option` may have set
        // it), both without a second look at the level.
        let nested = self.level >= 2;
        let mask = if nested {
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
        // `mask` is the reader's mask where nested, 0 only ever set at the top level.
        self.r.mask = mask & (nested as u8).wrapping_neg();
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
    d: &'a mut PlainDeserializer<'de>,
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
    d: &'a mut PlainDeserializer<'de>,
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
            .map_err(|_| KeySerdeError::message(format!("variant index {idx} out of range")))?;
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
            .ok_or_else(|| KeySerdeError::message("expected a variant with data".into()))?;
        let v = seed.deserialize(&mut *self.d)?;
        self.d.close(kind)?;
        Ok(v)
    }
    #[inline]
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        let kind = self
            .kind
            .ok_or_else(|| KeySerdeError::message("expected a variant with data".into()))?;
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

impl<'de> de::Deserializer<'de> for &mut PlainDeserializer<'de> {
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
        if name == UUID_TOKEN {
            // As the fast deserializer: a Uuid element's 16 bytes, else the bytes path.
            let tag = self.begin_element()?;
            if tag == TAG_UUID || tag == TAG_UUID_HI {
                self.r.pos += 1;
                let a = self.r.uuid_after_tag(tag)?;
                self.end_element();
                return visitor.visit_bytes(&a);
            }
            return self.deserialize_bytes(visitor);
        }
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

impl<'de> PlainDeserializer<'de> {
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

/// [`from_key`] through the plain deserializer.
pub(super) fn from_key_plain<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
    let mut d = PlainDeserializer {
        r: Reader::new(bytes),
        level: 0,
    };
    let v = T::deserialize(&mut d)?;
    if !d.r.at_end() {
        return Err(KeySerdeErrorKind::Trailing(bytes.len() - d.r.pos).into());
    }
    Ok(v)
}
