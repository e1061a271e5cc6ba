//! Query and Scan, with DynamoDB's paging: `Limit` counts the items read (before the filter),
//! a page also ends after 1 MB of items read, and `LastEvaluatedKey` (the key of the last
//! item read) is returned whenever a page ends before the end of the result.

use std::collections::BTreeMap;

use strata::{Attr, Item, Query, Scan, SortCondition, Table};
use strata_key::Value;

use crate::convert::{self, dtype, from_item, item_size, DType};
use crate::error::ApiError;
use crate::expr::ast::{CmpOp, Path, RawCond, RawElem, RawOperand};
use crate::expr::eval::{compare, holds, project};
use crate::expr::resolve::{parse_raw_condition, Cond, ExprKind, Refs};
use crate::items::{capacity, no_mixing, read_projection, wants_capacity};
use crate::keys::{KeyAttr, KeySchema};
use crate::legacy;
use crate::model::*;
use crate::types::AttributeMap;
use crate::Dynamo;

/// Bytes of items read after which a page ends.
pub const PAGE_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Select {
    All,
    Specific,
    Count,
}

fn select(s: Option<&str>, projection: Option<&str>, index: bool) -> Result<Select, ApiError> {
    match (s, projection) {
        (None, None) | (Some("ALL_ATTRIBUTES"), None) => Ok(Select::All),
        (None, Some(_)) | (Some("SPECIFIC_ATTRIBUTES"), Some(_)) => Ok(Select::Specific),
        (Some("COUNT"), None) => Ok(Select::Count),
        (Some("SPECIFIC_ATTRIBUTES"), None) => Err(ApiError::validation(
            "Must specify the AttributesToGet or ProjectionExpression when choosing to get \
             SPECIFIC_ATTRIBUTES",
        )),
        (Some("ALL_PROJECTED_ATTRIBUTES"), _) if !index => Err(ApiError::validation(
            "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName",
        )),
        (Some(s @ ("ALL_ATTRIBUTES" | "COUNT" | "ALL_PROJECTED_ATTRIBUTES")), Some(p)) => Err(
            ApiError::validation(format!("Cannot specify the {p} when choosing to get {s}")),
        ),
        (Some(other), _) => Err(ApiError::validation(format!(
            "1 validation error detected: Value '{other}' at 'select' failed to satisfy \
             constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, \
             ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]"
        ))),
    }
}

fn check_limit(limit: Option<i64>) -> Result<Option<usize>, ApiError> {
    match limit {
        Some(n) if n < 1 => Err(ApiError::validation(format!(
            "1 validation error detected: Value '{n}' at 'limit' failed to satisfy constraint: \
             Member must have value greater than or equal to 1"
        ))),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        None => Ok(None),
    }
}

fn no_index(index: Option<&str>) -> Result<(), ApiError> {
    match index {
        Some(i) => Err(ApiError::validation(format!(
            "The table does not have the specified index: {i} (secondary indexes are not \
             supported by Strata yet)"
        ))),
        None => Ok(()),
    }
}

/// A key condition, ready for Strata: the partition value and maybe a sort condition.
struct KeyCondition {
    partition: Value,
    sort: Option<SortCondition>,
}

fn key_error(msg: impl std::fmt::Display) -> ApiError {
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

    fn key_condition(&mut self, text: &str, ks: &KeySchema) -> Result<KeyCondition, ApiError> {
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

fn legacy_key_conditions(
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

/// Refuses a Query filter on key attributes.
fn filter_keys_check(c: &Cond, ks: &KeySchema, param: &str) -> Result<(), ApiError> {
    use crate::expr::resolve::Operand;
    fn walk<'a>(c: &'a Cond, out: &mut Vec<&'a Path>) {
        fn op<'a>(o: &'a Operand, out: &mut Vec<&'a Path>) {
            match o {
                Operand::Path(p) => out.push(p),
                Operand::Size(x) => op(x, out),
                Operand::IfNotExists(p, x) => {
                    out.push(p);
                    op(x, out)
                }
                Operand::ListAppend(a, b) => {
                    op(a, out);
                    op(b, out)
                }
                Operand::Const(_) => {}
            }
        }
        match c {
            Cond::Cmp(a, _, b) | Cond::BeginsWith(a, b) | Cond::Contains(a, b) => {
                op(a, out);
                op(b, out)
            }
            Cond::Between(a, b, d) => {
                op(a, out);
                op(b, out);
                op(d, out)
            }
            Cond::In(a, l) => {
                op(a, out);
                l.iter().for_each(|x| op(x, out))
            }
            Cond::Exists(p) | Cond::NotExists(p) => out.push(p),
            Cond::Type(a, _) => op(a, out),
            Cond::And(a, b) | Cond::Or(a, b) => {
                walk(a, out);
                walk(b, out)
            }
            Cond::Not(a) => walk(a, out),
        }
    }
    let mut paths = Vec::new();
    walk(c, &mut paths);
    match paths.iter().find(|p| ks.is_key(p.root())) {
        Some(p) => Err(ApiError::validation(format!(
            "{param} can only contain non-primary key attributes: Primary key attribute: {}",
            p.root()
        ))),
        None => Ok(()),
    }
}

struct PageSpec<'a> {
    limit: Option<usize>,
    filter: Option<&'a Cond>,
    projection: Option<&'a [Path]>,
    select: Select,
}

