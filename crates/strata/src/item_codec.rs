//! The byte encoding of items (the values stored under table keys). Specified in
//! `docs/format/tables.md`:
//!
//! ```text
//! item     = 0x01 map-body                         (0x01: format version)
//! map-body = varint(count) { varint(len) name attr }*   names UTF-8, strictly ascending
//! attr     = tag payload
//! ```
//!
//! Decoding takes untrusted bytes: it never panics, bounds nesting depth and allocation, and
//! reports the byte offset at fault.

use std::collections::BTreeMap;

use strata_key::{Decimal, Time, Tuple, Value};

use crate::error::Error;
use crate::item::{Attr, Item, Set};

/// Format version byte that starts every stored item.
pub const ITEM_FORMAT: u8 = 0x01;
/// Deepest nesting of lists, maps and tuples, in encoding and decoding: the key limit
/// [`strata_key::MAX_DEPTH`] (a top-level attribute is level 1), so an item that holds a key
/// tuple at the limit still stores.
pub const MAX_DEPTH: usize = strata_key::MAX_DEPTH;

/// An item nested deeper than [`MAX_DEPTH`]: it would store, but could never be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("attribute {attr:?} is nested deeper than {MAX_DEPTH} levels of lists, maps and tuples")]
pub struct NestingError {
    /// The top-level attribute at fault.
    pub attr: String,
}

pub(crate) const T_NULL: u8 = 0x00;
pub(crate) const T_FALSE: u8 = 0x01;
pub(crate) const T_TRUE: u8 = 0x02;
pub(crate) const T_INT: u8 = 0x03;
pub(crate) const T_F32: u8 = 0x04;
pub(crate) const T_F64: u8 = 0x05;
pub(crate) const T_BYTES: u8 = 0x06;
pub(crate) const T_TEXT: u8 = 0x07;
pub(crate) const T_UUID: u8 = 0x08;
pub(crate) const T_TIME: u8 = 0x09;
pub(crate) const T_TUPLE: u8 = 0x0a;
pub(crate) const T_LIST: u8 = 0x0b;
pub(crate) const T_MAP: u8 = 0x0c;
pub(crate) const T_DECIMAL: u8 = 0x0d;
pub(crate) const T_SET: u8 = 0x0e;

/// Encodes an item; refuses one nested deeper than [`MAX_DEPTH`] (which would not decode).
pub fn encode_item(item: &Item) -> Result<Vec<u8>, NestingError> {
    if let Some((name, _)) = item.iter().find(|(_, a)| !attr_depth_ok(a, 1)) {
        return Err(NestingError { attr: name.clone() });
    }
    // Most rows fit (as in the serializer, `item_serde`); a larger item grows as it is written.
    let mut out = Vec::with_capacity(128);
    out.push(ITEM_FORMAT);
    put_map(&mut out, item);
    Ok(out)
}

/// Whether `a`, at nesting level `depth`, and everything in it stays within [`MAX_DEPTH`]
/// (the decoder's rule: a list, map or tuple may sit at levels 1 to `MAX_DEPTH`).
fn attr_depth_ok(a: &Attr, depth: usize) -> bool {
    match a {
        Attr::Value(v) => value_depth_ok(v, depth),
        Attr::List(l) => depth <= MAX_DEPTH && l.iter().all(|x| attr_depth_ok(x, depth + 1)),
        Attr::Map(m) => depth <= MAX_DEPTH && m.values().all(|x| attr_depth_ok(x, depth + 1)),
        // A set holds scalars only (never tuples): it adds no nesting the decoder limits.
        Attr::Set(_) => true,
    }
}

