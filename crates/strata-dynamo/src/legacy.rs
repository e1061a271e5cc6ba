//! DynamoDB's legacy (pre-expression) parameters, turned into the same conditions the
//! expressions use: `Expected`, `QueryFilter`, `ScanFilter`, `ConditionalOperator`,
//! `AttributesToGet`; and `AttributeUpdates`, applied directly.

use std::collections::BTreeMap;

use strata::{Attr, Item};

use crate::convert::{self, dtype, DType};
use crate::error::ApiError;
use crate::expr::ast::{CmpOp, Path};
use crate::expr::eval;
use crate::expr::resolve::{Cond, Operand};
use crate::model::{AttributeValueUpdate, Condition, ExpectedAttributeValue};
use crate::number;

fn invalid(msg: impl std::fmt::Display) -> ApiError {
    ApiError::validation(format!("One or more parameter values were invalid: {msg}"))
}

/// Whether `ConditionalOperator` is `AND` (the default) or `OR`.
pub fn conditional_and(op: Option<&str>) -> Result<bool, ApiError> {
    match op {
        None | Some("AND") => Ok(true),
        Some("OR") => Ok(false),
        Some(o) => Err(ApiError::validation(format!(
            "1 validation error detected: Value '{o}' at 'conditionalOperator' failed to satisfy \
             constraint: Member must satisfy enum value set: [AND, OR]"
        ))),
    }
}

fn combine(conds: Vec<Cond>, and: bool) -> Option<Cond> {
    conds.into_iter().reduce(|a, b| {
        if and {
            Cond::And(Box::new(a), Box::new(b))
        } else {
            Cond::Or(Box::new(a), Box::new(b))
        }
    })
}

const OPERATORS: &str =
    "[IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]";

fn scalar(a: &Attr, op: &str) -> Result<(), ApiError> {
    let t = dtype(a);
    if matches!(t, DType::S | DType::N | DType::B) {
        Ok(())
    } else {
        Err(invalid(format!(
            "ComparisonOperator {op} is not valid for {} AttributeValue type",
            t.name()
        )))
    }
}

/// One legacy comparison of attribute `name`.
fn comparison(name: &str, op: &str, list: Vec<Attr>) -> Result<Cond, ApiError> {
    let path = Path::attr(name);
    let p = || Operand::Path(path.clone());
    let count = |n: usize| -> Result<(), ApiError> {
        if list.len() == n {
            Ok(())
        } else {
            Err(invalid(format!(
                "Invalid number of argument(s) for the {op} ComparisonOperator"
            )))
        }
    };
    let first = |list: &[Attr]| list[0].clone();
    Ok(match op {
        "EQ" | "NE" => {
            count(1)?;
            let o = if op == "EQ" { CmpOp::Eq } else { CmpOp::Ne };
            Cond::Cmp(p(), o, Operand::Const(first(&list)))
        }
        "LT" | "LE" | "GT" | "GE" => {
            count(1)?;
            scalar(&list[0], op)?;
            let o = match op {
                "LT" => CmpOp::Lt,
                "LE" => CmpOp::Le,
                "GT" => CmpOp::Gt,
                _ => CmpOp::Ge,
            };
            Cond::Cmp(p(), o, Operand::Const(first(&list)))
        }
        "NOT_NULL" => {
            count(0)?;
            Cond::Exists(path)
        }
        "NULL" => {
            count(0)?;
            Cond::NotExists(path)
        }
        "CONTAINS" | "NOT_CONTAINS" => {
            count(1)?;
            scalar(&list[0], op)?;
            let c = Cond::Contains(p(), Operand::Const(first(&list)));
            if op == "CONTAINS" {
                c
            } else {
                Cond::And(
                    Box::new(Cond::Exists(path.clone())),
                    Box::new(Cond::Not(Box::new(c))),
                )
            }
        }
        "BEGINS_WITH" => {
            count(1)?;
            if !matches!(dtype(&list[0]), DType::S | DType::B) {
                return Err(invalid(format!(
                    "ComparisonOperator {op} is not valid for {} AttributeValue type",
                    dtype(&list[0]).name()
                )));
            }
            Cond::BeginsWith(p(), Operand::Const(first(&list)))
        }
        "IN" => {
            if list.is_empty() {
                return Err(invalid(format!(
                    "Invalid number of argument(s) for the {op} ComparisonOperator"
                )));
            }
            for a in &list {
                scalar(a, op)?;
            }
            Cond::In(p(), list.into_iter().map(Operand::Const).collect())
        }
        "BETWEEN" => {
            count(2)?;
            scalar(&list[0], op)?;
            scalar(&list[1], op)?;
            if dtype(&list[0]) != dtype(&list[1]) {
                return Err(invalid(
                    "AttributeValues inside AttributeValueList must be of same type",
                ));
            }
            if eval::compare(&list[0], &list[1]) == Some(std::cmp::Ordering::Greater) {
                return Err(invalid(
                    "The BETWEEN condition was provided a range where the lower bound is \
                     greater than the upper bound",
                ));
            }
            let mut it = list.into_iter();
            let (lo, hi) = (it.next(), it.next());
            match (lo, hi) {
                (Some(lo), Some(hi)) => Cond::Between(p(), Operand::Const(lo), Operand::Const(hi)),
                _ => return Err(invalid("BETWEEN needs two values")),
            }
        }
        other => {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value '{other}' at 'comparisonOperator' failed to \
                 satisfy constraint: Member must satisfy enum value set: {OPERATORS}"
            )))
        }
    })
}

