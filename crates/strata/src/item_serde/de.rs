//! The deserializer: stored item bytes straight into a `T: Deserialize`, with no intermediate
//! [`crate::Item`]. Attribute names and text are borrowed from the bytes; attributes the type
//! does not name are skipped without being decoded. Takes untrusted bytes: never panics,
//! bounds nesting, and says which attribute and byte offset is at fault.

use std::fmt;

use serde::de::{self, DeserializeSeed, Error as _, Visitor};

use crate::error::Error;
use crate::item_codec::{
    unzigzag, utf8, Reader, ITEM_FORMAT, MAX_DEPTH, T_BYTES, T_DECIMAL, T_F32, T_F64, T_FALSE,
    T_INT, T_LIST, T_MAP, T_NULL, T_SET, T_TEXT, T_TIME, T_TRUE, T_TUPLE, T_UUID,
};

/// A decoding error on its way out: where it happened is filled in as it propagates. Boxed, so
/// that every `Result` on the decoding path stays two words.
#[derive(Debug)]
pub(crate) struct DeError(Box<DeErrorInner>);

#[derive(Debug)]
struct DeErrorInner {
    /// The bytes are not a valid item (as opposed to a valid item that does not fit the type).
    corrupt: bool,
    /// Attribute names from the top level down to the one at fault (reversed while unwinding).
    path: Vec<String>,
    offset: Option<usize>,
    msg: String,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.msg)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    #[cold]
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError(Box::new(DeErrorInner {
            corrupt: false,
            path: Vec::new(),
            offset: None,
            msg: msg.to_string(),
        }))
    }
}

impl From<Error> for DeError {
    fn from(e: Error) -> DeError {
        match e {
            Error::Corrupt { offset, reason, .. } => DeError(Box::new(DeErrorInner {
                corrupt: true,
                path: Vec::new(),
                offset: Some(offset),
                msg: reason,
            })),
            other => DeError::custom(other),
        }
    }
}

impl DeError {
    #[cold]
    fn at(mut self, offset: usize) -> DeError {
        self.0.offset.get_or_insert(offset);
        self
    }

    #[cold]
    fn in_attr(mut self, name: &str) -> DeError {
        self.0.path.push(name.to_owned());
        self
    }

    /// The error for the caller, naming the type that was being read.
    pub(crate) fn into_error(self, type_name: &str) -> Error {
        let e = *self.0;
        e.into_error(type_name)
    }
}

impl DeErrorInner {
    fn into_error(self, type_name: &str) -> Error {
        let attr = self
            .path
            .iter()
            .rev()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(".");
        let offset = self.offset.unwrap_or(0);
        if self.corrupt {
            let reason = if attr.is_empty() {
                self.msg
            } else {
                format!("in attribute {attr:?}: {}", self.msg)
            };
            Error::Corrupt {
                what: "item".into(),
                offset,
                reason,
            }
        } else {
            Error::ItemType {
                type_name: type_name.to_owned(),
                attr,
                offset,
                reason: self.msg,
            }
        }
    }
}

type R<T> = Result<T, DeError>;

#[cfg(test)]
thread_local! {
    /// Tests only: read every attribute through `deserialize_any` (no scalar fast paths), the
    /// reference the fast paths are compared with (`de_tests.rs`).
    pub(crate) static GENERAL_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the scalar fast paths are on (always, outside tests).
#[inline(always)]
fn fast_paths() -> bool {
    #[cfg(test)]
    {
        !GENERAL_ONLY.with(|g| g.get())
    }
    #[cfg(not(test))]
    {
        true
    }
}

/// Decodes stored item bytes into a `T` (see [`crate::item_serde`] for the mapping).
pub fn from_item_bytes<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Error> {
    decode(bytes).map_err(|e| e.into_error(std::any::type_name::<T>()))
}

#[inline]
fn decode<'de, T: de::Deserialize<'de>>(bytes: &'de [u8]) -> R<T> {
    let mut d = Dec {
        r: Reader { buf: bytes, pos: 0 },
        depth: 0,
    };
    match d.r.byte()? {
        ITEM_FORMAT => {}
        other => {
            return Err(DeError::from(
                d.r.err_at(0, format!("unknown item format version {other:#04x}")),
            ))
        }
    }
    let t = T::deserialize(Top(&mut d)).map_err(|e| e.at(0))?;
    if d.r.pos != bytes.len() {
        return Err(d
            .r
            .err(format!("{} trailing bytes", bytes.len() - d.r.pos))
            .into());
    }
    Ok(t)
}

/// The reader of one attribute value at nesting level `depth`.
struct Dec<'de> {
    r: Reader<'de>,
    depth: usize,
}

