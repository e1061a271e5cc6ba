//! The deserializer: native key bytes to serde values.
//!
//! The nesting level of the element being read is a type parameter ([`Root`], [`Top`] or
//! [`Nested`] in [`De`]), so the per-element questions "does this element take its direction
//! from its first byte, and may its NULL be nulls-last?" are answered at compile time. Only the
//! depth of open tuples (for [`MAX_DEPTH`]) is counted at run time, where a compound opens or
//! closes.

use std::marker::PhantomData;

use super::*;

// A child module (it reads the private fields and helpers of this one).
#[path = "de_int.rs"]
mod de_int;

// ---------------------------------------------------------------------------------------------
// Deserializer
// ---------------------------------------------------------------------------------------------

/// The decoding state of one key: the reader and the depth of open compounds, as in the
/// serializer (0 = root, 1 = inside the root's compound, ≥ 2 = inside nested tuples).
pub(super) struct KeyDeserializer<'de> {
    pub(super) r: Reader<'de>,
    pub(super) level: usize,
}

/// A nesting level known at compile time.
pub(super) trait Level {
    /// 0 = the root value, 1 = a top-level element, 2 = an element inside a nested tuple.
    const L: u8;
    /// The level of the elements of a compound read at this level.
    type Child: Level;
}

/// The root value (a compound here is flattened into top-level elements).
pub(super) enum Root {}
/// A top-level element: its direction comes from its first byte.
pub(super) enum Top {}
/// An element inside a nested tuple: it keeps its top-level element's direction.
pub(super) enum Nested {}

impl Level for Root {
    const L: u8 = 0;
    type Child = Top;
}
impl Level for Top {
    const L: u8 = 1;
    type Child = Nested;
}
impl Level for Nested {
    const L: u8 = 2;
    type Child = Nested;
}

/// The serde deserializer for one value at level `L` of a key.
pub(super) struct De<'a, 'de, L: Level> {
    d: &'a mut KeyDeserializer<'de>,
    _level: PhantomData<fn() -> L>,
}

impl<'a, 'de, L: Level> De<'a, 'de, L> {
    #[inline(always)]
    pub(super) fn new(d: &'a mut KeyDeserializer<'de>) -> Self {
        De {
            d,
            _level: PhantomData,
        }
    }

    /// True for a nested element (level ≥ 2): a compile-time constant.
    const NESTED: bool = L::L >= 2;
}

