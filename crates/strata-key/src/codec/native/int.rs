//! Integers: classes of tags with 0–16 payload bytes, the last payload byte a base-254 digit
//! (see `docs/FORMAT.md`, "Integers").

use super::put::Out;
use super::{Reader, TAG_INT_MAX, TAG_INT_MIN};
use crate::error::DecodeError;

/// A class of integer encodings: `tags` consecutive tags, each followed by `p` payload bytes.
#[derive(Clone, Copy)]
struct IntClass {
    /// Payload bytes after the tag (0: the value is in the tag).
    p: u8,
    /// Number of tags of the class.
    tags: u8,
}

/// Positive classes, smallest magnitudes first: 24 one-byte values, 32 tags × 254 two-byte
/// values, 8 tags × 65,024 three-byte values, then one tag per payload length 3..=16.
const POS_CLASSES: [IntClass; 17] = int_classes(24, 32, 8);
/// Negative classes, smallest magnitudes first (−1 is magnitude 0).
const NEG_CLASSES: [IntClass; 17] = int_classes(8, 8, 4);

const fn int_classes(small: u8, k1: u8, k2: u8) -> [IntClass; 17] {
    let mut c = [IntClass { p: 0, tags: 1 }; 17];
    c[0] = IntClass { p: 0, tags: small };
    c[1] = IntClass { p: 1, tags: k1 };
    c[2] = IntClass { p: 2, tags: k2 };
    let mut i = 3;
    while i < 17 {
        c[i] = IntClass {
            p: i as u8,
            tags: 1,
        };
        i += 1;
    }
    c
}

/// Values one tag of a class holds: 1 without payload, else 254 × 256^(p−1).
const fn per_tag(p: u8) -> u128 {
    if p == 0 {
        1
    } else {
        254u128 << (8 * (p as u32 - 1))
    }
}

const fn class_starts(classes: &[IntClass; 17]) -> [u128; 18] {
    let mut s = [0u128; 18];
    let mut i = 0;
    while i < 17 {
        // Saturate: the last classes reach beyond 2^127, which no i128 magnitude needs.
        let size = (classes[i].tags as u128).saturating_mul(per_tag(classes[i].p));
        s[i + 1] = s[i].saturating_add(size);
        i += 1;
    }
    s
}

pub(super) const POS_STARTS: [u128; 18] = class_starts(&POS_CLASSES);
pub(super) const NEG_STARTS: [u128; 18] = class_starts(&NEG_CLASSES);

const fn total_tags(classes: &[IntClass; 17]) -> u32 {
    let mut t = 0u32;
    let mut i = 0;
    while i < 17 {
        t += classes[i].tags as u32;
        i += 1;
    }
    t
}

const NEG_TAGS: u32 = total_tags(&NEG_CLASSES);
const POS_TAGS: u32 = total_tags(&POS_CLASSES);
/// Tag of integer 0: negative tags come first.
const TAG_ZERO: u8 = TAG_INT_MIN + NEG_TAGS as u8;
const _: () = assert!(TAG_INT_MIN as u32 + NEG_TAGS + POS_TAGS == TAG_INT_MAX as u32 + 1);

/// Decoding table for integer tags: (negative, class index, tag index within the class).
const INT_TAGS: [(bool, u8, u8); 256] = int_tag_table();

const fn int_tag_table() -> [(bool, u8, u8); 256] {
    let mut t = [(false, 0u8, 0u8); 256];
    // Positive: ascending tags from TAG_ZERO, classes in order.
    let mut tag = TAG_ZERO as usize;
    let mut c = 0;
    while c < 17 {
        let mut k = 0;
        while k < POS_CLASSES[c].tags {
            t[tag] = (false, c as u8, k);
            tag += 1;
            k += 1;
        }
        c += 1;
    }
    // Negative: descending tags from TAG_ZERO - 1 (magnitude grows as tags shrink).
    let mut tag = TAG_ZERO as usize - 1;
    let mut c = 0;
    while c < 17 {
        let mut k = 0;
        while k < NEG_CLASSES[c].tags {
            t[tag] = (true, c as u8, k);
            tag -= 1;
            k += 1;
        }
        c += 1;
    }
    t
}

