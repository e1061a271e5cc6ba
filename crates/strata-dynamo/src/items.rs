//! PutItem, GetItem, DeleteItem, UpdateItem.
//!
//! Writes that depend on the stored item (a condition, `ReturnValues`, any UpdateItem) are
//! optimistic read-modify-writes: read the item and its version, compute, and write in one
//! engine batch that requires the version to be unchanged; on a concurrent change, start again.
//! Writes that do not depend on it (an unconditional PutItem or DeleteItem) are one batch.

use std::collections::BTreeMap;

use strata::{Batch, Item, Key, Table};

use crate::convert::{self, from_item, item_size, MAX_DEPTH};
use crate::error::{ApiError, ErrorKind};
use crate::expr::ast::Path;
use crate::expr::eval::{holds, project};
use crate::expr::resolve::{Cond, ExprKind, Refs};
use crate::expr::update;
use crate::legacy;
use crate::model::*;
use crate::types::AttributeMap;
use crate::Dynamo;

/// Largest item, in bytes (DynamoDB's item size).
pub const MAX_ITEM_SIZE: usize = 400 * 1024;
/// Attempts of an optimistic read-modify-write before giving up.
const MAX_ATTEMPTS: u32 = 1000;

/// `ReturnValues`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReturnValues {
    None,
    AllOld,
    UpdatedOld,
    AllNew,
    UpdatedNew,
}

pub(crate) fn return_values(s: Option<&str>, all: bool) -> Result<ReturnValues, ApiError> {
    let v = match s.unwrap_or("NONE") {
        "NONE" => ReturnValues::None,
        "ALL_OLD" => ReturnValues::AllOld,
        "UPDATED_OLD" => ReturnValues::UpdatedOld,
        "ALL_NEW" => ReturnValues::AllNew,
        "UPDATED_NEW" => ReturnValues::UpdatedNew,
        other => {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value '{other}' at 'returnValues' failed to \
                 satisfy constraint: Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, \
                 ALL_OLD, NONE, UPDATED_NEW]"
            )))
        }
    };
    if !all && !matches!(v, ReturnValues::None | ReturnValues::AllOld) {
        return Err(ApiError::validation(
            "Return values set to invalid value: only NONE and ALL_OLD are allowed",
        ));
    }
    Ok(v)
}

/// Whether `ReturnValuesOnConditionCheckFailure` asks for the item.
pub(crate) fn return_on_failure(s: Option<&str>) -> Result<bool, ApiError> {
    match s.unwrap_or("NONE") {
        "NONE" => Ok(false),
        "ALL_OLD" => Ok(true),
        other => Err(ApiError::validation(format!(
            "1 validation error detected: Value '{other}' at \
             'returnValuesOnConditionCheckFailure' failed to satisfy constraint: Member must \
             satisfy enum value set: [ALL_OLD, NONE]"
        ))),
    }
}

/// Whether `ReturnConsumedCapacity` asks for the capacity.
pub(crate) fn wants_capacity(s: Option<&str>) -> Result<bool, ApiError> {
    match s.unwrap_or("NONE") {
        "NONE" => Ok(false),
        "TOTAL" | "INDEXES" => Ok(true),
        other => Err(ApiError::validation(format!(
            "1 validation error detected: Value '{other}' at 'returnConsumedCapacity' failed to \
             satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]"
        ))),
    }
}

/// DynamoDB's capacity units of reading (`write` false) or writing `bytes`.
pub(crate) fn capacity(table: &str, bytes: usize, write: bool) -> ConsumedCapacity {
    let unit = if write { 1024 } else { 4096 };
    ConsumedCapacity {
        table_name: table.to_owned(),
        capacity_units: bytes.div_ceil(unit).max(1) as f64,
    }
}

/// Refuses a request that mixes expression and legacy parameters.
pub(crate) fn no_mixing(legacy: &[(&str, bool)], expr: &[(&str, bool)]) -> Result<(), ApiError> {
    let l: Vec<&str> = legacy.iter().filter(|(_, p)| *p).map(|(n, _)| *n).collect();
    let e: Vec<&str> = expr.iter().filter(|(_, p)| *p).map(|(n, _)| *n).collect();
    if !l.is_empty() && !e.is_empty() {
        return Err(ApiError::validation(format!(
            "Can not use both expression and non-expression parameters in the same request: \
             Non-expression parameters: {{{}}} Expression parameters: {{{}}}",
            l.join(", "),
            e.join(", ")
        )));
    }
    Ok(())
}

