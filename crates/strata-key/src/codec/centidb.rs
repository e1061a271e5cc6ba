//! The `centidb` codec: byte-identical to the key encoder of centidb / acid `keylib`
//! (github dw/acid @3aabb39, `acid/keylib.py` and `ext/keylib.c`).
//!
//! Each element is a kind byte (all below 0x80) and a payload:
//!
//! | kind | byte | payload |
//! |---|---|---|
//! | NULL | `0f` | none |
//! | NEG_INTEGER | `14` | SQLite4 varint of `-v`, every byte XOR `ff` |
//! | INTEGER | `15` | SQLite4 varint of `v` |
//! | BOOL | `1e` | varint 0 or 1 |
//! | BLOB | `28` | 7-bit packing, ends at the next byte below 0x80 or the end |
//! | TEXT | `32` | 7-bit packing of the UTF-8 bytes |
//! | UUID | `5a` | 16 raw bytes |
//! | NEG_TIME | `5b` | varint of `-(ms << 7 \| (offset/15min + 64))`, XOR `ff` |
//! | TIME | `5c` | varint of `ms << 7 \| (offset/15min + 64)` |
//! | SEP | `66` | starts the next tuple of a multi-tuple key ([`CentidbCodec::encode_list`]) |
//!
//! The encoder refuses (with an [`EncodeError`]) what centidb cannot represent exactly: floats,
//! nested tuples, integers beyond ±(2^64−1), times with sub-millisecond parts, and UTC offsets
//! that are not whole quarter hours within −16:00…+15:45. The decoder is strict (it accepts
//! exactly the encoder's output, so `encode(decode(b)) == b`) and fixes the three bugs of the
//! original decoders: negatives below −67823, a UUID in last position, pre-1970 times.
//! The format is specified in `docs/format/centidb.md`.

use crate::codec::TupleCodec;
use crate::error::{DecodeError, EncodeError};
use crate::time::Time;
use crate::value::{Tuple, Value};

/// Kind byte of NULL.
pub const KIND_NULL: u8 = 0x0f;
/// Kind byte of a negative integer.
pub const KIND_NEG_INTEGER: u8 = 0x14;
/// Kind byte of a non-negative integer.
pub const KIND_INTEGER: u8 = 0x15;
/// Kind byte of a boolean.
pub const KIND_BOOL: u8 = 0x1e;
/// Kind byte of a byte string.
pub const KIND_BLOB: u8 = 0x28;
/// Kind byte of a text string.
pub const KIND_TEXT: u8 = 0x32;
/// Kind byte of a UUID.
pub const KIND_UUID: u8 = 0x5a;
/// Kind byte of a time before 1970.
pub const KIND_NEG_TIME: u8 = 0x5b;
/// Kind byte of a time at or after 1970.
pub const KIND_TIME: u8 = 0x5c;
/// Separator between the tuples of a multi-tuple key.
pub const KIND_SEP: u8 = 0x66;

const NAME: &str = "centidb";

/// The UTC offset is stored in quarter hours, shifted by 64, in the low 7 bits of the time.
const OFFSET_UNIT_S: i32 = 15 * 60;
const OFFSET_SHIFT: i32 = 64;

/// centidb's order of kinds (its kind bytes): `Null < Int < Bool < Bytes < Text < Uuid < Time`.
/// Kinds centidb cannot encode rank last (255).
pub fn kind_rank(v: &Value) -> u8 {
    match v {
        Value::Null => KIND_NULL,
        Value::Int(_) => KIND_INTEGER,
        Value::Bool(_) => KIND_BOOL,
        Value::Bytes(_) => KIND_BLOB,
        Value::Text(_) => KIND_TEXT,
        Value::Uuid(_) => KIND_UUID,
        Value::Time(_) => KIND_TIME,
        Value::F32(_) | Value::Float(_) | Value::Tuple(_) | Value::Decimal(_) => 0xff,
    }
}

/// The centidb / acid keylib codec. Stateless.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CentidbCodec;

impl CentidbCodec {
    /// A codec.
    pub fn new() -> CentidbCodec {
        CentidbCodec
    }

