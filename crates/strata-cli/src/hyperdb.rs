//! `strata hyperdb`: hyperdb (DEP-0004) databases in a directory, as the reference lays them out.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::Value;
use strata_hyperdb::{
    BatchOp, CreateOptions, Error, Hyperdb, KeyPair, ListOptions, Node, PutOptions,
};

use crate::CliError;

/// Arguments of `strata hyperdb`.
#[derive(Args)]
pub struct HyperdbArgs {
    #[command(subcommand)]
    command: HyperdbCommand,
}

#[derive(Subcommand)]
enum HyperdbCommand {
    /// Create a database in DIR (DIR/source/ holds the feed files).
    Create {
        /// Database directory.
        dir: PathBuf,
        /// 64-byte libsodium secret key (seed ‖ public key) as hex; a new key pair without it.
        #[arg(long)]
        secret_key: Option<String>,
    },
    /// Put VALUE at KEY.
    Put {
        /// Database directory.
        dir: PathBuf,
        /// Key.
        key: String,
        /// Value (UTF-8 text, or hex with --hex).
        value: String,
        /// VALUE is hex.
        #[arg(long)]
        hex: bool,
    },
    /// Delete KEY (writes a tombstone, as the reference does).
    Del {
        /// Database directory.
        dir: PathBuf,
        /// Key.
        key: String,
    },
    /// Print the value of KEY followed by a newline (exit 1 when missing).
    Get {
        /// Database directory.
        dir: PathBuf,
        /// Key.
        key: String,
        /// Print the value as hex.
        #[arg(long)]
        hex: bool,
    },
    /// Print one JSON line per node under PREFIX, in hyperdb's iteration order.
    List {
        /// Database directory.
        dir: PathBuf,
        /// Key prefix.
        #[arg(default_value = "")]
        prefix: String,
        /// Only the first level below PREFIX (the reference's `recursive: false`).
        #[arg(long)]
        no_recursive: bool,
        /// Reverse order.
        #[arg(long)]
        reverse: bool,
        /// Leave out the key equal to PREFIX.
        #[arg(long)]
        gt: bool,
        /// Include tombstones.
        #[arg(long)]
        deletes: bool,
    },
    /// Apply operations read from stdin, one JSON object per line (the vectors' op format).
    Apply {
        /// Database directory.
        dir: PathBuf,
    },
    /// Print every feed block as lowercase hex, seq 0 first.
    Blocks {
        /// Database directory.
        dir: PathBuf,
    },
    /// Print every node (tombstones included) as JSON lines, oldest first.
    History {
        /// Database directory.
        dir: PathBuf,
        /// Newest first.
        #[arg(long)]
        reverse: bool,
    },
    /// Recompute the merkle tree and check every signature (exit 0 when they check out).
    Verify {
        /// Database directory.
        dir: PathBuf,
    },
}

fn lib_err(e: Error) -> CliError {
    match e {
        Error::Invalid(_) => CliError::input(e.to_string()),
        other => CliError::failure(other.to_string()),
    }
}

fn open(dir: &Path) -> Result<Hyperdb, CliError> {
    Hyperdb::open(dir).map_err(lib_err)
}

fn open_ro(dir: &Path) -> Result<Hyperdb, CliError> {
    Hyperdb::open_read_only(dir).map_err(lib_err)
}

fn node_line(n: &Node) -> String {
    let key = serde_json::to_string(&n.key).unwrap_or_else(|_| "\"\"".into());
    let value = match &n.value {
        Some(v) => format!("\"{}\"", hex::encode(v)),
        None => "null".into(),
    };
    format!(
        "{{\"key\":{key},\"value_hex\":{value},\"seq\":{},\"deleted\":{}}}",
        n.seq, n.deleted
    )
}

fn write_out(out: &mut impl Write, line: &str) -> Result<(), CliError> {
    writeln!(out, "{line}").map_err(CliError::from)
}

