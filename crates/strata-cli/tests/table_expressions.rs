//! `strata table` with DynamoDB expressions: --condition, --update, --filter, --projection,
//! --names, --values.

use std::process::{Command, Output};

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

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("--db")
            .arg(self.dir.path().join("db"))
            .arg("table")
            .args(args)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> Vec<Json> {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn fails(&self, args: &[&str], code: i32) -> String {
        let o = self.run(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {o:?}");
        assert!(o.stdout.is_empty());
        String::from_utf8(o.stderr).unwrap()
    }
}

#[test]
fn expressions_on_the_command_line() {
    let cli = Cli::new();
    cli.ok(&[
        "create",
        r#"{"name":"acct","partition":[{"name":"id","type":"text"}]}"#,
    ]);
    cli.ok(&["put", "acct", r#"{"id":"a","bal":10,"tags":["x"]}"#]);
    // A conditional put that fails: exit 1, nothing written.
    let e = cli.fails(
        &[
            "put",
            "acct",
            r#"{"id":"a","bal":0}"#,
            "--condition",
            "attribute_not_exists(id)",
        ],
        1,
    );
    assert!(e.contains("condition failed"), "{e}");
    // An update with a condition, references and arithmetic; prints the item after.
    let after = cli.ok(&[
        "update",
        "acct",
        r#"{"id":"a"}"#,
        "--update",
        "SET #b = #b - :amt, tags = list_append(tags, :t)",
        "--condition",
        "#b >= :amt",
        "--names",
        r##"{"#b":"bal"}"##,
        "--values",
        r#"{":amt":4,":t":["y"]}"#,
    ]);
    assert_eq!(after, vec![json!({"id":"a","bal":6,"tags":["x","y"]})]);
    let e = cli.fails(
        &[
            "update",
            "acct",
            r#"{"id":"a"}"#,
            "--update",
            "SET bal = bal - :amt",
            "--condition",
            "bal >= :amt",
            "--values",
            r#"{":amt":100}"#,
        ],
        1,
    );
    assert!(e.contains("condition failed"), "{e}");
    // Bad expressions are input errors (exit 2) with DynamoDB's message.
    let e = cli.fails(
        &[
            "update",
            "acct",
            r#"{"id":"a"}"#,
            "--update",
            "SET id = :v",
            "--values",
            r#"{":v":1}"#,
        ],
        2,
    );
    assert!(e.contains("part of the key"), "{e}");
    let e = cli.fails(
        &[
            "scan",
            "acct",
            "--filter",
            "bal = :v",
            "--values",
            r#"{":v":1,":unused":2}"#,
        ],
        2,
    );
    assert!(e.contains(":unused"), "{e}");
    cli.ok(&["put", "acct", r#"{"id":"b","bal":50}"#]);
    cli.ok(&["put", "acct", r#"{"id":"c","bal":7}"#]);
    let rich = cli.ok(&[
        "scan",
        "acct",
        "--filter",
        "bal > :v",
        "--projection",
        "id",
        "--values",
        r#"{":v":6}"#,
    ]);
    let mut ids: Vec<_> = rich.iter().map(|j| j["id"].clone()).collect();
    ids.sort_by_key(|j| j.to_string());
    assert_eq!(ids, vec![json!("b"), json!("c")]);
    assert_eq!(
        cli.ok(&["get", "acct", r#"{"id":"a"}"#, "--projection", "tags[1]"]),
        vec![json!({"tags":["y"]})]
    );
    cli.ok(&[
        "delete",
        "acct",
        r#"{"id":"c"}"#,
        "--condition",
        "bal < :v",
        "--values",
        r#"{":v":8}"#,
    ]);
    assert_eq!(
        cli.run(&["get", "acct", r#"{"id":"c"}"#]).status.code(),
        Some(1)
    );
}
