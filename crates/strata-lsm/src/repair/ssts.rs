//! Steps 2 and 3 of a repair: the SSTs to keep, and the stripe count and partitioner they
//! prove.

use std::collections::HashSet;

use super::Job;
use crate::check::printable;
use crate::error::{Error, Result};
use crate::filename::FileKind;
use crate::lsm::resolve_partitioner;
use crate::manifest::{Edit, ManifestState, LEVELS};
use crate::options::LsmOptions;
use crate::partition::Partitioner;
use crate::sst::table::{sst_name, FileMeta};

impl Job<'_> {
    /// Step 2: every listed SST verified (damaged and missing ones dropped), unlisted ones put
    /// back where their place cannot matter, or moved aside.
    pub(super) fn settle_ssts(&mut self, state: &mut ManifestState) -> Result<()> {
        let live = self.settle_listed(state)?;
        let unlisted: Vec<(String, u32, u64)> = self
            .names
            .iter()
            .filter(|n| !live.contains(*n))
            .filter_map(|n| match FileKind::parse(n) {
                Some(FileKind::Sst(s, id)) => Some((n.clone(), s, id)),
                _ => None,
            })
            .collect();
        for (name, stripe, id) in unlisted {
            self.settle_unlisted(state, &name, stripe, id)?;
        }
        Ok(())
    }

    /// The listed SSTs that verify; the others are dropped from `state` (and moved aside when
    /// present).
    fn settle_listed(&mut self, state: &mut ManifestState) -> Result<HashSet<String>> {
        let listed: Vec<(u32, u8, FileMeta)> = state
            .live_files()
            .map(|(s, l, m)| (s, l, m.clone()))
            .collect();
        let mut live = HashSet::new();
        for (stripe, level, meta) in listed {
            let name = sst_name(stripe, meta.id);
            let mut why = String::new();
            let present = self.names.contains(&name);
            let ok = present
                && self
                    .summarize(&name, meta.id, &mut why)
                    .is_some_and(|s| s.entries == meta.entries && s.size == meta.size);
            if ok {
                live.insert(name);
                continue;
            }
            state.apply(Edit::RemoveFile {
                stripe,
                level,
                id: meta.id,
            });
            let what = describe(&name, &meta);
            if !present {
                self.r.lost.push(format!("{what}: missing"));
                continue;
            }
            if why.is_empty() {
                why = "size or entry count differs from the manifest".into();
            }
            self.r.lost.push(format!(
                "{what}: damaged ({why}); its keys now read as older files have them, if any do"
            ));
            self.move_aside(&name)?;
        }
        Ok(live)
    }

    /// An SST the manifest does not list: obsolete, put back where its place cannot matter,
    /// or moved aside.
    fn settle_unlisted(
        &mut self,
        state: &mut ManifestState,
        name: &str,
        stripe: u32,
        id: u64,
    ) -> Result<()> {
        let mut why = String::new();
        let Some(s) = self.summarize(name, id, &mut why) else {
            self.r
                .lost
                .push(format!("{name}: unlisted and damaged ({why})"));
            return self.move_aside(name);
        };
        let meta = FileMeta {
            id,
            size: s.size,
            entries: s.entries,
            smallest: s.smallest,
            largest: s.largest,
        };
        let what = describe(name, &meta);
        if self.loss_point.is_none_or(|at| id < at) {
            self.r.actions.push(format!(
                "{what}: not listed, and older than the manifest's last record (obsolete)"
            ));
            return self.move_aside(name);
        }
        let meets = |m: &FileMeta| m.smallest <= meta.largest && meta.smallest <= m.largest;
        if state
            .live_files()
            .any(|(st, _, m)| st == stripe && meets(m))
        {
            self.r.lost.push(format!(
                "{what}: added by a lost manifest record; its place among the files of stripe \
                 {stripe} cannot be proven, so it is not restored"
            ));
            return self.move_aside(name);
        }
        self.r.actions.push(format!(
            "{what}: not listed in the manifest; no other file of stripe {stripe} meets its key \
             range, so it is put back (at level {})",
            LEVELS - 1
        ));
        state.apply(Edit::AddFile {
            stripe,
            level: (LEVELS - 1) as u8,
            meta,
        });
        Ok(())
    }

    /// Step 3: stripes and partitioner under which every file lies in its stripe.
    pub(super) fn settle_layout(
        &mut self,
        state: &mut ManifestState,
        options: &LsmOptions,
    ) -> Result<()> {
        let placed = |st: &ManifestState, p: &Partitioner, stripes: u32| {
            st.live_files().all(|(s, _, m)| {
                s < stripes
                    && p.stripe(&m.smallest, stripes) == s
                    && p.stripe(&m.largest, stripes) == s
            })
        };
        if state.stripes != 0 {
            if let Some(p) = state
                .partitioner
                .as_deref()
                .and_then(|n| Partitioner::parse(n).ok())
            {
                if placed(state, &p, state.stripes) {
                    return Ok(());
                }
            }
        }
        let max_stripe = state.live_files().map(|(s, _, _)| s + 1).max().unwrap_or(1);
        let mut counts = vec![state.stripes, options.stripes, 256, max_stripe];
        counts.retain(|c| *c >= 1 && *c <= 65_536);
        counts.dedup();
        for stripes in counts {
            let mut probe = state.clone();
            probe.stripes = stripes;
            probe.partitioner = None;
            if let Ok(p) = resolve_partitioner(
                &self.dir,
                &probe,
                options.partitioner.as_ref(),
                std::iter::empty(),
                false,
            ) {
                if placed(&probe, &p, stripes) {
                    if state.stripes != stripes || state.partitioner.as_deref() != Some(&p.name()) {
                        self.r.actions.push(format!(
                            "stripes {stripes} and partitioner {p}: every file lies where they \
                             put it"
                        ));
                    }
                    state.stripes = stripes;
                    state.partitioner = Some(p.name());
                    return Ok(());
                }
            }
        }
        Err(Error::corruption(
            &self.dir,
            0,
            "cannot repair: no stripe count and partitioner put every file in its stripe",
        ))
    }
}

/// An SST for the report: name, entries and key range.
fn describe(name: &str, meta: &FileMeta) -> String {
    format!(
        "{name} ({} entries, keys {}..{})",
        meta.entries,
        printable(&meta.smallest),
        printable(&meta.largest)
    )
}
