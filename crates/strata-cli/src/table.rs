//! `strata --db DIR table ...`: tables with typed partition and sort keys.
//!
//! Output (one JSON value per line, for scripts): `list` prints one schema per line; `get`
//! prints the item, or nothing with exit code 1; `query` and `scan` print one item per line
//! and then, when more items may follow, `{"last_key":{...}}` (pass that object as `after`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::Value as Json;
use strata::{json as sj, Batch, Db, Error, Rows, Table, TableSchema};

use crate::lines::{utf8, LineError, Lines};
use crate::CliError;

/// Arguments of `strata table`.
#[derive(Args)]
pub struct TableArgs {
    #[command(subcommand)]
    command: TableCommand,
}

#[derive(Subcommand)]
enum TableCommand {
    /// Create a table: '{"name":"posts","partition":[{"name":"user","type":"text"}],"sort":[{"name":"ts","type":"int","order":"desc","nulls":"last"}]}'.
    Create {
        /// The schema as JSON.
        schema: String,
    },
    /// Drop a table and delete its data.
    Drop {
        /// Table name.
        name: String,
    },
    /// List the tables, one JSON schema per line.
    List,
    /// Put an item (a JSON object), or JSON lines from stdin when ITEM is absent.
    Put {
        /// Table name.
        name: String,
        /// The item as a JSON object.
        item: Option<String>,
        /// Fail (exit 1) instead of replacing an existing item.
        #[arg(long)]
        if_not_exists: bool,
    },
    /// Print an item (one JSON line), or nothing with exit code 1.
    Get {
        /// Table name.
        name: String,
        /// The key attributes as a JSON object.
        key: String,
    },
    /// Delete an item.
    Delete {
        /// Table name.
        name: String,
        /// The key attributes as a JSON object.
        key: String,
    },
    /// Query one partition: '{"partition":{"user":"u1"},"sort":{"op":"between","values":[1,9]},"reverse":false,"limit":10,"after":null}'.
    Query {
        /// Table name.
        name: String,
        /// The request as JSON.
        request: String,
    },
    /// Scan a table or one segment: '{"segment":0,"segments":4,"limit":100,"after":null}'.
    Scan {
        /// Table name.
        name: String,
        /// The request as JSON (default: the whole table).
        request: Option<String>,
    },
}

fn db_error(e: Error) -> CliError {
    match e {
        Error::Engine(e) => CliError::engine(e),
        e if e.is_invalid_input() => CliError::input(e.to_string()),
        e => CliError::failure(e.to_string()),
    }
}

fn parse_json(text: &str, what: &str) -> Result<Json, CliError> {
    serde_json::from_str(text).map_err(|e| {
        CliError::input(format!(
            "{what}: invalid JSON at column {}: {e}",
            e.column()
        ))
    })
}

fn out_line(out: &mut impl Write, j: &Json) -> Result<(), CliError> {
    writeln!(out, "{j}").map_err(CliError::from)
}

/// Runs `strata table`.
pub fn run(args: TableArgs, db: Option<PathBuf>) -> Result<u8, CliError> {
    let dir = db.ok_or_else(|| CliError::input("table: --db DIR is required"))?;
    // Commands that only read open the database read-only: they write nothing, share it
    // with other readers, and fail at once (exit code 3) while a writer has it open.
    let reads_only = matches!(
        args.command,
        TableCommand::List
            | TableCommand::Get { .. }
            | TableCommand::Query { .. }
            | TableCommand::Scan { .. }
    );
    let opened = if reads_only {
        if !dir.join("CURRENT").exists() {
            return Err(CliError::failure(format!(
                "no database at {}",
                dir.display()
            )));
        }
        Db::open_read_only(&dir)
    } else {
        Db::open(&dir)
    };
    let db = opened.map_err(|e| {
        let e = db_error(e);
        CliError {
            code: e.code,
            message: format!("{}: {}", dir.display(), e.message),
        }
    })?;
    let code = run_on(args.command, &db);
    let closed = db.close().map_err(db_error);
    let code = code?;
    closed?;
    Ok(code)
}

fn table(db: &Db, name: &str) -> Result<Table, CliError> {
    db.table(name).map_err(db_error)
}

