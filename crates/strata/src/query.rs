//! Query (one partition, an optional sort-key condition) and Scan (the whole table, or one
//! segment of it), both paginated, both on one consistent snapshot per page.
//!
//! # Sort conditions compare values
//! A condition names values for a prefix of the sort fields (1 to all of them) and compares an
//! item's sort-key prefix with them field by field. When the fields it names are all ascending
//! or all descending, the operators mean what they say on values: `lt 5` is `< 5` and
//! `between [1, 9]` is `1 ≤ x ≤ 9` whatever the direction (on descending fields the condition
//! is turned into the mirrored key-order condition, [`SortCondition::in_key_order`]). When the
//! named fields mix directions, a value comparison would not be one contiguous key range, so the
//! condition compares **in the table's order** instead ("sorts before"; documented and tested).
//! `between` is inclusive at both ends. `begins_with` takes equal values for the leading fields
//! and a text or bytes prefix for the last one.
//!
//! # NULLs
//! A comparison with NULL is unknown and never matches, as in SQL and DynamoDB:
//! `lt`/`le`/`gt`/`ge`/`between` compare the item's sort prefix with the condition's values
//! like SQL compares rows — field by field, the first field that differs decides, and a NULL
//! met before that (in the item or in the condition) means no match. So on a single sort
//! field they never match an item whose value is NULL, whatever the field's direction and
//! NULL placement (placement orders results; it never makes NULL "less than 5"). On several
//! fields, `lt [1, 2]` matches `(0, NULL)` (decided by the first field) but not `(1, NULL)`
//! nor `(NULL, 0)`. `begins_with` never matches a NULL in its last named field.
//! `eq` is key identity (SQL's `IS NOT DISTINCT FROM`), the same equality as [`Table::get`]:
//! `eq [null]` matches exactly the items whose sort value is NULL — the one way to select them
//! with a Query — and `eq [5]` never matches NULL. The leading values of `begins_with` use
//! the same equality.
//!
//! # Pagination
//! A page holds at most `limit` items. When more items match, the page's `last_key` is the key
//! of its last item; passing it as `after` resumes exactly after it (in the page's direction).
//! `last_key` is `None` only when no matching item follows.

use std::cmp::Ordering;
use std::ops::Bound;

use strata_key::range::prefix_end;
use strata_key::Value;
use strata_lsm::{Direction, KeyRange};

use crate::error::{Error, Result};
use crate::item::Item;
use crate::keys::HASH_SPACE;
pub use crate::rows::Rows;
use crate::rows::{item_decoder, RowFilter};
use crate::table::{Key, Table};

/// Most segments a Scan may be split into.
pub const MAX_SEGMENTS: u32 = 1_000_000;

/// A condition on a prefix of the sort fields (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SortCondition {
    /// Prefix equal to the values.
    Eq(Vec<Value>),
    /// Prefix less than the values (value order; see the module docs).
    Lt(Vec<Value>),
    /// Prefix less than or equal.
    Le(Vec<Value>),
    /// Prefix greater than the values.
    Gt(Vec<Value>),
    /// Prefix greater than or equal.
    Ge(Vec<Value>),
    /// `lo <= prefix <= hi` (each bound compared on its own length).
    Between(Vec<Value>, Vec<Value>),
    /// Leading values equal, last field starts with the last value (text or bytes).
    BeginsWith(Vec<Value>),
}

/// A Query: one partition, optionally one sort condition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// The partition's values, one per partition field.
    pub partition: Vec<Value>,
    /// Optional sort-key condition.
    pub sort: Option<SortCondition>,
    /// Descending instead of the table's order.
    pub reverse: bool,
    /// At most this many items per page (`None`: all).
    pub limit: Option<usize>,
    /// Resume after this key (the `last_key` of the previous page).
    pub after: Option<Key>,
}

impl Query {
    /// A query of every item of a partition.
    pub fn new(partition: Vec<Value>) -> Query {
        Query {
            partition,
            ..Query::default()
        }
    }

    /// Sets the sort condition.
    pub fn sort(mut self, c: SortCondition) -> Query {
        self.sort = Some(c);
        self
    }

    /// Sets the direction.
    pub fn reverse(mut self, reverse: bool) -> Query {
        self.reverse = reverse;
        self
    }

    /// Sets the page size.
    pub fn limit(mut self, n: usize) -> Query {
        self.limit = Some(n);
        self
    }