fn run_page(
    table: &Table,
    ks: &KeySchema,
    rows: impl Iterator<Item = strata::Result<Item>>,
    spec: &PageSpec<'_>,
    cap: bool,
) -> Result<QueryOutput, ApiError> {
    let mut rows = rows.peekable();
    let mut items = Vec::new();
    let (mut count, mut scanned, mut bytes) = (0u64, 0u64, 0usize);
    let mut last_key = None;
    while let Some(item) = rows.next() {
        let item = item?;
        scanned += 1;
        bytes += item_size(&item);
        let full = spec.limit.is_some_and(|l| scanned as usize >= l) || bytes >= PAGE_BYTES;
        // The key of the last item read, only needed when the page ends here.
        let key = full.then(|| ks.key_map(&item));
        if spec.filter.is_none_or(|c| holds(c, Some(&item))) {
            count += 1;
            if spec.select != Select::Count {
                items.push(match spec.projection {
                    Some(p) => from_item(project(&item, p)),
                    None => from_item(item),
                });
            }
        }
        if full {
            if rows.peek().is_some() {
                last_key = key;
            }
            break;
        }
    }
    Ok(QueryOutput {
        items: (spec.select != Select::Count).then_some(items),
        count,
        scanned_count: scanned,
        last_evaluated_key: last_key,
        consumed_capacity: cap.then(|| capacity(table.name(), bytes, false)),
    })
}

fn start_key(ks: &KeySchema, m: Option<AttributeMap>) -> Result<Option<strata::Key>, ApiError> {
    let Some(m) = m else { return Ok(None) };
    let item = convert::to_item(m)?;
    ks.key_of_map(&item).map(Some).map_err(|e| {
        ApiError::validation(format!(
            "The provided starting key is invalid: {}",
            e.message
        ))
    })
}

impl Dynamo {
    /// Query: one partition, optionally a sort-key range, in either direction.
    pub fn query(&self, input: QueryInput) -> Result<QueryOutput, ApiError> {
        let (table, ks) = self.table(input.table_name.as_deref())?;
        no_index(input.index_name.as_deref())?;
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        // The legacy KeyConditions goes with the other expressions, but not with a
        // KeyConditionExpression (DynamoDB's rule).
        no_mixing(
            &[("KeyConditions", input.key_conditions.is_some())],
            &[(
                "KeyConditionExpression",
                input.key_condition_expression.is_some(),
            )],
        )?;
        no_mixing(
            &[
                ("AttributesToGet", input.attributes_to_get.is_some()),
                ("QueryFilter", input.query_filter.is_some()),
                ("ConditionalOperator", input.conditional_operator.is_some()),
            ],
            &[
                ("FilterExpression", input.filter_expression.is_some()),
                (
                    "KeyConditionExpression",
                    input.key_condition_expression.is_some(),
                ),
                (
                    "ProjectionExpression",
                    input.projection_expression.is_some(),
                ),
            ],
        )?;
        let proj_param = if input.projection_expression.is_some() {
            Some("ProjectionExpression")
        } else if input.attributes_to_get.is_some() {
            Some("AttributesToGet")
        } else {
            None
        };
        let sel = select(input.select.as_deref(), proj_param, false)?;
        let limit = check_limit(input.limit)?;
        let names = input.expression_attribute_names.as_ref();
        let values = input.expression_attribute_values.as_ref();
        let uses_expressions = input.key_condition_expression.is_some()
            || input.filter_expression.is_some()
            || input.projection_expression.is_some();
        if !uses_expressions {
            Refs::check_absent(names, values)?;
        }
        let mut refs = Refs::new(names, values)?;
        let kc = match (&input.key_condition_expression, &input.key_conditions) {
            (Some(e), _) => refs.key_condition(e, &ks)?,
            (None, Some(kc)) => legacy_key_conditions(kc, &ks)?,
            (None, None) => {
                return Err(key_error(
                    "Either the KeyConditions or KeyConditionExpression parameter must be \
                     specified in the request.",
                ))
            }
        };
        let filter = match (&input.filter_expression, &input.query_filter) {
            (Some(f), _) => {
                let c = refs.condition(f, ExprKind::Filter)?;
                filter_keys_check(&c, &ks, "Filter Expression")?;
                Some(c)
            }
            (None, Some(qf)) => {
                let c = legacy::filter(qf, input.conditional_operator.as_deref())?;
                if let Some(c) = &c {
                    filter_keys_check(c, &ks, "QueryFilter")?;
                }
                c
            }
            (None, None) => None,
        };
        let projection = read_projection(
            &mut refs,
            input.projection_expression.as_deref(),
            input.attributes_to_get.as_ref(),
        )?;
        refs.finish()?;
        let after = start_key(&ks, input.exclusive_start_key)?;
        if let Some(a) = &after {
            if a.partition[0] != kc.partition {
                return Err(ApiError::validation(
                    "The provided starting key is invalid: The provided starting key is outside \
                     query boundaries based on provided conditions",
                ));
            }
        }
        let q = Query {
            partition: vec![kc.partition],
            sort: kc.sort,
            reverse: input.scan_index_forward == Some(false),
            limit: None,
            after,
        };
        let rows = table.query_rows(&q)?;
        let spec = PageSpec {
            limit,
            filter: filter.as_ref(),
            projection: projection.as_deref(),
            select: sel,
        };
        run_page(&table, &ks, rows, &spec, cap)
    }