fn value_depth_ok(v: &Value, depth: usize) -> bool {
    match v {
        Value::Tuple(t) => depth <= MAX_DEPTH && t.iter().all(|x| value_depth_ok(x, depth + 1)),
        _ => true,
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

pub(crate) fn unzigzag(u: u128) -> i128 {
    ((u >> 1) as i128) ^ -((u & 1) as i128)
}

#[inline]
pub(crate) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    if b.len() < 0x80 {
        // Names and short texts: a one-byte length.
        out.reserve(1 + b.len());
        out.push(b.len() as u8);
    } else {
        put_varint(out, b.len() as u128);
    }
    out.extend_from_slice(b);
}

fn put_map(out: &mut Vec<u8>, m: &Item) {
    put_varint(out, m.len() as u128);
    for (name, a) in m.iter() {
        put_bytes(out, name.as_bytes());
        put_attr(out, a);
    }
}

fn put_attr(out: &mut Vec<u8>, a: &Attr) {
    match a {
        Attr::Value(v) => put_value(out, v),
        Attr::List(l) => {
            out.push(T_LIST);
            put_varint(out, l.len() as u128);
            for x in l {
                put_attr(out, x);
            }
        }
        Attr::Map(m) => {
            out.push(T_MAP);
            put_map(out, m);
        }
        Attr::Set(set) => {
            out.push(T_SET);
            put_varint(out, set.len() as u128);
            for v in set.values() {
                put_value(out, v);
            }
        }
    }
}

pub(crate) fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(T_NULL),
        Value::Bool(false) => out.push(T_FALSE),
        Value::Bool(true) => out.push(T_TRUE),
        Value::Int(i) => {
            out.push(T_INT);
            put_varint(out, zigzag(*i));
        }
        Value::F32(f) => {
            out.push(T_F32);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        Value::Float(f) => {
            out.push(T_F64);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        Value::Bytes(b) => {
            out.push(T_BYTES);
            put_bytes(out, b);
        }
        Value::Text(s) => {
            out.push(T_TEXT);
            put_bytes(out, s.as_bytes());
        }
        Value::Uuid(u) => {
            out.push(T_UUID);
            out.extend_from_slice(u.as_bytes());
        }
        Value::Time(t) => {
            out.push(T_TIME);
            put_varint(out, zigzag(t.secs() as i128));
            put_varint(out, t.nanos() as u128);
            put_varint(out, zigzag(t.offset_s() as i128));
        }
        Value::Tuple(t) => {
            out.push(T_TUPLE);
            put_varint(out, t.len() as u128);
            for x in t.iter() {
                put_value(out, x);
            }
        }
        Value::Decimal(d) => {
            out.push(T_DECIMAL);
            put_varint(out, zigzag(d.exponent().into()));
            // A coefficient has at most 38 digits (< 2^127): the shift cannot overflow.
            put_varint(out, (d.coefficient() << 1) | u128::from(d.is_negative()));
        }
    }
}

/// Decodes an item.
pub fn decode_item(bytes: &[u8]) -> Result<Item, Error> {
    let mut r = Reader { buf: bytes, pos: 0 };
    match r.byte()? {
        ITEM_FORMAT => {}
        other => return Err(r.err_at(0, format!("unknown item format version {other:#04x}"))),
    }
    let item = r.map(0)?;
    if r.pos != bytes.len() {
        return Err(r.err(format!("{} trailing bytes", bytes.len() - r.pos)));
    }
    Ok(item)
}

/// Whether `a < b` in byte order, for attribute names: a byte loop, as names are short
/// (shorter than a `memcmp` call's own set-up).
#[inline]
pub(crate) fn strictly_before(a: &[u8], b: &[u8]) -> bool {
    match a.iter().zip(b).find(|(x, y)| x != y) {
        Some((x, y)) => x < y,
        None => a.len() < b.len(),
    }
}

/// `raw` as text when it is UTF-8. Names and most texts are ASCII: checked a word at a time,
/// without the general validator's set-up.
#[inline]
pub(crate) fn utf8(raw: &[u8]) -> Option<&str> {
    if raw.is_ascii() {
        // SAFETY: every ASCII byte string is valid UTF-8 (checked just above).
        Some(unsafe { std::str::from_utf8_unchecked(raw) })
    } else {
        std::str::from_utf8(raw).ok()
    }
}

pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    #[cold]
    #[inline(never)]
    pub(crate) fn err(&self, reason: impl Into<String>) -> Error {
        self.err_at(self.pos, reason)
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn err_at(&self, offset: usize, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            what: "item".into(),
            offset,
            reason: reason.into(),
        }
    }

    #[inline]
    pub(crate) fn byte(&mut self) -> Result<u8, Error> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.err("unexpected end")),
        }
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                self.err(format!(
                    "{n} bytes announced, {} left",
                    self.buf.len() - self.pos
                ))
            })?;
        let buf: &'a [u8] = self.buf;
        self.pos = end;
        Ok(&buf[end - n..end])
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u128, Error> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        // One byte (lengths, counts and small integers): no loop.
        if let Some(&b) = rest.first().filter(|&&b| b < 0x80) {
            self.pos += 1;
            return Ok(b as u128);
        }
        // Up to 9 bytes (63 bits) add up in a u64; longer, truncated or overlong forms take
        // the general loop below, which also reports them.
        let mut v: u64 = 0;
        for (i, &b) in rest.iter().take(9).enumerate() {
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if b == 0 {
                    break;
                }
                self.pos += i + 1;
                return Ok(u128::from(v));
            }
        }
        self.varint_slow()
    }

    #[cold]
    fn varint_slow(&mut self) -> Result<u128, Error> {
        let start = self.pos;
        let mut v: u128 = 0;
        for shift in (0..).step_by(7) {
            let b = self.byte()?;
            if shift >= 128 || (shift == 126 && b > 0x03) {
                return Err(self.err_at(start, "varint overflows 128 bits"));
            }
            v |= ((b & 0x7f) as u128) << shift;
            if b & 0x80 == 0 {
                // One encoding per value: a final 0x00 after other bytes is an overlong form.
                if b == 0 && shift > 0 {
                    return Err(self.err_at(start, "overlong varint"));
                }
                return Ok(v);
            }
        }
        Err(self.err_at(start, "varint overflows 128 bits"))
    }

    /// A count or length, which cannot exceed the bytes left (every element takes at least one).
    #[inline]
    pub(crate) fn count(&mut self) -> Result<usize, Error> {
        // One byte (names, short texts, small counts): no 128-bit arithmetic.
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 && (b as usize) < self.buf.len() - self.pos {
                self.pos += 1;
                return Ok(b as usize);
            }
        }
        self.count_slow()
    }

    #[cold]
    fn count_slow(&mut self) -> Result<usize, Error> {
        let start = self.pos;
        let v = self.varint()?;
        let left = self.buf.len() - self.pos;
        if v > left as u128 {
            return Err(self.err_at(start, format!("count {v} exceeds the {left} bytes left")));
        }
        Ok(v as usize)
    }

    fn map(&mut self, depth: usize) -> Result<Item, Error> {
        if depth > MAX_DEPTH {
            return Err(self.err(format!("nesting deeper than {MAX_DEPTH}")));
        }
        let n = self.count()?;
        // Names arrive sorted (checked below): each insert lands at the end of the map, and no
        // intermediate vector is built (an item is a handful of attributes). A bulk build
        // (`BTreeMap::from_iter` of the sorted pairs) was measured and costs more: +0.6% of a
        // scan's instructions (vector, sort check, `bulk_push`).
        let mut map = BTreeMap::new();
        let mut last: Option<&[u8]> = None;
        for _ in 0..n {
            let at = self.pos;
            let len = self.count()?;
            let raw = self.take(len)?;
            let name = utf8(raw)
                .ok_or(())
                .map_err(|_| self.err_at(at, "attribute name is not UTF-8"))?;
            if last.is_some_and(|l| !strictly_before(l, raw)) {
                return Err(self.err_at(at, format!("attribute {name:?} out of order or repeated")));
            }
            last = Some(raw);
            let a = self.attr(depth + 1)?;
            map.insert(name.to_owned(), a);
        }
        Ok(Item(map))
    }

    fn attr(&mut self, depth: usize) -> Result<Attr, Error> {
        match self.buf.get(self.pos) {
            Some(&T_LIST) => {
                if depth > MAX_DEPTH {
                    return Err(self.err(format!("nesting deeper than {MAX_DEPTH}")));
                }
                self.pos += 1;
                let n = self.count()?;
                let mut l = Vec::with_capacity(n);
                for _ in 0..n {
                    l.push(self.attr(depth + 1)?);
                }
                Ok(Attr::List(l))
            }
            Some(&T_MAP) => {
                self.pos += 1;
                Ok(Attr::Map(self.map(depth)?))
            }
            Some(&T_SET) => {
                let at = self.pos;
                self.pos += 1;
                let n = self.count()?;
                let mut values = Vec::with_capacity(n);
                for _ in 0..n {
                    values.push(self.value(depth + 1)?);
                }
                Set::from_sorted(values)
                    .map(Attr::Set)
                    .map_err(|e| self.err_at(at, format!("set: {e}")))
            }
            // The two commonest scalars, read here rather than through `value` (which they
            // would leave exactly as `value` does, with its errors): no second tag dispatch,
            // and the value is built in place instead of moved out of `value`'s result.
            Some(&T_TEXT) => {
                self.pos += 1;
                Ok(Attr::Value(Value::Text(self.text_body()?.to_owned())))
            }
            Some(&T_INT) => {
                self.pos += 1;
                Ok(Attr::Value(Value::Int(unzigzag(self.varint()?))))
            }
            _ => Ok(Attr::Value(self.value(depth)?)),
        }
    }

    /// The body of a text value (after its tag): the length, then UTF-8 bytes.
    #[inline]
    pub(crate) fn text_body(&mut self) -> Result<&'a str, Error> {
        let n = self.count()?;
        let s = self.pos;
        let raw = self.take(n)?;
        utf8(raw).ok_or_else(|| self.err_at(s, "text is not UTF-8"))
    }

    pub(crate) fn value(&mut self, depth: usize) -> Result<Value, Error> {
        let at = self.pos;
        let tag = self.byte()?;
        Ok(match tag {
            T_NULL => Value::Null,
            T_FALSE => Value::Bool(false),
            T_TRUE => Value::Bool(true),
            T_INT => Value::Int(unzigzag(self.varint()?)),
            T_F32 => {
                let b = self.take(4)?;
                Value::F32(f32::from_bits(u32::from_be_bytes([b[0], b[1], b[2], b[3]])))
            }
            T_F64 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(self.take(8)?);
                Value::Float(f64::from_bits(u64::from_be_bytes(a)))
            }
            T_BYTES => {
                let n = self.count()?;
                Value::Bytes(self.take(n)?.to_vec())
            }
            T_TEXT => Value::Text(self.text_body()?.to_owned()),
            T_UUID => {
                let mut a = [0u8; 16];
                a.copy_from_slice(self.take(16)?);
                Value::Uuid(uuid::Uuid::from_bytes(a))
            }
            T_TIME => {
                let secs = i64::try_from(unzigzag(self.varint()?))
                    .map_err(|_| self.err_at(at, "time seconds out of range"))?;
                let nanos = u32::try_from(self.varint()?)
                    .map_err(|_| self.err_at(at, "time nanoseconds out of range"))?;
                let off = i32::try_from(unzigzag(self.varint()?))
                    .map_err(|_| self.err_at(at, "time offset out of range"))?;
                Value::Time(
                    Time::new(secs, nanos, off).map_err(|e| self.err_at(at, e.to_string()))?,
                )
            }
            T_TUPLE => {
                if depth > MAX_DEPTH {
                    return Err(self.err_at(at, format!("nesting deeper than {MAX_DEPTH}")));
                }
                let n = self.count()?;
                let mut t = Vec::with_capacity(n);
                for _ in 0..n {
                    t.push(self.value(depth + 1)?);
                }
                Value::Tuple(Tuple(t))
            }
            T_DECIMAL => {
                let e = i32::try_from(unzigzag(self.varint()?))
                    .map_err(|_| self.err_at(at, "decimal exponent out of range"))?;
                let raw = self.varint()?;
                let (c, neg) = (raw >> 1, raw & 1 == 1);
                let d = Decimal::from_parts(neg, c, e)
                    .map_err(|err| self.err_at(at, err.to_string()))?;
                if (d.coefficient(), d.exponent(), d.is_negative()) != (c, e, neg) {
                    return Err(self.err_at(at, "decimal not in canonical form"));
                }
                Value::Decimal(d)
            }
            T_LIST | T_MAP | T_SET => {
                return Err(self.err_at(at, "a list, map or set inside a tuple"))
            }
            other => return Err(self.err_at(at, format!("unknown attribute tag {other:#04x}"))),
        })
    }
}

