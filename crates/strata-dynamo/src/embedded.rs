//! DynamoDB's expressions on any Strata table, with Strata values: what `strata table`
//! commands use for `--condition`, `--update`, `--filter` and `--projection`, so that the
//! command line and the DynamoDB API share one semantics.
//!
//! ```
//! use std::collections::BTreeMap;
//! use strata::{Db, Item, KeyField, TableSchema};
//! use strata_dynamo::embedded::{self, ExpressionText, Expressions};
//! use strata_key::Kind;
//!
//! let db = Db::memory()?;
//! let t = db.create_table(TableSchema::new("counters", vec![KeyField::new("id", Kind::Text)]))?;
//! t.put(&Item::new().with("id", "a").with("n", 1))?;
//! let values: BTreeMap<String, strata::Attr> = [(":one".to_string(), 1.into())].into();
//! let e = Expressions::compile(
//!     &ExpressionText {
//!         update: Some("SET n = n + :one"),
//!         condition: Some("n < :one + :one"),
//!         values: Some(&values),
//!         ..Default::default()
//!     },
//!     &["id"],
//! );
//! // `+` is not allowed in a condition: the error is DynamoDB's.
//! assert!(e.unwrap_err().message.contains("Syntax error"));
//! let e = Expressions::compile(
//!     &ExpressionText { update: Some("SET n = n + :one"), values: Some(&values), ..Default::default() },
//!     &["id"],
//! )?;
//! let key = t.key(&Item::new().with("id", "a"))?;
//! let new = embedded::update_item(&db, &t, &key, &e)?;
//! assert_eq!(new.unwrap().value("n"), Some(&strata_key::Value::Int(2)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;

use strata::{Attr, Db, Item, Key, Table};

use crate::error::ApiError;
use crate::expr::ast::Path;
use crate::expr::eval::{holds, project};
use crate::expr::resolve::{self, Cond, ExprKind, Refs, Update};
use crate::expr::update;
use crate::items::{condition_failed, rmw, Change};
use crate::model::Names;

/// The expression texts of one request.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpressionText<'a> {
    /// A ConditionExpression (for writes).
    pub condition: Option<&'a str>,
    /// An UpdateExpression.
    pub update: Option<&'a str>,
    /// A FilterExpression (for reads).
    pub filter: Option<&'a str>,
    /// A ProjectionExpression.
    pub projection: Option<&'a str>,
    /// `#name` references.
    pub names: Option<&'a Names>,
    /// `:value` references, as Strata attributes.
    pub values: Option<&'a BTreeMap<String, Attr>>,
}

/// Compiled expressions, ready to evaluate.
#[derive(Debug, Clone, Default)]
pub struct Expressions {
    /// The condition of a write.
    pub condition: Option<Cond>,
    /// The update.
    pub update: Option<Update>,
    /// The filter of a read.
    pub filter: Option<Cond>,
    /// The projection.
    pub projection: Option<Vec<Path>>,
}

impl Expressions {
    /// Parses and checks the expressions (DynamoDB's rules: every reference defined and
    /// used, no reserved word, no overlapping update paths; `key` attributes may not be
    /// updated).
    pub fn compile(text: &ExpressionText<'_>, key: &[&str]) -> Result<Expressions, ApiError> {
        let mut refs = Refs::with_attrs(text.names, text.values)?;
        let update = text.update.map(|u| refs.update(u, key)).transpose()?;
        let condition = text
            .condition
            .map(|c| refs.condition(c, ExprKind::Condition))
            .transpose()?;
        let filter = text
            .filter
            .map(|c| refs.condition(c, ExprKind::Filter))
            .transpose()?;
        let projection = text
            .projection
            .map(|p| resolve::projection(&mut refs, p))
            .transpose()?;
        refs.finish()?;
        Ok(Expressions {
            condition,
            update,
            filter,
            projection,
        })
    }

    /// Whether an item passes the filter (true without one).
    pub fn keeps(&self, item: &Item) -> bool {
        self.filter.as_ref().is_none_or(|c| holds(c, Some(item)))
    }

    /// The item reduced to the projection (unchanged without one).
    pub fn project(&self, item: Item) -> Item {
        match &self.projection {
            Some(p) => project(&item, p),
            None => item,
        }
    }

    fn check(&self, old: Option<&Item>) -> Result<(), ApiError> {
        match &self.condition {
            Some(c) if !holds(c, old) => Err(condition_failed(old, false)),
            _ => Ok(()),
        }
    }
}

/// Stores `item` if the condition holds on the item it replaces; returns the replaced item.
pub fn put_item(
    db: &Db,
    table: &Table,
    item: &Item,
    e: &Expressions,
) -> Result<Option<Item>, ApiError> {
    let key = table.key_of(item)?;
    rmw(db, table, &key, |old| {
        e.check(old)?;
        Ok((Change::Put(item.clone()), old.cloned()))
    })
}

/// Deletes the item with `key` if the condition holds; returns the deleted item.
pub fn delete_item(
    db: &Db,
    table: &Table,
    key: &Key,
    e: &Expressions,
) -> Result<Option<Item>, ApiError> {
    rmw(db, table, key, |old| {
        e.check(old)?;
        Ok((Change::Delete, old.cloned()))
    })
}

/// Applies the update to the item with `key` (creating it from its key when missing, unless
/// the update only removes) if the condition holds; returns the item as stored after.
pub fn update_item(
    db: &Db,
    table: &Table,
    key: &Key,
    e: &Expressions,
) -> Result<Option<Item>, ApiError> {
    let key_item = key.to_item(table.schema());
    rmw(db, table, key, |old| {
        e.check(old)?;
        let new = match &e.update {
            Some(u) => {
                if old.is_none() && u.only_removes() {
                    return Ok((Change::Nothing, None));
                }
                update::apply(u, old, &key_item)?
            }
            None => old.cloned().unwrap_or_else(|| key_item.clone()),
        };
        crate::items::check_item_depth(&new)?;
        Ok((Change::Put(new.clone()), Some(new)))
    })
}
