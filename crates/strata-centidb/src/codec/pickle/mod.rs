//! The `pickle` encoder: Python's pickle, protocol 2, as `cPickle.dumps(value, 2)` writes it,
//! Python 2 types (`str` is bytes, `unicode` is text).
//!
//! Hand-written rather than taken from `serde-pickle`: through serde a pickle loses the
//! difference between a tuple and a list, and serde-pickle's value model keeps dicts in a
//! `BTreeMap`, losing the insertion order the original's results are listed in; it also
//! writes Python 2 `str` as a `_codecs.encode` call. This module reads the opcodes of
//! protocols 0–2 that CPython 2.7 emits for `None`, `bool`, `int`, `long`, `float`, `str`,
//! `unicode`, `tuple`, `list`, `dict`, `uuid.UUID` and naive `datetime.datetime`, and refuses
//! every other global (no code runs: a pickle is data here). Shared references are followed
//! (values are copied), recursive structures are refused, and the size of the result is
//! bounded.

use strata_key::Time;

use super::Encoder;
use crate::doc::Doc;
use crate::error::{Error, Result};

mod read;
pub use read::loads;

/// cPickle protocol 2.
#[derive(Debug, Clone, Copy, Default)]
pub struct PickleEncoder;

impl Encoder for PickleEncoder {
    fn name(&self) -> &str {
        "pickle"
    }

    fn pack(&self, value: &Doc) -> Result<Vec<u8>> {
        dumps(value)
    }

    fn unpack(&self, data: &[u8]) -> Result<Doc> {
        loads(data)
    }
}

pub(crate) fn err(reason: impl Into<String>) -> Error {
    Error::encoding("pickle", reason)
}

// ---------------------------------------------------------------------------------------
// Writer

struct Writer {
    out: Vec<u8>,
    memo: u32,
}

impl Writer {
    fn put(&mut self) {
        self.memo += 1;
        if self.memo < 256 {
            self.out.extend_from_slice(&[b'q', self.memo as u8]);
        } else {
            self.out.push(b'r');
            self.out.extend_from_slice(&self.memo.to_le_bytes());
        }
    }

    fn save_long(&mut self, i: i128) {
        // Two's complement, little-endian, shortest (Python's encode_long).
        let bytes = i.to_le_bytes();
        let mut n = 16;
        while n > 1 {
            let last = bytes[n - 1];
            let prev_sign = bytes[n - 2] & 0x80;
            if (last == 0 && prev_sign == 0) || (last == 0xff && prev_sign != 0) {
                n -= 1;
            } else {
                break;
            }
        }
        if i == 0 {
            n = 0;
        }
        self.out.extend_from_slice(&[0x8a, n as u8]);
        self.out.extend_from_slice(&bytes[..n]);
    }

    /// A non-negative long up to 2^128 − 1 (a UUID's `int`): a 0x00 sign byte when the top
    /// bit is set.
    fn save_u128(&mut self, v: u128) {
        if let Ok(i) = i128::try_from(v) {
            return self.save_long(i);
        }
        self.out.extend_from_slice(&[0x8a, 17]);
        self.out.extend_from_slice(&v.to_le_bytes());
        self.out.push(0);
    }

    fn save_bytes(&mut self, b: &[u8]) {
        if b.len() < 256 {
            self.out.extend_from_slice(&[b'U', b.len() as u8]);
        } else {
            self.out.push(b'T');
            self.out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        }
        self.out.extend_from_slice(b);
        // cPickle does not memoise strings shorter than 2.
        if b.len() >= 2 {
            self.put();
        }
    }

