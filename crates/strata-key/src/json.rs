//! Tuples as JSON, in the typed-value format of the test vectors (`vectors/README.md`) and of
//! the `strata key` command line.
//!
//! Plain JSON maps naturally: `null`, `true`/`false`, integral numbers → `Int`, other numbers →
//! `Float`, strings → `Text`, arrays → nested `Tuple`. An object is a typed value `{"t": ...}`:
//!
//! | `t` | fields |
//! |---|---|
//! | `null` | |
//! | `bool` | `v` |
//! | `int` | `v`: decimal string or number |
//! | `f32`, `f64` | `bits` (IEEE 754 big-endian hex), or `v` (number) |
//! | `bytes` / `blob` | `hex` |
//! | `text` | `v`, or `utf8_hex` (authoritative when present) |
//! | `uuid` | `hex` (32 digits) or `v` (any form the `uuid` crate parses) |
//! | `time` | `unix_ms` or `unix_ns` (string or number), `utc_offset_s` |
//! | `tuple` | `items` |
//! | `decimal` | `v`: decimal string (`"-1.5e-7"`) or number, kept exactly |
//!
//! Numbers beyond the `f64` range (`1e400`) are refused, never turned into infinities (JSON has
//! none; an infinity or NaN is written with `bits`). Tuples nest at most
//! [`MAX_DEPTH`] levels.
//!
//! **Keys with their orders** ([`key_to_json`], [`key_from_json`]): a top-level typed object may
//! also carry `"desc": true` (the element is stored descending) and `"nulls": "last"` (a NULL
//! stored nulls-last), so a native key decodes to JSON that encodes back to the same bytes:
//! `[{"t":"int","v":"5","desc":true}, {"t":"null","nulls":"last"}]`.

use serde_json::{json, Map, Number, Value as Json};

use crate::codec::native::Order;
use crate::decimal::Decimal;
use crate::time::Time;
use crate::value::{Tuple, Value, MAX_DEPTH};

/// A JSON value that is not a valid tuple element; the message names the JSON path at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct JsonError {
    /// JSON path of the element, e.g. `$[2].hex`.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

fn err(path: &str, reason: impl Into<String>) -> JsonError {
    JsonError {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Parses a tuple from a JSON array.
///
/// ```
/// use strata_key::{json::tuple_from_json, tuple};
/// let v: serde_json::Value = serde_json::from_str(r#"[1, "a", {"t":"bytes","hex":"00ff"}]"#).unwrap();
/// assert_eq!(tuple_from_json(&v).unwrap(), tuple!(1, "a", vec![0u8, 0xff]));
/// ```
pub fn tuple_from_json(j: &Json) -> Result<Tuple, JsonError> {
    match j {
        Json::Array(items) => items_from_json(items, "$", 0),
        _ => Err(err("$", "expected a JSON array")),
    }
}

/// The elements of a tuple whose elements sit at nesting `depth` (0: top-level elements).
fn items_from_json(items: &[Json], path: &str, depth: usize) -> Result<Tuple, JsonError> {
    items
        .iter()
        .enumerate()
        .map(|(i, x)| value_from_json_at(x, &format!("{path}[{i}]"), depth))
        .collect::<Result<Vec<_>, _>>()
        .map(Tuple)
}

/// Parses one value (see the module docs for the mapping). Tuples may nest
/// [`MAX_DEPTH`] levels.
pub fn value_from_json(j: &Json) -> Result<Value, JsonError> {
    value_from_json_at(j, "$", 0)
}

/// A finite `f64` from a JSON number's text: JSON has no infinity, and a number beyond the
/// `f64` range must not become one silently.
fn finite_f64(s: &str, path: &str) -> Result<f64, JsonError> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(f),
        Ok(_) => Err(err(
            path,
            format!(
                "number {s} is out of the f64 range (for an exact decimal write {{\"t\":\"decimal\",\"v\":\"{s}\"}})"
            ),
        )),
        Err(_) => Err(err(path, format!("bad number {s}"))),
    }
}