/// Decoding of one tag of the integers whose magnitude fits a `u64` (classes 0 to 8): the
/// magnitude is `base + payload quotient × 254 + last digit − 1`. Everything that depends only
/// on the tag is precomputed, so decoding has no branch on the payload length.
#[derive(Clone, Copy)]
struct FastTag {
    /// Smallest magnitude of the tag, minus 1 when the tag has a payload (the last digit is
    /// stored plus one); wrapping.
    base: u64,
    /// The payload's lanes in an 8-byte big-endian load shifted right by `shift`: the low
    /// `8 p` bits (0 for p = 0).
    lanes: u64,
    /// `64 − 8 p` for p ≥ 1, 0 for p = 0 (then `lanes` is 0).
    shift: u8,
    /// Payload bytes (0 to 8).
    p: u8,
    /// 2 when there is a payload, else 0: a last digit below this (after adding 1) is invalid.
    check: u8,
    /// `u64::MAX` for a negative tag (the value is the complement of the magnitude), else 0:
    /// the low word's xor and the high word of the `i128`.
    neg: u64,
    /// What the payload (as loaded) is xored with in [`fast_int`] besides the reader's mask:
    /// `neg` in [`FAST_TAGS`]; in [`RAW_FAST_TAGS`], `neg` and the direction of the raw byte.
    flip: u64,
    /// False for the tags that need the `u128` path (and for non-integer tags).
    fast: bool,
}

const FAST_TAGS: [FastTag; 256] = fast_tags();

const fn fast_tags() -> [FastTag; 256] {
    let none = FastTag {
        base: 0,
        lanes: 0,
        shift: 0,
        p: 0,
        check: 0,
        neg: 0,
        flip: 0,
        fast: false,
    };
    let mut t = [none; 256];
    let mut tag = TAG_INT_MIN as usize;
    while tag <= TAG_INT_MAX as usize {
        let (neg, c, k) = INT_TAGS[tag];
        let c = c as usize;
        if c <= 8 {
            let (classes, starts) = if neg {
                (&NEG_CLASSES, &NEG_STARTS)
            } else {
                (&POS_CLASSES, &POS_STARTS)
            };
            let p = classes[c].p;
            let base = (starts[c] + k as u128 * per_tag(p)) as u64;
            let lanes = if p == 0 {
                0
            } else if p == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * p)) - 1
            };
            t[tag] = FastTag {
                base: if p == 0 { base } else { base.wrapping_sub(1) },
                lanes,
                shift: if p == 0 { 0 } else { 64 - 8 * p },
                p,
                check: if p == 0 { 0 } else { 2 },
                neg: if neg { u64::MAX } else { 0 },
                flip: if neg { u64::MAX } else { 0 },
                fast: true,
            };
        }
        tag += 1;
    }
    t
}

/// [`FAST_TAGS`] indexed by the **raw** first byte of a top-level element: the entry of byte
/// `b` is that of the tag `b ^ mask` (`mask` = 0xff for `b` ≥ 0x80, the descending elements,
/// else 0), with that direction folded into `flip`. A top-level integer's position and payload
/// then come from one table load on the byte as read, with no `sar`/`xor` before it (the
/// bytes `00`, `01`, `fe`, `ff` map to tags that are not fast, as through `FAST_TAGS`).
const RAW_FAST_TAGS: [FastTag; 256] = raw_fast_tags();

const fn raw_fast_tags() -> [FastTag; 256] {
    let mut t = FAST_TAGS;
    let mut raw = 0usize;
    while raw < 256 {
        let mask = ((raw as u8 as i8) >> 7) as u8;
        let mut f = FAST_TAGS[(raw as u8 ^ mask) as usize];
        f.flip = f.neg ^ (mask as i8 as u64);
        t[raw] = f;
        raw += 1;
    }
    t
}

fn class_of(m: u128, starts: &[u128; 18]) -> usize {
    let mut c = 0;
    while c < 16 && m >= starts[c + 1] {
        c += 1;
    }
    c
}

