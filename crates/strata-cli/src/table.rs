//! `strata --db DIR table ...`: tables with typed partition and sort keys.
//!
//! Output (one JSON value per line, for scripts): `list` prints one schema per line; `get`
//! prints the item, or nothing with exit code 1; `query` and `scan` print one item per line
//! and then, when more items may follow, `{"last_key":{...}}` (pass that object as `after`).
//!
//! DynamoDB's expressions work on every table (see `strata_dynamo::embedded`): `put` and
//! `delete` take `--condition`, `update` takes `--update` (and `--condition`), `get`, `query`
//! and `scan` take `--projection`, `query` and `scan` take `--filter`; `#name` and `:value`
//! references come from `--names '{"#n":"name"}'` and `--values '{":v":5}'` (values in this
//! command line's JSON). A failed condition exits with code 1.

use std::io::IsTerminal;
use std::path::Path;

use clap::{Args, Subcommand};
use serde_json::Value as Json;
use strata::{json as sj, Batch, Db, Error, Rows, Table, TableSchema};
use strata_dynamo::embedded::{self, ExpressionText, Expressions};

use crate::lines::{utf8, LineError, Lines};
use crate::output::Out;
use crate::store::Store;
use crate::CliError;
use strata_lsm::BatchLimits;

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
        /// Put only if this condition holds on the item replaced (DynamoDB syntax).
        #[arg(long)]
        condition: Option<String>,
        #[command(flatten)]
        refs: RefArgs,
    },
    /// Print an item (one JSON line), or nothing with exit code 1.
    Get {
        /// Table name.
        name: String,
        /// The key attributes as a JSON object.
        key: String,
        /// Only these attributes or document paths, e.g. 'a, b.c[2]'.
        #[arg(long)]
        projection: Option<String>,
        #[command(flatten)]
        refs: RefArgs,
    },
    /// Delete an item.
    Delete {
        /// Table name.
        name: String,
        /// The key attributes as a JSON object.
        key: String,
        /// Delete only if this condition holds (DynamoDB syntax).
        #[arg(long)]
        condition: Option<String>,
        #[command(flatten)]
        refs: RefArgs,
    },
    /// Update an item with a DynamoDB update expression ('SET a = a + :one REMOVE b'), creating
    /// it from its key when missing; prints the item after.
    Update {
        /// Table name.
        name: String,
        /// The key attributes as a JSON object.
        key: String,
        /// The update expression.
        #[arg(long)]
        update: String,
        /// Update only if this condition holds (DynamoDB syntax).
        #[arg(long)]
        condition: Option<String>,
        #[command(flatten)]
        refs: RefArgs,
    },
    /// Query one partition: '{"partition":{"user":"u1"},"sort":{"op":"between","values":[1,9]},"reverse":false,"limit":10,"after":null}'.
    Query {
        /// Table name.
        name: String,
        /// The request as JSON.
        request: String,
        #[command(flatten)]
        read: ReadArgs,
    },
    /// Scan a table or one segment: '{"segment":0,"segments":4,"limit":100,"after":null}'.
    Scan {
        /// Table name.
        name: String,
        /// The request as JSON (default: the whole table).
        request: Option<String>,
        #[command(flatten)]
        read: ReadArgs,
    },
}

/// `#name` and `:value` references of DynamoDB expressions.
#[derive(Args, Default)]
struct RefArgs {
    /// Expression attribute names, '{"#n":"name"}'.
    #[arg(long)]
    names: Option<String>,
    /// Expression attribute values, '{":v":5}' (this command line's JSON).
    #[arg(long)]
    values: Option<String>,
}

/// Filter and projection of `query` and `scan`.
#[derive(Args, Default)]
struct ReadArgs {
    /// Return only the items this condition holds for (DynamoDB syntax; the `limit` counts
    /// the items read before the filter, as in DynamoDB).
    #[arg(long)]
    filter: Option<String>,
    /// Only these attributes or document paths, e.g. 'a, b.c[2]'.
    #[arg(long)]
    projection: Option<String>,
    #[command(flatten)]
    refs: RefArgs,
}

/// Parsed `--names` and `--values`.
struct Refs {
    names: Option<std::collections::BTreeMap<String, String>>,
    values: Option<std::collections::BTreeMap<String, strata::Attr>>,
}

impl RefArgs {
    fn parse(&self) -> Result<Refs, CliError> {
        let names =
            match &self.names {
                Some(t) => Some(serde_json::from_value(parse_json(t, "--names")?).map_err(
                    |e| CliError::input(format!("--names: an object of strings is expected: {e}")),
                )?),
                None => None,
            };
        let values = match &self.values {
            Some(t) => {
                let j = parse_json(t, "--values")?;
                let o = j
                    .as_object()
                    .ok_or_else(|| CliError::input("--values: a JSON object is expected"))?;
                Some(
                    o.iter()
                        .map(|(k, v)| {
                            sj::attr_from_json(v, &format!("$.{k}"))
                                .map(|a| (k.clone(), a))
                                .map_err(|e| CliError::input(format!("--values: {e}")))
                        })
                        .collect::<Result<_, _>>()?,
                )
            }
            None => None,
        };
        Ok(Refs { names, values })
    }
}

