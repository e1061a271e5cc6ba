//! Tests of the string codec (`string.rs`).

use super::*;

#[test]
fn word_tests_match_the_byte_rules() {
    // Every byte value in every lane, among plain neighbours.
    for lane in 0..8 {
        for b in 0..=255u8 {
            let mut a = [0x41u8; 8];
            a[lane] = b;
            let x = u64::from_le_bytes(a);
            assert_eq!(any_ge_fc(x), b >= 0xfc, "{b:#x} in lane {lane}");
            let s = special_bytes(x);
            if matches!(b, 0x02..=0xfd) {
                assert_eq!(s, 0, "{b:#x} in lane {lane}");
            } else {
                assert_eq!(
                    s.trailing_zeros() as usize / 8,
                    lane,
                    "{b:#x} in lane {lane}"
                );
            }
        }
    }
    // The lowest flagged byte is exact even with several special bytes.
    let x = u64::from_le_bytes([0x41, 0xff, 0x00, 0x01, 0x41, 0xfe, 0x41, 0x41]);
    assert_eq!(special_bytes(x).trailing_zeros() / 8, 1);
}

/// `ge_fc_bits` flags exactly the bytes `≥ 0xfc`, whatever their neighbours hold: every
/// byte value in every lane with every value in all other lanes, and words of two random
/// values (a carry or a shifted bit from a neighbour would show up here).
#[test]
fn ge_fc_bits_is_exact_per_byte() {
    fn model(x: u64) -> u64 {
        (0..8)
            .filter(|i| (x >> (8 * i)) as u8 >= 0xfc)
            .map(|i| 0x80u64 << (8 * i))
            .sum()
    }
    for lane in 0..8 {
        for b in 0..=255u8 {
            for n in 0..=255u8 {
                let mut a = [n; 8];
                a[lane] = b;
                let x = u64::from_le_bytes(a);
                assert_eq!(ge_fc_bits(x), model(x), "{x:#018x}");
            }
        }
    }
    let mut z = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..200_000 {
        z = z
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let pick = [0x00, 0x7b, 0x7c, 0xfb, 0xfc, 0xfd, 0xfe, 0xff];
        let x = (0..8).fold(0u64, |x, i| {
            let sel = (z >> (3 * i)) & 7;
            let byte = if (z >> (40 + i)) & 1 == 1 {
                pick[sel as usize]
            } else {
                (z >> (8 * i)) as u8
            };
            x | (u64::from(byte) << (8 * i))
        });
        assert_eq!(ge_fc_bits(x), model(x), "{x:#018x}");
    }
}

/// The one-store path of `put_string` writes the tag and exactly the bytes of
/// `put_escaped`, for every byte value at every position of strings of 0 to 19 bytes.
#[test]
fn put_string_is_tag_then_put_escaped() {
    for len in 0..20usize {
        for at in 0..len.max(1) {
            for b in 0..=255u8 {
                let mut s: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
                if len > 0 {
                    s[at] = b;
                }
                let mut want = vec![0xaa, 0x42];
                put_escaped(&mut want, &s);
                let mut got = vec![0xaa];
                put_string(&mut got, 0x42, &s);
                assert_eq!(got, want, "{s:?}");
            }
        }
        // Several bytes ≥ 0xfc: every subset of up to 3 positions, and all of them.
        for mask in 0u32..(1 << len.min(17)) {
            if mask.count_ones() > 3 && mask != (1 << len.min(17)) - 1 {
                continue;
            }
            let s: Vec<u8> = (0..len)
                .map(|i| {
                    if i < 17 && mask & (1 << i) != 0 {
                        0xfc + (i % 4) as u8
                    } else {
                        (i * 37 % 251) as u8
                    }
                })
                .collect();
            let mut want = vec![0xaa, 0x42];
            put_escaped(&mut want, &s);
            let mut got = vec![0xaa];
            put_string(&mut got, 0x42, &s);
            assert_eq!(got, want, "{s:?}");
        }
    }
}