fn number_to_value(n: &Number, path: &str) -> Result<Value, JsonError> {
    let s = n.to_string();
    if !s.contains(['.', 'e', 'E']) {
        return s
            .parse::<i128>()
            .map(Value::Int)
            .map_err(|_| err(path, format!("integer {s} out of range")));
    }
    finite_f64(&s, path).map(Value::Float)
}

fn int_field(o: &Map<String, Json>, key: &str, path: &str) -> Result<Option<i128>, JsonError> {
    match o.get(key) {
        None => Ok(None),
        Some(Json::String(s)) => s
            .trim()
            .parse::<i128>()
            .map(Some)
            .map_err(|_| err(&format!("{path}.{key}"), format!("not an integer: {s:?}"))),
        Some(Json::Number(n)) => n
            .to_string()
            .parse::<i128>()
            .map(Some)
            .map_err(|_| err(&format!("{path}.{key}"), format!("not an integer: {n}"))),
        Some(_) => Err(err(
            &format!("{path}.{key}"),
            "expected an integer (number or decimal string)",
        )),
    }
}

fn str_field<'a>(
    o: &'a Map<String, Json>,
    key: &str,
    path: &str,
) -> Result<Option<&'a str>, JsonError> {
    match o.get(key) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(_) => Err(err(&format!("{path}.{key}"), "expected a string")),
    }
}

fn hex_field(o: &Map<String, Json>, key: &str, path: &str) -> Result<Option<Vec<u8>>, JsonError> {
    match str_field(o, key, path)? {
        None => Ok(None),
        Some(h) => hex::decode(h)
            .map(Some)
            .map_err(|e| err(&format!("{path}.{key}"), format!("bad hex: {e}"))),
    }
}

/// Refuses a tuple that would sit at nesting `depth` (so its level is `depth + 1`).
fn check_depth(path: &str, depth: usize) -> Result<(), JsonError> {
    if depth >= MAX_DEPTH {
        Err(err(
            path,
            format!("tuples nested deeper than {MAX_DEPTH} levels"),
        ))
    } else {
        Ok(())
    }
}

fn value_from_json_at(j: &Json, path: &str, depth: usize) -> Result<Value, JsonError> {
    match j {
        Json::Null => Ok(Value::Null),
        Json::Bool(b) => Ok(Value::Bool(*b)),
        Json::Number(n) => number_to_value(n, path),
        Json::String(s) => Ok(Value::Text(s.clone())),
        Json::Array(items) => {
            check_depth(path, depth)?;
            items_from_json(items, path, depth + 1).map(Value::Tuple)
        }
        Json::Object(o) => typed_from_json(o, path, depth),
    }
}

