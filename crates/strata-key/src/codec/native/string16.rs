//! Strings of at most 16 content bytes with at most one two-byte code, decoded (and, for
//! exactly 16 bytes, encoded) with no branch on whether or where the code is.
//!
//! A random UUID has no byte `≥ 0xfc` 78% of the time and exactly one 20% of the time. Taking
//! a separate path for the escaped ones is a branch the predictor gets wrong about once in five
//! ids (and the loop of [`Reader::short16`] adds more). Here both cases are one straight-line
//! computation: the special bytes of the first 17 encoded bytes as a lane mask, the first one
//! (the terminator or the `fe` of a code), the second one (the terminator after a code), and
//! the content as the encoded bytes with the code's lane removed, unshifted.

use super::{Reader, STR_END, STR_HIGH};

/// `0x02` (the string shift) in every byte of a `u128`.
const SHIFTS128: u128 = 0x0202_0202_0202_0202_0202_0202_0202_0202;

/// Bit `i` set when byte `i` of `v` is special in an encoded string (`00`, `01`, `fe` or
/// `ff`), exactly for every lane: one byte add, one signed compare and a move-mask (SSE2,
/// always present on x86-64).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn special_lanes_v(v: std::arch::x86_64::__m128i) -> u32 {
    use std::arch::x86_64::{_mm_add_epi8, _mm_cmplt_epi8, _mm_movemask_epi8, _mm_set1_epi8};
    // SAFETY: these intrinsics need SSE2, which this build enables (the `cfg` above; it is part
    // of the x86-64 baseline). They take no pointers. Tested against the byte-by-byte model by
    // `special_lanes_is_exact_per_byte`.
    unsafe {
        // b + 0x82 is (b + 2) with its top bit flipped, so "(b + 2) mod 256 < 4" becomes a
        // signed compare: special bytes land on 0x80..=0x83 (−128..=−125), every other byte on
        // 0x84 (−124) or above.
        let z = _mm_add_epi8(v, _mm_set1_epi8(0x82u8 as i8));
        let special = _mm_cmplt_epi8(z, _mm_set1_epi8(0x84u8 as i8));
        _mm_movemask_epi8(special) as u32
    }
}

/// [`special_lanes_v`] of the 16 little-endian bytes of `x` (for the tests).
#[cfg(all(test, target_arch = "x86_64", target_feature = "sse2"))]
fn special_lanes(x: u128) -> u32 {
    // SAFETY: SSE2 is enabled (the `cfg` above); the intrinsic takes no pointer.
    let v = unsafe { std::arch::x86_64::_mm_set_epi64x((x >> 64) as i64, x as i64) };
    special_lanes_v(v)
}

/// [`special_lanes`] byte by byte: the model its test checks it against, and the code on
/// targets without SSE2.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
fn special_lanes_portable(x: u128) -> u32 {
    let mut m = 0u32;
    for (i, &b) in x.to_le_bytes().iter().enumerate() {
        m |= u32::from(b.wrapping_add(2) < 4) << i;
    }
    m
}

#[cfg(all(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
use special_lanes_portable as special_lanes;

/// Per code lane `l` (index `l + 16`; index `l` without a code): the lanes taken from the
/// encoded bytes before the code (those below `l`; all without a code), and the top six bits of
/// the code's decoded byte (`0xfc` in lane `l`; nothing without a code). A table load instead of
/// two variable `u128` shifts.
const CODE_LANES: [(u128, u128); 32] = code_lanes();

const fn code_lanes() -> [(u128, u128); 32] {
    let mut t = [(u128::MAX, 0u128); 32];
    let mut l = 0;
    while l < 16 {
        t[16 + l] = ((1u128 << (8 * l)) - 1, 0xfcu128 << (8 * l));
        l += 1;
    }
    t
}