fn values(list: Option<&Vec<crate::types::AttributeValue>>) -> Result<Vec<Attr>, ApiError> {
    list.map(|l| {
        l.iter()
            .map(|v| convert::to_attr(v.clone(), 1))
            .collect::<Result<Vec<_>, _>>()
    })
    .transpose()
    .map(Option::unwrap_or_default)
}

/// The condition of `Expected` (`None` when empty).
pub fn expected(
    exp: &BTreeMap<String, ExpectedAttributeValue>,
    op: Option<&str>,
) -> Result<Option<Cond>, ApiError> {
    let and = conditional_and(op)?;
    let mut conds = Vec::with_capacity(exp.len());
    for (name, e) in exp {
        let c = match (&e.comparison_operator, &e.value, e.exists) {
            (Some(_), Some(_), _) => {
                return Err(invalid(
                    "Value or ValueList must be used with ComparisonOperator, but not both",
                ))
            }
            (Some(_), None, Some(_)) => {
                return Err(invalid(
                    "Exists and ComparisonOperator cannot be used together",
                ))
            }
            (Some(o), None, None) => comparison(name, o, values(e.attribute_value_list.as_ref())?)?,
            (None, Some(v), None | Some(true)) => Cond::Cmp(
                Operand::Path(Path::attr(name)),
                CmpOp::Eq,
                Operand::Const(convert::to_attr(v.clone(), 1)?),
            ),
            (None, Some(_), Some(false)) => {
                return Err(invalid(format!(
                    "Value cannot be used when Exists is false for Attribute: {name}"
                )))
            }
            (None, None, Some(false)) => Cond::NotExists(Path::attr(name)),
            (None, None, _) => {
                return Err(invalid(format!(
                    "Value must be provided when Exists is true for Attribute: {name}"
                )))
            }
        };
        conds.push(c);
    }
    Ok(combine(conds, and))
}

/// The condition of a `QueryFilter` or `ScanFilter` (`None` when empty).
pub fn filter(
    conds: &BTreeMap<String, Condition>,
    op: Option<&str>,
) -> Result<Option<Cond>, ApiError> {
    let and = conditional_and(op)?;
    let mut out = Vec::with_capacity(conds.len());
    for (name, c) in conds {
        let op = c.comparison_operator.as_deref().ok_or_else(|| {
            ApiError::validation(format!(
                "1 validation error detected: Value null at 'comparisonOperator' of {name} failed \
                 to satisfy constraint: Member must not be null"
            ))
        })?;
        out.push(comparison(
            name,
            op,
            values(c.attribute_value_list.as_ref())?,
        )?);
    }
    Ok(combine(out, and))
}

