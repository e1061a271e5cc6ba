//! From parsed expressions to checked, evaluable ones: `#name` and `:value` references
//! replaced (and their use tracked, since DynamoDB refuses unused ones), reserved words,
//! functions, operand types of constants, path overlaps and the size limits checked, with
//! DynamoDB's messages.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use strata::Attr;

use super::ast::{
    CmpOp, Path, PathElem, RawClause, RawCond, RawElem, RawOperand, RawPath, RawSetValue,
};
use super::parse::{self, ParseError};
use crate::convert::{self, dtype, DType};
use crate::error::ApiError;
use crate::model::{Names, Values};

/// Longest expression accepted, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 4096;
/// Most operators and functions in one expression.
pub const MAX_OPERATORS: usize = 300;
/// Most elements in a document path.
pub const MAX_PATH_DEPTH: usize = 32;

/// Which request parameter an expression came from (for messages and the allowed functions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExprKind {
    /// `ConditionExpression`.
    Condition,
    /// `FilterExpression`.
    Filter,
    /// `KeyConditionExpression`.
    KeyCondition,
    /// `UpdateExpression`.
    Update,
    /// `ProjectionExpression`.
    Projection,
}

impl ExprKind {
    /// The parameter's name.
    pub fn param(self) -> &'static str {
        match self {
            ExprKind::Condition => "ConditionExpression",
            ExprKind::Filter => "FilterExpression",
            ExprKind::KeyCondition => "KeyConditionExpression",
            ExprKind::Update => "UpdateExpression",
            ExprKind::Projection => "ProjectionExpression",
        }
    }

    /// `Invalid <param>: <msg>`.
    pub fn error(self, msg: impl std::fmt::Display) -> ApiError {
        ApiError::validation(format!("Invalid {}: {msg}", self.param()))
    }
}

/// DynamoDB's reserved words (from "Reserved words in DynamoDB", AWS DynamoDB Developer
/// Guide): a name written in an expression must not be one of them, in any case.
fn reserved() -> &'static BTreeSet<&'static str> {
    static WORDS: OnceLock<BTreeSet<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| {
        include_str!("reserved_words.txt")
            .split_whitespace()
            .collect()
    })
}

/// True when `name` is a reserved word.
pub fn is_reserved(name: &str) -> bool {
    reserved().contains(name.to_ascii_uppercase().as_str())
}

fn valid_ref(key: &str, sigil: char) -> bool {
    let mut c = key.chars();
    c.next() == Some(sigil) && {
        let rest: Vec<char> = c.collect();
        !rest.is_empty() && rest.iter().all(|c| c.is_ascii_alphanumeric() || *c == '_')
    }
}

/// The references of one request (`ExpressionAttributeNames`, `ExpressionAttributeValues`),
/// shared by all its expressions, recording which were used.
pub struct Refs<'a> {
    names: Option<&'a Names>,
    values: Option<&'a Values>,
    attr_values: Option<&'a BTreeMap<String, Attr>>,
    used_names: BTreeSet<String>,
    used_values: BTreeSet<String>,
    converted: BTreeMap<String, Attr>,
}