    fn save(&mut self, d: &Doc, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(err(format!("nesting deeper than {MAX_DEPTH}")));
        }
        match d {
            Doc::None => self.out.push(b'N'),
            Doc::Bool(true) => self.out.push(0x88),
            Doc::Bool(false) => self.out.push(0x89),
            Doc::Int(i) => {
                if (0..256).contains(i) {
                    self.out.extend_from_slice(&[b'K', *i as u8]);
                } else if (0..65536).contains(i) {
                    self.out.push(b'M');
                    self.out.extend_from_slice(&(*i as u16).to_le_bytes());
                } else if let Ok(v) = i32::try_from(*i) {
                    self.out.push(b'J');
                    self.out.extend_from_slice(&v.to_le_bytes());
                } else if i64::try_from(*i).is_ok() {
                    // A Python int beyond 32 bits: cPickle writes it as text.
                    self.out.push(b'I');
                    self.out.extend_from_slice(i.to_string().as_bytes());
                    self.out.push(b'\n');
                } else {
                    self.save_long(*i);
                }
            }
            Doc::Float(f) => {
                self.out.push(b'G');
                self.out.extend_from_slice(&f.to_be_bytes());
            }
            Doc::Bytes(b) => self.save_bytes(b),
            Doc::Text(t) => {
                self.out.push(b'X');
                self.out.extend_from_slice(&(t.len() as u32).to_le_bytes());
                self.out.extend_from_slice(t.as_bytes());
                if t.chars().count() >= 2 {
                    self.put();
                }
            }
            Doc::Tuple(items) => {
                if items.is_empty() {
                    self.out.push(b')');
                    return Ok(());
                }
                if items.len() > 3 {
                    self.out.push(b'(');
                }
                for it in items {
                    self.save(it, depth + 1)?;
                }
                self.out.push(match items.len() {
                    1 => 0x85,
                    2 => 0x86,
                    3 => 0x87,
                    _ => b't',
                });
                self.put();
            }
            Doc::List(items) => {
                self.out.push(b']');
                self.put();
                for chunk in items.chunks(BATCH) {
                    if chunk.len() == 1 {
                        self.save(&chunk[0], depth + 1)?;
                        self.out.push(b'a');
                    } else {
                        self.out.push(b'(');
                        for it in chunk {
                            self.save(it, depth + 1)?;
                        }
                        self.out.push(b'e');
                    }
                }
            }
            Doc::Dict(items) => {
                self.out.push(b'}');
                self.put();
                for chunk in items.chunks(BATCH) {
                    if chunk.len() == 1 {
                        self.save(&chunk[0].0, depth + 1)?;
                        self.save(&chunk[0].1, depth + 1)?;
                        self.out.push(b's');
                    } else {
                        self.out.push(b'(');
                        for (k, v) in chunk {
                            self.save(k, depth + 1)?;
                            self.save(v, depth + 1)?;
                        }
                        self.out.push(b'u');
                    }
                }
            }
            Doc::Uuid(u) => {
                self.out.extend_from_slice(b"cuuid\nUUID\n");
                self.put();
                self.out.extend_from_slice(&[b')', 0x81]);
                self.put();
                self.out.push(b'}');
                self.put();
                self.save_bytes(b"int");
                self.save_u128(u.as_u128());
                self.out.extend_from_slice(b"sb");
            }
            Doc::Time(t) => {
                if t.offset_s() != 0 {
                    return Err(err(
                        "a datetime with a UTC offset needs a tzinfo class; pickle stores \
                         naive (UTC) datetimes only",
                    ));
                }
                self.out.extend_from_slice(b"cdatetime\ndatetime\n");
                self.put();
                self.out.extend_from_slice(&[b'U', 10]);
                self.out.extend_from_slice(&datetime_state(t)?);
                self.out.extend_from_slice(&[0x85, b'R']);
                self.put();
            }
        }
        Ok(())
    }
}

/// Items per APPENDS / SETITEMS, as cPickle batches them.
const BATCH: usize = 1000;
/// Deepest nesting written or read.
pub(crate) const MAX_DEPTH: usize = 200;

/// `cPickle.dumps(value, 2)`.
pub fn dumps(value: &Doc) -> Result<Vec<u8>> {
    let mut w = Writer {
        out: vec![0x80, 2],
        memo: 0,
    };
    w.save(value, 0)?;
    w.out.push(b'.');
    Ok(w.out)
}

