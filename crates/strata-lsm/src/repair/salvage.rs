//! Step 1 of a repair: the manifest's intact records, and its damaged records when everything
//! they say checks out against the disk.

use std::collections::{BTreeMap, HashSet};

use super::Job;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::manifest::{self, Edit, ManifestState, LEVELS, MANIFEST_MAGIC};
use crate::record;
use crate::sst::table::{sst_name, FileMeta};

impl Job<'_> {
    /// The manifest to repair from (the one `CURRENT` names, else the newest): its name and
    /// bytes, or `None` when there is none.
    fn manifest_to_read(&self) -> Result<Option<(String, Vec<u8>)>> {
        let newest = self
            .names
            .iter()
            .filter_map(|n| match FileKind::parse(n) {
                Some(FileKind::Manifest(m)) => Some(m),
                _ => None,
            })
            .max();
        let current = self.path(filename::CURRENT);
        let number = match self.fs.read(&current) {
            Ok(d) => manifest::parse_current(&d, &current).ok().or(newest),
            Err(_) => newest,
        };
        let Some(number) = number else {
            return Ok(None);
        };
        let name = manifest::manifest_name(number);
        let path = self.path(&name);
        let data = self.fs.read(&path).map_err(Error::io(&path))?;
        Ok(Some((name, data)))
    }

    /// Step 1: the state of the manifest's intact records and of the damaged records that
    /// can be salvaged.
    pub(super) fn salvage_manifest(&mut self) -> Result<ManifestState> {
        let mut state = ManifestState::default();
        let Some((name, data)) = self.manifest_to_read()? else {
            self.loss_point = Some(0);
            self.r.lost.push(
                "no manifest: the level of every SST is unknown (SSTs are put back only where \
                 their place cannot matter)"
                    .into(),
            );
            return Ok(state);
        };
        if data.len() < MANIFEST_MAGIC.len() || &data[..MANIFEST_MAGIC.len()] != MANIFEST_MAGIC {
            self.loss_point = Some(0);
            self.r.lost.push(format!(
                "{name}: bad magic, none of its records can be read"
            ));
            return Ok(state);
        }
        let scan = record::scan_log(&data, MANIFEST_MAGIC.len());
        // Intact records (`Ok`) and damaged ones (`Err`), in file order.
        let mut items: BTreeMap<u64, std::result::Result<&[u8], &record::Damage>> = BTreeMap::new();
        for (off, p) in &scan.records {
            items.insert(*off, Ok(p));
        }
        for d in &scan.damage {
            items.insert(d.offset, Err(d));
        }
        for (off, item) in items {
            let edits = match item {
                Ok(p) => manifest::decode_edits(p).map_err(|e| format!("does not decode ({e})")),
                Err(d) => d
                    .payload
                    .and_then(|p| manifest::decode_edits(p).ok())
                    .and_then(|edits| self.validate_salvage(&state, edits))
                    .inspect(|_| {
                        self.r.actions.push(format!(
                            "{name}: record at offset {off} ({}) salvaged: every file it names \
                             checks out",
                            d.reason
                        ))
                    })
                    .ok_or_else(|| format!("{} and could not be salvaged", d.reason)),
            };
            match edits {
                Ok(edits) => edits.into_iter().for_each(|e| state.apply(e)),
                Err(why) => {
                    self.loss_point.get_or_insert(state.next_file);
                    self.r.lost.push(format!(
                        "{name}: the record at offset {off} {why}; the files it added are \
                         handled as unlisted SSTs"
                    ));
                }
            }
        }
        if let Some((off, why)) = scan.torn {
            self.r
                .actions
                .push(format!("{name}: torn tail at offset {off} ({why}) ignored"));
        }
        Ok(state)
    }

    /// The edits of a damaged record worth applying, or `None` when anything fails to check
    /// out. Scalar edits are dropped (recomputed safely); stripes and partitioner are kept for
    /// [`Job::settle_layout`] to verify.
    pub(super) fn validate_salvage(
        &self,
        state: &ManifestState,
        edits: Vec<Edit>,
    ) -> Option<Vec<Edit>> {
        let mut kept = Vec::new();
        let mut added_levels = HashSet::new();
        let mut removed_levels = HashSet::new();
        let mut flush = false;
        let mut added = HashSet::new();
        let mut added_stripes = Vec::new();
        for e in edits {
            match e {
                Edit::LogNumber(_) => flush = true,
                Edit::NextFile(_) | Edit::LastSeq(_) => {}
                Edit::Stripes(n) if state.stripes == 0 => kept.push(Edit::Stripes(n)),
                Edit::Partitioner(p) if state.partitioner.is_none() => {
                    kept.push(Edit::Partitioner(p))
                }
                Edit::Stripes(_) | Edit::Partitioner(_) => return None,
                Edit::AddFile {
                    stripe,
                    level,
                    meta,
                } => {
                    // The record names the file; the file itself says what it holds.
                    let name = sst_name(stripe, meta.id);
                    if !self.names.contains(&name) || !added.insert(meta.id) {
                        return None;
                    }
                    let mut why = String::new();
                    let s = self.summarize(&name, meta.id, &mut why)?;
                    added_levels.insert(level);
                    added_stripes.push(stripe);
                    kept.push(Edit::AddFile {
                        stripe,
                        level,
                        meta: FileMeta {
                            id: meta.id,
                            size: s.size,
                            entries: s.entries,
                            smallest: s.smallest,
                            largest: s.largest,
                        },
                    });
                }
                Edit::RemoveFile { stripe, level, id } => {
                    let listed = state
                        .files
                        .get(&(stripe, level))
                        .is_some_and(|f| f.contains_key(&id));
                    if !listed {
                        return None;
                    }
                    removed_levels.insert(level);
                    kept.push(Edit::RemoveFile { stripe, level, id });
                }
            }
        }
        let mut stripes = added_stripes.clone();
        stripes.sort_unstable();
        stripes.dedup();
        let one_per_stripe = stripes.len() == added_stripes.len();
        let shape_ok = has_edit_shape(flush, &added_levels, &removed_levels, one_per_stripe);
        shape_ok.then_some(kept)
    }
}

/// Whether a group of edits has the shape of a flush (level-0 files, one per stripe, nothing
/// removed), of a manifest's first snapshot (nothing removed), or of a compaction (one output
/// level, inputs from it and the level above; or everything into the last level).
fn has_edit_shape(
    flush: bool,
    added_levels: &HashSet<u8>,
    removed_levels: &HashSet<u8>,
    one_per_stripe: bool,
) -> bool {
    if flush {
        return removed_levels.is_empty() && added_levels.iter().all(|l| *l == 0) && one_per_stripe;
    }
    if removed_levels.is_empty() {
        return true;
    }
    added_levels.len() <= 1
        && added_levels.iter().all(|out| {
            *out >= 1
                && removed_levels
                    .iter()
                    .all(|l| *l == *out || *l + 1 == *out || usize::from(*out) == LEVELS - 1)
        })
}
