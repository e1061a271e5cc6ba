//! [`Time`]: an instant (seconds and nanoseconds since the Unix epoch) with a UTC offset.

use std::fmt;

use chrono::{DateTime, FixedOffset, Offset, TimeZone, Utc};

/// Largest absolute UTC offset accepted, in seconds (just under a day, as chrono allows).
pub const MAX_OFFSET_S: i32 = 86_399;

/// An instant with the UTC offset it was written at.
///
/// Ordered by instant, then by offset. Nanosecond precision; the range is that of `i64`
/// seconds (far beyond any calendar). Codecs with less precision (centidb: milliseconds and
/// 15-minute offsets) refuse values they cannot keep exactly instead of rounding silently.
///
/// ```
/// use strata_key::Time;
/// let t = Time::from_unix_ms(1_700_000_000_123, 19_800).unwrap();
/// assert_eq!(t.to_string(), "2023-11-15T03:43:20.123+05:30");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time {
    secs: i64,
    nanos: u32,
    offset_s: i32,
}

/// Why a [`Time`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// Nanoseconds must be below 1,000,000,000.
    #[error("nanoseconds {0} out of range 0..1000000000")]
    Nanos(u32),
    /// The offset must be within ±86,399 seconds.
    #[error("UTC offset {0} s out of range ±86399")]
    Offset(i32),
}

impl Time {
    /// An instant `secs` + `nanos` after the epoch, shown at `offset_s` east of UTC.
    pub fn new(secs: i64, nanos: u32, offset_s: i32) -> Result<Time, TimeError> {
        if nanos >= 1_000_000_000 {
            return Err(TimeError::Nanos(nanos));
        }
        if !(-MAX_OFFSET_S..=MAX_OFFSET_S).contains(&offset_s) {
            return Err(TimeError::Offset(offset_s));
        }
        Ok(Time {
            secs,
            nanos,
            offset_s,
        })
    }

    /// From milliseconds since the epoch (negative before 1970).
    pub fn from_unix_ms(ms: i64, offset_s: i32) -> Result<Time, TimeError> {
        let secs = ms.div_euclid(1000);
        let nanos = (ms.rem_euclid(1000) as u32) * 1_000_000;
        Time::new(secs, nanos, offset_s)
    }

    /// From nanoseconds since the epoch; `None` when the seconds overflow `i64`.
    pub fn from_unix_ns(ns: i128, offset_s: i32) -> Option<Time> {
        let secs = i64::try_from(ns.div_euclid(1_000_000_000)).ok()?;
        let nanos = ns.rem_euclid(1_000_000_000) as u32;
        Time::new(secs, nanos, offset_s).ok()
    }

    /// Whole seconds since the epoch (floor).
    pub fn secs(&self) -> i64 {
        self.secs
    }

    /// Nanoseconds within the second, `0..1_000_000_000`.
    pub fn nanos(&self) -> u32 {
        self.nanos
    }

    /// UTC offset in seconds east of Greenwich.
    pub fn offset_s(&self) -> i32 {
        self.offset_s
    }

    /// Nanoseconds since the epoch.
    pub fn unix_ns(&self) -> i128 {
        self.secs as i128 * 1_000_000_000 + self.nanos as i128
    }

    /// Milliseconds since the epoch when the instant is a whole number of milliseconds.
    pub fn unix_ms_exact(&self) -> Option<i64> {
        if !self.nanos.is_multiple_of(1_000_000) {
            return None;
        }
        self.secs
            .checked_mul(1000)?
            .checked_add((self.nanos / 1_000_000) as i64)
    }

    /// The chrono form, when chrono's calendar reaches this instant.
    pub fn to_chrono(&self) -> Option<DateTime<FixedOffset>> {
        let off = FixedOffset::east_opt(self.offset_s)?;
        let utc = DateTime::<Utc>::from_timestamp(self.secs, self.nanos)?;
        Some(off.from_utc_datetime(&utc.naive_utc()))
    }
}

impl<Tz: TimeZone> From<DateTime<Tz>> for Time {
    fn from(d: DateTime<Tz>) -> Time {
        let offset_s = d.offset().fix().local_minus_utc();
        Time {
            secs: d.timestamp(),
            nanos: d.timestamp_subsec_nanos().min(999_999_999),
            offset_s,
        }
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_chrono() {
            Some(d) => write!(
                f,
                "{}",
                d.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
                    .replace("+00:00", "Z")
            ),
            None => write!(f, "@{}.{:09}{:+}s", self.secs, self.nanos, self.offset_s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_epoch_ms() {
        let t = Time::from_unix_ms(-1000, 0).unwrap();
        assert_eq!((t.secs(), t.nanos()), (-1, 0));
        let t = Time::from_unix_ms(-1, 0).unwrap();
        assert_eq!((t.secs(), t.nanos()), (-1, 999_000_000));
        assert_eq!(t.unix_ms_exact(), Some(-1));
        assert_eq!(t.to_string(), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn limits() {
        assert!(Time::new(0, 1_000_000_000, 0).is_err());
        assert!(Time::new(0, 0, 86_400).is_err());
        assert_eq!(Time::from_unix_ns(-1, 0).unwrap().nanos(), 999_999_999);
    }
}