/// A 16-byte string (a UUID) through a cursor, the way the serde encoder writes it, after
/// 0 to 40 bytes already in a buffer of every capacity from exactly full to roomy: the
/// bytes `put_escaped` writes, for no, one (every value ≥ 0xfc in every lane) and two or
/// three bytes ≥ 0xfc, among backgrounds of every kind; and the elements that follow it
/// land right after it.
#[test]
fn put_string16_through_a_cursor_is_put_escaped() {
    use super::super::put::Cursor;
    let mut strings: Vec<[u8; 16]> = Vec::new();
    for fill in [0x00u8, 0x01, 0x02, 0x7f, 0x80, 0xf9, 0xfa, 0xfb] {
        let bg: [u8; 16] = std::array::from_fn(|i| fill.wrapping_add(i as u8 % 3));
        strings.push(bg);
        for l in 0..16 {
            for b in 0xfc..=0xffu8 {
                let mut s = bg;
                s[l] = b;
                strings.push(s);
                let mut two = s;
                two[(l + 5) % 16] = 0xfc;
                strings.push(two);
                two[(l + 11) % 16] = 0xff;
                strings.push(two);
            }
        }
    }
    for s in &strings {
        for have in [0usize, 1, 7, 14, 15, 16, 17, 31, 32, 40] {
            let start: Vec<u8> = (0..have).map(|i| i as u8).collect();
            let mut want = start.clone();
            want.push(0x42);
            put_escaped(&mut want, s);
            want.extend_from_slice(&[0x42, 2, 3, STR_END]);
            for extra in [0usize, 1, 2, 3, 4, 5, 17, 18, 19, 20, 64] {
                let mut got = Vec::with_capacity(have + extra);
                got.extend_from_slice(&start);
                {
                    let mut c = Cursor::new(&mut got);
                    put_string(&mut c, 0x42, s);
                    put_string(&mut c, 0x42, &[0, 1]);
                }
                assert_eq!(got, want, "{s:02x?} have {have} extra {extra}");
            }
        }
    }
}

/// `put_text` (which skips the test for bytes `≥ 0xfc`) writes what `put_string` writes,
/// on a vector and through a cursor, for text of 0 to 40 bytes made of one- to four-byte
/// characters (the highest UTF-8 bytes, `f4` and `bf`, at every position).
#[test]
fn put_text_is_put_string() {
    use super::super::put::Cursor;
    let chars = [
        'a',
        '\0',
        '\u{7f}',
        '\u{e9}',
        '\u{7ff}',
        '\u{ffff}',
        '\u{10ffff}',
    ];
    for len in 0..=40usize {
        for (k, &c) in chars.iter().enumerate() {
            for at in 0..len.max(1) {
                let mut t: String = (0..len).map(|i| chars[(i + k) % 3]).collect();
                if len > 0 {
                    t.insert(at, c);
                }
                let mut want = vec![0xaa];
                put_string(&mut want, 0x42, t.as_bytes());
                let mut got = vec![0xaa];
                put_text(&mut got, 0x42, &t);
                assert_eq!(got, want, "{t:?}");
                let mut got = vec![0xaa];
                got.shrink_to_fit(); // full: the put must grow the buffer
                put_text(&mut Cursor::new(&mut got), 0x42, &t);
                assert_eq!(got, want, "{t:?}");
            }
        }
    }
}

/// `unescape_short` decodes every string of at most `SHORT` bytes (escapes anywhere,
/// including right at the limit), returns `None` for longer ones with the cursor left in
/// place, and refuses every truncation; `plain16` finds every plain string of at most 16
/// bytes and nothing else; ascending and descending.
/// `short16` (the decoder of short strings with two-byte codes) decodes exactly the strings
/// of at most 16 bytes, agrees with `escaped_vec` on every input it accepts (also corrupt
/// and cut-off ones), and never reads a cut-off string.
#[test]
fn short16_agrees_with_escaped() {
    for len in 0..=20usize {
        let spots: [Vec<usize>; 6] = [
            vec![],
            vec![0],
            vec![len.saturating_sub(1)],
            vec![len / 2],
            vec![0, len / 2, len.saturating_sub(1)],
            (0..len).collect(),
        ];
        for (k, spot) in spots.iter().enumerate() {
            let mut s: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            for (j, &at) in spot.iter().enumerate() {
                if at < len {
                    s[at] = 0xfc + ((j + k) % 4) as u8;
                }
            }
            let mut enc = vec![0x33];
            put_escaped(&mut enc, &s);
            enc.push(0x44); // a next element
            for mask in [0u8, 0xff] {
                let bytes: Vec<u8> = enc.iter().map(|b| b ^ mask).collect();
                let mut r = Reader::new(&bytes);
                r.mask = mask;
                r.pos = 1;
                match r.short16() {
                    Some((c, n, l)) => {
                        assert!(len <= 16);
                        assert_eq!(&c.to_le_bytes()[..n], &s[..]);
                        assert_eq!(c.checked_shr(8 * n as u32).unwrap_or(0), 0);
                        assert_eq!(1 + l, bytes.len() - 1);
                        assert_eq!(r.pos, 1);
                    }
                    None => assert!(len > 16, "{s:?}"),
                }
                for cut in 1..bytes.len() - 1 {
                    let mut r = Reader::new(&bytes[..cut]);
                    r.mask = mask;
                    r.pos = 1;
                    assert!(r.short16().is_none(), "{s:?} cut at {cut}");
                }
                for at in 1..bytes.len() {
                    for v in [0x00u8, 0x01, 0x02, 0x06, 0xfd, 0xfe, 0xff] {
                        let mut bad = bytes.clone();
                        bad[at] = v;
                        let mut r = Reader::new(&bad);
                        r.mask = mask;
                        r.pos = 1;
                        let Some((c, n, l)) = r.short16() else {
                            continue;
                        };
                        let mut r = Reader::new(&bad);
                        r.mask = mask;
                        r.pos = 1;
                        let want = r.escaped_vec().expect("short16 accepted it");
                        assert_eq!(&c.to_le_bytes()[..n], &want.0[..]);
                        assert_eq!(r.pos, 1 + l);
                    }
                }
            }
        }
    }
}