/// The paths of `AttributesToGet` (top-level names, no duplicates, at least one).
pub fn attributes_to_get(names: &[String]) -> Result<Vec<Path>, ApiError> {
    if names.is_empty() {
        return Err(ApiError::validation(
            "1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy \
             constraint: Member must have length greater than or equal to 1",
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for n in names {
        convert::check_attr_name(n)?;
        if !seen.insert(n.as_str()) {
            return Err(invalid(format!("Duplicate value in attribute name: {n}")));
        }
    }
    Ok(names.iter().map(Path::attr).collect())
}

/// An `AttributeUpdates` action, checked.
#[derive(Debug, Clone)]
pub enum Action {
    /// Set the attribute.
    Put(Attr),
    /// Remove the attribute, or (with a set) these elements.
    Delete(Option<Attr>),
    /// Add a number, set elements or list elements.
    Add(Attr),
}

/// Checks `AttributeUpdates` (before the item is read).
pub fn attribute_updates(
    updates: &BTreeMap<String, AttributeValueUpdate>,
    key: &[&str],
) -> Result<Vec<(String, Action)>, ApiError> {
    let mut out = Vec::with_capacity(updates.len());
    for (name, u) in updates {
        convert::check_attr_name(name)?;
        if key.contains(&name.as_str()) {
            return Err(invalid(format!(
                "Cannot update attribute {name}. This attribute is part of the key"
            )));
        }
        let value = u
            .value
            .as_ref()
            .map(|v| convert::to_attr(v.clone(), 1))
            .transpose()?;
        let action = match (u.action.as_deref().unwrap_or("PUT"), value) {
            ("PUT", Some(v)) => Action::Put(v),
            ("PUT" | "ADD", None) => {
                return Err(invalid(
                    "Only DELETE action is allowed when no attribute value is specified",
                ))
            }
            ("DELETE", None) => Action::Delete(None),
            ("DELETE", Some(v)) => {
                if !dtype(&v).is_set() {
                    return Err(invalid(format!(
                        "DELETE action with value is not supported for the type {}",
                        dtype(&v).name()
                    )));
                }
                Action::Delete(Some(v))
            }
            ("ADD", Some(v)) => {
                let t = dtype(&v);
                if !(t == DType::N || t == DType::L || t.is_set()) {
                    return Err(invalid(format!(
                        "ADD action is not supported for the type {}",
                        t.name()
                    )));
                }
                Action::Add(v)
            }
            (other, _) => {
                return Err(ApiError::validation(format!(
                    "1 validation error detected: Value '{other}' at \
                     'attributeUpdates.{name}.member.action' failed to satisfy constraint: \
                     Member must satisfy enum value set: [ADD, PUT, DELETE]"
                )))
            }
        };
        out.push((name.clone(), action));
    }
    Ok(out)
}

fn mismatch(op: &str, v: &Attr, e: &Attr) -> ApiError {
    invalid(format!(
        "Type mismatch for {op}; operator type: {}, existing type: {}",
        dtype(v).name(),
        dtype(e).name()
    ))
}

/// Applies checked `AttributeUpdates` to `item` (top-level attributes).
pub fn apply_attribute_updates(
    item: &mut Item,
    actions: &[(String, Action)],
) -> Result<(), ApiError> {
    for (name, a) in actions {
        match a {
            Action::Put(v) => {
                item.insert(name.clone(), v.clone());
            }
            Action::Delete(None) => {
                item.remove(name);
            }
            Action::Delete(Some(v)) => match item.get(name) {
                None => {}
                Some(e @ Attr::Set(x)) => match v {
                    Attr::Set(y) if dtype(e) == dtype(v) => match x.difference(y) {
                        Some(rest) => {
                            item.insert(name.clone(), Attr::Set(rest));
                        }
                        None => {
                            item.remove(name);
                        }
                    },
                    _ => return Err(mismatch("DELETE", v, e)),
                },
                Some(e) => return Err(mismatch("DELETE", v, e)),
            },
            Action::Add(v) => {
                let new = match item.get(name) {
                    None => v.clone(),
                    Some(e) => match (e, v) {
                        (Attr::Set(x), Attr::Set(y)) if dtype(e) == dtype(v) => {
                            Attr::Set(x.union(y).ok_or_else(|| mismatch("ADD", v, e))?)
                        }
                        (Attr::List(x), Attr::List(y)) => {
                            let mut l = x.clone();
                            l.extend(y.iter().cloned());
                            Attr::List(l)
                        }
                        (Attr::Value(x), Attr::Value(y))
                            if dtype(e) == DType::N && dtype(v) == DType::N =>
                        {
                            let (Some(x), Some(y)) = (number::of_value(x), number::of_value(y))
                            else {
                                return Err(mismatch("ADD", v, e));
                            };
                            Attr::Value(strata_key::Value::Decimal(number::add(x, y)?))
                        }
                        _ => return Err(mismatch("ADD", v, e)),
                    },
                };
                item.insert(name.clone(), new);
            }
        }
    }
    Ok(())
}