/// Appends the payload of offset `rem` in a `p`-byte class: `rem / 254` big-endian in `p − 1`
/// bytes, then `rem % 254 + 1`, so the last byte is never 0x00 or 0xff.
#[inline]
fn put_payload(out: &mut Vec<u8>, rem: u128, p: usize, invert: bool) {
    let mask = if invert { 0xff } else { 0 };
    let (q, r) = if let Ok(small) = u64::try_from(rem) {
        ((small / 254) as u128, (small % 254) as u8)
    } else {
        (rem / 254, (rem % 254) as u8)
    };
    let qb = q.to_be_bytes();
    out.extend(qb[16 - (p - 1)..].iter().map(|b| b ^ mask));
    out.push((r + 1) ^ mask);
}

const fn tag_offsets(classes: &[IntClass; 17]) -> [u32; 17] {
    let mut r = [0u32; 17];
    let mut i = 1;
    while i < 17 {
        r[i] = r[i - 1] + classes[i - 1].tags as u32;
        i += 1;
    }
    r
}

/// What the 64-bit encoder needs of one class (0 to 7) of one side. The element of a
/// magnitude `m` in class `c`, read as a big-endian number of `c + 1` bytes (tag first; class
/// `c` has `c` payload bytes, checked at compile time), is `base + off + 2 ⌊off / 254⌋` with
/// `off = m − start` (complemented for negatives): with `off = 254 q + r` the element is
/// `tag₀ · 256^p + 256 q + r + 1` (the quotient's high bits raise the tag, its low bytes are
/// the payload's leading bytes, the last byte is `r + 1`), and `256 q + r = off + 2 q`. For a
/// class without payload `off < 254`, so `q` is 0.
#[derive(Clone, Copy)]
// A power-of-two size: the class index becomes a table offset with one shift.
#[repr(align(32))]
struct Class64 {
    start: u64,
    /// `tag₀ · 256^p`, plus 1 when there is a payload (its last byte is `r + 1`); `tag₀` is
    /// the class's first tag, or for a negative class the complement of its first tag (the
    /// element is complemented after the sum).
    base: u64,
    /// `64 − 8 (c + 1)`: the left shift that moves the element to the top of a word.
    shift: u32,
}

/// One side (non-negative, negative) of the 64-bit encoder.
struct Side64 {
    /// Classes 0 to 7 (elements of at most 8 bytes); magnitudes in class 8 (at least 2^56
    /// or so) take the general path.
    classes: [Class64; 8],
    /// For each bit length (0 to 64), the class of the smallest magnitude of that length and
    /// that class's end: a magnitude of that length is in that class or the next (checked by
    /// a unit test), so the class is found with one table load and one comparison.
    by_bits: [(u64, u8); 65],
}

const fn side64(classes: &[IntClass; 17], starts: &[u128; 18], neg: bool) -> Side64 {
    let offsets = tag_offsets(classes);
    let empty = Class64 {
        start: 0,
        base: 0,
        shift: 0,
    };
    let mut cs = [empty; 8];
    let mut c = 0;
    while c < 8 {
        let p = classes[c].p as u32;
        // Class c has c payload bytes: its element is c + 1 bytes (the encoder computes the
        // length from the class index instead of loading it).
        assert!(p == c as u32);
        // Every offset in the class is below 2^57, where `div254` is exact.
        assert!(starts[c + 1] - starts[c] <= 1 << 57);
        // The stored first tag: Z + offset, or for negatives the complement of Z − 1 − offset.
        let tag0 = if neg {
            256 - TAG_ZERO as u64 + offsets[c] as u64
        } else {
            TAG_ZERO as u64 + offsets[c] as u64
        };
        assert!(tag0 < 256);
        cs[c] = Class64 {
            start: starts[c] as u64,
            base: (tag0 << (8 * p)) + if p > 0 { 1 } else { 0 },
            shift: 64 - 8 * (1 + p),
        };
        c += 1;
    }
    let mut by_bits = [(starts[1] as u64, 0u8); 65];
    let mut l = 1;
    while l <= 64 {
        let smallest = 1u128 << (l - 1);
        let mut c = 0;
        while c < 16 && smallest >= starts[c + 1] {
            c += 1;
        }
        // Saturated: lengths 64 (only u64 values beyond i64, never on this path) may be in
        // classes ≥ 9.
        let next = if starts[c + 1] > u64::MAX as u128 {
            u64::MAX
        } else {
            starts[c + 1] as u64
        };
        by_bits[l] = (next, c as u8);
        l += 1;
    }
    Side64 {
        classes: cs,
        by_bits,
    }
}