fn run_on(cmd: TableCommand, db: &Db) -> Result<u8, CliError> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match cmd {
        TableCommand::Create { schema } => {
            let j = parse_json(&schema, "schema")?;
            let s: TableSchema =
                serde_json::from_value(j).map_err(|e| CliError::input(format!("schema: {e}")))?;
            db.create_table(s).map_err(db_error)?;
        }
        TableCommand::Drop { name } => db.drop_table(&name).map_err(db_error)?,
        TableCommand::List => {
            for s in db.tables() {
                writeln!(out, "{}", s.to_json())?;
            }
        }
        TableCommand::Put {
            name,
            item,
            if_not_exists,
        } => {
            let t = table(db, &name)?;
            match item {
                Some(text) => {
                    let it =
                        sj::item_for_table(&t, &parse_json(&text, "item")?).map_err(db_error)?;
                    if if_not_exists {
                        t.put_if_not_exists(&it).map_err(db_error)?;
                    } else {
                        t.put(&it).map_err(db_error)?;
                    }
                }
                None => bulk_put(db, &t, if_not_exists)?,
            }
        }
        TableCommand::Get { name, key } => {
            let t = table(db, &name)?;
            let k = sj::key_for_table(&t, &parse_json(&key, "key")?).map_err(db_error)?;
            match t.get(&k).map_err(db_error)? {
                Some(it) => out_line(&mut out, &sj::item_to_json(&it))?,
                None => return Ok(1),
            }
        }
        TableCommand::Delete { name, key } => {
            let t = table(db, &name)?;
            let k = sj::key_for_table(&t, &parse_json(&key, "key")?).map_err(db_error)?;
            t.delete(&k).map_err(db_error)?;
        }
        TableCommand::Query { name, request } => {
            let t = table(db, &name)?;
            let q = sj::query_for_table(&t, &parse_json(&request, "query")?).map_err(db_error)?;
            print_rows(&mut out, &t, t.query_rows(&q).map_err(db_error)?)?;
        }
        TableCommand::Scan { name, request } => {
            let t = table(db, &name)?;
            let j = match request {
                Some(text) => parse_json(&text, "scan")?,
                None => Json::Object(Default::default()),
            };
            let s = sj::scan_for_table(&t, &j).map_err(db_error)?;
            print_rows(&mut out, &t, t.scan_rows(&s).map_err(db_error)?)?;
        }
    }
    out.flush()?;
    Ok(0)
}

/// Prints the items as they are read (memory stays bounded), then the last key if any.
fn print_rows(out: &mut impl Write, t: &Table, mut rows: Rows) -> Result<(), CliError> {
    for item in rows.by_ref() {
        out_line(out, &sj::item_to_json(&item.map_err(db_error)?))?;
    }
    if let Some(k) = rows.last_key() {
        out_line(
            out,
            &serde_json::json!({ "last_key": sj::key_to_json(t, k) }),
        )?;
    }
    Ok(())
}

/// Items per atomic write batch when loading JSON lines.
const BULK_BATCH: usize = 1000;

/// Loads JSON lines from stdin: batches of 1,000 items (each batch atomic), or one conditional
/// put per item with `--if-not-exists`. Everything before a bad line is written; the error
/// names the line.
fn bulk_put(db: &Db, t: &Table, if_not_exists: bool) -> Result<(), CliError> {
    let stdin = std::io::stdin();
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos} items loaded ({per_sec}) {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        Some(b)
    } else {
        None
    };
    let mut batch = Batch::new();
    let mut loaded = 0u64;
    let flush = |batch: &mut Batch| -> Result<(), CliError> {
        let b = std::mem::take(batch);
        db.write(b).map_err(db_error)
    };
    let mut input = Lines::new(stdin.lock());
    loop {
        let (lineno, line) = match input.next_line() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                flush(&mut batch)?;
                return Err(match e {
                    LineError::TooLong { .. } => CliError::input(e.to_string()),
                    LineError::Io { .. } => CliError::failure(e.to_string()),
                });
            }
        };
        let parsed = utf8(line, lineno)
            .map_err(CliError::input)
            .and_then(|text| {
                if text.trim().is_empty() {
                    return Ok(None);
                }
                let j = serde_json::from_str::<Json>(text).map_err(|e| {
                    CliError::input(format!(
                        "line {lineno}: invalid JSON at column {}: {e}",
                        e.column()
                    ))
                })?;
                sj::item_for_table(t, &j).map(Some).map_err(|e| {
                    let c = db_error(e);
                    CliError {
                        code: c.code,
                        message: format!("line {lineno}: {}", c.message),
                    }
                })
            });
        let item = match parsed {
            Ok(Some(it)) => it,
            Ok(None) => continue,
            Err(e) => {
                // Keep every line before the bad one.
                flush(&mut batch)?;
                return Err(e);
            }
        };
        if if_not_exists {
            t.put_if_not_exists(&item)
                .map_err(|e| CliError::failure(format!("line {lineno}: {e}")))?;
        } else {
            if let Err(e) = batch.put(t, &item) {
                flush(&mut batch)?;
                let c = db_error(e);
                return Err(CliError {
                    code: c.code,
                    message: format!("line {lineno}: {}", c.message),
                });
            }
            if batch.len() >= BULK_BATCH {
                flush(&mut batch)?;
            }
        }
        loaded += 1;
        if let Some(b) = &bar {
            b.set_position(loaded);
        }
    }
    flush(&mut batch)?;
    if let Some(b) = bar {
        b.finish();
    }
    Ok(())
}
