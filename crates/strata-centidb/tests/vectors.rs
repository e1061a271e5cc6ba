//! Replays every op of the vectors written by the original centidb (vectors/centidb-store:
//! three from the lead's generator, the rest from tools/centidb-reference/gen.py) and
//! compares every result and the final engine contents byte for byte. Where the original is
//! wrong, the difference is listed here with its reason (and in docs/format/centidb.md); a
//! listed op must differ, every other op must match.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value as Json;
use strata_centidb::ops::{Catalog, Replayer};
use strata_lsm::{Direction, Engine, KeyRange, MemEngine};

fn vector_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../vectors/centidb-store")
}

/// Documented differences (vectors/centidb-store/differences.json): per file, the ops whose
/// result differs and the key prefixes (hex) under which the final dump differs, with reasons.
struct Expect {
    results: Vec<(usize, String)>,
    dump_prefixes: Vec<(String, String)>,
}

fn expected(file: &str) -> Option<Expect> {
    let d: Json =
        serde_json::from_slice(&std::fs::read(vector_dir().join("differences.json")).unwrap())
            .unwrap();
    let f = d["files"].get(file)?;
    let pairs = |o: &Json| -> Vec<(String, String)> {
        o.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect()
    };
    Some(Expect {
        results: pairs(&f["results"])
            .into_iter()
            .map(|(k, v)| (k.parse().unwrap(), v))
            .collect(),
        dump_prefixes: pairs(&f["dump_prefixes"]),
    })
}

/// (op index, wanted, got).
type Mismatch = (usize, Json, Json);
/// (key hex, value hex).
type Pair = (String, String);

/// Runs a vector; returns the mismatching ops and the final dump.
fn replay(v: &Json) -> (Vec<Mismatch>, Vec<Pair>) {
    let engine: Arc<dyn Engine> = Arc::new(MemEngine::new());
    let mut r = Replayer::new(Arc::clone(&engine), Catalog::default());
    let mut bad = Vec::new();
    for (i, op) in v["ops"].as_array().unwrap().iter().enumerate() {
        let out = r.apply(op);
        let want = if op.get("error").is_some() {
            serde_json::json!({"error": true})
        } else {
            serde_json::json!({"result": op["result"]})
        };
        let got = if out.get("error").is_some() {
            serde_json::json!({"error": true})
        } else {
            out.clone()
        };
        if got != want {
            bad.push((i, want, out));
        }
    }
    let dump = engine
        .range(KeyRange::all(), Direction::Forward)
        .unwrap()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (hex::encode(k), hex::encode(v))
        })
        .collect();
    (bad, dump)
}

fn load(name: &str) -> Json {
    let p = vector_dir().join(name);
    serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
}

fn want_dump(v: &Json) -> Vec<(String, String)> {
    v["dump"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["k"].as_str().unwrap().to_owned(),
                e["v"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn every_vector_replays_as_the_original_except_where_documented() {
    let mut files: Vec<String> = std::fs::read_dir(vector_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json") && n.as_bytes()[0].is_ascii_digit())
        .collect();
    files.sort();
    let mut failures = Vec::new();
    for f in &files {
        let exp = expected(f).unwrap_or_else(|| panic!("{f}: add it to differences.json"));
        let v = load(f);
        let (bad, dump) = replay(&v);
        for (i, want, got) in &bad {
            if !exp.results.iter().any(|(j, _)| j == i) {
                failures.push(format!(
                    "{f} op {i} {}:\n  want {want}\n  got  {got}",
                    v["ops"][i]["py"]
                ));
            }
        }
        for (j, why) in &exp.results {
            if !bad.iter().any(|(i, _, _)| i == j) {
                failures.push(format!("{f} op {j} matches the original, expected: {why}"));
            }
        }
        let want = want_dump(&v);
        let allowed = |k: &str| exp.dump_prefixes.iter().any(|(p, _)| k.starts_with(p));
        for w in &want {
            if !dump.contains(w) && !allowed(&w.0) {
                failures.push(format!("{f} dump: missing {w:?}"));
            }
        }
        for g in &dump {
            if !want.contains(g) && !allowed(&g.0) {
                failures.push(format!("{f} dump: extra {g:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(files.len() >= 9, "vectors missing: {files:?}");
}