impl<'de> Dec<'de> {
    fn peek(&self) -> R<u8> {
        self.r
            .buf
            .get(self.r.pos)
            .copied()
            .ok_or_else(|| self.r.err("unexpected end").into())
    }

    #[inline]
    fn nest(&self) -> R<()> {
        if self.depth > MAX_DEPTH {
            return Err(self
                .r
                .err(format!("nesting deeper than {MAX_DEPTH}"))
                .into());
        }
        Ok(())
    }

    /// The body of a map (after its tag), handed to the visitor; entries it leaves are skipped.
    #[inline]
    fn map<V: Visitor<'de>>(&mut self, v: V) -> R<V::Value> {
        self.nest()?;
        let at = self.r.pos;
        let n = self.r.count()?;
        let mut access = Entries {
            d: self,
            left: n,
            name: "",
        };
        let value = v.visit_map(&mut access).map_err(|e| e.at(at))?;
        while access.left > 0 {
            access.left -= 1;
            let len = access.d.r.count()?;
            access.d.r.take(len)?;
            let depth = access.d.depth + 1;
            access.d.r.skip_attr(depth)?;
        }
        Ok(value)
    }

    /// A list, set or tuple body: the count, then the elements. A set adds no level the
    /// format limits (it holds scalars), as in the `Item` decoder; its elements are still read
    /// one level deeper, so recursion stays bounded.
    fn seq<V: Visitor<'de>>(&mut self, v: V, set: bool) -> R<V::Value> {
        if !set {
            self.nest()?;
        }
        let at = self.r.pos;
        let n = self.r.count()?;
        let mut access = Elements {
            d: self,
            left: n,
            index: 0,
        };
        let value = v.visit_seq(&mut access).map_err(|e| e.at(at))?;
        if access.left > 0 {
            return Err(DeError::custom(format!(
                "{} more elements than the type takes",
                access.left
            ))
            .at(at));
        }
        Ok(value)
    }

    #[inline(always)]
    fn text(&mut self) -> R<&'de str> {
        Ok(self.r.text_body()?)
    }

    /// An int attribute whose varint is at most 9 bytes long (every `i64` in
    /// `-2^62..2^62`): its value, read without 128-bit arithmetic, and where it starts. `None`
    /// for anything else (another tag, a longer, overlong or truncated varint), which the
    /// general path ([`de::Deserializer::deserialize_any`]) then reads or reports, so the
    /// fast path never changes what is accepted or what the visitor is given.
    #[inline(always)]
    fn int_fast(&mut self) -> Option<(usize, i64)> {
        let at = self.r.pos;
        let rest = self.r.buf.get(at..)?;
        let (&T_INT, rest) = rest.split_first()? else {
            return None;
        };
        let mut u: u64 = 0;
        for (i, &b) in rest.iter().take(9).enumerate() {
            u |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if b == 0 && i > 0 {
                    // Overlong: the general path reports it.
                    return None;
                }
                self.r.pos = at + 2 + i;
                // u < 2^63: the zigzag decoding of `unzigzag`, in 64 bits.
                return Some((at, ((u >> 1) as i64) ^ -((u & 1) as i64)));
            }
        }
        None
    }

    /// Runs `f` one level deeper.
    #[inline(always)]
    fn deeper<T>(&mut self, f: impl FnOnce(&mut Dec<'de>) -> R<T>) -> R<T> {
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }
}

