//! `strata hyperdb ...` end to end, against the reference vectors.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn strata(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.arg("hyperdb").args(args);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn ok(args: &[&str], stdin: Option<&str>) -> String {
    let out = strata(args, stdin);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn vector(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../vectors/hyperdb")
        .join(name);
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn create_from(v: &Value, dir: &Path) {
    let sk = v["keyPairs"]["source"]["secretKey"].as_str().unwrap();
    let sk_file = dir.with_extension("sk");
    std::fs::write(&sk_file, sk).unwrap();
    let out = ok(
        &[
            "create",
            dir.to_str().unwrap(),
            "--secret-key-file",
            sk_file.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(
        out.trim(),
        v["keyPairs"]["source"]["publicKey"].as_str().unwrap()
    );
    let ops: String = v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| format!("{o}\n"))
        .collect();
    ok(&["apply", dir.to_str().unwrap()], Some(&ops));
}

#[test]
fn apply_blocks_list_history_match_the_reference() {
    for name in [
        "01-dep-example.json",
        "10-list-options.json",
        "11-batch.json",
        "09-delete-semantics.json",
    ] {
        let v = vector(name);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let d = dir.to_str().unwrap();
        create_from(&v, &dir);

        let blocks: Vec<String> = ok(&["blocks", d], None)
            .lines()
            .map(str::to_string)
            .collect();
        let want: Vec<String> = v["feeds"]["source"]["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["hex"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(blocks, want, "{name}: blocks");

        for l in v["results"]["list"].as_array().unwrap() {
            let mut args = vec!["list", d, l["prefix"].as_str().unwrap()];
            let o = &l["opts"];
            if o.get("recursive") == Some(&Value::Bool(false)) {
                args.push("--no-recursive");
            }
            for (k, flag) in [
                ("reverse", "--reverse"),
                ("gt", "--gt"),
                ("deletes", "--deletes"),
            ] {
                if o.get(k) == Some(&Value::Bool(true)) {
                    args.push(flag);
                }
            }
            let got: Vec<Value> = ok(&args, None)
                .lines()
                .map(|s| serde_json::from_str(s).unwrap())
                .collect();
            let want: Vec<Value> = l["result"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|ns| ns.as_array().unwrap().iter())
                .map(|n| serde_json::json!({"key": n["key"], "value_hex": n["value"], "seq": n["seq"], "deleted": n["deleted"]}))
                .collect();
            assert_eq!(got, want, "{name}: {args:?}");
        }
        if let Some(h) = v["results"].get("history") {
            let got: Vec<Value> = ok(&["history", d], None)
                .lines()
                .map(|s| serde_json::from_str(s).unwrap())
                .collect();
            assert_eq!(got.len(), h.as_array().unwrap().len());
            for (g, w) in got.iter().zip(h.as_array().unwrap()) {
                assert_eq!(g["key"], w["key"]);
                assert_eq!(g["seq"], w["seq"]);
            }
            let rev = ok(&["history", d, "--reverse"], None);
            assert_eq!(rev.lines().count(), got.len());
        }
        ok(&["verify", d], None);
    }
}

#[test]
fn put_get_del_and_exact_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = dir.to_str().unwrap();
    let key = ok(&["create", d], None);
    assert_eq!(key.trim().len(), 64);
    ok(&["put", d, "/a/b", "hello"], None);
    ok(&["put", d, "bin", "00ff", "--hex"], None);
    assert_eq!(ok(&["get", d, "a/b"], None), "hello\n");
    assert_eq!(ok(&["get", d, "/bin", "--hex"], None), "00ff\n");
    let missing = strata(&["get", d, "/nope"], None);
    assert_eq!(missing.status.code(), Some(1));
    assert!(missing.stdout.is_empty());
    ok(&["del", d, "/a/b"], None);
    assert_eq!(strata(&["get", d, "/a/b"], None).status.code(), Some(1));
    let list = ok(&["list", d, "", "--deletes"], None);
    assert!(
        list.contains("{\"key\":\"a/b\",\"value_hex\":null,\"seq\":3,\"deleted\":true}"),
        "{list}"
    );
    assert!(
        list.contains("{\"key\":\"bin\",\"value_hex\":\"00ff\",\"seq\":2,\"deleted\":false}"),
        "{list}"
    );
    ok(&["verify", d], None);
}

#[test]
fn errors_are_one_line_with_nonzero_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = dir.to_str().unwrap();
    // No database yet.
    let out = strata(&["get", d, "k"], None);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    // Bad secret key: invalid input.
    let sk = tmp.path().join("sk");
    for bad in ["zz", "00"] {
        std::fs::write(&sk, bad).unwrap();
        let out = strata(
            &["create", d, "--secret-key-file", sk.to_str().unwrap()],
            None,
        );
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    }
    ok(&["create", d], None);
    // Creating twice fails.
    assert_ne!(strata(&["create", d], None).status.code(), Some(0));
    // Bad ops: exit 2, the line number in the message.
    let out = strata(
        &["apply", d],
        Some("{\"type\":\"put\",\"key\":\"a\",\"value\":\"61\"}\n{\"type\":\"nope\"}\n"),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
    assert_eq!(ok(&["get", d, "a"], None), "a\n");
    assert_eq!(
        strata(&["put", d, "k", "xyz", "--hex"], None).status.code(),
        Some(2)
    );
    // A flipped data byte: verify fails.
    let data = dir.join("source/data");
    let mut bytes = std::fs::read(&data).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&data, bytes).unwrap();
    let out = strata(&["verify", d], None);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("verification failed"));
}

#[test]
fn read_only_without_secret_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = dir.to_str().unwrap();
    ok(&["create", d], None);
    ok(&["put", d, "k", "v"], None);
    std::fs::write(dir.join("source/secret_key"), b"").unwrap();
    assert_eq!(ok(&["get", d, "k"], None), "v\n");
    let out = strata(&["put", d, "k", "w"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"));
    ok(&["verify", d], None);
}
