//! Items, keys, queries and scans as JSON: the forms of the `strata table` command line.
//!
//! Values follow `strata_key::json` (integral numbers are ints, other numbers floats, strings
//! text, typed objects `{"t": ...}` for bytes, uuid, time, f32, tuple...). In items, arrays
//! are lists and other objects are maps; a map that itself has a `"t"` attribute is written
//! `{"t":"map","v":{...}}`; a set is `{"t":"set","v":[...]}` (its values typed like key
//! values).
//!
//! Key attributes are converted to their schema type where that is exact: an integer to
//! `f64`/`f32` (when it converts exactly), an array to a `tuple`, a string to a `uuid`, a JSON
//! number or a numeric string to a `decimal` (from the number's text, so `0.1` is exactly one
//! tenth and no digit is lost).

use serde_json::{Map, Value as Json};
use strata_key::json::{value_from_json, value_to_json};
use strata_key::{Decimal, Kind, Tuple, Value};

use crate::error::{Error, Result};
use crate::item::{Attr, Item};
use crate::query::{Query, Scan, SortCondition};
use crate::schema::KeyField;
use crate::table::{Key, Table};

const TYPE_TAGS: &[&str] = &[
    "null", "bool", "int", "f32", "f64", "bytes", "blob", "text", "uuid", "time", "tuple",
    "decimal",
];

/// A JSON value that is not a valid item, key or request; names the JSON path at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct JsonError {
    /// JSON path, e.g. `$.tags[2]`.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

