//! Query and Scan, with DynamoDB's paging: `Limit` counts the items read (before the filter),
//! a page also ends after 1 MB of items read, and `LastEvaluatedKey` (the key of the last
//! item read) is returned whenever a page ends before the end of the result.

use strata::{Item, Query, Scan};

use crate::convert::{self, from_item, item_size};
use crate::error::ApiError;
use crate::expr::ast::Path;
use crate::expr::eval::{holds, project};
use crate::expr::resolve::{Cond, ExprKind, Refs};
use crate::indexes::IndexRef;
use crate::items::{capacity, no_mixing, read_projection, wants_capacity};
use crate::keycond::{key_error, legacy_key_conditions};
use crate::keys::KeySchema;
use crate::legacy;
use crate::model::*;
use crate::tables::TableRef;
use crate::types::AttributeMap;
use crate::Dynamo;

/// Bytes of items read after which a page ends.
pub const PAGE_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Select {
    All,
    /// An index's entries as they are (`ALL_PROJECTED_ATTRIBUTES`, the default on indexes).
    Projected,
    Specific,
    Count,
}

fn select(s: Option<&str>, projection: Option<&str>, index: bool) -> Result<Select, ApiError> {
    match (s, projection) {
        (None, None) if index => Ok(Select::Projected),
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
        (Some("ALL_PROJECTED_ATTRIBUTES"), None) => Ok(Select::Projected),
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

/// The index a Query or Scan names, if any.
fn index_of<'a>(
    tr: &'a TableRef,
    name: Option<&str>,
    consistent: Option<bool>,
) -> Result<Option<&'a IndexRef>, ApiError> {
    let Some(name) = name else { return Ok(None) };
    let ix = tr.index(name)?;
    if ix.def.global && consistent == Some(true) {
        return Err(ApiError::validation(
            "Consistent reads are not supported on global secondary indexes",
        ));
    }
    Ok(Some(ix))
}

/// Whether reading index `ix` needs each base item (a local index whose entries lack
/// attributes the request asks for); refuses `ALL_ATTRIBUTES` on a global index that does not
/// project every attribute.
fn fetch_needed(
    ix: Option<&IndexRef>,
    sel: Select,
    projection: Option<&[Path]>,
    filter: Option<&Cond>,
) -> Result<bool, ApiError> {
    let Some(ix) = ix else { return Ok(false) };
    if ix.projects_all() {
        return Ok(false);
    }
    if ix.def.global {
        if sel == Select::All {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not \
                 supported for global secondary index {} because its projection type is not ALL",
                ix.def.name
            )));
        }
        return Ok(false);
    }
    let mut paths: Vec<&Path> = projection.map(|p| p.iter().collect()).unwrap_or_default();
    if let Some(c) = filter {
        cond_paths(c, &mut paths);
    }
    Ok(sel == Select::All || paths.iter().any(|p| !ix.projects(p.root())))
}

/// The document paths a condition reads.
fn cond_paths<'a>(c: &'a Cond, out: &mut Vec<&'a Path>) {
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
    walk(c, out)
}

/// Refuses a Query filter on key attributes.
fn filter_keys_check(c: &Cond, ks: &KeySchema, param: &str) -> Result<(), ApiError> {
    let mut paths = Vec::new();
    cond_paths(c, &mut paths);
    match paths.iter().find(|p| ks.is_key(p.root())) {
        Some(p) => Err(ApiError::validation(format!(
            "{param} can only contain non-primary key attributes: Primary key attribute: {}",
            p.root()
        ))),
        None => Ok(()),
    }
}

#[derive(Clone, Copy)]
struct PageSpec<'a> {
    limit: Option<usize>,
    filter: Option<&'a Cond>,
    projection: Option<&'a [Path]>,
    select: Select,
    /// Base items read through this index are cut down to its projection on the way out.
    narrow: Option<&'a IndexRef>,
}

