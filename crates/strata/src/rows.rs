//! [`Rows`]: the items of a Query or Scan, decoded one at a time from one engine snapshot (the
//! streaming form of [`crate::Page`]).
//!
//! Rows read the engine through a cursor: keys and values are borrowed from it, the partition
//! of a Query is checked on the key bytes, a sort condition on the few attributes it needs
//! (read in place), and only the items kept are decoded — into an [`Item`], or straight into
//! the caller's type ([`crate::Table::query_as`]).

use strata_key::Value;
use strata_lsm::Cursor;

use crate::error::Result;
use crate::item::Item;
use crate::item_codec::{decode_item, ItemRef};
use crate::query::{Page, SortCondition};
use crate::table::{Key, Table};

/// Which items of a key range a [`Rows`] returns.
pub(crate) enum RowFilter {
    /// Every item (a Scan).
    All,
    /// The items of one partition that satisfy the (key-order) condition.
    Query {
        /// Encoding of `(id, h, partition…)`: every key of the partition starts with it.
        prefix: Vec<u8>,
        sort: Option<SortCondition>,
    },
}

impl RowFilter {
    /// Whether the pair `(key, value)` the cursor stands on is kept (a Scan keeps every pair).
    #[inline]
    fn keep(&self, table: &Table, key: &[u8], value: &[u8]) -> Result<bool> {
        let RowFilter::Query { prefix, sort } = self else {
            return Ok(true);
        };
        // The native codec is self-delimiting: a key that starts with the encoding of
        // (id, h, partition…) has exactly those leading elements.
        if !key.starts_with(prefix) {
            return Ok(false);
        }
        let Some(cond) = sort else { return Ok(true) };
        Self::keep_sort(table, cond, value)
    }

    /// Whether an item of the partition satisfies the sort condition `c`.
    fn keep_sort(table: &Table, c: &SortCondition, value: &[u8]) -> Result<bool> {
        let item = ItemRef::new(value)?;
        let fields = &table.schema().sort;
        if let [f] = fields.as_slice() {
            // One sort field (the common case): no vectors to build.
            return Ok(match item.value(&f.name)? {
                Some(v) => c.matches(table, &[&v]),
                None => false,
            });
        }
        let mut vals: Vec<Value> = Vec::with_capacity(fields.len());
        for f in fields {
            match item.value(&f.name)? {
                Some(v) => vals.push(v),
                None => return Ok(false),
            }
        }
        let refs: Vec<&Value> = vals.iter().collect();
        Ok(c.matches(table, &refs))
    }
}

/// The items of a Query or Scan, decoded one at a time from one engine snapshot: memory stays
/// bounded however many items match. Yields at most the request's `limit` items; once it has
/// returned `None`, [`Rows::last_key`] says whether more matching items follow (the `last_key`
/// of a [`Page`]). An error ends the iteration.
///
/// `T` is what each item is decoded into: an [`Item`], or a type of the caller's
/// ([`crate::Table::query_rows_as`], [`crate::Table::scan_rows_as`]).
pub struct Rows<T = Item> {
    table: Table,
    /// `None` once exhausted (or after an error).
    cursor: Option<Box<dyn Cursor>>,
    /// The cursor stands on a pair not yet looked at.
    fresh: bool,
    filter: RowFilter,
    /// Items still to return before the limit.
    remaining: usize,
    /// Engine key of the item that reached the limit, until a further match is found.
    pending_key: Option<Vec<u8>>,
    last_key: Option<Key>,
    decode: fn(&[u8]) -> Result<T>,
}

impl<T> std::fmt::Debug for Rows<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows")
            .field("table", &self.table.name())
            .field("remaining", &self.remaining)
            .field("last_key", &self.last_key)
            .finish()
    }
}

impl<T> Rows<T> {
    pub(crate) fn new(
        table: &Table,
        cursor: Box<dyn Cursor>,
        filter: RowFilter,
        limit: Option<usize>,
        decode: fn(&[u8]) -> Result<T>,
    ) -> Rows<T> {
        Rows {
            table: table.clone(),
            cursor: Some(cursor),
            fresh: true,
            filter,
            remaining: limit.unwrap_or(usize::MAX),
            pending_key: None,
            last_key: None,
            decode,
        }
    }