/// The cold error paths take the shared state, not a [`De`], so that a `De` never has its
/// address taken and stays in a register.
impl<'de> KeyDeserializer<'de> {
    /// The error for a top-level element that is missing or starts with `00`, `01`, `fe` or
    /// `ff`.
    #[cold]
    #[inline(never)]
    fn bad_start(&self) -> KeySerdeError {
        match self.r.bytes().get(self.r.pos) {
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

    /// The error for an element at the cursor, read at level `L`, that is not an integer (or
    /// is missing).
    #[cold]
    #[inline(never)]
    fn int_error<L: Level>(&mut self) -> KeySerdeError {
        match De::<L>::new(self).begin_element() {
            Err(e) => e,
            Ok(tag) => self.wrong_tag("an integer", tag),
        }
    }
}

impl<'de, L: Level> De<'_, 'de, L> {
    /// At the root or between top-level elements: set the complement mask from the element's
    /// first byte. Returns the element's tag (relative).
    #[inline]
    fn begin_element(&mut self) -> Result<u8> {
        self.begin_element_masked().map(|(tag, _)| tag)
    }

    /// [`De::begin_element`], also returning the element's direction mask (the reader's mask
    /// it set), so that a caller can use it from a register instead of loading the byte just
    /// stored.
    #[inline]
    fn begin_element_masked(&mut self) -> Result<(u8, u8)> {
        if Self::NESTED {
            return self.peek_tag().map(|tag| (tag, self.d.r.mask));
        }
        let Some(&raw) = self.d.r.bytes().get(self.d.r.pos) else {
            return Err(self.d.bad_start());
        };
        let mask = match raw {
            0x02..=0x7f => 0,
            0x80..=0xfd => 0xff,
            _ => return Err(self.d.bad_start()),
        };
        self.d.r.mask = mask;
        Ok((raw ^ mask, mask))
    }

    #[inline]
    fn peek_tag(&self) -> Result<u8> {
        match self.d.r.bytes().get(self.d.r.pos) {
            Some(b) => Ok(b ^ self.d.r.mask),
            None => Err(self.d.r.err(self.d.r.pos, "unexpected end of key").into()),
        }
    }

    /// After a scalar element at the top level, clear the mask.
    #[inline]
    fn end_element(&mut self) {
        if !Self::NESTED {
            self.d.r.mask = 0;
        }
    }

    /// An integer element. The direction comes from the tag byte without a branch (its sign
    /// bit) and stays in a register, and every
    /// byte that cannot start an element (`00`, `01`, `fe`, `ff`) unmasks to a tag outside the
    /// integers, so one range check covers both.
    #[inline(always)]
    fn int(&mut self) -> Result<i128> {
        let at = self.d.r.pos;
        let Some(&raw) = self.d.r.bytes().get(at) else {
            return Err(self.d.int_error::<L>());
        };
        // A nested element keeps the mask of its top-level element; a top-level one takes it
        // from its tag and leaves none set (an `Option` may have set it). The level is known
        // at compile time.
        let nested = Self::NESTED;
        let mask = if nested {
            self.d.r.mask
        } else {
            ((raw as i8) >> 7) as u8
        };
        let tag = raw ^ mask;
        if tag.wrapping_sub(TAG_INT_MIN) > TAG_INT_MAX - TAG_INT_MIN {
            return Err(self.d.int_error::<L>());
        }
        self.d.r.pos = at + 1;
        let v = self.d.r.int_after_tag_masked(tag, at, mask)?;
        // `mask` is the reader's mask where nested, 0 only ever set at the top level.
        self.d.r.mask = mask & (nested as u8).wrapping_neg();
        Ok(v)
    }

    #[inline]
    fn decimal(&mut self) -> Result<crate::Decimal> {
        let tag = self.begin_element()?;
        if tag != TAG_DECIMAL {
            return Err(self
                .d
                .r
                .err(
                    self.d.r.pos,
                    format!("expected a decimal, found tag 0x{tag:02x}"),
                )
                .into());
        }
        self.d.r.pos += 1;
        let d = self.d.r.decimal_after_tag()?;
        self.end_element();
        Ok(d)
    }

    /// Positions the reader after the tag of a string element of tag `want`.
    #[inline]
    fn string_tag(&mut self, want: u8) -> Result<()> {
        let tag = self.begin_element()?;
        if tag != want {
            let what = if want == TAG_TEXT { "text" } else { "bytes" };
            return Err(self.d.wrong_tag(what, tag));
        }
        self.d.r.pos += 1;
        Ok(())
    }

    /// Reads a text element into a `String`: the common case (at most 16 plain ASCII bytes
    /// followed by at least its terminator) inline, everything else (and every error) in
    /// [`KeyDeserializer::text_general`], so that the caller's `String::deserialize` stays
    /// small enough to be inlined into its own caller.
    #[inline(always)]
    fn text(&mut self) -> Result<String> {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if let Some(s) = self.text_short() {
            return Ok(s);
        }
        self.d.text_general::<L>()
    }

    /// A text element of at most 16 plain ASCII bytes with its terminator and at least one
    /// more byte in the key (what [`Reader::plain16_v`] reads with one 16-byte load), as a
    /// `String`; `None`, with the reader as it was, for anything else.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[inline(always)]
    fn text_short(&mut self) -> Option<String> {
        let at = self.d.r.pos;
        let raw = *self.d.r.bytes().get(at)?;
        // As in `begin_element`: a nested element keeps its top-level element's mask, a
        // top-level one takes it from its first byte (`00`, `01`, `fe` and `ff` then unmask
        // to tags other than text's).
        let mask = if Self::NESTED {
            self.d.r.mask
        } else {
            ((raw as i8) >> 7) as u8
        };
        if raw ^ mask != TAG_TEXT {
            return None;
        }
        let old_mask = self.d.r.mask;
        self.d.r.mask = mask;
        self.d.r.pos = at + 1;
        match self.d.r.plain16_v() {
            Some((c, n, true)) => {
                // One 16-byte store into a buffer malloc would round up to at least 24 anyway.
                let mut buf = Vec::with_capacity(16);
                buf.extend_from_slice(&c);
                buf.truncate(n);
                self.d.r.pos = at + 1 + n + 1;
                self.end_element();
                // SAFETY: `plain16_v` reports `true` only when none of the first `n` lanes
                // has its top bit set, and bytes below 0x80 are valid UTF-8 on their own.
                // Tested by `text_short_agrees_with_text_general`.
                Some(unsafe { String::from_utf8_unchecked(buf) })
            }
            _ => {
                self.d.r.mask = old_mask;
                self.d.r.pos = at;
                None
            }
        }
    }
}

impl KeyDeserializer<'_> {
    /// Reads a text element at level `L` into a `String` of exactly its length: every case
    /// [`De::text`] does not read inline, and every error.
    #[inline(never)]
    fn text_general<L: Level>(&mut self) -> Result<String> {
        De::<L>::new(self).text_escaped()
    }
}

