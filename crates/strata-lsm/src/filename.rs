//! The names of the files in a database directory (LevelDB's `filename.cc`).
//!
//! | name | file |
//! |---|---|
//! | `CURRENT` | names the live manifest |
//! | `CURRENT.tmp` | a `CURRENT` being written |
//! | `LOCK` | the directory lock (holds the writer's pid) |
//! | `MANIFEST-{n:06}` | a manifest |
//! | `wal-{n:06}.log` | a write-ahead log |
//! | `{stripe:03}-{n:06}.sst` | an SST of one stripe |

/// Name of the file naming the live manifest.
pub const CURRENT: &str = "CURRENT";
/// Name of a `CURRENT` being written.
pub const CURRENT_TMP: &str = "CURRENT.tmp";
/// Name of the lock file.
pub const LOCK: &str = "LOCK";

/// Name of the WAL file with this number.
pub fn wal_name(number: u64) -> String {
    format!("wal-{number:06}.log")
}

/// Name of manifest file `n`.
pub fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// Name of an SST file: `{stripe:03}-{number:06}.sst` (the KeystoneDB naming).
pub fn sst_name(stripe: u32, number: u64) -> String {
    format!("{stripe:03}-{number:06}.sst")
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `CURRENT`.
    Current,
    /// `CURRENT.tmp`.
    CurrentTmp,
    /// `LOCK`.
    Lock,
    /// A manifest and its number.
    Manifest(u64),
    /// A WAL and its number.
    Wal(u64),
    /// An SST: stripe and number.
    Sst(u32, u64),
}

impl FileKind {
    /// The kind of the file named `name`, or `None` for a name the engine does not use.
    pub fn parse(name: &str) -> Option<FileKind> {
        match name {
            CURRENT => return Some(FileKind::Current),
            CURRENT_TMP => return Some(FileKind::CurrentTmp),
            LOCK => return Some(FileKind::Lock),
            _ => {}
        }
        if let Some(n) = name.strip_prefix("MANIFEST-") {
            return number(n).map(FileKind::Manifest);
        }
        if let Some(n) = name
            .strip_prefix("wal-")
            .and_then(|n| n.strip_suffix(".log"))
        {
            return number(n).map(FileKind::Wal);
        }
        let (s, n) = name.strip_suffix(".sst")?.split_once('-')?;
        Some(FileKind::Sst(s.parse().ok()?, number(n)?))
    }

    /// The file number, for numbered files.
    pub fn number(self) -> Option<u64> {
        match self {
            FileKind::Manifest(n) | FileKind::Wal(n) | FileKind::Sst(_, n) => Some(n),
            _ => None,
        }
    }
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Number of a WAL file name, if it is one.
pub fn parse_wal_name(name: &str) -> Option<u64> {
    match FileKind::parse(name) {
        Some(FileKind::Wal(n)) => Some(n),
        _ => None,
    }
}

/// `(stripe, number)` of an SST file name.
pub fn parse_sst_name(name: &str) -> Option<(u32, u64)> {
    match FileKind::parse(name) {
        Some(FileKind::Sst(s, n)) => Some((s, n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        assert_eq!(FileKind::parse(&wal_name(7)), Some(FileKind::Wal(7)));
        assert_eq!(
            FileKind::parse(&manifest_name(12)),
            Some(FileKind::Manifest(12))
        );
        assert_eq!(
            FileKind::parse(&sst_name(255, 1_234_567)),
            Some(FileKind::Sst(255, 1_234_567))
        );
        assert_eq!(FileKind::parse("CURRENT"), Some(FileKind::Current));
        assert_eq!(FileKind::parse("LOCK"), Some(FileKind::Lock));
        for other in [
            "wal-.log",
            "wal-+1.log",
            "MANIFEST-",
            "x.sst",
            "001-.sst",
            "notes.txt",
            "lost",
        ] {
            assert_eq!(FileKind::parse(other), None, "{other}");
        }
    }
}
