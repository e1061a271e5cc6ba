//! Strings (bytes and text): the prefix-free code of `docs/FORMAT.md`, "Strings".
//!
//! Both directions work eight bytes at a time (SWAR on a `u64`): a string whose bytes are all
//! "plain" (`00..fb` to encode, `02..fd` to decode) is shifted by adding or subtracting
//! `0x02` in every byte of the word at once, which never carries or borrows across bytes for
//! plain bytes. Words holding anything else, and the last `len % 8` bytes, go byte by byte.

use super::put::Out;
use super::{Reader, STR_END, STR_HIGH, STR_SHIFT};
use crate::error::DecodeError;

/// Strings of at most this many bytes are decoded on the stack by
/// [`Reader::unescape_short`].
pub(crate) const SHORT: usize = 64;
/// Size of the stack buffer of [`Reader::unescape_short`]: room for whole 16-byte blocks.
pub(crate) const SHORT_BUF: usize = SHORT + 16;

/// `0x01` in every byte.
const ONES: u64 = 0x0101_0101_0101_0101;
/// `0x80` in every byte.
const HIGHS: u64 = 0x8080_8080_8080_8080;
/// [`STR_SHIFT`] in every byte.
const SHIFTS: u64 = ONES * STR_SHIFT as u64;

/// `0x7f` in every byte.
const LOWS: u64 = !HIGHS;
/// `0x04` in every byte.
const FOURS: u64 = ONES * 4;

/// True when some byte of `x` is `≥ 0xfc` (see [`ge_fc_bits`]).
#[inline(always)]
fn any_ge_fc(x: u64) -> bool {
    ge_fc_bits(x) != 0
}

/// Bit 7 set in the lowest byte of `x` that is not plain in an encoded string (`00`, `01`,
/// `fe`, `ff`); bits above the lowest such byte may be false positives, so only the lowest set
/// bit is meaningful (the classic "has less than" test, on `x` and on `!x`).
#[inline(always)]
fn special_bytes(x: u64) -> u64 {
    let low = x.wrapping_sub(ONES * 2) & !x & HIGHS; // bytes < 2
    let high = (!x).wrapping_sub(ONES * 2) & x & HIGHS; // bytes > 0xfd
    low | high
}

/// The first 8 bytes of `s` (at least 8) as a little-endian word.
#[inline(always)]
fn load_le(s: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&s[..8]);
    u64::from_le_bytes(a)
}

/// `s` (fewer than 8 bytes) as a little-endian word, zero above its length: two overlapping
/// 4-byte loads, or three 1-byte loads, instead of a loop.
#[inline(always)]
pub(super) fn load_le_short(s: &[u8]) -> u64 {
    let n = s.len();
    if n >= 4 {
        let mut lo = [0u8; 4];
        lo.copy_from_slice(&s[..4]);
        let mut hi = [0u8; 4];
        hi.copy_from_slice(&s[n - 4..]);
        // The overlapping bytes are the same in both.
        u64::from(u32::from_le_bytes(lo)) | (u64::from(u32::from_le_bytes(hi)) << (8 * (n - 4)))
    } else if n > 0 {
        u64::from(s[0])
            | (u64::from(s[n / 2]) << (8 * (n / 2)))
            | (u64::from(s[n - 1]) << (8 * (n - 1)))
    } else {
        0
    }
}

/// A string: each byte `b < 0xfc` as `b + 2`, each byte `b ≥ 0xfc` as `fe, b − 0xfa`, then
/// the terminator `01`. The code is prefix-free (no content byte is below `02`), keeps byte
/// order, and never ends in `00` or `ff`. UTF-8 text never has a byte `≥ 0xf8`, so text costs
/// exactly `len + 2`.
#[inline]
pub(crate) fn put_escaped(out: &mut Vec<u8>, s: &[u8]) {
    // The common case (no byte ≥ 0xfc) writes n + 1 bytes, in whole words: the last word is
    // the tail padded with the terminator, written in full and cut back.
    out.reserve(s.len() + 8);
    let mut words = s.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        let x = u64::from_le_bytes(a);
        if any_ge_fc(x) {
            put_escaped_bytes(out, w);
        } else {
            out.extend_from_slice(&(x + SHIFTS).to_le_bytes());
        }
    }
    let tail = words.remainder();
    let x = if s.len() >= 8 {
        // The last 8 bytes of the string, shifted so that the tail is in the low lanes.
        load_le(&s[s.len() - 8..])
            .checked_shr(8 * (8 - tail.len()) as u32)
            .unwrap_or(0)
    } else {
        load_le_short(tail)
    };
    if any_ge_fc(x) {
        put_escaped_bytes(out, tail);
        out.push(STR_END);
        return;
    }
    // tail.len() < 8 content lanes, then the terminator, then padding cut off below.
    let len = out.len();
    let lanes = 8 * tail.len() as u32;
    let content = (1u64 << lanes) - 1;
    let word = ((x + SHIFTS) & content) | (u64::from(STR_END) << lanes);
    out.extend_from_slice(&word.to_le_bytes());
    out.truncate(len + tail.len() + 1);
}

