//! Secondary indexes (GSI and LSI): a second key layout of the same items, written in the
//! same atomic batch as the item.
//!
//! Each index is a Strata table of its own (named `:index:<base table id>:<n>`, a name no
//! DynamoDB table can have, so ListTables never shows it): its partition field is the index's
//! HASH attribute, its sort fields the index's RANGE attribute (if any) and then the base
//! table's key attributes not already in the index key, so that one entry per base item is
//! unique. An entry holds the projected attributes (`ALL`: the whole item; `KEYS_ONLY`: the
//! base and index keys; `INCLUDE`: those and the listed attributes). An item without every
//! index key attribute has no entry (a sparse index).
//!
//! Every write through the DynamoDB API that changes a base item deletes the item's old entry
//! and puts its new one in the batch that writes the item, conditioned on the item being
//! unchanged since it was read: base table and indexes never disagree.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::{Deserialize, Serialize};
use strata::{Attr, Batch, Item, Key, KeyField, Table, TableSchema};

use crate::convert::{self, dtype, DType};
use crate::error::ApiError;
use crate::keys::{kind_of_dtype, KeyAttr, KeySchema};
use crate::model::{KeySchemaElement, Projection, SecondaryIndex};
use crate::types::AttributeMap;

/// Writers through the DynamoDB API hold it shared from reading a table's indexes until their
/// batch is written; adding or removing an index (and DeleteTable) holds it exclusively, so
/// no write misses an index being added or lands in one being removed. One per process: a
/// database directory has one owning process (its lock), and every [`crate::Dynamo`] of the
/// process shares it.
static GATE: RwLock<()> = RwLock::new(());

/// The shared side of the index gate (item writes).
pub fn write_gate() -> RwLockReadGuard<'static, ()> {
    GATE.read().unwrap_or_else(PoisonError::into_inner)
}

/// The exclusive side of the index gate (index and table changes).
pub fn ddl_gate() -> RwLockWriteGuard<'static, ()> {
    GATE.write().unwrap_or_else(PoisonError::into_inner)
}

/// Most global secondary indexes per table.
pub const MAX_GSI: usize = 20;
/// Most local secondary indexes per table.
pub const MAX_LSI: usize = 5;

/// What Strata keeps about an index (in the table's catalog metadata).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDef {
    /// `IndexName`.
    pub name: String,
    /// Global (true) or local.
    pub global: bool,
    /// HASH attribute and type (`S`, `N`, `B`).
    pub hash: (String, String),
    /// RANGE attribute and type.
    pub range: Option<(String, String)>,
    /// `ALL`, `KEYS_ONLY` or `INCLUDE`.
    pub projection: String,
    /// For `INCLUDE`.
    #[serde(default)]
    pub non_key: Vec<String>,
    /// The Strata table holding the entries.
    pub storage: String,
}

fn invalid(msg: impl std::fmt::Display) -> ApiError {
    ApiError::validation(format!("One or more parameter values were invalid: {msg}"))
}

fn attr_of(name: &str, t: &str) -> Result<KeyAttr, ApiError> {
    let dtype = DType::parse(t).ok_or_else(|| invalid(format!("bad key type {t}")))?;
    Ok(KeyAttr {
        name: name.to_owned(),
        dtype,
        kind: kind_of_dtype(dtype).ok_or_else(|| invalid(format!("bad key type {t}")))?,
    })
}

impl IndexDef {
    /// The index's key schema (as Query sees it).
    pub fn key_schema(&self) -> Result<KeySchema, ApiError> {
        Ok(KeySchema {
            hash: attr_of(&self.hash.0, &self.hash.1)?,
            range: self
                .range
                .as_ref()
                .map(|(n, t)| attr_of(n, t))
                .transpose()?,
        })
    }

