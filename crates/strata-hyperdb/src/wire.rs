//! The `Entry` message read in place (fields borrowed from the block) and written without an
//! intermediate message.
//!
//! [`crate::messages::Entry`] (prost) is the definition of the schema; this module reads and
//! writes the same bytes without copying every field into owned vectors first. It follows the
//! rules of prost's generated decoder exactly, so that a block decodes here if and only if prost
//! decodes it, to the same values (the tests check both on random and mutated input):
//!
//! * the last occurrence of a non-repeated field wins; `required` fields may be absent
//!   (they default), as in prost;
//! * `clock` accepts packed and unpacked elements (in any mix);
//! * unknown fields are skipped by wire type, groups nested at most 100 deep (prost's recursion
//!   limit, one level less inside a `Feed`);
//! * a known field with another wire type, a varint over 64 bits, a key over `u32::MAX`, tag 0,
//!   wire types 6 and 7, a stray end-group and any length past the end are errors.

use smallvec::SmallVec;

use crate::varint;

/// prost's recursion limit for nested messages and groups.
const RECURSION_LIMIT: u32 = 100;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;

/// Where and why an `Entry` did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireError {
    /// Byte offset in the block.
    pub offset: usize,
    /// What is wrong.
    pub reason: &'static str,
}

/// An `Entry` (or InflatedEntry) whose fields borrow the block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryView<'a> {
    /// Field 1, the key bytes (empty when absent).
    pub key: &'a [u8],
    /// Field 2, the value.
    pub value: Option<&'a [u8]>,
    /// Field 3.
    pub deleted: Option<bool>,
    /// Field 4, the encoded trie (empty when absent).
    pub trie: &'a [u8],
    /// Field 5, every clock element in order.
    pub clock: SmallVec<[u64; 1]>,
    /// Field 6.
    pub inflate: Option<u64>,
    /// Field 7, the key of each `Feed` (empty when a `Feed` has none).
    pub feeds: SmallVec<[&'a [u8]; 1]>,
    /// Field 8.
    pub content_feed: Option<&'a [u8]>,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn err(&self, at: usize, reason: &'static str) -> WireError {
        WireError { offset: at, reason }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> Result<u64, WireError> {
        let at = self.pos;
        varint::decode(self.buf, &mut self.pos).map_err(|e| self.err(at, e.as_str()))
    }

    /// A field key: `(tag, wire type)`.
    fn key(&mut self) -> Result<(u32, u8), WireError> {
        let at = self.pos;
        let key = self.varint()?;
        let key = u32::try_from(key).map_err(|_| self.err(at, "field key above u32::MAX"))?;
        let wire = (key & 7) as u8;
        if wire > FIXED32 {
            return Err(self.err(at, "invalid wire type"));
        }
        if key >> 3 == 0 {
            return Err(self.err(at, "field tag 0"));
        }
        Ok((key >> 3, wire))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], WireError> {
        let at = self.pos;
        let rest = self.buf.len() - self.pos;
        if n > rest as u64 {
            return Err(self.err(at, "length past the end"));
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    /// A length-delimited field's bytes (the wire type must be `LEN`).
    fn bytes(&mut self, wire: u8, at: usize) -> Result<&'a [u8], WireError> {
        if wire != LEN {
            return Err(self.err(at, "wrong wire type for a bytes field"));
        }
        let n = self.varint()?;
        self.take(n)
    }

    fn scalar(&mut self, wire: u8, at: usize) -> Result<u64, WireError> {
        if wire != VARINT {
            return Err(self.err(at, "wrong wire type for a varint field"));
        }
        self.varint()
    }

    /// Skips an unknown field (prost's `skip_field`); `depth` is the recursion budget left.
    fn skip(&mut self, wire: u8, tag: u32, depth: u32, at: usize) -> Result<(), WireError> {
        if depth == 0 {
            return Err(self.err(at, "groups nested too deep"));
        }
        let n = match wire {
            VARINT => {
                self.varint()?;
                0
            }
            FIXED64 => 8,
            FIXED32 => 4,
            LEN => self.varint()?,
            START_GROUP => loop {
                let at = self.pos;
                let (inner, w) = self.key()?;
                if w == END_GROUP {
                    if inner != tag {
                        return Err(self.err(at, "end-group tag does not match"));
                    }
                    break 0;
                }
                self.skip(w, inner, depth - 1, at)?;
            },
            _ => return Err(self.err(at, "unexpected end-group")),
        };
        self.take(n).map(|_| ())
    }
}

/// A `Feed { required bytes key = 1; }` inside `buf` (the message's bytes).
fn feed_key(buf: &[u8], base: usize) -> Result<&[u8], WireError> {
    let mut r = Reader { buf, pos: 0 };
    let mut key: &[u8] = &[];
    let shift = |e: WireError| WireError {
        offset: e.offset + base,
        reason: e.reason,
    };
    while !r.done() {
        let at = r.pos;
        let (tag, wire) = r.key().map_err(shift)?;
        if tag == 1 {
            key = r.bytes(wire, at).map_err(shift)?;
        } else {
            r.skip(wire, tag, RECURSION_LIMIT - 1, at).map_err(shift)?;
        }
    }
    Ok(key)
}

impl<'a> EntryView<'a> {
    /// Reads an untrusted block.
    pub fn parse(block: &'a [u8]) -> Result<EntryView<'a>, WireError> {
        let mut r = Reader { buf: block, pos: 0 };
        let mut e = EntryView::default();
        while !r.done() {
            let at = r.pos;
            let (tag, wire) = r.key()?;
            match tag {
                1 => e.key = r.bytes(wire, at)?,
                2 => e.value = Some(r.bytes(wire, at)?),
                3 => e.deleted = Some(r.scalar(wire, at)? != 0),
                4 => e.trie = r.bytes(wire, at)?,
                5 if wire == LEN => {
                    let packed = r.bytes(wire, at)?;
                    let base = r.pos - packed.len();
                    let mut pos = 0;
                    while pos < packed.len() {
                        let at = pos;
                        let v = varint::decode(packed, &mut pos).map_err(|e| WireError {
                            offset: base + at,
                            reason: e.as_str(),
                        })?;
                        e.clock.push(v);
                    }
                }
                5 => e.clock.push(r.scalar(wire, at)?),
                6 => e.inflate = Some(r.scalar(wire, at)?),
                7 => {
                    let msg = r.bytes(wire, at)?;
                    e.feeds.push(feed_key(msg, r.pos - msg.len())?);
                }
                8 => e.content_feed = Some(r.bytes(wire, at)?),
                _ => r.skip(wire, tag, RECURSION_LIMIT, at)?,
            }
        }
        Ok(e)
    }
}

fn put_bytes(out: &mut Vec<u8>, key: u8, bytes: &[u8]) {
    out.push(key);
    varint::encode(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// The fields of an `Entry` to write, borrowed.
pub struct EntryFields<'a> {
    /// Field 1.
    pub key: &'a [u8],
    /// Field 2 (written iff `Some`).
    pub value: Option<&'a [u8]>,
    /// Field 3 (written as `18 01` iff true).
    pub deleted: bool,
    /// Field 4 (always written).
    pub trie: &'a [u8],
    /// Field 5, unpacked.
    pub clock: &'a [u64],
    /// Field 6 (always written).
    pub inflate: u64,
    /// Field 7, one `Feed` per key.
    pub feeds: &'a [[u8; 32]],
    /// Field 8.
    pub content_feed: Option<&'a [u8; 32]>,
}

impl EntryFields<'_> {
    /// Appends the canonical encoding (what prost writes for the same
    /// [`Entry`](crate::messages::Entry), and what hyperdb writes).
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, 0x0a, self.key);
        if let Some(v) = self.value {
            put_bytes(out, 0x12, v);
        }
        if self.deleted {
            out.extend_from_slice(&[0x18, 0x01]);
        }
        put_bytes(out, 0x22, self.trie);
        for &c in self.clock {
            out.push(0x28);
            varint::encode(c, out);
        }
        out.push(0x30);
        varint::encode(self.inflate, out);
        for f in self.feeds {
            out.extend_from_slice(&[0x3a, 0x22, 0x0a, 0x20]);
            out.extend_from_slice(f);
        }
        if let Some(c) = self.content_feed {
            put_bytes(out, 0x42, c);
        }
    }
}
