//! The typed key model: [`Value`], [`Tuple`] and their one total order.
//!
//! # Order
//! Values compare first by [`Kind`] (in the order the variants are declared: `Null < Bool <
//! Int < F32 < Float < Bytes < Text < Uuid < Time < Tuple < Decimal`), then by value:
//!
//! * `Int` numerically (an `i128`, so every 64-bit signed and unsigned value fits, and more);
//! * `F32` / `Float` by IEEE 754 `totalOrder` ([`f64::total_cmp`]): negative NaNs < −∞ < … <
//!   −0.0 < +0.0 < … < +∞ < positive NaNs. **−0.0 and +0.0 are different keys**, and each NaN
//!   bit pattern is its own key. This is the FoundationDB choice; it makes `Eq`/`Ord` lawful and
//!   every codec round-trip exact. If you want SQL semantics (−0.0 = 0.0, one NaN), normalise
//!   with [`Value::canonical_float`] before building a key.
//! * `Bytes` and `Text` lexicographically by bytes (UTF-8 byte order = code point order);
//! * `Uuid` by its 16 bytes (RFC 4122 network order);
//! * `Time` by instant, then by UTC offset (the same instant at two offsets are two keys);
//! * `Tuple` lexicographically, a proper prefix first;
//! * `Decimal` numerically ([`Decimal`] has one representation per number: `1.50` = `1.5`,
//!   `-0` = `0`).
//!
//! `Int`, `F32`, `Float` and `Decimal` are different kinds: `Int(5)`, `Float(5.0)` and
//! `Decimal(5)` are three different keys, ordered by kind first (every `Int` sorts before every
//! `Float`, every `Tuple` before every `Decimal`). A column of numbers should use one kind.
//! `Decimal` is last because the native codec had exactly one free tag (`0x7e`, above the
//! nested-tuple tag), so adding it left every existing key's bytes unchanged.
//!
//! Codecs whose byte formats are fixed by another system (centidb, FoundationDB) order kinds
//! their own way; they expose that order with a `kind_rank` function and agree with
//! [`Tuple::cmp_by_rank`] under it.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

use crate::decimal::Decimal;
use crate::time::Time;

/// The deepest nesting of tuples in a key, shared by every encoder and decoder (native, serde
/// keys, FoundationDB, typed JSON; centidb and SKV have no nested tuples): a top-level element
/// may be a tuple (level 1) holding tuples down to level 64. Encoders refuse deeper values with
/// an error and decoders refuse deeper bytes, so every key that encodes also decodes, and
/// untrusted input cannot recurse without bound.
pub const MAX_DEPTH: usize = 64;

/// The kind of a [`Value`], in Strata's kind order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// [`Value::Null`]
    Null,
    /// [`Value::Bool`]
    Bool,
    /// [`Value::Int`]
    Int,
    /// [`Value::F32`]
    F32,
    /// [`Value::Float`]
    Float,
    /// [`Value::Bytes`]
    Bytes,
    /// [`Value::Text`]
    Text,
    /// [`Value::Uuid`]
    Uuid,
    /// [`Value::Time`]
    Time,
    /// [`Value::Tuple`]
    Tuple,
    /// [`Value::Decimal`]
    Decimal,
}

