//! Values as JSON: the typed format of the vectors (`{"t": "int", "v": "5"}`, …; see
//! `vectors/centidb-store/README.md`) and plain JSON for the command line.
//!
//! Output lists a dict's items in the order CPython 2.7 iterates it after decoding (the
//! order the original's results show), computed from the order the encoding holds.

use serde_json::{json, Map, Value as Json};
use strata_key::{Time, Tuple};
use uuid::Uuid;

use crate::doc::Doc;
use crate::py27;

fn err(path: &str, reason: impl std::fmt::Display) -> String {
    format!("{path}: {reason}")
}

fn field<'a>(o: &'a Map<String, Json>, k: &str, path: &str) -> Result<&'a Json, String> {
    o.get(k)
        .ok_or_else(|| err(path, format!("missing field {k:?}")))
}

fn str_field<'a>(o: &'a Map<String, Json>, k: &str, path: &str) -> Result<&'a str, String> {
    field(o, k, path)?
        .as_str()
        .ok_or_else(|| err(path, format!("field {k:?} is not a string")))
}

fn hex_field(o: &Map<String, Json>, k: &str, path: &str) -> Result<Vec<u8>, String> {
    hex::decode(str_field(o, k, path)?).map_err(|e| err(path, format!("field {k:?}: {e}")))
}

fn int_of(j: &Json, path: &str) -> Result<i128, String> {
    match j {
        Json::String(s) => s
            .trim()
            .parse()
            .map_err(|_| err(path, format!("{s:?} is not an integer"))),
        Json::Number(n) => n
            .to_string()
            .parse()
            .map_err(|_| err(path, format!("{n} is not an integer"))),
        _ => Err(err(path, "expected an integer")),
    }
}

fn items<'a>(o: &'a Map<String, Json>, path: &str) -> Result<&'a Vec<Json>, String> {
    field(o, "items", path)?
        .as_array()
        .ok_or_else(|| err(path, "\"items\" is not an array"))
}

/// A value from JSON: typed objects (`{"t": …}`) or plain JSON (numbers, strings as
/// unicode, arrays as lists, objects as dicts with unicode keys). `{"t": "missing"}`
/// gives `None`.
pub fn from_json(j: &Json) -> Result<Option<Doc>, String> {
    from_json_at(j, "$")
}

/// [`from_json`], refusing "missing".
pub fn doc_from_json(j: &Json) -> Result<Doc, String> {
    from_json(j)?.ok_or_else(|| "a value is required here, not \"missing\"".to_owned())
}

fn from_json_at(j: &Json, path: &str) -> Result<Option<Doc>, String> {
    Ok(Some(match j {
        Json::Null => Doc::None,
        Json::Bool(b) => Doc::Bool(*b),
        Json::Number(n) => {
            let s = n.to_string();
            if s.contains(['.', 'e', 'E']) {
                Doc::Float(
                    s.parse()
                        .map_err(|_| err(path, format!("bad number {s}")))?,
                )
            } else {
                Doc::Int(
                    s.parse()
                        .map_err(|_| err(path, format!("integer {s} beyond 128 bits")))?,
                )
            }
        }
        Json::String(s) => Doc::Text(s.clone()),
        Json::Array(a) => Doc::List(seq(a, path)?),
        Json::Object(o) => match o.get("t") {
            Some(Json::String(t)) => return typed(o, t, path),
            _ => {
                let mut out = Vec::with_capacity(o.len());
                for (k, v) in o {
                    out.push((Doc::Text(k.clone()), doc_at(v, &format!("{path}.{k}"))?));
                }
                Doc::Dict(out)
            }
        },
    }))
}

fn doc_at(j: &Json, path: &str) -> Result<Doc, String> {
    from_json_at(j, path)?.ok_or_else(|| err(path, "\"missing\" inside a value"))
}

fn seq(a: &[Json], path: &str) -> Result<Vec<Doc>, String> {
    a.iter()
        .enumerate()
        .map(|(i, x)| doc_at(x, &format!("{path}[{i}]")))
        .collect()
}