    /// The Strata schema of the entries' table.
    pub fn storage_schema(&self, base: &KeySchema) -> Result<TableSchema, ApiError> {
        let ks = self.key_schema()?;
        let field = |a: &KeyAttr| KeyField::new(a.name.clone(), a.kind);
        let mut sort: Vec<KeyField> = ks.range.iter().map(field).collect();
        for a in base.attrs() {
            if !ks.is_key(&a.name) {
                sort.push(field(a));
            }
        }
        let mut s = TableSchema::new(self.storage.clone(), vec![field(&ks.hash)]);
        if !sort.is_empty() {
            s = s.with_sort(sort);
        }
        Ok(s)
    }

    /// DynamoDB's description of the index.
    pub fn describe(&self, table_arn: &str, count: u64, size: u64) -> serde_json::Value {
        let mut ks = vec![serde_json::json!({"AttributeName": self.hash.0, "KeyType": "HASH"})];
        if let Some((r, _)) = &self.range {
            ks.push(serde_json::json!({"AttributeName": r, "KeyType": "RANGE"}));
        }
        let mut proj = serde_json::json!({"ProjectionType": self.projection});
        if self.projection == "INCLUDE" {
            proj["NonKeyAttributes"] = serde_json::json!(self.non_key);
        }
        let mut d = serde_json::json!({
            "IndexName": self.name,
            "KeySchema": ks,
            "Projection": proj,
            "IndexArn": format!("{table_arn}/index/{}", self.name),
            "IndexSizeBytes": size,
            "ItemCount": count,
        });
        if self.global {
            d["IndexStatus"] = serde_json::json!("ACTIVE");
            d["ProvisionedThroughput"] = serde_json::json!({
                "NumberOfDecreasesToday": 0, "ReadCapacityUnits": 0, "WriteCapacityUnits": 0
            });
        }
        d
    }
}

/// Checks an index name: 3 to 255 of `[a-zA-Z0-9_.-]`.
fn check_index_name(name: Option<&str>) -> Result<String, ApiError> {
    let name = name.ok_or_else(|| {
        ApiError::validation(
            "1 validation error detected: Value null at 'indexName' failed to satisfy \
             constraint: Member must not be null",
        )
    })?;
    if name.len() < 3
        || name.len() > 255
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err(ApiError::validation(format!(
            "1 validation error detected: Value '{name}' at 'indexName' failed to satisfy \
             constraint: Member must have length between 3 and 255 and satisfy regular \
             expression pattern: [a-zA-Z0-9_.-]+"
        )));
    }
    Ok(name.to_owned())
}

fn projection(p: Option<&Projection>) -> Result<(String, Vec<String>), ApiError> {
    let p = p.ok_or_else(|| invalid("Projection is required for an index"))?;
    let t = p
        .projection_type
        .as_deref()
        .ok_or_else(|| invalid("Unknown ProjectionType: null (ProjectionType is required)"))?;
    match (t, &p.non_key_attributes) {
        ("ALL" | "KEYS_ONLY", None) => Ok((t.to_owned(), Vec::new())),
        ("ALL" | "KEYS_ONLY", Some(_)) => Err(invalid(format!(
            "ProjectionType is {t}, but NonKeyAttributes is specified"
        ))),
        ("INCLUDE", Some(attrs)) => {
            let mut seen = std::collections::BTreeSet::new();
            for a in attrs {
                if a.is_empty() || a.len() > 255 {
                    return Err(invalid(format!(
                        "NonKeyAttributes names must have length between 1 and 255: {a}"
                    )));
                }
                if !seen.insert(a) {
                    return Err(invalid(format!(
                        "Duplicate projected attribute in NonKeyAttributes: {a}"
                    )));
                }
            }
            Ok((t.to_owned(), attrs.clone()))
        }
        ("INCLUDE", None) => Err(invalid(
            "ProjectionType is INCLUDE, but NonKeyAttributes is not specified",
        )),
        (other, _) => Err(invalid(format!("Unknown ProjectionType: {other}"))),
    }
}

