//! The `skv` codec: K2 / chogori-platform SKV key encoding (`src/k2/dto/FieldTypes.cpp`,
//! `docs/RFC/KEY_ENCODING.md`), driven by a key schema.
//!
//! Every field is `TYPE | PAYLOAD | 00 01`, fields concatenated in schema order:
//!
//! | schema type | type byte | payload (ascending) |
//! |---|---|---|
//! | `string` | `01` | UTF-8 with `00` → `00 ff` |
//! | `int16` / `int32` / `int64` | `02` / `03` / `04` | `03` + big-endian `v` if `v ≥ 0`, else `02` + one's complement of `\|v\|` |
//! | `uint16` / `uint32` / `uint64` | `05` / `06` / `07` | big-endian |
//! | `float` / `double` | `08` / `09` | IEEE bits big-endian; negative: all bits flipped, else the sign bit (ours) |
//! | `bool` | `0a` | `00` or `01` |
//! | `bytes` | `20` | like `string` (ours) |
//! | `uuid` | `21` | 16 bytes (ours) |
//! | `time` | `22` | `secs ^ 2^63` (8 B), `nanos` (4 B), `offset ^ 2^31` (4 B) (ours) |
//! | `int` | `23` | like `int64` with 16 bytes: the whole `i128` range (ours) |
//!
//! NULL is `00 00 01` (nulls first) or `ff 00 01` (`nulls_last`), in either direction.
//! A `desc` field (SKV parses the flag but ignores it) writes the type byte `0x80 | type`
//! and the one's complement of `PAYLOAD | 00 01`; ascending field encodings are prefix-free,
//! so the complement exactly reverses their order. Every field ends in `01` or `fe`: no key
//! ends in `00`. Fields for SKV's own types with ascending order are byte-identical to SKV.
//! The format is specified in `docs/format/skv.md`.

use std::fmt;
use std::str::FromStr;

use crate::codec::float::{ordered_f32, ordered_f64, unordered_f32, unordered_f64};
use crate::codec::TupleCodec;
use crate::error::{DecodeError, EncodeError};
use crate::time::Time;
use crate::value::{Tuple, Value};

const NAME: &str = "skv";

/// Type byte of a NULL that sorts first.
pub const NULL_FIRST: u8 = 0x00;
/// Type byte of a NULL that sorts last.
pub const NULL_LAST: u8 = 0xff;
/// Type-byte flag of a descending field.
pub const DESC_FLAG: u8 = 0x80;

const SIGN_NEG: u8 = 0x02;
const SIGN_POS: u8 = 0x03;

/// The type of a key field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkvType {
    /// UTF-8 text ([`Value::Text`]). SKV `STRING`.
    String,
    /// Signed 16-bit integer ([`Value::Int`]). SKV `INT16T`.
    Int16,
    /// Signed 32-bit integer. SKV `INT32T`.
    Int32,
    /// Signed 64-bit integer. SKV `INT64T`.
    Int64,
    /// Unsigned 16-bit integer. SKV `UINT16T`.
    Uint16,
    /// Unsigned 32-bit integer. SKV `UINT32T`.
    Uint32,
    /// Unsigned 64-bit integer. SKV `UINT64T`.
    Uint64,
    /// 32-bit float ([`Value::F32`]; a [`Value::Float`] that is exactly an f32 is accepted).
    Float,
    /// 64-bit float ([`Value::Float`]; a non-NaN [`Value::F32`] is accepted).
    Double,
    /// Boolean ([`Value::Bool`]). SKV `BOOL`.
    Bool,
    /// Arbitrary bytes ([`Value::Bytes`]). Ours.
    Bytes,
    /// UUID ([`Value::Uuid`]). Ours.
    Uuid,
    /// Instant with UTC offset ([`Value::Time`]). Ours.
    Time,
    /// Signed integer over the whole `i128` range. Ours.
    Int,
}

impl SkvType {
    /// Every type, in schema-name order.
    pub const ALL: [SkvType; 14] = [
        SkvType::String,
        SkvType::Bytes,
        SkvType::Int16,
        SkvType::Int32,
        SkvType::Int64,
        SkvType::Uint16,
        SkvType::Uint32,
        SkvType::Uint64,
        SkvType::Bool,
        SkvType::Float,
        SkvType::Double,
        SkvType::Uuid,
        SkvType::Time,
        SkvType::Int,
    ];

