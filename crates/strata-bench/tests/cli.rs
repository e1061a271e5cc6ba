//! The bench binaries' command lines (clap): every binary answers `--help` with a description of
//! each argument and exits without running its benchmark; an unknown flag or a bad number is an
//! error (exit status 2, clap's message) instead of being ignored; the processes `lsm` and
//! `centidb` start of themselves still parse the arguments their parents give them.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `bin args` and returns its output, failing the test if it runs longer than `limit`
/// (a `--help` that started the benchmark instead would run for minutes).
fn run(bin: &str, args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(bin)
        .args(args)
        .env("TMPDIR", std::env::temp_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the bench binary");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{bin} {args:?} still running after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

const QUICK: Duration = Duration::from_secs(30);

/// A binary, the words its `--help` must show (each argument), one invocation with an unknown
/// flag and one with a bad number.
type Bin = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

/// Every bench binary.
const BINS: &[Bin] = &[
    (
        "tables",
        env!("CARGO_BIN_EXE_tables"),
        &[
            "[PARTITIONS]",
            "[PER_PARTITION]",
            "[KSTONE_PARTITIONS]",
            "--rounds",
            "--memory",
            "--no-mmap-reads",
        ],
        &["10", "10", "10", "--bogus"],
        &["10", "ten"],
    ),
    (
        "lsm",
        env!("CARGO_BIN_EXE_lsm"),
        &[
            "--n ",
            "--kstone-n",
            "--cache-mb",
            "--sync-rounds",
            "--dir",
            "--engines",
            "--child",
            "--serve-fillsync",
        ],
        &["--n", "1000", "--bogus"],
        &["--n", "1e6"],
    ),
    (
        "keys",
        env!("CARGO_BIN_EXE_keys"),
        &["--rows", "--only", "--profile"],
        &["--rows", "1000", "--bogus"],
        &["--rows", "many"],
    ),
    (
        "hyperdb",
        env!("CARGO_BIN_EXE_hyperdb"),
        &["--n ", "--no-reference", "--no-scale"],
        &["--no-scale", "--bogus"],
        &["--n", "lots"],
    ),
    (
        "centidb",
        env!("CARGO_BIN_EXE_centidb"),
        &["[RECORDS]", "--child"],
        &["1000", "--bogus"],
        &["1k"],
    ),
    (
        "etcd",
        env!("CARGO_BIN_EXE_etcd"),
        &[
            "--sizes",
            "--ops",
            "--endpoints",
            "--naive-max",
            "--tables-max",
            "--timeout",
        ],
        &["--sizes", "1000", "--bogus"],
        &["--sizes", "1000,x"],
    ),
    (
        "dynamodb",
        env!("CARGO_BIN_EXE_dynamodb"),
        &["--secs", "--clients", "--targets", "--sync", "--ops"],
        &["--secs", "1", "--bogus"],
        &["--clients", "1,eight"],
    ),
    (
        "tables_prof",
        env!("CARGO_BIN_EXE_tables_prof"),
        &[
            "--dir",
            "--parts",
            "--per",
            "--ops",
            "--phase",
            "--typed",
            "--lt",
            "--pages",
            "--cache-mb",
            "--warm",
        ],
        &["--dir", "/nonexistent/never-created", "--bogus"],
        &["--dir", "/nonexistent/never-created", "--ops", "3.5"],
    ),
    (
        "lsm_prof",
        env!("CARGO_BIN_EXE_lsm_prof"),
        &[
            "--dir",
            "--n ",
            "--stripes",
            "--ops",
            "--phase",
            "--cache-mib",
            "--settle",
            "--cold",
        ],
        &["--dir", "/nonexistent/never-created", "--bogus"],
        &["--dir", "/nonexistent/never-created", "--stripes", "x"],
    ),
];

#[test]
fn every_binary_has_help_describing_each_argument() {
    for (name, bin, words, _, _) in BINS {
        let out = run(bin, &["--help"], QUICK);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name} --help: {:?}", out.status);
        assert!(
            text.contains(&format!("Usage: {name}")),
            "{name} --help: no usage line:\n{text}"
        );
        for w in *words {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(w.trim_end()) && l.contains(w))
                .unwrap_or_else(|| panic!("{name} --help does not list {w}:\n{text}"));
            // A described argument: its line says more than the flag and its value name.
            let rest = line.trim().trim_start_matches(w.trim_end());
            let described = rest
                .split_whitespace()
                .filter(|word| !word.starts_with('<'))
                .count();
            assert!(described >= 2, "{name}: {w} has no description: {line:?}");
        }
    }
}

