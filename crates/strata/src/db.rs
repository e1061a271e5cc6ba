//! [`Db`]: the database users open.

use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use strata_lsm::{Condition, Direction, Engine, KeyRange, MemEngine, WriteBatch};

use crate::catalog::{self, TableEntry, FORMAT_MARKER};
use crate::error::{Error, Result};
use crate::keys::{self, KeyLayout};
use crate::schema::TableSchema;
use crate::table::Table;

/// Options of [`Db::open_with`]. Every field has a documented default ([`DbOptions::default`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbOptions {
    /// Number of LSM stripes (independent trees) when the database is created. Default 256.
    /// An existing database keeps the count it was created with.
    pub stripes: u32,
    /// fsync the write-ahead log before a write returns. Default `true` (durable writes;
    /// concurrent writers share one fsync by group commit).
    pub sync: bool,
    /// Block cache capacity in bytes. Default 64 MiB.
    pub block_cache_bytes: usize,
    /// Memory budget of all memtables together, in bytes. Default 128 MiB (the engine's own
    /// default, [`strata_lsm::LsmOptions`], is 64 MiB for one stripe). The memtables of all
    /// stripes freeze together at half the budget and each stripe's becomes one level-0 file:
    /// with 256 stripes a 64 MiB budget wrote 256 files per freeze from memtables of ~128 KiB
    /// each. Doubling it halves the flush files and the level-0 merges of a bulk load for ~50 MB
    /// more peak memory (session 21, `docs/bench/tables.md`: 10^6 typed load / SQLite 1.41× →
    /// 1.84×, median of 3 pairs; two paired 10^7 loads −10% and −15%).
    pub memtable_budget_bytes: usize,
    /// Point reads that miss the block cache copy their block from a memory map of the SST
    /// instead of making a system call. Default `true`; see
    /// [`strata_lsm::LsmOptions::mmap_reads`] for the trade-off (a failing disk or a
    /// truncated file kills the process with `SIGBUS` instead of failing the read).
    pub mmap_reads: bool,
}

impl Default for DbOptions {
    fn default() -> Self {
        DbOptions {
            stripes: 256,
            sync: true,
            block_cache_bytes: 64 << 20,
            memtable_budget_bytes: 128 << 20,
            mmap_reads: true,
        }
    }
}

/// Keys deleted per atomic batch when a dropped table's data is deleted.
const DROP_BATCH: usize = 1000;

/// A table's definition as loaded from the catalog.
#[derive(Debug)]
pub(crate) struct TableDef {
    pub schema: TableSchema,
    pub layout: KeyLayout,
    pub dropped: AtomicBool,
    /// The catalog entry's `meta`, kept in step with the catalog by [`Db::set_table_meta`].
    pub meta: RwLock<Option<Arc<serde_json::Value>>>,
}

impl TableDef {
    fn new(schema: TableSchema, id: u64, meta: Option<serde_json::Value>) -> TableDef {
        TableDef {
            layout: KeyLayout::new(&schema, id),
            schema,
            dropped: AtomicBool::new(false),
            meta: RwLock::new(meta.map(Arc::new)),
        }
    }

    pub(crate) fn meta(&self) -> Option<Arc<serde_json::Value>> {
        match self.meta.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }
}

pub(crate) struct Inner {
    pub engine: Arc<dyn Engine>,
    tables: RwLock<HashMap<String, Arc<TableDef>>>,
    /// Serialises create and drop.
    ddl: Mutex<()>,
    /// Writers hold it shared; drop holds it exclusively while it marks a table dropped, so
    /// that no write lands in a table after its data deletion has begun.
    write_gate: RwLock<()>,
}

impl Inner {
    pub fn write_guard(&self) -> RwLockReadGuard<'_, ()> {
        match self.write_gate.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

/// The database: a catalog of tables over one ordered engine. `Send + Sync`; clone it or
/// share it by reference across threads (clones share everything).
#[derive(Clone)]
pub struct Db {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("tables", &self.table_names())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Db {
    /// Opens (or creates) the database in directory `path` on the striped LSM engine, with
    /// default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Db> {
        Db::open_with(path, DbOptions::default())
    }

