//! The `fdb` codec: byte-identical to the FoundationDB tuple layer (`design/tuple.md`, checked
//! against the official Python binding `fdb.tuple` 8.0.0).
//!
//! | code | value | payload |
//! |---|---|---|
//! | `00` | null | none at top level; `00 ff` inside a nested tuple |
//! | `01` | bytes | bytes with `00` → `00 ff`, then `00` |
//! | `02` | text | UTF-8, escaped like bytes |
//! | `05` | nested tuple | elements, then `00` |
//! | `0b` | negative big integer | `len ^ ff`, one's complement of the magnitude |
//! | `0c`–`13` | negative integer of 8…1 bytes | one's complement of the magnitude |
//! | `14` | zero | none |
//! | `15`–`1c` | positive integer of 1…8 bytes | big-endian |
//! | `1d` | positive big integer | `len`, big-endian |
//! | `20` / `21` | f32 / f64 | big-endian bits; negative: all bits flipped, else the sign bit |
//! | `26` / `27` | false / true | none |
//! | `30` | UUID | 16 bytes |
//!
//! Integers cover the whole `i128` range. Like the Python binding, magnitudes of 2^64−1 and
//! more use the big-integer codes; the decoder also accepts the 8-byte form of 2^64−1 that the
//! Java binding and the Rust crate `foundationdb-tuple` write, and non-minimal integer forms
//! (FoundationDB's decoders do). `Time` has no FoundationDB type and is refused. Versionstamps
//! and the reserved codes do not decode. The format is specified in `docs/format/fdb.md`.

use crate::codec::float::{ordered_f32, ordered_f64, unordered_f32, unordered_f64};
use crate::codec::TupleCodec;
use crate::error::{DecodeError, EncodeError};
use crate::value::{Kind, Tuple, Value};

/// Type code of null.
pub const NULL: u8 = 0x00;
/// Type code of a byte string.
pub const BYTES: u8 = 0x01;
/// Type code of a Unicode string.
pub const STRING: u8 = 0x02;
/// Type code of a nested tuple.
pub const NESTED: u8 = 0x05;
/// Type code of a negative integer of more than 8 bytes.
pub const NEG_BIG_INT: u8 = 0x0b;
/// Type code of the integer zero; `INT_ZERO ± n` is an integer of `n` bytes.
pub const INT_ZERO: u8 = 0x14;
/// Type code of a positive integer of more than 8 bytes.
pub const POS_BIG_INT: u8 = 0x1d;
/// Type code of a 32-bit float.
pub const FLOAT: u8 = 0x20;
/// Type code of a 64-bit float.
pub const DOUBLE: u8 = 0x21;
/// Type code of false.
pub const FALSE: u8 = 0x26;
/// Type code of true.
pub const TRUE: u8 = 0x27;
/// Type code of a UUID.
pub const UUID: u8 = 0x30;

/// Escape byte after `00` inside strings and nested tuples.
const ESCAPE: u8 = 0xff;

/// Deepest nesting of tuples accepted (encode and decode): the crate-wide
/// [`MAX_DEPTH`].
pub use crate::value::MAX_DEPTH;

const NAME: &str = "fdb";

/// Magnitudes from this value up use the big-integer codes (as in the Python binding).
const BIG_FROM: u128 = u64::MAX as u128;

/// FoundationDB's order of kinds (its type codes): `Null < Bytes < Text < Tuple < Int < F32 <
/// Float < Bool < Uuid`. `Time` and `Decimal`, which FoundationDB cannot encode, rank last
/// (255).
pub fn kind_rank(v: &Value) -> u8 {
    match v {
        Value::Null => NULL,
        Value::Bytes(_) => BYTES,
        Value::Text(_) => STRING,
        Value::Tuple(_) => NESTED,
        Value::Int(_) => INT_ZERO,
        Value::F32(_) => FLOAT,
        Value::Float(_) => DOUBLE,
        Value::Bool(_) => FALSE,
        Value::Uuid(_) => UUID,
        Value::Time(_) | Value::Decimal(_) => 0xff,
    }
}

/// The FoundationDB tuple-layer codec. Stateless.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FdbCodec;

impl FdbCodec {
    /// A codec.
    pub fn new() -> FdbCodec {
        FdbCodec
    }
}

impl TupleCodec for FdbCodec {
    fn name(&self) -> &'static str {
        NAME
    }

    fn encode_into(&self, tuple: &[Value], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        for (index, v) in tuple.iter().enumerate() {
            encode_value(v, 0, out).map_err(|e| e.at(index))?;
        }
        Ok(())
    }

    fn decode(&self, bytes: &[u8]) -> Result<Tuple, DecodeError> {
        let mut items = Vec::with_capacity((bytes.len() / 4).clamp(1, 16));
        let mut pos = 0;
        while pos < bytes.len() {
            let (v, next) = decode_value(bytes, pos, 0)?;
            items.push(v);
            pos = next;
        }
        Ok(Tuple(items))
    }
}

