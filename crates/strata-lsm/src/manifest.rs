//! The manifest: the live set of files as an append-only log of edits.
//!
//! File `MANIFEST-{number:06}` = magic `STRMAN01` + records framed by [`crate::record`]; each
//! record is one atomic group of edits (a flush or a round of compactions). `CURRENT` holds the name of
//! the live manifest followed by a newline; it is replaced atomically (write `CURRENT.tmp`,
//! fsync, rename, fsync the directory). A new manifest starts with a snapshot of the state.
//!
//! Edit encoding (tag byte, then varints / length-prefixed bytes):
//! `1 stripes` · `2 log_number` · `3 next_file` · `4 last_seq` ·
//! `5 stripe level id size entries smallest largest` (add file) · `6 stripe level id` (remove) ·
//! `7 name` (the partitioner, see [`crate::partition`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::coding::{get_bytes, get_varint, put_bytes, put_varint};
use crate::error::{Error, FormatError, Result};
use crate::fs::{Fs, WritableFile};
use crate::record::{self, LogEnd};
use crate::sst::table::FileMeta;

/// Magic at the start of every manifest.
pub const MANIFEST_MAGIC: &[u8; 8] = b"STRMAN01";
/// Number of levels of each stripe.
pub const LEVELS: usize = 5;

pub use crate::filename::manifest_name;

/// One change to the database state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Number of stripes (first edit of every manifest).
    Stripes(u32),
    /// WAL files numbered below this hold nothing that is not in SSTs.
    LogNumber(u64),
    /// The next unused file number.
    NextFile(u64),
    /// The largest sequence number used.
    LastSeq(u64),
    /// A new SST.
    AddFile {
        /// Stripe of the file.
        stripe: u32,
        /// Level of the file.
        level: u8,
        /// The file.
        meta: FileMeta,
    },
    /// An SST that is no longer live.
    RemoveFile {
        /// Stripe of the file.
        stripe: u32,
        /// Level of the file.
        level: u8,
        /// File number.
        id: u64,
    },
    /// The name of the database's partitioner (in the snapshot that starts every manifest).
    Partitioner(String),
}

/// Encodes a group of edits as one record payload.
pub fn encode_edits(edits: &[Edit]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in edits {
        match e {
            Edit::Stripes(n) => {
                out.push(1);
                put_varint(&mut out, u64::from(*n));
            }
            Edit::LogNumber(n) => {
                out.push(2);
                put_varint(&mut out, *n);
            }
            Edit::NextFile(n) => {
                out.push(3);
                put_varint(&mut out, *n);
            }
            Edit::LastSeq(n) => {
                out.push(4);
                put_varint(&mut out, *n);
            }
            Edit::AddFile {
                stripe,
                level,
                meta,
            } => {
                out.push(5);
                put_varint(&mut out, u64::from(*stripe));
                out.push(*level);
                put_varint(&mut out, meta.id);
                put_varint(&mut out, meta.size);
                put_varint(&mut out, meta.entries);
                put_bytes(&mut out, &meta.smallest);
                put_bytes(&mut out, &meta.largest);
            }
            Edit::RemoveFile { stripe, level, id } => {
                out.push(6);
                put_varint(&mut out, u64::from(*stripe));
                out.push(*level);
                put_varint(&mut out, *id);
            }
            Edit::Partitioner(name) => {
                out.push(7);
                put_bytes(&mut out, name.as_bytes());
            }
        }
    }
    out
}