impl<'a> Refs<'a> {
    /// Checks the maps' keys.
    pub fn new(names: Option<&'a Names>, values: Option<&'a Values>) -> Result<Refs<'a>, ApiError> {
        if let Some(n) = names {
            if n.is_empty() {
                return Err(ApiError::validation(
                    "ExpressionAttributeNames must not be empty",
                ));
            }
            if let Some(k) = n.keys().find(|k| !valid_ref(k, '#')) {
                return Err(ApiError::validation(format!(
                    "ExpressionAttributeNames contains invalid key: Syntax error; key: \"{k}\""
                )));
            }
            for v in n.values() {
                convert::check_attr_name(v)?;
            }
        }
        if let Some(v) = values {
            if v.is_empty() {
                return Err(ApiError::validation(
                    "ExpressionAttributeValues must not be empty",
                ));
            }
            if let Some(k) = v.keys().find(|k| !valid_ref(k, ':')) {
                return Err(ApiError::validation(format!(
                    "ExpressionAttributeValues contains invalid key: Syntax error; key: \"{k}\""
                )));
            }
        }
        Ok(Refs {
            names,
            values,
            attr_values: None,
            used_names: BTreeSet::new(),
            used_values: BTreeSet::new(),
            converted: BTreeMap::new(),
        })
    }

    /// References whose values are Strata attributes already (embedded use, the CLI).
    pub fn with_attrs(
        names: Option<&'a Names>,
        values: Option<&'a BTreeMap<String, Attr>>,
    ) -> Result<Refs<'a>, ApiError> {
        let mut r = Refs::new(names, None)?;
        if let Some(v) = values {
            if let Some(k) = v.keys().find(|k| !valid_ref(k, ':')) {
                return Err(ApiError::validation(format!(
                    "ExpressionAttributeValues contains invalid key: Syntax error; key: \"{k}\""
                )));
            }
        }
        r.attr_values = values;
        Ok(r)
    }

    /// Refs of a request without expressions: both maps must be absent.
    pub fn check_absent(names: Option<&Names>, values: Option<&Values>) -> Result<(), ApiError> {
        if names.is_some() {
            return Err(ApiError::validation(
                "ExpressionAttributeNames can only be specified when using expressions",
            ));
        }
        if values.is_some() {
            return Err(ApiError::validation(
                "ExpressionAttributeValues can only be specified when using expressions",
            ));
        }
        Ok(())
    }

    pub(crate) fn resolve_name(&mut self, r: &str, kind: ExprKind) -> Result<String, ApiError> {
        match self.names.and_then(|n| n.get(r)) {
            Some(v) => {
                self.used_names.insert(r.to_owned());
                Ok(v.clone())
            }
            None => Err(kind.error(format!(
                "An expression attribute name used in the document path is not defined; \
                 attribute name: {r}"
            ))),
        }
    }

    pub(crate) fn resolve_value(&mut self, r: &str, kind: ExprKind) -> Result<Attr, ApiError> {
        if let Some(a) = self.attr_values.and_then(|v| v.get(r)) {
            self.used_values.insert(r.to_owned());
            return Ok(a.clone());
        }
        if let Some(a) = self.converted.get(r) {
            return Ok(a.clone());
        }
        let Some(av) = self.values.and_then(|v| v.get(r)) else {
            return Err(kind.error(format!(
                "An expression attribute value used in expression is not defined; \
                 attribute value: {r}"
            )));
        };
        let a = convert::to_attr(av.clone(), 1).map_err(|e| {
            ApiError::validation(format!(
                "ExpressionAttributeValues contains invalid value: {} for key {r}",
                e.message
            ))
        })?;
        self.used_values.insert(r.to_owned());
        self.converted.insert(r.to_owned(), a.clone());
        Ok(a)
    }

    /// Fails when a name or value was given but not used by any expression.
    pub fn finish(self) -> Result<(), ApiError> {
        let unused = |all: Option<Vec<&String>>, used: &BTreeSet<String>| -> Vec<String> {
            all.unwrap_or_default()
                .into_iter()
                .filter(|k| !used.contains(*k))
                .cloned()
                .collect()
        };
        let n = unused(self.names.map(|m| m.keys().collect()), &self.used_names);
        if !n.is_empty() {
            return Err(ApiError::validation(format!(
                "Value provided in ExpressionAttributeNames unused in expressions: keys: {{{}}}",
                n.join(", ")
            )));
        }
        let all_values = match (self.values, self.attr_values) {
            (Some(m), _) => Some(m.keys().collect()),
            (None, Some(m)) => Some(m.keys().collect()),
            (None, None) => None,
        };
        let v = unused(all_values, &self.used_values);
        if !v.is_empty() {
            return Err(ApiError::validation(format!(
                "Value provided in ExpressionAttributeValues unused in expressions: keys: {{{}}}",
                v.join(", ")
            )));
        }
        Ok(())
    }

    fn path(&mut self, p: RawPath, kind: ExprKind) -> Result<Path, ApiError> {
        if p.0.len() > MAX_PATH_DEPTH {
            return Err(kind.error(format!(
                "The document path has too many nesting levels; nesting levels: {}",
                p.0.len()
            )));
        }
        let mut out = Vec::with_capacity(p.0.len());
        for e in p.0 {
            out.push(match e {
                RawElem::Name(n) => {
                    if is_reserved(&n) {
                        return Err(kind.error(format!(
                            "Attribute name is a reserved keyword; reserved keyword: {n}"
                        )));
                    }
                    PathElem::Name(n)
                }
                RawElem::Ref(r) => PathElem::Name(self.resolve_name(&r, kind)?),
                RawElem::Index(i) => PathElem::Index(i),
            });
        }
        Ok(Path(out))
    }
}

/// A resolved operand.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A document path of the item.
    Path(Path),
    /// A value from `ExpressionAttributeValues`.
    Const(Attr),
    /// `size(x)`.
    Size(Box<Operand>),
    /// `if_not_exists(path, x)` (updates only).
    IfNotExists(Path, Box<Operand>),
    /// `list_append(x, y)` (updates only).
    ListAppend(Box<Operand>, Box<Operand>),
}

