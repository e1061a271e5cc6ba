//! [`repair`]: recovers what can be recovered from a damaged database. It never deletes a
//! file: whatever it cannot use is moved into a `repair-<time>` directory inside the database
//! directory, and the report says what that costs.
//!
//! 1. The manifest: every intact record is applied in order. A damaged record whose header is
//!    intact is *salvaged* only when everything in it checks out against the disk: each file
//!    it adds exists (once) and verifies (its size, entry count and key range are then taken
//!    from the file itself), each file it removes is listed, and the edits have the shape of
//!    a flush (level-0 files, one per stripe) or of a compaction (one output level); its
//!    scalar fields (log number, next file, last sequence) are not trusted. Otherwise its
//!    edits are lost.
//! 2. The SSTs: every listed file is read in full; a damaged one is moved aside and its
//!    entries are reported lost (its keys then read as older files have them, if any do). An intact SST that the manifest does not list (its record was
//!    lost) is put back only where its place cannot matter — its key range meets no other
//!    file of its stripe, so no key has two versions to order — at the deepest level; others
//!    are moved aside, with their key ranges and entry counts in the report. (SSTs carry no
//!    sequence numbers, so no other placement can be proven.)
//! 3. The stripe count and partitioner: the recorded ones if every file lies where they put
//!    it; otherwise inferred the way an old database's are (see `docs/format/lsm.md`).
//! 4. The WALs the manifest does not cover are replayed in order up to the first damaged
//!    record; the damaged WAL and every later one are moved aside (their records after the
//!    damage are reported, not replayed: replaying them would skip the damaged batch and make
//!    a state that never existed).
//! 5. A new manifest is written, the old one moved aside, and a normal open replays the WALs
//!    into SSTs.

use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::check::{check, printable, Problem};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{Fs, RealFs};
use crate::lock::{LockError, LockMode};
use crate::lsm::{resolve_partitioner, LsmEngine};
use crate::manifest::{self, Edit, ManifestState, ManifestWriter, LEVELS, MANIFEST_MAGIC};
use crate::options::LsmOptions;
use crate::partition::Partitioner;
use crate::record::{self, HEADER};
use crate::sst::cache::BlockCache;
use crate::sst::table::{sst_name, FileMeta, Source, Table, TableIter};
use crate::wal::{self, WalWriter, WAL_MAGIC};

/// What [`repair`] did and what it could not save.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The problems found before the repair (by [`check`]).
    pub problems: Vec<Problem>,
    /// What was done, in order.
    pub actions: Vec<String>,
    /// What could not be recovered; empty when nothing was lost.
    pub lost: Vec<String>,
    /// Where files were moved (`None`: nothing was moved).
    pub moved_to: Option<PathBuf>,
}

impl RepairReport {
    /// True when the database was sound and nothing was changed.
    pub fn nothing_to_do(&self) -> bool {
        self.problems.is_empty() && self.actions.is_empty()
    }
}

/// Repairs the database in `dir` (see the module documentation). `options` give the file
/// system layer, and the stripe count and partitioner to assume when the damage erased them.
/// A sound database is left untouched.
pub fn repair(dir: &Path, options: LsmOptions) -> Result<RepairReport> {
    let fs: Arc<dyn Fs> = options.fs.clone().unwrap_or_else(|| Arc::new(RealFs));
    let before = check(dir, Some(Arc::clone(&fs)))?;
    let mut r = RepairReport {
        problems: before.problems,
        ..RepairReport::default()
    };
    if r.problems.is_empty() {
        return Ok(r);
    }
    {
        let _lock = fs.lock_dir(dir, LockMode::Exclusive).map_err(|e| match e {
            LockError::Held(holder) => Error::Locked {
                dir: dir.to_path_buf(),
                holder,
            },
            LockError::Io(path, source) => Error::Io { path, source },
        })?;
        let mut job = Job {
            fs: Arc::clone(&fs),
            dir: dir.to_path_buf(),
            names: fs.list(dir).map_err(Error::io(dir))?,
            cache: Arc::new(BlockCache::new(1 << 20)),
            aside: None,
            loss_point: None,
            r: &mut r,
        };
        let mut state = job.salvage_manifest()?;
        job.settle_ssts(&mut state)?;
        job.settle_layout(&mut state, &options)?;
        job.salvage_wals(&mut state)?;
        job.write_manifest(state)?;
    }
    // A normal open replays the WALs into SSTs and records the result.
    let engine = LsmEngine::open(
        dir,
        LsmOptions {
            partitioner: None,
            background: false,
            ..options
        },
    )?;
    engine.close()?;
    r.actions
        .push("opened the repaired database: WALs replayed into SSTs".into());
    Ok(r)
}