    /// The name used in schemas (`"int32"`).
    pub fn name(self) -> &'static str {
        match self {
            SkvType::String => "string",
            SkvType::Int16 => "int16",
            SkvType::Int32 => "int32",
            SkvType::Int64 => "int64",
            SkvType::Uint16 => "uint16",
            SkvType::Uint32 => "uint32",
            SkvType::Uint64 => "uint64",
            SkvType::Float => "float",
            SkvType::Double => "double",
            SkvType::Bool => "bool",
            SkvType::Bytes => "bytes",
            SkvType::Uuid => "uuid",
            SkvType::Time => "time",
            SkvType::Int => "int",
        }
    }

    /// The type byte of an ascending field (SKV's `FieldType` for its types).
    pub fn code(self) -> u8 {
        match self {
            SkvType::String => 0x01,
            SkvType::Int16 => 0x02,
            SkvType::Int32 => 0x03,
            SkvType::Int64 => 0x04,
            SkvType::Uint16 => 0x05,
            SkvType::Uint32 => 0x06,
            SkvType::Uint64 => 0x07,
            SkvType::Float => 0x08,
            SkvType::Double => 0x09,
            SkvType::Bool => 0x0a,
            SkvType::Bytes => 0x20,
            SkvType::Uuid => 0x21,
            SkvType::Time => 0x22,
            SkvType::Int => 0x23,
        }
    }

    /// Parses a type name (case-insensitive; SKV's `INT32T`-style names are accepted too).
    pub fn from_name(s: &str) -> Option<SkvType> {
        let l = s.to_ascii_lowercase();
        let l = l
            .strip_suffix('t')
            .filter(|x| x.starts_with("int") || x.starts_with("uint"))
            .unwrap_or(&l);
        SkvType::ALL.into_iter().find(|t| t.name() == l)
    }
}

impl fmt::Display for SkvType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One key field: its type and its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SkvField {
    /// The field type.
    pub ty: SkvType,
    /// Values sort descending.
    pub descending: bool,
    /// NULL sorts after every value (else before), in either direction.
    pub nulls_last: bool,
}

impl SkvField {
    /// An ascending, nulls-first field.
    pub fn new(ty: SkvType) -> SkvField {
        SkvField {
            ty,
            descending: false,
            nulls_last: false,
        }
    }
}

impl fmt::Display for SkvField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.ty.name())?;
        if self.descending {
            f.write_str(":desc")?;
        }
        if self.nulls_last {
            f.write_str(":nulls_last")?;
        }
        Ok(())
    }
}

/// A schema that cannot be parsed: which field (0-based) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema has no fields.
    #[error("the schema has no fields")]
    Empty,
    /// A field spec is wrong.
    #[error("schema field {index} ({spec:?}): {reason}")]
    Field {
        /// 0-based field position.
        index: usize,
        /// The field's text.
        spec: String,
        /// What is wrong.
        reason: String,
    },
}

/// An SKV key schema: the fields of a key, in order.
///
/// Parsed from `type[:modifier]...` specs joined by commas, e.g.
/// `"string,int32:desc,int64:nulls_last"`. Modifiers: `desc`, `nulls_last` (also `asc`,
/// `nulls_first`).
///
/// ```
/// use strata_key::codec::skv::{SkvSchema, SkvType};
/// let s = SkvSchema::parse("string, int32:desc:nulls_last").unwrap();
/// assert_eq!(s.fields()[1].ty, SkvType::Int32);
/// assert!(s.fields()[1].descending && s.fields()[1].nulls_last);
/// assert_eq!(s.to_string(), "string,int32:desc:nulls_last");
/// assert!(SkvSchema::parse("string,int33").unwrap_err().to_string().contains("field 1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SkvSchema {
    fields: Vec<SkvField>,
}

impl SkvSchema {
    /// A schema of these fields.
    pub fn new(fields: Vec<SkvField>) -> SkvSchema {
        SkvSchema { fields }
    }

