//! Items: attribute maps whose values are the key types of `strata-key` plus lists and maps
//! (nested documents).

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

use strata_key::Value;

/// One attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// A scalar of a key type (or a tuple of them).
    Value(Value),
    /// A list of attributes (a JSON array).
    List(Vec<Attr>),
    /// A nested map (a JSON object).
    Map(Item),
}

impl Attr {
    /// The scalar, when this is one.
    pub fn as_value(&self) -> Option<&Value> {
        match self {
            Attr::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Short type name for error messages: a key kind, `list` or `map`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Attr::Value(v) => v.kind().name(),
            Attr::List(_) => "list",
            Attr::Map(_) => "map",
        }
    }
}

impl<T: Into<Value>> From<T> for Attr {
    fn from(v: T) -> Attr {
        Attr::Value(v.into())
    }
}

/// An item: attribute name → value, in name order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Item(pub BTreeMap<String, Attr>);

impl Item {
    /// An empty item.
    pub fn new() -> Item {
        Item::default()
    }

    /// Adds an attribute; returns `self` for chaining.
    ///
    /// ```
    /// use strata::{Attr, Item};
    /// let it = Item::new().with("user", "u1").with("ts", 5);
    /// assert_eq!(it.get("ts"), Some(&Attr::from(5)));
    /// ```
    pub fn with(mut self, name: impl Into<String>, value: impl Into<Attr>) -> Item {
        self.0.insert(name.into(), value.into());
        self
    }

    /// The scalar value of attribute `name`, when present and scalar.
    pub fn value(&self, name: &str) -> Option<&Value> {
        self.0.get(name).and_then(Attr::as_value)
    }
}

impl Deref for Item {
    type Target = BTreeMap<String, Attr>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Item {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl From<BTreeMap<String, Attr>> for Item {
    fn from(m: BTreeMap<String, Attr>) -> Item {
        Item(m)
    }
}

impl<K: Into<String>, V: Into<Attr>> FromIterator<(K, V)> for Item {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Item {
        Item(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl From<Item> for Attr {
    fn from(m: Item) -> Attr {
        Attr::Map(m)
    }
}
