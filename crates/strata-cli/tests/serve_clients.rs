//! `strata serve` driven by clients no one here wrote: boto3 and the AWS CLI
//! (`tests/clients/flows.py`): create → put → query → update with condition → transact → scan
//! → delete table; and SigV4 verification with botocore's signatures.

mod serve_util;

use std::process::Command;

use serve_util::{client_venv, Serve};

fn flows() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/flows.py").to_string()
}

fn run_flow(python: &std::path::Path, args: &[&str]) {
    let out = Command::new(python)
        .arg(flows())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "flows.py {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn boto3_and_aws_cli_on_a_directory() {
    let Some(python) = client_venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let s = Serve::start(&["--db", db.to_str().unwrap()], &[]);
    run_flow(&python, &["boto3", &s.url]);
    run_flow(&python, &["awscli", &s.url]);
    assert!(s.terminate().success());
}

#[test]
fn boto3_in_memory() {
    let Some(python) = client_venv() else { return };
    let s = Serve::start(&["--memory"], &[]);
    run_flow(&python, &["boto3", &s.url]);
    assert!(s.terminate().success());
}

#[test]
fn signatures_verified_with_a_key_pair() {
    let Some(python) = client_venv() else { return };
    let secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    let s = Serve::start(
        &["--memory", "--access-key-id", "AKIDSTRATA"],
        &[("STRATA_SECRET_ACCESS_KEY", secret)],
    );
    run_flow(&python, &["auth", &s.url, "AKIDSTRATA", secret]);
    assert!(s.terminate().success());
}