/// Decodes a record payload into edits; errors give the byte offset in the payload.
pub fn decode_edits(p: &[u8]) -> std::result::Result<Vec<Edit>, FormatError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < p.len() {
        let at = pos;
        let tag = p[pos];
        pos += 1;
        let bad = |what: &str| FormatError::new(at, format!("bad {what} edit"));
        let mut v = |what: &str| get_varint(p, &mut pos).ok_or_else(|| bad(what));
        let e = match tag {
            1 => Edit::Stripes(u32::try_from(v("stripes")?).map_err(|_| bad("stripes"))?),
            2 => Edit::LogNumber(v("log number")?),
            3 => Edit::NextFile(v("next file")?),
            4 => Edit::LastSeq(v("last seq")?),
            5 | 6 => {
                let stripe = u32::try_from(v("file")?).map_err(|_| bad("file"))?;
                let level = *p.get(pos).ok_or_else(|| bad("file"))?;
                pos += 1;
                if usize::from(level) >= LEVELS {
                    return Err(FormatError::new(at, format!("level {level} out of range")));
                }
                let id = get_varint(p, &mut pos).ok_or_else(|| bad("file"))?;
                if tag == 6 {
                    Edit::RemoveFile { stripe, level, id }
                } else {
                    let size = get_varint(p, &mut pos).ok_or_else(|| bad("file"))?;
                    let entries = get_varint(p, &mut pos).ok_or_else(|| bad("file"))?;
                    let smallest = get_bytes(p, &mut pos).ok_or_else(|| bad("file"))?.to_vec();
                    let largest = get_bytes(p, &mut pos).ok_or_else(|| bad("file"))?.to_vec();
                    Edit::AddFile {
                        stripe,
                        level,
                        meta: FileMeta {
                            id,
                            size,
                            entries,
                            smallest,
                            largest,
                        },
                    }
                }
            }
            7 => {
                let name = get_bytes(p, &mut pos).ok_or_else(|| bad("partitioner"))?;
                let name = std::str::from_utf8(name).map_err(|_| bad("partitioner"))?;
                Edit::Partitioner(name.to_owned())
            }
            t => return Err(FormatError::new(at, format!("unknown edit tag {t}"))),
        };
        out.push(e);
    }
    Ok(out)
}

/// The state described by a manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestState {
    /// Number of stripes.
    pub stripes: u32,
    /// Oldest WAL still needed.
    pub log_number: u64,
    /// Next unused file number.
    pub next_file: u64,
    /// Largest sequence number used.
    pub last_seq: u64,
    /// Live files: (stripe, level) → file number → meta.
    pub files: BTreeMap<(u32, u8), BTreeMap<u64, FileMeta>>,
    /// The partitioner's name; `None` in manifests written before it was recorded.
    pub partitioner: Option<String>,
}

impl ManifestState {
    /// Applies one edit.
    pub fn apply(&mut self, e: Edit) {
        match e {
            Edit::Stripes(n) => self.stripes = n,
            Edit::LogNumber(n) => self.log_number = self.log_number.max(n),
            Edit::NextFile(n) => self.next_file = self.next_file.max(n),
            Edit::LastSeq(n) => self.last_seq = self.last_seq.max(n),
            Edit::AddFile {
                stripe,
                level,
                meta,
            } => {
                self.next_file = self.next_file.max(meta.id + 1);
                self.files
                    .entry((stripe, level))
                    .or_default()
                    .insert(meta.id, meta);
            }
            Edit::RemoveFile { stripe, level, id } => {
                if let Some(m) = self.files.get_mut(&(stripe, level)) {
                    m.remove(&id);
                }
            }
            Edit::Partitioner(name) => self.partitioner = Some(name),
        }
    }

    /// Every live file: `(stripe, level, meta)`.
    pub fn live_files(&self) -> impl Iterator<Item = (u32, u8, &FileMeta)> {
        self.files
            .iter()
            .flat_map(|((s, l), files)| files.values().map(move |m| (*s, *l, m)))
    }

    /// The edits that rebuild this state from nothing.
    pub fn snapshot(&self) -> Vec<Edit> {
        let mut v = vec![
            Edit::Stripes(self.stripes),
            Edit::LogNumber(self.log_number),
            Edit::NextFile(self.next_file),
            Edit::LastSeq(self.last_seq),
        ];
        if let Some(p) = &self.partitioner {
            v.push(Edit::Partitioner(p.clone()));
        }
        for ((stripe, level), files) in &self.files {
            for meta in files.values() {
                v.push(Edit::AddFile {
                    stripe: *stripe,
                    level: *level,
                    meta: meta.clone(),
                });
            }
        }
        v
    }
}

/// A manifest as read: the state, and where an incomplete last record starts, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestRead {
    /// The state its complete records describe.
    pub state: ManifestState,
    /// Offset of a torn last record (a crash while appending; its edits were never relied
    /// upon, see `docs/format/lsm.md`).
    pub torn_at: Option<u64>,
}