/// A stored item read in place: looks attributes up by name without decoding the others
/// (for filters that need a few values of items they may drop).
#[derive(Clone, Copy)]
pub(crate) struct ItemRef<'a> {
    bytes: &'a [u8],
}

impl<'a> ItemRef<'a> {
    /// A view of stored item bytes (the format byte is checked; the rest as it is read).
    pub(crate) fn new(bytes: &'a [u8]) -> Result<ItemRef<'a>, Error> {
        let r = Reader { buf: bytes, pos: 0 };
        match bytes.first() {
            Some(&ITEM_FORMAT) => Ok(ItemRef { bytes }),
            Some(other) => Err(r.err_at(0, format!("unknown item format version {other:#04x}"))),
            None => Err(r.err("unexpected end")),
        }
    }

    /// The scalar value of attribute `name` (`None` when absent, or not a scalar).
    pub(crate) fn value(&self, name: &str) -> Result<Option<Value>, Error> {
        let mut r = Reader {
            buf: self.bytes,
            pos: 1,
        };
        let n = r.count()?;
        for _ in 0..n {
            let len = r.count()?;
            let raw = r.take(len)?;
            match raw.cmp(name.as_bytes()) {
                std::cmp::Ordering::Less => r.skip_attr(1)?,
                std::cmp::Ordering::Equal => {
                    return match r.buf.get(r.pos) {
                        Some(&(T_LIST | T_MAP | T_SET)) => Ok(None),
                        _ => r.value(1).map(Some),
                    };
                }
                // Names are stored in ascending order.
                std::cmp::Ordering::Greater => return Ok(None),
            }
        }
        Ok(None)
    }
}

impl<'a> ItemRef<'a> {
    /// Attribute `name`: `None` when absent, its scalar value, or the type name of a list, map
    /// or set.
    pub(crate) fn attr(
        &self,
        name: &str,
    ) -> Result<Option<std::result::Result<Value, &'static str>>, Error> {
        let mut r = Reader {
            buf: self.bytes,
            pos: 1,
        };
        let n = r.count()?;
        for _ in 0..n {
            let len = r.count()?;
            let raw = r.take(len)?;
            match raw.cmp(name.as_bytes()) {
                std::cmp::Ordering::Less => r.skip_attr(1)?,
                std::cmp::Ordering::Equal => {
                    return match r.buf.get(r.pos) {
                        Some(&T_LIST) => Ok(Some(Err("list"))),
                        Some(&T_MAP) => Ok(Some(Err("map"))),
                        Some(&T_SET) => Ok(Some(Err("set"))),
                        _ => r.value(1).map(|v| Some(Ok(v))),
                    };
                }
                std::cmp::Ordering::Greater => return Ok(None),
            }
        }
        Ok(None)
    }
}

