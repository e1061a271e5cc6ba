//! [`Rows`]: the items of a Query or Scan, decoded one at a time from one engine snapshot (the
//! streaming form of [`crate::Page`]).

use strata_key::Value;
use strata_lsm::KvIter;

use crate::error::{Error, Result};
use crate::item::Item;
use crate::item_codec::decode_item;
use crate::query::{Page, SortCondition};
use crate::table::{Key, Table};

/// Which items of a key range a [`Rows`] returns.
pub(crate) enum RowFilter {
    /// Every item (a Scan).
    All,
    /// The items of one partition that satisfy the (key-order) condition.
    Query {
        partition: Vec<Value>,
        sort: Option<SortCondition>,
    },
}

impl RowFilter {
    fn keep(&self, table: &Table, item: &Item) -> bool {
        let RowFilter::Query { partition, sort } = self else {
            return true;
        };
        let schema = table.schema();
        let same_partition = schema
            .partition
            .iter()
            .zip(partition)
            .all(|(f, v)| item.value(&f.name) == Some(v));
        if !same_partition {
            return false;
        }
        let Some(c) = sort else { return true };
        let mut sort_vals: Vec<&Value> = Vec::with_capacity(schema.sort.len());
        for f in &schema.sort {
            match item.value(&f.name) {
                Some(v) => sort_vals.push(v),
                None => return false,
            }
        }
        c.matches(table, &sort_vals)
    }
}

/// The items of a Query or Scan, decoded one at a time from one engine snapshot: memory stays
/// bounded however many items match. Yields at most the request's `limit` items; once it has
/// returned `None`, [`Rows::last_key`] says whether more matching items follow (the `last_key`
/// of a [`Page`]). An error ends the iteration.
pub struct Rows {
    table: Table,
    /// `None` once exhausted (or after an error).
    iter: Option<KvIter>,
    filter: RowFilter,
    /// Items still to return before the limit.
    remaining: usize,
    /// Key of the item that reached the limit, until a further match is found.
    pending_key: Option<Key>,
    last_key: Option<Key>,
}

impl std::fmt::Debug for Rows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rows")
            .field("table", &self.table.name())
            .field("remaining", &self.remaining)
            .field("last_key", &self.last_key)
            .finish()
    }
}

impl Rows {
    pub(crate) fn new(
        table: &Table,
        iter: KvIter,
        filter: RowFilter,
        limit: Option<usize>,
    ) -> Rows {
        Rows {
            table: table.clone(),
            iter: Some(iter),
            filter,
            remaining: limit.unwrap_or(usize::MAX),
            pending_key: None,
            last_key: None,
        }
    }

    pub(crate) fn empty(table: &Table) -> Rows {
        Rows {
            table: table.clone(),
            iter: None,
            filter: RowFilter::All,
            remaining: 0,
            pending_key: None,
            last_key: None,
        }
    }

    /// After the iteration ended (`next` returned `None`): the key of the last item returned
    /// when the limit cut the result short and more matching items follow; pass it as `after`
    /// to resume. `None` while items remain to be read, and when nothing follows.
    pub fn last_key(&self) -> Option<&Key> {
        self.last_key.as_ref()
    }

    /// Collects the items into a [`Page`].
    pub fn into_page(mut self) -> Result<Page> {
        let mut items = Vec::new();
        for item in self.by_ref() {
            items.push(item?);
        }
        Ok(Page {
            items,
            last_key: self.last_key,
        })
    }

    /// The next item of the key range that the filter keeps.
    fn next_match(&mut self) -> Option<Result<Item>> {
        let iter = self.iter.as_mut()?;
        for kv in iter {
            let item = match kv {
                Ok((_, v)) => decode_item(&v),
                Err(e) => Err(e.into()),
            };
            match item {
                Ok(item) if !self.filter.keep(&self.table, &item) => continue,
                other => return Some(other),
            }
        }
        self.iter = None;
        None
    }

    fn key_of(&self, item: &Item) -> Result<Key> {
        self.table.key_of(item).map_err(|e| Error::Corrupt {
            what: format!("item of table {:?}", self.table.name()),
            offset: 0,
            reason: e.to_string(),
        })
    }
}

impl Iterator for Rows {
    type Item = Result<Item>;

    fn next(&mut self) -> Option<Result<Item>> {
        if self.remaining == 0 {
            // The limit is reached: one more matching item means the page has a last key.
            let more = self.next_match();
            self.iter = None;
            return match more {
                Some(Ok(_)) => {
                    self.last_key = self.pending_key.take();
                    None
                }
                Some(Err(e)) => Some(Err(e)),
                None => None,
            };
        }
        let item = match self.next_match()? {
            Ok(item) => item,
            Err(e) => {
                self.iter = None;
                return Some(Err(e));
            }
        };
        self.remaining -= 1;
        if self.remaining == 0 {
            match self.key_of(&item) {
                Ok(k) => self.pending_key = Some(k),
                Err(e) => {
                    self.iter = None;
                    return Some(Err(e));
                }
            }
        }
        Some(Ok(item))
    }
}