struct Job<'a> {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    names: Vec<String>,
    cache: Arc<BlockCache>,
    aside: Option<PathBuf>,
    /// The manifest's next file number where its first lost record was: files numbered below
    /// it that the manifest does not list are obsolete. `None`: nothing was lost, so every
    /// unlisted file is obsolete.
    loss_point: Option<u64>,
    r: &'a mut RepairReport,
}

/// What an SST on disk holds, read in full.
struct Summary {
    entries: u64,
    size: u64,
    smallest: Vec<u8>,
    largest: Vec<u8>,
}

impl Job<'_> {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Moves `name` into the repair directory (created on first use).
    fn move_aside(&mut self, name: &str) -> Result<()> {
        let aside = match &self.aside {
            Some(a) => a.clone(),
            None => {
                let secs = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let a = self.dir.join(format!("repair-{secs}"));
                self.fs.create_dir_all(&a).map_err(Error::io(&a))?;
                self.r.moved_to = Some(a.clone());
                self.aside = Some(a.clone());
                a
            }
        };
        let to = aside.join(name);
        self.fs
            .rename(&self.path(name), &to)
            .map_err(Error::io(&to))?;
        self.names.retain(|n| n != name);
        self.r
            .actions
            .push(format!("moved {name} to {}", to.display()));
        Ok(())
    }

    /// Reads an SST in full: `None` when it is damaged (the reason goes to `why`).
    fn summarize(&self, name: &str, id: u64, why: &mut String) -> Option<Summary> {
        let path = self.path(name);
        let size = self.fs.open(&path).map(|f| f.len()).unwrap_or(0);
        let probe = FileMeta {
            id,
            size,
            entries: 0,
            smallest: Vec::new(),
            largest: Vec::new(),
        };
        let t = match Table::open(Arc::clone(&self.fs), &path, probe, Arc::clone(&self.cache)) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                *why = e.to_string();
                return None;
            }
        };
        let entries = match t.verify() {
            Ok(n) => n,
            Err(e) => {
                *why = e.to_string();
                return None;
            }
        };
        let edge = |reverse: bool| -> Result<Option<Vec<u8>>> {
            let mut it =
                TableIter::new(Arc::clone(&t), Bound::Unbounded, Bound::Unbounded, reverse);
            Ok(it.next_entry()?.map(|(k, _)| k))
        };
        match (edge(false), edge(true)) {
            (Ok(Some(smallest)), Ok(Some(largest))) => Some(Summary {
                entries,
                size,
                smallest,
                largest,
            }),
            (Err(e), _) | (_, Err(e)) => {
                *why = e.to_string();
                None
            }
            _ => {
                *why = "holds no entry".into();
                None
            }
        }
    }

    /// Step 1: the state of the manifest's intact records and of the damaged records that
    /// can be salvaged.
    fn salvage_manifest(&mut self) -> Result<ManifestState> {
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
        let mut state = ManifestState::default();
        let Some(number) = number else {
            self.loss_point = Some(0);
            self.r.lost.push(
                "no manifest: the level of every SST is unknown (SSTs are put back only where \
                 their place cannot matter)"
                    .into(),
            );
            return Ok(state);
        };
        let name = manifest::manifest_name(number);
        let path = self.path(&name);
        let data = self.fs.read(&path).map_err(Error::io(&path))?;
        if data.len() < MANIFEST_MAGIC.len() || &data[..MANIFEST_MAGIC.len()] != MANIFEST_MAGIC {
            self.loss_point = Some(0);
            self.r.lost.push(format!(
                "{name}: bad magic, none of its records can be read"
            ));
            return Ok(state);
        }
        let scan = record::scan_log(&data, MANIFEST_MAGIC.len());
        // Intact and damaged records, in file order.
        let mut items: BTreeMap<u64, Option<&[u8]>> = BTreeMap::new();
        for (off, p) in &scan.records {
            items.insert(*off, Some(p));
        }
        let mut damaged = BTreeMap::new();
        for d in &scan.damage {
            items.insert(d.offset, None);
            damaged.insert(d.offset, (d.reason.clone(), d.payload));
        }
        for (off, payload) in items {
            let decoded = match payload {
                Some(p) => manifest::decode_edits(p).map_err(|e| e.what),
                None => Err(String::new()),
            };
            match (decoded, damaged.get(&off)) {
                (Ok(edits), None) => edits.into_iter().for_each(|e| state.apply(e)),
                (_, Some((reason, p))) => {
                    let salvaged = p
                        .and_then(|p| manifest::decode_edits(p).ok())
                        .and_then(|edits| self.validate_salvage(&state, edits));
                    match salvaged {
                        Some(edits) => {
                            self.r.actions.push(format!(
                                "{name}: record at offset {off} ({reason}) salvaged: every file \
                                 it names checks out"
                            ));
                            edits.into_iter().for_each(|e| state.apply(e));
                        }
                        None => {
                            self.loss_point.get_or_insert(state.next_file);
                            self.r.lost.push(format!(
                                "{name}: record at offset {off} ({reason}) could not be \
                                 salvaged; the files it added are handled as unlisted SSTs"
                            ))
                        }
                    }
                }
                (Err(why), None) => {
                    self.loss_point.get_or_insert(state.next_file);
                    self.r.lost.push(format!(
                        "{name}: record at offset {} does not decode ({why})",
                        off + HEADER as u64
                    ))
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
    fn validate_salvage(&self, state: &ManifestState, edits: Vec<Edit>) -> Option<Vec<Edit>> {
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
        // The shape of a flush (level-0 files, no removal) or of a compaction (one output
        // level, inputs from it and above; or everything into the last level).
        let one_per_stripe = {
            let n = added_stripes.len();
            added_stripes.sort_unstable();
            added_stripes.dedup();
            added_stripes.len() == n
        };
        let shape_ok = if flush {
            removed_levels.is_empty() && added_levels.iter().all(|l| *l == 0) && one_per_stripe
        } else if removed_levels.is_empty() {
            true // the snapshot that starts a manifest
        } else {
            added_levels.len() <= 1
                && added_levels.iter().all(|out| {
                    *out >= 1
                        && removed_levels
                            .iter()
                            .all(|l| *l == *out || *l + 1 == *out || *out as usize == LEVELS - 1)
                })
        };
        shape_ok.then_some(kept)
    }

    /// Step 2: every listed SST verified (damaged and missing ones dropped), unlisted ones put
    /// back where their place cannot matter, or moved aside.
    fn settle_ssts(&mut self, state: &mut ManifestState) -> Result<()> {
        let listed: Vec<(u32, u8, FileMeta)> = state
            .live_files()
            .map(|(s, l, m)| (s, l, m.clone()))
            .collect();
        let mut live = HashSet::new();
        for (stripe, level, meta) in listed {
            let name = sst_name(stripe, meta.id);
            let what = format!(
                "{name} ({} entries, keys {}..{})",
                meta.entries,
                printable(&meta.smallest),
                printable(&meta.largest)
            );
            let mut why = String::new();
            let ok = self.names.contains(&name)
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
            if self.names.contains(&name) {
                if why.is_empty() {
                    why = "size or entry count differs from the manifest".into();
                }
                self.r.lost.push(format!(
                    "{what}: damaged ({why}); its keys now read as older files have them, if \
                     any do"
                ));
                self.move_aside(&name)?;
            } else {
                self.r.lost.push(format!("{what}: missing"));
            }
        }
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
            let mut why = String::new();
            let Some(s) = self.summarize(&name, id, &mut why) else {
                self.r
                    .lost
                    .push(format!("{name}: unlisted and damaged ({why})"));
                self.move_aside(&name)?;
                continue;
            };
            let meta = FileMeta {
                id,
                size: s.size,
                entries: s.entries,
                smallest: s.smallest,
                largest: s.largest,
            };
            let meets = |m: &FileMeta| m.smallest <= meta.largest && meta.smallest <= m.largest;
            let alone = !state
                .live_files()
                .any(|(st, _, m)| st == stripe && meets(m));
            let what = format!(
                "{name} ({} entries, keys {}..{})",
                meta.entries,
                printable(&meta.smallest),
                printable(&meta.largest)
            );
            let obsolete = self.loss_point.is_none_or(|at| id < at);
            if alone && !obsolete {
                self.r.actions.push(format!(
                    "{what}: not listed in the manifest; no other file of stripe {stripe} \
                     meets its key range, so it is put back (at level {})",
                    LEVELS - 1
                ));
                state.apply(Edit::AddFile {
                    stripe,
                    level: (LEVELS - 1) as u8,
                    meta,
                });
            } else {
                if obsolete {
                    self.r.actions.push(format!(
                        "{what}: not listed, and older than the manifest's last record \
                         (obsolete)"
                    ));
                } else {
                    self.r.lost.push(format!(
                        "{what}: added by a lost manifest record; its place among the files \
                         of stripe {stripe} cannot be proven, so it is not restored"
                    ));
                }
                self.move_aside(&name)?;
            }
        }
        Ok(())
    }

    /// Step 3: stripes and partitioner under which every file lies in its stripe.
    fn settle_layout(&mut self, state: &mut ManifestState, options: &LsmOptions) -> Result<()> {
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

    /// Step 4: the WALs to replay, up to the first damaged record; the damaged WAL's intact
    /// prefix is copied into a new WAL, and it and every later WAL are moved aside.
    fn salvage_wals(&mut self, state: &mut ManifestState) -> Result<()> {
        let mut numbers: Vec<u64> = self
            .names
            .iter()
            .filter_map(|n| wal::parse_wal_name(n))
            .filter(|n| *n >= state.log_number)
            .collect();
        numbers.sort_unstable();
        let next = self
            .names
            .iter()
            .filter_map(|n| FileKind::parse(n)?.number())
            .max()
            .unwrap_or(0)
            .max(state.next_file)
            + 1;
        state.next_file = next;
        let mut damaged_at: Option<usize> = None;
        for (i, n) in numbers.iter().enumerate() {
            let name = wal::wal_name(*n);
            let path = self.path(&name);
            let data = self.fs.read(&path).map_err(Error::io(&path))?;
            let last = i + 1 == numbers.len();
            if data.len() < WAL_MAGIC.len() || &data[..WAL_MAGIC.len()] != WAL_MAGIC {
                if data.len() < WAL_MAGIC.len() && last {
                    continue;
                }
                self.r
                    .lost
                    .push(format!("{name}: bad magic, its records are lost"));
                damaged_at = Some(i);
                break;
            }
            let log = record::read_log(&data, WAL_MAGIC.len());
            let mut good_end = WAL_MAGIC.len();
            let mut bad = None;
            for (off, payload) in &log.records {
                if let Err(e) = wal::decode_batch(payload) {
                    bad = Some((*off, e.what));
                    break;
                }
                good_end = *off as usize + HEADER + payload.len();
            }
            let bad = bad.or(match log.end {
                record::LogEnd::Corrupt { offset, reason } => Some((offset, reason)),
                record::LogEnd::TornTail { offset, reason } if !last => Some((offset, reason)),
                _ => None,
            });
            let Some((offset, reason)) = bad else {
                continue;
            };
            let rest = record::scan_log(&data[..], WAL_MAGIC.len());
            let after: Vec<_> = rest.records.iter().filter(|(o, _)| *o > offset).collect();
            self.r.lost.push(format!(
                "{name}: damaged at offset {offset} ({reason}); {} intact record(s) after it \
                 are not replayed",
                after.len()
            ));
            // The intact prefix goes into a new WAL, replayed after the earlier ones.
            let mut w = WalWriter::create(self.fs.as_ref(), &self.dir, state.next_file)?;
            state.next_file += 1;
            let copied = record::read_log(&data[..good_end], WAL_MAGIC.len())
                .records
                .len();
            for (_, payload) in record::read_log(&data[..good_end], WAL_MAGIC.len()).records {
                if let Ok((seq, ops)) = wal::decode_batch(payload) {
                    w.append(seq, &ops).map_err(Error::io(&path))?;
                }
            }
            w.sync().map_err(Error::io(&path))?;
            self.r.actions.push(format!(
                "{name}: its {copied} record(s) before the damage copied to {}",
                wal::wal_name(w.number())
            ));
            damaged_at = Some(i);
            break;
        }
        if let Some(i) = damaged_at {
            for n in &numbers[i..] {
                let name = wal::wal_name(*n);
                if *n != numbers[i] {
                    let data = self.fs.read(&self.path(&name)).unwrap_or_default();
                    let records = record::scan_log(&data, WAL_MAGIC.len().min(data.len()))
                        .records
                        .len();
                    self.r.lost.push(format!(
                        "{name}: written after the damage; its {records} record(s) are not \
                         replayed"
                    ));
                }
                self.move_aside(&name)?;
            }
        }
        Ok(())
    }

    /// Step 5: the new manifest, then the old ones moved aside.
    fn write_manifest(&mut self, mut state: ManifestState) -> Result<()> {
        let number = state.next_file;
        state.next_file += 1;
        ManifestWriter::create(self.fs.as_ref(), &self.dir, number, &state)?;
        self.r.actions.push(format!(
            "wrote {} ({} SSTs) and made it current",
            manifest::manifest_name(number),
            state.live_files().count()
        ));
        let old: Vec<String> = self
            .names
            .iter()
            .filter(|n| matches!(FileKind::parse(n), Some(FileKind::Manifest(m)) if m != number))
            .cloned()
            .collect();
        for n in old {
            self.move_aside(&n)?;
        }
        Ok(())
    }
}

/// Runs [`repair`] and then [`check`]: true when the database is sound afterwards.
pub fn repair_and_check(dir: &Path, options: LsmOptions) -> Result<(RepairReport, bool)> {
    let fs = options.fs.clone();
    let r = repair(dir, options)?;
    let after = check(dir, fs)?;
    Ok((r, after.is_ok()))
}
