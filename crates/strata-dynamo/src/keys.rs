//! A table's DynamoDB key schema (read from its Strata key schema) and key checks with
//! DynamoDB's rules and messages.

use strata::{Attr, Item, Key, Table};
use strata_key::{Kind, Value};

use crate::convert::{dtype, DType};
use crate::error::ApiError;
use crate::types::AttributeMap;

/// Longest partition key value, in bytes.
pub const MAX_PARTITION_KEY: usize = 2048;
/// Longest sort key value, in bytes.
pub const MAX_SORT_KEY: usize = 1024;

/// One key attribute: its name, DynamoDB type and Strata kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAttr {
    /// Attribute name.
    pub name: String,
    /// `S`, `N` or `B`.
    pub dtype: DType,
    /// The Strata kind the values are stored as.
    pub kind: Kind,
}

/// The DynamoDB view of a table's key: a partition (HASH) attribute and maybe a sort (RANGE)
/// attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySchema {
    /// The partition key.
    pub hash: KeyAttr,
    /// The sort key.
    pub range: Option<KeyAttr>,
}

fn dtype_of_kind(k: Kind) -> Option<DType> {
    match k {
        Kind::Text => Some(DType::S),
        Kind::Bytes => Some(DType::B),
        Kind::Decimal | Kind::Int => Some(DType::N),
        _ => None,
    }
}

/// The Strata kind storing key values of a DynamoDB type.
pub fn kind_of_dtype(t: DType) -> Option<Kind> {
    match t {
        DType::S => Some(Kind::Text),
        DType::B => Some(Kind::Bytes),
        DType::N => Some(Kind::Decimal),
        _ => None,
    }
}

impl KeySchema {
    /// The key schema of `table`, when DynamoDB can express it (one partition attribute and at
    /// most one sort attribute, of string, number or binary kinds).
    pub fn of(table: &Table) -> Result<KeySchema, ApiError> {
        let s = table.schema();
        let attr = |f: &strata::KeyField| {
            dtype_of_kind(f.kind).map(|dtype| KeyAttr {
                name: f.name.clone(),
                dtype,
                kind: f.kind,
            })
        };
        let unusable = || {
            ApiError::validation(format!(
                "Table {} has a key schema that the DynamoDB API cannot express (one partition \
                 and at most one sort attribute of types S, N or B)",
                s.name
            ))
        };
        if s.partition.len() != 1 || s.sort.len() > 1 {
            return Err(unusable());
        }
        let hash = attr(&s.partition[0]).ok_or_else(unusable)?;
        let range = match s.sort.first() {
            Some(f) => Some(attr(f).ok_or_else(unusable)?),
            None => None,
        };
        Ok(KeySchema { hash, range })
    }

    /// The key attributes, partition first.
    pub fn attrs(&self) -> impl Iterator<Item = &KeyAttr> {
        std::iter::once(&self.hash).chain(self.range.as_ref())
    }

    /// Whether `name` is a key attribute.
    pub fn is_key(&self, name: &str) -> bool {
        self.attrs().any(|a| a.name == name)
    }

    /// The names of the key attributes.
    pub fn names(&self) -> Vec<&str> {
        self.attrs().map(|a| a.name.as_str()).collect()
    }

    /// Checks one key value (type, emptiness, size) and returns it as stored.
    pub(crate) fn check_value(
        &self,
        a: &KeyAttr,
        v: &Attr,
        is_hash: bool,
    ) -> Result<Value, ApiError> {
        let actual = dtype(v);
        if actual != a.dtype {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Type mismatch for key {} expected: \
                 {} actual: {}",
                a.name,
                a.dtype.name(),
                actual.name()
            )));
        }
        let Attr::Value(v) = v else {
            return Err(ApiError::validation("Invalid key value"));
        };
        let len = match v {
            Value::Text(s) => Some(s.len()),
            Value::Bytes(b) => Some(b.len()),
            _ => None,
        };
        if len == Some(0) {
            return Err(ApiError::validation(format!(
                "One or more parameter values are not valid. The AttributeValue for a key \
                 attribute cannot contain an empty {} value. Key: {}",
                if a.dtype == DType::S {
                    "string"
                } else {
                    "binary"
                },
                a.name
            )));
        }
        if is_hash && len.unwrap_or(0) > MAX_PARTITION_KEY {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Size of hashkey has exceeded the \
                 maximum size limit of {MAX_PARTITION_KEY} bytes"
            )));
        }
        if !is_hash && len.unwrap_or(0) > MAX_SORT_KEY {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Aggregated size of all range keys \
                 has exceeded the size limit of {MAX_SORT_KEY} bytes"
            )));
        }
        Ok(match (a.kind, v) {
            // Tables with integer keys (made by other Strata APIs) take integral numbers.
            (Kind::Int, Value::Decimal(d)) => {
                Value::Int(d.to_i128().filter(|_| d.is_integer()).ok_or_else(|| {
                    ApiError::validation(format!(
                        "One or more parameter values were invalid: key {} holds integers",
                        a.name
                    ))
                })?)
            }
            _ => v.clone(),
        })
    }

    /// The key of a whole item (PutItem), checking the key attributes.
    pub fn key_of_item(&self, item: &Item) -> Result<Key, ApiError> {
        let get = |a: &KeyAttr, is_hash: bool| -> Result<Value, ApiError> {
            let v = item.get(&a.name).ok_or_else(|| {
                ApiError::validation(format!(
                    "One or more parameter values were invalid: Missing the key {} in the item",
                    a.name
                ))
            })?;
            self.check_value(a, v, is_hash)
        };
        let partition = vec![get(&self.hash, true)?];
        let sort = match &self.range {
            Some(r) => vec![get(r, false)?],
            None => vec![],
        };
        Ok(Key::new(partition, sort))
    }

    /// The key given as a `Key` parameter: exactly the key attributes.
    pub fn key_of_map(&self, key: &Item) -> Result<Key, ApiError> {
        let n = 1 + usize::from(self.range.is_some());
        if key.len() != n || !key.keys().all(|k| self.is_key(k)) {
            return Err(ApiError::validation(
                "The provided key element does not match the schema",
            ));
        }
        self.key_of_item(key)
    }

    /// The key attributes of a stored item, in DynamoDB's form (a `LastEvaluatedKey`).
    pub fn key_map(&self, item: &Item) -> AttributeMap {
        self.attrs()
            .filter_map(|a| {
                item.get(&a.name)
                    .map(|v| (a.name.clone(), crate::convert::from_attr(v.clone())))
            })
            .collect()
    }

    /// The key attributes as an item, as stored (the start of an item that UpdateItem
    /// creates).
    pub fn key_item(&self, key: &Key) -> Item {
        self.attrs()
            .zip(key.partition.iter().chain(key.sort.iter()))
            .map(|(a, v)| (a.name.clone(), Attr::Value(v.clone())))
            .collect()
    }

    /// Puts the key values, as stored, into an item (they differ from the request's only for
    /// integer-keyed tables).
    pub fn store_key(&self, item: &mut Item, key: &Key) {
        for (a, v) in self
            .attrs()
            .zip(key.partition.iter().chain(key.sort.iter()))
        {
            if a.kind == Kind::Int {
                item.insert(a.name.clone(), Attr::Value(v.clone()));
            }
        }
    }
}