fn typed_from_json(o: &Map<String, Json>, path: &str, depth: usize) -> Result<Value, JsonError> {
    if let Some(flag) = FLAGS.iter().find(|f| o.contains_key(**f)) {
        return Err(err(
            &format!("{path}.{flag}"),
            "\"desc\" and \"nulls\" apply to the top-level elements of a key only",
        ));
    }
    let t = str_field(o, "t", path)?.ok_or_else(|| err(path, "object without a type tag \"t\""))?;
    match t {
        "null" => Ok(Value::Null),
        "bool" => match o.get("v") {
            Some(Json::Bool(b)) => Ok(Value::Bool(*b)),
            _ => Err(err(&format!("{path}.v"), "expected true or false")),
        },
        "int" => int_field(o, "v", path)?
            .map(Value::Int)
            .ok_or_else(|| err(path, "int without \"v\"")),
        "f32" | "f64" => {
            if let Some(bits) = hex_field(o, "bits", path)? {
                match (t, bits.len()) {
                    ("f32", 4) => Ok(Value::F32(f32::from_bits(u32::from_be_bytes([
                        bits[0], bits[1], bits[2], bits[3],
                    ])))),
                    ("f64", 8) => {
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&bits);
                        Ok(Value::Float(f64::from_bits(u64::from_be_bytes(b))))
                    }
                    _ => Err(err(
                        &format!("{path}.bits"),
                        "wrong number of bytes for the float width",
                    )),
                }
            } else {
                match o.get("v") {
                    Some(Json::Number(n)) => {
                        let vpath = format!("{path}.v");
                        let f = finite_f64(&n.to_string(), &vpath)?;
                        if t == "f64" {
                            return Ok(Value::Float(f));
                        }
                        let g = f as f32;
                        if g.is_finite() {
                            Ok(Value::F32(g))
                        } else {
                            Err(err(&vpath, format!("number {n} is out of the f32 range")))
                        }
                    }
                    _ => Err(err(path, "float without \"bits\" or numeric \"v\"")),
                }
            }
        }
        "bytes" | "blob" => hex_field(o, "hex", path)?
            .map(Value::Bytes)
            .ok_or_else(|| err(path, "bytes without \"hex\"")),
        "text" => {
            if let Some(raw) = hex_field(o, "utf8_hex", path)? {
                String::from_utf8(raw)
                    .map(Value::Text)
                    .map_err(|_| err(&format!("{path}.utf8_hex"), "not valid UTF-8"))
            } else {
                str_field(o, "v", path)?
                    .map(|s| Value::Text(s.to_owned()))
                    .ok_or_else(|| err(path, "text without \"v\" or \"utf8_hex\""))
            }
        }
        "uuid" => {
            if let Some(raw) = hex_field(o, "hex", path)? {
                uuid::Uuid::from_slice(&raw)
                    .map(Value::Uuid)
                    .map_err(|_| err(&format!("{path}.hex"), "a uuid has 16 bytes"))
            } else {
                let s = str_field(o, "v", path)?
                    .ok_or_else(|| err(path, "uuid without \"hex\" or \"v\""))?;
                uuid::Uuid::parse_str(s)
                    .map(Value::Uuid)
                    .map_err(|e| err(&format!("{path}.v"), e.to_string()))
            }
        }
        "time" => {
            let off = int_field(o, "utc_offset_s", path)?.unwrap_or(0);
            let off = i32::try_from(off)
                .map_err(|_| err(&format!("{path}.utc_offset_s"), "out of range"))?;
            let t = if let Some(ns) = int_field(o, "unix_ns", path)? {
                Time::from_unix_ns(ns, off).ok_or_else(|| err(path, "time out of range"))?
            } else if let Some(ms) = int_field(o, "unix_ms", path)? {
                let ms = i64::try_from(ms)
                    .map_err(|_| err(&format!("{path}.unix_ms"), "out of range"))?;
                Time::from_unix_ms(ms, off).map_err(|e| err(path, e.to_string()))?
            } else {
                return Err(err(path, "time without \"unix_ms\" or \"unix_ns\""));
            };
            Ok(Value::Time(t))
        }
        "decimal" => {
            let text = match o.get("v") {
                Some(Json::String(s)) => s.clone(),
                // Exact: with serde_json's arbitrary_precision the number keeps its text.
                Some(Json::Number(n)) => n.to_string(),
                _ => return Err(err(path, "decimal without a string or numeric \"v\"")),
            };
            text.parse::<Decimal>()
                .map(Value::Decimal)
                .map_err(|e| err(&format!("{path}.v"), e.to_string()))
        }
        "tuple" => match o.get("items") {
            Some(Json::Array(items)) => {
                check_depth(path, depth)?;
                items_from_json(items, &format!("{path}.items"), depth + 1).map(Value::Tuple)
            }
            _ => Err(err(&format!("{path}.items"), "expected an array")),
        },
        other => Err(err(
            &format!("{path}.t"),
            format!("unknown type tag {other:?}"),
        )),
    }
}

/// The JSON form of a tuple. With `typed`, every element is a typed object; otherwise plain
/// JSON where it is lossless (null, bool, int, finite f64, text, nested tuples) and typed
/// objects for the rest.
pub fn tuple_to_json(t: &Tuple, typed: bool) -> Json {
    Json::Array(t.iter().map(|v| value_to_json(v, typed)).collect())
}