/// The lanes of `x` that are `≥ 0xfc` (all ones there), and their bit mask.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(super) fn ge_fc_lanes(x: std::arch::x86_64::__m128i) -> (std::arch::x86_64::__m128i, u32) {
    use std::arch::x86_64::{_mm_add_epi8, _mm_cmplt_epi8, _mm_movemask_epi8, _mm_set1_epi8};
    // SAFETY: SSE2 is enabled (the `cfg` above; part of the x86-64 baseline); no pointers.
    // Tested by `put_string_is_tag_then_put_escaped` (every byte value in every lane).
    unsafe {
        // Bytes ≥ 0xfc: b + 0x84 lands on 0x80..=0x83 (signed −128..=−125), others above.
        let big = _mm_cmplt_epi8(
            _mm_add_epi8(x, _mm_set1_epi8(0x84u8 as i8)),
            _mm_set1_epi8(0x84u8 as i8),
        );
        (big, _mm_movemask_epi8(big) as u32)
    }
}

/// Per lane `l` of the byte `≥ 0xfc` of a 16-byte string (17: none), the output positions
/// `p < l + 2` of its element as `0xff` bytes: those that [`code16_lanes`] takes from the
/// element written up to the code's `fe`, the others coming from the rest after it.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[repr(C, align(16))]
struct TakeFirst([[u8; 32]; 18]);

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
static TAKE_FIRST: TakeFirst = TakeFirst(take_first());

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
const fn take_first() -> [[u8; 32]; 18] {
    let mut t = [[0u8; 32]; 18];
    let mut l = 0;
    while l < 18 {
        let mut p = 0;
        while p < 32 && p < l + 2 {
            t[l][p] = 0xff;
            p += 1;
        }
        l += 1;
    }
    t
}

/// The element `tag`, the 16 content bytes `x` (SSE2 lanes) with **at most one** byte
/// `≥ 0xfc`, and the terminator, as 32 output lanes `(lo, hi)`: 18 bytes without a code, 19
/// with one (garbage after them), with no branch on whether or where the code is. `big` and
/// `m` are [`ge_fc_lanes`] of `x` (`m` has at most one bit set).
///
/// `A` is the tag, then the shifted content with `fe` in the byte's lane `l`, then the
/// terminator: the element up to the code's first byte (all of it without a code). `B` is the
/// shifted content with the code's second byte in the byte's lane, two lanes further on, then
/// the terminator: the rest. The output takes `A` for the positions up to `l + 1` (a mask from
/// [`TAKE_FIRST`]; without a code `l` is 17: all of `A`), then `B`.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(super) fn code16_lanes(
    tag: u8,
    x: std::arch::x86_64::__m128i,
    big: std::arch::x86_64::__m128i,
    m: u32,
) -> (std::arch::x86_64::__m128i, std::arch::x86_64::__m128i) {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_and_si128, _mm_andnot_si128, _mm_load_si128, _mm_or_si128,
        _mm_set1_epi8, _mm_setr_epi8, _mm_slli_si128, _mm_srli_si128,
    };
    debug_assert!(m & m.wrapping_sub(1) == 0);
    let l = (m | 1 << 17).trailing_zeros() as usize; // 0..=15, or 17 without a code
    let take = &TAKE_FIRST.0[l.min(17)];
    // SAFETY: SSE2 is enabled (the `cfg` above; part of the x86-64 baseline). The two loads
    // read the 32 bytes of `take`, a row of a 16-byte aligned table of 32-byte rows (so both
    // halves are 16-byte aligned, as `_mm_load_si128` needs). Tested by
    // `put_string_is_tag_then_put_escaped` (every value at every position of a 16-byte
    // string, and every set of up to three codes), `one_code16_element_is_put_escaped` and
    // `put_string16_through_a_cursor_is_put_escaped`.
    unsafe {
        let end = |at: i8| {
            let lane = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            _mm_and_si128(
                std::arch::x86_64::_mm_cmpeq_epi8(lane, _mm_set1_epi8(at)),
                _mm_set1_epi8(STR_END as i8),
            )
        };
        // Content + 2 in every lane.
        let v = _mm_add_epi8(x, _mm_set1_epi8(2));
        // A's content: `fe` in the byte's lane.
        let va = _mm_or_si128(
            _mm_andnot_si128(big, v),
            _mm_and_si128(big, _mm_set1_epi8(STR_HIGH as i8)),
        );
        // B's content: in the byte's lane b + 2 + 4 = b − 0xfa, its code's second byte.
        let vb = _mm_add_epi8(v, _mm_and_si128(big, _mm_set1_epi8(4)));
        let a_lo = _mm_or_si128(
            _mm_slli_si128::<1>(va),
            _mm_setr_epi8(tag as i8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        );
        let a_hi = _mm_or_si128(_mm_srli_si128::<15>(va), end(1));
        let b_lo = _mm_slli_si128::<2>(vb);
        let b_hi = _mm_or_si128(_mm_srli_si128::<14>(vb), end(2));
        let t_lo = _mm_load_si128(take.as_ptr().cast::<__m128i>());
        let t_hi = _mm_load_si128(take.as_ptr().add(16).cast::<__m128i>());
        (
            _mm_or_si128(_mm_and_si128(t_lo, a_lo), _mm_andnot_si128(t_lo, b_lo)),
            _mm_or_si128(_mm_and_si128(t_hi, a_hi), _mm_andnot_si128(t_hi, b_hi)),
        )
    }
}

