//! Evaluating resolved expressions on items: document paths, DynamoDB's comparisons,
//! conditions, projections.
//!
//! Comparison rules (DynamoDB's): values of different types are never equal and never
//! ordered; `<`, `<=`, `>`, `>=` and `BETWEEN` order numbers numerically and strings and
//! binaries by their bytes (unsigned); a missing attribute makes every comparison false except
//! `<>`, which it makes true; sets are equal when they hold the same elements.

use std::borrow::Cow;
use std::cmp::Ordering;

use strata::{Attr, Item};
use strata_key::Value;

use super::ast::{CmpOp, Path, PathElem};
use super::resolve::{Cond, Operand};
use crate::convert::{dtype, DType};
use crate::number;

/// The value at `path` in `item`, if any.
pub fn get<'a>(item: &'a Item, path: &Path) -> Option<&'a Attr> {
    let mut elems = path.0.iter();
    let mut cur = match elems.next()? {
        PathElem::Name(n) => item.get(n)?,
        PathElem::Index(_) => return None,
    };
    for e in elems {
        cur = match (e, cur) {
            (PathElem::Name(n), Attr::Map(m)) => m.get(n)?,
            (PathElem::Index(i), Attr::List(l)) => l.get(*i as usize)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn value_eq(a: &Value, b: &Value) -> bool {
    match (number::of_value(a), number::of_value(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// DynamoDB equality: same type and same value (numbers numerically, sets as sets).
pub fn equal(a: &Attr, b: &Attr) -> bool {
    match (a, b) {
        (Attr::Value(x), Attr::Value(y)) => dtype(a) == dtype(b) && value_eq(x, y),
        (Attr::List(x), Attr::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        (Attr::Map(x), Attr::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((k1, v1), (k2, v2))| k1 == k2 && equal(v1, v2))
        }
        (Attr::Set(x), Attr::Set(y)) => {
            dtype(a) == dtype(b)
                && x.len() == y.len()
                && x.values()
                    .iter()
                    .zip(y.values())
                    .all(|(p, q)| value_eq(p, q))
        }
        _ => false,
    }
}

/// The order of two values of one orderable type (`N`, `S`, `B`); `None` otherwise.
pub fn compare(a: &Attr, b: &Attr) -> Option<Ordering> {
    let (Attr::Value(x), Attr::Value(y)) = (a, b) else {
        return None;
    };
    match (x, y) {
        (Value::Text(p), Value::Text(q)) => Some(p.as_bytes().cmp(q.as_bytes())),
        (Value::Bytes(p), Value::Bytes(q)) => Some(p.cmp(q)),
        _ => Some(number::of_value(x)?.cmp(&number::of_value(y)?)),
    }
}

fn size_of(a: &Attr) -> Option<usize> {
    Some(match a {
        Attr::Value(Value::Text(s)) => s.chars().count(),
        Attr::Value(Value::Bytes(b)) => b.len(),
        Attr::Value(_) => return None,
        Attr::List(l) => l.len(),
        Attr::Map(m) => m.len(),
        Attr::Set(s) => s.len(),
    })
}

/// The value of a condition operand on `item` (`None`: a missing attribute, or a `size` of
/// something without a size).
pub fn operand<'a>(o: &'a Operand, item: Option<&'a Item>) -> Option<Cow<'a, Attr>> {
    match o {
        Operand::Path(p) => item.and_then(|i| get(i, p)).map(Cow::Borrowed),
        Operand::Const(a) => Some(Cow::Borrowed(a)),
        Operand::Size(x) => {
            let n = size_of(operand(x, item)?.as_ref())?;
            Some(Cow::Owned(Attr::Value(Value::Decimal(
                strata_key::Decimal::from(n as u64),
            ))))
        }
        Operand::IfNotExists(p, v) => match item.and_then(|i| get(i, p)) {
            Some(a) => Some(Cow::Borrowed(a)),
            None => operand(v, item),
        },
        Operand::ListAppend(..) => None,
    }
}

fn cmp(op: CmpOp, a: Option<&Attr>, b: Option<&Attr>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return op == CmpOp::Ne;
    };
    match op {
        CmpOp::Eq => equal(a, b),
        CmpOp::Ne => !equal(a, b),
        CmpOp::Lt => compare(a, b) == Some(Ordering::Less),
        CmpOp::Le => matches!(compare(a, b), Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => compare(a, b) == Some(Ordering::Greater),
        CmpOp::Ge => matches!(compare(a, b), Some(Ordering::Greater | Ordering::Equal)),
    }
}

fn begins_with(a: &Attr, b: &Attr) -> bool {
    match (a, b) {
        (Attr::Value(Value::Text(x)), Attr::Value(Value::Text(y))) => x.starts_with(y.as_str()),
        (Attr::Value(Value::Bytes(x)), Attr::Value(Value::Bytes(y))) => x.starts_with(y),
        _ => false,
    }
}

fn contains(a: &Attr, b: &Attr) -> bool {
    match (a, b) {
        (Attr::Value(Value::Text(x)), Attr::Value(Value::Text(y))) => x.contains(y.as_str()),
        (Attr::Value(Value::Bytes(x)), Attr::Value(Value::Bytes(y))) => {
            y.is_empty() || x.windows(y.len()).any(|w| w == y.as_slice())
        }
        (Attr::Set(s), Attr::Value(v)) => {
            let want = match dtype(a) {
                DType::Ss => DType::S,
                DType::Ns => DType::N,
                _ => DType::B,
            };
            dtype(b) == want && s.values().iter().any(|x| value_eq(x, v))
        }
        (Attr::List(l), _) => l.iter().any(|x| equal(x, b)),
        _ => false,
    }
}

/// Whether `c` holds for `item` (`None`: the item does not exist).
pub fn holds(c: &Cond, item: Option<&Item>) -> bool {
    match c {
        Cond::Cmp(a, op, b) => cmp(
            *op,
            operand(a, item).as_deref(),
            operand(b, item).as_deref(),
        ),
        Cond::Between(a, lo, hi) => {
            let (Some(a), Some(lo), Some(hi)) =
                (operand(a, item), operand(lo, item), operand(hi, item))
            else {
                return false;
            };
            matches!(compare(&a, &lo), Some(Ordering::Greater | Ordering::Equal))
                && matches!(compare(&a, &hi), Some(Ordering::Less | Ordering::Equal))
        }
        Cond::In(a, list) => match operand(a, item) {
            Some(a) => list
                .iter()
                .any(|o| operand(o, item).is_some_and(|b| equal(&a, &b))),
            None => false,
        },
        Cond::Exists(p) => item.and_then(|i| get(i, p)).is_some(),
        Cond::NotExists(p) => item.and_then(|i| get(i, p)).is_none(),
        Cond::Type(a, t) => operand(a, item).is_some_and(|a| dtype(&a) == *t),
        Cond::BeginsWith(a, b) => match (operand(a, item), operand(b, item)) {
            (Some(a), Some(b)) => begins_with(&a, &b),
            _ => false,
        },
        Cond::Contains(a, b) => match (operand(a, item), operand(b, item)) {
            (Some(a), Some(b)) => contains(&a, &b),
            _ => false,
        },
        Cond::And(a, b) => holds(a, item) && holds(b, item),
        Cond::Or(a, b) => holds(a, item) || holds(b, item),
        Cond::Not(a) => !holds(a, item),
    }
}

/// The shape of a projection: the paths asked for, merged into a tree.
#[derive(Debug, Default)]
struct Shape {
    all: bool,
    fields: std::collections::BTreeMap<String, Shape>,
    elems: std::collections::BTreeMap<u32, Shape>,
}

impl Shape {
    fn add(&mut self, elems: &[PathElem]) {
        match elems.split_first() {
            None => self.all = true,
            Some((PathElem::Name(n), rest)) => self.fields.entry(n.clone()).or_default().add(rest),
            Some((PathElem::Index(i), rest)) => self.elems.entry(*i).or_default().add(rest),
        }
    }

    fn apply(&self, a: &Attr) -> Option<Attr> {
        if self.all {
            return Some(a.clone());
        }
        match a {
            Attr::Map(m) if !self.fields.is_empty() => {
                let out = self.apply_map(m);
                (!out.is_empty()).then_some(Attr::Map(out))
            }
            Attr::List(l) if !self.elems.is_empty() => {
                let out: Vec<Attr> = self
                    .elems
                    .iter()
                    .filter_map(|(i, s)| l.get(*i as usize).and_then(|x| s.apply(x)))
                    .collect();
                (!out.is_empty()).then_some(Attr::List(out))
            }
            _ => None,
        }
    }

    fn apply_map(&self, m: &Item) -> Item {
        self.fields
            .iter()
            .filter_map(|(k, s)| m.get(k).and_then(|v| s.apply(v)).map(|v| (k.clone(), v)))
            .collect()
    }
}

/// The item reduced to `paths` (DynamoDB's projection: the document structure is kept, list
/// elements in index order, and what is missing is left out).
pub fn project(item: &Item, paths: &[Path]) -> Item {
    let mut shape = Shape::default();
    for p in paths {
        shape.add(&p.0);
    }
    shape.apply_map(item)
}