/// Index 0: non-negative values; 1: negative values (magnitude `!x`).
const SIDES: [Side64; 2] = [
    side64(&POS_CLASSES, &POS_STARTS, false),
    side64(&NEG_CLASSES, &NEG_STARTS, true),
];
// Every magnitude below 2^63 is in classes 0 to 8, whose starts fit a u64.
const _: () = assert!(POS_STARTS[9] > 1 << 63 && NEG_STARTS[9] > 1 << 63);
const _: () = assert!(POS_STARTS[9] <= u64::MAX as u128 && NEG_STARTS[9] <= u64::MAX as u128);
// Classes 0 to 7 have at most 7 payload bytes: their elements fit one word.
const _: () = assert!(POS_CLASSES[7].p == 7 && NEG_CLASSES[7].p == 7);

/// Appends an integer.
#[inline]
pub(crate) fn encode_int<O: Out>(v: i128, out: &mut O) {
    if let Ok(x) = i64::try_from(v) {
        encode_i64(x, out);
        return;
    }
    out.with_vec(|o| encode_int_wide(v, o))
}

/// Appends a `u64` (beyond `i64::MAX`: the general path).
#[inline]
pub(crate) fn encode_u64<O: Out>(v: u64, out: &mut O) {
    match i64::try_from(v) {
        Ok(x) => encode_i64(x, out),
        Err(_) => out.with_vec(|o| encode_int_wide(v.into(), o)),
    }
}

/// The 64-bit path, without a data-dependent branch for elements of up to 8 bytes: the class
/// comes from the bit length (one table load, one comparison), the element is one sum (see
/// [`Class64`]), the sign selects the table and complements the sum, and the element is
/// written as one 8-byte store cut back to its length. Magnitudes from about 2^56 on (9-byte
/// elements) take the general path.
#[inline(always)]
pub(crate) fn encode_i64<O: Out>(x: i64, out: &mut O) {
    let sign = x >> 63; // 0 or −1
                        // One's complement of a negative gives its magnitude class index: −1 → 0.
    let m = (x ^ sign) as u64;
    let side = &SIDES[(sign & 1) as usize];
    let c = class_by_bits(side, m);
    if c >= 8 {
        return encode_i64_wide(x, out);
    }
    put_in_class(side, c, m, sign as u64, out);
}

/// The class of magnitude `m` on `side`: from its bit length (m = 0 and m = 1 share a class)
/// with one `bsr`, one table load and one comparison.
#[inline(always)]
fn class_by_bits(side: &Side64, m: u64) -> usize {
    let (next, c0) = side.by_bits[(m | 1).ilog2() as usize + 1];
    c0 as usize + usize::from(m >= next)
}

/// `⌊n / 254⌋` for `n < 2^57`: one multiply-high and one shift. With `M = ⌈2^65 / 254⌉`,
/// `M · 254 − 2^65 = 250` (`DIV254_M_IS_CLOSE`), so `n M / 2^65 = n / 254 + ε` with
/// `ε = 250 n / (254 · 2^65) < 1/254` for `n < 2^57`, which never reaches the next integer
/// (the fraction of `n / 254` is at most 253/254). The compiler's own division by 254 needs
/// a pre-shift for all 64-bit `n`.
#[inline(always)]
fn div254(n: u64) -> u64 {
    ((u128::from(n) * u128::from(DIV254_M)) >> 65) as u64
}

const DIV254_M: u64 = ((1u128 << 65) / 254 + 1) as u64;
const DIV254_M_IS_CLOSE: () = assert!(DIV254_M as u128 * 254 - (1u128 << 65) == 250);
const _: () = DIV254_M_IS_CLOSE;

