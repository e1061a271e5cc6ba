//! The `json` encoder: the bytes of Python 2.7's
//! `json.JSONEncoder(separators=(',', ':'), sort_keys=True).encode(value)` (ASCII output,
//! `\uXXXX` escapes, shortest float repr), read back as `json.loads` does (every string is
//! `unicode`, objects keep their document order).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::Encoder;
use crate::doc::Doc;
use crate::error::{Error, Result};
use crate::py27::float_repr;

/// `make_json_encoder(sort_keys=True)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonEncoder;

impl Encoder for JsonEncoder {
    fn name(&self) -> &str {
        "json"
    }

    fn pack(&self, value: &Doc) -> Result<Vec<u8>> {
        let mut out = String::new();
        write_value(value, &mut out, 0)?;
        Ok(out.into_bytes())
    }

    fn unpack(&self, data: &[u8]) -> Result<Doc> {
        let mut de = serde_json::Deserializer::from_slice(data);
        let j: JsonDoc =
            JsonDoc::deserialize(&mut de).map_err(|e| Error::encoding("json", e.to_string()))?;
        de.end()
            .map_err(|e| Error::encoding("json", e.to_string()))?;
        Ok(j.0)
    }
}

fn err(reason: impl Into<String>) -> Error {
    Error::encoding("json", reason)
}

const MAX_DEPTH: usize = 200;

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
}

fn text_of_bytes(b: &[u8]) -> Result<&str> {
    // Python 2's json decodes a str as UTF-8.
    std::str::from_utf8(b).map_err(|_| err("a str that is not UTF-8 has no JSON form"))
}

/// How Python 2 orders dict keys of mixed kinds: `None`, numbers, then strings.
fn key_class(k: &Doc) -> u8 {
    match k {
        Doc::None => 0,
        Doc::Bool(_) | Doc::Int(_) | Doc::Float(_) => 1,
        _ => 2,
    }
}

fn key_text(k: &Doc) -> Result<String> {
    Ok(match k {
        Doc::Text(t) => t.clone(),
        Doc::Bytes(b) => text_of_bytes(b)?.to_owned(),
        Doc::Float(f) => float_text(*f)?,
        Doc::Bool(true) => "true".into(),
        Doc::Bool(false) => "false".into(),
        Doc::None => "null".into(),
        Doc::Int(i) => i.to_string(),
        other => {
            return Err(err(format!(
                "a {} is not a JSON object key",
                other.kind_name()
            )))
        }
    })
}

fn float_text(f: f64) -> Result<String> {
    if !f.is_finite() {
        // Python writes NaN / Infinity, which is not JSON: no reader (ours included) takes it.
        return Err(err(format!("{} has no JSON form", float_repr(f))));
    }
    Ok(float_repr(f))
}

fn sort_key(k: &Doc) -> (u8, f64, Vec<u8>) {
    match k {
        Doc::Bool(b) => (1, f64::from(u8::from(*b)), vec![]),
        Doc::Int(i) => (1, *i as f64, vec![]),
        Doc::Float(f) => (1, *f, vec![]),
        Doc::Text(t) => (2, 0.0, t.as_bytes().to_vec()),
        Doc::Bytes(b) => (2, 0.0, b.clone()),
        other => (key_class(other), 0.0, vec![]),
    }
}

fn write_value(v: &Doc, out: &mut String, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(err(format!("nesting deeper than {MAX_DEPTH}")));
    }
    match v {
        Doc::None => out.push_str("null"),
        Doc::Bool(true) => out.push_str("true"),
        Doc::Bool(false) => out.push_str("false"),
        Doc::Int(i) => out.push_str(&i.to_string()),
        Doc::Float(f) => out.push_str(&float_text(*f)?),
        Doc::Text(t) => write_str(t, out),
        Doc::Bytes(b) => write_str(text_of_bytes(b)?, out),
        Doc::Tuple(items) | Doc::List(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(it, out, depth + 1)?;
            }
            out.push(']');
        }
        Doc::Dict(items) => {
            let mut sorted: Vec<&(Doc, Doc)> = items.iter().collect();
            sorted.sort_by(|a, b| {
                sort_key(&a.0)
                    .partial_cmp(&sort_key(&b.0))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            out.push('{');
            for (i, (k, val)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(&key_text(k)?, out);
                out.push(':');
                write_value(val, out, depth + 1)?;
            }
            out.push('}');
        }
        Doc::Uuid(_) | Doc::Time(_) => {
            return Err(err(format!("a {} is not JSON serializable", v.kind_name())))
        }
    }
    Ok(())
}

/// A JSON document read into a [`Doc`] in document order.
struct JsonDoc(Doc);

/// serde_json hands numbers to a visitor as a one-entry map under this key when its
/// `arbitrary_precision` feature is on (as it is in this workspace).
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

