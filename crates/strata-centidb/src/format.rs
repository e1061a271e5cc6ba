//! The physical records of a collection: single records and batch records (the keys and
//! values centidb writes, `docs/format/centidb.md`). These functions parse untrusted bytes.

use strata_key::codec::centidb::CentidbCodec;
use strata_key::{Tuple, TupleCodec};

use crate::error::{Error, Result};
use crate::varint;

/// Largest packer index: the packer prefix of a value is one byte (`pack_int(idx)`).
pub const MAX_ENCODER_IDX: u64 = 240;

/// One member key of a physical record: its tuple and its encoding (`packs(tuple)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The encoded key (without the collection prefix).
    pub enc: Vec<u8>,
    /// The key.
    pub key: Tuple,
}

/// A physical record of a collection: one engine key and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysRecord {
    /// The engine key (store prefix, collection prefix and the key list).
    pub phys_key: Vec<u8>,
    /// The member keys in **ascending** key order (one for a single record).
    pub members: Vec<Member>,
    /// The engine value.
    pub value: Vec<u8>,
}

impl PhysRecord {
    /// Parses an engine pair of the collection whose key prefix is `prefix`.
    pub fn parse(prefix: &[u8], key: Vec<u8>, value: Vec<u8>) -> Result<PhysRecord> {
        let members = parse_key_list(prefix, &key)?;
        Ok(PhysRecord {
            phys_key: key,
            members,
            value,
        })
    }

    /// True for a batch record (two or more members).
    pub fn is_batch(&self) -> bool {
        self.members.len() > 1
    }

    /// The highest member (its encoding starts the physical key).
    pub fn hi(&self) -> &Member {
        &self.members[self.members.len() - 1]
    }

    /// The lowest member.
    pub fn lo(&self) -> &Member {
        &self.members[0]
    }

    /// The position of the member whose encoded key is `enc`.
    pub fn position(&self, enc: &[u8]) -> Option<usize> {
        self.members.iter().position(|m| m.enc == enc)
    }
}

fn hexs(b: &[u8]) -> String {
    hex::encode(b)
}

/// The member keys of a physical key, ascending (a batch key lists them descending).
pub fn parse_key_list(prefix: &[u8], key: &[u8]) -> Result<Vec<Member>> {
    let rest = key.strip_prefix(prefix).ok_or_else(|| {
        Error::corrupt(
            format!("record key {}", hexs(key)),
            "outside the collection prefix",
        )
    })?;
    let codec = CentidbCodec::new();
    let tuples = codec
        .decode_list(rest)
        .map_err(|e| Error::corrupt(format!("record key {}", hexs(key)), e.to_string()))?;
    let mut members = Vec::with_capacity(tuples.len());
    for t in tuples.into_iter().rev() {
        let enc = codec.encode(&t)?;
        members.push(Member { enc, key: t });
    }
    for w in members.windows(2) {
        if w[0].enc >= w[1].enc {
            return Err(Error::corrupt(
                format!("batch key {}", hexs(key)),
                "member keys are not in strictly descending order",
            ));
        }
    }
    Ok(members)
}

/// The physical key of a record holding `members` (ascending): the store and collection
/// prefix, then the members' encodings from the highest down, joined by SEP (0x66).
pub fn key_list(prefix: &[u8], members_asc: &[&[u8]]) -> Vec<u8> {
    let len = prefix.len() + members_asc.iter().map(|m| m.len() + 1).sum::<usize>();
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(prefix);
    for (i, m) in members_asc.iter().rev().enumerate() {
        if i > 0 {
            out.push(strata_key::codec::centidb::KIND_SEP);
        }
        out.extend_from_slice(m);
    }
    out
}

/// The value of a single record: `pack_int(packer_idx)` then the packed encoding.
pub fn single_value(packer_idx: u64, packed: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(packed.len() + 1);
    varint::write(packer_idx, &mut out);
    out.extend_from_slice(packed);
    out
}

/// Splits a single record's value into its packer index and packed bytes.
pub fn parse_single(value: &[u8]) -> std::result::Result<(u64, &[u8]), String> {
    let &b = value
        .first()
        .ok_or("empty value: no packer prefix".to_owned())?;
    let idx = u64::from(b);
    if idx > MAX_ENCODER_IDX {
        return Err(format!("packer prefix 0x{b:02x} is not a one-byte index"));
    }
    Ok((idx, &value[1..]))
}