fn api_error(e: strata_dynamo::ApiError) -> CliError {
    match e.kind {
        strata_dynamo::ErrorKind::Validation | strata_dynamo::ErrorKind::Serialization => {
            CliError::input(e.message)
        }
        strata_dynamo::ErrorKind::ConditionalCheckFailed => {
            CliError::failure(format!("condition failed: {}", e.message))
        }
        _ => CliError::failure(e.message),
    }
}

fn compile(t: &Table, refs: &Refs, text: ExpressionText<'_>) -> Result<Expressions, CliError> {
    let key: Vec<&str> = t.schema().key_fields().map(|f| f.name.as_str()).collect();
    let text = ExpressionText {
        names: refs.names.as_ref(),
        values: refs.values.as_ref(),
        ..text
    };
    Expressions::compile(&text, &key).map_err(api_error)
}

/// Whether `t` has DynamoDB secondary indexes: then every write goes through
/// `strata_dynamo::embedded`, which keeps them in the batch of the item.
fn indexed(db: &Db, t: &Table) -> Result<bool, CliError> {
    Ok(!strata_dynamo::indexes::of_table(db, t)
        .map_err(api_error)?
        .is_empty())
}

fn no_if_not_exists_with_indexes(t: &Table) -> CliError {
    CliError::input(format!(
        "put: --if-not-exists is not supported on table {}, which has DynamoDB secondary \
         indexes; use --condition 'attribute_not_exists(KEY)'",
        t.name()
    ))
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

/// Runs `strata table`.
pub fn run(args: TableArgs, store: Option<Store>) -> Result<u8, CliError> {
    let db = match store {
        Some(Store::Dir(dir)) => open_dir(&dir, &args.command)?,
        // An etcd cluster has no lock and no read-only mode: every command connects the same
        // way, and reads never wait for or block writers.
        Some(Store::Etcd(url)) => crate::store::open_remote_db(&url)?,
        None => {
            return Err(CliError::input(
                "table: --db DIR (or --engine URL) is required",
            ))
        }
    };
    let code = run_on(args.command, &db);
    let closed = db.close().map_err(db_error);
    let code = code?;
    closed?;
    Ok(code)
}

/// Opens a database directory for `cmd`. Commands that only read open it read-only: they
/// write nothing, share it with other readers, and fail at once (exit code 3) while a writer
/// has it open.
fn open_dir(dir: &Path, cmd: &TableCommand) -> Result<Db, CliError> {
    let reads_only = matches!(
        cmd,
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
        Db::open_read_only(dir)
    } else {
        Db::open(dir)
    };
    opened.map_err(|e| {
        let e = db_error(e);
        CliError {
            code: e.code,
            message: format!("{}: {}", dir.display(), e.message),
        }
    })
}

fn table(db: &Db, name: &str) -> Result<Table, CliError> {
    db.table(name).map_err(db_error)
}

fn run_on(cmd: TableCommand, db: &Db) -> Result<u8, CliError> {
    let mut out = Out::stdout();
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
                out.line(s.to_json())?;
            }
        }
        TableCommand::Put {
            name,
            item,
            if_not_exists,
            condition: Some(condition),
            refs,
        } => {
            let t = table(db, &name)?;
            let text = item.ok_or_else(|| CliError::input("put --condition needs ITEM"))?;
            if if_not_exists {
                return Err(CliError::input(
                    "put: --if-not-exists and --condition do not go together (use \
                     --condition 'attribute_not_exists(KEY)')",
                ));
            }
            let e = compile(
                &t,
                &refs.parse()?,
                ExpressionText {
                    condition: Some(&condition),
                    ..Default::default()
                },
            )?;
            let it = sj::item_for_table(&t, &parse_json(&text, "item")?).map_err(db_error)?;
            embedded::put_item(db, &t, &it, &e).map_err(api_error)?;
        }
        TableCommand::Put {
            name,
            item,
            if_not_exists,
            condition: None,
            refs,
        } => {
            if refs.names.is_some() || refs.values.is_some() {
                return Err(CliError::input(
                    "put: --names and --values go with --condition",
                ));
            }
            let t = table(db, &name)?;
            let indexed = indexed(db, &t)?;
            if indexed && if_not_exists {
                return Err(no_if_not_exists_with_indexes(&t));
            }
            match item {
                Some(text) => {
                    let it =
                        sj::item_for_table(&t, &parse_json(&text, "item")?).map_err(db_error)?;
                    if indexed {
                        embedded::put_item(db, &t, &it, &Expressions::default())
                            .map_err(api_error)?;
                    } else if if_not_exists {
                        t.put_if_not_exists(&it).map_err(db_error)?;
                    } else {
                        t.put(&it).map_err(db_error)?;
                    }
                }
                None => bulk_put(db, &t, if_not_exists, indexed)?,
            }
        }
        TableCommand::Get {
            name,
            key,
            projection,
            refs,
        } => {
            let t = table(db, &name)?;
            let e = compile(
                &t,
                &refs.parse()?,
                ExpressionText {
                    projection: projection.as_deref(),
                    ..Default::default()
                },
            )?;
            let k = sj::key_for_table(&t, &parse_json(&key, "key")?).map_err(db_error)?;
            match t.get(&k).map_err(db_error)? {
                Some(it) => out.line(sj::item_to_json(&e.project(it)))?,
                None => return Ok(1),
            }
        }
        TableCommand::Delete {
            name,
            key,
            condition,
            refs,
        } => {
            let t = table(db, &name)?;
            let k = sj::key_for_table(&t, &parse_json(&key, "key")?).map_err(db_error)?;
            match condition {
                Some(c) => {
                    let e = compile(
                        &t,
                        &refs.parse()?,
                        ExpressionText {
                            condition: Some(&c),
                            ..Default::default()
                        },
                    )?;
                    embedded::delete_item(db, &t, &k, &e).map_err(api_error)?;
                }
                None => {
                    if refs.names.is_some() || refs.values.is_some() {
                        return Err(CliError::input(
                            "delete: --names and --values go with --condition",
                        ));
                    }
                    if indexed(db, &t)? {
                        embedded::delete_item(db, &t, &k, &Expressions::default())
                            .map_err(api_error)?;
                    } else {
                        t.delete(&k).map_err(db_error)?
                    }
                }
            }
        }
        TableCommand::Update {
            name,
            key,
            update,
            condition,
            refs,
        } => {
            let t = table(db, &name)?;
            let e = compile(
                &t,
                &refs.parse()?,
                ExpressionText {
                    update: Some(&update),
                    condition: condition.as_deref(),
                    ..Default::default()
                },
            )?;
            let k = sj::key_for_table(&t, &parse_json(&key, "key")?).map_err(db_error)?;
            if let Some(it) = embedded::update_item(db, &t, &k, &e).map_err(api_error)? {
                out.line(sj::item_to_json(&it))?;
            }
        }
        TableCommand::Query {
            name,
            request,
            read,
        } => {
            let t = table(db, &name)?;
            let e = read_expressions(&t, &read)?;
            let q = sj::query_for_table(&t, &parse_json(&request, "query")?).map_err(db_error)?;
            print_rows(&mut out, &t, t.query_rows(&q).map_err(db_error)?, &e)?;
        }
        TableCommand::Scan {
            name,
            request,
            read,
        } => {
            let t = table(db, &name)?;
            let e = read_expressions(&t, &read)?;
            let j = match request {
                Some(text) => parse_json(&text, "scan")?,
                None => Json::Object(Default::default()),
            };
            let s = sj::scan_for_table(&t, &j).map_err(db_error)?;
            print_rows(&mut out, &t, t.scan_rows(&s).map_err(db_error)?, &e)?;
        }
    }
    out.flush()?;
    Ok(0)
}

