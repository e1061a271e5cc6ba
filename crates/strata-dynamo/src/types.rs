//! [`AttributeValue`]: DynamoDB's attribute value as the AWS SDKs and the JSON protocol see it
//! (`{"S": "x"}`, `{"N": "12.5"}`, `{"B": "<base64>"}`, `{"SS": [...]}`, `{"M": {...}}`, ...).

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An item or key in DynamoDB's representation: attribute name → value.
pub type AttributeMap = BTreeMap<String, AttributeValue>;

/// One DynamoDB attribute value, shaped like the AWS SDKs' `AttributeValue`.
///
/// Numbers travel as strings (`N("12.5")`): they are parsed and checked (38 significant
/// digits, magnitude 1e-130 to 1e126) when a request is executed.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// `S`: a string.
    S(String),
    /// `N`: a number, as its decimal string.
    N(String),
    /// `B`: binary (base64 in JSON).
    B(Vec<u8>),
    /// `SS`: a string set.
    Ss(Vec<String>),
    /// `NS`: a number set.
    Ns(Vec<String>),
    /// `BS`: a binary set.
    Bs(Vec<Vec<u8>>),
    /// `M`: a map.
    M(AttributeMap),
    /// `L`: a list.
    L(Vec<AttributeValue>),
    /// `NULL` (DynamoDB requires `true`).
    Null(bool),
    /// `BOOL`.
    Bool(bool),
}

impl AttributeValue {
    /// DynamoDB's type descriptor: `S`, `N`, `B`, `SS`, `NS`, `BS`, `M`, `L`, `NULL`, `BOOL`.
    pub fn type_name(&self) -> &'static str {
        match self {
            AttributeValue::S(_) => "S",
            AttributeValue::N(_) => "N",
            AttributeValue::B(_) => "B",
            AttributeValue::Ss(_) => "SS",
            AttributeValue::Ns(_) => "NS",
            AttributeValue::Bs(_) => "BS",
            AttributeValue::M(_) => "M",
            AttributeValue::L(_) => "L",
            AttributeValue::Null(_) => "NULL",
            AttributeValue::Bool(_) => "BOOL",
        }
    }
}

impl From<&str> for AttributeValue {
    fn from(s: &str) -> Self {
        AttributeValue::S(s.to_owned())
    }
}

impl From<String> for AttributeValue {
    fn from(s: String) -> Self {
        AttributeValue::S(s)
    }
}

macro_rules! number_from {
    ($($t:ty),*) => {$(
        impl From<$t> for AttributeValue {
            fn from(n: $t) -> Self {
                AttributeValue::N(n.to_string())
            }
        }
    )*};
}
number_from!(i8, i16, i32, i64, i128, u8, u16, u32, u64, u128);

impl From<bool> for AttributeValue {
    fn from(b: bool) -> Self {
        AttributeValue::Bool(b)
    }
}

impl From<Vec<u8>> for AttributeValue {
    fn from(b: Vec<u8>) -> Self {
        AttributeValue::B(b)
    }
}

/// Marks a deserialization error that DynamoDB reports as a `ValidationException` (the rest
/// are `SerializationException`s): see [`crate::error::ApiError::from_json_error`].
pub(crate) const VALIDATION_MARK: &str = "\u{1}validation:";

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

fn decode_b64<E: de::Error>(s: &str) -> Result<Vec<u8>, E> {
    b64().decode(s).map_err(|_| {
        E::custom(format!(
            "{VALIDATION_MARK}Invalid Base64 value: {}",
            s.chars().take(64).collect::<String>()
        ))
    })
}