impl<'de, L: Level> De<'_, 'de, L> {
    /// [`De::text`] by [`Reader::escaped_vec`] (every case, every error).
    #[inline(always)]
    fn text_escaped(&mut self) -> Result<String> {
        self.string_tag(TAG_TEXT)?;
        let at = self.d.r.pos;
        let (buf, ascii) = self.d.r.escaped_vec()?;
        self.end_element();
        if ascii {
            // SAFETY: `escaped_vec` reports `ascii` only when every byte of `buf` is below
            // 0x80 (it ORs the decoded words, restricted to the string's own lanes, and tests
            // the high bits), and bytes below 0x80 are always valid UTF-8 on their own. Tested
            // by `codec::native_serde::tests::text_ascii_fast_path_validates`.
            return Ok(unsafe { String::from_utf8_unchecked(buf) });
        }
        String::from_utf8(buf).map_err(|e| {
            self.d
                .r
                .err(at, format!("text is not valid UTF-8: {}", e.utf8_error()))
                .into()
        })
    }

    /// Opens a compound at this level: at the root its members are the top-level elements
    /// (read at [`Top`]); below, a nested tuple (members at [`Nested`]). The depth is counted
    /// for [`MAX_DEPTH`].
    #[inline(always)]
    fn open(&mut self) -> Result<()> {
        if L::L == 0 {
            self.d.level = 1;
            return Ok(());
        }
        let tag = self.begin_element()?;
        if tag != TAG_TUPLE {
            return Err(self
                .d
                .r
                .err(
                    self.d.r.pos,
                    format!("expected a tuple, found tag 0x{tag:02x}"),
                )
                .into());
        }
        if self.d.level > MAX_DEPTH {
            return Err(self.d.r.err(self.d.r.pos, "tuples nested too deep").into());
        }
        self.d.r.pos += 1;
        self.d.level += 1;
        Ok(())
    }

    /// Closes a compound that [`De::open`] opened at this level.
    #[inline(always)]
    fn close(&mut self) -> Result<()> {
        if L::L == 0 {
            self.d.level = 0;
            return Ok(());
        }
        let at = self.d.r.pos;
        match self.d.r.byte() {
            Ok(TAG_END) => {}
            Ok(_) => {
                return Err(self
                    .d
                    .r
                    .err(at, "more elements in the tuple than the type has")
                    .into())
            }
            Err(e) => return Err(e.into()),
        }
        self.d.level -= 1;
        if !Self::NESTED {
            // A top-level tuple is over: its direction is too.
            self.d.r.mask = 0;
        }
        Ok(())
    }

    #[inline(always)]
    fn with_seq<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        if L::L == 0 {
            // The root's compound cannot fail to open or close: the members' result is
            // returned as it is (no move through a `?`).
            self.d.level = 1;
            let v = visitor.visit_seq(Seq::<L> {
                d: &mut *self.d,
                _level: PhantomData,
            });
            self.d.level = 0;
            return v;
        }
        self.open()?;
        let v = visitor.visit_seq(Seq::<L> {
            d: &mut *self.d,
            _level: PhantomData,
        })?;
        self.close()?;
        Ok(v)
    }
}

/// The members of a compound opened at level `P` (read at `P::Child`).
struct Seq<'a, 'de, P: Level> {
    d: &'a mut KeyDeserializer<'de>,
    _level: PhantomData<fn() -> P>,
}