/// A top-level attribute of a stored item, read at the byte offset of its tag (as the
/// serializer recorded it for a typed put's key attributes).
#[derive(Debug)]
pub(crate) enum KeyAttr<'a> {
    /// A text, borrowed.
    Text(&'a str),
    /// An integer.
    Int(i128),
    /// A byte string, borrowed.
    Bytes(&'a [u8]),
    /// Any other scalar.
    Value(Value),
    /// A list, map or set: its type name.
    Nested(&'static str),
}

/// The attribute whose tag is at `pos` of `bytes` (see [`KeyAttr`]): text, integers and bytes
/// without building a [`Value`], other scalars decoded as [`ItemRef::attr`] decodes them.
///
/// Inlined into the typed put (text and integer keys); the other types are decoded out of
/// line.
#[inline]
pub(crate) fn key_attr_at(bytes: &[u8], pos: usize) -> Result<KeyAttr<'_>, Error> {
    let mut r = Reader { buf: bytes, pos };
    match bytes.get(pos) {
        Some(&T_TEXT) => {
            r.pos += 1;
            let n = r.count()?;
            let at = r.pos;
            let raw = r.take(n)?;
            match utf8(raw) {
                Some(s) => Ok(KeyAttr::Text(s)),
                None => Err(r.err_at(at, "text is not valid UTF-8")),
            }
        }
        Some(&T_INT) => {
            r.pos += 1;
            Ok(KeyAttr::Int(unzigzag(r.varint()?)))
        }
        _ => key_attr_other(bytes, pos),
    }
}

/// [`key_attr_at`] of an attribute other than a text or an integer.
#[inline(never)]
fn key_attr_other(bytes: &[u8], pos: usize) -> Result<KeyAttr<'_>, Error> {
    let mut r = Reader { buf: bytes, pos };
    match bytes.get(pos) {
        Some(&T_BYTES) => {
            r.pos += 1;
            let n = r.count()?;
            Ok(KeyAttr::Bytes(r.take(n)?))
        }
        Some(&T_LIST) => Ok(KeyAttr::Nested("list")),
        Some(&T_MAP) => Ok(KeyAttr::Nested("map")),
        Some(&T_SET) => Ok(KeyAttr::Nested("set")),
        _ => r.value(1).map(KeyAttr::Value),
    }
}

