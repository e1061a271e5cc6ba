//! `strata --db DIR table ...`: runs the built binary and checks its exact output.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value as Json};

struct Cli {
    dir: tempfile::TempDir,
}

impl Cli {
    fn new() -> Cli {
        Cli {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
        c.arg("--db")
            .arg(self.dir.path().join("db"))
            .arg("table")
            .args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn run_stdin(&self, args: &[&str], input: &str) -> Output {
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs and expects success; returns stdout lines as JSON.
    fn ok(&self, args: &[&str]) -> Vec<Json> {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            o.stderr.is_empty(),
            "{args:?}: stderr {}",
            String::from_utf8_lossy(&o.stderr)
        );
        lines(&o)
    }

    /// Runs and expects failure with `code`; returns the one stderr line.
    fn fails(&self, args: &[&str], code: i32) -> String {
        let o = self.run(args);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{args:?}: stdout {}",
            String::from_utf8_lossy(&o.stdout)
        );
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "one line: {err:?}");
        err
    }
}

fn lines(o: &Output) -> Vec<Json> {
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

const POSTS: &str = r#"{"name":"posts","partition":[{"name":"user","type":"text"}],"sort":[{"name":"ts","type":"int","order":"desc","nulls":"last"}]}"#;

#[test]
fn create_list_drop() {
    let cli = Cli::new();
    cli.ok(&["create", POSTS]);
    cli.ok(&["create", POSTS]); // same schema: fine
    cli.ok(&[
        "create",
        r#"{"name":"a","partition":[{"name":"k","type":"bytes"}]}"#,
    ]);
    let list = cli.ok(&["list"]);
    assert_eq!(
        list,
        vec![
            json!({"name":"a","partition":[{"name":"k","type":"bytes","order":"asc","nulls":"first"}],"sort":[]}),
            json!({"name":"posts","partition":[{"name":"user","type":"text","order":"asc","nulls":"first"}],"sort":[{"name":"ts","type":"int","order":"desc","nulls":"last"}]}),
        ]
    );
    let e = cli.fails(
        &[
            "create",
            r#"{"name":"posts","partition":[{"name":"user","type":"int"}]}"#,
        ],
        1,
    );
    assert!(e.contains("posts") && e.contains("different schema"), "{e}");
    let e = cli.fails(
        &[
            "create",
            r#"{"name":"x","partition":[{"name":"k","type":"integer"}]}"#,
        ],
        2,
    );
    assert!(e.contains("unknown key type"), "{e}");
    let e = cli.fails(&["create", "{nope"], 2);
    assert!(e.contains("column"), "{e}");
    cli.ok(&["put", "posts", r#"{"user":"u1","ts":1}"#]);
    cli.ok(&["drop", "posts"]);
    assert_eq!(cli.ok(&["list"]).len(), 1);
    let e = cli.fails(&["get", "posts", r#"{"user":"u1","ts":1}"#], 1);
    assert!(e.contains("\"posts\" does not exist"), "{e}");
    let e = cli.fails(&["drop", "posts"], 1);
    assert!(e.contains("posts"), "{e}");
    // Re-created: empty.
    cli.ok(&["create", POSTS]);
    assert!(cli.ok(&["scan", "posts"]).is_empty());
}

#[test]
fn put_get_delete() {
    let cli = Cli::new();
    cli.ok(&["create", POSTS]);
    let item = json!({"user":"u1","ts":5,"body":"hi","tags":["a",{"n":1}],"raw":{"t":"bytes","hex":"00ff"},"score":1.5});
    cli.ok(&["put", "posts", &item.to_string()]);
    let got = cli.ok(&["get", "posts", r#"{"user":"u1","ts":5}"#]);
    assert_eq!(got, vec![item.clone()]);
    // Missing: nothing on stdout, nothing on stderr, exit 1.
    let o = cli.run(&["get", "posts", r#"{"user":"u1","ts":6}"#]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty() && o.stderr.is_empty());
    // --if-not-exists.
    let e = cli.fails(
        &[
            "put",
            "posts",
            r#"{"user":"u1","ts":5,"body":"again"}"#,
            "--if-not-exists",
        ],
        1,
    );
    assert!(e.contains("posts") && e.contains("already exists"), "{e}");
    cli.ok(&["put", "posts", r#"{"user":"u1","ts":6}"#, "--if-not-exists"]);
    assert_eq!(
        cli.ok(&["get", "posts", r#"{"user":"u1","ts":5}"#]),
        vec![item]
    );
    cli.ok(&["delete", "posts", r#"{"user":"u1","ts":5}"#]);
    assert_eq!(
        cli.run(&["get", "posts", r#"{"user":"u1","ts":5}"#])
            .status
            .code(),
        Some(1)
    );
    // Errors name the attribute.
    let e = cli.fails(&["put", "posts", r#"{"user":"u1"}"#], 2);
    assert!(
        e.contains("posts") && e.contains("missing key attribute \"ts\""),
        "{e}"
    );
    let e = cli.fails(&["put", "posts", r#"{"user":"u1","ts":"x"}"#], 2);
    assert!(e.contains("\"ts\" must be int, found text"), "{e}");
    let e = cli.fails(&["get", "posts", r#"{"user":"u1","ts":1,"body":"x"}"#], 2);
    assert!(e.contains("\"body\" is not a key attribute"), "{e}");
    let e = cli.fails(
        &[
            "put",
            "posts",
            r#"{"user":"u1","ts":1,"b":{"t":"bytes","hex":"zz"}}"#,
        ],
        2,
    );
    assert!(e.contains("$.b.hex"), "{e}");
    let e = cli.fails(&["put", "nope", r#"{"user":"u1","ts":1}"#], 1);
    assert!(e.contains("\"nope\""), "{e}");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["table", "list"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

fn ts_of(lines: &[Json]) -> Vec<i64> {
    lines
        .iter()
        .filter_map(|j| j.get("ts").and_then(Json::as_i64))
        .collect()
}

#[test]
fn bulk_load_query_and_pagination() {
    let cli = Cli::new();
    cli.ok(&["create", POSTS]);
    let mut input = String::new();
    for u in 0..3 {
        for ts in 0..1500 {
            input.push_str(&format!(
                "{{\"user\":\"u{u}\",\"ts\":{ts},\"n\":{}}}\n",
                u * 10_000 + ts
            ));
        }
    }
    input.push('\n'); // blank lines are skipped
    let o = cli.run_stdin(&["put", "posts"], &input);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Exact query from the issue: between, inclusive, descending sort key.
    // Operators compare values: between [1, 9] is 1 ≤ ts ≤ 9, returned newest first.
    let q = r#"{"partition":{"user":"u1"},"sort":{"op":"between","values":[1,9]},"reverse":false,"limit":10,"after":null}"#;
    let out = cli.ok(&["query", "posts", q]);
    assert_eq!(ts_of(&out), vec![9, 8, 7, 6, 5, 4, 3, 2, 1]);
    assert!(out.iter().all(|j| j.get("last_key").is_none()));

    // Pagination: pages of 7 through one whole partition, reverse, no skip, no repeat.
    let mut after = Json::Null;
    let mut all = Vec::new();
    loop {
        let q = json!({"partition":{"user":"u2"},"reverse":true,"limit":7,"after":after});
        let out = cli.ok(&["query", "posts", &q.to_string()]);
        let (last, items) = match out.last().and_then(|j| j.get("last_key")) {
            Some(k) => (Some(k.clone()), &out[..out.len() - 1]),
            None => (None, &out[..]),
        };
        all.extend(ts_of(items));
        match last {
            Some(k) => {
                assert_eq!(items.len(), 7);
                assert_eq!(k, json!({"user":"u2","ts": all.last().unwrap()}));
                after = k;
            }
            None => break,
        }
        if all.len() > 400 {
            break; // enough pages through the CLI; the library tests cover the rest
        }
    }
    assert_eq!(all, (0..all.len() as i64).collect::<Vec<_>>());

    // Every operator.
    let op = |op: &str, values: Json| {
        let q = json!({"partition":{"user":"u0"},"sort":{"op":op,"values":values},"limit":3});
        ts_of(&cli.ok(&["query", "posts", &q.to_string()]))
    };
    assert_eq!(op("eq", json!([7])), vec![7]);
    // Values compare as values on the descending `ts` (results newest first).
    assert_eq!(op("lt", json!([7])), vec![6, 5, 4]);
    assert_eq!(op("le", json!([7])), vec![7, 6, 5]);
    assert_eq!(op("gt", json!([7])), vec![1499, 1498, 1497]);
    assert_eq!(op("ge", json!([7])), vec![1499, 1498, 1497]);
    assert_eq!(op("between", json!([3, 5])), vec![5, 4, 3]);
    let e = cli.fails(
        &[
            "query",
            "posts",
            r#"{"partition":{"user":"u0"},"sort":{"op":"begins_with","values":[7]}}"#,
        ],
        2,
    );
    assert!(e.contains("begins_with"), "{e}");
    let e = cli.fails(
        &[
            "query",
            "posts",
            r#"{"partition":{"user":"u0"},"sort":{"op":"near","values":[7]}}"#,
        ],
        2,
    );
    assert!(e.contains("unknown op"), "{e}");
    let e = cli.fails(&["query", "posts", r#"{"partition":{"usr":"u0"}}"#], 2);
    assert!(e.contains("\"usr\""), "{e}");

    // Scan: 4 segments with pagination cover all 4,500 items exactly once.
    let mut seen = std::collections::BTreeSet::new();
    for seg in 0..4 {
        let mut after = Json::Null;
        loop {
            let s = json!({"segment":seg,"segments":4,"limit":1000,"after":after});
            let out = cli.ok(&["scan", "posts", &s.to_string()]);
            let mut next = None;
            for j in out {
                match j.get("last_key") {
                    Some(k) => next = Some(k.clone()),
                    None => assert!(seen.insert(j["n"].as_i64().unwrap()), "repeated {j}"),
                }
            }
            match next {
                Some(k) => after = k,
                None => break,
            }
        }
    }
    assert_eq!(seen.len(), 4500);
    let e = cli.fails(&["scan", "posts", r#"{"segment":4,"segments":4}"#], 2);
    assert!(e.contains("segment 4 of 4"), "{e}");
}

#[test]
fn bulk_load_reports_the_bad_line() {
    let cli = Cli::new();
    cli.ok(&["create", POSTS]);
    let o = cli.run_stdin(
        &["put", "posts"],
        "{\"user\":\"a\",\"ts\":1}\n{\"user\":\"a\"}\n{\"user\":\"a\",\"ts\":3}\n",
    );
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8(o.stderr).unwrap();
    assert!(
        e.starts_with("strata: line 2: ") && e.contains("\"ts\""),
        "{e}"
    );
    // The line before the bad one was written, the one after was not.
    assert_eq!(cli.ok(&["scan", "posts"]).len(), 1);
    let o = cli.run_stdin(
        &["put", "posts", "--if-not-exists"],
        "{\"user\":\"a\",\"ts\":2}\n{\"user\":\"a\",\"ts\":1}\n",
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8(o.stderr).unwrap().contains("line 2"));
    assert_eq!(cli.ok(&["scan", "posts"]).len(), 2);
}

#[test]
fn typed_keys_and_tuples() {
    let cli = Cli::new();
    cli.ok(&[
        "create",
        r#"{"name":"m","partition":[{"name":"id","type":"uuid"},{"name":"b","type":"bytes"}],"sort":[{"name":"x","type":"f64","nulls":"last"},{"name":"tp","type":"tuple"}]}"#,
    ]);
    // A string converts to a uuid, an integer to f64, an array to a tuple.
    cli.ok(&["put", "m", r#"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","b":{"t":"bytes","hex":"00"},"x":2,"tp":[1,"a"]}"#]);
    cli.ok(&["put", "m", r#"{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","b":{"t":"bytes","hex":"00"},"x":null,"tp":[]}"#]);
    let q = r#"{"partition":{"id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","b":{"t":"bytes","hex":"00"}}}"#;
    let out = cli.ok(&["query", "m", q]);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["x"], json!(2.0));
    assert_eq!(out[0]["tp"]["t"], json!("tuple"));
    assert_eq!(out[1]["x"], Json::Null);
    assert_eq!(out[0]["id"]["t"], json!("uuid"));
    // Output is valid input: get it back by its own key attributes.
    let key = json!({"id": out[0]["id"], "b": out[0]["b"], "x": out[0]["x"], "tp": out[0]["tp"]});
    assert_eq!(
        cli.ok(&["get", "m", &key.to_string()]),
        vec![out[0].clone()]
    );
}