/// Writes the element of magnitude `m` in class `c` (< 8) of `side`, complemented when `sign`
/// is all ones: one 8-byte store, cut back to the element's `c + 1` bytes.
#[inline(always)]
fn put_in_class<O: Out>(side: &Side64, c: usize, m: u64, sign: u64, out: &mut O) {
    let class = &side.classes[c];
    // Below the class's size, at most 2^57 (checked where the table is built).
    let off = m - class.start;
    let element = class.base + off + 2 * div254(off);
    // Complemented for negatives; the bits above the element shift out.
    let word = (element ^ sign) << class.shift;
    // Class c has c payload bytes (checked where the table is built), and the length comes
    // from the index, not from a second table load: the next element's position does not
    // wait for one.
    let len = c + 1;
    // SAFETY: `c < 8` (the index into `classes`, 8 long, did not panic), so `len <= 8`, and
    // the one 8-byte store initialises bytes 0..8 ⊇ 0..len. Tested by every integer test
    // (`i64_path_matches_the_general_path`, `tests/encoder_reference.rs` and the vectors).
    unsafe {
        out.put_raw::<8>(len, |p| {
            p.cast::<[u8; 8]>().write_unaligned(word.to_be_bytes())
        })
    };
}

/// [`encode_i64`] for magnitudes in class 8 (9-byte elements), out of line on the vector
/// (not on the caller's cursor, which can then stay in registers).
#[inline(always)]
fn encode_i64_wide<O: Out>(x: i64, out: &mut O) {
    out.with_vec(|o| encode_i64_cold(x, o))
}

#[cold]
#[inline(never)]
fn encode_i64_cold(x: i64, out: &mut Vec<u8>) {
    encode_int_wide(x.into(), out)
}

/// Integers beyond `i64`: the general `u128` path (one code for both signs: negatives use
/// the mirrored classes, descending tags and complemented payloads).
fn encode_int_wide(v: i128, out: &mut Vec<u8>) {
    let neg = v < 0;
    // Negatives: the distance below -1 (-1 -> 0, -2 -> 1, ...); never overflows.
    let (m, classes, starts) = if neg {
        (!v as u128, &NEG_CLASSES, &NEG_STARTS)
    } else {
        (v as u128, &POS_CLASSES, &POS_STARTS)
    };
    let c = class_of(m, starts);
    let class = classes[c];
    let off = m - starts[c];
    let pt = per_tag(class.p);
    let (k, rem) = if class.tags == 1 {
        (0, off)
    } else {
        (off / pt, off % pt)
    };
    let dist = class_tag_offset(classes, c) + k as u32;
    let tag = if neg {
        TAG_ZERO as u32 - 1 - dist
    } else {
        TAG_ZERO as u32 + dist
    };
    out.push(tag as u8);
    if class.p > 0 {
        put_payload(out, rem, class.p as usize, neg);
    }
}

fn class_tag_offset(classes: &[IntClass; 17], c: usize) -> u32 {
    classes[..c].iter().map(|x| x.tags as u32).sum()
}

