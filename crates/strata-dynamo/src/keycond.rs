//! Query's key conditions: `KeyConditionExpression` and the legacy `KeyConditions`, checked
//! against the key schema of the table or index with DynamoDB's rules, and turned into a
//! Strata partition value and sort condition.

use std::collections::BTreeMap;

use strata::{Attr, SortCondition};
use strata_key::Value;

use crate::convert::{self, dtype, DType};
use crate::error::ApiError;
use crate::expr::ast::{CmpOp, RawCond, RawElem, RawOperand};
use crate::expr::eval::compare;
use crate::expr::resolve::{parse_raw_condition, ExprKind, Refs};
use crate::keys::{KeyAttr, KeySchema};
use crate::model::Condition;

/// A key condition, ready for Strata: the partition value and maybe a sort condition.
pub(crate) struct KeyCondition {
    pub(crate) partition: Value,
    pub(crate) sort: Option<SortCondition>,
}

pub(crate) fn key_error(msg: impl std::fmt::Display) -> ApiError {
    ApiError::validation(msg.to_string())
}

fn type_mismatch() -> ApiError {
    ApiError::validation(
        "One or more parameter values were invalid: Condition parameter type does not match \
         schema type",
    )
}

/// One condition on one key attribute.
enum KeyOp {
    Cmp(CmpOp, Attr),
    Between(Attr, Attr),
    BeginsWith(Attr),
}

fn key_value(ks: &KeySchema, a: &KeyAttr, v: &Attr, is_hash: bool) -> Result<Value, ApiError> {
    if dtype(v) != a.dtype {
        return Err(type_mismatch());
    }
    ks.check_value(a, v, is_hash)
}

fn build(ks: &KeySchema, conds: Vec<(String, KeyOp)>) -> Result<KeyCondition, ApiError> {
    if conds.len() > 2 {
        return Err(key_error("Conditions can be of length 1 or 2 only"));
    }
    let mut partition = None;
    let mut sort = None;
    for (name, op) in conds {
        if name == ks.hash.name {
            if partition.is_some() {
                return Err(key_error(
                    "KeyConditionExpressions must only contain one condition per key",
                ));
            }
            match op {
                KeyOp::Cmp(CmpOp::Eq, v) => partition = Some(key_value(ks, &ks.hash, &v, true)?),
                _ => return Err(key_error("Query key condition not supported")),
            }
        } else if ks.range.as_ref().is_some_and(|r| r.name == name) {
            if sort.is_some() {
                return Err(key_error(
                    "KeyConditionExpressions must only contain one condition per key",
                ));
            }
            sort = Some(op);
        } else {
            let missing = if partition.is_none() && !ks.hash.name.is_empty() {
                &ks.hash.name
            } else {
                ks.range.as_ref().map_or(&ks.hash.name, |r| &r.name)
            };
            return Err(key_error(format!(
                "Query condition missed key schema element: {missing}"
            )));
        }
    }
    let partition = partition.ok_or_else(|| {
        key_error(format!(
            "Query condition missed key schema element: {}",
            ks.hash.name
        ))
    })?;
    let sort = match (sort, &ks.range) {
        (None, _) => None,
        (Some(_), None) => {
            return Err(key_error("Query key condition not supported"));
        }
        (Some(op), Some(r)) => Some(match op {
            KeyOp::Cmp(o, v) => {
                let v = vec![key_value(ks, r, &v, false)?];
                match o {
                    CmpOp::Eq => SortCondition::Eq(v),
                    CmpOp::Lt => SortCondition::Lt(v),
                    CmpOp::Le => SortCondition::Le(v),
                    CmpOp::Gt => SortCondition::Gt(v),
                    CmpOp::Ge => SortCondition::Ge(v),
                    CmpOp::Ne => return Err(key_error("Query key condition not supported")),
                }
            }
            KeyOp::Between(lo, hi) => {
                if compare(&lo, &hi) == Some(std::cmp::Ordering::Greater) {
                    return Err(ExprKind::KeyCondition.error(
                        "The BETWEEN operator requires upper bound to be greater than or equal \
                         to lower bound",
                    ));
                }
                SortCondition::Between(
                    vec![key_value(ks, r, &lo, false)?],
                    vec![key_value(ks, r, &hi, false)?],
                )
            }
            KeyOp::BeginsWith(v) => {
                if r.dtype == DType::N {
                    return Err(ExprKind::KeyCondition.error(
                        "Incorrect operand type for operator or function; operator or \
                         function: begins_with, operand type: N",
                    ));
                }
                SortCondition::BeginsWith(vec![key_value(ks, r, &v, false)?])
            }
        }),
    };
    Ok(KeyCondition { partition, sort })
}

