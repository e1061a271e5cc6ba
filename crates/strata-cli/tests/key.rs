//! `strata key`: the exact command-line contract of issue 2.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn strata(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strata");
    // Feed stdin from another thread: with large inputs and outputs, writing all of stdin
    // before reading stdout would deadlock on full pipes.
    let mut input = child.stdin.take().unwrap();
    let data = stdin.unwrap_or("").to_owned();
    let feeder = std::thread::spawn(move || input.write_all(data.as_bytes()));
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    out
}

fn ok(args: &[&str], stdin: Option<&str>) -> String {
    let o = strata(args, stdin);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn invalid(args: &[&str], stdin: Option<&str>) -> String {
    let o = strata(args, stdin);
    assert_eq!(o.status.code(), Some(2), "{args:?} should exit 2");
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line on stderr: {err:?}"
    );
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn encode_the_doc_tuple_with_every_codec() {
    let t = "[613, 15122, 5124324, 13]";
    assert_eq!(
        ok(&["key", "encode", "--codec", "native", t], None),
        "41525f1b716746ae6934\n"
    );
    assert_eq!(
        ok(&["key", "encode", "--codec", "centidb", t], None),
        "15f27515f9322215fa4e30e4150d\n"
    );
    assert_eq!(
        ok(&["key", "encode", "--codec", "fdb", t], None),
        "160265163b12174e30e4150d\n"
    );
}

#[test]
fn typed_values_and_round_trip() {
    let t = r#"[null,true,-5,1.5,"a\u0000b",{"t":"bytes","hex":"00ff"},{"t":"uuid","hex":"000102030405060708090a0b0c0d0e0f"},{"t":"time","unix_ms":-1000,"utc_offset_s":3600},[1,[]],{"t":"decimal","v":"-1.50e-3"}]"#;
    let hex = ok(&["key", "encode", "--codec", "native", t], None);
    let plain = ok(&["key", "decode", "--codec", "native", hex.trim()], None);
    assert!(
        plain.starts_with(r#"[null,true,-5,1.5,"a\u0000b",{"hex":"00ff","t":"bytes"}"#),
        "{plain}"
    );
    let typed = ok(
        &["key", "decode", "--codec", "native", "--typed", hex.trim()],
        None,
    );
    assert!(typed.contains(r#"{"t":"int","v":"-5"}"#), "{typed}");
    assert!(
        typed.contains(r#"{"t":"decimal","v":"-0.0015"}"#),
        "{typed}"
    );
    assert!(
        plain.contains(r#"{"t":"decimal","v":"-0.0015"}"#),
        "{plain}"
    );
    // Both forms encode back to the same key.
    assert_eq!(
        ok(&["key", "encode", "--codec", "native", plain.trim()], None),
        hex
    );
    assert_eq!(
        ok(&["key", "encode", "--codec", "native", typed.trim()], None),
        hex
    );
}

#[test]
fn stdin_one_line_per_input_in_order() {
    let out = ok(
        &["key", "encode", "--codec", "fdb"],
        Some("[1]\n[\"a\"]\n[]\n"),
    );
    assert_eq!(out, "1501\n026100\n\n");
    let out = ok(&["key", "decode", "--codec", "fdb"], Some("1501\n026100\n"));
    assert_eq!(out, "[1]\n[\"a\"]\n");
}

#[test]
fn skv_with_schema() {
    let s = "string,int32:desc,int64:nulls_last";
    let hex = ok(
        &[
            "key",
            "encode",
            "--codec",
            "skv",
            "--schema",
            s,
            r#"["TestName", 10, null]"#,
        ],
        None,
    );
    assert!(hex.starts_with("01546573744e616d650001"), "{hex}");
    assert!(hex.trim_end().ends_with("ff0001"), "{hex}");
    assert_eq!(
        ok(
            &["key", "decode", "--codec", "skv", "--schema", s, hex.trim()],
            None
        ),
        "[\"TestName\",10,null]\n"
    );
    let e = invalid(
        &[
            "key",
            "encode",
            "--codec",
            "skv",
            "--schema",
            "string,int9",
            "[\"a\",1]",
        ],
        None,
    );
    assert!(e.contains("int9"), "{e}");
    invalid(&["key", "encode", "--codec", "skv", "[\"a\"]"], None);
}

#[test]
fn native_schema_orders() {
    let a = ok(
        &["key", "encode", "--schema", "any,desc", "[\"u\", 2]"],
        None,
    );
    let b = ok(
        &["key", "encode", "--schema", "any,desc", "[\"u\", 1]"],
        None,
    );
    assert!(a < b);
    // Keys are self-describing: decoding needs no schema, and says which fields are
    // descending, so that encoding the output gives the key back.
    let d = ok(&["key", "decode", a.trim()], None);
    assert_eq!(d, "[\"u\",{\"desc\":true,\"t\":\"int\",\"v\":\"2\"}]\n");
    assert_eq!(ok(&["key", "encode", d.trim()], None), a);
    // Flags in the JSON override --schema; elements without flags follow --schema.
    assert_eq!(
        ok(&["key", "encode", "--schema", "desc,asc", d.trim()], None),
        ok(
            &["key", "encode", "--schema", "desc,desc", r#"["u", 2]"#],
            None
        )
    );
    let n = ok(
        &[
            "key",
            "encode",
            "--schema",
            "any,nulls_last",
            r#"["u", null]"#,
        ],
        None,
    );
    assert_eq!(
        ok(&["key", "decode", n.trim()], None),
        "[\"u\",{\"nulls\":\"last\",\"t\":\"null\"}]\n"
    );
    let e = invalid(
        &[
            "key",
            "encode",
            "--codec",
            "fdb",
            r#"[{"t":"int","v":"1","desc":true}]"#,
        ],
        None,
    );
    assert!(e.contains("native only"), "{e}");
}

#[test]
fn stripes_are_real_crc32_values() {
    assert_eq!(ok(&["key", "stripe", "user#1"], None), "154\n");
    assert_eq!(ok(&["key", "stripe", "user#2"], None), "32\n");
    assert_eq!(ok(&["key", "stripe", "user#3"], None), "182\n");
    assert_eq!(
        ok(&["key", "stripe", "--hex", "757365722331"], None),
        "154\n"
    );
}

#[test]
fn invalid_input_exits_2_with_one_line() {
    let e = invalid(
        &[
            "key",
            "encode",
            "--codec",
            "native",
            "[1, {\"t\":\"bytes\",\"hex\":\"zz\"}]",
        ],
        None,
    );
    assert!(e.contains("$[1].hex"), "{e}");
    let e = invalid(&["key", "decode", "--codec", "native", "fe"], None);
    assert!(e.contains("byte 0"), "{e}");
    let e = invalid(&["key", "decode", "--codec", "native", "7e"], None);
    assert!(e.contains("byte 1"), "{e}");
    let e = invalid(
        &[
            "key",
            "encode",
            "--codec",
            "fdb",
            r#"[{"t":"decimal","v":"1.5"}]"#,
        ],
        None,
    );
    assert!(e.contains("no standard decimal"), "{e}");
    let e = invalid(
        &["key", "encode", r#"[{"t":"decimal","v":"1e1000000"}]"#],
        None,
    );
    assert!(e.contains("overflow"), "{e}");
    invalid(&["key", "decode", "--codec", "native", "zz"], None);
    invalid(&["key", "encode", "--codec", "native", "{}"], None);
    invalid(&["key", "encode", "--codec", "centidb", "[1.5]"], None);
    invalid(
        &[
            "key",
            "encode",
            "--codec",
            "fdb",
            "[{\"t\":\"time\",\"unix_ms\":0}]",
        ],
        None,
    );
    let e = invalid(&["key", "encode"], Some("[1]\nnot json\n"));
    assert!(e.contains("line 2"), "{e}");
    invalid(&["key", "stripe", "--hex", "z"], None);
    invalid(&["key", "frobnicate"], None);
}

/// A deterministic generator of valid native keys: every kind, descending fields, nulls-last
/// NULLs, nested tuples.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn value(&mut self, depth: usize) -> strata_key::Value {
        use strata_key::{Decimal, Time, Tuple, Value};
        match self.below(if depth < 3 { 14 } else { 13 }) {
            0 => Value::Null,
            1 => Value::Bool(self.below(2) == 1),
            2 => Value::Int(self.next() as i64 as i128 >> self.below(64)),
            3 => Value::Int((self.next() as i128) << 64 | self.next() as i128),
            4 => Value::Float(f64::from_bits(self.next())),
            5 => Value::Float(
                [0.0, -0.0, 1.5, f64::INFINITY, f64::NAN, 1e300, -2.5e-300][self.below(7) as usize],
            ),
            6 => Value::F32(f32::from_bits(self.next() as u32)),
            7 => Value::Text(
                ["", "a", "a\u{0}b", "é\n\"", "\u{10ffff}"][self.below(5) as usize].to_owned(),
            ),
            8 => Value::Bytes((0..self.below(5)).map(|_| self.next() as u8).collect()),
            9 => uuid_from(self.next(), self.next()),
            10 => Value::Time(
                Time::new(
                    self.next() as i64 >> 20,
                    (self.below(1_000_000_000)) as u32,
                    3600,
                )
                .unwrap(),
            ),
            11 | 12 => Value::Decimal(
                Decimal::from_parts(
                    self.below(2) == 1,
                    self.next() as u128,
                    self.below(400) as i32 - 200,
                )
                .unwrap(),
            ),
            _ => Value::Tuple(Tuple(
                (0..self.below(3)).map(|_| self.value(depth + 1)).collect(),
            )),
        }
    }
}

fn uuid_from(a: u64, b: u64) -> strata_key::Value {
    let hex = format!("{a:016x}{b:016x}");
    strata_key::json::value_from_json(&serde_json::json!({"t": "uuid", "hex": hex})).unwrap()
}

#[test]
fn decode_then_encode_gives_every_key_back() {
    use strata_key::codec::native::{NativeCodec, Order};
    use strata_key::TupleCodec;
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let mut hexes = String::new();
    for _ in 0..2500 {
        let n = g.below(5) as usize;
        let t: Vec<_> = (0..n).map(|_| g.value(0)).collect();
        let orders = (0..n)
            .map(|_| Order {
                descending: g.below(2) == 1,
                nulls_last: g.below(2) == 1,
            })
            .collect();
        let k = NativeCodec::with_orders(orders).encode(&t).unwrap();
        hexes.push_str(&hex::encode(k));
        hexes.push('\n');
    }
    for typed in [false, true] {
        let mut args = vec!["key", "decode"];
        if typed {
            args.push("--typed");
        }
        let json = ok(&args, Some(&hexes));
        let back = ok(&["key", "encode"], Some(&json));
        let bad: Vec<(&str, &str, &str)> = hexes
            .lines()
            .zip(json.lines())
            .zip(back.lines())
            .filter(|((h, _), b)| h != b)
            .map(|((h, j), b)| (h, j, b))
            .collect();
        assert!(
            bad.is_empty(),
            "typed={typed}: {} of 2500 keys do not round-trip, e.g. {:?}",
            bad.len(),
            bad.first()
        );
    }
}

#[test]
fn json_numbers_beyond_f64_are_refused() {
    for t in [
        "[1e400]",
        "[-1e400]",
        r#"[{"t":"f64","v":1e999}]"#,
        r#"[{"t":"f32","v":1e39}]"#,
    ] {
        let e = invalid(&["key", "encode", t], None);
        assert!(e.contains("range"), "{t}: {e}");
    }
    // Explicit bits still give an infinity, and a decimal takes any exponent in its range.
    ok(
        &[
            "key",
            "encode",
            r#"[{"t":"f64","bits":"7ff0000000000000"}]"#,
        ],
        None,
    );
    ok(&["key", "encode", r#"[{"t":"decimal","v":"1e400"}]"#], None);
}