    /// Scan: the whole table or one segment of it, in partition-hash order.
    pub fn scan(&self, input: ScanInput) -> Result<QueryOutput, ApiError> {
        let (table, ks) = self.table(input.table_name.as_deref())?;
        no_index(input.index_name.as_deref())?;
        let cap = wants_capacity(input.return_consumed_capacity.as_deref())?;
        no_mixing(
            &[
                ("AttributesToGet", input.attributes_to_get.is_some()),
                ("ScanFilter", input.scan_filter.is_some()),
                ("ConditionalOperator", input.conditional_operator.is_some()),
            ],
            &[
                ("FilterExpression", input.filter_expression.is_some()),
                (
                    "ProjectionExpression",
                    input.projection_expression.is_some(),
                ),
            ],
        )?;
        let proj_param = if input.projection_expression.is_some() {
            Some("ProjectionExpression")
        } else if input.attributes_to_get.is_some() {
            Some("AttributesToGet")
        } else {
            None
        };
        let sel = select(input.select.as_deref(), proj_param, false)?;
        let limit = check_limit(input.limit)?;
        let (segment, segments) =
            match (input.segment, input.total_segments) {
                (None, None) => (0, 1),
                (Some(s), Some(t)) => {
                    if !(1..=1_000_000).contains(&t) {
                        return Err(ApiError::validation(format!(
                        "1 validation error detected: Value '{t}' at 'totalSegments' failed to \
                         satisfy constraint: Member must have value less than or equal to \
                         1000000 and greater than or equal to 1"
                    )));
                    }
                    if s < 0 || s >= t {
                        return Err(ApiError::validation(format!(
                            "The Segment parameter is zero-based and must be less than parameter \
                         TotalSegments: Segment: {s} is not less than TotalSegments: {t}"
                        )));
                    }
                    (s as u32, t as u32)
                }
                _ => return Err(ApiError::validation(
                    "The TotalSegments parameter is required but was not present in the request \
                     when Segment parameter is present (and the other way round)",
                )),
            };
        let names = input.expression_attribute_names.as_ref();
        let values = input.expression_attribute_values.as_ref();
        if input.filter_expression.is_none() && input.projection_expression.is_none() {
            Refs::check_absent(names, values)?;
        }
        let mut refs = Refs::new(names, values)?;
        let filter = match (&input.filter_expression, &input.scan_filter) {
            (Some(f), _) => Some(refs.condition(f, ExprKind::Filter)?),
            (None, Some(sf)) => legacy::filter(sf, input.conditional_operator.as_deref())?,
            (None, None) => None,
        };
        let projection = read_projection(
            &mut refs,
            input.projection_expression.as_deref(),
            input.attributes_to_get.as_ref(),
        )?;
        refs.finish()?;
        let after = start_key(&ks, input.exclusive_start_key)?;
        if let Some(a) = &after {
            if table.segment_of(&a.partition, segments)? != segment {
                return Err(ApiError::validation(format!(
                    "The provided Exclusive start key does not map to the provided Segment and \
                     TotalSegments values: Segment {segment}, TotalSegments {segments}"
                )));
            }
        }
        let s = Scan {
            segment,
            segments,
            limit: None,
            after,
        };
        let rows = table.scan_rows(&s)?;
        let spec = PageSpec {
            limit,
            filter: filter.as_ref(),
            projection: projection.as_deref(),
            select: sel,
        };
        run_page(&table, &ks, rows, &spec, cap)
    }
}