    /// Encodes a multi-tuple key: the tuples joined by SEP (`0x66`), as centidb's
    /// `packs(list)` does. The list must not be empty (centidb would write the empty string,
    /// which decodes as one empty tuple).
    pub fn encode_list(&self, tuples: &[Tuple]) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(16 * tuples.len().max(1));
        self.encode_list_into(tuples, &mut out)?;
        Ok(out)
    }

    /// [`encode_list`](Self::encode_list) into a caller's buffer (appends).
    pub fn encode_list_into(&self, tuples: &[Tuple], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if tuples.is_empty() {
            return Err(EncodeError::Invalid {
                index: 0,
                reason: "a centidb key list holds at least one tuple".into(),
            });
        }
        for (t, tuple) in tuples.iter().enumerate() {
            if t > 0 {
                out.push(KIND_SEP);
            }
            encode_tuple(tuple, out).map_err(|e| in_tuple(e, t))?;
        }
        Ok(())
    }

    /// Decodes a multi-tuple key (tuples separated by SEP). A key without SEP gives one tuple;
    /// the empty key gives one empty tuple, as in centidb.
    pub fn decode_list(&self, bytes: &[u8]) -> Result<Vec<Tuple>, DecodeError> {
        let mut tuples = Vec::new();
        let mut pos = 0;
        loop {
            let (tuple, end) = decode_tuple(bytes, pos)?;
            tuples.push(tuple);
            if end == bytes.len() {
                return Ok(tuples);
            }
            // decode_tuple stops only at the end or at a SEP.
            pos = end + 1;
        }
    }
}

impl TupleCodec for CentidbCodec {
    fn name(&self) -> &'static str {
        NAME
    }

    fn encode_into(&self, tuple: &[Value], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        encode_tuple(tuple, out)
    }

    fn decode(&self, bytes: &[u8]) -> Result<Tuple, DecodeError> {
        let (tuple, end) = decode_tuple(bytes, 0)?;
        if end != bytes.len() {
            return Err(DecodeError::new(
                NAME,
                end,
                "the key holds several tuples (SEP 0x66): use CentidbCodec::decode_list",
            ));
        }
        Ok(tuple)
    }
}

fn in_tuple(e: EncodeError, t: usize) -> EncodeError {
    match e {
        EncodeError::Unsupported { index, kind, .. } => EncodeError::Invalid {
            index,
            reason: format!("tuple {t}: the centidb codec cannot encode {kind} values").into(),
        },
        EncodeError::Invalid { index, reason } => EncodeError::Invalid {
            index,
            reason: format!("tuple {t}: {reason}").into(),
        },
    }
}

fn encode_tuple(tuple: &[Value], out: &mut Vec<u8>) -> Result<(), EncodeError> {
    for (index, v) in tuple.iter().enumerate() {
        encode_value(v, index, out)?;
    }
    Ok(())
}

fn invalid(index: usize, reason: String) -> EncodeError {
    EncodeError::Invalid {
        index,
        reason: reason.into(),
    }
}

fn encode_value(v: &Value, index: usize, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    match v {
        Value::Null => out.push(KIND_NULL),
        Value::Int(i) => {
            let m = u64::try_from(i.unsigned_abs()).map_err(|_| {
                invalid(
                    index,
                    format!("integer {i} is beyond centidb's range ±(2^64−1)"),
                )
            })?;
            if *i < 0 {
                out.push(KIND_NEG_INTEGER);
                write_varint(m, 0xff, out);
            } else {
                out.push(KIND_INTEGER);
                write_varint(m, 0, out);
            }
        }
        Value::Bool(b) => {
            out.push(KIND_BOOL);
            out.push(u8::from(*b));
        }
        Value::Bytes(b) => {
            out.push(KIND_BLOB);
            write_packed(b, out);
        }
        Value::Text(s) => {
            out.push(KIND_TEXT);
            write_packed(s.as_bytes(), out);
        }
        Value::Uuid(u) => {
            out.push(KIND_UUID);
            out.extend_from_slice(u.as_bytes());
        }
        Value::Time(t) => {
            let x = time_word(t).map_err(|r| invalid(index, r))?;
            if x < 0 {
                out.push(KIND_NEG_TIME);
                write_varint(x.unsigned_abs() as u64, 0xff, out);
            } else {
                out.push(KIND_TIME);
                write_varint(x as u64, 0, out);
            }
        }
        Value::F32(_) | Value::Float(_) | Value::Tuple(_) | Value::Decimal(_) => {
            return Err(EncodeError::Unsupported {
                codec: NAME,
                index,
                kind: v.kind(),
            })
        }
    }
    Ok(())
}