#[test]
fn an_unknown_flag_is_an_error() {
    for (name, bin, _, bogus, _) in BINS {
        let out = run(bin, bogus, QUICK);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name} {bogus:?}: {err}");
        assert!(
            err.contains("unexpected argument '--bogus'"),
            "{name} {bogus:?}: {err}"
        );
        assert!(
            out.stdout.is_empty(),
            "{name} {bogus:?} ran: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn a_bad_number_is_an_error() {
    for (name, bin, _, _, bad) in BINS {
        let out = run(bin, bad, QUICK);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name} {bad:?}: {err}");
        assert!(err.contains("invalid value"), "{name} {bad:?}: {err}");
        assert!(out.stdout.is_empty(), "{name} {bad:?} ran");
    }
}

#[test]
fn zero_rounds_and_unknown_names_are_errors() {
    let cases: &[(&str, &[&str])] = &[
        (env!("CARGO_BIN_EXE_tables"), &["--rounds", "0"]),
        (env!("CARGO_BIN_EXE_lsm"), &["--sync-rounds", "0"]),
        (env!("CARGO_BIN_EXE_lsm"), &["--engines", "strata,leveldb"]),
        (env!("CARGO_BIN_EXE_keys"), &["--profile", "bincode"]),
        (env!("CARGO_BIN_EXE_dynamodb"), &["--ops", "Scan"]),
        (env!("CARGO_BIN_EXE_dynamodb"), &["--sync", "sometimes"]),
        (env!("CARGO_BIN_EXE_centidb"), &["--child", "table", "10"]),
        (env!("CARGO_BIN_EXE_lsm"), &["--serve-fillsync"]),
    ];
    for (bin, args) in cases {
        let out = run(bin, args, QUICK);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bin} {args:?}: {err}");
        assert!(err.starts_with("error: "), "{bin} {args:?}: {err}");
    }
}

/// `lsm` starts one child of itself per engine (`--child E --n N --serve-fillsync --cache-mb MB
/// --dir D`) and drives its fillsync rounds over stdin: the whole protocol at a tiny size.
#[test]
fn lsm_parent_and_child_still_agree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().join("lsm");
    let args = [
        "--n",
        "2000",
        "--engines",
        "strata",
        "--sync-rounds",
        "2",
        "--cache-mb",
        "8",
        "--dir",
        d.to_str().expect("utf-8 temp path"),
    ];
    let out = run(env!("CARGO_BIN_EXE_lsm"), &args, Duration::from_secs(300));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lsm {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("N = 2000 "), "{text}");
    assert!(text.contains("cache 8 MiB"), "{text}");
    for phase in ["fillseq", "fillsync", "readrandom", "readseq"] {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| {phase} |")))
            .unwrap_or_else(|| panic!("no {phase} row:\n{text}"));
        assert!(row.contains("ops/s"), "{row}");
    }
}

/// `centidb` runs each configuration as `centidb --child CFG RECORDS DIR`.
#[test]
fn centidb_child_invocation_parses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        env!("CARGO_BIN_EXE_centidb"),
        &["--child", "table", "200", &dir.path().display().to_string()],
        Duration::from_secs(120),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
    assert_eq!(j["cfg"], "table", "{text}");
}