impl Reader<'_> {
    /// Moves past one attribute, checking only that it stays inside the buffer.
    pub(crate) fn skip_attr(&mut self, depth: usize) -> Result<(), Error> {
        if depth > MAX_DEPTH + 1 {
            return Err(self.err(format!("nesting deeper than {MAX_DEPTH}")));
        }
        let at = self.pos;
        match self.byte()? {
            T_NULL | T_FALSE | T_TRUE => {}
            T_INT => {
                self.varint()?;
            }
            T_F32 => {
                self.take(4)?;
            }
            T_F64 => {
                self.take(8)?;
            }
            T_BYTES | T_TEXT => {
                let n = self.count()?;
                self.take(n)?;
            }
            T_UUID => {
                self.take(16)?;
            }
            T_TIME => {
                self.varint()?;
                self.varint()?;
                self.varint()?;
            }
            T_DECIMAL => {
                self.varint()?;
                self.varint()?;
            }
            T_TUPLE | T_LIST | T_SET => {
                let n = self.count()?;
                for _ in 0..n {
                    self.skip_attr(depth + 1)?;
                }
            }
            T_MAP => {
                let n = self.count()?;
                for _ in 0..n {
                    let len = self.count()?;
                    self.take(len)?;
                    self.skip_attr(depth + 1)?;
                }
            }
            other => return Err(self.err_at(at, format!("unknown attribute tag {other:#04x}"))),
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
