//! UpdateTable's `GlobalSecondaryIndexUpdates`: adding a global index (filled from the items
//! already in the table before UpdateTable answers, so it is ACTIVE at once) and removing one.
//!
//! Both hold the exclusive side of [`indexes::ddl_gate`]: no item write runs meanwhile, so a
//! new index misses no write and a removed one receives none.

use strata::Table;

use crate::convert::DType;
use crate::error::{ApiError, ErrorKind};
use crate::indexes::{self, IndexRef};
use crate::keys::KeySchema;
use crate::model::{AttributeDefinition, GsiUpdate};
use crate::tables::{definitions_of, index_storage, TableMeta};
use crate::Dynamo;

fn invalid(msg: impl std::fmt::Display) -> ApiError {
    ApiError::validation(format!("One or more parameter values were invalid: {msg}"))
}

impl Dynamo {
    /// Applies `updates` to the indexes of `t` (key schema `ks`); `defs` are the request's
    /// `AttributeDefinitions`.
    pub(crate) fn update_indexes(
        &self,
        t: &Table,
        ks: &KeySchema,
        updates: &[GsiUpdate],
        defs: Option<&Vec<AttributeDefinition>>,
    ) -> Result<(), ApiError> {
        if updates.is_empty() {
            return Err(ApiError::validation(
                "GlobalSecondaryIndexUpdates must not be empty",
            ));
        }
        let _gate = indexes::ddl_gate();
        for u in updates {
            // Each update sees the catalog as the previous one left it.
            let t = self.db().table(t.name())?;
            match (&u.create, &u.delete, &u.update) {
                (Some(c), None, None) => self.create_index(&t, ks, c, defs)?,
                (None, Some(d), None) => self.delete_index(&t, d.index_name.as_deref())?,
                (None, None, Some(x)) => {
                    let name = x.index_name.as_deref().unwrap_or_default();
                    if !Self::meta_of(&t).indexes.iter().any(|i| i.name == name) {
                        return Err(ApiError::new(
                            ErrorKind::ResourceNotFound,
                            format!("Requested resource not found: Index: {name}"),
                        ));
                    }
                }
                _ => {
                    return Err(ApiError::validation(
                        "One of GlobalSecondaryIndexUpdate's Create, Update or Delete must be \
                         given, and only one",
                    ))
                }
            }
        }
        Ok(())
    }

    fn create_index(
        &self,
        t: &Table,
        ks: &KeySchema,
        ix: &crate::model::SecondaryIndex,
        defs: Option<&Vec<AttributeDefinition>>,
    ) -> Result<(), ApiError> {
        let meta = Self::meta_of(t);
        let given = definitions_of(defs)?;
        // Attributes already typed (the table's and its indexes' keys) keep their type.
        let mut known: Vec<(String, DType)> =
            ks.attrs().map(|a| (a.name.clone(), a.dtype)).collect();
        for d in &meta.indexes {
            for (n, ty) in std::iter::once(&d.hash).chain(d.range.iter()) {
                if !known.iter().any(|(k, _)| k == n) {
                    if let Some(ty) = DType::parse(ty) {
                        known.push((n.clone(), ty));
                    }
                }
            }
        }
        let mut all = known.clone();
        for (n, ty) in &given {
            match known.iter().find(|(k, _)| k == n) {
                Some((_, old)) if old != ty => {
                    return Err(invalid(format!(
                        "Attributes cannot be redefined. Please check that your attribute has \
                         the same type as previously defined. Attribute: {n}, existing type: \
                         {}, new type: {}",
                        old.name(),
                        ty.name()
                    )))
                }
                Some(_) => {}
                None => all.push((n.clone(), *ty)),
            }
        }
        let base = (
            ks.hash.name.as_str(),
            ks.range.as_ref().map(|r| r.name.as_str()),
        );
        let next = meta.next_index;
        let new = indexes::parse(
            std::slice::from_ref(ix),
            &[],
            &all,
            base,
            &meta.indexes,
            |n| index_storage(&meta.table_id, next + n as u64),
        )
        .map_err(|e| {
            if e.message.contains("Duplicate index name") {
                let name = ix.index_name.as_deref().unwrap_or_default();
                invalid(format!(
                    "Index with name {name} already exists (Duplicate index name)"
                ))
            } else {
                e
            }
        })?;
        let Some(def) = new.into_iter().next() else {
            return Ok(());
        };
        if meta.indexes.iter().filter(|d| d.global).count() >= indexes::MAX_GSI {
            return Err(ApiError::new(
                ErrorKind::LimitExceeded,
                format!(
                    "Subscriber limit exceeded: a table has at most {} global secondary indexes",
                    indexes::MAX_GSI
                ),
            ));
        }
        let storage = self.db().create_table(def.storage_schema(ks)?)?;
        let s = t.schema();
        let ir = IndexRef {
            ks: def.key_schema()?,
            def: def.clone(),
            table: storage,
            base_keys: s
                .partition
                .iter()
                .chain(s.sort.iter())
                .map(|f| f.name.clone())
                .collect(),
        };
        let done = indexes::backfill(self.db(), t, &ir).and_then(|_| {
            self.update_meta(t, |m: &mut TableMeta| {
                m.next_index = next + 1;
                m.indexes.push(def.clone());
            })
        });
        if let Err(e) = done {
            let _ = self.db().drop_table(&def.storage);
            return Err(e);
        }
        Ok(())
    }

    fn delete_index(&self, t: &Table, name: Option<&str>) -> Result<(), ApiError> {
        let name = name.unwrap_or_default();
        let meta = Self::meta_of(t);
        let Some(def) = meta.indexes.iter().find(|i| i.name == name).cloned() else {
            return Err(ApiError::new(
                ErrorKind::ResourceNotFound,
                format!("Requested resource not found: Index: {name}"),
            ));
        };
        if !def.global {
            return Err(invalid(format!(
                "{name} is a local secondary index: local secondary indexes cannot be deleted"
            )));
        }
        // The catalog first: a table never names a missing index table.
        self.update_meta(t, |m| m.indexes.retain(|i| i.name != name))?;
        match self.db().drop_table(&def.storage) {
            Ok(()) | Err(strata::Error::TableNotFound(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