fn datetime_state(t: &Time) -> Result<[u8; 10]> {
    let secs = t.secs();
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let y = u16::try_from(y)
        .ok()
        .filter(|y| (1..=9999).contains(y))
        .ok_or_else(|| err("datetime year outside 1..=9999"))?;
    let us = t.nanos() / 1000;
    if !t.nanos().is_multiple_of(1000) {
        return Err(err("datetime has a sub-microsecond part"));
    }
    let [y1, y0] = y.to_be_bytes();
    Ok([
        y1,
        y0,
        m as u8,
        d as u8,
        (sod / 3600) as u8,
        (sod / 60 % 60) as u8,
        (sod % 60) as u8,
        (us >> 16) as u8,
        (us >> 8) as u8,
        us as u8,
    ])
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) → days since 1970-01-01.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_key::Time;
    use uuid::Uuid;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    /// (value, `cPickle.dumps(value, 2)` from CPython 2.7.18).
    fn cases() -> Vec<(Doc, &'static str)> {
        let t = |v: Vec<Doc>| Doc::Tuple(v);
        vec![
            (Doc::None, "80024e2e"),
            (Doc::Bool(true), "8002882e"),
            (Doc::Bool(false), "8002892e"),
            (Doc::Int(0), "80024b002e"),
            (Doc::Int(255), "80024bff2e"),
            (Doc::Int(256), "80024d00012e"),
            (Doc::Int(65536), "80024a000001002e"),
            (Doc::Int(-1), "80024affffffff2e"),
            (Doc::Int(2147483648), "800249323134373438333634380a2e"),
            (Doc::Int(1 << 64), "80028a090000000000000000012e"),
            (Doc::Int(-(1 << 70)), "80028a090000000000000000c02e"),
            (Doc::Float(1.5), "8002473ff80000000000002e"),
            (Doc::Bytes(b"ab".to_vec()), "80025502616271012e"),
            (Doc::Text("caf\u{e9}".into()), "80025805000000636166c3a971012e"),
            (t(vec![]), "8002292e"),
            (t(vec![Doc::Int(1)]), "80024b018571012e"),
            (t(vec![Doc::Int(1), Doc::Int(2), Doc::Int(3), Doc::Int(4)]), "8002284b014b024b034b047471012e"),
            (Doc::List(vec![]), "80025d71012e"),
            (Doc::List(vec![Doc::Int(1)]), "80025d71014b01612e"),
            (Doc::List(vec![Doc::Int(1), Doc::Int(2)]), "80025d7101284b014b02652e"),
            (Doc::Dict(vec![]), "80027d71012e"),
            (
                Doc::Dict(vec![(Doc::Bytes(b"a".to_vec()), Doc::Int(1))]),
                "80027d71015501614b01732e",
            ),
            (
                Doc::Uuid(Uuid::parse_str("12345678-9abc-def0-1234-56789abcdef0").unwrap()),
                "800263757569640a555549440a7101298171027d71035503696e7471048a10f0debc9a78563412f0debc9a7856341273622e",
            ),
            (
                Doc::Uuid(Uuid::parse_str("f2345678-9abc-def0-1234-56789abcdef0").unwrap()),
                "800263757569640a555549440a7101298171027d71035503696e7471048a11f0debc9a78563412f0debc9a785634f20073622e",
            ),
        ]
    }

    #[test]
    fn writes_what_cpickle_writes_and_reads_it_back() {
        for (v, want) in cases() {
            let got = dumps(&v).unwrap();
            assert_eq!(hex::encode(&got), want, "{v}");
            assert_eq!(loads(&got).unwrap(), v, "{v}");
            assert_eq!(loads(&h(want)).unwrap(), v, "{v}");
        }
    }

    #[test]
    fn reads_a_naive_datetime_and_the_vector_pickles() {
        let dt = loads(&h(
            "8002636461746574696d650a6461746574696d650a7101550a07dd081e0c22380c0a08855271022e",
        ))
        .unwrap();
        assert_eq!(dt, Doc::Time(Time::from_unix_ms(1377866096789, 0).unwrap()));
        assert_eq!(
            dumps(&dt).unwrap(),
            h("8002636461746574696d650a6461746574696d650a7101550a07dd081e0c22380c0a08855271022e")
        );
        // Vector 01: {'age': 30, 'name': u'Alice', 'tags': [u'x', 1.5]}.
        let v = loads(&h("80027d710128550361676571024b1e55046e616d6571035805000000416c696365710455047461677371055d710628580100000078473ff800000000000065752e")).unwrap();
        let Doc::Dict(items) = &v else { panic!("{v}") };
        assert_eq!(items[0], (Doc::Bytes(b"age".to_vec()), Doc::Int(30)));
        assert_eq!(
            items[2].1,
            Doc::List(vec![Doc::Text("x".into()), Doc::Float(1.5)])
        );
    }

    #[test]
    fn shared_references_see_the_finished_object() {
        // {'a': L, 'b': L} with L = [1, 2] memoised empty and filled afterwards.
        let p = h("80027d7101285501615d7102284b014b02655501626802752e");
        let want = Doc::List(vec![Doc::Int(1), Doc::Int(2)]);
        assert_eq!(
            loads(&p).unwrap(),
            Doc::Dict(vec![
                (Doc::Bytes(b"a".to_vec()), want.clone()),
                (Doc::Bytes(b"b".to_vec()), want)
            ])
        );
    }

    #[test]
    fn hostile_pickles_are_errors() {
        for bad in [
            "",
            "8002",
            "80034e2e",                     // protocol 3
            "8002636f730a73797374656d0a2e", // os.system
            "80025d71016801612e",           // a list that holds itself
            "80024e4e2e",                   // two values
            "80024e2e00",                   // bytes after STOP
            "8002680a2e",                   // memo never stored
            "80028bffffffff2e",             // LONG4 of 4 GiB
            "800254ffffff7f2e",             // BINSTRING past the end
            "80027d5d4b01732e",             // unhashable key
        ] {
            assert!(loads(&h(bad)).is_err(), "{bad}");
        }
        // Doubling through shared references: refused by the size budget, quickly.
        let mut p = h("80025d71004b01612e");
        p.truncate(p.len() - 1);
        for i in 0..60u8 {
            // L(i+1) = [L(i), L(i)]
            p.extend_from_slice(&[b']', b'q', i + 1, b'(', b'h', i, b'h', i, b'e']);
        }
        p.push(b'.');
        assert!(loads(&p).is_err());
    }
}
