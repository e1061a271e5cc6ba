//! Between DynamoDB's [`AttributeValue`]s and Strata's items ([`Attr`]), with DynamoDB's
//! checks (numbers, empty and duplicate sets, nesting depth), and DynamoDB's item sizes.
//!
//! | DynamoDB | Strata |
//! |---|---|
//! | `S` | `Value::Text` |
//! | `N` | `Value::Decimal` |
//! | `B` | `Value::Bytes` |
//! | `BOOL` | `Value::Bool` |
//! | `NULL` | `Value::Null` |
//! | `L` | `Attr::List` |
//! | `M` | `Attr::Map` |
//! | `SS` / `NS` / `BS` | `Attr::Set` of text / decimal / bytes values |
//!
//! Items of tables written through other Strata APIs may hold other kinds: integers and
//! floats read as `N`, UUIDs and times as `S` (their text), tuples as `L`.

use strata::{Attr, Item, Set};
use strata_key::Value;

use crate::error::ApiError;
use crate::number;
use crate::types::{AttributeMap, AttributeValue};

/// Longest attribute name, in bytes.
pub const MAX_ATTR_NAME: usize = 65535;

/// Checks an attribute name's length (1 to 65,535 bytes).
pub fn check_attr_name(name: &str) -> Result<(), ApiError> {
    if name.len() > MAX_ATTR_NAME {
        return Err(invalid(format!(
            "Attribute name is too long: {} bytes, the limit is {MAX_ATTR_NAME}",
            name.len()
        )));
    }
    Ok(())
}

/// Deepest nesting of an item: the item itself is level 1, each map or list one more.
pub const MAX_DEPTH: usize = 32;

/// DynamoDB's type of an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// String.
    S,
    /// Number.
    N,
    /// Binary.
    B,
    /// Boolean.
    Bool,
    /// Null.
    Null,
    /// String set.
    Ss,
    /// Number set.
    Ns,
    /// Binary set.
    Bs,
    /// List.
    L,
    /// Map.
    M,
}

impl DType {
    /// The descriptor (`S`, `N`, …, `BOOL`, `NULL`).
    pub fn name(self) -> &'static str {
        match self {
            DType::S => "S",
            DType::N => "N",
            DType::B => "B",
            DType::Bool => "BOOL",
            DType::Null => "NULL",
            DType::Ss => "SS",
            DType::Ns => "NS",
            DType::Bs => "BS",
            DType::L => "L",
            DType::M => "M",
        }
    }

    /// Parses a descriptor (case-sensitive).
    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "S" => DType::S,
            "N" => DType::N,
            "B" => DType::B,
            "BOOL" => DType::Bool,
            "NULL" => DType::Null,
            "SS" => DType::Ss,
            "NS" => DType::Ns,
            "BS" => DType::Bs,
            "L" => DType::L,
            "M" => DType::M,
            _ => return None,
        })
    }

    /// True for the three set types.
    pub fn is_set(self) -> bool {
        matches!(self, DType::Ss | DType::Ns | DType::Bs)
    }
}

fn value_dtype(v: &Value) -> DType {
    match v {
        Value::Text(_) | Value::Uuid(_) | Value::Time(_) => DType::S,
        Value::Decimal(_) | Value::Int(_) | Value::Float(_) | Value::F32(_) => DType::N,
        Value::Bytes(_) => DType::B,
        Value::Bool(_) => DType::Bool,
        Value::Null => DType::Null,
        Value::Tuple(_) => DType::L,
    }
}

/// DynamoDB's type of a Strata attribute.
pub fn dtype(a: &Attr) -> DType {
    match a {
        Attr::Value(v) => value_dtype(v),
        Attr::List(_) => DType::L,
        Attr::Map(_) => DType::M,
        Attr::Set(s) => match value_dtype(&s.values()[0]) {
            DType::N => DType::Ns,
            DType::B => DType::Bs,
            _ => DType::Ss,
        },
    }
}

fn invalid(msg: impl std::fmt::Display) -> ApiError {
    ApiError::validation(format!("One or more parameter values were invalid: {msg}"))
}

fn too_deep() -> ApiError {
    ApiError::validation(format!(
        "Nesting Levels have exceeded supported limits: an item cannot be nested more than \
         {MAX_DEPTH} levels deep"
    ))
}