/// `ms << 7 | (offset / 15 min + 64)` as a signed number, or why the time cannot be kept
/// exactly.
fn time_word(t: &Time) -> Result<i128, String> {
    let ms = t.unix_ms_exact().ok_or_else(|| {
        format!("time {t} has a sub-millisecond part; centidb keeps milliseconds")
    })?;
    let off = t.offset_s();
    if off % OFFSET_UNIT_S != 0 {
        return Err(format!(
            "time {t}: UTC offset {off} s is not a whole number of quarter hours"
        ));
    }
    let q = off / OFFSET_UNIT_S + OFFSET_SHIFT;
    if !(0..=127).contains(&q) {
        return Err(format!(
            "time {t}: UTC offset {off} s is outside centidb's −16:00…+15:45"
        ));
    }
    let x = (ms as i128) * 128 + q as i128;
    if x.unsigned_abs() > u64::MAX as u128 {
        return Err(format!("time {t} is beyond centidb's range"));
    }
    Ok(x)
}

/// SQLite4 varint, every byte XORed with `xor`.
#[inline]
fn write_varint(v: u64, xor: u8, out: &mut Vec<u8>) {
    if v <= 240 {
        out.push(v as u8 ^ xor);
    } else if v <= 2287 {
        let w = v - 240;
        out.extend_from_slice(&[(241 + (w >> 8)) as u8 ^ xor, (w & 0xff) as u8 ^ xor]);
    } else if v <= 67823 {
        let w = v - 2288;
        out.extend_from_slice(&[0xf9 ^ xor, (w >> 8) as u8 ^ xor, (w & 0xff) as u8 ^ xor]);
    } else {
        // 3..8 raw big-endian bytes behind 0xfa..0xff.
        let n = (8 - v.leading_zeros() as usize / 8).max(3);
        out.push((0xfa + (n - 3)) as u8 ^ xor);
        for &b in &v.to_be_bytes()[8 - n..] {
            out.push(b ^ xor);
        }
    }
}

/// Reads a varint at `pos` (the first payload byte); returns the value and the next position.
/// Only the shortest form of each value is accepted.
fn read_varint(bytes: &[u8], pos: usize, xor: u8) -> Result<(u64, usize), DecodeError> {
    let Some(&b0) = bytes.get(pos) else {
        return Err(DecodeError::new(NAME, pos, "missing varint"));
    };
    let a0 = b0 ^ xor;
    let short = |need: usize| {
        DecodeError::new(
            NAME,
            pos,
            format!(
                "truncated varint: needs {need} bytes, {} left",
                bytes.len() - pos
            ),
        )
    };
    match a0 {
        0..=240 => Ok((a0 as u64, pos + 1)),
        241..=248 => {
            let a1 = *bytes.get(pos + 1).ok_or_else(|| short(2))? ^ xor;
            let v = 240 + 256 * (a0 as u64 - 241) + a1 as u64;
            if v <= 240 {
                return Err(DecodeError::new(NAME, pos, "non-canonical varint"));
            }
            Ok((v, pos + 2))
        }
        249 => {
            let p = bytes.get(pos + 1..pos + 3).ok_or_else(|| short(3))?;
            let v = 2288 + 256 * (p[0] ^ xor) as u64 + (p[1] ^ xor) as u64;
            Ok((v, pos + 3))
        }
        _ => {
            let n = (a0 - 250) as usize + 3;
            let p = bytes
                .get(pos + 1..pos + 1 + n)
                .ok_or_else(|| short(n + 1))?;
            let v = p.iter().fold(0u64, |acc, &b| (acc << 8) | (b ^ xor) as u64);
            // The shortest form: above the previous class's maximum.
            let floor = if n == 3 {
                67823
            } else {
                (1u64 << (8 * (n - 1))) - 1
            };
            if v <= floor {
                return Err(DecodeError::new(NAME, pos, "non-canonical varint"));
            }
            Ok((v, pos + 1 + n))
        }
    }
}