impl Reader<'_> {
    /// A string of at most 16 content bytes with at most one two-byte code at the cursor,
    /// where the key holds at least 17 bytes from the cursor (a UUID that is not the last
    /// element, or one that is: its 16 bytes and terminator): its content in the first lanes of
    /// 16 bytes (the lanes past it are garbage), its length, and the encoded length including
    /// the terminator. The cursor does not move. `None` for anything else (longer, two codes,
    /// malformed, fewer than 17 bytes left), which the general paths then decode or report.
    ///
    /// On x86-64 the bytes stay in SSE2 registers from the load to the store (no `u128`
    /// halves in general registers, and the unshift is a per-lane subtract); elsewhere this is
    /// [`Reader::one_code16_portable`]. Both are checked against the general decoder by
    /// `one_code16_agrees_with_escaped`.
    ///
    /// `mask` is the element's direction, the reader's own `mask`, passed by a caller that has
    /// it in a register: the reader's `mask` byte, just stored by the caller, is then not
    /// loaded back (the broadcast read it as a 4-byte word, which the CPU cannot forward from
    /// the 1-byte store: a stall on every UUID; session 21).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[inline(always)]
    pub(crate) fn one_code16_masked(&self, mask: u8) -> Option<([u8; 16], usize, usize)> {
        use std::arch::x86_64::{
            __m128i, _mm_and_si128, _mm_andnot_si128, _mm_loadu_si128, _mm_or_si128, _mm_set1_epi8,
            _mm_storeu_si128, _mm_sub_epi8, _mm_xor_si128,
        };
        let w = self.bytes.get(self.pos..)?;
        let w17: &[u8; 17] = w.get(..17)?.try_into().ok()?;
        // SAFETY: SSE2 is enabled (the `cfg` above; part of the x86-64 baseline). The two
        // unaligned loads read bytes 0..16 and 1..17 of `w17`, which holds 17 bytes; the table
        // loads read one 16-byte `u128` of `CODE_LANES` each (index ≤ 31 < 32: `fl` ≤ 15 and
        // `e` ≤ 1); the store writes the 16 bytes of `out`. `_mm_loadu`/`_mm_storeu` need no
        // alignment. Tested by `one_code16_agrees_with_escaped` (against the general decoder
        // and the portable form).
        unsafe {
            let lanes_mask = _mm_set1_epi8(mask as i8);
            let p = w17.as_ptr();
            // Encoded bytes 0..16 and 1..17, direction removed.
            let a = _mm_xor_si128(_mm_loadu_si128(p.cast::<__m128i>()), lanes_mask);
            let b = _mm_xor_si128(_mm_loadu_si128(p.add(1).cast::<__m128i>()), lanes_mask);
            // Special lanes 0..=16, and lane 17 as a stop (its byte is checked below).
            let m = special_lanes_v(a) | (special_lanes_v(b) << 1) | (1 << 17);
            let (fl, e, n, t) = Self::code_and_end(w, w17, m, mask)?;
            // Lanes below the code from `a`, lanes from the code on from `b`; then every
            // content lane (plain, or the code's 2..=5) minus 2, and the code's top six bits.
            let i = fl | (e << 4);
            let keep = _mm_loadu_si128(std::ptr::from_ref(&CODE_LANES[i].0).cast::<__m128i>());
            let high = _mm_loadu_si128(std::ptr::from_ref(&CODE_LANES[i].1).cast::<__m128i>());
            let c = _mm_or_si128(_mm_and_si128(keep, a), _mm_andnot_si128(keep, b));
            let c = _mm_or_si128(_mm_sub_epi8(c, _mm_set1_epi8(2)), high);
            let mut out = [0u8; 16];
            _mm_storeu_si128(out.as_mut_ptr().cast::<__m128i>(), c);
            Some((out, n, t + 1))
        }
    }

    /// From the special-lane mask `m` of the 17 encoded bytes `w17` at the cursor (`w`: the
    /// key from the cursor on): the first special lane masked to 0..16 (`fl`), whether it is a
    /// code (`e`, 0 or 1), the content length and the terminator's lane. `None` when the string
    /// is not one of at most 16 bytes with at most one valid code; `mask` is the element's
    /// direction. Every choice is made with masks, not branches: whether there is a code is
    /// random.
    #[inline(always)]
    fn code_and_end(
        w: &[u8],
        w17: &[u8; 17],
        m: u32,
        mask: u8,
    ) -> Option<(usize, usize, usize, usize)> {
        // The first special byte: the terminator, or the `fe` of a code (then f < 16).
        let f = m.trailing_zeros() as usize; // ≤ 17
        let fl = f & 15;
        let esc = (f < 16) & (w17[fl] ^ mask == STR_HIGH);
        let e = usize::from(esc);
        // After a code, the next special byte ends the string (≤ 17: the stop bit).
        let g = (m & m.wrapping_sub(1)).trailing_zeros() as usize;
        let t = (g & e.wrapping_neg()) | (f & e.wrapping_sub(1));
        let term = *w.get(t)? ^ mask;
        // The code's second byte (lane f + 1 ≤ 16), which decodes 2..=5 to 0xfc..=0xff. A
        // special second byte is the second special lane, and outside 2..=5 too.
        let code = w17[fl + 1] ^ mask;
        let n = t - e;
        let bad_code = esc & (code.wrapping_sub(2) > 3);
        if (term != STR_END) | (n > 16) | bad_code {
            return None;
        }
        Some((fl, e, n, t))
    }

    /// [`Reader::one_code16_masked`] with `u128` arithmetic: the code on targets without SSE2, and a
    /// second form the tests check the first against.
    #[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn one_code16_portable(&self) -> Option<([u8; 16], usize, usize)> {
        let w = self.bytes.get(self.pos..)?;
        let w17: &[u8; 17] = w.get(..17)?.try_into().ok()?;
        let mut a = [0u8; 16];
        a.copy_from_slice(&w17[..16]);
        let mut b = [0u8; 16];
        b.copy_from_slice(&w17[1..]);
        let mask = u128::from_ne_bytes([self.mask; 16]);
        // Encoded bytes 0..16 and 1..17, direction removed.
        let a = u128::from_le_bytes(a) ^ mask;
        let b = u128::from_le_bytes(b) ^ mask;
        // Special lanes 0..=16, and lane 17 as a stop (its byte is checked below).
        let m = special_lanes_portable(a) | (special_lanes_portable(b) << 1) | (1 << 17);
        let (fl, e, n, t) = Self::code_and_end(w, w17, m, self.mask)?;
        // Lanes below the code from `a`, lanes from the code on from `b` (shifted down by the
        // code's first byte). Every content lane is ≥ 2 (plain, or the code's 2..=5), so the
        // unshift borrows only above the content.
        let (keep, high) = CODE_LANES[fl | (e << 4)];
        let c = (a & keep) | (b & !keep);
        // The code's lane holds 0..=3 now; 0xfc..=0xff is that with the top six bits set.
        let c = c.wrapping_sub(SHIFTS128);
        Some(((c | high).to_le_bytes(), n, t + 1))
    }

    /// A string of at most 16 plain bytes at the cursor, where the key holds at least 16 bytes
    /// from the cursor (a short text followed by more elements): its content in the first lanes
    /// of 16 bytes (garbage past it), its length, and whether it is all ASCII. One 16-byte load,
    /// a special-lane mask, and a per-lane unshift whose top bits are the non-ASCII lanes. The
    /// cursor does not move. `None` for anything else (longer, escaped, malformed, fewer than
    /// 16 bytes left), which [`Reader::escaped_vec`]'s other paths then decode or report.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[inline(always)]
    pub(crate) fn plain16_v(&self) -> Option<([u8; 16], usize, bool)> {
        use std::arch::x86_64::{
            __m128i, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8, _mm_storeu_si128,
            _mm_sub_epi8, _mm_xor_si128,
        };
        let w = self.bytes.get(self.pos..)?;
        let w16: &[u8; 16] = w.get(..16)?.try_into().ok()?;
        // SAFETY: SSE2 is enabled (the `cfg` above; part of the x86-64 baseline). The unaligned
        // load reads the 16 bytes of `w16`; the store writes the 16 bytes of `out`. Tested by
        // `plain16_v_agrees_with_escaped`.
        unsafe {
            let a = _mm_xor_si128(
                _mm_loadu_si128(w16.as_ptr().cast::<__m128i>()),
                _mm_set1_epi8(self.mask as i8),
            );
            // The first special lane; 16 when all 16 are plain (then the terminator must be the
            // next byte).
            let n = (special_lanes_v(a) | (1 << 16)).trailing_zeros() as usize;
            if *w.get(n)? ^ self.mask != STR_END {
                return None;
            }
            // Content lanes are 02..=fd: minus 2 they are 00..=fb, non-ASCII exactly when the
            // top bit is set.
            let c = _mm_sub_epi8(a, _mm_set1_epi8(2));
            let high = _mm_movemask_epi8(c) as u32 & ((1u32 << n) - 1);
            let mut out = [0u8; 16];
            _mm_storeu_si128(out.as_mut_ptr().cast::<__m128i>(), c);
            Some((out, n, high == 0))
        }
    }

    /// [`Reader::one_code16_portable`] where SSE2 is not available (`mask` is the reader's
    /// own mask).
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    #[inline(always)]
    pub(crate) fn one_code16_masked(&self, mask: u8) -> Option<([u8; 16], usize, usize)> {
        debug_assert_eq!(mask, self.mask);
        self.one_code16_portable()
    }
}