/// The integer `deserialize_*` methods: each takes the int fast path ([`Dec::int`]).
macro_rules! int_fast_paths {
    ($($method:ident)*) => {
        $(
            #[inline(always)]
            fn $method<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
                self.int(v)
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for &mut Dec<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        let at = self.r.pos;
        let tag = self.r.byte()?;
        let r = match tag {
            T_NULL => v.visit_unit(),
            T_FALSE => v.visit_bool(false),
            T_TRUE => v.visit_bool(true),
            T_INT => {
                let i = unzigzag(self.r.varint()?);
                if let Ok(x) = i64::try_from(i) {
                    v.visit_i64(x)
                } else if let Ok(x) = u64::try_from(i) {
                    v.visit_u64(x)
                } else {
                    v.visit_i128(i)
                }
            }
            T_F32 => {
                let b = self.r.take(4)?;
                v.visit_f32(f32::from_bits(u32::from_be_bytes([b[0], b[1], b[2], b[3]])))
            }
            T_F64 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(self.r.take(8)?);
                v.visit_f64(f64::from_bits(u64::from_be_bytes(a)))
            }
            T_BYTES => {
                let n = self.r.count()?;
                v.visit_borrowed_bytes(self.r.take(n)?)
            }
            T_TEXT => v.visit_borrowed_str(self.text()?),
            // Scalars with no serde counterpart arrive as their text form (what
            // `uuid::Uuid`, a `String` or a parser of the caller's accepts).
            T_UUID | T_TIME | T_DECIMAL => {
                self.r.pos = at;
                let value = self.r.value(self.depth)?;
                v.visit_string(value.to_string())
            }
            T_LIST | T_TUPLE => self.seq(v, false),
            T_SET => self.seq(v, true),
            T_MAP => self.map(v),
            other => {
                return Err(self
                    .r
                    .err_at(at, format!("unknown attribute tag {other:#04x}"))
                    .into())
            }
        };
        r.map_err(|e: DeError| e.at(at))
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        if self.peek()? == T_NULL {
            self.r.pos += 1;
            v.visit_none()
        } else {
            v.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> R<V::Value> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> R<V::Value> {
        let at = self.r.pos;
        match self.peek()? {
            T_TEXT => {
                self.r.pos += 1;
                let s = self.text()?;
                let unit: de::value::BorrowedStrDeserializer<'de, DeError> =
                    de::value::BorrowedStrDeserializer::new(s);
                v.visit_enum(unit).map_err(|e: DeError| e.at(at))
            }
            T_MAP => {
                self.r.pos += 1;
                self.nest()?;
                let n = self.r.count()?;
                if n != 1 {
                    return Err(DeError::custom(format!(
                        "an enum variant with data is a map of one entry, found {n} entries"
                    ))
                    .at(at));
                }
                let s = self.text()?;
                let r = self.deeper(|d| v.visit_enum(Variant { d, name: s }));
                r.map_err(|e| e.in_attr(s).at(at))
            }
            _ => Err(DeError::custom(
                "an enum is stored as text (unit variant) or a map of one entry",
            )
            .at(at)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        self.r.skip_attr(self.depth)?;
        v.visit_unit()
    }

    // Fast paths for the common scalars: the visitor gets exactly the call
    // `deserialize_any` would make (ints within i64 arrive through `visit_i64` whatever the
    // requested width, as there), without the general tag dispatch and 128-bit varint; any
    // other tag or form goes through `deserialize_any`.

    int_fast_paths! {
        deserialize_i64 deserialize_i32 deserialize_i16 deserialize_i8
        deserialize_u64 deserialize_u32 deserialize_u16 deserialize_u8
    }

    #[inline(always)]
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        self.str(v)
    }

    #[inline(always)]
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        self.str(v)
    }

    #[inline(always)]
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        let at = self.r.pos;
        let b = match self.r.buf.get(at) {
            Some(&T_TRUE) if fast_paths() => true,
            Some(&T_FALSE) if fast_paths() => false,
            _ => return self.general(v),
        };
        self.r.pos = at + 1;
        v.visit_bool(b).map_err(|e: DeError| e.at(at))
    }

    serde::forward_to_deserialize_any! {
        i128 u128 f32 f64 char bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

impl<'de> Dec<'de> {
    /// The general path ([`de::Deserializer::deserialize_any`]) behind a fast path, kept out
    /// of line so that the fast paths stay small enough to inline into the caller's visitor.
    #[inline(never)]
    fn general<V: Visitor<'de>>(&mut self, v: V) -> R<V::Value> {
        de::Deserializer::deserialize_any(self, v)
    }

    /// An int attribute for an integer visitor (see the fast paths above).
    #[inline(always)]
    fn int<V: Visitor<'de>>(&mut self, v: V) -> R<V::Value> {
        if fast_paths() {
            if let Some((at, i)) = self.int_fast() {
                return v.visit_i64(i).map_err(|e: DeError| e.at(at));
            }
        }
        self.general(v)
    }

    /// A text attribute for a string visitor (see the fast paths above).
    #[inline(always)]
    fn str<V: Visitor<'de>>(&mut self, v: V) -> R<V::Value> {
        let at = self.r.pos;
        if self.r.buf.get(at) != Some(&T_TEXT) || !fast_paths() {
            return self.general(v);
        }
        self.r.pos = at + 1;
        let s = self.text().map_err(|e| e.at(at))?;
        v.visit_borrowed_str(s).map_err(|e: DeError| e.at(at))
    }
}