impl Operand {
    /// The type of the operand when it is known without an item.
    fn static_type(&self) -> Option<DType> {
        match self {
            Operand::Const(a) => Some(dtype(a)),
            Operand::Size(_) => Some(DType::N),
            _ => None,
        }
    }
}

/// A resolved condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// `a op b`
    Cmp(Operand, CmpOp, Operand),
    /// `a BETWEEN lo AND hi`
    Between(Operand, Operand, Operand),
    /// `a IN (…)`
    In(Operand, Vec<Operand>),
    /// `attribute_exists(path)`
    Exists(Path),
    /// `attribute_not_exists(path)`
    NotExists(Path),
    /// `attribute_type(x, :t)`
    Type(Operand, DType),
    /// `begins_with(a, b)`
    BeginsWith(Operand, Operand),
    /// `contains(a, b)`
    Contains(Operand, Operand),
    /// `x AND y`
    And(Box<Cond>, Box<Cond>),
    /// `x OR y`
    Or(Box<Cond>, Box<Cond>),
    /// `NOT x`
    Not(Box<Cond>),
}

fn check_text(s: &str, kind: ExprKind) -> Result<(), ApiError> {
    if s.len() > MAX_EXPRESSION_LEN {
        return Err(kind.error(format!(
            "Expression size has exceeded the maximum allowed size; expression size: {}",
            s.len()
        )));
    }
    if s.trim().is_empty() {
        return Err(kind.error("The expression can not be empty;"));
    }
    Ok(())
}

fn parse_error(e: ParseError, kind: ExprKind) -> ApiError {
    kind.error(e)
}

fn count_operand(o: &RawOperand) -> usize {
    match o {
        RawOperand::Call(_, args) => 1 + args.iter().map(count_operand).sum::<usize>(),
        _ => 0,
    }
}

fn count_ops(c: &RawCond) -> usize {
    match c {
        RawCond::Cmp(a, _, b) => 1 + count_operand(a) + count_operand(b),
        RawCond::Between(a, b, c) => 1 + count_operand(a) + count_operand(b) + count_operand(c),
        RawCond::In(a, l) => 1 + count_operand(a) + l.iter().map(count_operand).sum::<usize>(),
        RawCond::Call(_, args) => 1 + args.iter().map(count_operand).sum::<usize>(),
        RawCond::And(a, b) | RawCond::Or(a, b) => 1 + count_ops(a) + count_ops(b),
        RawCond::Not(a) => 1 + count_ops(a),
        RawCond::Paren(a) => count_ops(a),
    }
}

fn arity(name: &str, args: &[RawOperand], n: usize, kind: ExprKind) -> Result<(), ApiError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(kind.error(format!(
            "Incorrect number of operands for operator or function; operator or function: \
             {name}, number of operands: {}",
            args.len()
        )))
    }
}

fn operand_type_error(op: &str, t: DType, kind: ExprKind) -> ApiError {
    kind.error(format!(
        "Incorrect operand type for operator or function; operator or function: {op}, \
         operand type: {}",
        t.name()
    ))
}

fn needs_path(name: &str, kind: ExprKind) -> ApiError {
    kind.error(format!(
        "Operator or function requires a document path; operator or function: {name}"
    ))
}

const CONDITION_FUNCTIONS: &[&str] = &[
    "attribute_exists",
    "attribute_not_exists",
    "attribute_type",
    "begins_with",
    "contains",
];

