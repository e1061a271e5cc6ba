//! Step 4 of a repair: the WALs, replayed up to their first damaged record.

use super::Job;
use crate::error::{Error, Result};
use crate::filename::FileKind;
use crate::manifest::ManifestState;
use crate::record;
use crate::wal::{self, WalWriter};

impl Job<'_> {
    /// Step 4: the WALs to replay, up to the first damaged record; the damaged WAL's intact
    /// prefix is copied into a new WAL, and it and every later WAL are moved aside.
    pub(super) fn salvage_wals(&mut self, state: &mut ManifestState) -> Result<()> {
        let mut numbers: Vec<u64> = self
            .names
            .iter()
            .filter_map(|n| wal::parse_wal_name(n))
            .filter(|n| *n >= state.log_number)
            .collect();
        numbers.sort_unstable();
        state.next_file = self
            .names
            .iter()
            .filter_map(|n| FileKind::parse(n)?.number())
            .max()
            .unwrap_or(0)
            .max(state.next_file)
            + 1;
        for (i, n) in numbers.iter().enumerate() {
            let name = wal::wal_name(*n);
            let path = self.path(&name);
            let data = self.fs.read(&path).map_err(Error::io(&path))?;
            let last = i + 1 == numbers.len();
            let version = match wal::version_of(&data) {
                Some(v) => v,
                None if wal::is_unwritten(&data) && last => {
                    continue; // created, never written: a torn tail
                }
                None => {
                    self.r
                        .lost
                        .push(format!("{name}: bad magic, its records are lost"));
                    return self.move_wals_aside(&numbers[i..]);
                }
            };
            let Some((offset, reason, good_end)) = first_damage(&data, version, last) else {
                continue;
            };
            let after = wal::scan_records(&data, version)
                .records
                .iter()
                .filter(|r| r.offset > offset)
                .count();
            self.r.lost.push(format!(
                "{name}: damaged at offset {offset} ({reason}); {after} intact record(s) after \
                 it are not replayed"
            ));
            self.copy_prefix(state, &name, &data[..good_end], version)?;
            return self.move_wals_aside(&numbers[i..]);
        }
        Ok(())
    }

    /// Copies the records of `prefix` (the intact start of WAL `name`) into a new WAL, which
    /// is replayed after the earlier ones.
    fn copy_prefix(
        &mut self,
        state: &mut ManifestState,
        name: &str,
        prefix: &[u8],
        version: u8,
    ) -> Result<()> {
        let mut w = WalWriter::create(self.fs.as_ref(), &self.dir, state.next_file)?;
        state.next_file += 1;
        let to = self.path(&wal::wal_name(w.number()));
        let (records, _) = wal::read_records(prefix, version);
        for r in &records {
            if let Ok((seq, ops)) = wal::decode_record(&r.payload, version) {
                w.append(seq, &ops.into_iter().collect())
                    .map_err(Error::io(&to))?;
            }
        }
        w.sync().map_err(Error::io(&to))?;
        self.r.actions.push(format!(
            "{name}: its {} record(s) before the damage copied to {}",
            records.len(),
            wal::wal_name(w.number())
        ));
        Ok(())
    }

    /// Moves WALs aside: the damaged one (first) and those written after it.
    fn move_wals_aside(&mut self, numbers: &[u64]) -> Result<()> {
        for (i, n) in numbers.iter().enumerate() {
            let name = wal::wal_name(*n);
            if i > 0 {
                let data = self.fs.read(&self.path(&name)).unwrap_or_default();
                let records = match wal::version_of(&data) {
                    Some(v) => wal::scan_records(&data, v).records.len(),
                    None => 0,
                };
                self.r.lost.push(format!(
                    "{name}: written after the damage; its {records} record(s) are not replayed"
                ));
            }
            self.move_aside(&name)?;
        }
        Ok(())
    }
}

/// The first damaged record of a WAL of `version` (`last`: the newest, where a torn tail and
/// an unsynced hole are allowed): its offset, what is wrong, and where the intact records
/// before it end.
fn first_damage(data: &[u8], version: u8, last: bool) -> Option<(u64, String, usize)> {
    let (records, end) = wal::read_records(data, version);
    let mut good_end = wal::MAGIC_LEN;
    for r in &records {
        if let Err(e) = wal::decode_record(&r.payload, version) {
            return Some((r.offset, e.what, good_end));
        }
        good_end = r.end as usize;
    }
    match end {
        record::LogEnd::Corrupt { offset, reason } => match wal::unsynced_hole(data, offset) {
            // The end of the recoverable prefix, as a torn tail.
            Some(hole) if !last => Some((offset, hole, good_end)),
            Some(_) => None,
            None => Some((offset, reason, good_end)),
        },
        record::LogEnd::TornTail { offset, reason } if !last => Some((offset, reason, good_end)),
        _ => None,
    }
}