/// Runs `strata hyperdb`.
pub fn run(args: HyperdbArgs) -> Result<u8, CliError> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let code = match args.command {
        HyperdbCommand::Create { dir, secret_key } => {
            let key_pair = match secret_key {
                Some(h) => {
                    let bytes = hex::decode(h.trim())
                        .map_err(|e| CliError::input(format!("--secret-key is not hex: {e}")))?;
                    Some(KeyPair::from_secret_key(&bytes).map_err(lib_err)?)
                }
                None => None,
            };
            let db = Hyperdb::create(
                &dir,
                CreateOptions {
                    key_pair,
                    content_feed: false,
                },
            )
            .map_err(lib_err)?;
            write_out(&mut out, &hex::encode(db.key()))?;
            0
        }
        HyperdbCommand::Put {
            dir,
            key,
            value,
            hex,
        } => {
            let value = if hex {
                hex::decode(value.trim())
                    .map_err(|e| CliError::input(format!("VALUE is not hex: {e}")))?
            } else {
                value.into_bytes()
            };
            open(&dir)?.put(&key, &value).map_err(lib_err)?;
            0
        }
        HyperdbCommand::Del { dir, key } => {
            open(&dir)?.del(&key).map_err(lib_err)?;
            0
        }
        HyperdbCommand::Get { dir, key, hex } => match open_ro(&dir)?.get(&key).map_err(lib_err)? {
            Some(n) => {
                let v = n.value.clone().unwrap_or_default();
                if hex {
                    write_out(&mut out, &hex::encode(v))?;
                } else {
                    out.write_all(&v)?;
                    out.write_all(b"\n")?;
                }
                0
            }
            None => 1,
        },
        HyperdbCommand::List {
            dir,
            prefix,
            no_recursive,
            reverse,
            gt,
            deletes,
        } => {
            let db = open_ro(&dir)?;
            let opts = ListOptions {
                recursive: !no_recursive,
                reverse,
                gt,
                deletes,
            };
            for nodes in db.snapshot().iter(&prefix, opts) {
                for n in nodes.map_err(lib_err)? {
                    write_out(&mut out, &node_line(&n))?;
                }
            }
            0
        }
        HyperdbCommand::Apply { dir } => {
            let mut db = open(&dir)?;
            let stdin = std::io::stdin();
            for (no, line) in stdin.lock().lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                let v: Value = serde_json::from_str(&line)
                    .map_err(|e| CliError::input(format!("line {}: not JSON: {e}", no + 1)))?;
                apply_op(&mut db, &v).map_err(|e| CliError {
                    code: e.code,
                    message: format!("line {}: {}", no + 1, e.message),
                })?;
            }
            0
        }
        HyperdbCommand::Blocks { dir } => {
            let db = open_ro(&dir)?;
            for seq in 0..db.len() {
                write_out(&mut out, &hex::encode(db.block(seq).map_err(lib_err)?))?;
            }
            0
        }
        HyperdbCommand::History { dir, reverse } => {
            let db = open_ro(&dir)?;
            for n in db.snapshot().history(reverse) {
                let n: Arc<Node> = n.map_err(lib_err)?;
                write_out(&mut out, &node_line(&n))?;
            }
            0
        }
        HyperdbCommand::Verify { dir } => {
            Hyperdb::verify_dir(&dir).map_err(lib_err)?;
            0
        }
    };
    out.flush()?;
    Ok(code)
}

fn op_value(v: &Value) -> Result<Option<Vec<u8>>, CliError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => hex::decode(s)
            .map(Some)
            .map_err(|e| CliError::input(format!("value is not hex: {e}"))),
        _ => Err(CliError::input("value must be a hex string or null")),
    }
}

fn op_key(v: &Value) -> Result<String, CliError> {
    v.get("key")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| CliError::input("op has no string \"key\""))
}

fn batch_op(v: &Value) -> Result<BatchOp, CliError> {
    match v.get("type").and_then(Value::as_str) {
        Some("put") => Ok(BatchOp::Put {
            key: op_key(v)?,
            value: op_value(v.get("value").unwrap_or(&Value::Null))?,
        }),
        Some("del") => Ok(BatchOp::Del { key: op_key(v)? }),
        _ => Err(CliError::input(
            "a batch op is {\"type\":\"put\"|\"del\",...}",
        )),
    }
}

fn apply_op(db: &mut Hyperdb, v: &Value) -> Result<(), CliError> {
    match v.get("type").and_then(Value::as_str) {
        Some("put") => {
            let key = op_key(v)?;
            let value = op_value(v.get("value").unwrap_or(&Value::Null))?;
            let if_not_exists = v
                .pointer("/opts/ifNotExists")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            db.put_with(&key, value.as_deref(), PutOptions { if_not_exists })
                .map_err(lib_err)?;
        }
        Some("del") => {
            db.del(&op_key(v)?).map_err(lib_err)?;
        }
        Some("batch") => {
            let ops = v
                .get("batch")
                .and_then(Value::as_array)
                .ok_or_else(|| CliError::input("a batch op needs a \"batch\" array"))?
                .iter()
                .map(batch_op)
                .collect::<Result<Vec<_>, _>>()?;
            db.batch(&ops).map_err(lib_err)?;
        }
        _ => return Err(CliError::input("op \"type\" must be put, del or batch")),
    }
    Ok(())
}
