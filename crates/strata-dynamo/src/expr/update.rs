//! Applying an UpdateExpression to an item.
//!
//! DynamoDB's rules: every value on the right of SET (and every ADD/DELETE operand) is
//! computed from the item as it was before the update; then the writes are applied in path
//! order (so `SET a[84] = …, a[37] = …` appends in index order) and the removals last, in
//! reverse path order (so `REMOVE a[1] SET a[3] = …` means the original third element).

use strata::{Attr, Item};

use super::ast::{Path, PathElem};
use super::eval::get;
use super::resolve::{Operand, SetValue, Update};
use crate::convert::{dtype, DType};
use crate::error::ApiError;
use crate::number;

fn missing_attribute() -> ApiError {
    ApiError::validation(
        "The provided expression refers to an attribute that does not exist in the item",
    )
}

fn wrong_type() -> ApiError {
    ApiError::validation("An operand in the update expression has an incorrect data type")
}

fn bad_path() -> ApiError {
    ApiError::validation(
        "The document path provided in the update expression is invalid for update",
    )
}

fn value(o: &Operand, old: Option<&Item>) -> Result<Attr, ApiError> {
    match o {
        Operand::Path(p) => old
            .and_then(|i| get(i, p))
            .cloned()
            .ok_or_else(missing_attribute),
        Operand::Const(a) => Ok(a.clone()),
        Operand::IfNotExists(p, v) => match old.and_then(|i| get(i, p)) {
            Some(a) => Ok(a.clone()),
            None => value(v, old),
        },
        Operand::ListAppend(a, b) => match (value(a, old)?, value(b, old)?) {
            (Attr::List(mut x), Attr::List(y)) => {
                x.extend(y);
                Ok(Attr::List(x))
            }
            _ => Err(wrong_type()),
        },
        Operand::Size(_) => Err(wrong_type()),
    }
}

fn number_of(a: &Attr) -> Result<strata_key::Decimal, ApiError> {
    match a {
        Attr::Value(v) if dtype(a) == DType::N => number::of_value(v).ok_or_else(wrong_type),
        _ => Err(wrong_type()),
    }
}

/// `a + b` (or `a - b`): integers of tables written by other Strata APIs stay integers when
/// the result fits; every other number is an exact decimal.
pub fn arith(a: &Attr, b: &Attr, plus: bool) -> Result<Attr, ApiError> {
    use strata_key::Value;
    if let (Attr::Value(Value::Int(x)), Attr::Value(Value::Int(y))) = (a, b) {
        let r = if plus {
            x.checked_add(*y)
        } else {
            x.checked_sub(*y)
        };
        if let Some(r) = r {
            return Ok(Attr::Value(Value::Int(r)));
        }
    }
    let (x, y) = (number_of(a)?, number_of(b)?);
    let r = if plus {
        number::add(x, y)?
    } else {
        number::sub(x, y)?
    };
    Ok(Attr::Value(Value::Decimal(r)))
}

fn set_value(v: &SetValue, old: Option<&Item>) -> Result<Attr, ApiError> {
    Ok(match v {
        SetValue::Operand(o) => value(o, old)?,
        SetValue::Plus(a, b) => arith(&value(a, old)?, &value(b, old)?, true)?,
        SetValue::Minus(a, b) => arith(&value(a, old)?, &value(b, old)?, false)?,
    })
}

/// What ADD makes of the existing value and the operand (`None`: nothing to add).
fn add(existing: Option<&Attr>, v: &Attr) -> Result<Attr, ApiError> {
    let Some(e) = existing else {
        return Ok(v.clone());
    };
    match (e, v) {
        (Attr::Set(x), Attr::Set(y)) if dtype(e) == dtype(v) => {
            x.union(y).map(Attr::Set).ok_or_else(wrong_type)
        }
        _ if dtype(e) == DType::N && dtype(v) == DType::N => arith(e, v, true),
        _ => Err(wrong_type()),
    }
}

