//! TransactWriteItems and TransactGetItems.
//!
//! A write transaction reads every item it touches with its version, evaluates every
//! condition and update, and commits all its writes in one engine batch that requires every
//! version to be unchanged — all or nothing, across tables; a concurrent change makes it start
//! again. When a condition fails nothing is written and the answer is a
//! `TransactionCanceledException` with one reason per action.

use std::collections::HashSet;

use strata::{Batch, Item, ItemVersion, Key, Table};

use crate::convert::{self, from_item, item_size};
use crate::error::{ApiError, CancellationReason, ErrorKind};
use crate::expr::eval::{holds, project};
use crate::expr::resolve::{Cond, ExprKind, Refs, Update};
use crate::expr::update;
use crate::items::{
    backoff, capacity, check_item_depth, check_item_size, return_on_failure, wants_capacity,
};
use crate::keys::KeySchema;
use crate::model::*;
use crate::Dynamo;

/// Most actions in one transaction.
pub const MAX_TRANSACT_ITEMS: usize = 100;
const MAX_ATTEMPTS: u32 = 1000;

enum Op {
    Check,
    Put(Item),
    Delete,
    Update(Update),
}

struct Action {
    table: Table,
    ks: KeySchema,
    key: Key,
    op: Op,
    cond: Option<Cond>,
    item_on_failure: bool,
}

fn null(what: &str) -> ApiError {
    ApiError::validation(format!(
        "1 validation error detected: Value null at '{what}' failed to satisfy constraint: \
         Member must not be null"
    ))
}

impl Dynamo {
    fn prepare(&self, w: TransactWriteItem) -> Result<Action, ApiError> {
        let (a, kind) = match w {
            TransactWriteItem {
                condition_check: Some(a),
                put: None,
                delete: None,
                update: None,
            } => (a, 0),
            TransactWriteItem {
                condition_check: None,
                put: Some(a),
                delete: None,
                update: None,
            } => (a, 1),
            TransactWriteItem {
                condition_check: None,
                put: None,
                delete: Some(a),
                update: None,
            } => (a, 2),
            TransactWriteItem {
                condition_check: None,
                put: None,
                delete: None,
                update: Some(a),
            } => (a, 3),
            _ => {
                return Err(ApiError::validation(
                    "TransactItems can only contain one of Check, Put, Update or Delete",
                ))
            }
        };
        let (table, ks) = self.table(a.table_name.as_deref())?;
        let names = a.expression_attribute_names.as_ref();
        let values = a.expression_attribute_values.as_ref();
        if a.condition_expression.is_none() && a.update_expression.is_none() {
            Refs::check_absent(names, values)?;
        }
        let mut refs = Refs::new(names, values)?;
        let (key, op) = match kind {
            1 => {
                let mut item = convert::to_item(a.item.ok_or_else(|| null("item"))?)?;
                let key = ks.key_of_item(&item)?;
                ks.store_key(&mut item, &key);
                check_item_size(&item, false)?;
                (key, Op::Put(item))
            }
            _ => {
                let key = ks.key_of_map(&convert::to_item(a.key.ok_or_else(|| null("key"))?)?)?;
                let op = match kind {
                    0 => {
                        if a.condition_expression.is_none() {
                            return Err(null("conditionExpression"));
                        }
                        Op::Check
                    }
                    2 => Op::Delete,
                    _ => {
                        let u = a
                            .update_expression
                            .as_deref()
                            .ok_or_else(|| null("updateExpression"))?;
                        Op::Update(refs.update(u, &ks.names())?)
                    }
                };
                (key, op)
            }
        };
        let cond = a
            .condition_expression
            .as_deref()
            .map(|c| refs.condition(c, ExprKind::Condition))
            .transpose()?;
        refs.finish()?;
        Ok(Action {
            table,
            ks,
            key,
            op,
            cond,
            item_on_failure: return_on_failure(
                a.return_values_on_condition_check_failure.as_deref(),
            )?,
        })
    }