fn set_of(values: Vec<Value>, what: &str, shown: impl Fn() -> String) -> Result<Attr, ApiError> {
    if values.is_empty() {
        return Err(invalid(format!("An {what} set  may not be empty")));
    }
    Set::from_unique(values)
        .map(Attr::Set)
        .map_err(|_| invalid(format!("Input collection {} contains duplicates.", shown())))
}

/// Converts one value; `depth` is the level of the value's container (1 for an item's
/// attributes).
pub fn to_attr(av: AttributeValue, depth: usize) -> Result<Attr, ApiError> {
    Ok(match av {
        AttributeValue::S(s) => Attr::Value(Value::Text(s)),
        AttributeValue::N(n) => Attr::Value(Value::Decimal(number::parse(&n)?)),
        AttributeValue::B(b) => Attr::Value(Value::Bytes(b)),
        AttributeValue::Bool(b) => Attr::Value(Value::Bool(b)),
        AttributeValue::Null(true) => Attr::Value(Value::Null),
        AttributeValue::Null(false) => {
            return Err(invalid(
                "Null attribute value types must have the value of true",
            ))
        }
        AttributeValue::Ss(v) => {
            let shown = || format!("{v:?}");
            let values = v.iter().cloned().map(Value::Text).collect();
            set_of(values, "string", shown)?
        }
        AttributeValue::Ns(v) => {
            let values = v
                .iter()
                .map(|n| number::parse(n).map(Value::Decimal))
                .collect::<Result<Vec<_>, _>>()?;
            set_of(values, "number", || format!("{v:?}"))?
        }
        AttributeValue::Bs(v) => {
            let shown = || format!("{} binary values", v.len());
            let values = v.iter().cloned().map(Value::Bytes).collect();
            set_of(values, "binary", shown)?
        }
        AttributeValue::L(l) => {
            if depth >= MAX_DEPTH {
                return Err(too_deep());
            }
            Attr::List(
                l.into_iter()
                    .map(|x| to_attr(x, depth + 1))
                    .collect::<Result<_, _>>()?,
            )
        }
        AttributeValue::M(m) => {
            if depth >= MAX_DEPTH {
                return Err(too_deep());
            }
            Attr::Map(to_map(m, depth + 1)?)
        }
    })
}

fn to_map(m: AttributeMap, depth: usize) -> Result<Item, ApiError> {
    m.into_iter()
        .map(|(k, v)| {
            check_attr_name(&k)?;
            Ok((k, to_attr(v, depth)?))
        })
        .collect::<Result<std::collections::BTreeMap<_, _>, ApiError>>()
        .map(Item)
}

/// Converts an item (or key).
pub fn to_item(m: AttributeMap) -> Result<Item, ApiError> {
    to_map(m, 1)
}

fn value_to_av(v: Value) -> AttributeValue {
    match v {
        Value::Text(s) => AttributeValue::S(s),
        Value::Decimal(d) => AttributeValue::N(number::format(&d)),
        Value::Int(i) => AttributeValue::N(i.to_string()),
        Value::Float(f) if f.is_finite() => AttributeValue::N(f.to_string()),
        Value::F32(f) if f.is_finite() => AttributeValue::N(f.to_string()),
        Value::Float(f) => AttributeValue::S(f.to_string()),
        Value::F32(f) => AttributeValue::S(f.to_string()),
        Value::Bytes(b) => AttributeValue::B(b),
        Value::Bool(b) => AttributeValue::Bool(b),
        Value::Null => AttributeValue::Null(true),
        Value::Uuid(u) => AttributeValue::S(u.to_string()),
        Value::Time(t) => AttributeValue::S(t.to_string()),
        Value::Tuple(t) => AttributeValue::L(t.0.into_iter().map(value_to_av).collect()),
    }
}

/// Converts a Strata attribute to DynamoDB's form.
pub fn from_attr(a: Attr) -> AttributeValue {
    match a {
        Attr::Value(v) => value_to_av(v),
        Attr::List(l) => AttributeValue::L(l.into_iter().map(from_attr).collect()),
        Attr::Map(m) => AttributeValue::M(from_item(m)),
        Attr::Set(s) => {
            let d = dtype(&Attr::Set(s.clone()));
            let vals = s.into_values().into_iter().map(value_to_av);
            match d {
                DType::Ns => AttributeValue::Ns(
                    vals.filter_map(|v| match v {
                        AttributeValue::N(n) => Some(n),
                        _ => None,
                    })
                    .collect(),
                ),
                DType::Bs => AttributeValue::Bs(
                    vals.filter_map(|v| match v {
                        AttributeValue::B(b) => Some(b),
                        _ => None,
                    })
                    .collect(),
                ),
                _ => AttributeValue::Ss(
                    vals.map(|v| match v {
                        AttributeValue::S(s) => s,
                        other => format!("{other:?}"),
                    })
                    .collect(),
                ),
            }
        }
    }
}

