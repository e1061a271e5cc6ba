//! The command line as a Unix tool, with real processes: output into a closed pipe ends the
//! process quietly with exit code 141 (SIGPIPE stays ignored; EPIPE is handled), `kv scan` prints one JSON line per record that `kv load` reads back,
//! line-oriented input names its bad line and keeps the lines before it, lines have a length
//! limit, and a hyperdb directory has one writer at a time.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

/// Runs `strata args` with `input` on stdin, capturing stdout and stderr.
fn run(args: &[&str], input: &[u8]) -> Output {
    let mut c = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let input = input.to_vec();
    // The child may stop reading early (a bad line): a failed write is fine.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = c.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn ok(args: &[&str], input: &[u8]) -> String {
    let o = run(args, input);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `strata args` with stdout a pipe whose read end is already closed.
fn into_closed_pipe(args: &[&str], input: &[u8]) -> (ExitStatus, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut c = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let _ = stdin.write_all(input);
    drop(stdin);
    let out = c.wait_with_output().unwrap();
    (out.status, stderr(&out))
}

/// Exit code of a command whose stdout was closed (`output::EXIT_CLOSED`).
const EXIT_CLOSED: i32 = 141;

/// The process exited (not killed by a signal) with code 141 and said nothing on stderr.
fn assert_closed_exit(args: &[&str], status: ExitStatus, err: &str) {
    assert_eq!(
        (status.code(), status.signal()),
        (Some(EXIT_CLOSED), None),
        "{args:?}: {status:?}, stderr {err:?}"
    );
    assert_eq!(err, "", "{args:?}");
}

fn assert_quiet_exit(args: &[&str], input: &[u8]) {
    let (status, err) = into_closed_pipe(args, input);
    assert_closed_exit(args, status, &err);
}

/// `strata args | head -1`: reads one line of stdout, then closes the read end while the
/// command is still writing; returns the line, the exit status and stderr.
fn head_1(args: &[&str]) -> (String, ExitStatus, String) {
    let mut c = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    {
        let mut r = BufReader::new(c.stdout.take().unwrap());
        r.read_line(&mut first).unwrap();
        // `r` (the only read end) is dropped here.
    }
    let out = c.wait_with_output().unwrap();
    (first, out.status, stderr(&out))
}

fn records(n: usize) -> String {
    (0..n)
        .map(|i| format!("{{\"k\":\"key{i:06}\",\"v\":\"value {i}\"}}\n"))
        .collect()
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    ok(
        &["kv", "--db", db, "load", "--sync", "none"],
        records(20_000).as_bytes(),
    );
    for args in [
        &["kv", "--db", db, "check"][..],
        &["kv", "--db", db, "stats"],
        &["kv", "--db", db, "scan"],
        &["kv", "--db", db, "get", "key000001"],
        &["key", "stripe", "x"],
        &["key", "encode", "[1, \"a\"]"],
        &["--help"],
    ] {
        assert_quiet_exit(args, b"");
    }
    // Lines on stdin, outputs into the closed pipe.
    assert_quiet_exit(&["key", "encode"], b"[1]\n[2]\n");
    // `| head -1` with a reader that goes away in the middle of a long output: the first
    // line arrived whole, then the quiet exit.
    for args in [
        &["kv", "--db", db, "scan"][..],
        &["kv", "--db", db, "--hex", "scan", "--reverse"],
    ] {
        let (first, status, err) = head_1(args);
        assert!(
            first.starts_with("{\"k\":\"") && first.ends_with("}\n"),
            "{first:?}"
        );
        assert_closed_exit(args, status, &err);
    }
    // A write error other than a closed reader is still an error with a message.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    if let Ok(full) = full {
        let o = bin()
            .args(["kv", "--db", db, "scan"])
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("cannot write to stdout"),
            "{}",
            stderr(&o)
        );
    }
    // A loader whose acknowledgements go nowhere stops quietly; what it acknowledged is kept.
    assert_quiet_exit(
        &["kv", "--db", db, "load", "--ack", "--sync", "none"],
        b"{\"k\":\"late\",\"v\":\"1\"}\n",
    );
    let tdb = tmp.path().join("tables");
    let tdb = tdb.to_str().unwrap();
    ok(
        &[
            "--db",
            tdb,
            "table",
            "create",
            r#"{"name":"t","partition":[{"name":"id","type":"int"}]}"#,
        ],
        b"",
    );
    // About 1 MB of output: far more than a pipe holds.
    let pad = "p".repeat(200);
    let items: String = (0..5000)
        .map(|i| format!("{{\"id\":{i},\"pad\":\"{pad}\"}}\n"))
        .collect();
    ok(&["--db", tdb, "table", "put", "t"], items.as_bytes());
    assert_quiet_exit(&["--db", tdb, "table", "scan", "t"], b"");
    assert_quiet_exit(&["--db", tdb, "table", "list"], b"");
    let (first, status, err) = head_1(&["--db", tdb, "table", "scan", "t"]);
    assert!(first.starts_with("{\"id\":"), "{first:?}");
    assert_closed_exit(&["table", "scan"], status, &err);
    let hdb = tmp.path().join("h");
    let hdb = hdb.to_str().unwrap();
    assert_quiet_exit(&["hyperdb", "create", hdb], b"");
    ok(&["hyperdb", "put", hdb, "a", "1"], b"");
    assert_quiet_exit(&["hyperdb", "list", hdb], b"");
    let cdb = tmp.path().join("c");
    let cdb = cdb.to_str().unwrap();
    ok(
        &["--db", cdb, "kv", "load", "--sync", "none"],
        records(20_000).as_bytes(),
    );
    assert_quiet_exit(&["--db", cdb, "centidb", "dump"], b"");
}

