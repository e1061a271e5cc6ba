//! One key-value record as a JSON line: what `kv scan` prints and `kv load` reads, so that
//! scan output loads back unchanged.
//!
//! `{"k":K,"v":V}` where each of `K` and `V` is a JSON string when the bytes are UTF-8 (JSON
//! escapes tabs, newlines, quotes and control characters, so a record is always one line), or
//! `{"hex":"00ff…"}` (lowercase hex) when they are not. With `--hex`, every key and value is
//! a hex string instead (`{"k":"6b","v":"00ff"}`), as `kv load --hex` reads them.

use std::io::{self, Write};

use serde_json::Value as Json;

/// Writes the record line of `(k, v)`, newline included.
pub fn write_record(out: &mut impl Write, k: &[u8], v: &[u8], hex: bool) -> io::Result<()> {
    out.write_all(b"{\"k\":")?;
    write_bytes(out, k, hex)?;
    out.write_all(b",\"v\":")?;
    write_bytes(out, v, hex)?;
    out.write_all(b"}\n")
}

fn write_bytes(out: &mut impl Write, b: &[u8], hex: bool) -> io::Result<()> {
    if hex {
        return write!(out, "\"{}\"", hex::encode(b));
    }
    match std::str::from_utf8(b) {
        // `io::Error::from` keeps a write error as it was (a closed pipe stays `BrokenPipe`).
        Ok(s) => serde_json::to_writer(&mut *out, s).map_err(io::Error::from),
        Err(_) => write!(out, "{{\"hex\":\"{}\"}}", hex::encode(b)),
    }
}

/// Parses a record line (see the module docs) into `(key, value)`; the error says what is
/// wrong (the caller adds the line number).
pub fn parse_record(line: &str, hex: bool) -> Result<(Vec<u8>, Vec<u8>), String> {
    let v: Json =
        serde_json::from_str(line).map_err(|e| format!("not JSON (column {}): {e}", e.column()))?;
    if !v.is_object() {
        return Err("a record is a JSON object {\"k\":...,\"v\":...}".into());
    }
    let field = |name: &str| -> Result<Vec<u8>, String> {
        match v.get(name) {
            Some(Json::String(s)) if hex => {
                hex::decode(s).map_err(|e| format!("field {name:?} is not hex: {e}"))
            }
            Some(Json::String(s)) => Ok(s.as_bytes().to_vec()),
            Some(Json::Object(o)) if o.len() == 1 => match o.get("hex") {
                Some(Json::String(h)) => {
                    hex::decode(h).map_err(|e| format!("field {name:?} is not hex: {e}"))
                }
                _ => Err(format!("field {name:?}: expected {{\"hex\":\"...\"}}")),
            },
            Some(_) => Err(format!(
                "field {name:?} must be a string or {{\"hex\":\"...\"}}"
            )),
            None => Err(format!("missing field {name:?}")),
        }
    };
    Ok((field("k")?, field("v")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(k: &[u8], v: &[u8], hex: bool) -> String {
        let mut out = Vec::new();
        write_record(&mut out, k, v, hex).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_hex_and_escapes() {
        assert_eq!(line(b"a", b"1", false), "{\"k\":\"a\",\"v\":\"1\"}\n");
        assert_eq!(
            line(b"a\tb\n\"", b"\xff\x00", false),
            "{\"k\":\"a\\tb\\n\\\"\",\"v\":{\"hex\":\"ff00\"}}\n"
        );
        assert_eq!(line(b"k", b"\xff", true), "{\"k\":\"6b\",\"v\":\"ff\"}\n");
    }

    #[test]
    fn every_record_round_trips_in_one_line() {
        let samples: [&[u8]; 7] = [
            b"",
            b"plain",
            b"\t\n\r\"\\",
            b"\0",
            b"\xff\xfe",
            b"\xc3",
            "é\u{2028}".as_bytes(),
        ];
        for k in samples {
            for v in samples {
                for hex in [false, true] {
                    let l = line(k, v, hex);
                    assert_eq!(l.matches('\n').count(), 1, "{l:?}");
                    assert_eq!(
                        parse_record(l.trim_end(), hex).unwrap(),
                        (k.to_vec(), v.to_vec())
                    );
                }
            }
        }
    }

    #[test]
    fn a_write_error_keeps_its_kind() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        for (k, hex) in [(&b"text"[..], false), (b"\xff", false), (b"text", true)] {
            let e = write_record(&mut Closed, k, b"v", hex).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{k:?} {hex}");
        }
        // The first write of the string itself fails (the prefix fits).
        let mut room = [0u8; 5];
        let e = write_record(&mut &mut room[..], b"text", b"v", false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WriteZero);
    }

    #[test]
    fn bad_records_say_what_is_wrong() {
        for (l, want) in [
            ("[1]", "a record is a JSON object"),
            ("{\"k\":\"a\"}", "missing field \"v\""),
            ("{\"k\":1,\"v\":\"a\"}", "field \"k\" must be a string"),
            (
                "{\"k\":{\"hex\":\"zz\"},\"v\":\"a\"}",
                "field \"k\" is not hex",
            ),
            ("{\"k\":{\"b64\":\"\"},\"v\":\"a\"}", "expected {\"hex\""),
            ("{\"k\":", "not JSON (column"),
        ] {
            let e = parse_record(l, false).unwrap_err();
            assert!(e.contains(want), "{l}: {e}");
        }
    }
}
