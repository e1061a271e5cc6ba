//! `strata hyperdb`: hyperdb (DEP-0004) databases in a directory, as the reference lays them out.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::Value;
use strata_hyperdb::{
    BatchOp, CreateOptions, Error, Hyperdb, KeyPair, ListOptions, Node, PutOptions,
};

use crate::lines::{utf8, LineError, Lines};
use crate::output::Out;
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
    ///
    /// The key pair is new, or given by a 64-byte libsodium secret key (seed ‖ public key)
    /// from --secret-key-file or the STRATA_HYPERDB_SECRET_KEY environment variable (hex) —
    /// never on the command line, where every user sees it (`ps`). DIR/source/secret_key is
    /// written with mode 0600.
    Create {
        /// Database directory.
        dir: PathBuf,
        /// File holding the secret key: 128 hex digits, or the 64 raw bytes of a hypercore
        /// `secret_key` file.
        #[arg(long, value_name = "FILE")]
        secret_key_file: Option<PathBuf>,
        /// Refused (a key in argv leaks through `ps`): use --secret-key-file or
        /// STRATA_HYPERDB_SECRET_KEY.
        #[arg(long, hide = true)]
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

/// Exit code when another process holds the database (the same as for `kv` and `table`).
const EXIT_LOCKED: u8 = 3;

/// The environment variable that may hold the secret key of `create`, as hex.
const SECRET_KEY_ENV: &str = "STRATA_HYPERDB_SECRET_KEY";

fn lib_err(e: Error) -> CliError {
    match e {
        Error::Invalid(_) => CliError::input(e.to_string()),
        Error::Locked { .. } => CliError {
            code: EXIT_LOCKED,
            message: e.to_string(),
        },
        other => CliError::failure(other.to_string()),
    }
}

/// The key pair `create` uses: from --secret-key-file, else from the environment, else new.
fn secret_key(file: Option<&Path>, argv: Option<String>) -> Result<Option<KeyPair>, CliError> {
    if argv.is_some() {
        return Err(CliError::input(format!(
            "--secret-key is refused: a key on the command line is visible to every user \
             (ps); pass --secret-key-file FILE or set {SECRET_KEY_ENV}"
        )));
    }
    let bytes = match (file, std::env::var_os(SECRET_KEY_ENV)) {
        (Some(f), _) => {
            let raw = std::fs::read(f).map_err(|e| {
                CliError::failure(format!("cannot read secret key file {}: {e}", f.display()))
            })?;
            if raw.len() == 64 {
                raw
            } else {
                let text = String::from_utf8_lossy(&raw);
                hex::decode(text.trim()).map_err(|e| {
                    CliError::input(format!(
                        "secret key file {} is neither 64 raw bytes nor hex: {e}",
                        f.display()
                    ))
                })?
            }
        }
        (None, Some(v)) => {
            let text = v.to_string_lossy();
            hex::decode(text.trim())
                .map_err(|e| CliError::input(format!("{SECRET_KEY_ENV} is not hex: {e}")))?
        }
        (None, None) => return Ok(None),
    };
    KeyPair::from_secret_key(&bytes).map(Some).map_err(lib_err)
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

/// Runs `strata hyperdb`.
pub fn run(args: HyperdbArgs) -> Result<u8, CliError> {
    let mut out = Out::stdout();
    let code = match args.command {
        HyperdbCommand::Create {
            dir,
            secret_key_file,
            secret_key: argv_key,
        } => {
            let key_pair = secret_key(secret_key_file.as_deref(), argv_key)?;
            let db = Hyperdb::create(
                &dir,
                CreateOptions {
                    key_pair,
                    content_feed: false,
                },
            )
            .map_err(lib_err)?;
            out.line(hex::encode(db.key()))?;
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
            let mut db = open(&dir)?;
            db.put(&key, &value).map_err(lib_err)?;
            db.sync().map_err(lib_err)?;
            0
        }
        HyperdbCommand::Del { dir, key } => {
            let mut db = open(&dir)?;
            db.del(&key).map_err(lib_err)?;
            db.sync().map_err(lib_err)?;
            0
        }
        HyperdbCommand::Get { dir, key, hex } => match open_ro(&dir)?.get(&key).map_err(lib_err)? {
            Some(n) => {
                let v = n.value.clone().unwrap_or_default();
                if hex {
                    out.line(hex::encode(v))?;
                } else {
                    out.bytes(&v)?;
                    out.bytes(b"\n")?;
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
                    out.line(node_line(&n))?;
                }
            }
            0
        }
        HyperdbCommand::Apply { dir } => {
            let mut db = open(&dir)?;
            let applied = apply_lines(&mut db);
            // Every op before a bad line stays applied: make it durable either way.
            db.sync().map_err(lib_err)?;
            applied?;
            0
        }
        HyperdbCommand::Blocks { dir } => {
            let db = open_ro(&dir)?;
            for seq in 0..db.len() {
                out.line(hex::encode(db.block(seq).map_err(lib_err)?))?;
            }
            0
        }
        HyperdbCommand::History { dir, reverse } => {
            let db = open_ro(&dir)?;
            for n in db.snapshot().history(reverse) {
                let n: Arc<Node> = n.map_err(lib_err)?;
                out.line(node_line(&n))?;
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

/// Applies one op per stdin line; an error names its line.
fn apply_lines(db: &mut Hyperdb) -> Result<(), CliError> {
    let mut input = Lines::new(std::io::stdin().lock());
    while let Some((no, line)) = input.next_line().map_err(|e| match e {
        LineError::TooLong { .. } => CliError::input(e.to_string()),
        LineError::Io { .. } => CliError::failure(e.to_string()),
    })? {
        let line = utf8(line, no).map_err(CliError::input)?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| CliError::input(format!("line {no}: not JSON: {e}")))?;
        apply_op(db, &v).map_err(|e| CliError {
            code: e.code,
            message: format!("line {no}: {}", e.message),
        })?;
    }
    Ok(())
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