/// An encode failure before the top-level index is known.
enum Fail {
    Unsupported(Kind),
    Invalid(String),
}

impl Fail {
    fn at(self, index: usize) -> EncodeError {
        match self {
            Fail::Unsupported(kind) => EncodeError::Unsupported {
                codec: NAME,
                index,
                kind,
            },
            Fail::Invalid(reason) => EncodeError::Invalid {
                index,
                reason: reason.into(),
            },
        }
    }
}

fn encode_value(v: &Value, depth: usize, out: &mut Vec<u8>) -> Result<(), Fail> {
    match v {
        Value::Null => {
            out.push(NULL);
            if depth > 0 {
                out.push(ESCAPE);
            }
        }
        Value::Bytes(b) => {
            out.push(BYTES);
            write_escaped(b, out);
        }
        Value::Text(s) => {
            out.push(STRING);
            write_escaped(s.as_bytes(), out);
        }
        Value::Tuple(t) => {
            if depth + 1 > MAX_DEPTH {
                return Err(Fail::Invalid(format!(
                    "tuples nested deeper than {MAX_DEPTH} levels"
                )));
            }
            out.push(NESTED);
            for x in t.iter() {
                encode_value(x, depth + 1, out)?;
            }
            out.push(0x00);
        }
        Value::Int(i) => write_int(*i, out),
        Value::F32(f) => {
            out.push(FLOAT);
            out.extend_from_slice(&ordered_f32(*f).to_be_bytes());
        }
        Value::Float(f) => {
            out.push(DOUBLE);
            out.extend_from_slice(&ordered_f64(*f).to_be_bytes());
        }
        Value::Bool(b) => out.push(if *b { TRUE } else { FALSE }),
        Value::Uuid(u) => {
            out.push(UUID);
            out.extend_from_slice(u.as_bytes());
        }
        Value::Time(_) => return Err(Fail::Unsupported(Kind::Time)),
        Value::Decimal(_) => {
            return Err(Fail::Invalid(
                "the fdb codec cannot encode decimal values: FoundationDB's tuple layer has no \
                 standard decimal (its type codes 0x23/0x24 are reserved, unspecified and not \
                 order-preserving)"
                    .to_owned(),
            ))
        }
    }
    Ok(())
}

#[inline]
fn write_escaped(s: &[u8], out: &mut Vec<u8>) {
    out.reserve(s.len() + 1);
    let mut rest = s;
    while let Some(i) = memchr::memchr(0, rest) {
        out.extend_from_slice(&rest[..=i]);
        out.push(ESCAPE);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out.push(0x00);
}

#[inline]
fn write_int(i: i128, out: &mut Vec<u8>) {
    if i == 0 {
        out.push(INT_ZERO);
        return;
    }
    let m = i.unsigned_abs();
    let n = 16 - m.leading_zeros() as usize / 8;
    let body = if i > 0 { m } else { !m };
    let bytes = body.to_be_bytes();
    let body = &bytes[16 - n..];
    if m < BIG_FROM {
        // n <= 8
        out.push(if i > 0 {
            INT_ZERO + n as u8
        } else {
            INT_ZERO - n as u8
        });
    } else if i > 0 {
        out.extend_from_slice(&[POS_BIG_INT, n as u8]);
    } else {
        out.extend_from_slice(&[NEG_BIG_INT, n as u8 ^ 0xff]);
    }
    out.extend_from_slice(body);
}

fn take<'a>(bytes: &'a [u8], pos: usize, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
    bytes.get(pos..pos + n).ok_or_else(|| {
        DecodeError::new(
            NAME,
            pos,
            format!("{what} needs {n} bytes, {} left", bytes.len() - pos),
        )
    })
}

/// An integer from its big-endian magnitude bytes (leading zeros allowed).
fn int_from(neg: bool, mag: &[u8], start: usize) -> Result<Value, DecodeError> {
    let first = mag.iter().position(|&b| b != 0).unwrap_or(mag.len());
    let mag = &mag[first..];
    if mag.len() > 16 {
        return Err(DecodeError::new(
            NAME,
            start,
            format!("integer of {} bytes is beyond the 128-bit range", mag.len()),
        ));
    }
    let m = mag.iter().fold(0u128, |acc, &b| (acc << 8) | b as u128);
    let v = if neg {
        if m > 1u128 << 127 {
            None
        } else {
            Some(0i128.wrapping_sub(m as i128))
        }
    } else {
        i128::try_from(m).ok()
    };
    v.map(Value::Int)
        .ok_or_else(|| DecodeError::new(NAME, start, "integer is beyond the 128-bit range"))
}