fn flatten(c: RawCond, out: &mut Vec<RawCond>) -> Result<(), ApiError> {
    match c {
        RawCond::And(a, b) => {
            flatten(*a, out)?;
            flatten(*b, out)
        }
        RawCond::Paren(a) => flatten(*a, out),
        RawCond::Or(..) => Err(key_error(
            "Invalid operator used in KeyConditionExpression: OR",
        )),
        RawCond::Not(..) => Err(key_error(
            "Invalid operator used in KeyConditionExpression: NOT",
        )),
        c => {
            out.push(c);
            Ok(())
        }
    }
}

impl Refs<'_> {
    fn key_name(&mut self, o: RawOperand) -> Result<Option<String>, ApiError> {
        let RawOperand::Path(p) = o else {
            return Ok(None);
        };
        if p.0.len() > 1 {
            return Err(ExprKind::KeyCondition
                .error("KeyConditionExpressions cannot have conditions on nested attributes"));
        }
        let name = match p.0.into_iter().next() {
            Some(RawElem::Name(n)) => {
                if crate::expr::resolve::is_reserved(&n) {
                    return Err(ExprKind::KeyCondition.error(format!(
                        "Attribute name is a reserved keyword; reserved keyword: {n}"
                    )));
                }
                n
            }
            Some(RawElem::Ref(r)) => self.resolve_name(&r, ExprKind::KeyCondition)?,
            _ => return Err(ExprKind::KeyCondition.error("Invalid key condition")),
        };
        Ok(Some(name))
    }

    fn key_const(&mut self, o: &RawOperand) -> Result<Option<Attr>, ApiError> {
        match o {
            RawOperand::Value(v) => Ok(Some(self.resolve_value(v, ExprKind::KeyCondition)?)),
            RawOperand::Call(name, _) => {
                Err(ExprKind::KeyCondition
                    .error(format!("Invalid function name; function: {name}")))
            }
            RawOperand::Path(_) => Ok(None),
        }
    }

    fn key_conjunct(&mut self, c: RawCond) -> Result<(String, KeyOp), ApiError> {
        let kind = ExprKind::KeyCondition;
        match c {
            RawCond::Cmp(a, op, b) => {
                if matches!(op, CmpOp::Ne) {
                    return Err(key_error(
                        "Invalid operator used in KeyConditionExpression: <>",
                    ));
                }
                let (ca, cb) = (self.key_const(&a)?, self.key_const(&b)?);
                match (ca, cb) {
                    (None, Some(v)) => {
                        let n = self
                            .key_name(a)?
                            .ok_or_else(|| kind.error("bad key condition"))?;
                        Ok((n, KeyOp::Cmp(op, v)))
                    }
                    (Some(v), None) => {
                        let n = self
                            .key_name(b)?
                            .ok_or_else(|| kind.error("bad key condition"))?;
                        Ok((n, KeyOp::Cmp(op.swapped(), v)))
                    }
                    (None, None) => {
                        self.key_name(a)?;
                        self.key_name(b)?;
                        Err(kind.error(
                            "Invalid condition in KeyConditionExpression: Multiple attribute \
                             names used in one condition",
                        ))
                    }
                    (Some(_), Some(_)) => Err(kind.error(
                        "Invalid condition in KeyConditionExpression: No key attribute specified",
                    )),
                }
            }
            RawCond::Between(a, lo, hi) => {
                let lo = self.key_const(&lo)?;
                let hi = self.key_const(&hi)?;
                let n = self.key_name(a)?;
                match (n, lo, hi) {
                    (Some(n), Some(lo), Some(hi)) => Ok((n, KeyOp::Between(lo, hi))),
                    _ => Err(kind.error(
                        "Invalid condition in KeyConditionExpression: BETWEEN takes a key \
                         attribute and two values",
                    )),
                }
            }
            RawCond::In(..) => Err(key_error(
                "Invalid operator used in KeyConditionExpression: IN",
            )),
            RawCond::Call(name, args) => match name.as_str() {
                "begins_with" => {
                    if args.len() != 2 {
                        return Err(kind.error(format!(
                            "Incorrect number of operands for operator or function; operator \
                             or function: begins_with, number of operands: {}",
                            args.len()
                        )));
                    }
                    let mut it = args.into_iter();
                    let (Some(a), Some(b)) = (it.next(), it.next()) else {
                        return Err(kind.error("begins_with needs two operands"));
                    };
                    let v = self.key_const(&b)?;
                    match (self.key_name(a)?, v) {
                        (Some(n), Some(v)) => Ok((n, KeyOp::BeginsWith(v))),
                        _ => Err(kind.error(
                            "Invalid condition in KeyConditionExpression: begins_with takes a \
                             key attribute and a value",
                        )),
                    }
                }
                "attribute_exists"
                | "attribute_not_exists"
                | "attribute_type"
                | "contains"
                | "size" => Err(key_error(format!(
                    "Invalid operator used in KeyConditionExpression: {name}"
                ))),
                _ => Err(kind.error(format!("Invalid function name; function: {name}"))),
            },
            _ => Err(kind.error("Invalid key condition")),
        }
    }

    pub(crate) fn key_condition(
        &mut self,
        text: &str,
        ks: &KeySchema,
    ) -> Result<KeyCondition, ApiError> {
        let raw = parse_raw_condition(text, ExprKind::KeyCondition)?;
        let mut conj = Vec::new();
        flatten(raw, &mut conj)?;
        let conds = conj
            .into_iter()
            .map(|c| self.key_conjunct(c))
            .collect::<Result<Vec<_>, _>>()?;
        build(ks, conds)
    }
}