fn typed(o: &Map<String, Json>, t: &str, path: &str) -> Result<Option<Doc>, String> {
    Ok(Some(match t {
        "missing" => return Ok(None),
        "null" => Doc::None,
        "bool" => Doc::Bool(
            field(o, "v", path)?
                .as_bool()
                .ok_or_else(|| err(path, "bool without true/false \"v\""))?,
        ),
        "int" => Doc::Int(int_of(field(o, "v", path)?, path)?),
        "f64" | "f32" | "float" => {
            if o.contains_key("bits") {
                let b = hex_field(o, "bits", path)?;
                match b.len() {
                    8 => Doc::Float(f64::from_bits(u64::from_be_bytes(
                        b.try_into().map_err(|_| err(path, "bits"))?,
                    ))),
                    4 => Doc::Float(f64::from(f32::from_bits(u32::from_be_bytes(
                        b.try_into().map_err(|_| err(path, "bits"))?,
                    )))),
                    _ => return Err(err(path, "float bits are 4 or 8 bytes")),
                }
            } else {
                let v = field(o, "v", path)?;
                let s = match v {
                    Json::String(s) => s.clone(),
                    other => other.to_string(),
                };
                Doc::Float(s.parse().map_err(|_| err(path, format!("bad float {s}")))?)
            }
        }
        "bytes" | "blob" | "str" => Doc::Bytes(hex_field(o, "hex", path)?),
        "text" | "unicode" => {
            if o.contains_key("utf8_hex") {
                Doc::Text(
                    String::from_utf8(hex_field(o, "utf8_hex", path)?)
                        .map_err(|_| err(path, "utf8_hex is not UTF-8"))?,
                )
            } else {
                Doc::Text(str_field(o, "v", path)?.to_owned())
            }
        }
        "uuid" => {
            if o.contains_key("hex") {
                let b = hex_field(o, "hex", path)?;
                Doc::Uuid(Uuid::from_slice(&b).map_err(|_| err(path, "a uuid has 16 bytes"))?)
            } else {
                Doc::Uuid(
                    Uuid::parse_str(str_field(o, "v", path)?)
                        .map_err(|e| err(path, format!("uuid: {e}")))?,
                )
            }
        }
        "time" => {
            let off = match o.get("utc_offset_s") {
                Some(j) => i32::try_from(int_of(j, path)?)
                    .map_err(|_| err(path, "utc_offset_s out of range"))?,
                None => 0,
            };
            let t = if let Some(us) = o.get("unix_us") {
                let us = int_of(us, path)?;
                Time::from_unix_ns(us * 1000, off).ok_or_else(|| err(path, "time out of range"))?
            } else {
                let ms = i64::try_from(int_of(field(o, "unix_ms", path)?, path)?)
                    .map_err(|_| err(path, "unix_ms out of range"))?;
                Time::from_unix_ms(ms, off).map_err(|e| err(path, e))?
            };
            Doc::Time(t)
        }
        "tuple" => Doc::Tuple(seq(items(o, path)?, path)?),
        "list" => Doc::List(seq(items(o, path)?, path)?),
        "dict" => {
            let mut out: Vec<(Doc, Doc)> = Vec::new();
            for (i, pair) in items(o, path)?.iter().enumerate() {
                let p = format!("{path}.items[{i}]");
                let kv = pair
                    .as_array()
                    .filter(|a| a.len() == 2)
                    .ok_or_else(|| err(&p, "a dict item is a [key, value] pair"))?;
                let k = doc_at(&kv[0], &p)?;
                let v = doc_at(&kv[1], &p)?;
                match out.iter_mut().find(|(k2, _)| k2.py_eq(&k)) {
                    Some(e) => e.1 = v,
                    None => out.push((k, v)),
                }
            }
            Doc::Dict(out)
        }
        other => return Err(err(path, format!("unknown type {other:?}"))),
    }))
}

/// A key from JSON: a tuple, or a scalar (a 1-tuple), as centidb's `Key(x)`.
pub fn key_from_json(j: &Json) -> Result<Tuple, String> {
    let d = match j {
        // A plain JSON array is a key tuple here, as on the `strata key` command line.
        Json::Array(a) => Doc::Tuple(seq(a, "$")?),
        other => doc_from_json(other)?,
    };
    d.to_key().map_err(|e| e.to_string())
}

/// `{"t": "missing"}`.
pub fn missing() -> Json {
    json!({"t": "missing"})
}

/// Python's `datetime.isoformat()` of an aware datetime.
fn iso(t: &Time) -> String {
    let local = t.secs() + i64::from(t.offset_s());
    let days = local.div_euclid(86_400);
    let sod = local.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    let us = t.nanos() / 1000;
    let frac = if us != 0 {
        format!(".{us:06}")
    } else {
        String::new()
    };
    let off = t.offset_s();
    let sign = if off < 0 { '-' } else { '+' };
    let a = off.unsigned_abs();
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{frac}{sign}{:02}:{:02}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        a / 3600,
        a / 60 % 60
    )
}

fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A value in the typed format.
pub fn to_typed(d: &Doc) -> Json {
    match d {
        Doc::None => json!({"t": "null"}),
        Doc::Bool(b) => json!({"t": "bool", "v": b}),
        Doc::Int(i) => json!({"t": "int", "v": i.to_string()}),
        Doc::Float(f) => json!({
            "t": "f64",
            "bits": hex::encode(f.to_bits().to_be_bytes()),
            "repr": py27::float_repr(*f),
        }),
        Doc::Bytes(b) => json!({"t": "bytes", "hex": hex::encode(b)}),
        Doc::Text(s) => json!({"t": "text", "v": s, "utf8_hex": hex::encode(s.as_bytes())}),
        Doc::Uuid(u) => json!({"t": "uuid", "hex": hex::encode(u.as_bytes()), "v": u.to_string()}),
        Doc::Time(t) => {
            let mut o = json!({
                "t": "time",
                "utc_offset_s": t.offset_s(),
                "naive": false,
                "iso": iso(t),
            });
            match t.unix_ms_exact() {
                Some(ms) => o["unix_ms"] = json!(ms),
                None => o["unix_us"] = json!((t.unix_ns() / 1000).to_string()),
            }
            o
        }
        Doc::Tuple(v) => json!({"t": "tuple", "items": v.iter().map(to_typed).collect::<Vec<_>>()}),
        Doc::List(v) => json!({"t": "list", "items": v.iter().map(to_typed).collect::<Vec<_>>()}),
        Doc::Dict(items) => {
            let keys: Vec<&Doc> = items.iter().map(|(k, _)| k).collect();
            let order = py27::dict_order(&keys).unwrap_or_else(|| (0..items.len()).collect());
            let pairs: Vec<Json> = order
                .into_iter()
                .map(|i| json!([to_typed(&items[i].0), to_typed(&items[i].1)]))
                .collect();
            json!({"t": "dict", "items": pairs})
        }
    }
}

/// A key tuple in the typed format.
pub fn tuple_to_typed(t: &Tuple) -> Json {
    to_typed(&Doc::from_tuple(t))
}

/// A value as plain JSON (for people): bytes become hex strings, text stays text, dicts
/// keep their stored order (keys as text), times ISO 8601, UUIDs their usual form.
pub fn to_plain(d: &Doc) -> Json {
    match d {
        Doc::None => Json::Null,
        Doc::Bool(b) => json!(b),
        Doc::Int(i) => match i64::try_from(*i) {
            Ok(v) => json!(v),
            Err(_) => json!(i.to_string()),
        },
        Doc::Float(f) => serde_json::Number::from_f64(*f)
            .map_or_else(|| Json::String(py27::float_repr(*f)), Json::Number),
        Doc::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => json!(s),
            Err(_) => json!({"hex": hex::encode(b)}),
        },
        Doc::Text(s) => json!(s),
        Doc::Uuid(u) => json!(u.to_string()),
        Doc::Time(t) => json!(iso(t)),
        Doc::Tuple(v) | Doc::List(v) => Json::Array(v.iter().map(to_plain).collect()),
        Doc::Dict(items) => {
            // serde_json's map sorts keys; a list of pairs would keep the order but read
            // worse. Sorted keys it is (the json encoder sorts them too).
            let mut m = Map::new();
            for (k, v) in items {
                let key = match k {
                    Doc::Text(s) => s.clone(),
                    Doc::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                    other => other.to_string(),
                };
                m.insert(key, to_plain(v));
            }
            Json::Object(m)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_round_trip() {
        let j: Json = serde_json::from_str(
            r#"{"t":"dict","items":[[{"t":"bytes","hex":"6964"},{"t":"int","v":"1"}],
               [{"t":"text","v":"x","utf8_hex":"78"},{"t":"list","items":[{"t":"f64","bits":"3ff8000000000000","repr":"1.5"},{"t":"null"}]}]]}"#,
        )
        .unwrap();
        let d = doc_from_json(&j).unwrap();
        assert_eq!(doc_from_json(&to_typed(&d)).unwrap(), d);
        assert_eq!(from_json(&missing()).unwrap(), None);
        let t = Time::from_unix_ms(1377866096789, 3600).unwrap();
        assert_eq!(
            to_typed(&Doc::Time(t))["iso"],
            "2013-08-30T13:34:56.789000+01:00"
        );
        assert_eq!(
            key_from_json(&json!({"t": "int", "v": "5"})).unwrap().len(),
            1
        );
        assert!(key_from_json(&json!([1.5])).is_err());
    }
}