#[cfg(test)]
mod tests {
    use super::super::string::put_escaped;
    use super::*;

    /// Every byte value in every lane, among neighbours of every kind: `special_lanes` (SSE2 on
    /// x86-64) and its portable form flag exactly the special bytes.
    #[test]
    fn special_lanes_is_exact_per_byte() {
        for lane in 0..16 {
            for v in 0..=255u8 {
                for fill in [0x00u8, 0x01, 0x02, 0x41, 0x7f, 0x80, 0xfd, 0xfe, 0xff] {
                    let mut x = [fill; 16];
                    x[lane] = v;
                    let want: u32 = (0..16)
                        .filter(|&i| matches!(x[i], 0x00 | 0x01 | 0xfe | 0xff))
                        .map(|i| 1 << i)
                        .sum();
                    let x = u128::from_le_bytes(x);
                    assert_eq!(special_lanes(x), want, "{x:032x}");
                    assert_eq!(special_lanes_portable(x), want, "{x:032x}");
                }
            }
        }
    }

    /// Decodes `bytes` (a string from offset 1) with `one_code16_masked` and checks it against the
    /// general decoder: same content, same encoded length; returns whether it was accepted.
    fn agrees(bytes: &[u8], mask: u8) -> bool {
        let mut r = Reader::new(bytes);
        r.mask = mask;
        r.pos = 1;
        let got = r.one_code16_masked(r.mask);
        let portable = r.one_code16_portable();
        assert_eq!(
            got.map(|(c, n, l)| (c[..n].to_vec(), n, l)),
            portable.map(|(c, n, l)| (c[..n].to_vec(), n, l)),
            "{bytes:02x?} ({mask:02x})"
        );
        let Some((c, n, l)) = got else {
            return false;
        };
        assert_eq!(r.pos, 1, "the cursor does not move");
        let want = r
            .escaped_vec()
            .unwrap_or_else(|e| panic!("one_code16 accepted {bytes:02x?} ({mask:02x}): {e}"));
        assert_eq!(&c[..n], &want.0[..], "{bytes:02x?}");
        assert_eq!(1 + l, r.pos, "{bytes:02x?}");
        true
    }