    /// Resumes after a key.
    pub fn after(mut self, key: Option<Key>) -> Query {
        self.after = key;
        self
    }
}

/// A Scan: every item of the table in key order, or of one segment.
///
/// Segment `i` of `n` holds the partitions whose hash `h` (16 bits, see [`crate::keys`])
/// satisfies `h * n / 65536 == i`: segments are disjoint, cover the table, and each is one
/// contiguous key range. Partitions appear in hash order, and items inside a partition in
/// the table's sort order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Segment number, `0..segments`.
    pub segment: u32,
    /// Number of segments, `1..=1_000_000` (above 65,536 some segments are empty).
    pub segments: u32,
    /// At most this many items per page (`None`: all).
    pub limit: Option<usize>,
    /// Resume after this key (the `last_key` of the previous page of the same segment).
    pub after: Option<Key>,
}

impl Default for Scan {
    fn default() -> Self {
        Scan {
            segment: 0,
            segments: 1,
            limit: None,
            after: None,
        }
    }
}

impl Scan {
    /// The whole table.
    pub fn all() -> Scan {
        Scan::default()
    }

    /// Segment `segment` of `segments`.
    pub fn segment(segment: u32, segments: u32) -> Scan {
        Scan {
            segment,
            segments,
            ..Scan::default()
        }
    }

    /// Sets the page size.
    pub fn limit(mut self, n: usize) -> Scan {
        self.limit = Some(n);
        self
    }

    /// Resumes after a key.
    pub fn after(mut self, key: Option<Key>) -> Scan {
        self.after = key;
        self
    }
}

/// One page of results: [`Item`]s, or values of the caller's type ([`Table::query_as`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T = Item> {
    /// The items, in order.
    pub items: Vec<T>,
    /// Key of the last item when more items follow; pass it as `after`.
    pub last_key: Option<Key>,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page {
            items: Vec::new(),
            last_key: None,
        }
    }
}

/// SQL's row comparison of an item's sort prefix with condition values, in the table's order:
/// the first field that differs decides; a NULL met before that (in the item or in the
/// condition) makes the comparison unknown (`None`), and an unknown comparison never matches.
fn cmp_prefix(table: &Table, sort: &[&Value], v: &[Value]) -> Option<Ordering> {
    for ((f, a), b) in table.schema().sort.iter().zip(sort).zip(v) {
        if a.is_null() || b.is_null() {
            return None;
        }
        match f.cmp(a, b) {
            Ordering::Equal => {}
            o => return Some(o),
        }
    }
    Some(Ordering::Equal)
}

/// Key identity of an item's sort prefix and condition values (`IS NOT DISTINCT FROM`: a
/// NULL value equals a NULL): what `eq` and the leading values of `begins_with` mean.
fn same_prefix(sort: &[&Value], v: &[Value]) -> bool {
    sort.iter().zip(v).all(|(a, b)| *a == b)
}

fn starts_with(a: &Value, p: &Value) -> bool {
    match (a, p) {
        (Value::Text(a), Value::Text(p)) => a.starts_with(p.as_str()),
        (Value::Bytes(a), Value::Bytes(p)) => a.starts_with(p),
        _ => false,
    }
}

impl SortCondition {
    /// The condition in the table's key order: on sort fields that are all descending, the value
    /// operators are mirrored (`lt` ↔ `gt`, `le` ↔ `ge`, `between [lo, hi]` ↔ `[hi, lo]`); on
    /// all-ascending or mixed fields it is returned as is (see the module docs).
    pub fn in_key_order(&self, sort_fields: &[crate::schema::KeyField]) -> SortCondition {
        self.key_ordered(sort_fields).into_owned()
    }

