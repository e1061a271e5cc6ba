//! Items: attribute maps whose values are the key types of `strata-key` plus lists, maps
//! (nested documents) and sets.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};

use strata_key::{Kind, Value};

/// One attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// A scalar of a key type (or a tuple of them).
    Value(Value),
    /// A list of attributes (a JSON array).
    List(Vec<Attr>),
    /// A nested map (a JSON object).
    Map(Item),
    /// A set of scalars of one kind (DynamoDB's `SS`, `NS`, `BS`): never empty, no duplicates,
    /// order not significant (kept in value order).
    Set(Set),
}

impl Attr {
    /// The scalar, when this is one.
    pub fn as_value(&self) -> Option<&Value> {
        match self {
            Attr::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Short type name for error messages: a key kind, `list`, `map` or `set`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Attr::Value(v) => v.kind().name(),
            Attr::List(_) => "list",
            Attr::Map(_) => "map",
            Attr::Set(_) => "set",
        }
    }
}

/// Why values do not make a [`Set`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    /// A set has at least one element.
    #[error("a set cannot be empty")]
    Empty,
    /// Every element of a set has the same kind.
    #[error("a set holds values of one kind, found {first} and {other}")]
    MixedKinds {
        /// Kind of the first element.
        first: Kind,
        /// Another kind found.
        other: Kind,
    },
    /// Sets hold scalars: no tuples, and no NULL.
    #[error("a set cannot hold a {0} value")]
    BadKind(Kind),
    /// [`Set::from_unique`] was given the same value twice.
    #[error("a set cannot hold duplicates ({0})")]
    Duplicate(String),
}

/// A non-empty set of scalar values of one kind, kept sorted by value ([`Value`]'s order), so
/// that two equal sets have one representation (and one encoding).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Set(Vec<Value>);

impl Set {
    fn check(values: &[Value]) -> Result<(), SetError> {
        let first = values.first().ok_or(SetError::Empty)?.kind();
        if matches!(first, Kind::Null | Kind::Tuple) {
            return Err(SetError::BadKind(first));
        }
        if let Some(v) = values.iter().find(|v| v.kind() != first) {
            return Err(SetError::MixedKinds {
                first,
                other: v.kind(),
            });
        }
        Ok(())
    }

    /// A set of `values`; duplicates are merged.
    ///
    /// ```
    /// use strata::Set;
    /// let s = Set::new(vec!["b".into(), "a".into(), "b".into()]).unwrap();
    /// assert_eq!(s.len(), 2);
    /// assert!(Set::new(vec![]).is_err());
    /// ```
    pub fn new(mut values: Vec<Value>) -> Result<Set, SetError> {
        Set::check(&values)?;
        values.sort();
        values.dedup();
        Ok(Set(values))
    }

    /// A set of `values`, refusing duplicates (as DynamoDB does for sets in requests).
    pub fn from_unique(mut values: Vec<Value>) -> Result<Set, SetError> {
        Set::check(&values)?;
        values.sort();
        if let Some(w) = values.windows(2).find(|w| w[0] == w[1]) {
            return Err(SetError::Duplicate(w[0].to_string()));
        }
        Ok(Set(values))
    }

    /// A set from values already strictly ascending and of one scalar kind (as decoded).
    pub(crate) fn from_sorted(values: Vec<Value>) -> Result<Set, SetError> {
        Set::check(&values)?;
        if let Some(w) = values.windows(2).find(|w| w[0] >= w[1]) {
            return Err(SetError::Duplicate(w[1].to_string()));
        }
        Ok(Set(values))
    }

    /// The kind of every element.
    pub fn kind(&self) -> Kind {
        self.0[0].kind()
    }

    /// The elements, in value order.
    pub fn values(&self) -> &[Value] {
        &self.0
    }

    /// Number of elements (at least 1).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether `v` is an element.
    pub fn contains(&self, v: &Value) -> bool {
        self.0.binary_search(v).is_ok()
    }

    /// The elements, in value order, by value.
    pub fn into_values(self) -> Vec<Value> {
        self.0
    }

    /// The union of two sets of the same kind (`None` when the kinds differ).
    pub fn union(&self, other: &Set) -> Option<Set> {
        if self.kind() != other.kind() {
            return None;
        }
        let mut v = Vec::with_capacity(self.len() + other.len());
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => match x.cmp(y) {
                    std::cmp::Ordering::Less => v.push(a.next()?.clone()),
                    std::cmp::Ordering::Greater => v.push(b.next()?.clone()),
                    std::cmp::Ordering::Equal => {
                        v.push(a.next()?.clone());
                        b.next();
                    }
                },
                (Some(_), None) => v.extend(a.by_ref().cloned()),
                (None, Some(_)) => v.extend(b.by_ref().cloned()),
                (None, None) => break,
            }
        }
        Some(Set(v))
    }

    /// The elements of `self` not in `other`; `None` when nothing is left (a set is never
    /// empty).
    pub fn difference(&self, other: &Set) -> Option<Set> {
        let v: Vec<Value> = self
            .0
            .iter()
            .filter(|x| !other.contains(x))
            .cloned()
            .collect();
        (!v.is_empty()).then_some(Set(v))
    }
}

impl From<Set> for Attr {
    fn from(s: Set) -> Attr {
        Attr::Set(s)
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