fn jerr(path: &str, reason: impl Into<String>) -> JsonError {
    JsonError {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Parses an item from a JSON object.
pub fn item_from_json(j: &Json) -> std::result::Result<Item, JsonError> {
    match j {
        Json::Object(o) => map_from_json(o, "$"),
        _ => Err(jerr("$", "an item is a JSON object")),
    }
}

fn map_from_json(o: &Map<String, Json>, path: &str) -> std::result::Result<Item, JsonError> {
    o.iter()
        .map(|(k, v)| Ok((k.clone(), attr_from_json(v, &format!("{path}.{k}"))?)))
        .collect::<std::result::Result<_, _>>()
        .map(Item)
}

/// Parses one attribute value.
pub fn attr_from_json(j: &Json, path: &str) -> std::result::Result<Attr, JsonError> {
    match j {
        Json::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| attr_from_json(x, &format!("{path}[{i}]")))
            .collect::<std::result::Result<_, _>>()
            .map(Attr::List),
        Json::Object(o) => match o.get("t") {
            Some(Json::String(t)) if t == "map" => match o.get("v") {
                Some(Json::Object(m)) if o.len() == 2 => {
                    Ok(Attr::Map(map_from_json(m, &format!("{path}.v"))?))
                }
                _ => Err(jerr(
                    path,
                    "a {\"t\":\"map\"} object needs exactly a \"v\" object beside \"t\"",
                )),
            },
            Some(Json::String(t)) if t == "set" => match o.get("v") {
                Some(Json::Array(vs)) if o.len() == 2 => {
                    let values = vs
                        .iter()
                        .enumerate()
                        .map(|(i, x)| {
                            value_from_json(x)
                                .map_err(|e| jerr(&format!("{path}.v[{i}]"), e.reason))
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()?;
                    crate::item::Set::new(values)
                        .map(Attr::Set)
                        .map_err(|e| jerr(path, e.to_string()))
                }
                _ => Err(jerr(
                    path,
                    "a {\"t\":\"set\"} object needs exactly a \"v\" array beside \"t\"",
                )),
            },
            Some(Json::String(t)) if TYPE_TAGS.contains(&t.as_str()) => {
                value_from_json(j).map(Attr::Value).map_err(|e| {
                    jerr(
                        &format!("{path}{}", e.path.trim_start_matches('$')),
                        e.reason,
                    )
                })
            }
            _ => Ok(Attr::Map(map_from_json(o, path)?)),
        },
        other => value_from_json(other)
            .map(Attr::Value)
            .map_err(|e| jerr(path, e.reason)),
    }
}

/// The JSON form of an attribute value.
pub fn attr_to_json(a: &Attr) -> Json {
    match a {
        Attr::Value(v @ Value::Tuple(_)) => value_to_json(v, true),
        Attr::Value(v) => value_to_json(v, false),
        Attr::List(l) => Json::Array(l.iter().map(attr_to_json).collect()),
        Attr::Set(set) => serde_json::json!({
            "t": "set",
            "v": set.values().iter().map(|v| value_to_json(v, true)).collect::<Vec<_>>()
        }),
        Attr::Map(m) => {
            let inner = item_to_json(m);
            if m.contains_key("t") {
                serde_json::json!({"t": "map", "v": inner})
            } else {
                inner
            }
        }
    }
}

/// The JSON form of an item.
pub fn item_to_json(item: &Item) -> Json {
    Json::Object(
        item.iter()
            .map(|(k, v)| (k.clone(), attr_to_json(v)))
            .collect(),
    )
}

/// The JSON form of a key: an object of the key attributes.
pub fn key_to_json(table: &Table, key: &Key) -> Json {
    item_to_json(&key.to_item(table.schema()))
}

fn coerce(table: &Table, f: &KeyField, a: Attr) -> Result<Attr> {
    let type_err = |found: &str| Error::KeyType {
        table: table.name().to_owned(),
        attr: f.name.clone(),
        expected: f.kind.name().to_owned(),
        found: found.to_owned(),
    };
    Ok(match (f.kind, a) {
        (Kind::Float, Attr::Value(Value::Int(i))) if (i as f64) as i128 == i => {
            Attr::Value(Value::Float(i as f64))
        }
        (Kind::F32, Attr::Value(Value::Int(i))) if (i as f32) as i128 == i => {
            Attr::Value(Value::F32(i as f32))
        }
        (Kind::F32, Attr::Value(Value::Float(x))) if (x as f32) as f64 == x => {
            Attr::Value(Value::F32(x as f32))
        }
        (Kind::Uuid, Attr::Value(Value::Text(s))) => match uuid::Uuid::parse_str(&s) {
            Ok(u) => Attr::Value(Value::Uuid(u)),
            Err(_) => return Err(type_err("text that is not a uuid")),
        },
        (Kind::Tuple, Attr::List(l)) => Attr::Value(Value::Tuple(
            list_to_tuple(l).ok_or_else(|| type_err("list holding a map"))?,
        )),
        (Kind::Decimal, Attr::Value(Value::Int(i))) => match Decimal::try_from(i) {
            Ok(d) => Attr::Value(Value::Decimal(d)),
            Err(e) => return Err(type_err(&format!("int that is not a decimal ({e})"))),
        },
        (Kind::Decimal, Attr::Value(Value::Text(s))) => match s.parse::<Decimal>() {
            Ok(d) => Attr::Value(Value::Decimal(d)),
            Err(e) => return Err(type_err(&format!("text that is not a decimal ({e})"))),
        },
        (_, a) => a,
    })
}

fn list_to_tuple(l: Vec<Attr>) -> Option<Tuple> {
    l.into_iter()
        .map(|a| match a {
            Attr::Value(v) => Some(v),
            Attr::List(l) => list_to_tuple(l).map(Value::Tuple),
            Attr::Map(_) | Attr::Set(_) => None,
        })
        .collect()
}

fn coerce_value(table: &Table, f: &KeyField, v: Attr) -> Result<Value> {
    match coerce(table, f, v)? {
        Attr::Value(v) => Ok(v),
        other => Err(Error::KeyType {
            table: table.name().to_owned(),
            attr: f.name.clone(),
            expected: f.kind.name().to_owned(),
            found: other.type_name().to_owned(),
        }),
    }
}

fn coerce_key_attrs(table: &Table, item: &mut Item) -> Result<()> {
    for f in table.schema().key_fields() {
        if let Some(a) = item.remove(&f.name) {
            item.insert(f.name.clone(), coerce(table, f, a)?);
        }
    }
    Ok(())
}

fn invalid(table: &Table, e: JsonError) -> Error {
    Error::invalid(table.name(), e.to_string())
}

/// A JSON number read as a decimal from its text (exact: serde_json keeps the text).
fn decimal_from_number(table: &Table, f: &KeyField, n: &serde_json::Number) -> Result<Value> {
    n.to_string()
        .parse::<Decimal>()
        .map(Value::Decimal)
        .map_err(|e| Error::KeyType {
            table: table.name().to_owned(),
            attr: f.name.clone(),
            expected: f.kind.name().to_owned(),
            found: format!("number that is not a decimal ({e})"),
        })
}

/// Parses the attributes of a JSON object for `table`: JSON numbers of `decimal` key fields
/// are read from their text, never through an `f64`.
fn table_item_from_json(table: &Table, j: &Json) -> Result<Item> {
    let decimal_numbers: Vec<&KeyField> = table
        .schema()
        .key_fields()
        .filter(|f| f.kind == Kind::Decimal && matches!(j.get(&f.name), Some(Json::Number(_))))
        .collect();
    let Some(o) = j.as_object().filter(|_| !decimal_numbers.is_empty()) else {
        return item_from_json(j).map_err(|e| invalid(table, e));
    };
    let mut rest = o.clone();
    let mut decimals = Vec::with_capacity(decimal_numbers.len());
    for f in decimal_numbers {
        if let Some(Json::Number(n)) = rest.remove(&f.name) {
            decimals.push((f.name.clone(), decimal_from_number(table, f, &n)?));
        }
    }
    let mut item = item_from_json(&Json::Object(rest)).map_err(|e| invalid(table, e))?;
    for (name, d) in decimals {
        item.insert(name, Attr::Value(d));
    }
    Ok(item)
}

/// Parses an item for `table` (key attributes converted to their types, then checked).
pub fn item_for_table(table: &Table, j: &Json) -> Result<Item> {
    let mut item = table_item_from_json(table, j)?;
    coerce_key_attrs(table, &mut item)?;
    table.key_of(&item)?;
    Ok(item)
}

/// Parses a key: an object holding exactly the key attributes.
pub fn key_for_table(table: &Table, j: &Json) -> Result<Key> {
    let mut item = table_item_from_json(table, j)?;
    coerce_key_attrs(table, &mut item)?;
    table.key(&item)
}

fn object<'a>(table: &Table, j: &'a Json, what: &str) -> Result<&'a Map<String, Json>> {
    j.as_object()
        .ok_or_else(|| Error::invalid(table.name(), format!("{what} must be a JSON object")))
}

fn check_fields(table: &Table, o: &Map<String, Json>, allowed: &[&str], what: &str) -> Result<()> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(Error::invalid(
            table.name(),
            format!(
                "{what}: unknown field {k:?} (expected one of {})",
                allowed.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

fn limit_field(table: &Table, o: &Map<String, Json>) -> Result<Option<usize>> {
    match o.get("limit") {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(n)) => match n.to_string().parse::<usize>() {
            Ok(v) if v >= 1 => Ok(Some(v)),
            _ => Err(Error::invalid(
                table.name(),
                format!("limit must be an integer >= 1, got {n}"),
            )),
        },
        Some(other) => Err(Error::invalid(
            table.name(),
            format!("limit must be an integer, got {other}"),
        )),
    }
}

fn after_field(table: &Table, o: &Map<String, Json>) -> Result<Option<Key>> {
    match o.get("after") {
        None | Some(Json::Null) => Ok(None),
        Some(j) => key_for_table(table, j).map(Some).map_err(|e| match e {
            Error::Invalid { table, reason } => Error::Invalid {
                table,
                reason: format!("after: {reason}"),
            },
            e => e,
        }),
    }
}

fn sort_values(table: &Table, j: &Json, path: &str) -> Result<Vec<Value>> {
    let sort = &table.schema().sort;
    let arr: Vec<Json> = match j {
        Json::Array(a) => a.clone(),
        scalar => vec![scalar.clone()],
    };
    if arr.is_empty() || arr.len() > sort.len() {
        return Err(Error::invalid(
            table.name(),
            format!(
                "{path}: expected 1 to {} sort values, got {}",
                sort.len(),
                arr.len()
            ),
        ));
    }
    arr.iter()
        .zip(sort)
        .enumerate()
        .map(|(i, (x, f))| {
            if let (Kind::Decimal, Json::Number(n)) = (f.kind, x) {
                return decimal_from_number(table, f, n);
            }
            let a = attr_from_json(x, &format!("{path}[{i}]")).map_err(|e| invalid(table, e))?;
            coerce_value(table, f, a)
        })
        .collect()
}

/// Parses a query request:
/// `{"partition":{...},"sort":{"op":"between","values":[1,9]},"reverse":false,"limit":10,"after":null}`.
///
/// `values` lists one value per leading sort field (a lone scalar is one value); for
/// `between` it holds two bounds, each a scalar or an array of leading values.
pub fn query_for_table(table: &Table, j: &Json) -> Result<Query> {
    let o = object(table, j, "a query")?;
    check_fields(
        table,
        o,
        &["partition", "sort", "reverse", "limit", "after"],
        "query",
    )?;
    let pj = o
        .get("partition")
        .ok_or_else(|| Error::invalid(table.name(), "query: missing \"partition\""))?;
    let mut pitem = table_item_from_json(table, pj)?;
    coerce_key_attrs(table, &mut pitem)?;
    if let Some(extra) = pitem
        .keys()
        .find(|n| !table.schema().partition.iter().any(|f| &f.name == *n))
    {
        return Err(Error::invalid(
            table.name(),
            format!("query: {extra:?} is not a partition attribute"),
        ));
    }
    let partition = table
        .schema()
        .partition
        .iter()
        .map(|f| match pitem.get(&f.name) {
            Some(Attr::Value(v)) => Ok(v.clone()),
            Some(other) => Err(Error::KeyType {
                table: table.name().to_owned(),
                attr: f.name.clone(),
                expected: f.kind.name().to_owned(),
                found: other.type_name().to_owned(),
            }),
            None => Err(Error::MissingKeyAttribute {
                table: table.name().to_owned(),
                attr: f.name.clone(),
            }),
        })
        .collect::<Result<Vec<_>>>()?;
    let sort = match o.get("sort") {
        None | Some(Json::Null) => None,
        Some(sj) => Some(sort_condition(table, sj)?),
    };
    let reverse = match o.get("reverse") {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(other) => {
            return Err(Error::invalid(
                table.name(),
                format!("reverse must be true or false, got {other}"),
            ))
        }
    };
    Ok(Query {
        partition,
        sort,
        reverse,
        limit: limit_field(table, o)?,
        after: after_field(table, o)?,
    })
}

fn sort_condition(table: &Table, j: &Json) -> Result<SortCondition> {
    let o = object(table, j, "sort")?;
    check_fields(table, o, &["op", "values", "value"], "sort")?;
    let op = match o.get("op") {
        Some(Json::String(s)) => s.as_str(),
        _ => {
            return Err(Error::invalid(
                table.name(),
                "sort: missing \"op\" (eq, lt, le, gt, ge, between, begins_with)",
            ))
        }
    };
    let values = o
        .get("values")
        .or_else(|| o.get("value"))
        .ok_or_else(|| Error::invalid(table.name(), "sort: missing \"values\""))?;
    if op == "between" {
        return match values {
            Json::Array(b) if b.len() == 2 => Ok(SortCondition::Between(
                sort_values(table, &b[0], "sort.values[0]")?,
                sort_values(table, &b[1], "sort.values[1]")?,
            )),
            _ => Err(Error::invalid(
                table.name(),
                "sort: between takes \"values\": [low, high]",
            )),
        };
    }
    let v = sort_values(table, values, "sort.values")?;
    Ok(match op {
        "eq" => SortCondition::Eq(v),
        "lt" => SortCondition::Lt(v),
        "le" => SortCondition::Le(v),
        "gt" => SortCondition::Gt(v),
        "ge" => SortCondition::Ge(v),
        "begins_with" => SortCondition::BeginsWith(v),
        other => {
            return Err(Error::invalid(
                table.name(),
                format!("sort: unknown op {other:?} (eq, lt, le, gt, ge, between, begins_with)"),
            ))
        }
    })
}

/// Parses a scan request: `{"segment":0,"segments":4,"limit":100,"after":null}` (every
/// field optional).
pub fn scan_for_table(table: &Table, j: &Json) -> Result<Scan> {
    let o = object(table, j, "a scan")?;
    check_fields(table, o, &["segment", "segments", "limit", "after"], "scan")?;
    let num = |name: &str, default: u32| -> Result<u32> {
        match o.get(name) {
            None | Some(Json::Null) => Ok(default),
            Some(Json::Number(n)) => n.to_string().parse::<u32>().map_err(|_| {
                Error::invalid(
                    table.name(),
                    format!("{name} must be a non-negative integer, got {n}"),
                )
            }),
            Some(other) => Err(Error::invalid(
                table.name(),
                format!("{name} must be an integer, got {other}"),
            )),
        }
    };
    Ok(Scan {
        segment: num("segment", 0)?,
        segments: num("segments", 1)?,
        limit: limit_field(table, o)?,
        after: after_field(table, o)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_round_trip_through_json() {
        let j: Json = serde_json::from_str(
            r#"{"a":1,"b":[1,"x",{"k":null}],"c":{"t":"bytes","hex":"00ff"},"d":{"t":"map","v":{"t":"not a tag"}},"e":{"t":"tuple","items":[1,2]},"f":1.5}"#,
        )
        .unwrap();
        let item = item_from_json(&j).unwrap();
        assert!(matches!(item.get("d"), Some(Attr::Map(_))));
        assert!(matches!(item.get("e"), Some(Attr::Value(Value::Tuple(_)))));
        assert!(matches!(item.get("b"), Some(Attr::List(_))));
        let back = item_from_json(&item_to_json(&item)).unwrap();
        assert_eq!(back, item);
    }

    #[test]
    fn json_errors_name_the_path() {
        let j: Json = serde_json::from_str(r#"{"a":{"b":[1,{"t":"bytes","hex":"zz"}]}}"#).unwrap();
        let e = item_from_json(&j).unwrap_err();
        assert_eq!(e.path, "$.a.b[1].hex");
    }
}