impl Refs<'_> {
    /// A value operand of a condition (a path, a constant or `size(…)`).
    fn cond_operand(&mut self, o: RawOperand, kind: ExprKind) -> Result<Operand, ApiError> {
        match o {
            RawOperand::Path(p) => Ok(Operand::Path(self.path(p, kind)?)),
            RawOperand::Value(v) => Ok(Operand::Const(self.resolve_value(&v, kind)?)),
            RawOperand::Call(name, args) => match name.as_str() {
                "size" => {
                    arity("size", &args, 1, kind)?;
                    let Some(a) = args.into_iter().next() else {
                        return Err(kind.error("size needs an operand"));
                    };
                    let a = self.cond_operand(a, kind)?;
                    if let Some(t) = a.static_type() {
                        if !matches!(
                            t,
                            DType::S
                                | DType::B
                                | DType::Ss
                                | DType::Ns
                                | DType::Bs
                                | DType::L
                                | DType::M
                        ) {
                            return Err(operand_type_error("size", t, kind));
                        }
                    }
                    Ok(Operand::Size(Box::new(a)))
                }
                n if CONDITION_FUNCTIONS.contains(&n) => Err(kind.error(format!(
                    "The function is not allowed to be used this way in an expression; \
                     function: {n}"
                ))),
                "if_not_exists" | "list_append" => Err(kind.error(format!(
                    "The function is not allowed in a {} expression; function: {name}",
                    if kind == ExprKind::Filter {
                        "filter"
                    } else {
                        "condition"
                    }
                ))),
                _ => Err(kind.error(format!("Invalid function name; function: {name}"))),
            },
        }
    }

    fn cond_call(
        &mut self,
        name: String,
        args: Vec<RawOperand>,
        kind: ExprKind,
    ) -> Result<Cond, ApiError> {
        let path_arg =
            |refs: &mut Self, args: Vec<RawOperand>, f: &str| -> Result<Path, ApiError> {
                arity(f, &args, 1, kind)?;
                match args.into_iter().next() {
                    Some(RawOperand::Path(p)) => refs.path(p, kind),
                    Some(RawOperand::Value(v)) => {
                        refs.resolve_value(&v, kind)?;
                        Err(needs_path(f, kind))
                    }
                    _ => Err(needs_path(f, kind)),
                }
            };
        match name.as_str() {
            "attribute_exists" => Ok(Cond::Exists(path_arg(self, args, &name)?)),
            "attribute_not_exists" => Ok(Cond::NotExists(path_arg(self, args, &name)?)),
            "attribute_type" => {
                arity(&name, &args, 2, kind)?;
                let mut it = args.into_iter();
                let (Some(a), Some(t)) = (it.next(), it.next()) else {
                    return Err(kind.error("attribute_type needs two operands"));
                };
                let a = self.cond_operand(a, kind)?;
                let RawOperand::Value(t) = t else {
                    return Err(kind.error(
                        "Incorrect operand type for operator or function; operator or \
                         function: attribute_type, operand type: a document path",
                    ));
                };
                match self.resolve_value(&t, kind)? {
                    Attr::Value(strata_key::Value::Text(s)) => match DType::parse(&s) {
                        Some(d) => Ok(Cond::Type(a, d)),
                        None => Err(kind.error(format!(
                            "Invalid type for attribute_type; type: {s}, the type must be \
                             one of N, NS, BS, L, SS, NULL, B, BOOL, S, M"
                        ))),
                    },
                    other => Err(operand_type_error("attribute_type", dtype(&other), kind)),
                }
            }
            "begins_with" | "contains" => {
                arity(&name, &args, 2, kind)?;
                let mut it = args.into_iter();
                let (Some(a), Some(b)) = (it.next(), it.next()) else {
                    return Err(kind.error("two operands needed"));
                };
                let a = self.cond_operand(a, kind)?;
                let b = self.cond_operand(b, kind)?;
                if let (Operand::Path(x), Operand::Path(y)) = (&a, &b) {
                    if x == y {
                        return Err(kind.error(format!(
                            "The first operand must be distinct from the remaining operands for \
                             this operator or function; operator: {name}, first operand: {x}"
                        )));
                    }
                }
                if name == "begins_with" {
                    for o in [&a, &b] {
                        if let Some(t) = o.static_type() {
                            if !matches!(t, DType::S | DType::B) {
                                return Err(operand_type_error("begins_with", t, kind));
                            }
                        }
                    }
                    Ok(Cond::BeginsWith(a, b))
                } else {
                    Ok(Cond::Contains(a, b))
                }
            }
            "size" => Err(kind.error(
                "The function is not allowed to be used this way in an expression; function: size",
            )),
            "if_not_exists" | "list_append" => Err(kind.error(format!(
                "The function is not allowed in a condition expression; function: {name}"
            ))),
            _ => Err(kind.error(format!("Invalid function name; function: {name}"))),
        }
    }

    fn ordered_operand(&self, o: &Operand, op: &str, kind: ExprKind) -> Result<(), ApiError> {
        match o.static_type() {
            Some(t) if !matches!(t, DType::S | DType::N | DType::B) => {
                Err(operand_type_error(op, t, kind))
            }
            _ => Ok(()),
        }
    }

    fn cond(&mut self, c: RawCond, kind: ExprKind) -> Result<Cond, ApiError> {
        Ok(match c {
            RawCond::Cmp(a, op, b) => {
                let a = self.cond_operand(a, kind)?;
                let b = self.cond_operand(b, kind)?;
                if !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                    self.ordered_operand(&a, op.symbol(), kind)?;
                    self.ordered_operand(&b, op.symbol(), kind)?;
                }
                Cond::Cmp(a, op, b)
            }
            RawCond::Between(a, lo, hi) => {
                let a = self.cond_operand(a, kind)?;
                let lo = self.cond_operand(lo, kind)?;
                let hi = self.cond_operand(hi, kind)?;
                for o in [&a, &lo, &hi] {
                    self.ordered_operand(o, "BETWEEN", kind)?;
                }
                if let (Operand::Const(l), Operand::Const(h)) = (&lo, &hi) {
                    if dtype(l) != dtype(h) {
                        return Err(kind.error(format!(
                            "The BETWEEN operator requires same data type for lower and upper \
                             bounds; lower bound operand: {}, upper bound operand: {}",
                            dtype(l).name(),
                            dtype(h).name()
                        )));
                    }
                    if super::eval::compare(l, h) == Some(std::cmp::Ordering::Greater) {
                        return Err(kind.error(
                            "The BETWEEN operator requires upper bound to be greater than or \
                             equal to lower bound",
                        ));
                    }
                }
                Cond::Between(a, lo, hi)
            }
            RawCond::In(a, list) => {
                let a = self.cond_operand(a, kind)?;
                let list = list
                    .into_iter()
                    .map(|o| self.cond_operand(o, kind))
                    .collect::<Result<_, _>>()?;
                Cond::In(a, list)
            }
            RawCond::Call(name, args) => self.cond_call(name, args, kind)?,
            RawCond::And(a, b) => Cond::And(
                Box::new(self.cond(*a, kind)?),
                Box::new(self.cond(*b, kind)?),
            ),
            RawCond::Or(a, b) => Cond::Or(
                Box::new(self.cond(*a, kind)?),
                Box::new(self.cond(*b, kind)?),
            ),
            RawCond::Not(a) => Cond::Not(Box::new(self.cond(*a, kind)?)),
            RawCond::Paren(a) => {
                if matches!(*a, RawCond::Paren(_)) {
                    return Err(kind.error("The expression has redundant parentheses;"));
                }
                self.cond(*a, kind)?
            }
        })
    }

    /// Parses and resolves a ConditionExpression or FilterExpression.
    pub fn condition(&mut self, text: &str, kind: ExprKind) -> Result<Cond, ApiError> {
        let raw = parse_raw_condition(text, kind)?;
        self.cond(raw, kind)
    }
}