/// Stdout is written only through `src/output.rs`: no print macros (also denied by clippy in
/// `main.rs`) and no `io::stdout` handle anywhere else, so every command meets a closed pipe the
/// same way.
#[test]
fn stdout_is_written_through_the_one_output_path() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if !name.ends_with(".rs") || name == "output.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for banned in ["println!", "print!(", "eprintln!", "eprint!(", "io::stdout"] {
                assert!(
                    !code.contains(banned),
                    "src/{name}:{}: `{banned}` outside src/output.rs: {line}",
                    i + 1
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} source files found");
}

#[test]
fn kv_scan_prints_json_lines_that_load_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    // Keys and values with tabs, newlines, quotes, backslashes, NUL, invalid UTF-8.
    let samples: [&[u8]; 9] = [
        b"plain",
        b"tab\there",
        b"new\nline",
        b"cr\r\n",
        b"quote\"s",
        b"back\\slash",
        b"\0nul",
        b"\xff\xfe binary",
        "\u{e9}\u{2028}".as_bytes(),
    ];
    let mut hex_input = String::new();
    for (i, k) in samples.iter().enumerate() {
        let v = samples[(i + 3) % samples.len()];
        hex_input.push_str(&format!("{{\"k\":\"{}\",\"v\":\"{}\"}}\n", hex(k), hex(v)));
    }
    ok(&["kv", "--db", a, "--hex", "load"], hex_input.as_bytes());
    let scan = ok(&["kv", "--db", a, "scan"], b"");
    assert_eq!(scan.lines().count(), samples.len(), "{scan}");
    for line in scan.lines() {
        let j: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(j.get("k").is_some() && j.get("v").is_some(), "{line}");
    }
    assert!(scan.contains(r#"{"k":"tab\there","#), "{scan}");
    assert!(scan.contains(r#"{"hex":"fffe2062696e617279"}"#), "{scan}");
    // The scan loads back into another database, byte for byte.
    ok(&["kv", "--db", b, "load"], scan.as_bytes());
    assert_eq!(ok(&["kv", "--db", b, "scan"], b""), scan);
    assert_eq!(
        ok(&["kv", "--db", b, "--hex", "scan"], b""),
        ok(&["kv", "--db", a, "--hex", "scan"], b"")
    );
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn kv_load_names_the_bad_line_and_keeps_the_lines_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    let mut input = b"{\"k\":\"one\",\"v\":\"1\"}\n{\"k\":\"two\",\"v\":\"2\"}\n".to_vec();
    input.extend_from_slice(b"{\"k\":\"thr\xffee\",\"v\":\"3\"}\n{\"k\":\"four\",\"v\":\"4\"}\n");
    let o = run(&["kv", "--db", db, "load"], &input);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("line 3") && e.contains("UTF-8"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert_eq!(ok(&["kv", "--db", db, "get", "one"], b""), "1\n");
    assert_eq!(ok(&["kv", "--db", db, "get", "two"], b""), "2\n");
    assert_eq!(
        run(&["kv", "--db", db, "get", "four"], b"").status.code(),
        Some(1)
    );
}

#[test]
fn a_line_longer_than_16_mib_is_refused_by_number() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    let mut input = b"{\"k\":\"one\",\"v\":\"1\"}\n{\"k\":\"big\",\"v\":\"".to_vec();
    input.resize(input.len() + (16 << 20), b'x');
    input.extend_from_slice(b"\"}\n");
    let o = run(&["kv", "--db", db, "load"], &input);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 2: longer than"), "{}", stderr(&o));
    assert_eq!(ok(&["kv", "--db", db, "get", "one"], b""), "1\n");
    // Just under the limit is fine.
    let mut input = b"{\"k\":\"big\",\"v\":\"".to_vec();
    input.resize((16 << 20) - 3, b'y');
    input.extend_from_slice(b"\"}\n");
    ok(&["kv", "--db", db, "load", "--sync", "none"], &input);
}

#[test]
fn key_encode_reads_numbered_lines_of_bounded_length() {
    // Not UTF-8 on line 2: named with its column, after line 1's key was printed.
    let o = run(&["key", "encode"], b"[1]\n[\"a\xffb\"]\n[3]\n");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("line 2: not UTF-8 (invalid byte at column 4)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
    // A line over 16 MiB is refused by number (and never read into memory whole).
    let mut input = b"[1]\n[\"".to_vec();
    input.resize(input.len() + (16 << 20), b'x');
    input.extend_from_slice(b"\"]\n[3]\n");
    let o = run(&["key", "encode"], &input);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 2: longer than"), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
}

#[test]
fn table_put_names_the_bad_line_and_keeps_the_lines_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    ok(
        &[
            "--db",
            db,
            "table",
            "create",
            r#"{"name":"t","partition":[{"name":"id","type":"text"}]}"#,
        ],
        b"",
    );
    let input = b"{\"id\":\"one\"}\n{\"id\":\"two\"}\n{\"id\":\"thr\xffee\"}\n{\"id\":\"four\"}\n";
    let o = run(&["--db", db, "table", "put", "t"], input);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));
    let scan = ok(&["--db", db, "table", "scan", "t"], b"");
    let mut ids: Vec<String> = scan
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].to_string())
        .collect();
    ids.sort();
    assert_eq!(ids, vec!["\"one\"", "\"two\""]);
}