    /// Opens (or creates) the database in directory `path` with `options`.
    pub fn open_with(path: impl AsRef<Path>, options: DbOptions) -> Result<Db> {
        let engine = crate::lsm::open_engine(path.as_ref(), &options)?;
        Db::with_engine(engine)
    }

    /// A database in memory (gone when dropped).
    pub fn memory() -> Result<Db> {
        Db::with_engine(Arc::new(MemEngine::new()))
    }

    /// Opens the existing database in directory `path` for reading only, with default
    /// options: nothing is ever written (it works on a read-only file system and on a full
    /// disk), several read-only opens may share the directory, and writes fail.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Db> {
        Db::open_read_only_with(path, DbOptions::default())
    }

    /// Opens the existing database in directory `path` for reading only, with `options`.
    pub fn open_read_only_with(path: impl AsRef<Path>, options: DbOptions) -> Result<Db> {
        let engine = crate::lsm::open_engine_read_only(path.as_ref(), &options)?;
        Db::start(engine, true)
    }

    /// A database over any engine. The engine should stripe with [`crate::keys::partitioner`].
    pub fn with_engine(engine: Arc<dyn Engine>) -> Result<Db> {
        Db::start(engine, false)
    }

    /// A database over `engine`; `read_only`: write nothing (no format marker for a new
    /// database, no finishing of interrupted drops).
    fn start(engine: Arc<dyn Engine>, read_only: bool) -> Result<Db> {
        let format_key = keys::catalog_key("meta", "format")?;
        match engine.get(&format_key)? {
            Some(v) if v == FORMAT_MARKER => {}
            Some(v) => {
                return Err(Error::Unsupported(format!(
                    "database format {:?} is not supported (expected {:?})",
                    String::from_utf8_lossy(&v),
                    String::from_utf8_lossy(FORMAT_MARKER)
                )))
            }
            None if read_only => {
                return Err(Error::Unsupported(
                    "not a Strata table database (its catalog has no format marker)".into(),
                ))
            }
            None => {
                let mut b = WriteBatch::new();
                b.put(&format_key, FORMAT_MARKER);
                b.require(Condition::Absent(format_key));
                match engine.write(b) {
                    Ok(()) | Err(strata_lsm::Error::ConditionFailed { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let db = Db {
            inner: Arc::new(Inner {
                engine,
                tables: RwLock::new(HashMap::new()),
                ddl: Mutex::new(()),
                write_gate: RwLock::new(()),
            }),
        };
        db.load_catalog()?;
        if !read_only {
            db.finish_drops()?;
        }
        Ok(db)
    }

    /// The engine underneath.
    pub fn engine(&self) -> &Arc<dyn Engine> {
        &self.inner.engine
    }

    fn load_catalog(&self) -> Result<()> {
        let prefix = keys::catalog_prefix("table")?;
        let mut map = HashMap::new();
        for kv in self
            .inner
            .engine
            .range(KeyRange::prefix(&prefix), Direction::Forward)?
        {
            let (_, v) = kv?;
            let e = TableEntry::from_bytes(&v)?;
            map.insert(
                e.schema.name.clone(),
                Arc::new(TableDef::new(e.schema, e.id, e.meta)),
            );
        }
        *self.tables_write() = map;
        Ok(())
    }

    fn tables_read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<TableDef>>> {
        match self.inner.tables.read() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn tables_write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<TableDef>>> {
        match self.inner.tables.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Creates a table, or returns the existing one when its schema is the same. A table of
    /// that name with another schema is an error ([`Error::TableExists`]).
    pub fn create_table(&self, schema: TableSchema) -> Result<Table> {
        self.create(schema, None, false)
    }

    /// Creates a table that carries `meta` (metadata of a layer above, stored in the catalog
    /// entry; see [`Table::meta`]). Unlike [`Db::create_table`], a table of that name must not
    /// exist yet, whatever its schema: otherwise [`Error::TableExists`].
    pub fn create_table_with_meta(
        &self,
        schema: TableSchema,
        meta: serde_json::Value,
    ) -> Result<Table> {
        self.create(schema, Some(meta), true)
    }

    fn create(
        &self,
        schema: TableSchema,
        meta: Option<serde_json::Value>,
        exclusive: bool,
    ) -> Result<Table> {
        schema.validate()?;
        let _ddl = lock(&self.inner.ddl);
        if let Some(def) = self.tables_read().get(&schema.name) {
            return if def.schema == schema && !exclusive {
                Ok(Table::new(Arc::clone(&self.inner), Arc::clone(def)))
            } else {
                Err(Error::TableExists {
                    name: schema.name.clone(),
                    existing: def.schema.to_json(),
                })
            };
        }
        let engine = &self.inner.engine;
        let counter_key = keys::catalog_key("meta", "next_id")?;
        let current = engine.get(&counter_key)?;
        let id = match &current {
            Some(v) => catalog::parse_counter(v)?,
            None => 1,
        };
        let entry_key = keys::catalog_key("table", &schema.name)?;
        let mut entry = TableEntry::new(id, schema.clone());
        entry.meta = meta.clone();
        let mut b = WriteBatch::new();
        b.require(Condition::Absent(entry_key.clone()));
        b.require(Condition::Equals(counter_key.clone(), current));
        b.put(counter_key, (id + 1).to_string().into_bytes());
        b.put(entry_key, entry.to_bytes());
        engine.write(b).map_err(|e| match e {
            strata_lsm::Error::ConditionFailed { .. } => Error::ConditionFailed {
                table: schema.name.clone(),
                reason: "the catalog changed concurrently (another process?)".into(),
            },
            e => e.into(),
        })?;
        let def = Arc::new(TableDef::new(schema, id, meta));
        self.tables_write()
            .insert(def.schema.name.clone(), Arc::clone(&def));
        Ok(Table::new(Arc::clone(&self.inner), def))
    }

    /// Replaces the metadata of table `name` (see [`Db::create_table_with_meta`]), atomically
    /// with respect to other catalog changes.
    pub fn set_table_meta(&self, name: &str, meta: serde_json::Value) -> Result<()> {
        let _ddl = lock(&self.inner.ddl);
        let def = self
            .tables_read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::TableNotFound(name.to_owned()))?;
        let entry_key = keys::catalog_key("table", name)?;
        let old = self
            .inner
            .engine
            .get(&entry_key)?
            .ok_or_else(|| Error::TableNotFound(name.to_owned()))?;
        let mut entry = TableEntry::from_bytes(&old)?;
        entry.meta = Some(meta.clone());
        let mut b = WriteBatch::new();
        b.require(Condition::Equals(entry_key.clone(), Some(old)));
        b.put(entry_key, entry.to_bytes());
        self.inner.engine.write(b).map_err(|e| match e {
            strata_lsm::Error::ConditionFailed { .. } => Error::ConditionFailed {
                table: name.to_owned(),
                reason: "the catalog changed concurrently (another process?)".into(),
            },
            e => e.into(),
        })?;
        *match def.meta.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        } = Some(Arc::new(meta));
        Ok(())
    }

    /// Drops a table and deletes its data. Handles to it fail from then on with
    /// [`Error::TableNotFound`].
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = lock(&self.inner.ddl);
        let def = self
            .tables_read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::TableNotFound(name.to_owned()))?;
        let id = def.layout.id();
        {
            let _gate = match self.inner.write_gate.write() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            let mut b = WriteBatch::new();
            let entry_key = keys::catalog_key("table", name)?;
            b.require(Condition::Present(entry_key.clone()));
            b.delete(entry_key);
            b.put(keys::catalog_key("dropping", &id.to_string())?, Vec::new());
            self.inner.engine.write(b)?;
            def.dropped.store(true, Ordering::SeqCst);
            self.tables_write().remove(name);
        }
        self.delete_table_data(id)
    }

    /// Deletes every key of table `id`, in batches of [`DROP_BATCH`]. Each batch resumes
    /// strictly after the last key deleted, so no batch reads the tombstones of the ones
    /// before it: the cost is linear in the size of the table.
    fn delete_table_data(&self, id: u64) -> Result<()> {
        let engine = &self.inner.engine;
        let prefix = NativePrefix::table(id)?;
        let mut range = KeyRange::prefix(&prefix);
        // Each batch also fits the engine's limits (etcd: 128 ops by default).
        let limits = engine.batch_limits();
        loop {
            let mut keys: Vec<Vec<u8>> = Vec::new();
            let mut bytes = 0;
            for kv in engine.range(range.clone(), Direction::Forward)? {
                let (k, _) = kv?;
                if keys.len() == DROP_BATCH || !limits.admits(keys.len() + 1, bytes + k.len()) {
                    break;
                }
                bytes += k.len();
                keys.push(k);
            }
            let Some(last) = keys.last().cloned() else {
                break;
            };
            let mut b = WriteBatch::new();
            for k in keys {
                b.delete(k);
            }
            engine.write(b)?;
            range.start = Bound::Excluded(last);
        }
        let mut b = WriteBatch::new();
        b.delete(keys::catalog_key("dropping", &id.to_string())?);
        engine.write(b)?;
        Ok(())
    }

    /// Resumes data deletion of tables dropped before a crash.
    fn finish_drops(&self) -> Result<()> {
        let prefix = keys::catalog_prefix("dropping")?;
        let pending: Vec<Vec<u8>> = self
            .inner
            .engine
            .range(KeyRange::prefix(&prefix), Direction::Forward)?
            .map(|kv| kv.map(|(k, _)| k))
            .collect::<strata_lsm::Result<_>>()?;
        for k in pending {
            let t = strata_key::codec::native::NativeCodec::new()
                .decode(&k)
                .map_err(|e| Error::Corrupt {
                    what: "catalog key".into(),
                    offset: e.offset,
                    reason: e.reason.into_owned(),
                })?;
            let id = match t.get(2) {
                Some(strata_key::Value::Text(s)) => s.parse::<u64>().ok(),
                _ => None,
            }
            .ok_or_else(|| Error::Corrupt {
                what: "catalog key".into(),
                offset: 0,
                reason: "a dropping entry without a table id".into(),
            })?;
            self.delete_table_data(id)?;
        }
        Ok(())
    }

    /// A handle to an existing table.
    pub fn table(&self, name: &str) -> Result<Table> {
        self.tables_read()
            .get(name)
            .map(|d| Table::new(Arc::clone(&self.inner), Arc::clone(d)))
            .ok_or_else(|| Error::TableNotFound(name.to_owned()))
    }

    /// The schemas of every table, by name.
    pub fn tables(&self) -> Vec<TableSchema> {
        let mut v: Vec<TableSchema> = self
            .tables_read()
            .values()
            .map(|d| d.schema.clone())
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    fn table_names(&self) -> Vec<String> {
        self.tables().into_iter().map(|s| s.name).collect()
    }

    /// Makes everything written so far durable in the engine's long-term structures (SSTs).
    pub fn flush(&self) -> Result<()> {
        Ok(self.inner.engine.flush()?)
    }

    /// Compacts storage.
    pub fn compact(&self) -> Result<()> {
        Ok(self.inner.engine.compact()?)
    }

    /// Flushes and closes the engine; later operations fail.
    pub fn close(&self) -> Result<()> {
        Ok(self.inner.engine.close()?)
    }
}

use strata_key::TupleCodec;

struct NativePrefix;

impl NativePrefix {
    fn table(id: u64) -> Result<Vec<u8>> {
        strata_key::codec::native::NativeCodec::new()
            .encode(&[strata_key::Value::Int(id as i128)])
            .map_err(|e| Error::Corrupt {
                what: "table prefix".into(),
                offset: 0,
                reason: e.to_string(),
            })
    }
}