/// The ConditionExpression (or `Expected`) of a write, resolved.
pub(crate) fn write_condition(
    refs: &mut Refs<'_>,
    expression: Option<&str>,
    expected: Option<&BTreeMap<String, ExpectedAttributeValue>>,
    operator: Option<&str>,
) -> Result<Option<Cond>, ApiError> {
    no_mixing(
        &[
            ("Expected", expected.is_some()),
            ("ConditionalOperator", operator.is_some()),
        ],
        &[("ConditionExpression", expression.is_some())],
    )?;
    if let Some(e) = expression {
        return refs.condition(e, ExprKind::Condition).map(Some);
    }
    match expected {
        Some(exp) => legacy::expected(exp, operator),
        None => {
            if operator.is_some() {
                legacy::conditional_and(operator)?;
            }
            Ok(None)
        }
    }
}

/// The projection of a read: `ProjectionExpression` or `AttributesToGet`.
pub(crate) fn read_projection(
    refs: &mut Refs<'_>,
    expression: Option<&str>,
    attributes: Option<&Vec<String>>,
) -> Result<Option<Vec<Path>>, ApiError> {
    no_mixing(
        &[("AttributesToGet", attributes.is_some())],
        &[("ProjectionExpression", expression.is_some())],
    )?;
    if let Some(p) = expression {
        return crate::expr::resolve::projection(refs, p).map(Some);
    }
    attributes.map(|a| legacy::attributes_to_get(a)).transpose()
}

pub(crate) fn check_item_size(item: &Item, update: bool) -> Result<(), ApiError> {
    if item_size(item) > MAX_ITEM_SIZE {
        return Err(ApiError::validation(if update {
            "Item size to update has exceeded the maximum allowed size"
        } else {
            "Item size has exceeded the maximum allowed size"
        }));
    }
    Ok(())
}

