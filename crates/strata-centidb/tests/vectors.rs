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

/// Documented differences: ops whose result differs, and key prefixes (hex) under which
/// the final dump differs.
struct Expect {
    file: &'static str,
    results: &'static [(usize, &'static str)],
    dump_prefixes: &'static [(&'static str, &'static str)],
}

const KEY_LIST: &str = "a KEY-encoded list of tuples decodes whole (the original: first tuple)";
const SPLIT: &str = "a put over a batch member or inside a batch's span splits it";
const FALSY: &str = "falsy keys and bounds are keys and bounds";
const DECODER: &str = "the original's key decoder bugs are fixed";
const BLIND: &str = "blind puts still update indexes";

const EXPECTED: &[Expect] = &[
    Expect {
        file: "01-key-encoder-values.json",
        results: &[
            (15, KEY_LIST),
            (17, KEY_LIST),
            (18, KEY_LIST),
            (19, KEY_LIST),
            (20, KEY_LIST),
        ],
        dump_prefixes: &[],
    },
    Expect {
        file: "02-autoincrement-counters.json",
        results: &[],
        dump_prefixes: &[],
    },
    Expect {
        file: "03-indexes.json",
        results: &[
            (45, "a new index is built from the stored records"),
            (48, BLIND),
            (49, BLIND),
            (63, FALSY),
            (64, "args= honours max and reverse"),
        ],
        dump_prefixes: &[
            ("0b", BLIND),
            ("0c", BLIND),
            ("0e", BLIND),
            ("0f", "a new index is built from the stored records"),
        ],
    },
    Expect {
        file: "04-batch-compression.json",
        results: &[(33, SPLIT), (34, SPLIT)],
        dump_prefixes: &[
            ("0a", SPLIT),
            ("0f", "the grouper starts a batch when the group changes"),
        ],
    },
    Expect {
        file: "05-collections-metadata.json",
        results: &[
            (252, "str and unicode counter names are two counters"),
            (259, "str and unicode counter names are two counters"),
        ],
        dump_prefixes: &[(
            "6162091503",
            "str and unicode counter names are two counters",
        )],
    },
    Expect {
        file: "06-key-types.json",
        results: &[
            (44, DECODER),
            (45, DECODER),
            (49, "prefix= matches whole tuple elements"),
            (50, "prefix= matches whole tuple elements"),
            (59, FALSY),
            (61, FALSY),
            (65, DECODER),
            (87, DECODER),
            (88, DECODER),
        ],
        dump_prefixes: &[],
    },
    Expect {
        file: "07-reverse-batches.json",
        results: &[],
        dump_prefixes: &[],
    },
    Expect {
        file: "08-batch-members.json",
        results: &[
            (22, SPLIT),
            (24, SPLIT),
            (26, SPLIT),
            (27, SPLIT),
            (29, SPLIT),
        ],
        dump_prefixes: &[("0a", SPLIT)],
    },
    Expect {
        file: "09-reopen-encoders.json",
        results: &[(10, "Strata knows the bz2 packer by name")],
        dump_prefixes: &[],
    },
];

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
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    for f in &files {
        let exp = EXPECTED
            .iter()
            .find(|e| e.file == f)
            .unwrap_or_else(|| panic!("{f}: add it to EXPECTED"));
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
        for (j, why) in exp.results {
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