impl Reader<'_> {
    #[cold]
    fn bad_last(&self, at: usize, last: u8) -> DecodeError {
        self.err(at, format!("integer payload ends in 0x{last:02x}"))
    }

    pub(crate) fn sub_int(&mut self) -> Result<i128, DecodeError> {
        let at = self.pos;
        let tag = self.byte()?;
        if !(TAG_INT_MIN..=TAG_INT_MAX).contains(&tag) {
            return Err(self.err(at, format!("expected an integer tag, found 0x{tag:02x}")));
        }
        self.int_after_tag(tag, at)
    }

    #[inline(always)]
    pub(crate) fn int_after_tag(&mut self, tag: u8, at: usize) -> Result<i128, DecodeError> {
        self.int_after_tag_masked(tag, at, self.mask)
    }

    /// [`Reader::int_after_tag`] with the element's direction mask given (`0x00` or `0xff`)
    /// instead of read from the reader, so that a caller that just derived it from the tag
    /// keeps it in a register.
    #[inline(always)]
    pub(crate) fn int_after_tag_masked(
        &mut self,
        tag: u8,
        at: usize,
        mask: u8,
    ) -> Result<i128, DecodeError> {
        let f = &FAST_TAGS[tag as usize];
        if f.fast {
            // The magnitude fits a u64. Where the key has 8 bytes left, the payload (0 to 8
            // bytes) is read with one 8-byte load and no branch on its length.
            let p = usize::from(f.p);
            let pos = self.pos;
            let raw = match self.bytes.get(pos..pos.wrapping_add(8)) {
                Some(w) => {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(w);
                    u64::from_be_bytes(a) >> f.shift
                }
                // Near the end of the key: byte by byte.
                None => self.int_payload_near_end(p)?,
            };
            // 0x00 or 0xff in every byte (sign extension).
            let mask = mask as i8 as u64;
            // A negative tag's payload is complemented too (only its lanes are kept).
            let payload = (raw ^ mask ^ f.neg) & f.lanes;
            let last = payload as u8;
            // The last payload byte is never 0x00 or 0xff (no payload: `check` is 0).
            if last.wrapping_add(1) < f.check {
                return Err(self.bad_last(pos + p - 1, last));
            }
            self.pos = pos + p;
            // m = base + quotient × 254 + (last − 1), where quotient × 254 + last is the payload
            // (quotient × 256 + last) minus twice the quotient; p = 0: the payload is 0.
            let m = f
                .base
                .wrapping_add(payload)
                .wrapping_sub((payload >> 8) << 1);
            // A negative tag: the complement of m as an i128 (low word !m, high word all ones).
            return Ok(((u128::from(f.neg) << 64) | u128::from(m ^ f.neg)) as i128);
        }
        self.int_wide_after_tag(tag, at)
    }

    /// The common case of [`Reader::int_after_tag_masked`] for an element whose tag byte is
    /// at `at` (`tag` unmasked, direction `mask`), without errors: a tag whose magnitude fits
    /// a `u64` (classes 0 to 8; every other tag, integer or not, is not "fast" in the table,
    /// so this one test is also the tag's range check), at least 8 bytes in the key after the
    /// tag (the payload is one 8-byte load) and a valid last payload byte. Returns the
    /// magnitude `m`, the sign word (`u64::MAX` for a negative tag: the value is `!m`, else
    /// 0) and the payload length; `None` for anything else, with nothing consumed (the
    /// caller then takes the general path, which reports the errors).
    #[inline(always)]
    pub(crate) fn int_fast_at(&self, at: usize, tag: u8, mask: u8) -> Option<(u64, u64, usize)> {
        let f = &FAST_TAGS[tag as usize];
        if !f.fast {
            return None;
        }
        let w = self.bytes.get(at + 1..)?.first_chunk::<8>()?;
        fast_int(f, u64::from_be_bytes(*w) >> f.shift, mask)
    }

    /// [`Reader::int_fast_at`] for a top-level element whose first byte `raw` (at `at`) is
    /// read as is: its direction comes from [`RAW_FAST_TAGS`] (the same results as
    /// `int_fast_at(at, raw ^ mask, mask)` with `mask` from the byte's top bit, tested by
    /// `int_fast_at_raw_is_int_fast_at`), so the next element's position waits on the byte's
    /// load and one table load only.
    #[inline(always)]
    pub(crate) fn int_fast_at_raw(&self, at: usize, raw: u8) -> Option<(u64, u64, usize)> {
        let f = &RAW_FAST_TAGS[raw as usize];
        if !f.fast {
            return None;
        }
        let w = self.bytes.get(at + 1..)?.first_chunk::<8>()?;
        fast_int(f, u64::from_be_bytes(*w) >> f.shift, 0)
    }

    /// [`Reader::int_fast_at`] for an element near the key's end (fewer than 8 bytes after
    /// the tag, which that function leaves to the general path): the payload is read with one
    /// load of the key's last 8 bytes (of a key shorter than 8 bytes: the key, zero-extended
    /// above). `None` for everything else (also when 8 or more bytes follow the tag), with
    /// nothing consumed.
    #[inline(always)]
    pub(crate) fn int_fast_at_end(
        &self,
        at: usize,
        tag: u8,
        mask: u8,
    ) -> Option<(u64, u64, usize)> {
        let f = &FAST_TAGS[tag as usize];
        if !f.fast {
            return None;
        }
        // Bytes after the tag, fewer than 8 here; the payload must be among them.
        let after = self.bytes.len().checked_sub(at + 1)?;
        if after >= 8 {
            return None;
        }
        let past = after.checked_sub(usize::from(f.p))?;
        let w = match self.bytes.last_chunk::<8>() {
            Some(w) => u64::from_be_bytes(*w),
            None => short_key_word(self.bytes),
        };
        // The payload's last byte is `past` bytes before the key's end: shifted down to the
        // lowest lane (`past < 8`), the key's bytes above it are masked off by `lanes`.
        fast_int(f, w >> (8 * past), mask)
    }
}