fn index_keys(ks: Option<&Vec<KeySchemaElement>>) -> Result<(String, Option<String>), ApiError> {
    let ks = ks.ok_or_else(|| invalid("KeySchema is required for an index"))?;
    let name = |e: &KeySchemaElement| {
        e.attribute_name
            .clone()
            .ok_or_else(|| invalid("an index KeySchemaElement needs AttributeName"))
    };
    match ks.as_slice() {
        [h] if h.key_type.as_deref() == Some("HASH") => Ok((name(h)?, None)),
        [h, r]
            if h.key_type.as_deref() == Some("HASH") && r.key_type.as_deref() == Some("RANGE") =>
        {
            let (h, r) = (name(h)?, name(r)?);
            if h == r {
                return Err(invalid(
                    "Both the Hash Key and the Range Key element in the KeySchema have the same \
                     name",
                ));
            }
            Ok((h, Some(r)))
        }
        _ => Err(ApiError::validation(
            "Invalid KeySchema: an index KeySchema is a HASH element, optionally followed by a \
             RANGE element",
        )),
    }
}

/// Checks the indexes of a CreateTable (or a GSI of UpdateTable) against the attribute
/// definitions; returns them. `storage(n)` names the table of the n-th index of this call.
pub fn parse(
    gsis: &[SecondaryIndex],
    lsis: &[SecondaryIndex],
    defs: &[(String, DType)],
    base: (&str, Option<&str>),
    existing: &[IndexDef],
    storage: impl Fn(usize) -> String,
) -> Result<Vec<IndexDef>, ApiError> {
    if gsis.len() > MAX_GSI || lsis.len() > MAX_LSI {
        return Err(invalid(format!(
            "at most {MAX_GSI} global and {MAX_LSI} local secondary indexes per table"
        )));
    }
    let mut out: Vec<IndexDef> = Vec::new();
    for (global, ix) in gsis
        .iter()
        .map(|i| (true, i))
        .chain(lsis.iter().map(|i| (false, i)))
    {
        let name = check_index_name(ix.index_name.as_deref())?;
        if out.iter().chain(existing).any(|d| d.name == name) {
            return Err(invalid(format!("Duplicate index name: {name}")));
        }
        let (h, r) = index_keys(ix.key_schema.as_ref())?;
        let typed = |a: &str| -> Result<(String, String), ApiError> {
            defs.iter()
                .find(|(n, _)| n == a)
                .map(|(n, t)| (n.clone(), t.name().to_owned()))
                .ok_or_else(|| {
                    invalid(format!(
                        "Some index key attributes are not defined in AttributeDefinitions. \
                         Keys: [{a}], AttributeDefinitions: {:?}",
                        defs.iter().map(|(n, _)| n).collect::<Vec<_>>()
                    ))
                })
        };
        if !global {
            if h != base.0 {
                return Err(invalid(format!(
                    "Table KeySchema and LocalSecondaryIndex {name} KeySchema must have the same \
                     hash key"
                )));
            }
            if base.1.is_none() {
                return Err(invalid(
                    "Table KeySchema does not have a range key, which is required when \
                     specifying a LocalSecondaryIndex",
                ));
            }
            if r.is_none() {
                return Err(invalid(format!(
                    "LocalSecondaryIndex {name} KeySchema must have a RANGE key"
                )));
            }
        }
        let (projection, non_key) = projection(ix.projection.as_ref())?;
        let storage_name = storage(out.len());
        out.push(IndexDef {
            name,
            global,
            hash: typed(&h)?,
            range: r.as_deref().map(typed).transpose()?,
            projection,
            non_key,
            storage: storage_name,
        });
    }
    Ok(out)
}

/// An index of a table, ready to use.
#[derive(Debug, Clone)]
pub struct IndexRef {
    /// Its definition.
    pub def: IndexDef,
    /// The entries' table.
    pub table: Table,
    /// The index key (HASH, RANGE) as Query sees it.
    pub ks: KeySchema,
    /// The base table's key attribute names.
    pub base_keys: Vec<String>,
}