impl Kind {
    /// Lower-case name, as used in typed JSON (`{"t": "int", ...}`) and error messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::F32 => "f32",
            Kind::Float => "f64",
            Kind::Bytes => "bytes",
            Kind::Text => "text",
            Kind::Uuid => "uuid",
            Kind::Time => "time",
            Kind::Tuple => "tuple",
            Kind::Decimal => "decimal",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One element of a key.
#[derive(Debug, Clone)]
pub enum Value {
    /// SQL-style NULL; its place (first or last) is set per field by a key schema.
    Null,
    /// A boolean; `false < true`.
    Bool(bool),
    /// An integer. Every codec supports at least −(2^64−1) … 2^64−1; `native` and `fdb` take
    /// the whole `i128` range.
    Int(i128),
    /// A 32-bit float (FoundationDB keeps the width; a separate kind, ordered before `Float`).
    F32(f32),
    /// A 64-bit float, ordered by IEEE 754 `totalOrder`.
    Float(f64),
    /// Arbitrary bytes (NUL and 0xFF included).
    Bytes(Vec<u8>),
    /// UTF-8 text (NUL included), ordered by bytes.
    Text(String),
    /// A UUID, ordered by its 16 bytes.
    Uuid(uuid::Uuid),
    /// An instant with a UTC offset.
    Time(Time),
    /// A nested tuple.
    Tuple(Tuple),
    /// An exact decimal number (up to 38 significant digits), ordered numerically.
    Decimal(Decimal),
}

impl Value {
    /// The kind of this value.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Int(_) => Kind::Int,
            Value::F32(_) => Kind::F32,
            Value::Float(_) => Kind::Float,
            Value::Bytes(_) => Kind::Bytes,
            Value::Text(_) => Kind::Text,
            Value::Uuid(_) => Kind::Uuid,
            Value::Time(_) => Kind::Time,
            Value::Tuple(_) => Kind::Tuple,
            Value::Decimal(_) => Kind::Decimal,
        }
    }

    /// True for [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// SQL float semantics: −0.0 becomes +0.0 and every NaN becomes the one positive quiet NaN
    /// (`0x7ff8000000000000`, which sorts above +∞). Other values are returned unchanged.
    ///
    /// ```
    /// use strata_key::Value;
    /// assert_eq!(Value::Float(-0.0).canonical_float(), Value::Float(0.0));
    /// ```
    #[allow(clippy::redundant_guards)] // `== 0.0` is meant: it matches −0.0 too
    pub fn canonical_float(self) -> Value {
        match self {
            Value::Float(f) if f == 0.0 => Value::Float(0.0),
            Value::Float(f) if f.is_nan() => Value::Float(f64::from_bits(0x7ff8_0000_0000_0000)),
            Value::F32(f) if f == 0.0 => Value::F32(0.0),
            Value::F32(f) if f.is_nan() => Value::F32(f32::from_bits(0x7fc0_0000)),
            other => other,
        }
    }

    /// Compares by a custom kind order (used by codecs whose byte formats order kinds
    /// differently from Strata), then by value as [`Ord`] does.
    pub fn cmp_by_rank(&self, other: &Value, rank: &dyn Fn(&Value) -> u8) -> Ordering {
        match (self, other) {
            (Value::Tuple(a), Value::Tuple(b)) => a.cmp_by_rank(b, rank),
            _ => rank(self)
                .cmp(&rank(other))
                .then_with(|| self.cmp_same_kind(other, rank)),
        }
    }

    fn cmp_same_kind(&self, other: &Value, rank: &dyn Fn(&Value) -> u8) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::F32(a), Value::F32(b)) => a.total_cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            (Value::Text(a), Value::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Value::Uuid(a), Value::Uuid(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Value::Time(a), Value::Time(b)) => a.cmp(b),
            (Value::Tuple(a), Value::Tuple(b)) => a.cmp_by_rank(b, rank),
            (Value::Decimal(a), Value::Decimal(b)) => a.cmp(b),
            // Different kinds with the same rank (a codec that merges kinds): fall back to
            // Strata's kind order so the comparison stays total.
            _ => self.kind().cmp(&other.kind()),
        }
    }
}

fn native_rank(v: &Value) -> u8 {
    v.kind() as u8
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_by_rank(other, &native_rank)
    }
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind().hash(state);
        match self {
            Value::Null => {}
            Value::Bool(b) => b.hash(state),
            Value::Int(i) => i.hash(state),
            Value::F32(f) => f.to_bits().hash(state),
            Value::Float(f) => f.to_bits().hash(state),
            Value::Bytes(b) => b.hash(state),
            Value::Text(t) => t.hash(state),
            Value::Uuid(u) => u.hash(state),
            Value::Time(t) => t.hash(state),
            Value::Tuple(t) => t.hash(state),
            Value::Decimal(d) => d.hash(state),
        }
    }
}

/// An ordered list of [`Value`]s: a key. Compares lexicographically, a proper prefix first.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tuple(pub Vec<Value>);

impl Tuple {
    /// The empty tuple.
    pub fn new() -> Tuple {
        Tuple(Vec::new())
    }

    /// Appends a value; returns `self` for chaining.
    pub fn with(mut self, v: impl Into<Value>) -> Tuple {
        self.0.push(v.into());
        self
    }

    /// The values, by value.
    pub fn into_vec(self) -> Vec<Value> {
        self.0
    }