/// Reads a manifest file. A torn last record is ignored; a record that is complete but fails
/// its checksum, or does not decode, is corruption reported with its offset.
pub fn read_manifest(data: &[u8], path: &Path) -> Result<ManifestRead> {
    if data.len() < MANIFEST_MAGIC.len() || &data[..8] != MANIFEST_MAGIC {
        return Err(Error::corruption(path, 0, "bad manifest magic"));
    }
    let contents = record::read_log(data, MANIFEST_MAGIC.len());
    let torn_at = match contents.end {
        LogEnd::Clean => None,
        LogEnd::TornTail { offset, .. } => Some(offset),
        LogEnd::Corrupt { offset, reason } => return Err(Error::corruption(path, offset, reason)),
    };
    let mut state = ManifestState::default();
    let mut end = MANIFEST_MAGIC.len() as u64;
    for (off, payload) in contents.records {
        let edits =
            decode_edits(payload).map_err(|e| e.in_file(path, off + record::HEADER as u64))?;
        for e in edits {
            state.apply(e);
        }
        end = off + (record::HEADER + payload.len()) as u64;
    }
    if state.stripes == 0 {
        return Err(Error::corruption(
            path,
            end,
            "the manifest's records end here without a stripe count (no snapshot record)",
        ));
    }
    Ok(ManifestRead { state, torn_at })
}

/// Appends edits to the live manifest.
pub struct ManifestWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    /// Number of the manifest file.
    pub number: u64,
    /// Bytes written.
    pub bytes: u64,
}

impl ManifestWriter {
    /// Writes a new manifest holding `state` and makes it current (atomically).
    pub fn create(
        fs: &dyn Fs,
        dir: &Path,
        number: u64,
        state: &ManifestState,
    ) -> Result<ManifestWriter> {
        let path = dir.join(manifest_name(number));
        let mut file = fs.create(&path).map_err(Error::io(&path))?;
        let mut buf = MANIFEST_MAGIC.to_vec();
        record::frame(&mut buf, &encode_edits(&state.snapshot()));
        file.append(&buf).map_err(Error::io(&path))?;
        file.sync().map_err(Error::io(&path))?;
        crate::crash_point::reached(crate::crash_point::MANIFEST_WRITTEN);
        let tmp = dir.join("CURRENT.tmp");
        let mut cur = fs.create(&tmp).map_err(Error::io(&tmp))?;
        cur.append(format!("{}\n", manifest_name(number)).as_bytes())
            .map_err(Error::io(&tmp))?;
        cur.sync().map_err(Error::io(&tmp))?;
        drop(cur);
        crate::crash_point::reached(crate::crash_point::MANIFEST_CURRENT_TMP);
        let current = dir.join("CURRENT");
        fs.rename(&tmp, &current).map_err(Error::io(&current))?;
        fs.sync_dir(dir).map_err(Error::io(dir))?;
        Ok(ManifestWriter {
            file,
            path,
            number,
            bytes: buf.len() as u64,
        })
    }

    /// Appends one atomic group of edits and syncs it.
    pub fn append(&mut self, edits: &[Edit]) -> Result<()> {
        let mut buf = Vec::new();
        record::frame(&mut buf, &encode_edits(edits));
        self.file.append(&buf).map_err(Error::io(&self.path))?;
        self.file.sync().map_err(Error::io(&self.path))?;
        self.bytes += buf.len() as u64;
        Ok(())
    }
}

/// The live manifest of a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    /// Number of the manifest `CURRENT` names.
    pub number: u64,
    /// Its contents.
    pub read: ManifestRead,
}

/// The manifest number `CURRENT`'s contents name.
pub fn parse_current(data: &[u8], current: &Path) -> Result<u64> {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .and_then(|n| n.strip_prefix("MANIFEST-"))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| Error::corruption(current, 0, "CURRENT does not name a manifest"))
}

/// Reads `CURRENT` and the manifest it names, or `None` when there is no `CURRENT`.
pub fn load_current(fs: &dyn Fs, dir: &Path) -> Result<Option<Current>> {
    let current = dir.join(crate::filename::CURRENT);
    let data = match fs.read(&current) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(Error::io(current)(source)),
    };
    let number = parse_current(&data, &current)?;
    let path = dir.join(manifest_name(number));
    let data = fs.read(&path).map_err(Error::io(&path))?;
    let read = read_manifest(&data, &path)?;
    Ok(Some(Current { number, read }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_roundtrip() {
        let edits = vec![
            Edit::Stripes(256),
            Edit::LogNumber(7),
            Edit::AddFile {
                stripe: 3,
                level: 1,
                meta: FileMeta {
                    id: 9,
                    size: 100,
                    entries: 4,
                    smallest: b"a".to_vec(),
                    largest: b"z".to_vec(),
                },
            },
            Edit::RemoveFile {
                stripe: 3,
                level: 0,
                id: 8,
            },
            Edit::LastSeq(99),
            Edit::NextFile(10),
            Edit::Partitioner("native-tuple:2".into()),
        ];
        assert_eq!(decode_edits(&encode_edits(&edits)).unwrap(), edits);
    }
}
