//! `strata centidb --db DIR <command>`: the centidb record store.
//!
//! `apply` replays ops (JSON lines, the vectors' format) and prints one result line per op;
//! `dump` prints every engine pair in byte order. The everyday commands print one JSON
//! value per line: plain JSON by default, the vectors' typed JSON with `--typed`.
//! Key and index functions are not stored by centidb; the command line keeps them in
//! `DIR/centidb-catalog.json` and re-applies them whenever it opens a collection.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value as Json};
use strata_centidb::ops::{Catalog, Replayer};
use strata_centidb::{typed, Doc, FnSpec};
use strata_lsm::{Direction, Engine, KeyRange, LsmEngine, LsmOptions, Partitioner, SyncMode};

use crate::lines::{utf8, LineError, Lines};
use crate::output::Out;
use crate::store::Store;
use crate::CliError;

/// Stripes of a database that `strata centidb` creates.
pub const STRIPES: u32 = 1;

/// The file (in the database directory) that keeps key and index functions.
pub const CATALOG_FILE: &str = "centidb-catalog.json";

/// Arguments of `strata centidb`.
#[derive(Args)]
pub struct CentidbArgs {
    /// Key prefix of the store, hex (default: none).
    #[arg(long, global = true, default_value = "")]
    store_prefix: String,
    /// Print values in the typed JSON of the vectors (default: plain JSON).
    #[arg(long, global = true)]
    typed: bool,
    /// Durability of writes.
    #[arg(long, global = true, value_enum, default_value_t = SyncArg::Always)]
    sync: SyncArg,
    #[command(subcommand)]
    command: CentidbCommand,
}

#[derive(Clone, Copy, ValueEnum)]
enum SyncArg {
    /// fsync every write.
    Always,
    /// Leave writes in the OS buffers.
    None,
}

#[derive(Subcommand)]
enum CentidbCommand {
    /// Apply ops (one JSON object per line on stdin, as in the vectors' "ops"); print one
    /// `{"result": ...}` or `{"error": "..."}` line per op.
    Apply,
    /// Print every key/value pair of the database in byte order: `{"k":"<hex>","v":"<hex>"}`.
    Dump,
    /// List collections and indexes (one JSON object per line).
    Collections,
    /// Create (or open) a collection.
    Create {
        /// Collection name.
        name: String,
        /// Key function: item:N, items:N,M, field:NAME or JSON; none = auto-increment.
        #[arg(long)]
        key: Option<String>,
        /// Encoder: json, pickle, key or plain.
        #[arg(long, default_value = "json")]
        encoder: String,
        /// Counter of auto-increment keys (default key:NAME).
        #[arg(long)]
        counter: Option<String>,
    },
    /// Add a secondary index to a collection (built from its records).
    AddIndex {
        /// Collection name.
        collection: String,
        /// Index name.
        name: String,
        /// Index function: item:N, items:N,M, field:NAME or JSON.
        func: String,
    },
    /// Store a value (JSON; plain, or typed with --typed input), or JSON lines from stdin
    /// when VALUE is absent; prints each key.
    Put {
        /// Collection name.
        collection: String,
        /// The value.
        value: Option<String>,
        /// Use this key instead of the key function's.
        #[arg(long)]
        key: Option<String>,
        /// Packer: plain, zlib, bz2, zstd or lz4.
        #[arg(long)]
        packer: Option<String>,
    },
    /// Print the value of KEY (a JSON array for a tuple, or a scalar), or exit code 1.
    Get {
        /// Collection name.
        collection: String,
        /// The key.
        key: String,
    },
    /// Delete the record with KEY (exit code 1 when there was none).
    Delete {
        /// Collection name.
        collection: String,
        /// The key.
        key: String,
    },
    /// Print `[key, value]` lines (or keys) in key order.
    Items {
        /// Collection name.
        collection: String,
        #[command(flatten)]
        range: RangeArgs,
        /// Keys only.
        #[arg(long)]
        keys: bool,
    },
    /// Query an index: `[key, value]` lines of the records, or `[index tuple, key]` with
    /// --pairs, or the number of entries with --count.
    Index {
        /// Collection name.
        collection: String,
        /// Index name.
        name: String,
        /// Exactly this index tuple.
        #[arg(long)]
        args: Option<String>,
        #[command(flatten)]
        range: RangeArgs,
        /// Print `[index tuple, key]` pairs.
        #[arg(long)]
        pairs: bool,
        /// Print the number of entries.
        #[arg(long)]
        count: bool,
    },
    /// Pack runs of records into batch records; prints `{"found","made","last_key"}`.
    Batch {
        /// Collection name.
        collection: String,
        /// Lowest key (inclusive).
        #[arg(long)]
        lo: Option<String>,
        /// Highest key (inclusive).
        #[arg(long)]
        hi: Option<String>,
        /// Keys starting with these elements.
        #[arg(long)]
        prefix: Option<String>,
        /// Most records per batch.
        #[arg(long)]
        max_recs: Option<usize>,
        /// Most bytes per batch value.
        #[arg(long)]
        max_bytes: Option<usize>,
        /// Packer: plain, zlib, bz2, zstd or lz4.
        #[arg(long, default_value = "zlib")]
        packer: String,
        /// Re-pack existing batches too.
        #[arg(long)]
        no_preserve: bool,
        /// Visit at most N physical records.
        #[arg(long)]
        max_phys: Option<usize>,
        /// Start a new batch when this function of the value changes.
        #[arg(long)]
        group: Option<String>,
        /// Commit the work in parts of about this many bytes (each part is consistent).
        #[arg(long)]
        part_bytes: Option<usize>,
    },
    /// Add N to a counter and print its value before (N = 0 reads).
    Count {
        /// Counter name.
        name: String,
        /// The increment.
        #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
        n: i64,
        /// The value of a new counter.
        #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
        init: i64,
    },
}