/// A string element: `tag`, then `s` as [`put_escaped`] writes it. A string of at most 16
/// bytes with no byte `≥ 0xfc` (short text, a UUID, the common case) is written with a few
/// stores after one capacity check.
#[inline(always)]
pub(crate) fn put_string<O: Out>(out: &mut O, tag: u8, s: &[u8]) {
    let n = s.len();
    if n < 8 {
        let x = load_le_short(s);
        if any_ge_fc(x) {
            // On the vector, not the cursor: a cursor whose address no call takes can stay in
            // registers.
            out.with_vec(|o| put_short_escaped(o, tag, u128::from(x), n));
            return;
        }
        put_plain7(out, tag, x, n);
        return;
    }
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if n == 16 {
        // (A UUID: the length is a constant there, and this is the only path left.)
        return put_plain16_v(out, tag, s);
    }
    if n <= 16 {
        // Two overlapping 8-byte loads.
        let lo = load_le(s);
        let hi = load_le(&s[n - 8..]);
        if ge_fc_bits(lo) | ge_fc_bits(hi) != 0 {
            let c = u128::from(lo) | (u128::from(hi) << (8 * (n - 8)));
            out.with_vec(|o| put_short_escaped(o, tag, c, n));
            return;
        }
        put_plain16(out, tag, lo, hi, n);
        return;
    }
    out.with_vec(|o| put_string_escaped(o, tag, s));
}

/// A text element (`tag` is the text tag): [`put_string`] without looking for bytes
/// `≥ 0xfc`, which UTF-8 never has (its bytes are at most `0xf4`), so no byte is escaped.
#[inline(always)]
pub(crate) fn put_text<O: Out>(out: &mut O, tag: u8, s: &str) {
    let s = s.as_bytes();
    let n = s.len();
    if n < 8 {
        put_plain7(out, tag, load_le_short(s), n);
    } else if n <= 16 {
        put_plain16(out, tag, load_le(s), load_le(&s[n - 8..]), n);
    } else {
        out.with_vec(|o| put_string_escaped(o, tag, s));
    }
}

/// `tag`, the `n < 8` low lanes of `x` (zero above; no byte `≥ 0xfc`) shifted, and the
/// terminator: one 8-byte store of the tag and the shifted content (the lanes past the content
/// hold `02`), then the terminator's byte over the lane after the content.
#[inline(always)]
fn put_plain7<O: Out>(out: &mut O, tag: u8, x: u64, n: usize) {
    debug_assert!(n < 8 && !any_ge_fc(x));
    // No lane carries: a content byte is below 0xfc, the lanes above it are 0. The top lane of
    // `x` (zero: n < 8) shifts out.
    let word = (x << 8).wrapping_add((SHIFTS << 8) | u64::from(tag));
    // SAFETY: n + 2 <= 9 = N. The stores write bytes 0..8 and n + 1 <= 8, inside 0..9, and
    // together initialise 0..n + 2. Tested by `put_string_is_tag_then_put_escaped` (every
    // length and byte value) and `put_text_is_put_string`.
    unsafe {
        out.put_raw::<9>(n + 2, |p| {
            p.cast::<[u8; 8]>().write_unaligned(word.to_le_bytes());
            p.add(n + 1).write(STR_END);
        })
    }
}