impl IndexRef {
    /// The entry of `item`: `None` when the item lacks an index key attribute; an error when
    /// one has the wrong type, is empty, or is NULL.
    pub fn entry(&self, item: &Item) -> Result<Option<Item>, ApiError> {
        let mut complete = true;
        for a in self.ks.attrs() {
            match item.get(&a.name) {
                None => complete = false,
                Some(v) => {
                    let t = dtype(v);
                    if t != a.dtype {
                        return Err(invalid(format!(
                            "Type mismatch for Index Key {} Expected: {} Actual: {} IndexName: {}",
                            a.name,
                            a.dtype.name(),
                            t.name(),
                            self.def.name
                        )));
                    }
                    if let Attr::Value(strata_key::Value::Text(s)) = v {
                        if s.is_empty() {
                            return Err(invalid(format!(
                                "One or more parameter values are not valid. A value specified \
                                 for a secondary index key is not supported. The AttributeValue \
                                 for a key attribute cannot contain an empty string value. \
                                 IndexName: {}, IndexKey: {}",
                                self.def.name, a.name
                            )));
                        }
                    }
                    if let Attr::Value(strata_key::Value::Bytes(b)) = v {
                        if b.is_empty() {
                            return Err(invalid(format!(
                                "The AttributeValue for a key attribute cannot contain an empty \
                                 binary value. IndexName: {}, IndexKey: {}",
                                self.def.name, a.name
                            )));
                        }
                    }
                }
            }
        }
        if !complete {
            return Ok(None);
        }
        let mut entry: Item = match self.def.projection.as_str() {
            "ALL" => item.clone(),
            _ => item
                .iter()
                .filter(|(k, _)| {
                    self.ks.is_key(k)
                        || self.base_keys.iter().any(|b| b == *k)
                        || self.def.non_key.iter().any(|n| n == *k)
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        // Integers written by other Strata APIs are numbers to DynamoDB: stored as decimals.
        for a in self.ks.attrs() {
            if let Some(Attr::Value(strata_key::Value::Int(i))) = entry.get(&a.name) {
                if a.kind == strata_key::Kind::Decimal {
                    let d = strata_key::Decimal::try_from(*i)
                        .map_err(|e| invalid(format!("index key {}: {e}", a.name)))?;
                    entry.insert(a.name.clone(), Attr::Value(strata_key::Value::Decimal(d)));
                }
            }
        }
        Ok(Some(entry))
    }

    /// Whether every attribute of the base items is in the entries.
    pub fn projects_all(&self) -> bool {
        self.def.projection == "ALL"
    }

    /// `item` cut down to the attributes in the entries.
    pub fn project(&self, item: Item) -> Item {
        if self.projects_all() {
            return item;
        }
        let mut item = item;
        item.retain(|k, _| self.projects(k));
        item
    }

    /// Whether attribute `name` is in the entries.
    pub fn projects(&self, name: &str) -> bool {
        self.projects_all()
            || self.ks.is_key(name)
            || self.base_keys.iter().any(|b| b == name)
            || self.def.non_key.iter().any(|n| n == name)
    }

    /// The key of an entry in DynamoDB's form (a `LastEvaluatedKey` of an index: the index
    /// key and the base table key).
    pub fn key_map(&self, entry: &Item) -> AttributeMap {
        let s = self.table.schema();
        s.partition
            .iter()
            .chain(s.sort.iter())
            .filter_map(|f| {
                entry
                    .get(&f.name)
                    .map(|v| (f.name.clone(), convert::from_attr(v.clone())))
            })
            .collect()
    }

    /// The entry key an `ExclusiveStartKey` names: exactly the index and base key attributes.
    pub fn start_key(&self, m: AttributeMap) -> Result<Key, ApiError> {
        let bad = |why: &str| {
            ApiError::validation(format!("The provided starting key is invalid: {why}"))
        };
        let item = convert::to_item(m)?;
        let s = self.table.schema();
        let fields: Vec<&KeyField> = s.partition.iter().chain(s.sort.iter()).collect();
        if item.len() != fields.len() || !fields.iter().all(|f| item.contains_key(&f.name)) {
            return Err(bad("The provided key element does not match the schema"));
        }
        for f in &fields {
            let want = if self.ks.is_key(&f.name) {
                self.ks.attrs().find(|a| a.name == f.name).map(|a| a.dtype)
            } else {
                dtype_of_field(f)
            };
            if item.get(&f.name).map(dtype) != want {
                return Err(bad("The provided key element does not match the schema"));
            }
        }
        self.table.key_of(&item).map_err(|e| bad(&e.to_string()))
    }
}

fn dtype_of_field(f: &KeyField) -> Option<DType> {
    match f.kind {
        strata_key::Kind::Text => Some(DType::S),
        strata_key::Kind::Bytes => Some(DType::B),
        strata_key::Kind::Decimal | strata_key::Kind::Int => Some(DType::N),
        _ => None,
    }
}

/// Fills a new index from the items already in `base` (skipping items an index would refuse:
/// a key attribute of another type, or empty); returns the number of entries written. The
/// caller holds [`ddl_gate`], so no item changes meanwhile.
pub fn backfill(db: &strata::Db, base: &Table, ix: &IndexRef) -> Result<u64, ApiError> {
    let mut batch = Batch::new();
    let (mut pending, mut written) = (0usize, 0u64);
    for item in base.scan_rows(&strata::Scan::all())? {
        if let Ok(Some(e)) = ix.entry(&item?) {
            batch.put(&ix.table, &e)?;
            pending += 1;
            written += 1;
            if pending == 256 {
                db.write(std::mem::take(&mut batch))?;
                pending = 0;
            }
        }
    }
    if pending > 0 {
        db.write(batch)?;
    }
    Ok(written)
}

/// The secondary indexes of `table` (none for a table not made through the DynamoDB API).
pub fn of_table(db: &strata::Db, table: &Table) -> Result<Vec<IndexRef>, ApiError> {
    let Some(meta) = table.meta() else {
        return Ok(Vec::new());
    };
    let Some(list) = meta.get("dynamodb").and_then(|d| d.get("indexes")) else {
        return Ok(Vec::new());
    };
    if list.as_array().is_none_or(|a| a.is_empty()) {
        return Ok(Vec::new());
    }
    let defs: Vec<IndexDef> = serde_json::from_value(list.clone()).map_err(|e| {
        ApiError::internal(format!(
            "the index definitions of table {} are unreadable: {e}",
            table.name()
        ))
    })?;
    let s = table.schema();
    let base_keys: Vec<String> = s
        .partition
        .iter()
        .chain(s.sort.iter())
        .map(|f| f.name.clone())
        .collect();
    defs.into_iter()
        .map(|def| {
            let it = db.table(&def.storage).map_err(|_| {
                ApiError::internal(format!(
                    "index {} of table {} lost its storage table {}",
                    def.name,
                    table.name(),
                    def.storage
                ))
            })?;
            Ok(IndexRef {
                ks: def.key_schema()?,
                def,
                table: it,
                base_keys: base_keys.clone(),
            })
        })
        .collect()
}

/// Adds to `batch` what keeps `indexes` in step with an item going from `old` to `new`.
pub fn maintain(
    batch: &mut Batch,
    indexes: &[IndexRef],
    old: Option<&Item>,
    new: Option<&Item>,
) -> Result<(), ApiError> {
    for ix in indexes {
        let new_entry = new.map(|n| ix.entry(n)).transpose()?.flatten();
        let new_key = new_entry.as_ref().map(|e| ix.table.key_of(e)).transpose()?;
        if let Some(o) = old {
            // An old item was valid when written; if not (an index added later over odd
            // data), it simply has no entry to remove.
            if let Ok(Some(old_entry)) = ix.entry(o) {
                let old_key = ix.table.key_of(&old_entry)?;
                if new_key.as_ref() != Some(&old_key) {
                    batch.delete(&ix.table, &old_key)?;
                }
            }
        }
        if let Some(e) = new_entry {
            batch.put(&ix.table, &e)?;
        }
    }
    Ok(())
}

/// Checks that `item` can be indexed (before any write).
pub fn check(indexes: &[IndexRef], item: &Item) -> Result<(), ApiError> {
    for ix in indexes {
        ix.entry(item)?;
    }
    Ok(())
}