/// Bounds shared by `items` and `index`.
#[derive(Args)]
struct RangeArgs {
    /// Lowest key (inclusive).
    #[arg(long)]
    lo: Option<String>,
    /// Highest key (exclusive unless --include).
    #[arg(long)]
    hi: Option<String>,
    /// Keys starting with these elements.
    #[arg(long)]
    prefix: Option<String>,
    /// Highest first.
    #[arg(long)]
    reverse: bool,
    /// At most N.
    #[arg(long)]
    max: Option<usize>,
    /// --hi is inclusive.
    #[arg(long)]
    include: bool,
}

fn engine_err(e: strata_lsm::Error) -> CliError {
    CliError::engine(e)
}

/// The engine options of `strata centidb`: one stripe for a new database (every centidb read
/// is a seek over a key range; over 256 stripes a seek merges 256 trees: about 10× slower
/// puts, 200× slower gets), and the whole-key partitioner, recorded in a new database and
/// required of an existing one (a `table` database, partitioned by `native-tuple:2`, is
/// refused; a `kv` database is the same kind of store and opens).
fn options(sync: SyncMode) -> LsmOptions {
    LsmOptions {
        sync,
        stripes: STRIPES,
        partitioner: Some(Partitioner::WholeKey),
        ..LsmOptions::default()
    }
}

fn no_database(dir: &Path) -> CliError {
    CliError::failure(format!("no database at {}", dir.display()))
}

/// Opens the database for writing (creating it unless `must_exist`); fails at once (exit code
/// 3) while another process has it open.
fn open(dir: &Path, sync: SyncArg, must_exist: bool) -> Result<Arc<LsmEngine>, CliError> {
    if must_exist && !dir.join("CURRENT").exists() {
        return Err(no_database(dir));
    }
    let sync = match sync {
        SyncArg::Always => SyncMode::Always,
        SyncArg::None => SyncMode::None,
    };
    LsmEngine::open(dir, options(sync))
        .map(Arc::new)
        .map_err(engine_err)
}

/// Opens an existing database for reading: writes nothing, shares the directory with other
/// readers, fails at once (exit code 3) while a writer has it open.
fn open_read_only(dir: &Path) -> Result<Arc<LsmEngine>, CliError> {
    if !dir.join("CURRENT").exists() {
        return Err(no_database(dir));
    }
    LsmEngine::open_read_only(dir, options(SyncMode::Always))
        .map(Arc::new)
        .map_err(engine_err)
}