/// The top level: the item's own map (no tag).
struct Top<'a, 'de>(&'a mut Dec<'de>);

impl<'de> de::Deserializer<'de> for Top<'_, 'de> {
    type Error = DeError;

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        self.0.map(v)
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        v.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> R<V::Value> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> R<V::Value> {
        let n = self.0.r.count()?;
        for _ in 0..n {
            let len = self.0.r.count()?;
            self.0.r.take(len)?;
            self.0.r.skip_attr(1)?;
        }
        v.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct enum identifier
    }
}

/// The entries of a map: names borrowed from the bytes, values read one level deeper.
struct Entries<'a, 'de> {
    d: &'a mut Dec<'de>,
    left: usize,
    name: &'de str,
}

impl<'de> de::MapAccess<'de> for Entries<'_, 'de> {
    type Error = DeError;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> R<Option<K::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let at = self.d.r.pos;
        let len = self.d.r.count()?;
        let raw = self.d.r.take(len)?;
        self.name = utf8(raw)
            .ok_or_else(|| DeError::from(self.d.r.err_at(at, "attribute name is not UTF-8")))?;
        let de: de::value::BorrowedStrDeserializer<'de, DeError> =
            de::value::BorrowedStrDeserializer::new(self.name);
        seed.deserialize(de)
            .map(Some)
            .map_err(|e| e.in_attr(self.name).at(at))
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> R<V::Value> {
        let at = self.d.r.pos;
        let name = self.name;
        self.d
            .deeper(|d| seed.deserialize(&mut *d))
            .map_err(|e| e.in_attr(name).at(at))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// The elements of a list, set or tuple.
struct Elements<'a, 'de> {
    d: &'a mut Dec<'de>,
    left: usize,
    index: usize,
}

impl<'de> de::SeqAccess<'de> for Elements<'_, 'de> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> R<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let at = self.d.r.pos;
        let i = self.index;
        self.index += 1;
        self.d
            .deeper(|d| seed.deserialize(&mut *d))
            .map(Some)
            .map_err(|e| e.in_attr(&format!("[{i}]")).at(at))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// An enum variant with data: `{variant: value}`; the value is read at the map's entry level.
struct Variant<'a, 'de> {
    d: &'a mut Dec<'de>,
    name: &'de str,
}

impl<'de, 'a> de::EnumAccess<'de> for Variant<'a, 'de> {
    type Error = DeError;
    type Variant = &'a mut Dec<'de>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> R<(S::Value, Self::Variant)> {
        let name: de::value::BorrowedStrDeserializer<'de, DeError> =
            de::value::BorrowedStrDeserializer::new(self.name);
        Ok((seed.deserialize(name)?, self.d))
    }
}

impl<'de> de::VariantAccess<'de> for &mut Dec<'de> {
    type Error = DeError;

    fn unit_variant(self) -> R<()> {
        de::Deserialize::deserialize(self)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> R<T::Value> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, v: V) -> R<V::Value> {
        de::Deserializer::deserialize_seq(self, v)
    }

    fn struct_variant<V: Visitor<'de>>(self, _f: &'static [&'static str], v: V) -> R<V::Value> {
        de::Deserializer::deserialize_map(self, v)
    }
}
