//! `Dyn`: a mirror of an item's attributes through serde (test support for typed reads and
//! writes). Deserialized with `deserialize_any`, it records exactly what the serde decoder hands
//! out; serialized, it is the serde form of an item. `Dyn::of_item` converts an `Item` the way
//! the typed API is specified to (uuid, time and decimal as text; sets and tuples as lists).

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use strata::{Attr, Item};
use strata_key::Value;

/// One attribute as serde sees it (floats by their bits, so NaNs compare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dyn {
    Null,
    Bool(bool),
    Int(i128),
    F32(u32),
    F64(u64),
    Bytes(Vec<u8>),
    Text(String),
    List(Vec<Dyn>),
    Map(Vec<(String, Dyn)>),
}

impl Dyn {
    /// The typed form of an item (a `Dyn::Map`).
    pub fn of_item(item: &Item) -> Dyn {
        Dyn::Map(
            item.iter()
                .map(|(k, a)| (k.clone(), Dyn::of_attr(a)))
                .collect(),
        )
    }

    pub fn of_attr(a: &Attr) -> Dyn {
        match a {
            Attr::Value(v) => Dyn::of_value(v),
            Attr::List(l) => Dyn::List(l.iter().map(Dyn::of_attr).collect()),
            Attr::Map(m) => Dyn::of_item(m),
            Attr::Set(s) => Dyn::List(s.values().iter().map(Dyn::of_value).collect()),
        }
    }

    pub fn of_value(v: &Value) -> Dyn {
        match v {
            Value::Null => Dyn::Null,
            Value::Bool(b) => Dyn::Bool(*b),
            Value::Int(i) => Dyn::Int(*i),
            Value::F32(f) => Dyn::F32(f.to_bits()),
            Value::Float(f) => Dyn::F64(f.to_bits()),
            Value::Bytes(b) => Dyn::Bytes(b.clone()),
            Value::Text(s) => Dyn::Text(s.clone()),
            Value::Tuple(t) => Dyn::List(t.iter().map(Dyn::of_value).collect()),
            other => Dyn::Text(other.to_string()),
        }
    }

    /// Whether the item holds only what serde can write (no uuid, time, decimal, set or
    /// tuple): then `Dyn::of_item(item)` serializes to exactly the item's bytes.
    pub fn expressible(item: &Item) -> bool {
        fn attr(a: &Attr) -> bool {
            match a {
                Attr::Value(v) => matches!(
                    v,
                    Value::Null
                        | Value::Bool(_)
                        | Value::Int(_)
                        | Value::F32(_)
                        | Value::Float(_)
                        | Value::Bytes(_)
                        | Value::Text(_)
                ),
                Attr::List(l) => l.iter().all(attr),
                Attr::Map(m) => Dyn::expressible(m),
                Attr::Set(_) => false,
            }
        }
        item.values().all(attr)
    }
}

impl serde::Serialize for Dyn {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Dyn::Null => s.serialize_unit(),
            Dyn::Bool(b) => s.serialize_bool(*b),
            Dyn::Int(i) => s.serialize_i128(*i),
            Dyn::F32(b) => s.serialize_f32(f32::from_bits(*b)),
            Dyn::F64(b) => s.serialize_f64(f64::from_bits(*b)),
            Dyn::Bytes(b) => s.serialize_bytes(b),
            Dyn::Text(t) => s.serialize_str(t),
            Dyn::List(l) => {
                let mut seq = s.serialize_seq(Some(l.len()))?;
                for x in l {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            Dyn::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

struct DynVisitor;

impl<'de> Visitor<'de> for DynVisitor {
    type Value = Dyn;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any attribute")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Dyn, E> {
        Ok(Dyn::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Dyn, E> {
        Ok(Dyn::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Dyn, E> {
        Ok(Dyn::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dyn, E> {
        Ok(Dyn::Int(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dyn, E> {
        Ok(Dyn::Int(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Dyn, E> {
        Ok(Dyn::Int(v))
    }
    fn visit_f32<E: de::Error>(self, v: f32) -> Result<Dyn, E> {
        Ok(Dyn::F32(v.to_bits()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dyn, E> {
        Ok(Dyn::F64(v.to_bits()))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Dyn, E> {
        Ok(Dyn::Bytes(v.to_vec()))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Dyn, E> {
        Ok(Dyn::Text(v.to_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Dyn, A::Error> {
        let mut l = Vec::new();
        while let Some(x) = a.next_element()? {
            l.push(x);
        }
        Ok(Dyn::List(l))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Dyn, A::Error> {
        let mut m = Vec::new();
        while let Some((k, v)) = a.next_entry::<String, Dyn>()? {
            m.push((k, v));
        }
        Ok(Dyn::Map(m))
    }
}

impl<'de> serde::Deserialize<'de> for Dyn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Dyn, D::Error> {
        d.deserialize_any(DynVisitor)
    }
}