/// centidb's string packing: the bytes as a bit stream, 7 bits per output byte with the high
/// bit set; a last partial group is left-aligned with zero padding. No terminator.
#[inline]
fn write_packed(s: &[u8], out: &mut Vec<u8>) {
    out.reserve((s.len() * 8).div_ceil(7));
    let mut chunks = s.chunks_exact(7);
    for c in &mut chunks {
        // 7 input bytes = 56 bits = exactly 8 output bytes.
        let mut w = [0u8; 8];
        w[1..].copy_from_slice(c);
        let bits = u64::from_be_bytes(w);
        let mut o = [0u8; 8];
        for (k, b) in o.iter_mut().enumerate() {
            *b = 0x80 | ((bits >> (49 - 7 * k)) & 0x7f) as u8;
        }
        out.extend_from_slice(&o);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut acc: u32 = 0;
        let mut nbits = 0u32;
        for &b in rest {
            acc = (acc << 8) | b as u32;
            nbits += 8;
            while nbits >= 7 {
                nbits -= 7;
                out.push(0x80 | ((acc >> nbits) & 0x7f) as u8);
            }
            acc &= (1 << nbits) - 1;
        }
        if nbits > 0 {
            out.push(0x80 | ((acc << (7 - nbits)) & 0x7f) as u8);
        }
    }
}

/// Reads a packed string starting at `pos`: it runs to the first byte below 0x80 or the end.
/// Returns the bytes and the next position. Rejects a length no string packs to, and
/// non-zero padding bits.
fn read_packed(bytes: &[u8], pos: usize) -> Result<(Vec<u8>, usize), DecodeError> {
    let tail = &bytes[pos..];
    let k = tail.iter().position(|&b| b < 0x80).unwrap_or(tail.len());
    let packed = &tail[..k];
    let n = 7 * k / 8;
    let pad = 7 * k - 8 * n;
    if pad >= 7 {
        return Err(DecodeError::new(
            NAME,
            pos,
            format!("string of {k} packed bytes: no byte string packs to that length"),
        ));
    }
    let mut out = Vec::with_capacity(n);
    let mut groups = packed.chunks_exact(8);
    for g in &mut groups {
        let bits = g
            .iter()
            .fold(0u64, |acc, &b| (acc << 7) | (b & 0x7f) as u64);
        out.extend_from_slice(&bits.to_be_bytes()[1..]);
    }
    let mut acc: u32 = 0;
    let mut nbits = 0u32;
    for &b in groups.remainder() {
        acc = (acc << 7) | (b & 0x7f) as u32;
        nbits += 7;
        if nbits >= 8 {
            nbits -= 8;
            out.push((acc >> nbits) as u8);
            acc &= (1 << nbits) - 1;
        }
    }
    if acc != 0 {
        return Err(DecodeError::new(
            NAME,
            pos + k - 1,
            "non-zero padding bits at the end of a packed string",
        ));
    }
    Ok((out, pos + k))
}

