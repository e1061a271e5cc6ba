//! Table key schemas: partition fields and sort fields, each typed, ascending or descending,
//! NULL first or last.
//!
//! The JSON form (used by the catalog and the command line) is
//! `{"name":"posts","partition":[{"name":"user","type":"text"}],"sort":[{"name":"ts","type":"int","order":"desc","nulls":"last"}]}`;
//! `order` defaults to `"asc"` and `nulls` to `"first"`.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use strata_key::codec::native::Order;
use strata_key::{Kind, Value};

use crate::error::{Error, Result};

/// Most partition fields plus sort fields a table may declare.
pub const MAX_KEY_FIELDS: usize = 32;
/// Longest table or attribute name, in bytes.
pub const MAX_NAME_LEN: usize = 255;

/// Direction of one key field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Ascending (the default).
    #[default]
    Asc,
    /// Descending.
    Desc,
}

/// Where NULL sorts in one key field, whatever the direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Nulls {
    /// Before every value (the default).
    #[default]
    First,
    /// After every value.
    Last,
}

/// One key attribute of a table.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct KeyField {
    /// Attribute name.
    pub name: String,
    /// Value type: one of the key kinds of `strata-key` except `null`.
    #[serde(rename = "type", with = "kind_serde")]
    pub kind: Kind,
    /// Ascending or descending.
    #[serde(default)]
    pub order: Direction,
    /// NULL first or last.
    #[serde(default)]
    pub nulls: Nulls,
}

impl KeyField {
    /// An ascending, NULL-first field.
    pub fn new(name: impl Into<String>, kind: Kind) -> KeyField {
        KeyField {
            name: name.into(),
            kind,
            order: Direction::Asc,
            nulls: Nulls::First,
        }
    }

    /// Makes the field descending.
    pub fn desc(mut self) -> KeyField {
        self.order = Direction::Desc;
        self
    }

    /// Puts NULL after every value.
    pub fn nulls_last(mut self) -> KeyField {
        self.nulls = Nulls::Last;
        self
    }

    /// The codec order of this field.
    pub fn codec_order(&self) -> Order {
        Order {
            descending: self.order == Direction::Desc,
            nulls_last: self.nulls == Nulls::Last,
        }
    }

    /// Checks that `v` may be stored in this field (its kind, or NULL).
    pub fn accepts(&self, v: &Value) -> bool {
        v.is_null() || v.kind() == self.kind
    }

    /// Compares two values of this field in the table's order: NULL where the schema puts it,
    /// other values by [`Value`]'s order, reversed for a descending field.
    pub fn cmp(&self, a: &Value, b: &Value) -> Ordering {
        match (a.is_null(), b.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => match self.nulls {
                Nulls::First => Ordering::Less,
                Nulls::Last => Ordering::Greater,
            },
            (false, true) => match self.nulls {
                Nulls::First => Ordering::Greater,
                Nulls::Last => Ordering::Less,
            },
            (false, false) => match self.order {
                Direction::Asc => a.cmp(b),
                Direction::Desc => b.cmp(a),
            },
        }
    }
}

mod kind_serde {
    use serde::{Deserialize, Deserializer, Serializer};
    use strata_key::Kind;

    pub fn serialize<S: Serializer>(k: &Kind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(k.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_kind(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown key type {s:?} (expected bool, int, f32, f64, bytes, text, uuid, time, tuple or decimal)"
            ))
        })
    }
}

/// Parses a key type name (`int`, `f64` or `float`, `bytes` or `blob`, ...). `null` is not a
/// key type.
pub fn parse_kind(s: &str) -> Option<Kind> {
    Some(match s {
        "bool" => Kind::Bool,
        "int" => Kind::Int,
        "f32" => Kind::F32,
        "f64" | "float" => Kind::Float,
        "bytes" | "blob" => Kind::Bytes,
        "text" | "string" => Kind::Text,
        "uuid" => Kind::Uuid,
        "time" => Kind::Time,
        "tuple" => Kind::Tuple,
        "decimal" => Kind::Decimal,
        _ => return None,
    })
}

/// A table's name and key schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSchema {
    /// Table name.
    pub name: String,
    /// Partition fields (at least one): a Query reads exactly one partition.
    pub partition: Vec<KeyField>,
    /// Sort fields (zero or more): the order of items inside a partition.
    #[serde(default)]
    pub sort: Vec<KeyField>,
}