fn number(s: &str) -> std::result::Result<Doc, String> {
    if s.contains(['.', 'e', 'E']) {
        s.parse::<f64>()
            .map(Doc::Float)
            .map_err(|_| format!("bad number {s}"))
    } else {
        s.parse::<i128>()
            .map(Doc::Int)
            .map_err(|_| format!("integer {s} is beyond 128 bits"))
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = JsonDoc;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> std::result::Result<JsonDoc, E> {
        Ok(JsonDoc(Doc::None))
    }

    fn visit_bool<E>(self, b: bool) -> std::result::Result<JsonDoc, E> {
        Ok(JsonDoc(Doc::Bool(b)))
    }

    fn visit_i64<E>(self, i: i64) -> std::result::Result<JsonDoc, E> {
        Ok(JsonDoc(Doc::Int(i128::from(i))))
    }

    fn visit_u64<E>(self, i: u64) -> std::result::Result<JsonDoc, E> {
        Ok(JsonDoc(Doc::Int(i128::from(i))))
    }

    fn visit_f64<E>(self, f: f64) -> std::result::Result<JsonDoc, E> {
        Ok(JsonDoc(Doc::Float(f)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<JsonDoc, E> {
        Ok(JsonDoc(Doc::Text(s.to_owned())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> std::result::Result<JsonDoc, E> {
        Ok(JsonDoc(Doc::Text(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> std::result::Result<JsonDoc, A::Error> {
        let mut v = Vec::new();
        while let Some(JsonDoc(d)) = a.next_element()? {
            v.push(d);
        }
        Ok(JsonDoc(Doc::List(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> std::result::Result<JsonDoc, A::Error> {
        let mut items: Vec<(Doc, Doc)> = Vec::new();
        while let Some(k) = a.next_key::<String>()? {
            if k == NUMBER_TOKEN && items.is_empty() {
                let s: String = a.next_value()?;
                return number(&s).map(JsonDoc).map_err(de::Error::custom);
            }
            let JsonDoc(v) = a.next_value()?;
            let k = Doc::Text(k);
            // A repeated key keeps its first position and takes the last value, as a dict.
            match items.iter_mut().find(|(k2, _)| *k2 == k) {
                Some(e) => e.1 = v,
                None => items.push((k, v)),
            }
        }
        Ok(JsonDoc(Doc::Dict(items)))
    }
}

impl<'de> Deserialize<'de> for JsonDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<JsonDoc, D::Error> {
        d.deserialize_any(DocVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Doc {
        Doc::Text(s.into())
    }

    fn b(s: &str) -> Doc {
        Doc::Bytes(s.as_bytes().to_vec())
    }

    #[test]
    fn writes_the_vectors_json() {
        // Vector 01, docs put(1).
        let v = Doc::Dict(vec![
            (
                b("nested"),
                Doc::Dict(vec![(b("a"), Doc::Int(2)), (b("b"), Doc::Int(1))]),
            ),
            (
                b("list"),
                Doc::List(vec![
                    Doc::Int(1),
                    Doc::Float(2.5),
                    Doc::None,
                    Doc::Bool(true),
                ]),
            ),
            (b("id"), Doc::Int(1)),
            (b("title"), t("Caf\u{e9} \u{65e5}\u{672c}")),
        ]);
        let got = JsonEncoder.pack(&v).unwrap();
        assert_eq!(
            String::from_utf8(got.clone()).unwrap(),
            r#"{"id":1,"list":[1,2.5,null,true],"nested":{"a":2,"b":1},"title":"Caf\u00e9 \u65e5\u672c"}"#
        );
        let back = JsonEncoder.unpack(&got).unwrap();
        let Doc::Dict(items) = &back else { panic!() };
        assert_eq!(items[0], (t("id"), Doc::Int(1)));
        assert_eq!(items[3], (t("title"), t("Caf\u{e9} \u{65e5}\u{672c}")));
    }

    #[test]
    fn escapes_and_numbers() {
        let v = Doc::List(vec![
            t("\"\\\n\u{1}\u{7f}\u{1f600}"),
            Doc::Float(1e16),
            Doc::Float(0.1),
            Doc::Int(-(1 << 70)),
        ]);
        let s = String::from_utf8(JsonEncoder.pack(&v).unwrap()).unwrap();
        assert_eq!(
            s,
            r#"["\"\\\n\u0001\u007f\ud83d\ude00",1e+16,0.1,-1180591620717411303424]"#
        );
        assert_eq!(
            JsonEncoder.unpack(s.as_bytes()).unwrap(),
            v.clone().into_list()
        );
        assert!(JsonEncoder.pack(&Doc::Float(f64::NAN)).is_err());
        assert!(JsonEncoder.pack(&Doc::Bytes(vec![0xff])).is_err());
        assert!(JsonEncoder.unpack(b"{\"a\":1} x").is_err());
        assert!(JsonEncoder.unpack(b"NaN").is_err());
    }

    impl Doc {
        fn into_list(self) -> Doc {
            match self {
                Doc::Tuple(v) => Doc::List(v),
                other => other,
            }
        }
    }
}