#[test]
fn unescape_short_agrees_with_escaped() {
    for len in 0..(SHORT + 20) {
        for fill in [0x41u8, 0x00, 0x01, 0xfc, 0xff] {
            for at in [0, len / 2, len.saturating_sub(1)] {
                let mut s: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
                if len > 0 {
                    s[at] = fill;
                }
                let mut enc = Vec::new();
                put_escaped(&mut enc, &s);
                for mask in [0u8, 0xff] {
                    let bytes: Vec<u8> = enc.iter().map(|b| b ^ mask).collect();
                    let mut r = Reader::new(&bytes);
                    r.mask = mask;
                    let mut a = [0u8; SHORT_BUF];
                    match r.unescape_short(&mut a).unwrap() {
                        Some(n) => {
                            assert!(len <= SHORT);
                            assert_eq!(&a[..n], &s[..]);
                            assert_eq!(r.pos, bytes.len());
                        }
                        None => {
                            assert!(len > SHORT, "{len}");
                            assert_eq!(r.pos, 0);
                        }
                    }
                    let mut r = Reader::new(&bytes);
                    r.mask = mask;
                    match r.plain16() {
                        Some((c, n)) => {
                            assert_eq!(&c.to_le_bytes()[..n], &s[..]);
                            assert_eq!(r.pos + n + 1, bytes.len());
                        }
                        None => assert!(len > 16 || s.iter().any(|&b| b >= 0xfc)),
                    }
                    assert_eq!(r.escaped_vec().unwrap().0, s);
                    assert_eq!(r.pos, bytes.len());
                    for cut in 0..bytes.len() {
                        let mut r = Reader::new(&bytes[..cut]);
                        r.mask = mask;
                        assert!(r.plain16().is_none(), "{s:?} cut at {cut}");
                        assert!(r.escaped_vec().is_err(), "{s:?} cut at {cut}");
                        let mut r = Reader::new(&bytes[..cut]);
                        r.mask = mask;
                        let mut a = [0u8; SHORT_BUF];
                        assert!(!matches!(r.unescape_short(&mut a), Ok(Some(_))));
                    }
                }
            }
        }
    }
}

#[test]
fn strings_of_every_length_round_trip() {
    for len in 0..40 {
        for fill in [0x00u8, 0x01, 0x41, 0xfb, 0xfc, 0xfd, 0xff] {
            let mut s: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            if len > 0 {
                s[len / 2] = fill;
            }
            let mut enc = Vec::new();
            put_escaped(&mut enc, &s);
            let mut dec = Vec::new();
            let mut r = Reader::new(&enc);
            r.escaped_into(&mut dec).unwrap();
            assert_eq!(dec, s);
            assert_eq!(r.pos, enc.len());
            // Complemented (a descending element) too.
            let comp: Vec<u8> = enc.iter().map(|b| !b).collect();
            let mut r = Reader::new(&comp);
            r.mask = 0xff;
            assert_eq!(r.escaped().unwrap(), s);
            assert_eq!(r.pos, enc.len());
        }
    }
}