fn int_json(i: i128) -> Json {
    Json::Number(
        i.to_string()
            .parse::<Number>()
            .unwrap_or_else(|_| Number::from(0)),
    )
}

/// The JSON form of one value (see [`tuple_to_json`]).
pub fn value_to_json(v: &Value, typed: bool) -> Json {
    if !typed {
        match v {
            Value::Null => return Json::Null,
            Value::Bool(b) => return Json::Bool(*b),
            Value::Int(i) => return int_json(*i),
            Value::Float(f) if f.is_finite() && (*f != 0.0 || f.is_sign_positive()) => {
                // A float must stay a float when read back: keep a fraction or exponent.
                let s = format!("{f:?}");
                if let Ok(n) = s.parse::<Number>() {
                    return Json::Number(n);
                }
            }
            Value::Text(s) => return Json::String(s.clone()),
            Value::Tuple(t) => return tuple_to_json(t, false),
            _ => {}
        }
    }
    match v {
        Value::Null => json!({"t": "null"}),
        Value::Bool(b) => json!({"t": "bool", "v": b}),
        Value::Int(i) => json!({"t": "int", "v": i.to_string()}),
        Value::F32(f) => json!({"t": "f32", "bits": hex::encode(f.to_bits().to_be_bytes())}),
        Value::Float(f) => json!({"t": "f64", "bits": hex::encode(f.to_bits().to_be_bytes())}),
        Value::Bytes(b) => json!({"t": "bytes", "hex": hex::encode(b)}),
        Value::Text(s) => json!({"t": "text", "v": s, "utf8_hex": hex::encode(s.as_bytes())}),
        Value::Uuid(u) => {
            json!({"t": "uuid", "hex": hex::encode(u.as_bytes()), "v": u.to_string()})
        }
        Value::Time(t) => {
            let mut o = json!({"t": "time", "utc_offset_s": t.offset_s(), "iso": t.to_string()});
            match t.unix_ms_exact() {
                Some(ms) => o["unix_ms"] = json!(ms),
                None => o["unix_ns"] = json!(t.unix_ns().to_string()),
            }
            o
        }
        Value::Tuple(t) => {
            json!({"t": "tuple", "items": t.iter().map(|x| value_to_json(x, true)).collect::<Vec<_>>()})
        }
        Value::Decimal(d) => json!({"t": "decimal", "v": d.to_string()}),
    }
}

/// The order fields of a top-level element in key JSON.
const FLAGS: [&str; 2] = ["desc", "nulls"];

/// The order a top-level element of key JSON asks for: each field is `None` when the JSON does
/// not say (then the schema's order, or ascending with nulls first, applies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OrderFlags {
    /// `"desc": true | false`.
    pub descending: Option<bool>,
    /// `"nulls": "last" | "first"`.
    pub nulls_last: Option<bool>,
}

impl OrderFlags {
    /// True when the element says nothing about its order.
    pub fn is_empty(&self) -> bool {
        self.descending.is_none() && self.nulls_last.is_none()
    }

    /// `base` with the flags that are given applied over it.
    pub fn over(self, base: Order) -> Order {
        Order {
            descending: self.descending.unwrap_or(base.descending),
            nulls_last: self.nulls_last.unwrap_or(base.nulls_last),
        }
    }
}