/// The value of a batch record: varint count, one varint length per member (ascending key
/// order), `pack_int(packer_idx)`, then the packed concatenation.
pub fn batch_value(lengths: &[usize], packer_idx: u64, packed: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(packed.len() + 2 * lengths.len() + 4);
    varint::write(lengths.len() as u64, &mut out);
    for &l in lengths {
        varint::write(l as u64, &mut out);
    }
    varint::write(packer_idx, &mut out);
    out.extend_from_slice(packed);
    out
}

/// The parsed header of a batch record's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchHeader {
    /// Encoded length of each member, ascending key order.
    pub lengths: Vec<usize>,
    /// The packer index.
    pub packer_idx: u64,
    /// Where the packed concatenation starts in the value.
    pub payload_start: usize,
}

impl BatchHeader {
    /// The length of the unpacked concatenation.
    pub fn total(&self) -> usize {
        self.lengths.iter().sum()
    }
}

/// Parses a batch value whose key lists `members` keys. `max_total` bounds the sum of the
/// member lengths (what the payload will unpack to).
pub fn parse_batch(
    value: &[u8],
    members: usize,
    max_total: usize,
) -> std::result::Result<BatchHeader, String> {
    let (count, mut pos) = varint::read(value, 0)?;
    if count != members as u64 {
        return Err(format!(
            "header counts {count} members, the key lists {members}"
        ));
    }
    let mut lengths = Vec::with_capacity(members);
    let mut total: usize = 0;
    for i in 0..members {
        let (l, next) = varint::read(value, pos)?;
        let l = usize::try_from(l).map_err(|_| format!("member {i}: length {l} too large"))?;
        total = total
            .checked_add(l)
            .filter(|t| *t <= max_total)
            .ok_or_else(|| format!("members unpack to more than {max_total} bytes"))?;
        lengths.push(l);
        pos = next;
    }
    let &b = value
        .get(pos)
        .ok_or_else(|| format!("missing packer prefix at byte {pos}"))?;
    if u64::from(b) > MAX_ENCODER_IDX {
        return Err(format!(
            "packer prefix 0x{b:02x} at byte {pos} is not a one-byte index"
        ));
    }
    Ok(BatchHeader {
        lengths,
        packer_idx: u64::from(b),
        payload_start: pos + 1,
    })
}

/// Cuts an unpacked concatenation into the members' encodings.
pub fn split_members<'a>(
    concat: &'a [u8],
    lengths: &[usize],
) -> std::result::Result<Vec<&'a [u8]>, String> {
    let total: usize = lengths.iter().sum();
    if total != concat.len() {
        return Err(format!(
            "payload unpacks to {} bytes, the header says {total}",
            concat.len()
        ));
    }
    let mut out = Vec::with_capacity(lengths.len());
    let mut pos = 0;
    for &l in lengths {
        out.push(&concat[pos..pos + l]);
        pos += l;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    #[test]
    fn batch_key_of_the_vectors() {
        // Vector 04: batch of log records 1..3 in collection 0a.
        let m = parse_key_list(&[0x0a], &h("0a1503661502661501")).unwrap();
        let encs: Vec<&[u8]> = m.iter().map(|m| m.enc.as_slice()).collect();
        assert_eq!(encs, [&h("1501")[..], &h("1502"), &h("1503")]);
        assert_eq!(key_list(&[0x0a], &encs), h("0a1503661502661501"));
        let v = h("0311121304789c");
        let hd = parse_batch(&v, 3, 1 << 20).unwrap();
        assert_eq!(hd.lengths, [0x11, 0x12, 0x13]);
        assert_eq!(hd.packer_idx, 4);
        assert_eq!(hd.payload_start, 5);
        assert_eq!(batch_value(&hd.lengths, 4, &v[5..]), v);
    }

    #[test]
    fn bad_headers_are_errors() {
        assert!(parse_batch(&h("02"), 3, 100).is_err());
        assert!(parse_batch(&h("031112"), 3, 100).is_err());
        assert!(parse_batch(&h("03111213"), 3, 100).is_err());
        assert!(parse_batch(&h("0311121303"), 3, 10).is_err());
        assert!(parse_batch(&h("03111213f3"), 3, 100).is_err());
        assert!(parse_single(&[]).is_err());
        assert!(parse_key_list(&[0x0a], &h("0b1501")).is_err());
        // Members must descend.
        assert!(parse_key_list(&[0x0a], &h("0a1501661502")).is_err());
        assert!(split_members(b"abc", &[1, 1]).is_err());
    }
}