/// Parses a condition and checks its size and operator count (no resolution).
pub fn parse_raw_condition(text: &str, kind: ExprKind) -> Result<RawCond, ApiError> {
    check_text(text, kind)?;
    let raw = parse::parse_condition(text).map_err(|e| parse_error(e, kind))?;
    let ops = count_ops(&raw);
    if ops > MAX_OPERATORS {
        return Err(kind.error(format!(
            "The expression contains too many operators; operator count: {ops}"
        )));
    }
    Ok(raw)
}

/// Two paths overlap when one is a prefix of the other, and conflict when they first differ
/// at an element that is a name in one and an index in the other.
fn check_paths(paths: &[&Path], kind: ExprKind) -> Result<(), ApiError> {
    for (i, a) in paths.iter().enumerate() {
        for b in &paths[i + 1..] {
            let common =
                a.0.iter()
                    .zip(b.0.iter())
                    .take_while(|(x, y)| x == y)
                    .count();
            if common == a.0.len() || common == b.0.len() {
                return Err(kind.error(format!(
                    "Two document paths overlap with each other; must remove or rewrite one of \
                     these paths; path one: {a}, path two: {b}"
                )));
            }
            let conflict = matches!(
                (&a.0[common], &b.0[common]),
                (PathElem::Name(_), PathElem::Index(_)) | (PathElem::Index(_), PathElem::Name(_))
            );
            if conflict {
                return Err(kind.error(format!(
                    "Two document paths conflict with each other; must remove or rewrite one of \
                     these paths; path one: {a}, path two: {b}"
                )));
            }
        }
    }
    Ok(())
}

/// Parses and resolves a ProjectionExpression.
pub fn projection(refs: &mut Refs<'_>, text: &str) -> Result<Vec<Path>, ApiError> {
    let kind = ExprKind::Projection;
    check_text(text, kind)?;
    let raw = parse::parse_projection(text).map_err(|e| parse_error(e, kind))?;
    let paths = raw
        .into_iter()
        .map(|p| refs.path(p, kind))
        .collect::<Result<Vec<_>, _>>()?;
    check_paths(&paths.iter().collect::<Vec<_>>(), kind)?;
    Ok(paths)
}

mod update_expr;
pub use update_expr::{SetValue, Update};