/// What DELETE leaves of the existing set (`Ok(None)`: remove the attribute).
fn delete(existing: Option<&Attr>, v: &Attr) -> Result<Option<Option<Attr>>, ApiError> {
    let Some(e) = existing else {
        return Ok(None);
    };
    match (e, v) {
        (Attr::Set(x), Attr::Set(y)) if dtype(e) == dtype(v) => {
            Ok(Some(x.difference(y).map(Attr::Set)))
        }
        _ => Err(wrong_type()),
    }
}

/// The container holding the last element of `path`, walking from `item`.
fn parent_mut<'a>(item: &'a mut Item, path: &Path) -> Result<Option<&'a mut Attr>, ApiError> {
    let (Some(PathElem::Name(root)), true) = (path.0.first(), path.0.len() > 1) else {
        return Ok(None);
    };
    let mut cur = item.get_mut(root).ok_or_else(bad_path)?;
    for e in &path.0[1..path.0.len() - 1] {
        cur = match (e, cur) {
            (PathElem::Name(n), Attr::Map(m)) => m.get_mut(n).ok_or_else(bad_path)?,
            (PathElem::Index(i), Attr::List(l)) => l.get_mut(*i as usize).ok_or_else(bad_path)?,
            _ => return Err(bad_path()),
        };
    }
    Ok(Some(cur))
}

fn set_at(item: &mut Item, path: &Path, v: Attr) -> Result<(), ApiError> {
    let last = path.0.last().ok_or_else(bad_path)?;
    match (parent_mut(item, path)?, last) {
        (None, PathElem::Name(n)) => {
            item.insert(n.clone(), v);
        }
        (Some(Attr::Map(m)), PathElem::Name(n)) => {
            m.insert(n.clone(), v);
        }
        (Some(Attr::List(l)), PathElem::Index(i)) => match l.get_mut(*i as usize) {
            Some(slot) => *slot = v,
            None => l.push(v),
        },
        _ => return Err(bad_path()),
    }
    Ok(())
}

fn remove_at(item: &mut Item, path: &Path) -> Result<(), ApiError> {
    let last = path.0.last().ok_or_else(bad_path)?;
    match (parent_mut(item, path)?, last) {
        (None, PathElem::Name(n)) => {
            item.remove(n);
        }
        (Some(Attr::Map(m)), PathElem::Name(n)) => {
            m.remove(n);
        }
        (Some(Attr::List(l)), PathElem::Index(i)) => {
            if (*i as usize) < l.len() {
                l.remove(*i as usize);
            }
        }
        _ => return Err(bad_path()),
    }
    Ok(())
}

/// The item after `u`: `old` is the stored item (`None` when there is none), `key` the key
/// attributes (the start of a new item).
pub fn apply(u: &Update, old: Option<&Item>, key: &Item) -> Result<Item, ApiError> {
    let mut writes: Vec<(&Path, Attr)> = Vec::with_capacity(u.set.len() + u.add.len());
    let mut removes: Vec<&Path> = u.remove.iter().collect();
    for (p, v) in &u.set {
        writes.push((p, set_value(v, old)?));
    }
    for (p, v) in &u.add {
        writes.push((p, add(old.and_then(|i| get(i, p)), v)?));
    }
    for (p, v) in &u.delete {
        match delete(old.and_then(|i| get(i, p)), v)? {
            Some(Some(rest)) => writes.push((p, rest)),
            Some(None) => removes.push(p),
            None => {}
        }
    }
    let mut item = old.cloned().unwrap_or_else(|| key.clone());
    writes.sort_by(|a, b| a.0 .0.cmp(&b.0 .0));
    for (p, v) in writes {
        set_at(&mut item, p, v)?;
    }
    removes.sort_by(|a, b| b.0.cmp(&a.0));
    for p in removes {
        match remove_at(&mut item, p) {
            // Removing below a missing attribute of a missing item is ignored (DynamoDB).
            Err(_) if old.is_none() => {}
            r => r?,
        }
    }
    Ok(item)
}