/// Converts a Strata item to DynamoDB's form.
pub fn from_item(item: Item) -> AttributeMap {
    item.0.into_iter().map(|(k, v)| (k, from_attr(v))).collect()
}

fn value_size(v: &Value) -> usize {
    match v {
        Value::Text(s) => s.len(),
        Value::Bytes(b) => b.len(),
        Value::Decimal(d) => number::size(d),
        Value::Bool(_) | Value::Null => 1,
        Value::Int(_) | Value::Float(_) | Value::F32(_) => 21,
        Value::Uuid(_) => 36,
        Value::Time(_) => 35,
        Value::Tuple(t) => 3 + t.iter().map(|x| value_size(x) + 1).sum::<usize>(),
    }
}

/// DynamoDB's size of an attribute value in bytes.
pub fn attr_size(a: &Attr) -> usize {
    match a {
        Attr::Value(v) => value_size(v),
        Attr::List(l) => 3 + l.iter().map(|x| attr_size(x) + 1).sum::<usize>(),
        Attr::Map(m) => {
            3 + m
                .iter()
                .map(|(k, v)| k.len() + attr_size(v) + 1)
                .sum::<usize>()
        }
        Attr::Set(s) => s.values().iter().map(value_size).sum(),
    }
}

/// DynamoDB's size of an item in bytes: names plus values.
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + attr_size(v)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn av(j: &str) -> AttributeValue {
        serde_json::from_str(j).unwrap()
    }

    #[test]
    fn round_trip_and_types() {
        for j in [
            r#"{"S":"x"}"#,
            r#"{"N":"12.345"}"#,
            r#"{"B":"AAE="}"#,
            r#"{"BOOL":true}"#,
            r#"{"NULL":true}"#,
            r#"{"SS":["a","b"]}"#,
            r#"{"NS":["1","3.14"]}"#,
            r#"{"BS":["AA==","AQ=="]}"#,
            r#"{"L":[{"S":"x"},{"N":"1"}]}"#,
            r#"{"M":{"k":{"L":[]}}}"#,
        ] {
            let a = to_attr(av(j), 1).unwrap();
            let back = from_attr(a.clone());
            assert_eq!(to_attr(back.clone(), 1).unwrap(), a, "{j}");
            assert_eq!(dtype(&a).name(), back.type_name());
        }
        // Numbers are canonical: "1.50" comes back as "1.5".
        assert_eq!(
            from_attr(to_attr(av(r#"{"N":"1.50"}"#), 1).unwrap()),
            AttributeValue::N("1.5".into())
        );
    }

    #[test]
    fn checks() {
        let err = |j: &str| to_attr(av(j), 1).unwrap_err().message;
        assert!(err(r#"{"SS":[]}"#).contains("empty"));
        assert!(err(r#"{"NS":[]}"#).contains("empty"));
        assert!(err(r#"{"SS":["a","a"]}"#).contains("duplicates"));
        assert!(err(r#"{"NS":["1","1.0"]}"#).contains("duplicates"));
        assert!(err(r#"{"N":"dog"}"#).contains("numeric"));
        assert!(err(r#"{"NULL":false}"#).contains("true"));
        // 31 maps below an item attribute: 32 levels with the item; 32 maps is one too many.
        let nest = |n: usize| {
            format!(
                "{}{{\"M\":{{}}}}{}",
                "{\"M\":{\"a\":".repeat(n),
                "}}".repeat(n)
            )
        };
        assert!(to_attr(av(&nest(30)), 1).is_ok());
        assert!(err(&nest(31)).contains("nested"));
    }

    #[test]
    fn sizes() {
        let item = to_item(
            serde_json::from_str(r#"{"ab":{"S":"xyz"},"n":{"N":"123"},"l":{"L":[{"BOOL":true}]}}"#)
                .unwrap(),
        )
        .unwrap();
        // "ab"+"xyz" = 5, "n"+(2+1) = 4, "l"+3+(1+1) = 6
        assert_eq!(item_size(&item), 15);
    }
}