/// `tag`, the `n` (8 to 16) bytes whose first 8 are `lo` and last 8 are `hi` (no byte
/// `≥ 0xfc`) shifted, and the terminator: four stores (the two words overlap when `n < 16`).
#[inline(always)]
fn put_plain16<O: Out>(out: &mut O, tag: u8, lo: u64, hi: u64, n: usize) {
    debug_assert!((8..=16).contains(&n) && !any_ge_fc(lo) && !any_ge_fc(hi));
    // No lane carries: every byte is below 0xfc.
    let (lo, hi) = (lo.wrapping_add(SHIFTS), hi.wrapping_add(SHIFTS));
    // SAFETY: n + 2 <= 18 = N. The stores write byte 0, bytes 1..9, n − 7..n + 1 and n + 1,
    // all inside 0..18 (n <= 16), and cover 0..n + 2 (n − 7 <= 9). Tested by
    // `put_string_is_tag_then_put_escaped` (every length and byte value) and
    // `put_text_is_put_string`.
    unsafe {
        out.put_raw::<18>(n + 2, |p| {
            p.write(tag);
            p.add(1).cast::<[u8; 8]>().write_unaligned(lo.to_le_bytes());
            p.add(n - 7)
                .cast::<[u8; 8]>()
                .write_unaligned(hi.to_le_bytes());
            p.add(n + 1).write(STR_END);
        })
    }
}

/// [`put_string`] of exactly 16 bytes in SSE2 registers: one load, the test for bytes
/// `≥ 0xfc` as a move-mask, and two 16-byte stores of the element, built with no branch on
/// whether or where a byte `≥ 0xfc` is when there is at most one (98% of random UUIDs; see
/// [`code16_lanes`](super::string16::code16_lanes)). Two or more take the general path.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn put_plain16_v<O: Out>(out: &mut O, tag: u8, s: &[u8]) {
    use super::string16::{code16_lanes, ge_fc_lanes};
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_storeu_si128};
    let Ok(a) = <&[u8; 16]>::try_from(s) else {
        return out.with_vec(|o| put_string_escaped(o, tag, s));
    };
    // SAFETY: SSE2 is enabled (the `cfg` above; part of the x86-64 baseline). The load reads
    // the 16 bytes of `a` (`_mm_loadu` needs no alignment).
    let x = unsafe { _mm_loadu_si128(a.as_ptr().cast::<__m128i>()) };
    let (big, m) = ge_fc_lanes(x);
    if m & m.wrapping_sub(1) != 0 {
        // Two or more bytes ≥ 0xfc (2% of random UUIDs).
        let c = u128::from_le_bytes(*a);
        return out.with_vec(|o| put_short_escaped(o, tag, c, 16));
    }
    let (lo, hi) = code16_lanes(tag, x, big, m);
    // SAFETY: n = 18 or 19 <= 32 = N. The stores write bytes 0..16 and 16..32 (`_mm_storeu`
    // needs no alignment), initialising all of 0..n; SSE2 as above. Tested by
    // `put_string_is_tag_then_put_escaped` (every byte value at every position of 16 bytes,
    // on a vector) and `put_string16_through_a_cursor_is_put_escaped` (through a cursor at
    // every fill level).
    unsafe {
        out.put_raw::<32>(18 + usize::from(m != 0), |p| {
            _mm_storeu_si128(p.cast::<__m128i>(), lo);
            _mm_storeu_si128(p.add(16).cast::<__m128i>(), hi);
        })
    }
}

/// [`put_string`] for a string of at most 16 bytes with some byte `≥ 0xfc` (of exactly 16
/// bytes on x86-64 only with two or more: 2% of random UUIDs), from registers: `c` holds its
/// `n` bytes in the low lanes, zero above. Each half takes one step per byte `≥ 0xfc` (see
/// [`put_word_escaped`]).
#[inline(never)]
fn put_short_escaped(out: &mut Vec<u8>, tag: u8, c: u128, n: usize) {
    // Built on the stack and appended with one store (one capacity check): at most
    // 1 + 2 × 16 + 1 = 34 bytes, each step writing 16 bytes at an offset below 64.
    let mut buf = [0u8; 72];
    buf[0] = tag;
    let mut at = word_escaped_into(&mut buf, 1, c as u64, n.min(8));
    if n > 8 {
        at = word_escaped_into(&mut buf, at, (c >> 64) as u64, n - 8);
    }
    buf[at & 63] = STR_END;
    out.put_cut(buf, at + 1);
}

