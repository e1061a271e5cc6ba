//! `strata kv --db DIR <command>`: raw key-value access to a database directory.

use std::io::IsTerminal;
use std::ops::Bound;
use std::path::Path;

use clap::{Args, Subcommand, ValueEnum};
use strata_lsm::{
    Direction, Engine, KeyRange, LsmEngine, LsmOptions, Partitioner, SyncMode, WriteBatch,
};

use crate::lines::{utf8, LineError, Lines};
use crate::output::{warn, Out};
use crate::record::parse_record;
use crate::store::{Opened, Store};
use crate::CliError;

/// Arguments of `strata kv`.
#[derive(Args)]
pub struct KvArgs {
    /// Keys and values are hex strings (default: UTF-8 text).
    #[arg(long, global = true)]
    hex: bool,
    /// The partitioner of a new database (`whole-key`, `fixed-prefix:N`, `native-tuple:N`,
    /// `native-hash:N`; default whole-key). An existing database uses the one it records;
    /// naming another is refused.
    #[arg(long, global = true, value_parser = parse_partitioner)]
    partitioner: Option<Partitioner>,
    #[command(subcommand)]
    command: KvCommand,
}

#[derive(Subcommand)]
enum KvCommand {
    /// Set KEY to VALUE.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Delete KEY (no error when absent).
    Del {
        /// The key.
        key: String,
    },
    /// Print the value of KEY (exit code 1 and no output when absent).
    Get {
        /// The key.
        key: String,
    },
    /// Print one JSON line per record in key order: `{"k":K,"v":V}`, each a JSON string, or
    /// `{"hex":"..."}` for bytes that are not UTF-8 (with --hex: hex strings). `kv load` reads
    /// these lines back.
    Scan {
        /// First key (inclusive).
        #[arg(long)]
        start: Option<String>,
        /// End key (exclusive).
        #[arg(long)]
        end: Option<String>,
        /// Only keys with this prefix.
        #[arg(long)]
        prefix: Option<String>,
        /// Descending order.
        #[arg(long)]
        reverse: bool,
        /// At most N lines.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Write JSON lines `{"k": K, "v": V}` from stdin (the `kv scan` format: strings, or
    /// `{"hex":"..."}`), in order, in batches. Lines are at most 16 MiB; a bad line stops the
    /// load with an error naming it, after committing every line before it.
    Load {
        /// Durability of each batch.
        #[arg(long, value_enum, default_value_t = SyncArg::Always)]
        sync: SyncArg,
        /// Print `acked N` (records durable so far) after each commit.
        #[arg(long)]
        ack: bool,
        /// On etcd: when a batch's outcome is unknown (no answer, e.g. during a leader
        /// change), send it again (up to 10 times) instead of stopping. Safe for a load:
        /// putting the same values again is harmless — unless another process writes the
        /// same keys meanwhile (a resend could undo its newer value).
        #[arg(long)]
        resend_unknown: bool,
    },
    /// Read every file of the database without changing anything and list every problem
    /// (file and offset); exit code 0 when there is none, 1 otherwise.
    Check,
    /// Recover what can be recovered from a damaged database: damaged files are moved
    /// aside (never deleted) and what was lost is listed.
    Repair,
    /// Print sizes and counts as JSON.
    Stats,
}

#[derive(Clone, Copy, ValueEnum)]
enum SyncArg {
    /// fsync every batch (shared by concurrent writers).
    Always,
    /// Leave data in the OS buffers.
    None,
}

fn decode(s: &str, hex: bool, what: &str) -> Result<Vec<u8>, CliError> {
    if hex {
        hex::decode(s).map_err(|e| CliError::input(format!("{what} {s:?} is not hex: {e}")))
    } else {
        Ok(s.as_bytes().to_vec())
    }
}

fn encode(b: &[u8], hex: bool) -> Vec<u8> {
    if hex {
        hex::encode(b).into_bytes()
    } else {
        b.to_vec()
    }
}

fn parse_partitioner(s: &str) -> Result<Partitioner, String> {
    Partitioner::parse(s)
}

fn engine_err(e: strata_lsm::Error) -> CliError {
    CliError::engine(e)
}

fn options(sync: SyncMode, partitioner: &Option<Partitioner>) -> LsmOptions {
    LsmOptions {
        sync,
        partitioner: partitioner.clone(),
        ..LsmOptions::default()
    }
}

/// Opens the database for writing (creating a directory if needed); a directory fails at once
/// (exit code 3) when another process has it open. An etcd cluster has no lock: any number of
/// processes share it, each write one etcd transaction.
fn open(
    store: &Store,
    sync: SyncMode,
    partitioner: &Option<Partitioner>,
) -> Result<Opened, CliError> {
    match store {
        Store::Dir(dir) => LsmEngine::open(dir, options(sync, partitioner))
            .map(Opened::Local)
            .map_err(engine_err),
        Store::Etcd(url) => {
            no_partitioner(partitioner)?;
            crate::store::open_etcd(url).map(Opened::Etcd)
        }
    }
}

/// `--partitioner` shapes the stripes of a directory; an etcd namespace has none.
fn no_partitioner(partitioner: &Option<Partitioner>) -> Result<(), CliError> {
    match partitioner {
        Some(_) => Err(CliError::input(
            "--partitioner applies to database directories; an etcd namespace has no stripes",
        )),
        None => Ok(()),
    }
}

/// Opens an existing database for reading: a directory is opened read-only (writes nothing,
/// shared with other readers, fails at once with exit code 3 while a writer has it open); an
/// etcd cluster is simply connected to (reads there never wait for or block writers).
fn open_read_only(store: &Store, partitioner: &Option<Partitioner>) -> Result<Opened, CliError> {
    let dir = match store {
        Store::Dir(dir) => dir,
        Store::Etcd(url) => {
            no_partitioner(partitioner)?;
            return crate::store::open_etcd(url).map(Opened::Etcd);
        }
    };
    if !dir.join("CURRENT").exists() {
        return Err(CliError::failure(format!(
            "no database at {}",
            dir.display()
        )));
    }
    LsmEngine::open_read_only(dir, options(SyncMode::Always, partitioner))
        .map(Opened::Local)
        .map_err(engine_err)
}

/// Runs `strata kv`.
pub fn run(args: KvArgs, store: Option<Store>) -> Result<u8, CliError> {
    let store =
        store.ok_or_else(|| CliError::input("strata kv needs --db DIR (or --engine URL)"))?;
    let hex = args.hex;
    let part = args.partitioner;
    match args.command {
        KvCommand::Put { key, value } => {
            let (k, v) = (decode(&key, hex, "key")?, decode(&value, hex, "value")?);
            let e = open(&store, SyncMode::Always, &part)?;
            let mut b = WriteBatch::new();
            b.put(k, v);
            e.write(b).map_err(engine_err)?;
            e.close().map_err(engine_err)?;
            Ok(0)
        }
        KvCommand::Del { key } => {
            let k = decode(&key, hex, "key")?;
            let e = open(&store, SyncMode::Always, &part)?;
            let mut b = WriteBatch::new();
            b.delete(k);
            e.write(b).map_err(engine_err)?;
            e.close().map_err(engine_err)?;
            Ok(0)
        }
        KvCommand::Get { key } => {
            let k = decode(&key, hex, "key")?;
            let e = open_read_only(&store, &part)?;
            let v = e.get(&k).map_err(engine_err)?;
            e.close().map_err(engine_err)?;
            match v {
                Some(v) => {
                    let mut out = Out::stdout();
                    out.bytes(&encode(&v, hex))?;
                    out.bytes(b"\n")?;
                    out.flush()?;
                    Ok(0)
                }
                None => Ok(1),
            }
        }
        KvCommand::Scan {
            start,
            end,
            prefix,
            reverse,
            limit,
        } => {
            let mut range = KeyRange::all();
            if let Some(p) = prefix {
                range = KeyRange::prefix(&decode(&p, hex, "prefix")?);
            }
            if let Some(s) = start {
                let s = decode(&s, hex, "start key")?;
                let tighter = match &range.start {
                    Bound::Included(c) => s > *c,
                    _ => true,
                };
                if tighter {
                    range.start = Bound::Included(s);
                }
            }
            if let Some(x) = end {
                let x = decode(&x, hex, "end key")?;
                let tighter = match &range.end {
                    Bound::Excluded(c) => x < *c,
                    _ => true,
                };
                if tighter {
                    range.end = Bound::Excluded(x);
                }
            }
            let e = open_read_only(&store, &part)?;
            let dir = if reverse {
                Direction::Reverse
            } else {
                Direction::Forward
            };
            let it = e.range(range, dir).map_err(engine_err)?;
            let mut out = Out::stdout();
            for (n, item) in it.enumerate() {
                if limit.is_some_and(|l| n as u64 >= l) {
                    break;
                }
                let (k, v) = item.map_err(engine_err)?;
                out.with(|w| crate::record::write_record(w, &k, &v, hex))?;
            }
            out.flush()?;
            Ok(0)
        }
        KvCommand::Load {
            sync,
            ack,
            resend_unknown,
        } => load(&store, hex, sync, (ack, resend_unknown), &part),
        KvCommand::Check => check(store.dir("kv check")?),
        KvCommand::Repair => repair(store.dir("kv repair")?, &part),
        KvCommand::Stats => {
            let e = open_read_only(&store, &part)?;
            if let Opened::Etcd(etcd) = &e {
                let s = etcd.status().map_err(engine_err)?;
                let j = serde_json::json!({
                    "engine": "etcd",
                    "endpoints": etcd.options().endpoints,
                    "prefix": etcd.options().prefix,
                    "version": s.version,
                    "revision": s.revision,
                    "leader": format!("{:x}", s.leader),
                    "member": format!("{:x}", s.member),
                    "raft_term": s.raft_term,
                    "db_size": s.db_size,
                });
                let mut out = Out::stdout();
                out.line(j)?;
                out.flush()?;
                return Ok(0);
            }
            let s = e.local("kv stats")?.stats().map_err(engine_err)?;
            e.close().map_err(engine_err)?;
            let j = serde_json::json!({
                "stripes": s.stripes,
                "files_per_level": s.files_per_level,
                "bytes_per_level": s.bytes_per_level,
                "bytes": s.sst_bytes,
                "memtable_bytes": s.memtable_bytes,
                "wal_bytes": s.wal_bytes,
            });
            let mut out = Out::stdout();
            out.line(j)?;
            out.flush()?;
            Ok(0)
        }
    }
}

/// `kv check`: every problem on stdout (`FILE at offset N: WHAT`), then notes and a summary;
/// exit code 1 when there is a problem.
fn check(dir: &Path) -> Result<u8, CliError> {
    if !dir.join("CURRENT").exists() && !dir.is_dir() {
        return Err(CliError::failure(format!(
            "no database at {}",
            dir.display()
        )));
    }
    let r = strata_lsm::check(dir, None).map_err(engine_err)?;
    let mut out = Out::stdout();
    for p in &r.problems {
        out.line(p)?;
    }
    for n in &r.notes {
        out.line(format_args!("note: {n}"))?;
    }
    if !r.is_ok() {
        out.flush()?;
        return Err(CliError::failure(format!(
            "{} problem(s) in {} (see above; `strata kv repair` recovers what can be recovered)",
            r.problems.len(),
            dir.display()
        )));
    }
    out.line(format_args!(
        "ok: {} SSTs ({} entries) and {} WAL records verified",
        r.ssts, r.entries, r.wal_records
    ))?;
    out.flush()?;
    Ok(0)
}

/// `kv repair`: what was done (`repaired: ...`) and what was lost (`lost: ...`).
fn repair(dir: &Path, partitioner: &Option<Partitioner>) -> Result<u8, CliError> {
    if !dir.is_dir() {
        return Err(CliError::failure(format!(
            "no database at {}",
            dir.display()
        )));
    }
    let r = strata_lsm::repair(dir, options(SyncMode::Always, partitioner)).map_err(engine_err)?;
    let mut out = Out::stdout();
    if r.nothing_to_do() {
        out.line("ok: nothing to repair")?;
        out.flush()?;
        return Ok(0);
    }
    for p in &r.problems {
        out.line(format_args!("found: {p}"))?;
    }
    for a in &r.actions {
        out.line(format_args!("repaired: {a}"))?;
    }
    for l in &r.lost {
        out.line(format_args!("lost: {l}"))?;
    }
    if let Some(m) = &r.moved_to {
        out.line(format_args!(
            "kept: files moved aside are in {}",
            m.display()
        ))?;
    }
    if r.lost.is_empty() {
        out.line("ok: nothing was lost")?;
    }
    out.flush()?;
    let after = strata_lsm::check(dir, None).map_err(engine_err)?;
    if !after.is_ok() {
        return Err(CliError::failure(format!(
            "{} problem(s) remain after the repair (`strata kv check` lists them)",
            after.problems.len()
        )));
    }
    Ok(0)
}

/// Most records in one batch of `load`.
const LOAD_BATCH: usize = 1000;

/// Most resends of one batch with `load --resend-unknown`.
const RESENDS: u32 = 10;

/// Writes one batch of `load`; with `resend`, a batch whose outcome is unknown is sent again
/// (a note on stderr each time) up to [`RESENDS`] times.
fn write_load_batch(
    e: &dyn Engine,
    batch: WriteBatch,
    resend: bool,
    records: &str,
) -> strata_lsm::Result<()> {
    if !resend {
        return e.write(batch);
    }
    let mut sent = 0;
    loop {
        match e.write(batch.clone()) {
            Err(strata_lsm::Error::OutcomeUnknown(m)) if sent < RESENDS => {
                sent += 1;
                warn(format_args!(
                    "strata: records {records}: {m}; sending them again ({sent}/{RESENDS})"
                ));
                std::thread::sleep(std::time::Duration::from_millis(200 * sent as u64));
            }
            r => return r,
        }
    }
}

fn load(
    store: &Store,
    hex: bool,
    sync: SyncArg,
    (ack, resend): (bool, bool),
    partitioner: &Option<Partitioner>,
) -> Result<u8, CliError> {
    let mode = match sync {
        SyncArg::Always => SyncMode::Always,
        SyncArg::None => SyncMode::None,
    };
    let e = open(store, mode, partitioner)?;
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {pos} records loaded ({per_sec})")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        Some(b)
    } else {
        None
    };
    let mut input = Lines::new(std::io::stdin().lock());
    let mut out = Out::stdout();
    let mut batch = WriteBatch::new();
    let mut done: u64 = 0;
    // Batches also fit the engine's limits (etcd: 128 ops, 1.5 MiB by default).
    let limits = e.batch_limits();
    let mut commit = |batch: &mut WriteBatch, done: &mut u64| -> Result<(), CliError> {
        if batch.op_count() == 0 {
            return Ok(());
        }
        let n = batch.op_count() as u64;
        let records = format!("{}..{}", *done + 1, *done + n);
        write_load_batch(&*e, std::mem::take(batch), resend, &records).map_err(|err| {
            let mut c = engine_err(err);
            c.message = format!("records {records}: {}", c.message);
            c
        })?;
        *done += n;
        if ack {
            out.line(format_args!("acked {done}"))?;
            out.flush()?;
        }
        if let Some(b) = &bar {
            b.set_position(*done);
        }
        Ok(())
    };
    loop {
        let rec = match input.next_line() {
            Ok(None) => break,
            Ok(Some((line_no, line))) => utf8(line, line_no)
                .and_then(|t| {
                    let t = t.trim();
                    if t.is_empty() {
                        return Ok(None);
                    }
                    parse_record(t, hex)
                        .map(Some)
                        .map_err(|m| format!("line {line_no}: {m}"))
                })
                .map_err(|m| CliError::input(format!("stdin {m}"))),
            Err(e @ LineError::TooLong { .. }) => Err(CliError::input(format!("stdin {e}"))),
            Err(e @ LineError::Io { .. }) => Err(CliError::failure(format!("stdin {e}"))),
        };
        match rec {
            Ok(Some((k, v))) => {
                let more = batch.payload_bytes() + k.len() + v.len();
                if !limits.admits(batch.op_count() + 1, more) {
                    commit(&mut batch, &mut done)?;
                }
                batch.put(k, v);
            }
            Ok(None) => {}
            Err(err) => {
                // Keep what came before the bad line.
                commit(&mut batch, &mut done)?;
                return Err(err);
            }
        }
        // Commit when the batch is full or when no more input is waiting: a slow producer
        // gets small batches (and prompt acks), a fast one large batches.
        if batch.op_count() >= LOAD_BATCH || !input.has_buffered() {
            commit(&mut batch, &mut done)?;
        }
    }
    commit(&mut batch, &mut done)?;
    e.close().map_err(engine_err)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(0)
}
