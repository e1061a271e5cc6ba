//! Python 2.7 behaviour that shows in results: `repr(float)` and the iteration order of a
//! `dict` (CPython 2.7's open-addressing table, string hashing without `-R`), so that a
//! decoded dict is listed in the order the original's `get` returned it.

use crate::doc::Doc;

/// `repr(x)` of a Python 2.7 float: the shortest digits that round-trip; exponent form
/// when the decimal point is more than 16 places right or 4 places left (`1e+16`,
/// `1e-05`), otherwise fixed with at least one fractional digit (`2.5`, `100.0`).
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` is the shortest round-trip form, e.g. "-1.2345e-5".
    let s = format!("{x:e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let decpt = exp + 1; // value = 0.DIGITS × 10^decpt
    let n = digits.len() as i32;
    let mut out = String::with_capacity(digits.len() + 8);
    if neg {
        out.push('-');
    }
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        out.push_str(&format!("e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()));
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-decpt) as usize));
        out.push_str(&digits);
    } else if decpt >= n {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (decpt - n) as usize));
        out.push_str(".0");
    } else {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    }
    out
}

fn fix(x: i64) -> i64 {
    if x == -1 {
        -2
    } else {
        x
    }
}

/// `hash()` of a `str` or `unicode` (code units: bytes, or code points on a UCS-4 build).
fn hash_units(units: impl ExactSizeIterator<Item = u32> + Clone) -> i64 {
    let len = units.len() as i64;
    let mut it = units.peekable();
    let Some(&first) = it.peek() else {
        return 0;
    };
    let mut x = i64::from(first) << 7;
    for u in it {
        x = x.wrapping_mul(1_000_003) ^ i64::from(u);
    }
    fix(x ^ len)
}

/// `hash()` of an int or long: the value modulo 2^64 − 1, signed.
fn hash_int(v: i128) -> i64 {
    let m = (v.unsigned_abs() % u128::from(u64::MAX)) as u64;
    let x = if v < 0 { m.wrapping_neg() } else { m };
    fix(x as i64)
}

/// `frexp`: `x = m · 2^e` with `0.5 ≤ |m| < 1` (x finite, non-zero).
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    if exp_bits == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * f64::from_bits(0x4350_0000_0000_0000)); // 2^54
        return (m, e - 54);
    }
    let e = exp_bits - 1022;
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, e)
}

fn hash_float(v: f64) -> Option<i64> {
    if v.is_nan() {
        return Some(0);
    }
    if v.is_infinite() {
        return Some(if v > 0.0 { 314_159 } else { -271_828 });
    }
    if v.fract() == 0.0 {
        if v.abs() > (i64::MAX / 2) as f64 {
            // A long of that value; exact below 2^127.
            return (v.abs() < 1.7e38).then(|| hash_int(v as i128));
        }
        return Some(fix(v as i64));
    }
    let (m, expo) = frexp(v);
    let v = m * 2_147_483_648.0;
    let hipart = v as i64;
    let v = (v - hipart as f64) * 2_147_483_648.0;
    Some(fix(hipart
        .wrapping_add(v as i64)
        .wrapping_add(i64::from(expo) << 15)))
}

/// `hash(d)` as CPython 2.7 computes it, where it is deterministic (not for `None`, whose
/// hash is its address, nor for datetimes, dicts and lists).
pub fn hash(d: &Doc) -> Option<i64> {
    Some(match d {
        Doc::Bool(b) => i64::from(*b),
        Doc::Int(i) => hash_int(*i),
        Doc::Float(f) => hash_float(*f)?,
        Doc::Bytes(b) => hash_units(b.iter().map(|&c| u32::from(c))),
        Doc::Text(t) => {
            let cps: Vec<u32> = t.chars().map(u32::from).collect();
            hash_units(cps.into_iter())
        }
        Doc::Uuid(u) => hash_int(u.as_u128() as i128),
        Doc::Tuple(items) => {
            let mut x: i64 = 0x345678;
            let mut mult: i64 = 1_000_003;
            let mut len = items.len() as i64;
            for it in items {
                len -= 1;
                let y = hash(it)?;
                x = (x ^ y).wrapping_mul(mult);
                mult = mult.wrapping_add(82_520 + len + len);
            }
            fix(x.wrapping_add(97_531))
        }
        _ => return None,
    })
}

const PERTURB_SHIFT: u32 = 5;
const MIN_SIZE: usize = 8;

fn insert_clean(table: &mut [Option<usize>], entry: usize, h: i64) {
    let mask = table.len() - 1;
    let mut i = (h as u64 as usize) & mask;
    let mut perturb = h as u64;
    while table[i & mask].is_some() {
        i = (i << 2)
            .wrapping_add(i)
            .wrapping_add(perturb as usize)
            .wrapping_add(1);
        perturb >>= PERTURB_SHIFT;
    }
    table[i & mask] = Some(entry);
}

/// The order in which CPython 2.7 iterates a dict built by inserting `keys` in order
/// (as the unpickler and `json.loads` build them): a permutation of `0..keys.len()`, or
/// `None` when some key's hash is not deterministic.
pub fn dict_order(keys: &[&Doc]) -> Option<Vec<usize>> {
    let hashes: Vec<i64> = keys.iter().map(|k| hash(k)).collect::<Option<_>>()?;
    let mut table: Vec<Option<usize>> = vec![None; MIN_SIZE];
    let mut used = 0usize;
    for (i, &h) in hashes.iter().enumerate() {
        insert_clean(&mut table, i, h);
        used += 1;
        // No deletions: fill == used.
        if used * 3 >= table.len() * 2 {
            let minused = if used > 50_000 { 2 } else { 4 } * used;
            let mut size = MIN_SIZE;
            while size <= minused {
                size <<= 1;
            }
            let mut new = vec![None; size];
            for e in table.iter().flatten() {
                insert_clean(&mut new, *e, hashes[*e]);
            }
            table = new;
        }
    }
    Some(table.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_reprs() {
        for (x, want) in [
            (2.5, "2.5"),
            (1.5, "1.5"),
            (100.0, "100.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-1.25e-300, "-1.25e-300"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (123456789.125, "123456789.125"),
            (-0.0, "-0.0"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(float_repr(x), want, "{x}");
        }
    }

    #[test]
    fn hashes_match_python27() {
        // python2.7 -c "print hash('a'), hash(''), hash(-1), hash(2**64), hash(1.5), ..."
        assert_eq!(hash(&Doc::Bytes(b"a".to_vec())), Some(12416037344));
        assert_eq!(hash(&Doc::Bytes(vec![])), Some(0));
        assert_eq!(hash(&Doc::Text("a".into())), Some(12416037344));
        assert_eq!(hash(&Doc::Int(-1)), Some(-2));
        assert_eq!(hash(&Doc::Int(1 << 64)), Some(1));
        assert_eq!(hash(&Doc::Float(1.5)), Some(1610645504));
        assert_eq!(hash(&Doc::Float(0.1)), Some(2576882278));
        assert_eq!(hash(&Doc::Float(-2.75e-7)), Some(-2370658089));
        assert_eq!(hash(&Doc::Int(1 << 70)), Some(64));
        assert_eq!(
            hash(&Doc::Text("\u{e9}t\u{65e5}".into())),
            Some(-4116773383342135285)
        );
        assert_eq!(
            hash(&Doc::Tuple(vec![
                Doc::Int(1),
                Doc::Bytes(b"a".to_vec()),
                Doc::Bool(true)
            ])),
            Some(-7876760520406237969)
        );
        assert_eq!(hash(&Doc::Float(2.0)), Some(2));
    }

    #[test]
    fn dict_order_of_a_vector_json_document() {
        // json.loads('{"id":1,"list":[],"nested":{},"title":""}') iterates title, list, id,
        // nested (vector 01, get(1) of docs).
        let keys: Vec<Doc> = ["id", "list", "nested", "title"]
            .iter()
            .map(|s| Doc::Text((*s).into()))
            .collect();
        let refs: Vec<&Doc> = keys.iter().collect();
        assert_eq!(dict_order(&refs), Some(vec![3, 1, 0, 2]));
    }
}