/// The `left` (at most 8) low lanes of `x` (zero above), escaped into `buf` at `at` (below
/// 48); returns the offset after them. One step per byte `≥ 0xfc`: the whole word is written
/// shifted (right for the plain lanes below the byte; the lanes above are rewritten by the
/// next step or cut off), then the byte's two-byte code over its lane and the next. Offsets
/// are masked to 6 bits (a no-op: they stay below 48) so that no write needs a bounds check.
#[inline(always)]
fn word_escaped_into(buf: &mut [u8; 72], mut at: usize, mut x: u64, mut left: usize) -> usize {
    while left > 0 {
        let i = at & 63;
        buf[i..i + 8].copy_from_slice(&x.wrapping_add(SHIFTS).to_le_bytes());
        let high = ge_fc_bits(x);
        if high == 0 {
            return at + left;
        }
        let l = (high.trailing_zeros() / 8) as usize; // < left
        let b = (x >> (8 * l)) as u8;
        let j = (at + l) & 63;
        buf[j..j + 2].copy_from_slice(&[STR_HIGH, b.wrapping_sub(0xfa)]);
        at += l + 2;
        left -= l + 1;
        x = x.checked_shr(8 * (l as u32 + 1)).unwrap_or(0);
    }
    at
}

/// [`put_string`] for strings longer than 16 bytes.
#[inline(never)]
fn put_string_escaped(out: &mut Vec<u8>, tag: u8, s: &[u8]) {
    out.reserve(s.len() + 9);
    out.push(tag);
    put_escaped(out, s);
}

/// Bit 7 set in each byte of `x` that is `≥ 0xfc`, exactly: a byte's low seven bits plus 4
/// reach bit 7 iff they are `≥ 0x7c` (the sum is at most `0x83`, so nothing carries into the
/// next byte), and its own bit 7 must be set too.
#[inline(always)]
fn ge_fc_bits(x: u64) -> u64 {
    ((x & LOWS) + FOURS) & x & HIGHS
}

/// The bytes of `s` (a word or the tail: at most 8), some of them `≥ 0xfc`: see
/// [`put_word_escaped`].
#[inline(never)]
fn put_escaped_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let left = s.len().min(8);
    // Lanes past `left` are 0 (never ≥ 0xfc), and stay 0 as the word shifts down.
    let x = if left == 8 {
        load_le(s)
    } else {
        load_le_short(&s[..left])
    };
    put_word_escaped(out, x, left);
}

/// The `left` (at most 8) low lanes of `x` (zero above), escaped: one step per byte `≥ 0xfc`
/// (not per byte), each writing the plain bytes before it shifted, then its two-byte code, as
/// one 16-byte store cut back.
#[inline(always)]
fn put_word_escaped<O: Out>(out: &mut O, mut x: u64, mut left: usize) {
    while left > 0 {
        let high = ge_fc_bits(x);
        if high == 0 {
            // Carries of the addition only move up, past the content.
            out.put_cut(x.wrapping_add(SHIFTS).to_le_bytes(), left);
            return;
        }
        let l = (high.trailing_zeros() / 8) as usize; // < left
        let b = (x >> (8 * l)) as u8;
        // The lanes below l are plain: adding the shifts carries nothing into them.
        let below = x.wrapping_add(SHIFTS) & ((1u64 << (8 * l)) - 1);
        let word = u128::from(below)
            | (u128::from(STR_HIGH) << (8 * l))
            | (u128::from(b.wrapping_sub(0xfa)) << (8 * l + 8));
        out.put_cut(word.to_le_bytes(), l + 2);
        left -= l + 1;
        x = x.checked_shr(8 * (l as u32 + 1)).unwrap_or(0);
    }
}