    /// `plain16_v` accepts exactly the strings of at most 16 bytes below 0xfc (where 16 key
    /// bytes are there to read and the terminator is in the key), and agrees with the general
    /// decoder on everything it accepts, ASCII flag included: intact, cut off, and with any
    /// byte replaced by a special or plain value; ascending and descending.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[test]
    fn plain16_v_agrees_with_escaped() {
        fn agrees16(bytes: &[u8], mask: u8) -> bool {
            let mut r = Reader::new(bytes);
            r.mask = mask;
            r.pos = 1;
            let Some((c, n, ascii)) = r.plain16_v() else {
                return false;
            };
            // The general decoder, which does not use `plain16_v` (`escaped_vec` does).
            let mut want = Vec::new();
            r.escaped_into(&mut want)
                .unwrap_or_else(|e| panic!("plain16_v accepted {bytes:02x?} ({mask:02x}): {e}"));
            assert_eq!(&c[..n], &want[..], "{bytes:02x?}");
            assert_eq!(ascii, want.is_ascii(), "{bytes:02x?}");
            assert_eq!(1 + n + 1, r.pos, "{bytes:02x?}");
            true
        }
        for len in 0..=20usize {
            for (k, first) in [0x41u8, 0x00, 0x7f, 0x80, 0xc3, 0xfb, 0xfc]
                .into_iter()
                .enumerate()
            {
                let mut s: Vec<u8> = (0..len).map(|i| 0x61 + (i % 26) as u8).collect();
                if len > 0 {
                    s[(k * 5) % len] = first;
                }
                let mut enc = vec![0x33];
                put_escaped(&mut enc, &s);
                for tail in [0usize, 1, 8, 16] {
                    let mut full = enc.clone();
                    full.extend((0..tail).map(|i| 0x44 + i as u8));
                    for mask in [0u8, 0xff] {
                        let bytes: Vec<u8> = full.iter().map(|b| b ^ mask).collect();
                        let expect = len <= 16 && s.iter().all(|&b| b < 0xfc) && bytes.len() >= 17;
                        assert_eq!(
                            agrees16(&bytes, mask),
                            expect,
                            "{s:02x?} tail {tail} {mask:02x}"
                        );
                        for cut in 1..bytes.len() {
                            agrees16(&bytes[..cut], mask);
                        }
                        for at in 1..bytes.len() {
                            for v in [0x00u8, 0x01, 0x02, 0x05, 0x06, 0x80, 0x82, 0xfd, 0xfe, 0xff]
                            {
                                let mut bad = bytes.clone();
                                bad[at] = v ^ mask;
                                agrees16(&bad, mask);
                            }
                        }
                    }
                }
            }
        }
    }

