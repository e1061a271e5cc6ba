//! The files of one stripe, by level (LevelDB's `Version`), and point lookups in them.

use std::ops::Bound;
use std::sync::Arc;

use crate::error::Result;
use crate::manifest::LEVELS;
use crate::sst::block::{Block, ValueRef};
use crate::sst::keycmp;
use crate::sst::table::{FileMeta, Table};

/// Something that knows its file's metadata: an open [`Table`], or just the [`FileMeta`]
/// (which is what compaction picking needs, and what its unit tests use).
pub trait FileRef: Clone {
    /// The file's metadata.
    fn meta(&self) -> &FileMeta;
}

impl FileRef for Arc<Table> {
    fn meta(&self) -> &FileMeta {
        &self.meta
    }
}

impl FileRef for FileMeta {
    fn meta(&self) -> &FileMeta {
        self
    }
}

/// The files of one stripe: L0 newest first (ranges may overlap), deeper levels sorted by
/// smallest key with disjoint ranges.
#[derive(Clone, Debug)]
pub struct Levels<T> {
    /// Files per level.
    pub levels: [Vec<T>; LEVELS],
}

/// The open files of one stripe.
pub type StripeVersion = Levels<Arc<Table>>;

impl<T> Default for Levels<T> {
    fn default() -> Self {
        Levels {
            levels: Default::default(),
        }
    }
}

impl<T: FileRef> Levels<T> {
    /// Bytes of the files of `level`.
    pub fn bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|t| t.meta().size).sum()
    }

    /// Adds a file: L0 in front (newest first), deeper levels in key order.
    pub fn add(&mut self, level: usize, t: T) {
        if level == 0 {
            self.levels[0].insert(0, t);
        } else {
            let l = &mut self.levels[level];
            let at = l.partition_point(|x| x.meta().smallest < t.meta().smallest);
            l.insert(at, t);
        }
    }

    /// Removes file `id` from `level`.
    pub fn remove(&mut self, level: usize, id: u64) {
        self.levels[level].retain(|t| t.meta().id != id);
    }

    /// Every file, level by level.
    pub fn files(&self) -> impl Iterator<Item = &T> {
        self.levels.iter().flatten()
    }

    /// Number of files.
    pub fn file_count(&self) -> usize {
        self.levels.iter().map(Vec::len).sum()
    }
}

/// The files of `files` whose key range meets `[lo, hi]`.
pub fn overlapping<T: FileRef>(files: &[T], lo: &[u8], hi: &[u8]) -> Vec<T> {
    files
        .iter()
        .filter(|t| t.meta().largest.as_slice() >= lo && t.meta().smallest.as_slice() <= hi)
        .cloned()
        .collect()
}

/// True when the file's key range meets the range `(lo, hi)`.
pub fn overlaps_range(t: &Table, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above_lo = match lo {
        Bound::Included(l) => t.meta.largest >= *l,
        Bound::Excluded(l) => t.meta.largest > *l,
        Bound::Unbounded => true,
    };
    let below_hi = match hi {
        Bound::Included(h) => t.meta.smallest <= *h,
        Bound::Excluded(h) => t.meta.smallest < *h,
        Bound::Unbounded => true,
    };
    above_lo && below_hi
}

/// Looks a key up in the files of a stripe: `None` when no file has it, else the block that
/// holds its newest entry and where in it the value lies (the value is not copied). `hash` is
/// the key's [`crate::sst::bloom::key_hash`] (computed once per point read).
pub fn lookup_version_ref(
    v: &StripeVersion,
    key: &[u8],
    hash: u64,
) -> Result<Option<(Block, ValueRef)>> {
    for t in &v.levels[0] {
        if let Some(found) = t.get_ref(key, hash)? {
            return Ok(Some(found));
        }
    }
    for level in &v.levels[1..] {
        let i = level.partition_point(|t| keycmp::lt(&t.meta.largest, key));
        if let Some(t) = level.get(i) {
            if let Some(found) = t.get_ref(key, hash)? {
                return Ok(Some(found));
            }
        }
    }
    Ok(None)
}