impl<'de, P: Level> SeqAccess<'de> for Seq<'_, 'de, P> {
    type Error = KeySerdeError;
    #[inline(always)]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let more = if P::L == 0 {
            !self.d.r.at_end()
        } else {
            De::<P>::new(self.d).peek_tag()? != TAG_END
        };
        if more {
            seed.deserialize(De::<P::Child>::new(self.d)).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// An enum read at level `P`: its index and fields at `P::Child` inside the tuple of a data
/// variant (`data`), or just its index at `P` (a unit variant).
struct Enum<'a, 'de, P: Level> {
    d: &'a mut KeyDeserializer<'de>,
    /// A tuple was opened at `P` (a data variant, or any enum at the root).
    data: bool,
    _level: PhantomData<fn() -> P>,
}

impl<'de, P: Level> Enum<'_, 'de, P> {
    /// Closes the tuple of a data variant.
    #[inline]
    fn close(&mut self) -> Result<()> {
        De::<P>::new(self.d).close()
    }

    /// The tuple of a data variant, or an error for a unit variant.
    #[inline]
    fn need_data(&self) -> Result<()> {
        if self.data {
            Ok(())
        } else {
            Err(KeySerdeError::message(
                "expected a variant with data".into(),
            ))
        }
    }
}

impl<'a, 'de, P: Level> EnumAccess<'de> for Enum<'a, 'de, P> {
    type Error = KeySerdeError;
    type Variant = Self;
    #[inline]
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        let idx = if self.data {
            De::<P::Child>::new(self.d).int()?
        } else {
            De::<P>::new(self.d).int()?
        };
        let idx = u32::try_from(idx)
            .map_err(|_| KeySerdeError::message(format!("variant index {idx} out of range")))?;
        let v = seed.deserialize(de::value::U32Deserializer::<KeySerdeError>::new(idx))?;
        Ok((v, self))
    }
}

impl<'de, P: Level> VariantAccess<'de> for Enum<'_, 'de, P> {
    type Error = KeySerdeError;
    #[inline]
    fn unit_variant(mut self) -> Result<()> {
        if self.data {
            self.close()
        } else {
            Ok(())
        }
    }
    #[inline]
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(mut self, seed: T) -> Result<T::Value> {
        self.need_data()?;
        let v = seed.deserialize(De::<P::Child>::new(self.d))?;
        self.close()?;
        Ok(v)
    }
    #[inline]
    fn tuple_variant<V: Visitor<'de>>(mut self, _len: usize, visitor: V) -> Result<V::Value> {
        self.need_data()?;
        let v = visitor.visit_seq(Seq::<P> {
            d: &mut *self.d,
            _level: PhantomData,
        })?;
        self.close()?;
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

/// An integer type of at most 64 bits: [`De::int64`].
macro_rules! de_int64 {
    ($method:ident, $visit:ident, $t:ty) => {
        #[inline]
        fn $method<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
            self.int64::<$t, _>(|v| visitor.$visit(v))
        }
    };
}

macro_rules! de_int {
    ($method:ident, $visit:ident, $t:ty) => {
        #[inline]
        #[allow(irrefutable_let_patterns)] // i128 from i128
        fn $method<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
            let at = self.d.r.pos;
            let v = self.int()?;
            let Ok(v) = <$t>::try_from(v) else {
                return Err(self.d.out_of_range(at, v, stringify!($t)));
            };
            visitor.$visit(v)
        }
    };
}

impl<'de, L: Level> de::Deserializer<'de> for De<'_, 'de, L> {
    type Error = KeySerdeError;

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        if L::L == 0 {
            // The root of a self-described key: a sequence of top-level elements.
            return self.with_seq(visitor);
        }
        let tag = self.begin_element()?;
        match tag {
            t if self.is_null_tag(t) => {
                self.d.r.pos += 1;
                self.end_element();
                visitor.visit_unit()
            }
            TAG_FALSE | TAG_TRUE => {
                self.d.r.pos += 1;
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
            TAG_UUID | TAG_UUID_HI => self.uuid_element(tag, visitor),
            TAG_TUPLE => self.with_seq(visitor),
            TAG_DECIMAL => {
                let d = self.decimal()?;
                visitor.visit_string(d.to_string())
            }
            TAG_TIME => Err(self
                .d
                .r
                .err(
                    self.d.r.pos,
                    "time elements cannot be read through serde; use Value",
                )
                .into()),
            other => Err(self
                .d
                .r
                .err(self.d.r.pos, format!("unexpected tag 0x{other:02x}"))
                .into()),
        }
    }