fn read_expressions(t: &Table, read: &ReadArgs) -> Result<Expressions, CliError> {
    compile(
        t,
        &read.refs.parse()?,
        ExpressionText {
            filter: read.filter.as_deref(),
            projection: read.projection.as_deref(),
            ..Default::default()
        },
    )
}

/// Prints the items as they are read (memory stays bounded), then the last key if any.
fn print_rows(out: &mut Out, t: &Table, mut rows: Rows, e: &Expressions) -> Result<(), CliError> {
    for item in rows.by_ref() {
        let item = item.map_err(db_error)?;
        if e.keeps(&item) {
            out.line(sj::item_to_json(&e.project(item)))?;
        }
    }
    if let Some(k) = rows.last_key() {
        out.line(serde_json::json!({ "last_key": sj::key_to_json(t, k) }))?;
    }
    Ok(())
}

/// Items per atomic write batch when loading JSON lines.
const BULK_BATCH: usize = 1000;

/// Loads JSON lines from stdin: batches of 1,000 items (each batch atomic), or one conditional
/// put per item with `--if-not-exists`. Everything before a bad line is written; the error
/// names the line.
fn bulk_put(db: &Db, t: &Table, if_not_exists: bool, indexed: bool) -> Result<(), CliError> {
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
    let limits = db.engine().batch_limits();
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
        if indexed {
            // One write per item, each with its index entries (after the lines before it).
            flush(&mut batch)?;
            embedded::put_item(db, t, &item, &Expressions::default()).map_err(|e| {
                let c = api_error(e);
                CliError {
                    code: c.code,
                    message: format!("line {lineno}: {}", c.message),
                }
            })?;
        } else if if_not_exists {
            t.put_if_not_exists(&item)
                .map_err(|e| CliError::failure(format!("line {lineno}: {e}")))?;
        } else {
            // Batches also fit the engine's limits (etcd: 128 ops, 1.5 MiB by default).
            if limits != BatchLimits::UNLIMITED && !batch.is_empty() {
                let len = t.encoded_len(&item).unwrap_or(0);
                if !limits.admits(batch.len() + 1, batch.payload_bytes() + len) {
                    flush(&mut batch)?;
                }
            }
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