    /// `one_code16_masked` accepts exactly the strings of at most 16 bytes with at most one byte
    /// `≥ 0xfc` (where 17 key bytes are there to read), and agrees with the general decoder on
    /// everything it accepts: intact, cut off, and with any byte replaced by a special or
    /// plain value; ascending and descending.
    #[test]
    fn one_code16_agrees_with_escaped() {
        for len in 0..=20usize {
            let mut cases: Vec<Vec<usize>> = vec![vec![]];
            cases.extend((0..len).map(|i| vec![i]));
            cases.extend((1..len).map(|i| vec![0, i]));
            cases.push((0..len).collect());
            for (k, spot) in cases.iter().enumerate() {
                let mut s: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
                for (j, &at) in spot.iter().enumerate() {
                    s[at] = 0xfc + ((j + k) % 4) as u8;
                }
                let mut enc = vec![0x33];
                put_escaped(&mut enc, &s);
                let codes = spot.len();
                for tail in [0usize, 1, 8] {
                    let mut full = enc.clone();
                    full.extend((0..tail).map(|i| 0x44 + i as u8)); // the next elements
                    for mask in [0u8, 0xff] {
                        let bytes: Vec<u8> = full.iter().map(|b| b ^ mask).collect();
                        let accepted = agrees(&bytes, mask);
                        let expect = len <= 16 && codes <= 1 && bytes.len() >= 18;
                        assert_eq!(accepted, expect, "{s:02x?} tail {tail} mask {mask:02x}");
                        for cut in 1..bytes.len() {
                            agrees(&bytes[..cut], mask);
                        }
                        for at in 1..bytes.len() {
                            for v in [0x00u8, 0x01, 0x02, 0x05, 0x06, 0x80, 0xfd, 0xfe, 0xff] {
                                let mut bad = bytes.clone();
                                bad[at] = v ^ mask;
                                agrees(&bad, mask);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The element `tag`, 16 content bytes `c` (little-endian lanes) with exactly one byte
    /// `≥ 0xfc`, and the terminator: 19 bytes, in the first lanes of the result (garbage after
    /// them). `None` when no byte or more than one is `≥ 0xfc`. [`code16_lanes`] on `c`.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    fn one_code16_element(tag: u8, c: u128) -> Option<[u8; 32]> {
        use std::arch::x86_64::{__m128i, _mm_set_epi64x, _mm_storeu_si128};
        // SAFETY: SSE2 is enabled (the `cfg` above). The only pointers are those of the two
        // stores, which write bytes 0..16 and 16..32 of `out` (32 bytes; `_mm_storeu` needs no
        // alignment).
        unsafe {
            let (big, m) = ge_fc_lanes(_mm_set_epi64x((c >> 64) as i64, c as i64));
            if m == 0 || m & (m - 1) != 0 {
                return None;
            }
            let (lo, hi) = code16_lanes(tag, _mm_set_epi64x((c >> 64) as i64, c as i64), big, m);
            let mut out = [0u8; 32];
            _mm_storeu_si128(out.as_mut_ptr().cast::<__m128i>(), lo);
            _mm_storeu_si128(out.as_mut_ptr().add(16).cast::<__m128i>(), hi);
            Some(out)
        }
    }

    /// `one_code16_element` writes exactly what `put_escaped` writes after the tag, for every
    /// 16-byte string with one byte ≥ 0xfc (every value, every lane, among backgrounds of
    /// every kind), and refuses strings with none or more than one.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[test]
    fn one_code16_element_is_put_escaped() {
        for fill in [0x00u8, 0x01, 0x02, 0x7f, 0x80, 0xf9, 0xfa, 0xfb] {
            for l in 0..16 {
                for b in 0..=255u8 {
                    let mut s: Vec<u8> = (0..16)
                        .map(|i| fill.wrapping_add(i as u8 * 3) % 0xfc)
                        .collect();
                    s[l] = b;
                    let c = u128::from_le_bytes(s.clone().try_into().unwrap());
                    let got = one_code16_element(0x42, c);
                    let codes = s.iter().filter(|&&x| x >= 0xfc).count();
                    if codes != 1 {
                        assert!(got.is_none(), "{s:02x?}");
                        continue;
                    }
                    let mut want = vec![0x42];
                    put_escaped(&mut want, &s);
                    assert_eq!(want.len(), 19);
                    assert_eq!(&got.expect("one code")[..19], &want[..], "{s:02x?}");
                }
            }
        }
    }
}