    /// Lexicographic comparison under a custom kind order (see [`Value::cmp_by_rank`]).
    pub fn cmp_by_rank(&self, other: &Tuple, rank: &dyn Fn(&Value) -> u8) -> Ordering {
        for (a, b) in self.0.iter().zip(other.0.iter()) {
            match a.cmp_by_rank(b, rank) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        self.0.len().cmp(&other.0.len())
    }

    /// True when `prefix` is a (not necessarily proper) tuple prefix of `self`.
    pub fn starts_with(&self, prefix: &Tuple) -> bool {
        self.0.len() >= prefix.0.len() && self.0[..prefix.0.len()] == prefix.0[..]
    }
}

impl Deref for Tuple {
    type Target = Vec<Value>;
    fn deref(&self) -> &Vec<Value> {
        &self.0
    }
}

impl DerefMut for Tuple {
    fn deref_mut(&mut self) -> &mut Vec<Value> {
        &mut self.0
    }
}

impl From<Vec<Value>> for Tuple {
    fn from(v: Vec<Value>) -> Tuple {
        Tuple(v)
    }
}

impl FromIterator<Value> for Tuple {
    fn from_iter<I: IntoIterator<Item = Value>>(iter: I) -> Tuple {
        Tuple(iter.into_iter().collect())
    }
}

impl IntoIterator for Tuple {
    type Item = Value;
    type IntoIter = std::vec::IntoIter<Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl AsRef<[Value]> for Tuple {
    fn as_ref(&self) -> &[Value] {
        &self.0
    }
}

/// Builds a [`Tuple`] from expressions that convert into [`Value`].
///
/// ```
/// use strata_key::{tuple, Value};
/// let t = tuple!(613, "abc", 1.5, Value::Null);
/// assert_eq!(t.len(), 4);
/// assert_eq!(tuple!(), strata_key::Tuple::new());
/// ```
#[macro_export]
macro_rules! tuple {
    () => { $crate::Tuple::new() };
    ($($v:expr),+ $(,)?) => { $crate::Tuple(vec![$($crate::Value::from($v)),+]) };
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value { Value::Int(v as i128) }
        }
    )*};
}
from_int!(i8, i16, i32, i64, i128, u8, u16, u32, u64, isize, usize);

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Bool(v)
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value::F32(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}
impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Value {
        Value::Bytes(v.to_vec())
    }
}
impl<const N: usize> From<&[u8; N]> for Value {
    fn from(v: &[u8; N]) -> Value {
        Value::Bytes(v.to_vec())
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Bytes(v)
    }
}
impl From<uuid::Uuid> for Value {
    fn from(v: uuid::Uuid) -> Value {
        Value::Uuid(v)
    }
}
impl From<Time> for Value {
    fn from(v: Time) -> Value {
        Value::Time(v)
    }
}
impl From<Decimal> for Value {
    fn from(v: Decimal) -> Value {
        Value::Decimal(v)
    }
}
impl From<Tuple> for Value {
    fn from(v: Tuple) -> Value {
        Value::Tuple(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}
impl From<()> for Value {
    fn from(_: ()) -> Value {
        Value::Null
    }
}

/// Displays a value as a readable literal: `null`, `true`, `613`, `1.5`, `1.5f32`, `"text"`,
/// `x'00ff'` (bytes), `uuid'…'`, `time'2024-01-02T03:04:05.000000006+05:30'`, `(1, "a")`,
/// `dec'1.5'`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::F32(x) => write!(f, "{x:?}f32"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Bytes(b) => write!(f, "x'{}'", hex::encode(b)),
            Value::Text(s) => write!(f, "{s:?}"),
            Value::Uuid(u) => write!(f, "uuid'{u}'"),
            Value::Time(t) => write!(f, "time'{t}'"),
            Value::Tuple(t) => write!(f, "{t}"),
            Value::Decimal(d) => write!(f, "dec'{d}'"),
        }
    }
}

impl fmt::Display for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{v}")?;
        }
        if self.0.len() == 1 {
            f.write_str(",")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_order_then_value() {
        let mut v = vec![
            Value::from("a"),
            Value::Int(-5),
            Value::Null,
            Value::Bool(true),
            Value::Float(0.0),
            Value::Float(-0.0),
            Value::Bytes(vec![0]),
            Value::Int(3),
            Value::Bool(false),
        ];
        v.sort();
        let shown: Vec<String> = v.iter().map(|x| x.to_string()).collect();
        assert_eq!(
            shown,
            ["null", "false", "true", "-5", "3", "-0.0", "0.0", "x'00'", "\"a\""]
        );
    }

    #[test]
    fn nan_and_zero_policy() {
        let neg_nan = Value::Float(f64::from_bits(0xfff8_0000_0000_0000));
        let pos_nan = Value::Float(f64::NAN);
        assert!(neg_nan < Value::Float(f64::NEG_INFINITY));
        assert!(pos_nan > Value::Float(f64::INFINITY));
        assert_ne!(Value::Float(-0.0), Value::Float(0.0));
        assert_eq!(pos_nan.clone(), pos_nan);
    }

    #[test]
    fn tuple_prefix_first() {
        assert!(tuple!(1) < tuple!(1, Value::Null));
        assert!(tuple!(1, 2).starts_with(&tuple!(1)));
        assert_eq!(tuple!(1, "a").to_string(), "(1, \"a\")");
        assert_eq!(tuple!(1).to_string(), "(1,)");
    }
}