fn load_catalog(dir: &Path) -> Result<Catalog, CliError> {
    let p = dir.join(CATALOG_FILE);
    match std::fs::read(&p) {
        Ok(b) => serde_json::from_slice(&b)
            .map_err(|e| CliError::failure(format!("{}: {e}", p.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Catalog::default()),
        Err(e) => Err(CliError::failure(format!("{}: {e}", p.display()))),
    }
}

/// Writes the catalog atomically (temporary file, fsync, rename).
fn save_catalog(dir: &Path, c: &Catalog) -> Result<(), CliError> {
    let p = dir.join(CATALOG_FILE);
    let tmp = dir.join(format!("{CATALOG_FILE}.tmp"));
    let body = serde_json::to_vec_pretty(c).map_err(|e| CliError::failure(e.to_string()))?;
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&body)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &p)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().map_err(|e| CliError::failure(format!("{}: {e}", p.display())))
}

/// A JSON argument; a word that is not JSON is text.
fn json_arg(s: &str) -> Json {
    serde_json::from_str(s).unwrap_or_else(|_| Json::String(s.to_owned()))
}

fn key_arg(s: &str, what: &str) -> Result<Json, CliError> {
    let j = json_arg(s);
    typed::key_from_json(&j).map_err(|e| CliError::input(format!("{what} {s:?}: {e}")))?;
    Ok(j)
}

/// The typed form of a result back to what the user asked for.
fn present(j: &Json, typed: bool) -> Json {
    if typed {
        return j.clone();
    }
    match j {
        Json::Array(a) => Json::Array(a.iter().map(|x| present(x, false)).collect()),
        Json::Object(o) if o.contains_key("t") => match typed::from_json(j) {
            Ok(Some(d)) => typed::to_plain(&d),
            Ok(None) => Json::Null,
            Err(_) => j.clone(),
        },
        Json::Object(o) => Json::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), present(v, false)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// How a command opens the database.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// For writing; a new database is created.
    Create,
    /// For writing; the database must exist.
    Existing,
    /// For reading only (nothing is written, other readers may run alongside).
    ReadOnly,
}

struct Session {
    dir: PathBuf,
    read_only: bool,
    engine: Arc<LsmEngine>,
    replayer: Replayer,
    prefix: String,
}

impl Session {
    fn open(a: &CentidbArgs, dir: &Path, mode: Mode) -> Result<Session, CliError> {
        Session::open_with(a, dir, mode, None)
    }

    fn open_with(
        a: &CentidbArgs,
        dir: &Path,
        mode: Mode,
        part_bytes: Option<usize>,
    ) -> Result<Session, CliError> {
        hex::decode(&a.store_prefix).map_err(|e| {
            CliError::input(format!(
                "--store-prefix {:?} is not hex: {e}",
                a.store_prefix
            ))
        })?;
        let engine = match mode {
            Mode::Create => open(dir, a.sync, false)?,
            Mode::Existing => open(dir, a.sync, true)?,
            Mode::ReadOnly => open_read_only(dir)?,
        };
        let catalog = load_catalog(dir)?;
        let dynengine: Arc<dyn Engine> = engine.clone();
        let mut opts = strata_centidb::StoreOptions::default();
        if let Some(p) = part_bytes {
            opts.batch_commit_bytes = p;
        }
        let mut s = Session {
            dir: dir.to_path_buf(),
            read_only: mode == Mode::ReadOnly,
            engine,
            replayer: Replayer::with_options(dynengine, catalog, opts),
            prefix: a.store_prefix.clone(),
        };
        s.op(&json!({"op": "open_store", "prefix_hex": s.prefix, "reuse_engine": true}))?;
        Ok(s)
    }

    /// Runs one op; its result (typed JSON) or the error as a CLI error.
    fn op(&mut self, op: &Json) -> Result<Json, CliError> {
        let out = self.replayer.apply(op);
        self.save()?;
        match out.get("error") {
            Some(e) => Err(CliError::failure(e.as_str().unwrap_or("error").to_owned())),
            None => Ok(out["result"].clone()),
        }
    }

