//! Partitioners: which stripe a key lives in.
//!
//! A partitioner is part of the database, not of the program that opens it: a key filed in
//! the wrong stripe is invisible to lookups. So a partitioner is a *named kind* (see
//! [`Partitioner::name`]) recorded in the manifest when the database is created, and every
//! opener rebuilds it from that record; an opener that asks for another kind is refused
//! ([`crate::Error::PartitionerMismatch`]).
//!
//! Adding a kind: add a variant, give it a name in [`Partitioner::name`] and
//! [`Partitioner::parse`], and say how it routes in [`Partitioner::stripe`] and which of its
//! partitions are *closed* in [`Partitioner::closed_partition`]. Databases recording a kind an
//! older program does not know are refused by that program (never re-filed).

use std::fmt;
use std::ops::Bound;

use crate::engine::KeyRange;

/// How keys are spread over stripes (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Partitioner {
    /// The whole key is the partition: `stripe = crc32(key) % stripes`. Name `whole-key`.
    #[default]
    WholeKey,
    /// The first `n` bytes of the key (all of it when shorter) are the partition. Name
    /// `fixed-prefix:N`.
    FixedPrefix(u32),
    /// The first `n` elements of a key encoded with Strata's native tuple codec are the
    /// partition; a key with fewer elements (or that is not a tuple) has the empty partition.
    /// Name `native-tuple:N`. Strata's tables use `native-tuple:2` (table id, partition hash).
    NativeTuplePrefix(u32),
}

impl Partitioner {
    /// The name recorded in the manifest, e.g. `native-tuple:2`.
    pub fn name(&self) -> String {
        match self {
            Partitioner::WholeKey => "whole-key".into(),
            Partitioner::FixedPrefix(n) => format!("fixed-prefix:{n}"),
            Partitioner::NativeTuplePrefix(n) => format!("native-tuple:{n}"),
        }
    }

    /// The partitioner a recorded name stands for.
    pub fn parse(name: &str) -> Result<Partitioner, String> {
        let (kind, arg) = match name.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (name, None),
        };
        let number = |a: Option<&str>| -> Result<u32, String> {
            let a = a.ok_or_else(|| format!("partitioner {name:?} needs a number"))?;
            if a.is_empty() || !a.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("partitioner {name:?}: {a:?} is not a number"));
            }
            a.parse()
                .map_err(|_| format!("partitioner {name:?}: {a:?} is too large"))
        };
        match kind {
            "whole-key" if arg.is_none() => Ok(Partitioner::WholeKey),
            "fixed-prefix" => Ok(Partitioner::FixedPrefix(number(arg)?)),
            "native-tuple" => Ok(Partitioner::NativeTuplePrefix(number(arg)?)),
            _ => Err(format!(
                "unknown partitioner {name:?} (known: whole-key, fixed-prefix:N, native-tuple:N)"
            )),
        }
    }

    /// The partition of `key`: the prefix that picks its stripe.
    pub fn partition<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        match self {
            Partitioner::WholeKey => key,
            Partitioner::FixedPrefix(n) => &key[..key.len().min(*n as usize)],
            Partitioner::NativeTuplePrefix(n) => {
                let len = strata_key::codec::native::prefix_len(key, *n as usize).unwrap_or(0);
                &key[..len.min(key.len())]
            }
        }
    }

    /// The stripe of `key` among `stripes`.
    pub fn stripe(&self, key: &[u8], stripes: u32) -> u32 {
        crc32fast::hash(self.partition(key)) % stripes.max(1)
    }

    /// The partition of `key` when it is *closed*: every key that starts with it has this
    /// same partition (so a range inside `[p, successor(p))` lies in one stripe). `None` when
    /// the kind cannot promise that for this key.
    pub fn closed_partition<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        match self {
            Partitioner::WholeKey => None,
            Partitioner::FixedPrefix(n) => key.get(..*n as usize),
            Partitioner::NativeTuplePrefix(n) => {
                // The native codec is self-delimiting: any key starting with the encoding of
                // n elements has those n elements first.
                let len = strata_key::codec::native::prefix_len(key, *n as usize)?;
                Some(&key[..len.min(key.len())])
            }
        }
    }

    /// The one stripe every key of `range` lives in, when the partitioner can tell.
    pub fn single_stripe(&self, range: &KeyRange, stripes: u32) -> Option<u32> {
        if let (Bound::Included(s), Bound::Included(e)) = (&range.start, &range.end) {
            if s == e {
                return Some(self.stripe(s, stripes));
            }
        }
        let start = match &range.start {
            Bound::Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => return None,
        };
        let part = self.closed_partition(start)?;
        if part.is_empty() {
            return None;
        }
        let inside = match (&range.end, strata_key::range::prefix_end(part)) {
            (_, None) => true,
            (Bound::Excluded(e), Some(pe)) => *e <= pe,
            (Bound::Included(e), Some(pe)) => *e < pe,
            (Bound::Unbounded, Some(_)) => false,
        };
        inside.then(|| self.stripe(start, stripes))
    }
}

impl fmt::Display for Partitioner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for Partitioner {
    type Err = String;
    fn from_str(s: &str) -> Result<Partitioner, String> {
        Partitioner::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_key::codec::native::NativeCodec;
    use strata_key::{TupleCodec, Value};

    #[test]
    fn names_round_trip() {
        for p in [
            Partitioner::WholeKey,
            Partitioner::FixedPrefix(4),
            Partitioner::NativeTuplePrefix(2),
        ] {
            assert_eq!(Partitioner::parse(&p.name()), Ok(p));
        }
        for bad in [
            "",
            "whole-key:1",
            "fixed-prefix",
            "fixed-prefix:",
            "native-tuple:x",
            "hash",
        ] {
            assert!(Partitioner::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stripes_match_the_historic_routing() {
        // Before partitioners were recorded: crc32(partition) % stripes, with the table
        // partitioner cutting after two native elements and 0 for shorter keys.
        let key = NativeCodec::new()
            .encode(&[Value::Int(3), Value::Int(77), Value::from("x")])
            .unwrap();
        let two = strata_key::codec::native::prefix_len(&key, 2).unwrap();
        let p = Partitioner::NativeTuplePrefix(2);
        assert_eq!(p.stripe(&key, 256), crc32fast::hash(&key[..two]) % 256);
        assert_eq!(p.stripe(b"not a tuple", 256), crc32fast::hash(b"") % 256);
        assert_eq!(
            Partitioner::WholeKey.stripe(b"abc", 256),
            crc32fast::hash(b"abc") % 256
        );
    }

    #[test]
    fn only_closed_partitions_make_single_stripe_ranges() {
        let f = Partitioner::FixedPrefix(2);
        assert_eq!(
            f.single_stripe(&KeyRange::prefix(b"ab"), 16),
            Some(f.stripe(b"ab", 16))
        );
        // "a" is shorter than the prefix: keys starting with it live in many stripes.
        assert_eq!(f.single_stripe(&KeyRange::prefix(b"a"), 16), None);
        assert_eq!(
            Partitioner::WholeKey.single_stripe(&KeyRange::prefix(b"ab"), 16),
            None
        );
        let point = KeyRange {
            start: Bound::Included(b"k".to_vec()),
            end: Bound::Included(b"k".to_vec()),
        };
        assert_eq!(
            Partitioner::WholeKey.single_stripe(&point, 16),
            Some(Partitioner::WholeKey.stripe(b"k", 16))
        );
    }
}