/// Decodes one tuple from `pos`; stops at the end or at a SEP byte (whose position it
/// returns).
fn decode_tuple(bytes: &[u8], mut pos: usize) -> Result<(Tuple, usize), DecodeError> {
    let mut items = Vec::with_capacity(((bytes.len() - pos) / 4).clamp(1, 16));
    while let Some(&kind) = bytes.get(pos) {
        let start = pos;
        pos += 1;
        let v = match kind {
            KIND_SEP => return Ok((Tuple(items), start)),
            KIND_NULL => Value::Null,
            KIND_INTEGER => {
                let (m, next) = read_varint(bytes, pos, 0)?;
                pos = next;
                Value::Int(m as i128)
            }
            KIND_NEG_INTEGER => {
                let (m, next) = read_varint(bytes, pos, 0xff)?;
                if m == 0 {
                    return Err(DecodeError::new(
                        NAME,
                        start,
                        "negative integer of magnitude 0 (zero is written as INTEGER)",
                    ));
                }
                pos = next;
                Value::Int(-(m as i128))
            }
            KIND_BOOL => {
                let b = match bytes.get(pos) {
                    Some(0) => false,
                    Some(1) => true,
                    Some(x) => {
                        return Err(DecodeError::new(
                            NAME,
                            pos,
                            format!("boolean must be 0 or 1, found 0x{x:02x}"),
                        ))
                    }
                    None => return Err(DecodeError::new(NAME, pos, "missing boolean byte")),
                };
                pos += 1;
                Value::Bool(b)
            }
            KIND_BLOB => {
                let (b, next) = read_packed(bytes, pos)?;
                pos = next;
                Value::Bytes(b)
            }
            KIND_TEXT => {
                let (b, next) = read_packed(bytes, pos)?;
                let s = String::from_utf8(b).map_err(|e| {
                    DecodeError::new(
                        NAME,
                        start,
                        format!(
                            "text is not valid UTF-8 (at its byte {})",
                            e.utf8_error().valid_up_to()
                        ),
                    )
                })?;
                pos = next;
                Value::Text(s)
            }
            KIND_UUID => {
                let raw = bytes.get(pos..pos + 16).ok_or_else(|| {
                    DecodeError::new(
                        NAME,
                        pos,
                        format!("UUID needs 16 bytes, {} left", bytes.len() - pos),
                    )
                })?;
                pos += 16;
                let mut u = [0u8; 16];
                u.copy_from_slice(raw);
                Value::Uuid(uuid::Uuid::from_bytes(u))
            }
            KIND_TIME | KIND_NEG_TIME => {
                let neg = kind == KIND_NEG_TIME;
                let (m, next) = read_varint(bytes, pos, if neg { 0xff } else { 0 })?;
                if neg && m == 0 {
                    return Err(DecodeError::new(
                        NAME,
                        start,
                        "NEG_TIME of magnitude 0 (written as TIME)",
                    ));
                }
                pos = next;
                let x: i128 = if neg { -(m as i128) } else { m as i128 };
                // Arithmetic shift: floor division, correct before 1970 too.
                let ms = (x >> 7) as i64;
                let q = (x & 0x7f) as i32;
                let t = Time::from_unix_ms(ms, (q - OFFSET_SHIFT) * OFFSET_UNIT_S)
                    .map_err(|e| DecodeError::new(NAME, start, format!("bad time: {e}")))?;
                Value::Time(t)
            }
            other => {
                return Err(DecodeError::new(
                    NAME,
                    start,
                    format!("unknown kind byte 0x{other:02x}"),
                ))
            }
        };
        items.push(v);
    }
    Ok((Tuple(items), pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_boundaries_round_trip() {
        for v in [
            0u64,
            240,
            241,
            2287,
            2288,
            67823,
            67824,
            (1 << 24) - 1,
            1 << 24,
            u32::MAX as u64,
            1 << 32,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX,
        ] {
            for xor in [0, 0xff] {
                let mut out = Vec::new();
                write_varint(v, xor, &mut out);
                assert_eq!(read_varint(&out, 0, xor).unwrap(), (v, out.len()), "{v}");
            }
        }
    }

    #[test]
    fn non_canonical_varints_rejected() {
        assert!(read_varint(&[0xf1, 0x00], 0, 0).is_err()); // 240 in two bytes
        assert!(read_varint(&[0xfa, 0x00, 0xff, 0xff], 0, 0).is_err()); // 65535 in four
        assert!(read_varint(&[0xff, 0, 0, 0, 0, 0, 0, 0, 1], 0, 0).is_err());
    }

    #[test]
    fn packed_lengths() {
        for n in 0..40usize {
            let s: Vec<u8> = (0..n as u8).map(|b| b.wrapping_mul(37)).collect();
            let mut out = Vec::new();
            write_packed(&s, &mut out);
            assert_eq!(out.len(), (8 * n).div_ceil(7));
            assert_eq!(read_packed(&out, 0).unwrap(), (s, out.len()));
        }
    }
}
