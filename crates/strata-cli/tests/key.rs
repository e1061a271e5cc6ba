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
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    } else {
        drop(child.stdin.take());
    }
    child.wait_with_output().unwrap()
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
    // Keys are self-describing: decoding needs no schema.
    assert_eq!(ok(&["key", "decode", a.trim()], None), "[\"u\",2]\n");
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