pub(crate) fn legacy_key_conditions(
    kc: &BTreeMap<String, Condition>,
    ks: &KeySchema,
) -> Result<KeyCondition, ApiError> {
    if kc.is_empty() {
        return Err(key_error(
            "Either the KeyConditions or KeyConditionExpression parameter must be specified in \
             the request.",
        ));
    }
    let mut conds = Vec::new();
    for (name, c) in kc {
        let list = c
            .attribute_value_list
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|v| convert::to_attr(v, 1))
            .collect::<Result<Vec<_>, _>>()?;
        let op = c.comparison_operator.as_deref().unwrap_or("");
        let n = match op {
            "BETWEEN" => 2,
            _ => 1,
        };
        if list.len() != n {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Invalid number of argument(s) for \
                 the {op} ComparisonOperator"
            )));
        }
        let mut it = list.into_iter();
        let first = it.next().ok_or_else(|| key_error("missing value"))?;
        let kop = match op {
            "EQ" => KeyOp::Cmp(CmpOp::Eq, first),
            "LT" => KeyOp::Cmp(CmpOp::Lt, first),
            "LE" => KeyOp::Cmp(CmpOp::Le, first),
            "GT" => KeyOp::Cmp(CmpOp::Gt, first),
            "GE" => KeyOp::Cmp(CmpOp::Ge, first),
            "BEGINS_WITH" => KeyOp::BeginsWith(first),
            "BETWEEN" => {
                KeyOp::Between(first, it.next().ok_or_else(|| key_error("missing value"))?)
            }
            other => {
                return Err(ApiError::validation(format!(
                    "Unsupported operator on KeyCondition: {other}"
                )))
            }
        };
        conds.push((name.clone(), kop));
    }
    build(ks, conds)
}