    /// TransactWriteItems: up to 100 actions on distinct items, all applied or none.
    pub fn transact_write_items(
        &self,
        input: TransactWriteItemsInput,
    ) -> Result<TransactWriteItemsOutput, ApiError> {
        let items = input.transact_items.ok_or_else(|| null("transactItems"))?;
        if items.is_empty() || items.len() > MAX_TRANSACT_ITEMS {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value at 'transactItems' failed to satisfy \
                 constraint: Member must have length less than or equal to {MAX_TRANSACT_ITEMS} \
                 and greater than or equal to 1"
            )));
        }
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        let actions = items
            .into_iter()
            .map(|w| self.prepare(w))
            .collect::<Result<Vec<_>, _>>()?;
        let mut seen = HashSet::new();
        for a in &actions {
            if !seen.insert((a.table.name().to_owned(), a.key.clone())) {
                return Err(ApiError::validation(
                    "Transaction request cannot include multiple operations on one item",
                ));
            }
        }
        for attempt in 0..MAX_ATTEMPTS {
            let mut reads: Vec<(Option<Item>, ItemVersion)> = Vec::with_capacity(actions.len());
            for a in &actions {
                reads.push(a.table.get_versioned(&a.key)?);
            }
            let mut reasons = vec![CancellationReason::none(); actions.len()];
            let mut failed = false;
            let mut writes: Vec<Option<Option<Item>>> = Vec::with_capacity(actions.len());
            for (i, (a, (old, _))) in actions.iter().zip(&reads).enumerate() {
                if let Some(c) = &a.cond {
                    if !holds(c, old.as_ref()) {
                        failed = true;
                        reasons[i] = CancellationReason {
                            code: "ConditionalCheckFailed".into(),
                            message: Some("The conditional request failed".into()),
                            item: if a.item_on_failure {
                                old.as_ref()
                                    .and_then(|o| serde_json::to_value(from_item(o.clone())).ok())
                            } else {
                                None
                            },
                        };
                        writes.push(None);
                        continue;
                    }
                }
                let w = match &a.op {
                    Op::Check => None,
                    Op::Put(item) => Some(Some(item.clone())),
                    Op::Delete => Some(None),
                    Op::Update(u) => {
                        let key_item = a.ks.key_item(&a.key);
                        let new = update::apply(u, old.as_ref(), &key_item).and_then(|n| {
                            check_item_size(&n, true)?;
                            check_item_depth(&n)?;
                            Ok(n)
                        });
                        match new {
                            Ok(n) if old.is_none() && u.only_removes() => {
                                let _ = n;
                                None
                            }
                            Ok(n) => Some(Some(n)),
                            Err(e) => {
                                failed = true;
                                reasons[i] = CancellationReason {
                                    code: "ValidationError".into(),
                                    message: Some(e.message),
                                    item: None,
                                };
                                None
                            }
                        }
                    }
                };
                writes.push(w);
            }
            if failed {
                let codes: Vec<&str> = reasons.iter().map(|r| r.code.as_str()).collect();
                let mut e = ApiError::new(
                    ErrorKind::TransactionCanceled,
                    format!(
                        "Transaction cancelled, please refer cancellation reasons for specific \
                         reasons [{}]",
                        codes.join(", ")
                    ),
                );
                e.cancellation_reasons = reasons;
                return Err(e);
            }
            let mut b = Batch::new();
            for ((a, (_, version)), w) in actions.iter().zip(&reads).zip(writes) {
                b.require_unchanged(&a.table, version, "item unchanged since read");
                match w {
                    Some(Some(item)) => {
                        b.put(&a.table, &item)?;
                    }
                    Some(None) if !version.is_absent() => {
                        b.delete(&a.table, &a.key)?;
                    }
                    _ => {}
                }
            }
            match self.db().write(b) {
                Ok(()) => {
                    return Ok(TransactWriteItemsOutput {
                        consumed_capacity: cap.then(|| {
                            actions
                                .iter()
                                .zip(&reads)
                                .map(|(a, (old, _))| {
                                    let n = old.as_ref().map_or(0, item_size);
                                    let mut c = capacity(a.table.name(), n, true);
                                    c.capacity_units *= 2.0;
                                    c
                                })
                                .collect()
                        }),
                    })
                }
                Err(strata::Error::ConditionFailed { .. }) => backoff(attempt),
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::new(
            ErrorKind::TransactionConflict,
            "Transaction is in conflict with concurrent writes; retry",
        ))
    }

    /// TransactGetItems: up to 100 reads, all as of one moment.
    pub fn transact_get_items(
        &self,
        input: TransactGetItemsInput,
    ) -> Result<TransactGetItemsOutput, ApiError> {
        let items = input.transact_items.ok_or_else(|| null("transactItems"))?;
        if items.is_empty() || items.len() > MAX_TRANSACT_ITEMS {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value at 'transactItems' failed to satisfy \
                 constraint: Member must have length less than or equal to {MAX_TRANSACT_ITEMS} \
                 and greater than or equal to 1"
            )));
        }
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        let mut gets = Vec::with_capacity(items.len());
        for g in items {
            let g = g.get.ok_or_else(|| null("get"))?;
            let (table, ks) = self.table(g.table_name.as_deref())?;
            let key = ks.key_of_map(&convert::to_item(g.key.ok_or_else(|| null("key"))?)?)?;
            let names = g.expression_attribute_names.as_ref();
            if g.projection_expression.is_none() {
                Refs::check_absent(names, None)?;
            }
            let mut refs = Refs::new(names, None)?;
            let proj = g
                .projection_expression
                .as_deref()
                .map(|p| crate::expr::resolve::projection(&mut refs, p))
                .transpose()?;
            refs.finish()?;
            gets.push((table, key, proj));
        }
        let found = self.db().transaction(|tx| {
            gets.iter()
                .map(|(t, k, _)| tx.get(t, k))
                .collect::<strata::Result<Vec<_>>>()
        })?;
        let consumed = cap.then(|| {
            gets.iter()
                .zip(&found)
                .map(|((t, _, _), i)| capacity(t.name(), i.as_ref().map_or(0, item_size), false))
                .collect()
        });
        Ok(TransactGetItemsOutput {
            responses: found
                .into_iter()
                .zip(&gets)
                .map(|(i, (_, _, proj))| ItemResponse {
                    item: i.map(|i| match proj {
                        Some(p) => from_item(project(&i, p)),
                        None => from_item(i),
                    }),
                })
                .collect(),
            consumed_capacity: consumed,
        })
    }
}
