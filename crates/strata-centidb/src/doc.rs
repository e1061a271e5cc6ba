//! [`Doc`]: a record value, the Python object model centidb stores (through its encoders).
//!
//! Keys are [`strata_key::Tuple`]s of scalars; record values are richer: nested tuples, lists
//! and dicts, and floats. `Doc` holds what the built-in encoders (key, pickle, json, plain)
//! can carry. Python 2 `str` is [`Doc::Bytes`], `unicode` is [`Doc::Text`].

use std::fmt;

use strata_key::{Time, Tuple, Value};
use uuid::Uuid;

use crate::error::{Error, Result};

/// A record value.
#[derive(Debug, Clone)]
pub enum Doc {
    /// Python `None`.
    None,
    /// Python `bool`.
    Bool(bool),
    /// Python `int` / `long` (the store keeps 128 bits; pickles of larger longs are refused).
    Int(i128),
    /// Python `float`.
    Float(f64),
    /// Python 2 `str` (bytes).
    Bytes(Vec<u8>),
    /// Python `unicode`.
    Text(String),
    /// `uuid.UUID`.
    Uuid(Uuid),
    /// `datetime.datetime` (milliseconds and a UTC offset in keys; microseconds in pickles).
    Time(Time),
    /// Python `tuple`.
    Tuple(Vec<Doc>),
    /// Python `list`.
    List(Vec<Doc>),
    /// Python `dict`, in insertion order (the order its encoding holds). Equality ignores
    /// the order, as Python's does.
    Dict(Vec<(Doc, Doc)>),
}

impl PartialEq for Doc {
    fn eq(&self, other: &Doc) -> bool {
        use Doc::*;
        match (self, other) {
            (None, None) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a.to_bits() == b.to_bits(),
            (Bytes(a), Bytes(b)) => a == b,
            (Text(a), Text(b)) => a == b,
            (Uuid(a), Uuid(b)) => a == b,
            (Time(a), Time(b)) => a == b,
            (Tuple(a), Tuple(b)) | (List(a), List(b)) => a == b,
            (Dict(a), Dict(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.iter().any(|(k2, v2)| k == k2 && v == v2))
            }
            _ => false,
        }
    }
}