impl Serialize for AttributeValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        match self {
            AttributeValue::S(v) => m.serialize_entry("S", v)?,
            AttributeValue::N(v) => m.serialize_entry("N", v)?,
            AttributeValue::B(v) => m.serialize_entry("B", &b64().encode(v))?,
            AttributeValue::Ss(v) => m.serialize_entry("SS", v)?,
            AttributeValue::Ns(v) => m.serialize_entry("NS", v)?,
            AttributeValue::Bs(v) => {
                m.serialize_entry("BS", &v.iter().map(|b| b64().encode(b)).collect::<Vec<_>>())?
            }
            AttributeValue::M(v) => m.serialize_entry("M", v)?,
            AttributeValue::L(v) => m.serialize_entry("L", v)?,
            AttributeValue::Null(v) => m.serialize_entry("NULL", v)?,
            AttributeValue::Bool(v) => m.serialize_entry("BOOL", v)?,
        }
        m.end()
    }
}

struct AvVisitor;

impl<'de> Visitor<'de> for AvVisitor {
    type Value = AttributeValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an AttributeValue object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AttributeValue, A::Error> {
        let mut found: Option<AttributeValue> = None;
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let v = match k.as_ref() {
                "S" => AttributeValue::S(map.next_value()?),
                "N" => AttributeValue::N(map.next_value()?),
                "B" => AttributeValue::B(decode_b64(&map.next_value::<String>()?)?),
                "SS" => AttributeValue::Ss(map.next_value()?),
                "NS" => AttributeValue::Ns(map.next_value()?),
                "BS" => AttributeValue::Bs(
                    map.next_value::<Vec<String>>()?
                        .iter()
                        .map(|s| decode_b64(s))
                        .collect::<Result<_, _>>()?,
                ),
                "M" => AttributeValue::M(map.next_value()?),
                "L" => AttributeValue::L(map.next_value()?),
                "NULL" => AttributeValue::Null(map.next_value()?),
                "BOOL" => AttributeValue::Bool(map.next_value()?),
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                    continue;
                }
            };
            if found.is_some() {
                return Err(de::Error::custom(format!(
                    "{VALIDATION_MARK}Supplied AttributeValue has more than one datatypes set, \
                     must contain exactly one of the supported datatypes"
                )));
            }
            found = Some(v);
        }
        found.ok_or_else(|| {
            de::Error::custom(format!(
                "{VALIDATION_MARK}Supplied AttributeValue is empty, must contain exactly one of \
                 the supported datatypes"
            ))
        })
    }
}

impl<'de> Deserialize<'de> for AttributeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AttributeValue, D::Error> {
        d.deserialize_map(AvVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip() {
        let j = r#"{"a":{"S":"x"},"b":{"N":"1.5"},"c":{"B":"AAE="},"d":{"SS":["p","q"]},
            "e":{"NS":["1"]},"f":{"BS":["AA=="]},"g":{"M":{"h":{"NULL":true}}},
            "i":{"L":[{"BOOL":false}]}}"#;
        let m: AttributeMap = serde_json::from_str(j).unwrap();
        assert_eq!(m["c"], AttributeValue::B(vec![0, 1]));
        assert_eq!(m["f"], AttributeValue::Bs(vec![vec![0]]));
        let back = serde_json::to_string(&m).unwrap();
        let again: AttributeMap = serde_json::from_str(&back).unwrap();
        assert_eq!(m, again);
    }

    #[test]
    fn bad_values() {
        let err = |j: &str| {
            serde_json::from_str::<AttributeValue>(j)
                .unwrap_err()
                .to_string()
        };
        assert!(err(r#"{"S":"x","N":"1"}"#).contains("more than one"));
        assert!(err(r#"{}"#).contains("is empty"));
        assert!(err(r#"{"Q":"x"}"#).contains("is empty"));
        assert!(err(r#"{"B":"YWJj??!!"}"#).contains("Base64"));
        assert!(err(r#"{"B":"YWJjZGVmZ2g"}"#).contains("Base64"));
        // A JSON number where DynamoDB wants a string is a serialization error.
        assert!(!err(r#"{"N":123}"#).contains(VALIDATION_MARK));
    }
}