    pub(crate) fn empty(table: &Table, decode: fn(&[u8]) -> Result<T>) -> Rows<T> {
        Rows {
            table: table.clone(),
            cursor: None,
            fresh: false,
            filter: RowFilter::All,
            remaining: 0,
            pending_key: None,
            last_key: None,
            decode,
        }
    }

    /// After the iteration ended (`next` returned `None`): the key of the last item returned
    /// when the limit cut the result short and more matching items follow; pass it as `after`
    /// to resume. `None` while items remain to be read, and when nothing follows.
    pub fn last_key(&self) -> Option<&Key> {
        self.last_key.as_ref()
    }

    /// Positions the cursor on the next pair the filter keeps; false at the end (the look-ahead
    /// once the limit is reached: does one more matching item follow).
    fn advance(&mut self) -> Result<bool> {
        let Some(c) = self.cursor.as_deref_mut() else {
            return Ok(false);
        };
        loop {
            let pair = if std::mem::take(&mut self.fresh) {
                c.entry()
            } else {
                c.next_entry()?
            };
            let Some((key, value)) = pair else {
                self.cursor = None;
                return Ok(false);
            };
            if self.filter.keep(&self.table, key, value)? {
                return Ok(true);
            }
        }
    }
}

/// First capacity of a collected page without a limit (or with a larger one).
const PAGE_START: usize = 128;

impl<T> Rows<T> {
    /// Collects the items into a [`Page`].
    pub fn into_page(self) -> Result<Page<T>> {
        let (items, last_key) = self.collect_page()?;
        Ok(Page { items, last_key })
    }

    /// Collects the items and the last key (see [`Rows::last_key`]).
    pub fn collect_page(mut self) -> Result<(Vec<T>, Option<Key>)> {
        // Sized for the limit when there is one, else for a short page (the vector grows as
        // needed): a large first allocation would cost more than the rows of a small result
        // (glibc consolidates its free lists whenever a chunk of 64 KiB or more is freed).
        let mut items = Vec::with_capacity(self.remaining.min(PAGE_START));
        for item in self.by_ref() {
            items.push(item?);
        }
        Ok((items, self.last_key))
    }
}

impl<T> Iterator for Rows<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        if self.remaining == 0 {
            // The limit is reached: one more matching item means the page has a last key.
            let more = self.advance();
            self.cursor = None;
            return match more {
                Ok(true) => {
                    let pending = self.pending_key.take()?;
                    match self.table.decode_engine_key(&pending) {
                        Ok(k) => self.last_key = Some(k),
                        Err(e) => return Some(Err(e)),
                    }
                    None
                }
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            };
        }
        // The cursor's step returns the pair (one call through the cursor and one walk down
        // the engine's iterator layers per pair); the item is decoded straight into the
        // result, and only the item that reaches the limit keeps its engine key (`last_key`).
        let c = self.cursor.as_deref_mut()?;
        loop {
            let pair = if std::mem::take(&mut self.fresh) {
                Ok(c.entry())
            } else {
                c.next_entry()
            };
            let (key, value) = match pair {
                Ok(Some(p)) => p,
                Ok(None) => {
                    self.cursor = None;
                    return None;
                }
                Err(e) => {
                    self.cursor = None;
                    return Some(Err(e.into()));
                }
            };
            match self.filter.keep(&self.table, key, value) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    self.cursor = None;
                    return Some(Err(e));
                }
            }
            let item = (self.decode)(value);
            match &item {
                Ok(_) => {
                    self.remaining -= 1;
                    if self.remaining == 0 {
                        self.pending_key = Some(key.to_vec());
                    }
                }
                Err(_) => self.cursor = None,
            }
            return Some(item);
        }
    }
}

/// Decodes stored item bytes into an [`Item`] (the default decoder of [`Rows`]).
pub(crate) fn item_decoder(bytes: &[u8]) -> Result<Item> {
    decode_item(bytes)
}