/// A key shorter than 8 bytes as the low lanes of a big-endian word (the lanes above it are
/// zero): the word [`Reader::int_fast_at_end`] loads from a longer key's last 8 bytes, for
/// keys such as `(i64,)` or `(u16, u32)` that would otherwise take the byte-by-byte general
/// path (session 20: 224 instructions per `(i64,)` against storekey's 39).
#[inline(always)]
fn short_key_word(key: &[u8]) -> u64 {
    // The string decoder's little-endian read of a short slice, byte-swapped: the key's first
    // byte then sits in the top lane, and the shift brings its last byte to lane 0.
    let shift = 8 * (8 - key.len().min(8)) as u32;
    super::string::load_le_short(key)
        .swap_bytes()
        .checked_shr(shift)
        .unwrap_or(0)
}

/// The end of [`Reader::int_fast_at`] and [`Reader::int_fast_at_end`]: `raw` has the payload
/// (not yet unmasked) in its low `p` lanes.
#[inline(always)]
fn fast_int(f: &FastTag, raw: u64, mask: u8) -> Option<(u64, u64, usize)> {
    {
        // As in `int_after_tag_masked` (`flip` is `neg`, with the direction folded in for
        // `RAW_FAST_TAGS`).
        let payload = (raw ^ (mask as i8 as u64) ^ f.flip) & f.lanes;
        if (payload as u8).wrapping_add(1) < f.check {
            return None;
        }
        let m = f
            .base
            .wrapping_add(payload)
            .wrapping_sub((payload >> 8) << 1);
        Some((m, f.neg, usize::from(f.p)))
    }
}

impl Reader<'_> {
    /// The `p` payload bytes of an integer that ends within 8 bytes of the key's end, as a
    /// big-endian number (not yet unmasked).
    #[inline(never)]
    fn int_payload_near_end(&self, p: usize) -> Result<u64, DecodeError> {
        match self.bytes.get(self.pos..self.pos + p) {
            Some(b) => Ok(b.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))),
            None => Err(self.short(p)),
        }
    }

    /// Integers whose magnitude does not fit a `u64` (classes 9 and up).
    #[inline(never)]
    fn int_wide_after_tag(&mut self, tag: u8, at: usize) -> Result<i128, DecodeError> {
        let (neg, c, k) = INT_TAGS[tag as usize];
        let (classes, starts) = if neg {
            (&NEG_CLASSES, &NEG_STARTS)
        } else {
            (&POS_CLASSES, &POS_STARTS)
        };
        let p = classes[c as usize].p as usize;
        let mut rem: u128 = 0;
        if p > 0 {
            let payload = self.take(p)?;
            let invert = if neg { 0xff } else { 0 } ^ self.mask;
            let last = payload[p - 1] ^ invert;
            if last == 0 || last == 0xff {
                return Err(self.err(
                    self.pos - 1,
                    format!("integer payload ends in 0x{last:02x}"),
                ));
            }
            let mut q: u128 = 0;
            for b in &payload[..p - 1] {
                q = (q << 8) | (b ^ invert) as u128;
            }
            rem = q * 254 + (last - 1) as u128;
        }
        let m = starts[c as usize]
            .checked_add(k as u128 * per_tag(p as u8))
            .and_then(|x| x.checked_add(rem))
            .filter(|m| *m <= i128::MAX as u128)
            .ok_or_else(|| self.err(at, "integer out of range"))?;
        Ok(if neg { !(m as i128) } else { m as i128 })
    }
}

#[cfg(test)]
#[path = "int_tests.rs"]
mod tests;