    /// Parses `type[:modifier]...,...` (see the type docs).
    pub fn parse(s: &str) -> Result<SkvSchema, SchemaError> {
        if s.trim().is_empty() {
            return Err(SchemaError::Empty);
        }
        let mut fields = Vec::new();
        for (index, spec) in s.split(',').enumerate() {
            let fail = |reason: String| SchemaError::Field {
                index,
                spec: spec.trim().to_owned(),
                reason,
            };
            let mut parts = spec.split(':').map(str::trim);
            let ty_name = parts.next().unwrap_or("");
            if ty_name.is_empty() {
                return Err(fail("missing type".into()));
            }
            let ty = SkvType::from_name(ty_name).ok_or_else(|| {
                let names: Vec<&str> = SkvType::ALL.iter().map(|t| t.name()).collect();
                fail(format!(
                    "unknown type {ty_name:?} (expected one of {})",
                    names.join(", ")
                ))
            })?;
            let mut field = SkvField::new(ty);
            let (mut dir, mut nulls) = (false, false);
            for m in parts {
                match m.to_ascii_lowercase().as_str() {
                    "desc" | "asc" if dir => {
                        return Err(fail("direction given twice".into()));
                    }
                    "desc" => (field.descending, dir) = (true, true),
                    "asc" => dir = true,
                    "nulls_last" | "nulls_first" if nulls => {
                        return Err(fail("null order given twice".into()));
                    }
                    "nulls_last" => (field.nulls_last, nulls) = (true, true),
                    "nulls_first" => nulls = true,
                    "" => return Err(fail("empty modifier".into())),
                    _ => {
                        return Err(fail(format!(
                            "unknown modifier {m:?} (expected desc, asc, nulls_last or nulls_first)"
                        )))
                    }
                }
            }
            fields.push(field);
        }
        Ok(SkvSchema { fields })
    }

    /// The fields.
    pub fn fields(&self) -> &[SkvField] {
        &self.fields
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// True when the schema has no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

impl FromStr for SkvSchema {
    type Err = SchemaError;
    fn from_str(s: &str) -> Result<SkvSchema, SchemaError> {
        SkvSchema::parse(s)
    }
}

impl fmt::Display for SkvSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, field) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{field}")?;
        }
        Ok(())
    }
}

/// The SKV codec for one schema. A tuple may be shorter than the schema (a key prefix, for
/// range scans); it may not be longer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkvCodec {
    schema: SkvSchema,
}

impl SkvCodec {
    /// A codec for `schema`.
    pub fn new(schema: SkvSchema) -> SkvCodec {
        SkvCodec { schema }
    }

    /// The schema.
    pub fn schema(&self) -> &SkvSchema {
        &self.schema
    }
}

impl TupleCodec for SkvCodec {
    fn name(&self) -> &'static str {
        NAME
    }

    fn encode_into(&self, tuple: &[Value], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if tuple.len() > self.schema.len() {
            return Err(EncodeError::Invalid {
                index: self.schema.len(),
                reason: format!(
                    "field {}: the schema has only {} fields (the tuple has {} elements)",
                    self.schema.len(),
                    self.schema.len(),
                    tuple.len()
                )
                .into(),
            });
        }
        for (index, (v, field)) in tuple.iter().zip(&self.schema.fields).enumerate() {
            encode_field(v, field, out).map_err(|r| EncodeError::Invalid {
                index,
                reason: format!("field {index} ({field}): {r}").into(),
            })?;
        }
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Tuple, DecodeError> {
        let mut items = Vec::with_capacity(self.schema.len());
        let mut pos = 0;
        let mut fields = self.schema.fields.iter().enumerate();
        while pos < bytes.len() {
            let Some((index, field)) = fields.next() else {
                return Err(DecodeError::new(
                    NAME,
                    pos,
                    format!("bytes left after the schema's {} fields", self.schema.len()),
                ));
            };
            let (v, next) = decode_field(bytes, pos, index, field)?;
            items.push(v);
            pos = next;
        }
        Ok(Tuple(items))
    }
}