fn depth(a: &strata::Attr) -> usize {
    match a {
        strata::Attr::List(l) => 1 + l.iter().map(depth).max().unwrap_or(0),
        strata::Attr::Map(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

pub fn check_item_depth(item: &Item) -> Result<(), ApiError> {
    if 1 + item.values().map(depth).max().unwrap_or(0) > MAX_DEPTH {
        return Err(ApiError::validation(format!(
            "Nesting Levels have exceeded supported limits: an item cannot be nested more than \
             {MAX_DEPTH} levels deep"
        )));
    }
    Ok(())
}

/// The error of a failed condition, with the item when asked for.
pub fn condition_failed(old: Option<&Item>, with_item: bool) -> ApiError {
    let mut e = ApiError::condition_failed();
    if with_item {
        e.item = old.and_then(|i| serde_json::to_value(from_item(i.clone())).ok());
    }
    e
}

/// What a read-modify-write decided.
pub enum Change {
    /// Store this item.
    Put(Item),
    /// Delete the item.
    Delete,
    /// Write nothing.
    Nothing,
}

/// The parsed item or key of a request.
pub(crate) fn request_item(m: Option<AttributeMap>, what: &str) -> Result<Item, ApiError> {
    let m = m.ok_or_else(|| {
        ApiError::validation(format!(
            "1 validation error detected: Value null at '{what}' failed to satisfy constraint: \
             Member must not be null"
        ))
    })?;
    convert::to_item(m)
}

/// Runs an optimistic read-modify-write of the item with `key` of `table` (see the module
/// docs): `f` sees the stored item and decides what to write; a concurrent change makes it run
/// again.
pub fn rmw<T>(
    db: &strata::Db,
    table: &Table,
    key: &Key,
    mut f: impl FnMut(Option<&Item>) -> Result<(Change, T), ApiError>,
) -> Result<T, ApiError> {
    for attempt in 0..MAX_ATTEMPTS {
        let (old, version) = table.get_versioned(key)?;
        let (change, out) = f(old.as_ref())?;
        let mut b = Batch::new();
        match change {
            Change::Nothing => return Ok(out),
            Change::Put(item) => {
                b.require_unchanged(table, &version, "item unchanged since read");
                b.put(table, &item)?;
            }
            Change::Delete => {
                if version.is_absent() {
                    return Ok(out);
                }
                b.require_unchanged(table, &version, "item unchanged since read");
                b.delete(table, key)?;
            }
        }
        match db.write(b) {
            Ok(()) => return Ok(out),
            Err(strata::Error::ConditionFailed { .. }) => backoff(attempt),
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::new(
        ErrorKind::TransactionConflict,
        "The item kept changing concurrently; the request was not applied",
    ))
}

impl Dynamo {
    pub(crate) fn rmw<T>(
        &self,
        table: &Table,
        key: &Key,
        f: impl FnMut(Option<&Item>) -> Result<(Change, T), ApiError>,
    ) -> Result<T, ApiError> {
        rmw(self.db(), table, key, f)
    }

    /// PutItem.
    pub fn put_item(&self, input: PutItemInput) -> Result<WriteItemOutput, ApiError> {
        let (table, ks) = self.table(input.table_name.as_deref())?;
        let mut item = request_item(input.item, "item")?;
        let key = ks.key_of_item(&item)?;
        ks.store_key(&mut item, &key);
        check_item_size(&item, false)?;
        let rv = return_values(input.return_values.as_deref(), false)?;
        let on_fail = return_on_failure(input.return_values_on_condition_check_failure.as_deref())?;
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        let cond = self.condition_refs(
            input.condition_expression.as_deref(),
            input.expected.as_ref(),
            input.conditional_operator.as_deref(),
            input.expression_attribute_names.as_ref(),
            input.expression_attribute_values.as_ref(),
        )?;
        let size = item_size(&item);
        let consumed = cap.then(|| capacity(table.name(), size, true));
        if cond.is_none() && rv == ReturnValues::None {
            table.put(&item)?;
            return Ok(WriteItemOutput {
                attributes: None,
                consumed_capacity: consumed,
            });
        }
        let old = self.rmw(&table, &key, |old| {
            if let Some(c) = &cond {
                if !holds(c, old) {
                    return Err(condition_failed(old, on_fail));
                }
            }
            let old = (rv == ReturnValues::AllOld).then(|| old.cloned()).flatten();
            Ok((Change::Put(item.clone()), old))
        })?;
        Ok(WriteItemOutput {
            attributes: match rv {
                ReturnValues::AllOld => old.map(from_item),
                _ => None,
            },
            consumed_capacity: consumed,
        })
    }

    /// The condition of a write and the check that every reference was used.
    pub(crate) fn condition_refs(
        &self,
        expression: Option<&str>,
        expected: Option<&BTreeMap<String, ExpectedAttributeValue>>,
        operator: Option<&str>,
        names: Option<&Names>,
        values: Option<&Values>,
    ) -> Result<Option<Cond>, ApiError> {
        if expression.is_none() {
            Refs::check_absent(names, values)?;
        }
        let mut refs = Refs::new(names, values)?;
        let cond = write_condition(&mut refs, expression, expected, operator)?;
        refs.finish()?;
        Ok(cond)
    }

    /// GetItem (every read is consistent).
    pub fn get_item(&self, input: GetItemInput) -> Result<GetItemOutput, ApiError> {
        let (table, ks) = self.table(input.table_name.as_deref())?;
        let key = ks.key_of_map(&request_item(input.key, "key")?)?;
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        if input.projection_expression.is_none() {
            Refs::check_absent(input.expression_attribute_names.as_ref(), None)?;
        }
        let mut refs = Refs::new(input.expression_attribute_names.as_ref(), None)?;
        let proj = read_projection(
            &mut refs,
            input.projection_expression.as_deref(),
            input.attributes_to_get.as_ref(),
        )?;
        refs.finish()?;
        let item = table.get(&key)?;
        let consumed =
            cap.then(|| capacity(table.name(), item.as_ref().map_or(0, item_size), false));
        Ok(GetItemOutput {
            item: item.map(|i| match &proj {
                Some(p) => from_item(project(&i, p)),
                None => from_item(i),
            }),
            consumed_capacity: consumed,
        })
    }

    /// DeleteItem.
    pub fn delete_item(&self, input: DeleteItemInput) -> Result<WriteItemOutput, ApiError> {
        let (table, ks) = self.table(input.table_name.as_deref())?;
        let key = ks.key_of_map(&request_item(input.key, "key")?)?;
        let rv = return_values(input.return_values.as_deref(), false)?;
        let on_fail = return_on_failure(input.return_values_on_condition_check_failure.as_deref())?;
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        let cond = self.condition_refs(
            input.condition_expression.as_deref(),
            input.expected.as_ref(),
            input.conditional_operator.as_deref(),
            input.expression_attribute_names.as_ref(),
            input.expression_attribute_values.as_ref(),
        )?;
        if cond.is_none() && rv == ReturnValues::None && !cap {
            table.delete(&key)?;
            return Ok(WriteItemOutput::default());
        }
        let old = self.rmw(&table, &key, |old| {
            if let Some(c) = &cond {
                if !holds(c, old) {
                    return Err(condition_failed(old, on_fail));
                }
            }
            Ok((Change::Delete, old.cloned()))
        })?;
        let size = old.as_ref().map_or(0, item_size);
        Ok(WriteItemOutput {
            consumed_capacity: cap.then(|| capacity(table.name(), size, true)),
            attributes: match rv {
                ReturnValues::AllOld => old.map(from_item),
                _ => None,
            },
        })
    }

    /// UpdateItem.
    pub fn update_item(&self, input: UpdateItemInput) -> Result<WriteItemOutput, ApiError> {
        let (table, ks) = self.table(input.table_name.as_deref())?;
        let key = ks.key_of_map(&request_item(input.key, "key")?)?;
        let rv = return_values(input.return_values.as_deref(), true)?;
        let on_fail = return_on_failure(input.return_values_on_condition_check_failure.as_deref())?;
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        no_mixing(
            &[
                ("AttributeUpdates", input.attribute_updates.is_some()),
                ("Expected", input.expected.is_some()),
                ("ConditionalOperator", input.conditional_operator.is_some()),
            ],
            &[
                ("UpdateExpression", input.update_expression.is_some()),
                ("ConditionExpression", input.condition_expression.is_some()),
            ],
        )?;
        let names = input.expression_attribute_names.as_ref();
        let values = input.expression_attribute_values.as_ref();
        if input.update_expression.is_none() && input.condition_expression.is_none() {
            Refs::check_absent(names, values)?;
        }
        let mut refs = Refs::new(names, values)?;
        let key_names = ks.names();
        let upd = input
            .update_expression
            .as_deref()
            .map(|u| refs.update(u, &key_names))
            .transpose()?;
        let cond = write_condition(
            &mut refs,
            input.condition_expression.as_deref(),
            input.expected.as_ref(),
            input.conditional_operator.as_deref(),
        )?;
        refs.finish()?;
        let actions = input
            .attribute_updates
            .as_ref()
            .map(|a| legacy::attribute_updates(a, &key_names))
            .transpose()?;
        let changed: Vec<Path> = match (&upd, &actions) {
            (Some(u), _) => u.paths().into_iter().cloned().collect(),
            (None, Some(a)) => a.iter().map(|(n, _)| Path::attr(n)).collect(),
            _ => Vec::new(),
        };
        let only_removes = match (&upd, &actions) {
            (Some(u), _) => u.only_removes(),
            (None, Some(a)) => {
                !a.is_empty()
                    && a.iter()
                        .all(|(_, x)| matches!(x, legacy::Action::Delete(_)))
            }
            _ => false,
        };
        let key_item = ks.key_item(&key);
        let (attributes, size) = self.rmw(&table, &key, |old| {
            if let Some(c) = &cond {
                if !holds(c, old) {
                    return Err(condition_failed(old, on_fail));
                }
            }
            let new = match (&upd, &actions) {
                (Some(u), _) => update::apply(u, old, &key_item)?,
                (None, Some(a)) => {
                    let mut item = old.cloned().unwrap_or_else(|| key_item.clone());
                    legacy::apply_attribute_updates(&mut item, a)?;
                    item
                }
                _ => old.cloned().unwrap_or_else(|| key_item.clone()),
            };
            if old.is_none() && only_removes {
                return Ok((Change::Nothing, (None, 0)));
            }
            check_item_size(&new, true)?;
            check_item_depth(&new)?;
            let size = if cap {
                item_size(&new).max(old.map_or(0, item_size))
            } else {
                0
            };
            let nonempty = |m: AttributeMap| (!m.is_empty()).then_some(m);
            // Only what ReturnValues asks for is copied out.
            let attributes = match rv {
                ReturnValues::None => None,
                ReturnValues::AllOld => old.cloned().map(from_item),
                ReturnValues::AllNew => Some(from_item(new.clone())),
                ReturnValues::UpdatedOld => {
                    old.and_then(|o| nonempty(from_item(project(o, &changed))))
                }
                ReturnValues::UpdatedNew => nonempty(from_item(project(&new, &changed))),
            };
            Ok((Change::Put(new), (attributes, size)))
        })?;
        Ok(WriteItemOutput {
            attributes,
            consumed_capacity: cap.then(|| capacity(table.name(), size, true)),
        })
    }
}

/// Waits a little, longer after more failed attempts, with jitter.
pub(crate) fn backoff(attempt: u32) {
    use std::hash::{BuildHasher, Hasher};
    if attempt == 0 {
        std::thread::yield_now();
        return;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(attempt);
    let cap_us = 50u64 << attempt.min(6);
    std::thread::sleep(std::time::Duration::from_micros(h.finish() % cap_us));
}
