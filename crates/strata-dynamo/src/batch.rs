//! BatchGetItem and BatchWriteItem.
//!
//! A BatchWriteItem is applied as one atomic engine batch across its tables (stronger than
//! DynamoDB, which applies each write on its own), so `UnprocessedItems` is always empty. A
//! BatchGetItem reads every key; `UnprocessedKeys` holds the keys left when the answer reaches
//! 16 MB, as DynamoDB does.

use std::collections::{BTreeMap, HashSet};

use strata::{Batch, Key};

use crate::convert::{self, from_item, item_size};
use crate::error::ApiError;
use crate::expr::eval::project;
use crate::expr::resolve::Refs;
use crate::items::{capacity, check_item_size, read_projection, wants_capacity};
use crate::model::*;
use crate::Dynamo;

/// Most writes in one BatchWriteItem.
pub const MAX_BATCH_WRITES: usize = 25;
/// Most keys in one BatchGetItem.
pub const MAX_BATCH_GETS: usize = 100;
/// Size of a BatchGetItem answer after which the remaining keys are left unprocessed.
pub const MAX_BATCH_GET_BYTES: usize = 16 * 1024 * 1024;

fn duplicates() -> ApiError {
    ApiError::validation("Provided list of item keys contains duplicates")
}

impl Dynamo {
    /// BatchWriteItem: up to 25 puts and deletes, across tables, applied atomically.
    pub fn batch_write_item(
        &self,
        input: BatchWriteItemInput,
    ) -> Result<BatchWriteItemOutput, ApiError> {
        let req = input.request_items.ok_or_else(|| {
            ApiError::validation(
                "1 validation error detected: Value null at 'requestItems' failed to satisfy \
                 constraint: Member must not be null",
            )
        })?;
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        let total: usize = req.values().map(Vec::len).sum();
        if req.is_empty() || total > MAX_BATCH_WRITES || req.values().any(Vec::is_empty) {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value at 'requestItems' failed to satisfy \
                 constraint: Map value must satisfy constraint: [Member must have length less \
                 than or equal to {MAX_BATCH_WRITES}, Member must have length greater than or \
                 equal to 1]"
            )));
        }
        let mut batch = Batch::new();
        let mut seen: HashSet<(String, Key)> = HashSet::new();
        let mut consumed = Vec::new();
        for (name, writes) in req {
            let (table, ks) = self.table(Some(&name))?;
            let mut bytes = 0;
            for w in writes {
                match (w.put_request, w.delete_request) {
                    (Some(p), None) => {
                        let mut item = convert::to_item(p.item)?;
                        let key = ks.key_of_item(&item)?;
                        ks.store_key(&mut item, &key);
                        check_item_size(&item, false)?;
                        bytes += item_size(&item);
                        if !seen.insert((name.clone(), key)) {
                            return Err(duplicates());
                        }
                        batch.put(&table, &item)?;
                    }
                    (None, Some(d)) => {
                        let key = ks.key_of_map(&convert::to_item(d.key)?)?;
                        if !seen.insert((name.clone(), key.clone())) {
                            return Err(duplicates());
                        }
                        batch.delete(&table, &key)?;
                    }
                    _ => {
                        return Err(ApiError::validation(
                            "Supplied WriteRequest must contain exactly one of PutRequest and \
                             DeleteRequest",
                        ))
                    }
                }
            }
            if cap {
                consumed.push(capacity(&name, bytes, true));
            }
        }
        self.db().write(batch)?;
        Ok(BatchWriteItemOutput {
            unprocessed_items: BTreeMap::new(),
            consumed_capacity: cap.then_some(consumed),
        })
    }

    /// BatchGetItem: up to 100 keys, across tables.
    pub fn batch_get_item(&self, input: BatchGetItemInput) -> Result<BatchGetItemOutput, ApiError> {
        let req = input.request_items.ok_or_else(|| {
            ApiError::validation(
                "1 validation error detected: Value null at 'requestItems' failed to satisfy \
                 constraint: Member must not be null",
            )
        })?;
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        let total: usize = req.values().map(|k| k.keys.len()).sum();
        if total > MAX_BATCH_GETS {
            return Err(ApiError::validation(format!(
                "Too many items requested for the BatchGetItem call (at most {MAX_BATCH_GETS})"
            )));
        }
        if req.is_empty() || req.values().any(|k| k.keys.is_empty()) {
            return Err(ApiError::validation(
                "1 validation error detected: Value at 'requestItems' failed to satisfy \
                 constraint: Member must have length greater than or equal to 1",
            ));
        }
        // Check everything before reading anything.
        let mut plans = Vec::with_capacity(req.len());
        for (name, ka) in &req {
            let (table, ks) = self.table(Some(name))?;
            let names = ka.expression_attribute_names.as_ref();
            if ka.projection_expression.is_none() {
                Refs::check_absent(names, None)?;
            }
            let mut refs = Refs::new(names, None)?;
            let proj = read_projection(
                &mut refs,
                ka.projection_expression.as_deref(),
                ka.attributes_to_get.as_ref(),
            )?;
            refs.finish()?;
            let mut seen = HashSet::new();
            let mut keys = Vec::with_capacity(ka.keys.len());
            for k in &ka.keys {
                let key = ks.key_of_map(&convert::to_item(k.clone())?)?;
                if !seen.insert(key.clone()) {
                    return Err(duplicates());
                }
                keys.push((key, k));
            }
            plans.push((name, ka, table, proj, keys));
        }
        let mut out = BatchGetItemOutput::default();
        let mut consumed = Vec::new();
        let mut bytes = 0usize;
        for (name, ka, table, proj, keys) in plans {
            let found = out.responses.entry(name.clone()).or_default();
            let mut read = 0usize;
            for (key, raw) in keys {
                if bytes >= MAX_BATCH_GET_BYTES {
                    out.unprocessed_keys
                        .entry(name.clone())
                        .or_insert_with(|| KeysAndAttributes {
                            keys: Vec::new(),
                            ..ka.clone()
                        })
                        .keys
                        .push(raw.clone());
                    continue;
                }
                if let Some(item) = table.get(&key)? {
                    let size = item_size(&item);
                    bytes += size;
                    read += size;
                    found.push(match &proj {
                        Some(p) => from_item(project(&item, p)),
                        None => from_item(item),
                    });
                }
            }
            if cap {
                consumed.push(capacity(name, read, false));
            }
        }
        out.consumed_capacity = cap.then_some(consumed);
        Ok(out)
    }
}