    /// [`SortCondition::in_key_order`], borrowing `self` when it is already in key order (no
    /// copy of its values per Query).
    pub(crate) fn key_ordered(
        &self,
        sort_fields: &[crate::schema::KeyField],
    ) -> std::borrow::Cow<'_, SortCondition> {
        use std::borrow::Cow;
        use SortCondition::*;
        let n = self
            .values()
            .map(<[Value]>::len)
            .max()
            .unwrap_or(0)
            .min(sort_fields.len());
        let all_desc = n > 0
            && sort_fields[..n]
                .iter()
                .all(|f| f.order == crate::schema::Direction::Desc);
        if !all_desc {
            return Cow::Borrowed(self);
        }
        Cow::Owned(match self {
            Lt(v) => Gt(v.clone()),
            Le(v) => Ge(v.clone()),
            Gt(v) => Lt(v.clone()),
            Ge(v) => Le(v.clone()),
            Between(lo, hi) => Between(hi.clone(), lo.clone()),
            other => other.clone(),
        })
    }

    /// The condition's value lists (two for `between`), without allocating.
    fn values(&self) -> impl Iterator<Item = &[Value]> {
        let (a, b): (&[Value], Option<&[Value]>) = match self {
            SortCondition::Eq(v)
            | SortCondition::Lt(v)
            | SortCondition::Le(v)
            | SortCondition::Gt(v)
            | SortCondition::Ge(v)
            | SortCondition::BeginsWith(v) => (v, None),
            SortCondition::Between(a, b) => (a, Some(b)),
        };
        std::iter::once(a).chain(b)
    }

    /// Whether an item's sort values satisfy the condition (already in key order, see
    /// [`SortCondition::in_key_order`]).
    pub(crate) fn matches(&self, table: &Table, sort: &[&Value]) -> bool {
        use SortCondition::*;
        let cmp = |v: &[Value]| cmp_prefix(table, sort, v);
        match self {
            Eq(v) => same_prefix(sort, v),
            Lt(v) => cmp(v) == Some(Ordering::Less),
            Le(v) => matches!(cmp(v), Some(Ordering::Less | Ordering::Equal)),
            Gt(v) => cmp(v) == Some(Ordering::Greater),
            Ge(v) => matches!(cmp(v), Some(Ordering::Greater | Ordering::Equal)),
            Between(lo, hi) => {
                matches!(cmp(lo), Some(Ordering::Greater | Ordering::Equal))
                    && matches!(cmp(hi), Some(Ordering::Less | Ordering::Equal))
            }
            BeginsWith(v) => {
                let k = v.len() - 1;
                same_prefix(sort, &v[..k]) && starts_with(sort[k], &v[k])
            }
        }
    }
}