#[test]
fn hyperdb_apply_names_a_line_that_is_not_utf8() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("h");
    let d = d.to_str().unwrap();
    ok(&["hyperdb", "create", d], b"");
    let input =
        b"{\"type\":\"put\",\"key\":\"a\",\"value\":\"61\"}\n{\"type\":\"put\",\"key\":\"\xff\"}\n";
    let o = run(&["hyperdb", "apply", d], input);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 2"), "{}", stderr(&o));
    assert_eq!(ok(&["hyperdb", "get", d, "a"], b""), "a\n");
}

#[test]
fn hyperdb_secret_key_comes_from_a_file_or_the_environment_never_argv() {
    let tmp = tempfile::tempdir().unwrap();
    let sk = "0707070707070707070707070707070707070707070707070707070707070707\
              ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c";
    // Refused on the command line, with a pointer to the alternatives.
    let d = tmp.path().join("argv");
    let o = run(
        &["hyperdb", "create", d.to_str().unwrap(), "--secret-key", sk],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--secret-key-file")
            && stderr(&o).contains("STRATA_HYPERDB_SECRET_KEY"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("source/key").exists());
    let public = "ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c";
    // From a file, as hex.
    let f = tmp.path().join("sk.hex");
    std::fs::write(&f, format!("{sk}\n")).unwrap();
    let d = tmp.path().join("file");
    let d = d.to_str().unwrap();
    let out = ok(
        &[
            "hyperdb",
            "create",
            d,
            "--secret-key-file",
            f.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.trim(), public);
    // From a file, as the 64 raw bytes of another database's secret_key.
    let raw = Path::new(d).join("source/secret_key");
    let d2 = tmp.path().join("raw");
    let out = ok(
        &[
            "hyperdb",
            "create",
            d2.to_str().unwrap(),
            "--secret-key-file",
            raw.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.trim(), public);
    // From the environment.
    let d3 = tmp.path().join("env");
    let o = bin()
        .args(["hyperdb", "create", d3.to_str().unwrap()])
        .env("STRATA_HYPERDB_SECRET_KEY", sk)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), public);
}

#[test]
fn two_hyperdb_writers_never_lose_an_acknowledged_put() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("h");
    let d = d.to_str().unwrap().to_string();
    ok(&["hyperdb", "create", &d], b"");
    let writer = |name: &'static str, d: String| {
        std::thread::spawn(move || {
            let mut acked = Vec::new();
            let mut locked = 0;
            for i in 0..60 {
                let key = format!("{name}/{i}");
                let o = bin()
                    .args(["hyperdb", "put", &d, &key, "v"])
                    .output()
                    .unwrap();
                match o.status.code() {
                    Some(0) => acked.push(key),
                    Some(3) => {
                        let e = stderr(&o);
                        assert!(e.contains(&d) && e.contains("in use"), "{e}");
                        assert_eq!(e.lines().count(), 1, "{e}");
                        locked += 1;
                    }
                    other => panic!("put {key}: {other:?} {}", stderr(&o)),
                }
            }
            (acked, locked)
        })
    };
    let (a, b) = (writer("a", d.clone()), writer("b", d.clone()));
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    eprintln!(
        "acknowledged {} + {}, refused with the lock error {} + {}",
        a.0.len(),
        b.0.len(),
        a.1,
        b.1
    );
    ok(&["hyperdb", "verify", &d], b"");
    for key in a.0.iter().chain(b.0.iter()) {
        assert_eq!(
            ok(&["hyperdb", "get", &d, key], b""),
            "v\n",
            "acknowledged {key} is lost"
        );
    }
}