impl TableSchema {
    /// A schema with the given partition fields and no sort field.
    pub fn new(name: impl Into<String>, partition: Vec<KeyField>) -> TableSchema {
        TableSchema {
            name: name.into(),
            partition,
            sort: Vec::new(),
        }
    }

    /// Sets the sort fields.
    pub fn with_sort(mut self, sort: Vec<KeyField>) -> TableSchema {
        self.sort = sort;
        self
    }

    /// Parses the JSON form (see the module docs).
    pub fn from_json(text: &str) -> Result<TableSchema> {
        let s: TableSchema = serde_json::from_str(text).map_err(|e| Error::InvalidSchema {
            table: String::new(),
            reason: e.to_string(),
        })?;
        s.validate()?;
        Ok(s)
    }

    /// The canonical JSON form, every default written out.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Every key field: partition fields, then sort fields.
    pub fn key_fields(&self) -> impl Iterator<Item = &KeyField> {
        self.partition.iter().chain(self.sort.iter())
    }

    /// True when `name` is a key attribute.
    pub fn is_key_attribute(&self, name: &str) -> bool {
        self.key_fields().any(|f| f.name == name)
    }

    /// Checks names, counts and types.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Error::InvalidSchema {
            table: self.name.clone(),
            reason,
        };
        check_name(&self.name).map_err(|r| bad(format!("table name: {r}")))?;
        if self.partition.is_empty() {
            return Err(bad("at least one partition field is required".into()));
        }
        if self.partition.len() + self.sort.len() > MAX_KEY_FIELDS {
            return Err(bad(format!("more than {MAX_KEY_FIELDS} key fields")));
        }
        let mut seen = BTreeSet::new();
        for f in self.key_fields() {
            check_name(&f.name).map_err(|r| bad(format!("field name {:?}: {r}", f.name)))?;
            if !seen.insert(f.name.as_str()) {
                return Err(bad(format!("field {:?} is declared twice", f.name)));
            }
            if f.kind == Kind::Null {
                return Err(bad(format!("field {:?}: null is not a key type", f.name)));
            }
        }
        Ok(())
    }
}

fn check_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("longer than {MAX_NAME_LEN} bytes"));
    }
    if name.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_defaults_and_canonical_form() {
        let s = TableSchema::from_json(
            r#"{"name":"posts","partition":[{"name":"user","type":"text"}],"sort":[{"name":"ts","type":"int","order":"desc","nulls":"last"}]}"#,
        )
        .unwrap();
        assert_eq!(s.partition[0].order, Direction::Asc);
        assert_eq!(s.partition[0].nulls, Nulls::First);
        assert_eq!(
            s.sort[0].codec_order(),
            Order {
                descending: true,
                nulls_last: true
            }
        );
        assert_eq!(
            s.to_json(),
            r#"{"name":"posts","partition":[{"name":"user","type":"text","order":"asc","nulls":"first"}],"sort":[{"name":"ts","type":"int","order":"desc","nulls":"last"}]}"#
        );
        assert_eq!(TableSchema::from_json(&s.to_json()).unwrap(), s);
    }

    #[test]
    fn invalid_schemas_say_why() {
        for (text, needle) in [
            (r#"{"name":"t","partition":[]}"#, "at least one partition"),
            (
                r#"{"name":"","partition":[{"name":"a","type":"int"}]}"#,
                "table name",
            ),
            (
                r#"{"name":"t","partition":[{"name":"a","type":"int"}],"sort":[{"name":"a","type":"int"}]}"#,
                "twice",
            ),
            (
                r#"{"name":"t","partition":[{"name":"a","type":"integer"}]}"#,
                "unknown key type",
            ),
            (
                r#"{"name":"t","partition":[{"name":"a","type":"int","order":"up"}]}"#,
                "unknown variant",
            ),
            (
                r#"{"name":"t","partition":[{"name":"a","type":"int"}],"extra":1}"#,
                "unknown field",
            ),
        ] {
            let e = TableSchema::from_json(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn field_order() {
        let f = KeyField::new("x", Kind::Int).desc().nulls_last();
        let mut v = vec![Value::Int(1), Value::Null, Value::Int(3), Value::Int(2)];
        v.sort_by(|a, b| f.cmp(a, b));
        assert_eq!(
            v,
            vec![Value::Int(3), Value::Int(2), Value::Int(1), Value::Null]
        );
    }
}