    fn save(&mut self) -> Result<(), CliError> {
        if self.replayer.catalog_changed && !self.read_only {
            save_catalog(&self.dir, &self.replayer.catalog)?;
            self.replayer.catalog_changed = false;
        }
        Ok(())
    }

    fn close(self) -> Result<(), CliError> {
        drop(self.replayer);
        self.engine.close().map_err(engine_err)
    }
}

fn print_lines(lines: &[Json]) -> Result<(), CliError> {
    let mut out = Out::stdout();
    for l in lines {
        out.line(l)?;
    }
    out.flush()
}

fn range_op(op: &mut Json, r: &RangeArgs) -> Result<(), CliError> {
    for (name, v) in [("lo", &r.lo), ("hi", &r.hi), ("prefix", &r.prefix)] {
        if let Some(s) = v {
            op[name] = key_arg(s, &format!("--{name}"))?;
        }
    }
    op["reverse"] = json!(r.reverse);
    op["include"] = json!(r.include);
    if let Some(m) = r.max {
        op["max"] = json!(m);
    }
    Ok(())
}

/// Runs `strata centidb`.
pub fn run(a: CentidbArgs, store: Option<Store>) -> Result<u8, CliError> {
    let dir = match store {
        Some(Store::Dir(d)) => d,
        Some(Store::Etcd(_)) => {
            return Err(CliError::input(
                "strata centidb works on a database directory (--db DIR), not on --engine: \
                 it keeps key and index functions in DIR/centidb-catalog.json",
            ))
        }
        None => return Err(CliError::input("strata centidb needs --db DIR")),
    };
    let typed_out = a.typed;
    match &a.command {
        CentidbCommand::Apply => apply(&a, &dir),
        CentidbCommand::Dump => {
            let e = open_read_only(&dir)?;
            let it = e
                .range(KeyRange::all(), Direction::Forward)
                .map_err(engine_err)?;
            let mut out = Out::stdout();
            for kv in it {
                let (k, v) = kv.map_err(engine_err)?;
                out.line(json!({"k": hex::encode(k), "v": hex::encode(v)}))?;
            }
            out.flush()?;
            e.close().map_err(engine_err)?;
            Ok(0)
        }
        CentidbCommand::Collections => {
            let s = Session::open(&a, &dir, Mode::ReadOnly)?;
            let store = strata_centidb::Store::open(
                s.engine.clone(),
                &hex::decode(&a.store_prefix).unwrap_or_default(),
            )
            .map_err(|e| CliError::failure(e.to_string()))?;
            let specs = s
                .replayer
                .catalog
                .stores
                .get(&s.prefix)
                .cloned()
                .unwrap_or_default();
            let mut lines = Vec::new();
            for c in store
                .collections()
                .map_err(|e| CliError::failure(e.to_string()))?
            {
                let name = match &c.name {
                    strata_key::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                    strata_key::Value::Text(t) => t.clone(),
                    other => format!("{other:?}"),
                };
                let mut o = json!({"name": name, "idx": c.idx});
                if let Some(e) = &c.encoder {
                    o["kind"] = json!("collection");
                    o["encoder"] = json!(e);
                    if let Some(spec) = specs.get(&name) {
                        o["key"] = json!(spec
                            .key_func
                            .as_ref()
                            .map_or("auto-increment".to_owned(), FnSpec::to_string));
                        let ix: serde_json::Map<String, Json> = spec
                            .indexes
                            .iter()
                            .map(|(k, f)| (k.clone(), json!(f.to_string())))
                            .collect();
                        o["indexes"] = Json::Object(ix);
                    }
                } else {
                    o["kind"] = json!("index");
                }
                if let Some(f) = &c.index_for {
                    o["index_for"] = present(&typed::to_typed(&Doc::from_key_value(f)), false);
                }
                if let Some(b) = c.blind {
                    o["blind"] = json!(b);
                }
                lines.push(o);
            }
            s.close()?;
            print_lines(&lines)?;
            Ok(0)
        }
        CentidbCommand::Create {
            name,
            key,
            encoder,
            counter,
        } => {
            let key_func = key
                .as_deref()
                .map(FnSpec::parse)
                .transpose()
                .map_err(CliError::input)?;
            let mut s = Session::open(&a, &dir, Mode::Create)?;
            let r = s.op(
                &json!({"op": "add_collection", "name": name, "key_func": key_func,
                "encoder": encoder, "counter_name": counter}),
            )?;
            s.close()?;
            print_lines(&[present(&r, typed_out)])?;
            Ok(0)
        }
        CentidbCommand::AddIndex {
            collection,
            name,
            func,
        } => {
            let f = FnSpec::parse(func).map_err(CliError::input)?;
            let mut s = Session::open(&a, &dir, Mode::Existing)?;
            let r = s.op(
                &json!({"op": "add_index", "collection": collection, "name": name, "func": f}),
            )?;
            s.close()?;
            print_lines(&[present(&r, typed_out)])?;
            Ok(0)
        }
        CentidbCommand::Put {
            collection,
            value,
            key,
            packer,
        } => {
            let mut s = Session::open(&a, &dir, Mode::Create)?;
            let mut op = json!({"op": "put", "collection": collection});
            if let Some(k) = key {
                op["key"] = key_arg(k, "--key")?;
            }
            if let Some(p) = packer {
                op["packer"] = json!(p);
            }
            // Each key is printed (and flushed) once its record is durable: an ack.
            let mut out = Out::stdout();
            let mut one = |s: &mut Session, v: &str| -> Result<(), CliError> {
                let mut o = op.clone();
                o["value"] = json_arg(v);
                let r = s.op(&o)?;
                out.line(present(&r["key"], typed_out))?;
                out.flush()
            };
            match value {
                Some(v) => one(&mut s, v)?,
                None => {
                    let mut input = Lines::new(std::io::stdin().lock());
                    loop {
                        let line = match input.next_line() {
                            Ok(None) => break,
                            Ok(Some((n, l))) => {
                                utf8(l, n).map_err(|m| CliError::input(format!("stdin {m}")))?
                            }
                            Err(e @ LineError::TooLong { .. }) => {
                                return Err(CliError::input(format!("stdin {e}")))
                            }
                            Err(e @ LineError::Io { .. }) => {
                                return Err(CliError::failure(format!("stdin {e}")))
                            }
                        };
                        if !line.trim().is_empty() {
                            one(&mut s, line.trim())?;
                        }
                    }
                }
            }
            s.close()?;
            Ok(0)
        }
        CentidbCommand::Get { collection, key } => {
            let mut s = Session::open(&a, &dir, Mode::ReadOnly)?;
            let r =
                s.op(&json!({"op": "get", "collection": collection, "key": key_arg(key, "key")?}))?;
            s.close()?;
            if r == typed::missing() {
                return Ok(1);
            }
            print_lines(&[present(&r, typed_out)])?;
            Ok(0)
        }
        CentidbCommand::Delete { collection, key } => {
            let mut s = Session::open(&a, &dir, Mode::Existing)?;
            let k = key_arg(key, "key")?;
            let had = s.op(&json!({"op": "get", "collection": collection, "key": k}))?
                != typed::missing();
            s.op(&json!({"op": "delete", "collection": collection, "key": k}))?;
            s.close()?;
            Ok(if had { 0 } else { 1 })
        }
        CentidbCommand::Items {
            collection,
            range,
            keys,
        } => {
            let mut s = Session::open(&a, &dir, Mode::ReadOnly)?;
            let mut op =
                json!({"op": if *keys { "keys" } else { "items" }, "collection": collection});
            range_op(&mut op, range)?;
            let r = s.op(&op)?;
            s.close()?;
            let lines: Vec<Json> = r
                .as_array()
                .map(|a| a.iter().map(|x| present(x, typed_out)).collect())
                .unwrap_or_default();
            print_lines(&lines)?;
            Ok(0)
        }
        CentidbCommand::Index {
            collection,
            name,
            args,
            range,
            pairs,
            count,
        } => {
            let mut s = Session::open(&a, &dir, Mode::ReadOnly)?;
            let kind = if *count {
                "index_count"
            } else if *pairs {
                "index_pairs"
            } else {
                "index_items"
            };
            let mut op = json!({"op": kind, "collection": collection, "index": name});
            if let Some(x) = args {
                op["args"] = key_arg(x, "--args")?;
            }
            range_op(&mut op, range)?;
            let r = s.op(&op)?;
            s.close()?;
            let lines: Vec<Json> = match r.as_array() {
                Some(a) => a.iter().map(|x| present(x, typed_out)).collect(),
                None => vec![present(&r, typed_out)],
            };
            print_lines(&lines)?;
            Ok(0)
        }
        CentidbCommand::Batch {
            collection,
            lo,
            hi,
            prefix,
            max_recs,
            max_bytes,
            packer,
            no_preserve,
            max_phys,
            group,
            part_bytes,
        } => {
            let mut s = Session::open_with(&a, &dir, Mode::Existing, *part_bytes)?;
            let mut o = strata_centidb::BatchOptions {
                max_recs: *max_recs,
                max_bytes: *max_bytes,
                packer: Some(packer.clone()),
                preserve: !no_preserve,
                max_phys: *max_phys,
                ..Default::default()
            };
            for (slot, v, what) in [
                (&mut o.lo, lo, "--lo"),
                (&mut o.hi, hi, "--hi"),
                (&mut o.prefix, prefix, "--prefix"),
            ] {
                if let Some(v) = v {
                    *slot = Some(
                        typed::key_from_json(&json_arg(v))
                            .map_err(|e| CliError::input(format!("{what}: {e}")))?,
                    );
                }
            }
            if let Some(g) = group {
                o.grouper = Some(FnSpec::parse(g).map_err(CliError::input)?.to_fn());
            }
            let coll = s
                .replayer
                .collection(collection)
                .map_err(CliError::failure)?;
            let rep = coll
                .batch(&o)
                .map_err(|e| CliError::failure(e.to_string()))?;
            s.close()?;
            let last = rep
                .last_key
                .as_ref()
                .map(|k| present(&typed::tuple_to_typed(k), typed_out));
            print_lines(&[json!({"found": rep.found, "made": rep.made, "last_key": last})])?;
            Ok(0)
        }
        CentidbCommand::Count { name, n, init } => {
            let mut s = Session::open(&a, &dir, Mode::Create)?;
            let r = s.op(
                &json!({"op": "count", "name": name, "n": {"t": "int", "v": n.to_string()},
                "init": {"t": "int", "v": init.to_string()}}),
            )?;
            s.close()?;
            print_lines(&[present(&r, typed_out)])?;
            Ok(0)
        }
    }
}