/// Smallest text greater than every text starting with `s` (code point order = UTF-8 order).
fn text_successor(s: &str) -> Option<String> {
    let mut chars: Vec<char> = s.chars().collect();
    while let Some(c) = chars.pop() {
        let mut u = c as u32 + 1;
        if u == 0xD800 {
            u = 0xE000;
        }
        if let Some(n) = char::from_u32(u) {
            chars.push(n);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

fn successor_value(v: &Value) -> Option<Value> {
    match v {
        Value::Text(s) => text_successor(s).map(Value::Text),
        Value::Bytes(b) => prefix_end(b).map(Value::Bytes),
        _ => None,
    }
}

fn end_of(prefix: &[u8]) -> Bound<Vec<u8>> {
    match prefix_end(prefix) {
        Some(e) => Bound::Excluded(e),
        None => Bound::Unbounded,
    }
}

/// Bytes that can follow a complete element inside a native key are tags, all in
/// `0x02..=0xFD` (ascending tags `0x02..=0x7F`, descending ones their complements). So the keys
/// whose leading elements are exactly those encoded in `b` all lie in `[b, b ‖ 0xFE)`. This
/// holds whether or not element encodings are prefix-free, so the ranges below never depend on
/// it; they are exact for a prefix-free code, and results are checked against the exact
/// condition anyway.
fn class_end(mut b: Vec<u8>) -> Vec<u8> {
    // In place: the bound's bytes are not needed without the `FE` (and `key_after` leaves
    // room for it).
    b.push(0xFE);
    b
}

impl Table {
    /// Key bytes of `(id, h, partition…, sort…)` from `base`, the encoding of
    /// `(id, h, partition…)`: the partition is encoded once per Query, not once per bound.
    fn sort_key_bytes(&self, base: &[u8], partition: &[Value], sort: &[Value]) -> Result<Vec<u8>> {
        self.def.layout.key_after(base, partition.len(), sort)
    }

    /// A key range holding every item that matches the query's partition and condition
    /// (possibly more, see [`class_end`]); `None` when it is empty.
    ///
    /// `base` is the encoding of `(id, h, partition…)`, which every key of the partition starts
    /// with.
    fn query_range(
        &self,
        p: &[Value],
        sort: Option<&SortCondition>,
        base: &[u8],
    ) -> Result<Option<KeyRange>> {
        use SortCondition::*;
        let b = |v: &[Value]| self.sort_key_bytes(base, p, v);
        // Owned copies of `base`, only for the bounds that are `base` itself.
        let whole = || base.to_vec();
        let inc = Bound::Included;
        let exc = |k: Vec<u8>| Bound::Excluded(class_end(k));
        let (start, end) = match sort {
            None => (inc(whole()), exc(whole())),
            Some(Eq(v)) => {
                let k = b(v)?;
                (inc(k.clone()), exc(k))
            }
            // One ascending NULL-first integer sort field (see `range_decides`): keys run
            // from the NULLs (tag 02) up through the integers in order, so the range starts
            // past the NULLs and ends at `v` (`lt`) or past it (`le`): exactly the matches.
            Some(c @ (Lt(v) | Le(v))) if self.one_int_sort_field() && int_values(v) => {
                let start = inc(class_end(b(&[Value::Null])?));
                let at = b(v)?;
                let end = match c {
                    Lt(_) => Bound::Excluded(at),
                    _ => exc(at),
                };
                (start, end)
            }
            Some(Lt(v)) | Some(Le(v)) => (inc(whole()), exc(b(v)?)),
            Some(Gt(v)) => (inc(class_end(b(v)?)), exc(whole())),
            Some(Ge(v)) => (inc(b(v)?), exc(whole())),
            Some(Between(lo, hi)) => (inc(b(lo)?), exc(b(hi)?)),
            Some(BeginsWith(v)) => {
                let k = v.len() - 1;
                let lead = b(&v[..k])?;
                let at_p = b(v)?;
                let succ = match successor_value(&v[k]) {
                    Some(s) => {
                        let mut w = v[..k].to_vec();
                        w.push(s);
                        Some(b(&w)?)
                    }
                    None => None,
                };
                // Values starting with p lie in [p, succ(p)) in value order.
                if self.schema().sort[k].order == crate::schema::Direction::Asc {
                    let end = match succ {
                        Some(s) => Bound::Excluded(s),
                        None => exc(lead),
                    };
                    (inc(at_p), end)
                } else {
                    let start = match succ {
                        Some(s) => inc(s),
                        None => inc(lead),
                    };
                    (start, exc(at_p))
                }
            }
        };
        let range = KeyRange { start, end };
        Ok((!is_empty(&range)).then_some(range))
    }

    /// True when every key of the partition inside [`Table::query_range`]'s range satisfies
    /// `c` (in key order), so that items need not be checked one by one. Only claimed for one
    /// ascending, NULL-first integer sort field and `eq` / `lt` / `le` / `gt` / `ge` /
    /// `between` on integers: the native encoding of integers is order-preserving and
    /// prefix-free (its tag carries the length), the key ends with that one element, and a
    /// NULL (tag `02`, below every integer tag) lies below each of these ranges — so
    /// `[enc(lo), enc(hi) ‖ FE)` holds exactly the integers in `[lo, hi]`, and the `lt` / `le`
    /// ranges start at `enc(NULL) ‖ FE`, past the partition's NULLs.
    fn range_decides(&self, c: &SortCondition) -> bool {
        use SortCondition::*;
        if !self.one_int_sort_field() {
            return false;
        }
        match c {
            Eq(v) | Gt(v) | Ge(v) | Lt(v) | Le(v) => int_values(v),
            Between(lo, hi) => int_values(lo) && int_values(hi),
            BeginsWith(_) => false,
        }
    }

    /// The table sorts by one ascending, NULL-first integer field (where the key range
    /// decides `eq`, `lt`, `le`, `gt`, `ge` and `between` on integers).
    fn one_int_sort_field(&self) -> bool {
        matches!(self.schema().sort.as_slice(), [f] if f.kind == strata_key::Kind::Int
            && f.order == crate::schema::Direction::Asc
            && f.nulls == crate::schema::Nulls::First)
    }

    fn check_condition(&self, c: &SortCondition) -> Result<()> {
        for v in c.values() {
            self.check_sort_prefix(v)?;
        }
        if let SortCondition::BeginsWith(v) = c {
            let k = v.len() - 1;
            let f = &self.schema().sort[k];
            if !matches!(v[k], Value::Text(_) | Value::Bytes(_)) {
                return Err(Error::invalid(
                    self.name(),
                    format!(
                        "begins_with needs a text or bytes value for sort field {:?}, got {}",
                        f.name,
                        v[k].kind()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// One page of a Query (see the module docs): at most `limit` items, in memory. To read
    /// a large result with bounded memory, iterate [`Table::query_rows`] instead.
    pub fn query(&self, q: &Query) -> Result<Page> {
        self.query_rows(q)?.into_page()
    }

    /// The items of a Query, read one at a time from one snapshot taken now (see [`Rows`]).
    /// Same semantics as [`Table::query`], including `limit`, `after` and the last key.
    pub fn query_rows(&self, q: &Query) -> Result<Rows> {
        self.query_rows_with(q, item_decoder)
    }

    /// One page of a Query with each item decoded straight into `T` (see
    /// [`crate::item_serde`]; no [`Item`] is built). Same semantics as [`Table::query`].
    pub fn query_as<T: serde::de::DeserializeOwned>(&self, q: &Query) -> Result<Page<T>> {
        self.query_rows_as(q)?.into_page()
    }

    /// The items of a Query decoded one at a time into `T` (the streaming form of
    /// [`Table::query_as`]; see [`Rows`]).
    pub fn query_rows_as<T: serde::de::DeserializeOwned>(&self, q: &Query) -> Result<Rows<T>> {
        self.query_rows_with(q, crate::item_serde::decode_owned::<T>)
    }

    pub(crate) fn query_rows_with<T>(
        &self,
        q: &Query,
        decode: fn(&[u8]) -> Result<T>,
    ) -> Result<Rows<T>> {
        self.check_partition(&q.partition)?;
        if let Some(c) = &q.sort {
            self.check_condition(c)?;
        }
        check_limit(self, q.limit)?;
        let sort = q
            .sort
            .as_ref()
            .map(|c| c.key_ordered(&self.def.schema.sort));
        let (_, prefix) = self.def.layout.partition_prefix(&q.partition)?;
        let Some(mut range) = self.query_range(&q.partition, sort.as_deref(), &prefix)? else {
            return Ok(Rows::empty(self, decode));
        };
        let dir = if q.reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        };
        if let Some(after) = &q.after {
            self.check_key(after)?;
            if after.partition != q.partition {
                return Err(Error::invalid(
                    self.name(),
                    "the after key is not in the queried partition",
                ));
            }
            narrow(&mut range, self.encode_key(after)?.bytes, dir);
        }
        if is_empty(&range) {
            return Ok(Rows::empty(self, decode));
        }
        // Where the key range alone decides the condition, items are not re-checked; and
        // without a condition to check, neither is the partition: every range of
        // `query_range` (and `narrow` only shrinks it) lies in `[prefix, prefix ‖ FE)`, and a
        // key `k` in it starts with `prefix` (were `k` to differ from `prefix` at some byte
        // `i < prefix.len()`, `k >= prefix` puts `k[i]` above `prefix[i]` and `k` above
        // `prefix ‖ FE`; a proper prefix of `prefix` lies below it).
        let sort = sort
            .filter(|c| !self.range_decides(c))
            .map(std::borrow::Cow::into_owned);
        let filter = match sort {
            None => RowFilter::All,
            sort => RowFilter::Query { prefix, sort },
        };
        self.rows(range, dir, q.limit, filter, decode)
    }

    /// The segment (of `segments`) that holds a partition.
    pub fn segment_of(&self, partition: &[Value], segments: u32) -> Result<u32> {
        let h = self.partition_hash(partition)?;
        Ok(((h as u64 * segments.max(1) as u64) / HASH_SPACE as u64) as u32)
    }

    /// One page of a Scan (see [`Scan`]): at most `limit` items, in memory. To read a large
    /// table with bounded memory, iterate [`Table::scan_rows`] instead.
    pub fn scan(&self, s: &Scan) -> Result<Page> {
        self.scan_rows(s)?.into_page()
    }

    /// The items of a Scan, read one at a time from one snapshot taken now (see [`Rows`]).
    /// Same semantics as [`Table::scan`], including `limit`, `after` and the last key.
    pub fn scan_rows(&self, s: &Scan) -> Result<Rows> {
        self.scan_rows_with(s, item_decoder)
    }

    /// One page of a Scan with each item decoded straight into `T` (see
    /// [`crate::item_serde`]). Same semantics as [`Table::scan`].
    pub fn scan_as<T: serde::de::DeserializeOwned>(&self, s: &Scan) -> Result<Page<T>> {
        self.scan_rows_as(s)?.into_page()
    }

    /// The items of a Scan decoded one at a time into `T` (the streaming form of
    /// [`Table::scan_as`]; see [`Rows`]).
    pub fn scan_rows_as<T: serde::de::DeserializeOwned>(&self, s: &Scan) -> Result<Rows<T>> {
        self.scan_rows_with(s, crate::item_serde::decode_owned::<T>)
    }

    pub(crate) fn scan_rows_with<T>(
        &self,
        s: &Scan,
        decode: fn(&[u8]) -> Result<T>,
    ) -> Result<Rows<T>> {
        if s.segments == 0 || s.segments > MAX_SEGMENTS || s.segment >= s.segments {
            return Err(Error::invalid(
                self.name(),
                format!(
                    "segment {} of {} segments: need 1 <= segments <= {MAX_SEGMENTS} and segment < segments",
                    s.segment, s.segments
                ),
            ));
        }
        check_limit(self, s.limit)?;
        let n = s.segments as u64;
        let space = HASH_SPACE as u64;
        let lo = (s.segment as u64 * space).div_ceil(n);
        let hi = ((s.segment as u64 + 1) * space).div_ceil(n);
        if lo == hi {
            return Ok(Rows::empty(self, decode));
        }
        let start = Bound::Included(self.def.layout.hash_prefix(lo as u32)?);
        let end = if hi >= space {
            end_of(&self.def.layout.table_prefix()?)
        } else {
            Bound::Excluded(self.def.layout.hash_prefix(hi as u32)?)
        };
        let mut range = KeyRange { start, end };
        if let Some(after) = &s.after {
            self.check_key(after)?;
            let seg = self.segment_of(&after.partition, s.segments)?;
            if seg != s.segment {
                return Err(Error::invalid(
                    self.name(),
                    format!("the after key belongs to segment {seg}, not {}", s.segment),
                ));
            }
            narrow(
                &mut range,
                self.encode_key(after)?.bytes,
                Direction::Forward,
            );
        }
        if is_empty(&range) {
            return Ok(Rows::empty(self, decode));
        }
        self.rows(range, Direction::Forward, s.limit, RowFilter::All, decode)
    }

    fn rows<T>(
        &self,
        range: KeyRange,
        dir: Direction,
        limit: Option<usize>,
        filter: RowFilter,
        decode: fn(&[u8]) -> Result<T>,
    ) -> Result<Rows<T>> {
        // The engine's cursor reads one snapshot taken now (on the striped LSM, of the one
        // stripe a single-partition range touches); checking the table after taking it means a
        // table dropped later is still seen whole.
        let cursor = self.db.engine.cursor(range, dir)?;
        self.check_live()?;
        Ok(Rows::new(self, cursor, filter, limit, decode))
    }
}

/// A condition's values are one integer.
fn int_values(v: &[Value]) -> bool {
    matches!(v, [Value::Int(_)])
}

fn check_limit(t: &Table, limit: Option<usize>) -> Result<()> {
    if limit == Some(0) {
        return Err(Error::invalid(t.name(), "limit must be at least 1"));
    }
    Ok(())
}

/// True when no key can lie in the range.
fn is_empty(r: &KeyRange) -> bool {
    match (&r.start, &r.end) {
        (Bound::Included(s), Bound::Included(e)) => s > e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => {
            s >= e
        }
        _ => false,
    }
}

/// Restricts `range` to the keys strictly after `after` in direction `dir`.
fn narrow(range: &mut KeyRange, after: Vec<u8>, dir: Direction) {
    match dir {
        Direction::Forward => {
            let tighter = match &range.start {
                Bound::Unbounded => true,
                Bound::Included(s) | Bound::Excluded(s) => after >= *s,
            };
            if tighter {
                range.start = Bound::Excluded(after);
            }
        }
        Direction::Reverse => {
            let tighter = match &range.end {
                Bound::Unbounded => true,
                Bound::Included(e) | Bound::Excluded(e) => after <= *e,
            };
            if tighter {
                range.end = Bound::Excluded(after);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_successor_is_least_upper_bound_of_prefix() {
        assert_eq!(text_successor("ab").as_deref(), Some("ac"));
        assert_eq!(text_successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(text_successor("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(text_successor("\u{10FFFF}"), None);
        assert_eq!(text_successor(""), None);
    }
}
