//! Interop with the reference hyperdb 3.5.0 on disk: JS writes a directory, Strata reads it and
//! appends to it; Strata writes a directory, JS reads it; both agree on every key and listing.
//! Skipped (with a notice) when `node` and `npm` are not installed. The npm install is cached
//! under the target directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use strata_hyperdb::{BatchOp, CreateOptions, Hyperdb, ListOptions, Node, PutOptions};

fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The reference installed (once) under the target directory.
fn reference() -> Option<PathBuf> {
    if !have("node") || !have("npm") {
        eprintln!("NOTICE: node/npm not found; skipping the hyperdb interop test");
        return None;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hyperdb-reference");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["package.json", "interop.js"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    if !dir.join("node_modules/hyperdb/package.json").exists() {
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .output()
            .unwrap();
        if !out.status.success() {
            eprintln!(
                "NOTICE: npm install failed ({}); skipping the hyperdb interop test",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
    }
    Some(dir)
}

fn node_js(reference: &Path, mode: &str, db: &Path, ops: &Path) -> Value {
    let out = Command::new("node")
        .arg(reference.join("interop.js"))
        .args([mode, db.to_str().unwrap(), ops.to_str().unwrap()])
        .env("HYPERDB_NODE_MODULES", reference.join("node_modules"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "node {mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Deterministic ops (xorshift): puts, overwrites, deletes, null puts, a batch, trailing slashes.
fn ops(seed: u64, n: usize) -> Vec<Value> {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let segs = ["a", "b", "c", "dir", "x", "ü", "mpomeiehc", "idgcmnmna"];
    let key = |r: u64| {
        let depth = 1 + (r % 3) as usize;
        let mut k = String::new();
        for d in 0..depth {
            k.push('/');
            k.push_str(segs[((r >> (8 + 4 * d)) % segs.len() as u64) as usize]);
        }
        if (r >> 40).is_multiple_of(11) {
            k.push('/');
        }
        k
    };
    let mut out = Vec::new();
    for i in 0..n {
        let r = next();
        let k = key(r);
        out.push(match r % 13 {
            0 | 1 => json!({"type": "del", "key": k}),
            2 => json!({"type": "put", "key": k, "value": null}),
            3 => json!({"type": "put", "key": k, "value": "69", "opts": {"ifNotExists": true}}),
            4 if i % 5 == 0 => json!({"type": "batch", "batch": [
                {"type": "put", "key": key(next()), "value": hex::encode(format!("b{i}"))},
                {"type": "del", "key": key(next())},
                {"type": "put", "key": key(next()), "value": ""},
            ]}),
            _ => json!({"type": "put", "key": k, "value": hex::encode(format!("v{i}"))}),
        });
    }
    out
}

fn apply(db: &mut Hyperdb, op: &Value) {
    let hexv = |v: &Value| v.as_str().map(|s| hex::decode(s).unwrap());
    match op["type"].as_str().unwrap() {
        "put" => {
            let ine = op.pointer("/opts/ifNotExists").is_some();
            db.put_with(
                op["key"].as_str().unwrap(),
                hexv(&op["value"]).as_deref(),
                PutOptions { if_not_exists: ine },
            )
            .unwrap();
        }
        "del" => {
            db.del(op["key"].as_str().unwrap()).unwrap();
        }
        _ => {
            let b: Vec<BatchOp> = op["batch"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| match o["type"].as_str().unwrap() {
                    "put" => BatchOp::Put {
                        key: o["key"].as_str().unwrap().into(),
                        value: hexv(&o["value"]),
                    },
                    _ => BatchOp::Del {
                        key: o["key"].as_str().unwrap().into(),
                    },
                })
                .collect();
            db.batch(&b).unwrap();
        }
    }
}

fn nj(n: &Node) -> Value {
    json!({"key": n.key, "value": n.value.as_ref().map(hex::encode), "seq": n.seq, "deleted": n.deleted})
}

/// The same dump as interop.js, from Strata.
fn dump(db: &Hyperdb, ops: &[Value]) -> Value {
    let snap = db.snapshot();
    let mut gets = serde_json::Map::new();
    for op in ops {
        let keys: Vec<&str> = match op["type"].as_str().unwrap() {
            "batch" => op["batch"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["key"].as_str().unwrap())
                .collect(),
            _ => vec![op["key"].as_str().unwrap()],
        };
        for k in keys {
            gets.insert(
                k.to_string(),
                Value::Array(
                    snap.get_all(k, false)
                        .unwrap()
                        .iter()
                        .map(|n| nj(n))
                        .collect(),
                ),
            );
        }
    }
    let list = |o: ListOptions| -> Value {
        Value::Array(
            snap.list("", o)
                .unwrap()
                .iter()
                .map(|ns| Value::Array(ns.iter().map(|n| nj(n)).collect()))
                .collect(),
        )
    };
    json!({
        "length": db.len(),
        "key": hex::encode(db.key()),
        "gets": Value::Object(gets),
        "list": list(ListOptions::default()),
        "listFlat": list(ListOptions { recursive: false, ..Default::default() }),
    })
}

fn write_ops(path: &Path, ops: &[Value]) {
    let s: String = ops.iter().map(|o| format!("{o}\n")).collect();
    std::fs::write(path, s).unwrap();
}

#[test]
fn strata_and_the_reference_read_each_other() {
    let Some(reference) = reference() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let first = ops(0x9E3779B97F4A7C15, 150);
    let ops_file = tmp.path().join("ops.jsonl");
    write_ops(&ops_file, &first);

    // JS writes, Strata reads.
    let js_dir = tmp.path().join("js");
    let js = node_js(&reference, "apply", &js_dir, &ops_file);
    let db = Hyperdb::open(&js_dir).unwrap();
    db.feed().verify().unwrap();
    assert_eq!(dump(&db, &first), js, "Strata reading the JS directory");
    // One process opens a directory at a time: a second open fails fast while it is held.
    assert!(matches!(
        Hyperdb::open_read_only(&js_dir),
        Err(strata_hyperdb::Error::Locked { .. })
    ));
    drop(db);

    // Strata writes the same ops: identical logical content, and JS reads it.
    let rs_dir = tmp.path().join("rs");
    let mut rs = Hyperdb::create(&rs_dir, CreateOptions::default()).unwrap();
    for op in &first {
        apply(&mut rs, op);
    }
    let mut ours = dump(&rs, &first);
    assert_eq!(ours["list"], js["list"]);
    assert_eq!(ours["gets"], js["gets"]);
    drop(rs);
    let js_read = node_js(&reference, "dump", &rs_dir, &ops_file);
    ours["length"] = js_read["length"].clone();
    assert_eq!(js_read, ours, "JS reading the Strata directory");

    // Strata appends to the JS-written directory; JS reads the result.
    let more = ops(0xD1B54A32D192ED03, 60);
    let mut db = Hyperdb::open(&js_dir).unwrap();
    for op in &more {
        apply(&mut db, op);
    }
    let all: Vec<Value> = first.iter().chain(more.iter()).cloned().collect();
    let expected = dump(&db, &all);
    drop(db);
    write_ops(&ops_file, &all);
    let js_again = node_js(&reference, "dump", &js_dir, &ops_file);
    assert_eq!(
        js_again, expected,
        "JS reading a JS directory that Strata appended to"
    );
}