    #[inline]
    fn deserialize_bool<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        match tag {
            TAG_FALSE | TAG_TRUE => {
                self.d.r.pos += 1;
                self.end_element();
                visitor.visit_bool(tag == TAG_TRUE)
            }
            other => Err(self
                .d
                .r
                .err(
                    self.d.r.pos,
                    format!("expected a bool, found tag 0x{other:02x}"),
                )
                .into()),
        }
    }

    de_int64!(deserialize_i8, visit_i8, i8);
    de_int64!(deserialize_i16, visit_i16, i16);
    de_int64!(deserialize_i32, visit_i32, i32);
    de_int64!(deserialize_i64, visit_i64, i64);
    de_int!(deserialize_i128, visit_i128, i128);
    de_int64!(deserialize_u8, visit_u8, u8);
    de_int64!(deserialize_u16, visit_u16, u16);
    de_int64!(deserialize_u32, visit_u32, u32);
    de_int64!(deserialize_u64, visit_u64, u64);
    de_int!(deserialize_u128, visit_u128, u128);

    #[inline]
    fn deserialize_f32<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        if tag != TAG_F32 {
            return Err(self
                .d
                .r
                .err(
                    self.d.r.pos,
                    format!("expected an f32, found tag 0x{tag:02x}"),
                )
                .into());
        }
        self.d.r.pos += 1;
        let b = self.d.r.take(4)?;
        let u =
            u32::from_be_bytes([b[0], b[1], b[2], b[3]]) ^ u32::from_ne_bytes([self.d.r.mask; 4]);
        self.d.r.trailer()?;
        self.end_element();
        visitor.visit_f32(unordered_f32(u))
    }

    #[inline]
    fn deserialize_f64<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        if tag != TAG_F64 && tag != TAG_F64_HI {
            return Err(self
                .d
                .r
                .err(
                    self.d.r.pos,
                    format!("expected an f64, found tag 0x{tag:02x}"),
                )
                .into());
        }
        self.d.r.pos += 1;
        let f = self.d.r.f64_after_tag(tag)?;
        self.end_element();
        visitor.visit_f64(f)
    }

    #[inline]
    fn deserialize_char<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let at = self.d.r.pos;
        let s = self.text()?;
        let mut it = s.chars();
        match (it.next(), it.next()) {
            (Some(c), None) => visitor.visit_char(c),
            _ => Err(self.d.r.err(at, "expected a single character").into()),
        }
    }

    #[inline]
    fn deserialize_str<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        // As `De::text`, with a return of its own for each case: the inline one's `String`
        // then goes to the visitor in registers, not through a `Result` shared with the
        // general case.
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if let Some(s) = self.text_short() {
            return visitor.visit_string(s);
        }
        let s = self.d.text_general::<L>()?;
        visitor.visit_string(s)
    }

    #[inline]
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    /// The common case (a UUID's 16 bytes, with at most one two-byte code, followed by at
    /// least its terminator) is inlined into the caller; every other string and every error
    /// takes [`De::bytes_general`].
    #[inline(always)]
    fn deserialize_bytes<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let (tag, mask) = self.begin_element_masked()?;
        if tag == TAG_BYTES {
            self.d.r.pos += 1;
            // The mask from the register, not reloaded from the reader (where it was just
            // stored as one byte; `Reader::one_code16_masked`).
            if let Some((a, n, len)) = self.d.r.one_code16_masked(mask) {
                // A UUID (with or without one byte ≥ 0xfc): no branch on the code, no loop.
                self.d.r.pos += len;
                self.end_element();
                return visitor.visit_bytes(&a[..n]);
            }
            // Back on the tag for the general path.
            self.d.r.pos -= 1;
        }
        self.bytes_general(tag, visitor)
    }

    #[inline]
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    #[inline]
    fn deserialize_option<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        if self.is_null_tag(tag) {
            self.d.r.pos += 1;
            self.end_element();
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    #[inline]
    fn deserialize_unit<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        let tag = self.begin_element()?;
        if self.is_null_tag(tag) {
            self.d.r.pos += 1;
            self.end_element();
            visitor.visit_unit()
        } else {
            Err(self
                .d
                .r
                .err(
                    self.d.r.pos,
                    format!("expected null, found tag 0x{tag:02x}"),
                )
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
        mut self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if name == SERDE_TOKEN {
            let d = self.decimal()?;
            return visitor.visit_str(&d.to_string());
        }
        if name == UUID_TOKEN {
            // A `strata_key::serde_uuid` field: a Uuid element (or, read as bytes, a bytes
            // element of 16 bytes written through `Uuid`'s own impl).
            let tag = self.begin_element()?;
            if tag == TAG_UUID || tag == TAG_UUID_HI {
                return self.uuid_element(tag, visitor);
            }
            return de::Deserializer::deserialize_bytes(self, visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    #[inline]
    fn deserialize_seq<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        self.with_seq(visitor)
    }

    #[inline(always)]
    fn deserialize_tuple<V: Visitor<'de>>(mut self, _len: usize, visitor: V) -> Result<V::Value> {
        self.with_seq(visitor)
    }

    #[inline]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        mut self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.with_seq(visitor)
    }

    #[inline]
    fn deserialize_map<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value> {
        self.open()?;
        let v = visitor.visit_map(Seq::<L> {
            d: &mut *self.d,
            _level: PhantomData,
        })?;
        self.close()?;
        Ok(v)
    }

    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        mut self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.with_seq(visitor)
    }

    #[inline]
    fn deserialize_enum<V: Visitor<'de>>(
        mut self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let data = if L::L == 0 {
            // A root enum is flattened: (index, fields...) as top-level elements.
            true
        } else {
            self.begin_element()? == TAG_TUPLE
        };
        if data {
            self.open()?;
        }
        visitor.visit_enum(Enum::<L> {
            d: self.d,
            data,
            _level: PhantomData,
        })
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

impl<'de, L: Level> De<'_, 'de, L> {
    /// [`de::Deserializer::deserialize_bytes`] for an element of tag `tag` at the cursor
    /// (not yet consumed) that is not a short UUID-like string: a UUID element, other bytes,
    /// or an error.
    #[inline(never)]
    fn bytes_general<V: Visitor<'de>>(mut self, tag: u8, visitor: V) -> Result<V::Value> {
        match tag {
            TAG_BYTES => self.d.r.pos += 1,
            // A UUID element reads as its 16 bytes.
            TAG_UUID | TAG_UUID_HI if L::L >= 1 => {
                return de::Deserializer::deserialize_any(self, visitor)
            }
            _ => return Err(self.d.wrong_tag("bytes", tag)),
        }
        if let Some((c, n, len)) = self.d.r.short16() {
            // At most 16 bytes with two-byte codes, or at the end of a short key.
            let a = c.to_le_bytes();
            self.d.r.pos += len;
            self.end_element();
            return visitor.visit_bytes(&a[..n]);
        }
        // Short (a hash, escaped bytes): decoded on the stack, no allocation.
        let mut a = [0u8; SHORT_BUF];
        if let Some(n) = self.d.r.unescape_short(&mut a)? {
            self.end_element();
            return visitor.visit_bytes(&a[..n]);
        }
        let mut buf = Vec::new();
        self.d.r.escaped_into(&mut buf)?;
        self.end_element();
        visitor.visit_byte_buf(buf)
    }

    /// A Uuid element of tag `tag` at the cursor (its tag not yet consumed, the direction set),
    /// handed to `visitor` as its 16 bytes.
    #[inline]
    fn uuid_element<V: Visitor<'de>>(mut self, tag: u8, visitor: V) -> Result<V::Value> {
        self.d.r.pos += 1;
        let a = self.d.r.uuid_after_tag(tag)?;
        self.end_element();
        visitor.visit_bytes(&a)
    }

    /// NULL tags: nulls-last only at the top level (inside tuples NULL always sorts first).
    #[inline]
    fn is_null_tag(&self, tag: u8) -> bool {
        tag == TAG_NULL_FIRST || (tag == TAG_NULL_LAST && !Self::NESTED)
    }
}

/// Maps are tuples of alternating keys and values: the same sequence access.
impl<'de, P: Level> de::MapAccess<'de> for Seq<'_, 'de, P> {
    type Error = KeySerdeError;
    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        self.next_element_seed(seed)
    }
    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        seed.deserialize(De::<P::Child>::new(self.d))
    }
}