fn out_of_range(v: i128, ty: SkvType) -> String {
    format!("{v} is out of the {ty} range")
}

/// Appends `PAYLOAD | 00 01` complemented or not.
struct Sink<'a> {
    out: &'a mut Vec<u8>,
    mask: u8,
}

impl Sink<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        if self.mask == 0 {
            self.out.extend_from_slice(bytes);
        } else {
            self.out.extend(bytes.iter().map(|b| b ^ self.mask));
        }
    }

    #[inline]
    fn escaped(&mut self, s: &[u8]) {
        self.out.reserve(s.len() + 2);
        let mut rest = s;
        while let Some(i) = memchr::memchr(0, rest) {
            self.put(&rest[..=i]);
            self.put(&[0xff]);
            rest = &rest[i + 1..];
        }
        self.put(rest);
    }
}

/// Signed payload: sign byte, then `width` bytes of `v` or of the one's complement of `|v|`.
fn put_signed(sink: &mut Sink<'_>, v: i128, width: usize) {
    let m = v.unsigned_abs();
    let (sign, body) = if v >= 0 {
        (SIGN_POS, m)
    } else {
        (SIGN_NEG, !m)
    };
    sink.put(&[sign]);
    sink.put(&body.to_be_bytes()[16 - width..]);
}

fn encode_field(v: &Value, field: &SkvField, out: &mut Vec<u8>) -> Result<(), String> {
    if v.is_null() {
        out.extend_from_slice(&[
            if field.nulls_last {
                NULL_LAST
            } else {
                NULL_FIRST
            },
            0x00,
            0x01,
        ]);
        return Ok(());
    }
    let ty = field.ty;
    let mask = if field.descending { 0xff } else { 0x00 };
    let code = ty.code() | if field.descending { DESC_FLAG } else { 0 };
    let mark = out.len();
    out.push(code);
    let mut sink = Sink { out, mask };
    let wrong = || format!("expected a {ty} value, got {}", v.kind());
    let res = match (ty, v) {
        (SkvType::String, Value::Text(s)) => {
            sink.escaped(s.as_bytes());
            Ok(())
        }
        (SkvType::Bytes, Value::Bytes(b)) => {
            sink.escaped(b);
            Ok(())
        }
        (SkvType::Int16 | SkvType::Int32 | SkvType::Int64 | SkvType::Int, Value::Int(i)) => {
            let (width, lo, hi) = match ty {
                SkvType::Int16 => (2, i16::MIN as i128, i16::MAX as i128),
                SkvType::Int32 => (4, i32::MIN as i128, i32::MAX as i128),
                SkvType::Int64 => (8, i64::MIN as i128, i64::MAX as i128),
                _ => (16, i128::MIN, i128::MAX),
            };
            if (lo..=hi).contains(i) {
                put_signed(&mut sink, *i, width);
                Ok(())
            } else {
                Err(out_of_range(*i, ty))
            }
        }
        (SkvType::Uint16 | SkvType::Uint32 | SkvType::Uint64, Value::Int(i)) => {
            let width = match ty {
                SkvType::Uint16 => 2,
                SkvType::Uint32 => 4,
                _ => 8,
            };
            if *i >= 0 && (*i as u128) >> (8 * width) == 0 {
                sink.put(&(*i as u128).to_be_bytes()[16 - width..]);
                Ok(())
            } else {
                Err(out_of_range(*i, ty))
            }
        }
        (SkvType::Bool, Value::Bool(b)) => {
            sink.put(&[u8::from(*b)]);
            Ok(())
        }
        (SkvType::Float, Value::F32(f)) => {
            sink.put(&ordered_f32(*f).to_be_bytes());
            Ok(())
        }
        (SkvType::Float, Value::Float(f)) => {
            let g = *f as f32;
            if (g as f64).to_bits() == f.to_bits() {
                sink.put(&ordered_f32(g).to_be_bytes());
                Ok(())
            } else {
                Err(format!(
                    "{f:?} is not exactly representable as a float (f32)"
                ))
            }
        }
        (SkvType::Double, Value::Float(f)) => {
            sink.put(&ordered_f64(*f).to_be_bytes());
            Ok(())
        }
        (SkvType::Double, Value::F32(f)) if !f.is_nan() => {
            sink.put(&ordered_f64(*f as f64).to_be_bytes());
            Ok(())
        }
        (SkvType::Uuid, Value::Uuid(u)) => {
            sink.put(u.as_bytes());
            Ok(())
        }
        (SkvType::Time, Value::Time(t)) => {
            let mut p = [0u8; 16];
            p[..8].copy_from_slice(&((t.secs() as u64) ^ (1 << 63)).to_be_bytes());
            p[8..12].copy_from_slice(&t.nanos().to_be_bytes());
            p[12..].copy_from_slice(&((t.offset_s() as u32) ^ (1 << 31)).to_be_bytes());
            sink.put(&p);
            Ok(())
        }
        (_, Value::Decimal(_)) => Err(format!(
            "expected a {ty} value, got decimal: the skv codec has no decimal type"
        )),
        _ => Err(wrong()),
    };
    match res {
        Ok(()) => {
            sink.put(&[0x00, 0x01]);
            Ok(())
        }
        Err(e) => {
            out.truncate(mark);
            Err(e)
        }
    }
}

