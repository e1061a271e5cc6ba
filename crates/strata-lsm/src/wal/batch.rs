//! The payload of a WAL record: one write batch.

use crate::coding::{get_bytes, get_varint, put_varint, u64_at};
use crate::engine::Op;
use crate::error::FormatError;

/// Encodes a batch as a WAL payload.
pub fn encode_batch(out: &mut Vec<u8>, seq: u64, ops: &[Op]) {
    out.extend_from_slice(&seq.to_le_bytes());
    put_varint(out, ops.len() as u64);
    for op in ops {
        let (k, v) = op.as_kv();
        put_op(out, k, v);
    }
}

/// Appends one op as a WAL record holds it (`0x01 key value` for a put, `0x00 key` for a
/// delete, each byte string varint-length-prefixed); returns where the key and the value (for
/// a put) start in `out`. The one encoder of an op: [`encode_batch`] and
/// [`WriteBatch`]'s buffer both write through it.
#[inline]
pub(crate) fn put_op(
    out: &mut Vec<u8>,
    key: &[u8],
    value: Option<&[u8]>,
) -> (usize, Option<usize>) {
    out.push(u8::from(value.is_some()));
    put_varint(out, key.len() as u64);
    let k = out.len();
    out.extend_from_slice(key);
    let v = value.map(|v| {
        put_varint(out, v.len() as u64);
        let at = out.len();
        out.extend_from_slice(v);
        at
    });
    (k, v)
}

/// Decodes a WAL payload into `(seq, ops)`; the error says what is wrong and at which byte
/// of the payload.
pub fn decode_batch(p: &[u8]) -> std::result::Result<(u64, Vec<Op>), FormatError> {
    let seq = u64_at(p, 0)
        .ok_or_else(|| FormatError::new(0, "batch shorter than its sequence number"))?;
    let mut pos = 8;
    let count = get_varint(p, &mut pos).ok_or_else(|| FormatError::new(pos, "bad op count"))?;
    // Each op takes at least 2 bytes: a count beyond that is a lie, not an allocation size.
    if count > (p.len() as u64) / 2 + 1 {
        return Err(FormatError::new(
            8,
            format!("op count {count} exceeds the record size"),
        ));
    }
    let mut ops = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let at = pos;
        let tag = *p
            .get(pos)
            .ok_or_else(|| FormatError::new(pos, "truncated op"))?;
        pos += 1;
        let key = get_bytes(p, &mut pos)
            .ok_or_else(|| FormatError::new(at, "truncated key"))?
            .to_vec();
        match tag {
            1 => {
                let v = get_bytes(p, &mut pos)
                    .ok_or_else(|| FormatError::new(at, "truncated value"))?
                    .to_vec();
                ops.push(Op::Put(key, v));
            }
            0 => ops.push(Op::Delete(key)),
            t => return Err(FormatError::new(at, format!("unknown op tag {t}"))),
        }
    }
    if pos != p.len() {
        return Err(FormatError::new(pos, "trailing bytes after the last op"));
    }
    Ok((seq, ops))
}
