//! The decoder: a cursor over untrusted bytes that never panics and reports the offset at
//! fault.

use super::*;
use crate::time::Time;

/// Nested tuples deeper than this are refused by the encoder and the decoder: the crate-wide
/// [`MAX_DEPTH`](crate::MAX_DEPTH).
pub use crate::value::MAX_DEPTH;

pub(crate) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(crate) pos: usize,
    /// 0x00 for ascending elements, 0xff for descending ones (bytes are complemented).
    pub(crate) mask: u8,
    /// Start of the current top-level element (for error offsets).
    pub(super) elem_start: usize,
}

impl<'a> Reader<'a> {
    #[inline]
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            pos: 0,
            mask: 0,
            elem_start: 0,
        }
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    #[inline]
    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub(crate) fn err(
        &self,
        at: usize,
        reason: impl Into<std::borrow::Cow<'static, str>>,
    ) -> DecodeError {
        DecodeError::new(CODEC, at, reason)
    }

    #[inline]
    pub(crate) fn byte(&mut self) -> Result<u8, DecodeError> {
        match self.bytes.get(self.pos) {
            Some(b) => {
                self.pos += 1;
                Ok(b ^ self.mask)
            }
            None => Err(self.err(self.pos, "unexpected end of key")),
        }
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        match self.bytes.get(self.pos..self.pos + n) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.short(n)),
        }
    }

    /// The error for a payload of `n` bytes that the key does not hold.
    #[cold]
    pub(crate) fn short(&self, n: usize) -> DecodeError {
        self.err(
            self.pos,
            format!(
                "unexpected end of key: {n} payload bytes needed, {} left",
                self.bytes.len() - self.pos
            ),
        )
    }

    /// Reads a top-level element: its direction comes from its first byte.
    pub(super) fn top_element(&mut self) -> Result<(Value, Order), DecodeError> {
        self.elem_start = self.pos;
        let raw = self.bytes[self.pos];
        let descending = match raw {
            0x02..=0x7f => false,
            0x80..=0xfd => true,
            _ => {
                return Err(self.err(
                    self.pos,
                    format!("byte 0x{raw:02x} cannot start an element"),
                ))
            }
        };
        self.mask = if descending { 0xff } else { 0 };
        let v = self.value(0)?;
        self.mask = 0;
        let tag = raw ^ if descending { 0xff } else { 0 };
        // Stored null placement is swapped for descending fields (see encode_top).
        let nulls_last = (tag == TAG_NULL_LAST) != descending;
        Ok((
            v,
            Order {
                descending,
                nulls_last,
            },
        ))
    }

    pub(super) fn skip_top(&mut self) -> Result<(), DecodeError> {
        self.top_element().map(|_| ())
    }

    pub(crate) fn value(&mut self, depth: usize) -> Result<Value, DecodeError> {
        let at = self.pos;
        let tag = self.byte()?;
        Ok(match tag {
            TAG_NULL_FIRST => Value::Null,
            // Inside nested tuples NULL always sorts first: the other tag would be a second
            // encoding of the same key.
            TAG_NULL_LAST if depth == 0 => Value::Null,
            TAG_NULL_LAST => return Err(self.err(at, "a nulls-last NULL inside a nested tuple")),
            TAG_FALSE => Value::Bool(false),
            TAG_TRUE => Value::Bool(true),
            TAG_INT_MIN..=TAG_INT_MAX => Value::Int(self.int_after_tag(tag, at)?),
            TAG_F32 => {
                let b = self.take(4)?;
                let u = u32::from_be_bytes([b[0], b[1], b[2], b[3]])
                    ^ u32::from_ne_bytes([self.mask; 4]);
                self.trailer()?;
                Value::F32(unordered_f32(u))
            }
            TAG_F64 | TAG_F64_HI => Value::Float(self.f64_after_tag(tag)?),
            TAG_BYTES => Value::Bytes(self.escaped()?),
            TAG_TEXT => {
                let start = self.pos;
                let b = self.escaped()?;
                match String::from_utf8(b) {
                    Ok(s) => Value::Text(s),
                    Err(e) => {
                        return Err(self.err(
                            start,
                            format!("text is not valid UTF-8: {}", e.utf8_error()),
                        ))
                    }
                }
            }
            TAG_UUID | TAG_UUID_HI => {
                Value::Uuid(uuid::Uuid::from_bytes(self.uuid_after_tag(tag)?))
            }
            TAG_TIME => {
                let ns_at = self.pos;
                let ns = self.sub_int()?;
                let off_at = self.pos;
                let off = self.sub_int()?;
                let off =
                    i32::try_from(off).map_err(|_| self.err(off_at, "time offset out of range"))?;
                let t = Time::from_unix_ns(ns, off)
                    .ok_or_else(|| self.err(ns_at, "time out of range"))?;
                if t.offset_s() != off {
                    return Err(self.err(off_at, "time offset out of range"));
                }
                Value::Time(t)
            }
            TAG_TUPLE => {
                if depth >= MAX_DEPTH {
                    return Err(self.err(at, format!("tuples nested deeper than {MAX_DEPTH}")));
                }
                let mut items = Vec::new();
                loop {
                    match self.bytes.get(self.pos).map(|b| b ^ self.mask) {
                        Some(TAG_END) => {
                            self.pos += 1;
                            break;
                        }
                        Some(_) => items.push(self.value(depth + 1)?),
                        None => return Err(self.err(self.pos, "nested tuple without its end byte")),
                    }
                }
                Value::Tuple(Tuple(items))
            }
            TAG_DECIMAL => Value::Decimal(self.decimal_after_tag()?),
            TAG_END => return Err(self.err(at, "end of tuple outside a nested tuple")),
            other => return Err(self.err(at, format!("unknown tag 0x{other:02x}"))),
        })
    }
}