impl Reader<'_> {
    /// A string up to and including its terminator (see [`put_escaped`]), in a new buffer.
    pub(crate) fn escaped(&mut self) -> Result<Vec<u8>, DecodeError> {
        Ok(self.escaped_vec()?.0)
    }

    /// The little-endian word at `i` with the direction mask removed; past the end of the key
    /// its lanes are `00` (a special byte, so a scan stops there).
    #[inline(always)]
    fn word_at(&self, i: usize) -> u64 {
        let mask = u64::from_ne_bytes([self.mask; 8]);
        match self.bytes.get(i..i + 8) {
            Some(w) => load_le(w) ^ mask,
            None => {
                let rest = self.bytes.get(i..).unwrap_or_default();
                // Lanes past the end: 00 once unmasked.
                let keep = !u64::MAX.checked_shl(8 * rest.len() as u32).unwrap_or(0);
                (load_le_short(rest) ^ mask) & keep
            }
        }
    }

    /// The length of the run of plain bytes (`02..fd` after the direction mask) at the cursor,
    /// and whether the byte after it is the string's terminator (then the run is the whole
    /// string and no byte needs the slow path). Eight bytes at a time.
    #[inline]
    pub(crate) fn plain_run(&self) -> (usize, bool) {
        let mut i = self.pos;
        loop {
            let x = self.word_at(i);
            let special = special_bytes(x);
            if special != 0 {
                let lane = special.trailing_zeros() / 8;
                i += lane as usize;
                // Past the end of the key the lane reads 00, not the terminator.
                let end = (x >> (8 * lane)) as u8 == STR_END && i < self.bytes.len();
                return (i - self.pos, end);
            }
            i += 8;
        }
    }

    /// Writes the next `n` bytes at the cursor, which [`Reader::plain_run`] found plain,
    /// unshifted into `out` as whole words (`out` holds at least `n` rounded up to 8; the bytes
    /// past `n` are garbage), and moves the cursor past them.
    #[inline]
    fn unshift_plain_words(&mut self, n: usize, out: &mut [u8]) {
        let mut i = self.pos;
        for d in out[..n.next_multiple_of(8)].chunks_exact_mut(8) {
            // Content lanes are ≥ 2 once unmasked: a borrow only moves up, into garbage.
            d.copy_from_slice(&self.word_at(i).wrapping_sub(SHIFTS).to_le_bytes());
            i += 8;
        }
        self.pos += n;
    }

    /// Like [`Reader::unshift_plain_words`], but writes whole 16-byte blocks into
    /// `out` (at least `n` rounded up to 16 long; the bytes past `n` are garbage): no call to
    /// `memcpy`, and a reader of the first 16 bytes finds them in one store.
    #[inline]
    pub(crate) fn unshift_plain_blocks(&mut self, n: usize, out: &mut [u8]) {
        let mut i = self.pos;
        for d in out[..n.next_multiple_of(16)].chunks_exact_mut(16) {
            let lo = self.word_at(i).wrapping_sub(SHIFTS);
            let hi = self.word_at(i + 8).wrapping_sub(SHIFTS);
            d.copy_from_slice(&(u128::from(lo) | (u128::from(hi) << 64)).to_le_bytes());
            i += 16;
        }
        self.pos += n;
    }

    /// Appends the next `n` bytes at the cursor, which [`Reader::plain_run`] found plain,
    /// unshifted to `out`, a word at a time (the last word cut back), and moves the cursor
    /// past them. Returns whether they are all ASCII.
    #[inline]
    fn unshift_plain_vec(&mut self, n: usize, out: &mut Vec<u8>) -> bool {
        out.reserve(n.next_multiple_of(8));
        let start = out.len();
        let mut high = 0u64;
        let mut i = self.pos;
        let end = self.pos + n;
        while i < end {
            let mut w = self.word_at(i).wrapping_sub(SHIFTS);
            if end - i < 8 {
                // The lanes past the run (terminator, next element) are not content.
                w &= u64::MAX >> (8 * (8 - (end - i)));
            }
            high |= w;
            out.extend_from_slice(&w.to_le_bytes());
            i += 8;
        }
        out.truncate(start + n);
        self.pos = end;
        high & HIGHS == 0
    }

    /// Index of the terminator of the string at the cursor (`01`, or `fe` in a descending
    /// element: that byte appears nowhere else in a string).
    pub(crate) fn string_end(&self) -> Result<usize, DecodeError> {
        memchr::memchr(STR_END ^ self.mask, &self.bytes[self.pos..])
            .map(|i| self.pos + i)
            .ok_or_else(|| self.err(self.bytes.len(), "string without its terminator"))
    }

    /// Decodes the string content from the cursor to `end` (its terminator, from
    /// [`Reader::string_end`]) into `dst` (at least `end − pos + 8` long: decoding never
    /// lengthens, and runs of plain bytes are written a whole word at a time), moves past the
    /// terminator, and returns the decoded length.
    pub(crate) fn unescape(&mut self, end: usize, dst: &mut [u8]) -> Result<usize, DecodeError> {
        let mut n = 0;
        while self.pos < end {
            // The run stops at a special byte, at the latest at the terminator at `end`.
            let (run, _) = self.plain_run();
            self.unshift_plain_words(run, &mut dst[n..]);
            n += run;
            if self.pos >= end {
                break;
            }
            let at = self.pos;
            match self.bytes[at] ^ self.mask {
                STR_HIGH => match self.bytes.get(at + 1).map(|c| c ^ self.mask) {
                    Some(c @ 0x02..=0x05) if at + 1 < end => {
                        dst[n] = c + 0xfa;
                        n += 1;
                        self.pos += 2;
                    }
                    _ => return Err(self.err(at + 1, "bad two-byte code in a string")),
                },
                other => {
                    return Err(
                        self.err(at, format!("byte 0x{other:02x} cannot appear in a string"))
                    )
                }
            }
        }
        self.pos = end + 1;
        Ok(n)
    }

    /// Decodes the string at the cursor into `dst` when its content is at most [`SHORT`]
    /// bytes: returns its length and moves past its terminator. A longer string returns
    /// `None` and leaves the cursor where it was. One pass (no search for the terminator
    /// first); plain runs are written in whole 16-byte blocks.
    #[inline]
    pub(crate) fn unescape_short(
        &mut self,
        dst: &mut [u8; SHORT_BUF],
    ) -> Result<Option<usize>, DecodeError> {
        let start = self.pos;
        let mut n = 0;
        loop {
            let (run, terminated) = self.plain_run();
            if n + run > SHORT {
                self.pos = start;
                return Ok(None);
            }
            // n + run ≤ SHORT, so the blocks end by SHORT + 15 < SHORT_BUF.
            self.unshift_plain_blocks(run, &mut dst[n..]);
            n += run;
            if terminated {
                self.pos += 1;
                return Ok(Some(n));
            }
            let at = self.pos;
            match self.bytes.get(at).map(|b| b ^ self.mask) {
                Some(STR_HIGH) => match self.bytes.get(at + 1).map(|c| c ^ self.mask) {
                    Some(c @ 0x02..=0x05) => {
                        // n ≤ SHORT < SHORT_BUF; past SHORT the next run returns None.
                        dst[n] = c + 0xfa;
                        n += 1;
                        self.pos += 2;
                    }
                    _ => return Err(self.bad_string(at)),
                },
                _ => return Err(self.bad_string(at)),
            }
        }
    }

    /// The error for the byte at `at`, which stopped a plain run of a string and is neither
    /// its terminator nor a valid two-byte code.
    #[cold]
    #[inline(never)]
    fn bad_string(&self, at: usize) -> DecodeError {
        match self.bytes.get(at).map(|b| b ^ self.mask) {
            None => self.err(self.bytes.len(), "string without its terminator"),
            Some(STR_HIGH) => self.err(at + 1, "bad two-byte code in a string"),
            Some(other) => self.err(at, format!("byte 0x{other:02x} cannot appear in a string")),
        }
    }

    /// A string of at most 16 plain bytes at the cursor (a UUID, a short name: the common
    /// case), found with two word loads: its content unshifted in the low lanes of a `u128`
    /// (the lanes past it are garbage) and its length. The cursor does not move. `None` for
    /// anything else (longer, escaped, malformed), which the general paths then handle.
    #[inline(always)]
    pub(crate) fn plain16(&self) -> Option<(u128, usize)> {
        // Both words with one bounds check where the key has 16 bytes left (the common case).
        let (x0, x1) = match self.bytes.get(self.pos..self.pos.wrapping_add(16)) {
            Some(w) => {
                let mask = u64::from_ne_bytes([self.mask; 8]);
                (load_le(&w[..8]) ^ mask, load_le(&w[8..]) ^ mask)
            }
            None => (self.word_at(self.pos), self.word_at(self.pos + 8)),
        };
        let s0 = special_bytes(x0);
        let (x1, n, x) = if s0 != 0 {
            let lane = (s0.trailing_zeros() / 8) as usize;
            (0, lane, x0 >> (8 * lane))
        } else {
            let s1 = special_bytes(x1);
            if s1 != 0 {
                let lane = (s1.trailing_zeros() / 8) as usize;
                (x1, 8 + lane, x1 >> (8 * lane))
            } else {
                let b = self.bytes.get(self.pos + 16).map_or(0, |b| b ^ self.mask);
                (x1, 16, u64::from(b))
            }
        };
        // Past the end of the key the lanes read 00, never the terminator.
        if x as u8 != STR_END || self.pos + n >= self.bytes.len() {
            return None;
        }
        let c = u128::from(x0.wrapping_sub(SHIFTS)) | (u128::from(x1.wrapping_sub(SHIFTS)) << 64);
        Some((c, n))
    }

    /// A string of at most 16 content bytes at the cursor, escaped or not (a UUID with bytes
    /// `≥ 0xfc`: one step per plain run or two-byte code, no stack buffer): its content in
    /// the low lanes of a `u128` (zero above), its length, and the encoded length including the
    /// terminator. The cursor does not move. `None` for anything else (longer, malformed, cut
    /// off), which the general paths then decode or report.
    #[inline]
    pub(crate) fn short16(&self) -> Option<(u128, usize, usize)> {
        let mut acc = 0u128;
        let mut n = 0usize;
        let mut i = self.pos;
        // Each step either ends the loop or adds at least one content byte (n ≤ 16), so it
        // runs at most 17 times.
        loop {
            let x = self.word_at(i);
            let s = special_bytes(x);
            let lane = if s == 0 {
                8
            } else {
                (s.trailing_zeros() / 8) as usize
            };
            if n + lane > 16 {
                return None;
            }
            // The plain lanes below `lane`, unshifted (no borrow crosses into them).
            let keep = u64::MAX.checked_shr(64 - 8 * lane as u32).unwrap_or(0);
            let plain = x.wrapping_sub(SHIFTS) & keep;
            acc |= u128::from(plain).checked_shl(8 * n as u32).unwrap_or(0);
            n += lane;
            i += lane;
            if s == 0 {
                continue;
            }
            match (x >> (8 * lane)) as u8 {
                // Past the end of the key lanes read 00, never the terminator.
                STR_END if i < self.bytes.len() => return Some((acc, n, i + 1 - self.pos)),
                STR_HIGH if n < 16 => {
                    let c = self.bytes.get(i + 1)? ^ self.mask;
                    if !(0x02..=0x05).contains(&c) {
                        return None;
                    }
                    acc |= u128::from(c + 0xfa) << (8 * n);
                    n += 1;
                    i += 2;
                }
                _ => return None,
            }
        }
    }

    /// The content of the string at the cursor in a new buffer, and whether it is all ASCII
    /// (false when unknown); moves past its terminator.
    #[inline]
    pub(crate) fn escaped_vec(&mut self) -> Result<(Vec<u8>, bool), DecodeError> {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if let Some((c, n, ascii)) = self.plain16_v() {
            // A short text followed by more elements: one 16-byte store into a buffer malloc
            // would round up to at least 24 anyway.
            let mut out = Vec::with_capacity(16);
            out.extend_from_slice(&c);
            out.truncate(n);
            self.pos += n + 1;
            return Ok((out, ascii));
        }
        if let Some((c, n)) = self.plain16() {
            // One 16-byte store into a buffer malloc would round up to at least 24 anyway.
            let mut out = Vec::with_capacity(16);
            out.extend_from_slice(&c.to_le_bytes());
            out.truncate(n);
            self.pos += n + 1;
            let lanes = u128::MAX.checked_shr(128 - 8 * n as u32).unwrap_or(0);
            let ascii = c & lanes & (u128::from(HIGHS) * ((1 << 64) + 1)) == 0;
            return Ok((out, ascii));
        }
        let (n, terminated) = self.plain_run();
        if terminated {
            // Whole words are written: a capacity of n rounded up to 8 (what malloc gives
            // anyway) means no reallocation.
            let mut out = Vec::with_capacity(n.next_multiple_of(8));
            let ascii = self.unshift_plain_vec(n, &mut out);
            self.pos += 1;
            return Ok((out, ascii));
        }
        let mut a = [0u8; SHORT_BUF];
        if let Some(n) = self.unescape_short(&mut a)? {
            return Ok((a[..n].to_vec(), false));
        }
        let end = self.string_end()?;
        let mut out = vec![0; end - self.pos + 8];
        let len = self.unescape(end, &mut out)?;
        out.truncate(len);
        Ok((out, false))
    }

    /// Appends the content of the string at the cursor to `out` and moves past its terminator.
    pub(crate) fn escaped_into(&mut self, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        let (n, terminated) = self.plain_run();
        if terminated {
            self.unshift_plain_vec(n, out);
            self.pos += 1;
            return Ok(());
        }
        let end = self.string_end()?;
        let old = out.len();
        out.resize(old + (end - self.pos) + 8, 0);
        let len = self.unescape(end, &mut out[old..])?;
        out.truncate(old + len);
        Ok(())
    }
}

#[cfg(test)]
#[path = "string_tests.rs"]
mod tests;