fn apply(a: &CentidbArgs, dir: &Path) -> Result<u8, CliError> {
    let engine = open(dir, a.sync, false)?;
    let catalog = load_catalog(dir)?;
    let dynengine: Arc<dyn Engine> = engine.clone();
    let mut r = Replayer::new(dynengine, catalog);
    let mut out = Out::stdout();
    let mut input = Lines::new(std::io::stdin().lock());
    let mut fatal = None;
    loop {
        let res = match input.next_line() {
            Ok(None) => break,
            Ok(Some((line_no, line))) => match utf8(line, line_no) {
                Err(m) => json!({"error": format!("stdin {m}")}),
                Ok(t) if t.trim().is_empty() => continue,
                Ok(t) => match serde_json::from_str::<Json>(t.trim()) {
                    Ok(op) => r.apply(&op),
                    Err(e) => json!({"error": format!("stdin line {line_no}: not JSON: {e}")}),
                },
            },
            // The rest of an over-long line cannot be told from the next op: stop here.
            Err(e @ LineError::TooLong { .. }) => {
                fatal = Some(CliError::input(format!("stdin {e}")));
                json!({"error": format!("stdin {e}")})
            }
            Err(e @ LineError::Io { .. }) => {
                fatal = Some(CliError::failure(format!("stdin {e}")));
                json!({"error": format!("stdin {e}")})
            }
        };
        if r.catalog_changed {
            save_catalog(dir, &r.catalog)?;
            r.catalog_changed = false;
        }
        out.line(&res)?;
        if fatal.is_some() {
            break;
        }
    }
    out.flush()?;
    drop(r);
    engine.close().map_err(engine_err)?;
    match fatal {
        Some(e) => Err(e),
        None => Ok(0),
    }
}
