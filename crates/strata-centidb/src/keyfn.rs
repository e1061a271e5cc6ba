//! Key functions, index functions and batch groupers.
//!
//! The original takes Python callables; here they are Rust closures, and [`FnSpec`] gives
//! the common ones as data (the form the vectors and the command line use, which can be
//! saved and restored): `v[i]`, `(v[i], v[j], …)`, `v["name"]` and lists of those.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::doc::Doc;

/// A function of a record value (key function, index function or grouper). An index
/// function's `Doc::None` means "no entry", a `Doc::List` one entry per element.
pub type ValueFn = Arc<dyn Fn(&Doc) -> Result<Doc, String> + Send + Sync>;

/// A function given as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fn", rename_all = "lowercase")]
pub enum FnSpec {
    /// `v[index]` of a tuple or list (negative counts from the end).
    Item {
        /// The position.
        index: i64,
    },
    /// `(v[i], v[j], …)`.
    Items {
        /// The positions.
        indices: Vec<i64>,
    },
    /// `v[name]` of a dict (the key as `str` or `unicode`).
    Field {
        /// The dict key.
        name: String,
    },
    /// `[f(v), g(v), …]`: a list (one index entry per element).
    List {
        /// The functions.
        of: Vec<FnSpec>,
    },
}

impl FnSpec {
    /// Applies the function.
    pub fn eval(&self, v: &Doc) -> Result<Doc, String> {
        match self {
            FnSpec::Item { index } => v
                .item(*index)
                .cloned()
                .ok_or_else(|| format!("{} has no item {index}", v.kind_name())),
            FnSpec::Items { indices } => indices
                .iter()
                .map(|&i| {
                    v.item(i)
                        .cloned()
                        .ok_or_else(|| format!("{} has no item {i}", v.kind_name()))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Doc::Tuple),
            FnSpec::Field { name } => v
                .field(name)
                .cloned()
                .ok_or_else(|| format!("{} has no field {name:?}", v.kind_name())),
            FnSpec::List { of } => of
                .iter()
                .map(|f| f.eval(v))
                .collect::<Result<Vec<_>, _>>()
                .map(Doc::List),
        }
    }

    /// The function as a closure.
    pub fn to_fn(&self) -> ValueFn {
        let spec = self.clone();
        Arc::new(move |v: &Doc| spec.eval(v))
    }

    /// Parses the command line form: `item:0`, `items:0,1`, `field:name`, or JSON
    /// (`{"fn":"field","name":"id"}`).
    pub fn parse(s: &str) -> Result<FnSpec, String> {
        let s = s.trim();
        if s.starts_with('{') {
            return serde_json::from_str(s).map_err(|e| format!("function {s:?}: {e}"));
        }
        let (kind, arg) = s
            .split_once(':')
            .ok_or_else(|| format!("function {s:?}: expected item:N, items:N,M or field:NAME"))?;
        let int = |t: &str| {
            t.trim()
                .parse::<i64>()
                .map_err(|_| format!("function {s:?}: {t:?} is not an integer"))
        };
        match kind {
            "item" => Ok(FnSpec::Item { index: int(arg)? }),
            "items" => Ok(FnSpec::Items {
                indices: arg.split(',').map(int).collect::<Result<_, _>>()?,
            }),
            "field" => Ok(FnSpec::Field { name: arg.into() }),
            other => Err(format!(
                "function {s:?}: unknown kind {other:?} (item, items, field)"
            )),
        }
    }
}

impl fmt::Display for FnSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FnSpec::Item { index } => write!(f, "item:{index}"),
            FnSpec::Items { indices } => {
                let s: Vec<String> = indices.iter().map(i64::to_string).collect();
                write!(f, "items:{}", s.join(","))
            }
            FnSpec::Field { name } => write!(f, "field:{name}"),
            FnSpec::List { .. } => {
                f.write_str(&serde_json::to_string(self).map_err(|_| fmt::Error)?)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_evaluate_and_parse() {
        let v = Doc::Tuple(vec![Doc::Int(1), Doc::Text("a".into())]);
        assert_eq!(
            FnSpec::parse("item:1").unwrap().eval(&v),
            Ok(Doc::Text("a".into()))
        );
        assert_eq!(
            FnSpec::parse("item:-1").unwrap().eval(&v),
            Ok(Doc::Text("a".into()))
        );
        assert_eq!(
            FnSpec::parse("items:1,0").unwrap().eval(&v),
            Ok(Doc::Tuple(vec![Doc::Text("a".into()), Doc::Int(1)]))
        );
        assert!(FnSpec::parse("item:5").unwrap().eval(&v).is_err());
        let d = Doc::Dict(vec![(Doc::Bytes(b"id".to_vec()), Doc::Int(7))]);
        let f: FnSpec = serde_json::from_str(r#"{"fn":"field","name":"id"}"#).unwrap();
        assert_eq!(f.eval(&d), Ok(Doc::Int(7)));
        let l: FnSpec =
            serde_json::from_str(r#"{"fn":"list","of":[{"fn":"field","name":"id"}]}"#).unwrap();
        assert_eq!(l.eval(&d), Ok(Doc::List(vec![Doc::Int(7)])));
        assert_eq!(FnSpec::parse(&l.to_string()).unwrap(), l);
        assert!(FnSpec::parse("bogus").is_err());
    }
}