fn run_page(
    table: &str,
    key_of: &dyn Fn(&Item) -> AttributeMap,
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
        let key = full.then(|| key_of(&item));
        if spec.filter.is_none_or(|c| holds(c, Some(&item))) {
            count += 1;
            if spec.select != Select::Count {
                items.push(match (spec.projection, spec.narrow) {
                    (Some(p), _) => from_item(project(&item, p)),
                    (None, Some(ix)) => from_item(ix.project(item)),
                    (None, None) => from_item(item),
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
        consumed_capacity: cap.then(|| capacity(table, bytes, false)),
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

/// Runs a page over `rows` of the base table or of index `ix` (then each entry's base item
/// when `fetch`).
fn page(
    tr: &TableRef,
    ix: Option<&IndexRef>,
    fetch: bool,
    rows: strata::Rows,
    spec: &PageSpec<'_>,
    cap: bool,
) -> Result<QueryOutput, ApiError> {
    let key_of = |item: &Item| match ix {
        Some(i) => i.key_map(item),
        None => tr.ks.key_map(item),
    };
    if !fetch {
        return run_page(tr.table.name(), &key_of, rows, spec, cap);
    }
    let spec = &PageSpec {
        narrow: ix.filter(|_| spec.select == Select::Projected),
        ..*spec
    };
    let base = &tr.table;
    let items = rows.filter_map(|r| {
        match r.and_then(|e| base.key_of(&e)).and_then(|k| base.get(&k)) {
            Ok(Some(item)) => Some(Ok(item)),
            // Deleted since the index was read.
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    });
    run_page(tr.table.name(), &key_of, items, spec, cap)
}

/// The entry or item key a request's `ExclusiveStartKey` names.
fn start_of(
    tr: &TableRef,
    ix: Option<&IndexRef>,
    m: Option<AttributeMap>,
) -> Result<Option<strata::Key>, ApiError> {
    match (ix, m) {
        (Some(i), Some(m)) => i.start_key(m).map(Some),
        (_, m) => start_key(&tr.ks, m),
    }
}

impl Dynamo {
    /// Query: one partition, optionally a sort-key range, in either direction.
    pub fn query(&self, input: QueryInput) -> Result<QueryOutput, ApiError> {
        let tr = self.table_ref(input.table_name.as_deref())?;
        let ix = index_of(&tr, input.index_name.as_deref(), input.consistent_read)?;
        let ks = ix.map_or(&tr.ks, |i| &i.ks);
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
        let sel = select(input.select.as_deref(), proj_param, ix.is_some())?;
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
            (Some(e), _) => refs.key_condition(e, ks)?,
            (None, Some(kc)) => legacy_key_conditions(kc, ks)?,
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
                filter_keys_check(&c, ks, "Filter Expression")?;
                Some(c)
            }
            (None, Some(qf)) => {
                let c = legacy::filter(qf, input.conditional_operator.as_deref())?;
                if let Some(c) = &c {
                    filter_keys_check(c, ks, "QueryFilter")?;
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
        let fetch = fetch_needed(ix, sel, projection.as_deref(), filter.as_ref())?;
        let after = start_of(&tr, ix, input.exclusive_start_key)?;
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
        let rows = ix.map_or(&tr.table, |i| &i.table).query_rows(&q)?;
        let spec = PageSpec {
            limit,
            filter: filter.as_ref(),
            projection: projection.as_deref(),
            select: sel,
            narrow: None,
        };
        page(&tr, ix, fetch, rows, &spec, cap)
    }

    /// Scan: the whole table or one segment of it, in partition-hash order.
    pub fn scan(&self, input: ScanInput) -> Result<QueryOutput, ApiError> {
        let tr = self.table_ref(input.table_name.as_deref())?;
        let ix = index_of(&tr, input.index_name.as_deref(), input.consistent_read)?;
        let table = ix.map_or(&tr.table, |i| &i.table);
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
        let sel = select(input.select.as_deref(), proj_param, ix.is_some())?;
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
        let fetch = fetch_needed(ix, sel, projection.as_deref(), filter.as_ref())?;
        let after = start_of(&tr, ix, input.exclusive_start_key)?;
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
            narrow: None,
        };
        page(&tr, ix, fetch, rows, &spec, cap)
    }
}
