//! [`MemEngine`]: an in-memory [`Engine`] for tests and `Db::memory()`.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use crate::engine::{Direction, Engine, KeyRange, KvIter, KvPair, Snapshot, WriteBatch};
use crate::error::{Error, Result};
use crate::sync::{read, write};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

/// An in-memory engine: a copy-on-write ordered map. A snapshot shares the map; the next
/// write after a snapshot copies it (fine for tests and small data sets).
#[derive(Default)]
pub struct MemEngine {
    map: RwLock<Arc<Map>>,
    closed: AtomicBool,
}

impl MemEngine {
    /// An empty engine.
    pub fn new() -> MemEngine {
        MemEngine::default()
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    fn current(&self) -> Arc<Map> {
        Arc::clone(&read(&self.map))
    }
}

struct MemSnapshot(Arc<Map>);

impl Snapshot for MemSnapshot {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.0.get(key).cloned())
    }

    fn range(&self, range: KeyRange, direction: Direction) -> Result<KvIter> {
        Ok(Box::new(MemIter {
            map: Arc::clone(&self.0),
            range,
            direction,
            buf: Vec::new(),
            done: false,
            chunk: CHUNK_FIRST,
        }))
    }
}

/// Iterates an owned map in chunks, narrowing the range as it goes.
struct MemIter {
    map: Arc<Map>,
    range: KeyRange,
    direction: Direction,
    buf: Vec<KvPair>,
    done: bool,
    chunk: usize,
}

/// Chunks start small (a cursor that seeks and reads a few pairs copies little) and grow for
/// long scans.
const CHUNK_FIRST: usize = 4;
const CHUNK_MAX: usize = 256;

impl MemIter {
    fn refill(&mut self) {
        if self.done {
            return;
        }
        let bounds = (self.range.start.clone(), self.range.end.clone());
        if let (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) =
            (&bounds.0, &bounds.1)
        {
            let empty = s > e
                || (s == e
                    && !matches!(
                        (&bounds.0, &bounds.1),
                        (Bound::Included(_), Bound::Included(_))
                    ));
            if empty {
                self.done = true;
                return;
            }
        }
        let iter = self.map.range::<Vec<u8>, _>(bounds);
        let want = self.chunk;
        self.chunk = (self.chunk * 4).min(CHUNK_MAX);
        let mut chunk: Vec<KvPair> = match self.direction {
            Direction::Forward => iter
                .take(want)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            Direction::Reverse => iter
                .rev()
                .take(want)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        };
        if chunk.len() < want {
            self.done = true;
        }
        if let Some((last, _)) = chunk.last() {
            match self.direction {
                Direction::Forward => self.range.start = Bound::Excluded(last.clone()),
                Direction::Reverse => self.range.end = Bound::Excluded(last.clone()),
            }
        }
        chunk.reverse();
        self.buf = chunk;
    }
}

impl Iterator for MemIter {
    type Item = Result<KvPair>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            self.refill();
        }
        self.buf.pop().map(Ok)
    }
}

impl Engine for MemEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        Ok(self.current().get(key).cloned())
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        self.check_open()?;
        let mut guard = write(&self.map);
        for (index, c) in batch.conditions.iter().enumerate() {
            if !c.holds(guard.get(c.key()).map(Vec::as_slice)) {
                return Err(Error::ConditionFailed {
                    index,
                    reason: format!("{c:?}"),
                });
            }
        }
        let map = Arc::make_mut(&mut guard);
        for (k, v) in batch.iter() {
            match v {
                Some(v) => {
                    map.insert(k.to_vec(), v.to_vec());
                }
                None => {
                    map.remove(k);
                }
            }
        }
        Ok(())
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        self.check_open()?;
        Ok(Arc::new(MemSnapshot(self.current())))
    }

    fn flush(&self) -> Result<()> {
        self.check_open()
    }

    fn compact(&self) -> Result<()> {
        self.check_open()
    }

    fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Condition, Cursor};

    #[test]
    fn snapshot_isolation_and_reverse() {
        let e = MemEngine::new();
        for i in 0..600u32 {
            crate::engine::put(&e, &i.to_be_bytes(), b"v").unwrap();
        }
        let snap = e.snapshot().unwrap();
        crate::engine::put(&e, &9999u32.to_be_bytes(), b"new").unwrap();
        let fwd: Vec<_> = snap
            .range(KeyRange::all(), Direction::Forward)
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(fwd.len(), 600);
        let rev: Vec<_> = e
            .range(
                KeyRange::half_open(10u32.to_be_bytes(), 20u32.to_be_bytes()),
                Direction::Reverse,
            )
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect();
        assert_eq!(rev.len(), 10);
        assert_eq!(rev[0], 19u32.to_be_bytes());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 200, ..Default::default() })]

        /// The default cursors (of the engine and of a snapshot, built on `range`) against
        /// the model: random ranges, both directions, seeks, rewinds; writes after the cursor
        /// was made stay invisible to it.
        #[test]
        fn default_cursors_match_model(
            m in crate::iter::testing::model(),
            r in crate::iter::testing::range(),
            rev in proptest::prelude::any::<bool>(),
            ops in crate::iter::testing::cursor_ops(),
        ) {
            use crate::iter::testing::check_cursor;
            let e = MemEngine::new();
            let live: Map = m.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
            for (k, v) in &live {
                crate::engine::put(&e, k, v).unwrap();
            }
            let dir = if rev { Direction::Reverse } else { Direction::Forward };
            let mut c = e.cursor(r.clone(), dir).unwrap();
            let snap = e.snapshot().unwrap();
            let mut sc = snap.cursor(r.clone(), dir).unwrap();
            crate::engine::put(&e, b"\x01", b"later").unwrap();
            check_cursor(&mut c, &live, &r, dir, &ops)?;
            check_cursor(&mut sc, &live, &r, dir, &ops)?;
        }
    }

    #[test]
    fn cursor_pairs_copy_from_the_current_position() {
        let e = MemEngine::new();
        for i in 0..10u8 {
            crate::engine::put(&e, &[i], &[i]).unwrap();
        }
        let mut c = e.cursor(KeyRange::all(), Direction::Reverse).unwrap();
        c.seek(&[6]).unwrap();
        let got: Vec<_> = crate::engine::CursorPairs::new(c)
            .map(|p| p.unwrap().0[0])
            .collect();
        assert_eq!(got, vec![6, 5, 4, 3, 2, 1, 0]);
    }

    #[test]
    fn conditions_are_atomic() {
        let e = MemEngine::new();
        let mut b = WriteBatch::new();
        b.put(b"a", b"1").require(Condition::Absent(b"a".to_vec()));
        e.write(b.clone()).unwrap();
        assert!(matches!(
            e.write(b),
            Err(Error::ConditionFailed { index: 0, .. })
        ));
        assert_eq!(e.get(b"a").unwrap(), Some(b"1".to_vec()));
    }
}