fn decode_value(bytes: &[u8], pos: usize, depth: usize) -> Result<(Value, usize), DecodeError> {
    let start = pos;
    let Some(&code) = bytes.get(pos) else {
        return Err(DecodeError::new(NAME, pos, "missing type code"));
    };
    let pos = pos + 1;
    Ok(match code {
        NULL => {
            if depth > 0 {
                // Inside a nested tuple the caller has seen `00 ff`.
                (Value::Null, pos + 1)
            } else {
                (Value::Null, pos)
            }
        }
        BYTES => {
            let (b, next) = read_escaped(bytes, pos, start)?;
            (Value::Bytes(b), next)
        }
        STRING => {
            let (b, next) = read_escaped(bytes, pos, start)?;
            let s = String::from_utf8(b).map_err(|e| {
                DecodeError::new(
                    NAME,
                    pos + e.utf8_error().valid_up_to(),
                    "string is not valid UTF-8",
                )
            })?;
            (Value::Text(s), next)
        }
        NESTED => {
            if depth + 1 > MAX_DEPTH {
                return Err(DecodeError::new(
                    NAME,
                    start,
                    format!("tuples nested deeper than {MAX_DEPTH} levels"),
                ));
            }
            let mut items = Vec::new();
            let mut p = pos;
            loop {
                match bytes.get(p) {
                    None => {
                        return Err(DecodeError::new(
                            NAME,
                            p,
                            format!("nested tuple starting at byte {start} is not terminated"),
                        ))
                    }
                    Some(0) if bytes.get(p + 1) != Some(&ESCAPE) => {
                        break (Value::Tuple(Tuple(items)), p + 1);
                    }
                    Some(_) => {
                        let (v, next) = decode_value(bytes, p, depth + 1)?;
                        items.push(v);
                        p = next;
                    }
                }
            }
        }
        0x0c..=0x13 => {
            let n = (INT_ZERO - code) as usize;
            let raw = take(bytes, pos, n, "negative integer")?;
            let mut mag = [0u8; 8];
            for (d, s) in mag[8 - n..].iter_mut().zip(raw) {
                *d = !s;
            }
            (int_from(true, &mag, start)?, pos + n)
        }
        INT_ZERO => (Value::Int(0), pos),
        0x15..=0x1c => {
            let n = (code - INT_ZERO) as usize;
            let raw = take(bytes, pos, n, "positive integer")?;
            (int_from(false, raw, start)?, pos + n)
        }
        NEG_BIG_INT | POS_BIG_INT => {
            let neg = code == NEG_BIG_INT;
            let l = *take(bytes, pos, 1, "big integer length")?
                .first()
                .unwrap_or(&0);
            let n = if neg { l ^ 0xff } else { l } as usize;
            let raw = take(bytes, pos + 1, n, "big integer")?;
            let v = if neg {
                let mag: Vec<u8> = raw.iter().map(|b| !b).collect();
                int_from(true, &mag, start)?
            } else {
                int_from(false, raw, start)?
            };
            (v, pos + 1 + n)
        }
        FLOAT => {
            let raw = take(bytes, pos, 4, "float")?;
            let k = u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]);
            (Value::F32(unordered_f32(k)), pos + 4)
        }
        DOUBLE => {
            let raw = take(bytes, pos, 8, "double")?;
            let mut a = [0u8; 8];
            a.copy_from_slice(raw);
            (Value::Float(unordered_f64(u64::from_be_bytes(a))), pos + 8)
        }
        FALSE => (Value::Bool(false), pos),
        TRUE => (Value::Bool(true), pos),
        UUID => {
            let raw = take(bytes, pos, 16, "UUID")?;
            let mut a = [0u8; 16];
            a.copy_from_slice(raw);
            (Value::Uuid(uuid::Uuid::from_bytes(a)), pos + 16)
        }
        other => {
            let what = match other {
                0x03 | 0x04 => "deprecated nested tuple",
                0x0a | 0x1e => "reserved integer code",
                0x22 => "80-bit float (reserved)",
                0x23 | 0x24 => "decimal (reserved)",
                0x25 => "deprecated true",
                0x31 => "64-bit identifier (reserved)",
                0x32 | 0x33 => "versionstamp (not supported)",
                0x40..=0x4f => "user type code (not supported)",
                _ => "unknown type code",
            };
            return Err(DecodeError::new(
                NAME,
                start,
                format!("{what}: 0x{other:02x}"),
            ));
        }
    })
}

/// Reads an escaped string whose payload starts at `pos`; returns it and the position after
/// its `00` terminator.
fn read_escaped(bytes: &[u8], pos: usize, start: usize) -> Result<(Vec<u8>, usize), DecodeError> {
    let mut out = Vec::new();
    let mut p = pos;
    loop {
        let Some(i) = memchr::memchr(0, &bytes[p..]) else {
            return Err(DecodeError::new(
                NAME,
                bytes.len(),
                format!("string starting at byte {start} is not terminated"),
            ));
        };
        out.extend_from_slice(&bytes[p..p + i + 1]);
        p += i + 1;
        if bytes.get(p) == Some(&ESCAPE) {
            p += 1;
        } else {
            out.pop();
            return Ok((out, p));
        }
    }
}