/// Reads a field at `pos`; returns the value and the position after its terminator.
fn decode_field(
    bytes: &[u8],
    pos: usize,
    index: usize,
    field: &SkvField,
) -> Result<(Value, usize), DecodeError> {
    let ty = field.ty;
    let err = |at: usize, why: String| {
        DecodeError::new(NAME, at, format!("field {index} ({field}): {why}"))
    };
    let code = bytes[pos];
    let terminator = |p: usize, mask: u8| -> Result<usize, DecodeError> {
        match bytes.get(p..p + 2) {
            Some([a, b]) if *a == mask && *b == 0x01 ^ mask => Ok(p + 2),
            Some(_) => Err(err(p, "expected the field terminator".into())),
            None => Err(err(p, "truncated: missing the field terminator".into())),
        }
    };
    if code == NULL_FIRST || code == NULL_LAST {
        if (code == NULL_LAST) != field.nulls_last {
            return Err(err(
                pos,
                format!(
                    "NULL marker 0x{code:02x} does not match the field's null order ({})",
                    if field.nulls_last { "last" } else { "first" }
                ),
            ));
        }
        return Ok((Value::Null, terminator(pos + 1, 0)?));
    }
    let mask = if field.descending { 0xff } else { 0x00 };
    let want = ty.code() | if field.descending { DESC_FLAG } else { 0 };
    if code != want {
        return Err(err(
            pos,
            format!("type byte 0x{code:02x}, expected 0x{want:02x}"),
        ));
    }
    let p = pos + 1;
    // A fixed-width payload (at most 17 bytes), un-complemented, on the stack.
    let fixed = |n: usize| -> Result<[u8; 17], DecodeError> {
        let raw = bytes.get(p..p + n).ok_or_else(|| {
            err(
                p,
                format!(
                    "truncated: needs {n} payload bytes, {} left",
                    bytes.len() - p
                ),
            )
        })?;
        let mut a = [0u8; 17];
        for (d, s) in a.iter_mut().zip(raw) {
            *d = s ^ mask;
        }
        Ok(a)
    };
    let (v, end) = match ty {
        SkvType::String | SkvType::Bytes => {
            let (raw, end) = read_escaped(bytes, p, mask).map_err(|(at, why)| err(at, why))?;
            let v = if ty == SkvType::String {
                Value::Text(String::from_utf8(raw).map_err(|e| {
                    err(
                        p,
                        format!(
                            "string is not valid UTF-8 (at its byte {})",
                            e.utf8_error().valid_up_to()
                        ),
                    )
                })?)
            } else {
                Value::Bytes(raw)
            };
            (v, end)
        }
        SkvType::Int16 | SkvType::Int32 | SkvType::Int64 | SkvType::Int => {
            let width = match ty {
                SkvType::Int16 => 2,
                SkvType::Int32 => 4,
                SkvType::Int64 => 8,
                _ => 16,
            };
            let raw = fixed(1 + width)?;
            let body = raw[1..=width]
                .iter()
                .fold(0u128, |a, &b| (a << 8) | b as u128);
            let top = 1u128 << (8 * width - 1);
            let v = match raw[0] {
                SIGN_POS if body < top => body as i128,
                SIGN_NEG => {
                    let all = if width == 16 {
                        u128::MAX
                    } else {
                        (1u128 << (8 * width)) - 1
                    };
                    let m = all - body;
                    if m == 0 || m > top {
                        return Err(err(p, format!("negative payload out of the {ty} range")));
                    }
                    0i128.wrapping_sub(m as i128)
                }
                SIGN_POS => return Err(err(p, format!("positive payload out of the {ty} range"))),
                s => return Err(err(p, format!("sign byte 0x{s:02x}, expected 02 or 03"))),
            };
            (Value::Int(v), p + 1 + width)
        }
        SkvType::Uint16 | SkvType::Uint32 | SkvType::Uint64 => {
            let width = match ty {
                SkvType::Uint16 => 2,
                SkvType::Uint32 => 4,
                _ => 8,
            };
            let raw = fixed(width)?;
            let v = raw[..width]
                .iter()
                .fold(0u128, |a, &b| (a << 8) | b as u128);
            (Value::Int(v as i128), p + width)
        }
        SkvType::Bool => match fixed(1)?[0] {
            0 => (Value::Bool(false), p + 1),
            1 => (Value::Bool(true), p + 1),
            b => return Err(err(p, format!("boolean must be 0 or 1, found 0x{b:02x}"))),
        },
        SkvType::Float => {
            let raw = fixed(4)?;
            let k = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]);
            (Value::F32(unordered_f32(k)), p + 4)
        }
        SkvType::Double => {
            let raw = fixed(8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(&raw[..8]);
            let k = u64::from_be_bytes(a);
            (Value::Float(unordered_f64(k)), p + 8)
        }
        SkvType::Uuid => {
            let raw = fixed(16)?;
            let mut a = [0u8; 16];
            a.copy_from_slice(&raw[..16]);
            (Value::Uuid(uuid::Uuid::from_bytes(a)), p + 16)
        }
        SkvType::Time => {
            let raw = fixed(16)?;
            let mut s = [0u8; 8];
            s.copy_from_slice(&raw[..8]);
            let secs = (u64::from_be_bytes(s) ^ (1 << 63)) as i64;
            let nanos = u32::from_be_bytes([raw[8], raw[9], raw[10], raw[11]]);
            let off = (u32::from_be_bytes([raw[12], raw[13], raw[14], raw[15]]) ^ (1 << 31)) as i32;
            let t = Time::new(secs, nanos, off).map_err(|e| err(p, format!("bad time: {e}")))?;
            (Value::Time(t), p + 16)
        }
    };
    let end = match ty {
        // read_escaped consumed the terminator.
        SkvType::String | SkvType::Bytes => end,
        _ => terminator(end, mask)?,
    };
    Ok((v, end))
}

/// Reads an escaped string payload at `p` (bytes XOR `mask`), through its terminator.
fn read_escaped(bytes: &[u8], mut p: usize, mask: u8) -> Result<(Vec<u8>, usize), (usize, String)> {
    let mut out = Vec::new();
    // The escape lead byte as stored: 00 ascending, ff descending.
    let lead = mask;
    loop {
        let rest = &bytes[p..];
        let Some(i) = memchr::memchr(lead, rest) else {
            return Err((
                bytes.len(),
                "truncated: missing the field terminator".into(),
            ));
        };
        if mask == 0 {
            out.extend_from_slice(&rest[..i]);
        } else {
            out.extend(rest[..i].iter().map(|b| !b));
        }
        p += i;
        match bytes.get(p + 1).map(|b| b ^ mask) {
            Some(0xff) => {
                out.push(0x00);
                p += 2;
            }
            Some(0x01) => return Ok((out, p + 2)),
            Some(b) => {
                return Err((
                    p + 1,
                    format!("byte 0x{:02x} after the escape byte (expected an escaped NUL or the terminator)", b ^ mask),
                ))
            }
            None => return Err((p, "truncated: missing the field terminator".into())),
        }
    }
}