impl Doc {
    /// Python's `==` where it differs from structural equality: `1 == 1.0 == True`, and a
    /// `str` equals the `unicode` with the same UTF-8 bytes (Python 2 compares ASCII that
    /// way). Used for dict keys and batch groupers.
    pub fn py_eq(&self, other: &Doc) -> bool {
        use Doc::*;
        let num = |d: &Doc| -> Option<f64> {
            match d {
                Bool(b) => Some(f64::from(u8::from(*b))),
                Int(i) => Some(*i as f64),
                Float(f) => Some(*f),
                _ => Option::None,
            }
        };
        match (self, other) {
            (Bool(_) | Int(_), Bool(_) | Int(_)) => self.as_int() == other.as_int(),
            (Float(_), _) | (_, Float(_)) => match (num(self), num(other)) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
            (Bytes(a), Text(b)) | (Text(b), Bytes(a)) => a == b.as_bytes(),
            (Tuple(a), Tuple(b)) | (List(a), List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.py_eq(y))
            }
            (Dict(a), Dict(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.iter().any(|(k2, v2)| k.py_eq(k2) && v.py_eq(v2)))
            }
            _ => self == other,
        }
    }

    fn as_int(&self) -> Option<i128> {
        match self {
            Doc::Bool(b) => Some(i128::from(*b)),
            Doc::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// A short name of the kind, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Doc::None => "None",
            Doc::Bool(_) => "bool",
            Doc::Int(_) => "int",
            Doc::Float(_) => "float",
            Doc::Bytes(_) => "str",
            Doc::Text(_) => "unicode",
            Doc::Uuid(_) => "UUID",
            Doc::Time(_) => "datetime",
            Doc::Tuple(_) => "tuple",
            Doc::List(_) => "list",
            Doc::Dict(_) => "dict",
        }
    }

    /// The value of a dict entry whose key equals `name` (as `str` or `unicode`).
    pub fn field(&self, name: &str) -> Option<&Doc> {
        match self {
            Doc::Dict(items) => items.iter().find_map(|(k, v)| match k {
                Doc::Bytes(b) if b == name.as_bytes() => Some(v),
                Doc::Text(t) if t == name => Some(v),
                _ => None,
            }),
            _ => None,
        }
    }

    /// `v[i]` of a tuple or list (negative `i` counts from the end, as in Python), or the
    /// entry of a dict whose key is the integer `i`.
    pub fn item(&self, i: i64) -> Option<&Doc> {
        match self {
            Doc::Tuple(v) | Doc::List(v) => {
                let n = v.len() as i64;
                let j = if i < 0 { n + i } else { i };
                if (0..n).contains(&j) {
                    v.get(j as usize)
                } else {
                    None
                }
            }
            Doc::Dict(items) => items
                .iter()
                .find_map(|(k, v)| (k.as_int() == Some(i128::from(i))).then_some(v)),
            _ => None,
        }
    }

    /// A key tuple from this value, as centidb's `Key(x)` makes it: a tuple gives its
    /// elements, any other scalar a 1-tuple. Lists, dicts and floats are not keys.
    pub fn to_key(&self) -> Result<Tuple> {
        match self {
            Doc::Tuple(items) => items
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    d.to_key_value()
                        .map_err(|r| Error::Invalid(format!("key element {i}: {r}")))
                })
                .collect(),
            other => other
                .to_key_value()
                .map(|v| Tuple(vec![v]))
                .map_err(|r| Error::Invalid(format!("key: {r}"))),
        }
    }

    /// One key element from a scalar.
    pub fn to_key_value(&self) -> std::result::Result<Value, String> {
        Ok(match self {
            Doc::None => Value::Null,
            Doc::Bool(b) => Value::Bool(*b),
            Doc::Int(i) => Value::Int(*i),
            Doc::Bytes(b) => Value::Bytes(b.clone()),
            Doc::Text(t) => Value::Text(t.clone()),
            Doc::Uuid(u) => Value::Uuid(*u),
            Doc::Time(t) => Value::Time(*t),
            other => {
                return Err(format!(
                    "a {} cannot be part of a centidb key (None, int, bool, str, unicode, \
                     UUID and datetime can)",
                    other.kind_name()
                ))
            }
        })
    }

    /// A key element as a value.
    pub fn from_key_value(v: &Value) -> Doc {
        match v {
            Value::Null => Doc::None,
            Value::Bool(b) => Doc::Bool(*b),
            Value::Int(i) => Doc::Int(*i),
            Value::Float(f) => Doc::Float(*f),
            Value::F32(f) => Doc::Float(f64::from(*f)),
            Value::Bytes(b) => Doc::Bytes(b.clone()),
            Value::Text(t) => Doc::Text(t.clone()),
            Value::Uuid(u) => Doc::Uuid(*u),
            Value::Time(t) => Doc::Time(*t),
            Value::Tuple(t) => Doc::from_tuple(t),
            #[allow(unreachable_patterns)]
            other => Doc::Text(format!("{other:?}")),
        }
    }

    /// A key tuple as a `Doc::Tuple`.
    pub fn from_tuple(t: &Tuple) -> Doc {
        Doc::Tuple(t.iter().map(Doc::from_key_value).collect())
    }
}

impl From<&str> for Doc {
    fn from(s: &str) -> Doc {
        Doc::Text(s.to_owned())
    }
}

impl From<String> for Doc {
    fn from(s: String) -> Doc {
        Doc::Text(s)
    }
}

impl From<i64> for Doc {
    fn from(i: i64) -> Doc {
        Doc::Int(i128::from(i))
    }
}

impl From<bool> for Doc {
    fn from(b: bool) -> Doc {
        Doc::Bool(b)
    }
}

impl From<f64> for Doc {
    fn from(f: f64) -> Doc {
        Doc::Float(f)
    }
}

impl From<Vec<u8>> for Doc {
    fn from(b: Vec<u8>) -> Doc {
        Doc::Bytes(b)
    }
}

impl fmt::Display for Doc {
    /// A Python-like `repr`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn seq(f: &mut fmt::Formatter<'_>, open: &str, v: &[Doc], close: &str) -> fmt::Result {
            f.write_str(open)?;
            for (i, d) in v.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{d}")?;
            }
            if open == "(" && v.len() == 1 {
                f.write_str(",")?;
            }
            f.write_str(close)
        }
        match self {
            Doc::None => f.write_str("None"),
            Doc::Bool(true) => f.write_str("True"),
            Doc::Bool(false) => f.write_str("False"),
            Doc::Int(i) => write!(f, "{i}"),
            Doc::Float(x) => f.write_str(&crate::py27::float_repr(*x)),
            Doc::Bytes(b) => write!(f, "'{}'", b.escape_ascii()),
            Doc::Text(t) => write!(f, "u{t:?}"),
            Doc::Uuid(u) => write!(f, "UUID('{u}')"),
            Doc::Time(t) => write!(f, "datetime({t})"),
            Doc::Tuple(v) => seq(f, "(", v, ")"),
            Doc::List(v) => seq(f, "[", v, "]"),
            Doc::Dict(items) => {
                f.write_str("{")?;
                for (i, (k, v)) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}
