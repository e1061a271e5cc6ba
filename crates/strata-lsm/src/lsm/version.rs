//! The files of one stripe, by level (LevelDB's `Version`), and point lookups in them.

use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use crate::error::Result;
use crate::manifest::LEVELS;
use crate::sst::index::FlatIndex;
use crate::sst::table::{FileMeta, Found, IndexEntry, Table};

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
///
/// Change the files only through [`Levels::add`] and [`Levels::remove`]: they also reset
/// the level's search index (its files' largest keys, built on the first point read).
#[derive(Clone, Debug)]
pub struct Levels<T> {
    /// Files per level.
    pub levels: [Vec<T>; LEVELS],
    /// Per level below 0, the files' largest keys in file order, flattened for a point
    /// read's file search (one contiguous array instead of a pointer chase per probe).
    fences: [OnceLock<FlatIndex>; LEVELS],
}

/// The open files of one stripe.
pub type StripeVersion = Levels<Arc<Table>>;

impl<T> Default for Levels<T> {
    fn default() -> Self {
        Levels {
            levels: Default::default(),
            fences: Default::default(),
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
        self.fences[level] = OnceLock::new();
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
        self.fences[level] = OnceLock::new();
        self.levels[level].retain(|t| t.meta().id != id);
    }

    /// Position in `level` (below 0) of the first file whose largest key is `>= key`: the
    /// only file of the level that can hold `key` (`len` when none can).
    pub fn file_for(&self, level: usize, key: &[u8]) -> usize {
        let files = &self.levels[level];
        let fences = self.fences[level].get_or_init(|| {
            let entries: Vec<IndexEntry> = files
                .iter()
                .enumerate()
                .map(|(i, t)| IndexEntry {
                    last_key: t.meta().largest.clone(),
                    off: i as u64,
                    len: 0,
                })
                .collect();
            FlatIndex::new(&entries)
        });
        if fences.len() == files.len() {
            fences.find(key)
        } else {
            // Files changed without `add` / `remove` (a bug elsewhere): search the files
            // (the unit tests fail instead).
            #[cfg(test)]
            panic!("level {level}: search index out of date");
            #[cfg(not(test))]
            files.partition_point(|t| t.meta().largest.as_slice() < key)
        }
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

/// Looks a key up in the files of a stripe: `None` when no file has it, else where its newest
/// entry's value lies ([`Found`]: in a block, or in a mapped file; the value is not copied). `hash` is
/// the key's [`crate::sst::bloom::key_hash`] (computed once per point read).
pub fn lookup_version_ref<'v>(
    v: &'v StripeVersion,
    key: &[u8],
    hash: u64,
) -> Result<Option<Found<'v>>> {
    for t in &v.levels[0] {
        if let Some(found) = t.get_ref(key, hash)? {
            return Ok(Some(found));
        }
    }
    // The deepest level with files holds most keys: there the file's filter and index are
    // read together (`Table::get_ref_expected`).
    let deepest = v.levels.iter().rposition(|level| !level.is_empty());
    for (l, level) in v.levels.iter().enumerate().skip(1) {
        if level.is_empty() {
            continue;
        }
        if let Some(t) = level.get(v.file_for(l, key)) {
            let found = if Some(l) == deepest {
                t.get_ref_expected(key, hash)?
            } else {
                t.get_ref(key, hash)?
            };
            if let Some(found) = found {
                return Ok(Some(found));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn file(id: u64, smallest: Vec<u8>, largest: Vec<u8>) -> FileMeta {
        FileMeta {
            id,
            size: 1,
            entries: 1,
            smallest,
            largest,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// After any sequence of adds and removes, a level's file search finds what a search
        /// of the files' largest keys finds, for keys at, between and around the bounds
        /// (keys share long prefixes and differ in length, so that the flattened search's
        /// integer heads tie and the full keys decide).
        #[test]
        fn file_search_matches_the_files(
            bounds in proptest::collection::btree_set(proptest::collection::vec(0u8..3, 0..12), 2..60),
            edits in proptest::collection::vec((any::<bool>(), 0usize..30), 0..40),
            probes in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..13), 0..40),
        ) {
            let prefix = b"common-prefix/".to_vec();
            let keys: Vec<Vec<u8>> = bounds
                .into_iter()
                .map(|k| prefix.iter().chain(&k).copied().collect())
                .collect();
            // Disjoint files: consecutive pairs of the sorted keys.
            let files: Vec<FileMeta> = keys
                .chunks_exact(2)
                .enumerate()
                .map(|(i, p)| file(i as u64, p[0].clone(), p[1].clone()))
                .collect();
            let probes: Vec<Vec<u8>> = probes
                .iter()
                .flat_map(|p| [p.clone(), prefix.iter().chain(p).copied().collect()])
                .collect();
            let mut v: Levels<FileMeta> = Levels::default();
            let mut present = vec![false; files.len()];
            let check = |v: &Levels<FileMeta>| -> Result<(), TestCaseError> {
                let level = &v.levels[2];
                for k in keys.iter().chain(&probes) {
                    let want = level.partition_point(|t| t.largest.as_slice() < k.as_slice());
                    prop_assert_eq!(v.file_for(2, k), want, "key {:?}", k);
                }
                Ok(())
            };
            for (add, i) in edits {
                let i = i % files.len();
                if add && !present[i] {
                    v.add(2, files[i].clone());
                    present[i] = true;
                } else if !add && present[i] {
                    v.remove(2, files[i].id);
                    present[i] = false;
                }
                check(&v)?;
                // A clone searches its own files.
                let c = v.clone();
                check(&c)?;
            }
        }
    }
}
