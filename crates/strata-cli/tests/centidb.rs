//! `strata centidb`: apply/dump against the original's vectors, the everyday commands, and
//! crash tests with real processes (kill -9 during puts and during batch compression).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value as Json};

fn strata(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("centidb")
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

fn with_stdin(db: &Path, args: &[&str], input: &str) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("centidb")
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

fn lines(o: &Output) -> Vec<Json> {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn vector(name: &str) -> Json {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../vectors/centidb-store")
        .join(name);
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// The documented differences of one vector file (vectors/centidb-store/differences.json):
/// op indexes whose result differs, and key prefixes (hex) under which the dump differs.
fn differences(name: &str) -> (BTreeSet<usize>, Vec<String>) {
    let d = vector("differences.json");
    let f = &d["files"][name];
    assert!(f.is_object(), "{name}: add it to differences.json");
    let ops = f["results"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.parse().unwrap())
        .collect();
    let prefixes = f["dump_prefixes"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    (ops, prefixes)
}

#[test]
fn apply_and_dump_reproduce_the_original() {
    // Every vector file through `strata centidb apply` (a real process on an LSM directory):
    // every result and every dumped byte matches the original, except the documented
    // differences, each of which must still differ.
    let mut names: Vec<String> = std::fs::read_dir(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../vectors/centidb-store"),
    )
    .unwrap()
    .map(|e| e.unwrap().file_name().into_string().unwrap())
    .filter(|n| n.ends_with(".json") && n.as_bytes()[0].is_ascii_digit())
    .collect();
    names.sort();
    assert!(names.len() >= 9, "{names:?}");
    let mut failures = Vec::new();
    for name in &names {
        let (diff_ops, diff_prefixes) = differences(name);
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("db");
        let v = vector(name);
        let want_ops = v["ops"].as_array().unwrap();
        let ops: String = want_ops.iter().map(|o| format!("{o}\n")).collect();
        let out = lines(&with_stdin(&db, &["--sync", "none", "apply"], &ops));
        assert_eq!(out.len(), want_ops.len(), "{name}");
        for (i, (o, r)) in want_ops.iter().zip(&out).enumerate() {
            let same = if o.get("error").is_some() {
                r.get("error").is_some()
            } else {
                r.get("result") == Some(&o["result"])
            };
            if same == diff_ops.contains(&i) {
                failures.push(format!("{name} op {i} {}: want {o} got {r}", o["py"]));
            }
        }
        let dump = lines(&strata(&db, &["dump"]));
        let want: Vec<Json> = v["dump"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| json!({"k": e["k"], "v": e["v"]}))
            .collect();
        let allowed = |e: &Json| {
            let k = e["k"].as_str().unwrap();
            diff_prefixes.iter().any(|p| k.starts_with(p.as_str()))
        };
        let got_kept: Vec<&Json> = dump.iter().filter(|e| !allowed(e)).collect();
        let want_kept: Vec<&Json> = want.iter().filter(|e| !allowed(e)).collect();
        if got_kept != want_kept {
            failures.push(format!(
                "{name}: dump differs outside the documented prefixes"
            ));
        }
        if diff_prefixes.is_empty() && dump != want {
            failures.push(format!("{name}: dump differs"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_bad_op_line_is_an_error_line_and_the_rest_goes_on() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let input = "{\"op\":\"count\",\"name\":\"a\",\"n\":{\"t\":\"int\",\"v\":\"2\"}}\nnot json\n{\"op\":\"nope\"}\n{\"op\":\"count\",\"name\":\"a\",\"n\":{\"t\":\"int\",\"v\":\"0\"}}\n";
    let out = lines(&with_stdin(&db, &["apply"], input));
    assert_eq!(out[0], json!({"result": {"t": "int", "v": "1"}}));
    assert!(out[1]["error"].as_str().unwrap().contains("line 2"));
    assert!(out[2]["error"].as_str().unwrap().contains("unknown op"));
    assert_eq!(out[3], json!({"result": {"t": "int", "v": "3"}}));
}

/// Names, sizes and modification times of every file under `dir`.
fn files(dir: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        out.insert(
            e.file_name().into_string().unwrap(),
            (m.len(), m.modified().unwrap()),
        );
    }
    out
}

#[test]
fn reads_write_nothing_a_held_directory_is_refused_and_a_table_database_too() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    lines(&strata(&db, &["create", "people", "--key", "field:name"]));
    lines(&strata(
        &db,
        &["add-index", "people", "by_age", "field:age"],
    ));
    lines(&strata(
        &db,
        &["put", "people", r#"{"name":"alice","age":30}"#],
    ));
    // Reading commands open read-only: the directory is left exactly as it was.
    let before = files(&db);
    std::thread::sleep(Duration::from_millis(20));
    for args in [
        &["get", "people", "alice"][..],
        &["items", "people"],
        &["index", "people", "by_age", "--args", "30"],
        &["collections"],
        &["dump"],
    ] {
        lines(&strata(&db, args));
    }
    assert_eq!(
        files(&db),
        before,
        "a reading command changed the directory"
    );
    // A get of a collection that does not exist fails without creating it.
    assert_eq!(strata(&db, &["get", "nobody", "x"]).status.code(), Some(1));
    assert_eq!(files(&db), before);

    // While a writer holds the directory, every other command is refused at once (exit 3).
    let mut w = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["centidb", "--db"])
        .arg(&db)
        .args(["put", "people"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = w.stdin.take().unwrap();
    writeln!(stdin, r#"{{"name":"bob","age":25}}"#).unwrap();
    let mut ack = String::new();
    BufReader::new(w.stdout.take().unwrap())
        .read_line(&mut ack)
        .unwrap();
    assert_eq!(ack.trim(), r#"["bob"]"#);
    for args in [
        &["get", "people", "alice"][..],
        &["put", "people", "{}"],
        &["dump"],
    ] {
        let o = strata(&db, args);
        assert_eq!(o.status.code(), Some(3), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("in use"));
    }
    drop(stdin);
    assert!(w.wait().unwrap().success());
    assert_eq!(lines(&strata(&db, &["items", "people", "--keys"])).len(), 2);

    // A table database (partitioner native-tuple:2) is not a centidb store.
    let t = d.path().join("table");
    let o = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--db")
        .arg(&t)
        .args([
            "table",
            "create",
            r#"{"name":"t","partition":[{"name":"p","type":"text"}],"sort":[]}"#,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = files(&t);
    for args in [&["create", "c", "--key", "item:0"][..], &["dump"]] {
        let o = strata(&t, args);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("partitioned by"), "{err}");
    }
    assert_eq!(files(&t), before);
}

#[test]
fn everyday_commands() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let c = lines(&strata(&db, &["create", "people", "--key", "field:name"]));
    assert_eq!(c, [json!({"idx": 10, "prefix_hex": "0a"})]);
    lines(&strata(
        &db,
        &["add-index", "people", "by_age", "field:age"],
    ));
    for p in [r#"{"name":"alice","age":30}"#, r#"{"name":"bob","age":25}"#] {
        lines(&strata(&db, &["put", "people", p]));
    }
    let keys = lines(&with_stdin(
        &db,
        &["put", "people"],
        "{\"name\":\"carol\",\"age\":30}\n{\"name\":\"dave\",\"age\":41}\n",
    ));
    assert_eq!(keys, [json!(["carol"]), json!(["dave"])]);
    assert_eq!(
        lines(&strata(&db, &["get", "people", "bob"])),
        [json!({"age": 25, "name": "bob"})]
    );
    assert_eq!(
        strata(&db, &["get", "people", "zed"]).status.code(),
        Some(1)
    );
    let k = lines(&strata(
        &db,
        &["items", "people", "--keys", "--reverse", "--max", "2"],
    ));
    assert_eq!(k, [json!(["dave"]), json!(["carol"])]);
    let idx = lines(&strata(
        &db,
        &["index", "people", "by_age", "--args", "30", "--pairs"],
    ));
    assert_eq!(idx, [json!([[30], ["alice"]]), json!([[30], ["carol"]])]);
    let n = lines(&strata(
        &db,
        &["index", "people", "by_age", "--lo", "26", "--count"],
    ));
    assert_eq!(n, [json!(3)]);
    let b = lines(&strata(
        &db,
        &["batch", "people", "--max-recs", "3", "--packer", "zstd"],
    ));
    assert_eq!(b, [json!({"found": 3, "made": 1, "last_key": ["dave"]})]);
    // Reads see through the batch; a replace splits it and moves the index entry.
    lines(&strata(
        &db,
        &["put", "people", r#"{"name":"carol","age":31}"#],
    ));
    let idx = lines(&strata(
        &db,
        &["index", "people", "by_age", "--args", "[30]"],
    ));
    assert_eq!(idx, [json!([["alice"], {"age": 30, "name": "alice"}])]);
    assert_eq!(
        strata(&db, &["delete", "people", "bob"]).status.code(),
        Some(0)
    );
    assert_eq!(
        strata(&db, &["delete", "people", "bob"]).status.code(),
        Some(1)
    );
    let all = lines(&strata(&db, &["items", "people", "--typed", "--lo", "c"]));
    assert_eq!(all.len(), 2);
    assert_eq!(
        all[0][0],
        json!({"t": "tuple", "items": [{"t": "text", "v": "carol", "utf8_hex": "6361726f6c"}]})
    );
    assert_eq!(
        lines(&strata(&db, &["count", "hits", "--n", "5"])),
        [json!(1)]
    );
    assert_eq!(
        lines(&strata(&db, &["count", "hits", "--n", "0"])),
        [json!(6)]
    );
    let cols = lines(&strata(&db, &["collections"]));
    assert_eq!(cols[0]["name"], "people");
    assert_eq!(cols[0]["key"], "field:name");
    assert_eq!(cols[0]["indexes"]["by_age"], "field:age");
    assert_eq!(cols[1]["kind"], "index");
    // Auto-increment and errors.
    lines(&strata(&db, &["create", "log", "--encoder", "key"]));
    assert_eq!(
        lines(&strata(&db, &["put", "log", "[\"hello\"]"])),
        [json!([1])]
    );
    let e = strata(&db, &["create", "log", "--encoder", "json"]);
    assert_eq!(e.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&e.stderr).contains("encoder"));
    let e = strata(&db, &["get", "nosuch", "1"]);
    assert_eq!(e.status.code(), Some(1));
}

/// Loads `n` records into `logs` (key `id`, index on `level`) and returns them by id.
fn load_logs(db: &Path, n: usize) -> BTreeMap<i64, Json> {
    lines(&strata(db, &["create", "logs", "--key", "field:id"]));
    lines(&strata(
        db,
        &["add-index", "logs", "by_level", "field:level"],
    ));
    let mut recs = BTreeMap::new();
    // In chunks: `with_stdin` reads the acknowledgements only after writing all input, and
    // more than a pipe's worth of them would block the writer.
    for chunk in (0..n as i64).collect::<Vec<_>>().chunks(2000) {
        let mut input = String::new();
        for &i in chunk {
            let level = ["info", "warn", "error"][(i % 3) as usize];
            let r = json!({"id": i, "level": level,
                "msg": format!("request {i} served in {} ms from host-{}", i * 7 % 1000, i % 17)});
            input.push_str(&format!("{r}\n"));
            recs.insert(i, r);
        }
        lines(&with_stdin(db, &["--sync", "none", "put", "logs"], &input));
    }
    recs
}

/// Records and index entries agree with `recs`: every record present with its value, no
/// other record, and the index holds exactly one entry per record.
fn check_consistent(db: &Path, recs: &BTreeMap<i64, Json>) {
    let items = lines(&strata(db, &["items", "logs"]));
    let got: BTreeMap<i64, Json> = items
        .iter()
        .map(|kv| (kv[0][0].as_i64().unwrap(), kv[1].clone()))
        .collect();
    assert_eq!(items.len(), got.len(), "duplicate records");
    assert_eq!(&got, recs, "records changed");
    let pairs = lines(&strata(db, &["index", "logs", "by_level", "--pairs"]));
    let got: BTreeSet<(String, i64)> = pairs
        .iter()
        .map(|p| {
            (
                p[0][0].as_str().unwrap().to_owned(),
                p[1][0].as_i64().unwrap(),
            )
        })
        .collect();
    let want: BTreeSet<(String, i64)> = recs
        .iter()
        .map(|(k, r)| (r["level"].as_str().unwrap().to_owned(), *k))
        .collect();
    assert_eq!(pairs.len(), got.len(), "duplicate index entries");
    assert_eq!(got, want, "index out of step with records");
}

#[test]
fn kill_9_during_batch_compression_leaves_records_and_indexes_consistent() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    // Enough records that a batch run takes far longer than the first kill's delay even on a
    // quiet machine (3,000 were batched in under 40 ms there, and no run was interrupted).
    const N: usize = 20_000;
    let recs = load_logs(&db, N);
    check_consistent(&db, &recs);
    let mut killed = 0;
    for round in 0..6u64 {
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["centidb", "--db"])
            .arg(&db)
            .args([
                "batch",
                "logs",
                "--max-recs",
                "7",
                "--packer",
                "zlib",
                "--part-bytes",
                "2048",
            ])
            .args(if round % 2 == 0 {
                &["--no-preserve"][..]
            } else {
                &[][..]
            })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(25 + 37 * round));
        if c.try_wait().unwrap().is_none() {
            killed += 1;
        }
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
        check_consistent(&db, &recs);
    }
    assert!(
        killed > 0,
        "no batch run was interrupted: make the data larger"
    );
    lines(&strata(
        &db,
        &["batch", "logs", "--max-recs", "7", "--packer", "zlib"],
    ));
    check_consistent(&db, &recs);
    // Every record is now in a batch: the dump has about n/7 record pairs.
    let dump = lines(&strata(&db, &["dump"]));
    let record_pairs = dump
        .iter()
        .filter(|e| e["k"].as_str().unwrap().starts_with("0a"))
        .count();
    assert!(record_pairs <= N / 7 + 8, "{record_pairs} record pairs");
}

#[test]
fn kill_9_during_puts_loses_no_acknowledged_record() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("db");
    let mut recs = load_logs(&db, 300);
    lines(&strata(
        &db,
        &["batch", "logs", "--max-recs", "10", "--packer", "zlib"],
    ));
    let mut c = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["centidb", "--db"])
        .arg(&db)
        .args(["put", "logs"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    // Replace records inside batches (splits) and add new ones; stop after some acks.
    let mut sent = BTreeMap::new();
    let mut acked = 0;
    let mut line = String::new();
    for i in 0..400i64 {
        let id = if i % 2 == 0 { i % 300 } else { 1000 + i };
        let r = json!({"id": id, "level": "crash", "msg": format!("v{i}")});
        writeln!(stdin, "{r}").unwrap();
        stdin.flush().unwrap();
        sent.insert(id, r);
        line.clear();
        out.read_line(&mut line).unwrap();
        assert_eq!(serde_json::from_str::<Json>(&line).unwrap(), json!([id]));
        acked += 1;
        if acked == 150 {
            break;
        }
    }
    c.kill().unwrap();
    c.wait().unwrap();
    for (id, r) in sent {
        recs.insert(id, r);
    }
    check_consistent(&db, &recs);
}