/// The JSON form of a native key with the [`Order`] each top-level element was written with
/// (as [`decode_with_orders`](crate::codec::native::decode_with_orders) reports them): as
/// [`tuple_to_json`], except that an element stored descending, or a NULL stored nulls-last,
/// is a typed object with `"desc": true` and/or `"nulls": "last"`. [`key_from_json`] and the
/// native encoder turn it back into the same bytes.
///
/// ```
/// use strata_key::codec::native::{decode_with_orders, NativeCodec, Order};
/// use strata_key::json::{key_from_json, key_to_json};
/// use strata_key::{tuple, TupleCodec, Value};
/// let c = NativeCodec::with_orders(vec![Order::DESC, Order { descending: false, nulls_last: true }]);
/// let k = c.encode(&tuple!(5, Value::Null)).unwrap();
/// let j = key_to_json(&decode_with_orders(&k).unwrap(), false);
/// assert_eq!(j.to_string(), r#"[{"desc":true,"t":"int","v":"5"},{"nulls":"last","t":"null"}]"#);
/// let (t, flags) = key_from_json(&j).unwrap();
/// let orders = flags.iter().map(|f| f.over(Order::ASC)).collect();
/// assert_eq!(NativeCodec::with_orders(orders).encode(&t).unwrap(), k);
/// ```
pub fn key_to_json(items: &[(Value, Order)], typed: bool) -> Json {
    Json::Array(
        items
            .iter()
            .map(|(v, o)| {
                let nulls_last = v.is_null() && o.nulls_last;
                if !o.descending && !nulls_last {
                    return value_to_json(v, typed);
                }
                let mut j = value_to_json(v, true);
                if let Json::Object(m) = &mut j {
                    if o.descending {
                        m.insert("desc".into(), Json::Bool(true));
                    }
                    if nulls_last {
                        m.insert("nulls".into(), Json::String("last".into()));
                    }
                }
                j
            })
            .collect(),
    )
}

/// Parses key JSON: a tuple as [`tuple_from_json`] reads it, where each top-level typed object
/// may carry `"desc"` (a boolean) and `"nulls"` (`"first"` or `"last"`). Returns the tuple and
/// one [`OrderFlags`] per element.
pub fn key_from_json(j: &Json) -> Result<(Tuple, Vec<OrderFlags>), JsonError> {
    let Json::Array(items) = j else {
        return Err(err("$", "expected a JSON array"));
    };
    let mut values = Vec::with_capacity(items.len());
    let mut flags = Vec::with_capacity(items.len());
    for (i, x) in items.iter().enumerate() {
        let path = format!("$[{i}]");
        let mut f = OrderFlags::default();
        let v = match x {
            Json::Object(o) if FLAGS.iter().any(|k| o.contains_key(*k)) => {
                let mut o = o.clone();
                match o.remove("desc") {
                    None => {}
                    Some(Json::Bool(b)) => f.descending = Some(b),
                    Some(_) => return Err(err(&format!("{path}.desc"), "expected true or false")),
                }
                match o.remove("nulls") {
                    None => {}
                    Some(Json::String(s)) if s == "last" => f.nulls_last = Some(true),
                    Some(Json::String(s)) if s == "first" => f.nulls_last = Some(false),
                    Some(_) => {
                        return Err(err(
                            &format!("{path}.nulls"),
                            "expected \"first\" or \"last\"",
                        ))
                    }
                }
                typed_from_json(&o, &path, 0)?
            }
            _ => value_from_json_at(x, &path, 0)?,
        };
        values.push(v);
        flags.push(f);
    }
    Ok((Tuple(values), flags))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuple;

    #[test]
    fn plain_and_typed_round_trip() {
        let t = tuple!(
            Value::Null,
            true,
            -5,
            Value::Int(i128::from(u64::MAX) + 1),
            1.5,
            Value::Float(-0.0),
            Value::F32(2.5),
            "a\0b",
            vec![0u8, 255],
            uuid::Uuid::from_bytes([7; 16]),
            Time::from_unix_ms(-1, 3600).unwrap(),
            tuple!(1, tuple!()),
            "-1.25e-40".parse::<Decimal>().unwrap()
        );
        for typed in [false, true] {
            let j = tuple_to_json(&t, typed);
            let text = j.to_string();
            let back = tuple_from_json(&serde_json::from_str(&text).unwrap()).unwrap();
            assert_eq!(back, t, "typed={typed} json={text}");
        }
    }

    #[test]
    fn errors_name_the_path() {
        let j: Json = serde_json::from_str(r#"[1, [2, {"t":"bytes","hex":"zz"}]]"#).unwrap();
        let e = tuple_from_json(&j).unwrap_err();
        assert_eq!(e.path, "$[1][1].hex");
        assert!(tuple_from_json(&json!({"a": 1})).is_err());
        assert!(tuple_from_json(&json!([{"t": "wat"}])).is_err());
    }
}
