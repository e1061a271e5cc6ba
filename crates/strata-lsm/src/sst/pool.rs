//! A process-wide pool of 8 KiB chunks of memory for the in-memory structures a point read
//! touches at random among tens of megabytes (the restart heads of mapped tables, the
//! filters' lines): chunks come from 2 MiB regions of anonymous memory asked for as
//! transparent huge pages (`MADV_HUGEPAGE`, before their first touch), so that such a touch
//! does not also miss the TLB (with 4 KiB pages nearly every one did: a page walk before the
//! line itself). A chunk is owned by one [`Chunks`] at a time and given back, zeroed, when
//! that is dropped; regions are never unmapped (the pool keeps the most chunks ever in use at
//! once). Where huge pages are not granted, regions are plain pages: same behaviour.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::sync::lock;

/// Words of a chunk.
pub(crate) const CHUNK_WORDS: usize = 1024;

/// 8 KiB, aligned to two cache lines.
#[repr(C, align(128))]
pub(crate) struct Chunk(pub(crate) [AtomicU64; CHUNK_WORDS]);

/// Bytes of a region of the pool: one huge page.
const REGION: usize = 2 << 20;
/// Chunks of a region.
pub(crate) const REGION_CHUNKS: usize = REGION / std::mem::size_of::<Chunk>();

/// Chunks not in use, every word zero.
static POOL: Mutex<Vec<&'static Chunk>> = Mutex::new(Vec::new());

/// Zeroed chunks taken from the pool, given back (zeroed) when dropped.
pub(crate) struct Chunks(Box<[&'static Chunk]>);

impl Chunks {
    /// `n` chunks, every word zero (the pool grows by a region when short).
    pub(crate) fn new(n: usize) -> Chunks {
        let mut pool = lock(&POOL);
        while pool.len() < n {
            pool.extend(new_region());
        }
        let from = pool.len() - n;
        Chunks(pool.split_off(from).into())
    }

    /// Chunk `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&Chunk> {
        self.0.get(i).copied()
    }

    /// Number of chunks.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.0.len() * std::mem::size_of::<Chunk>()
    }
}

impl Drop for Chunks {
    fn drop(&mut self) {
        for c in self.0.iter() {
            for w in &c.0 {
                w.store(0, Ordering::Relaxed);
            }
        }
        lock(&POOL).extend_from_slice(&self.0);
    }
}

/// A new region's chunks (zeroed): a huge page when the system grants one, else plain memory.
fn new_region() -> &'static [Chunk] {
    huge_region().unwrap_or_else(|| {
        Box::leak(
            (0..REGION_CHUNKS)
                .map(|_| Chunk(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect::<Box<[Chunk]>>(),
        )
    })
}

/// A region of anonymous memory aligned to its size and advised `MADV_HUGEPAGE` before its
/// first touch (so that its first fault maps one huge page), never unmapped. `None` when the
/// memory cannot be mapped.
#[cfg(all(target_os = "linux", not(miri)))]
fn huge_region() -> Option<&'static [Chunk]> {
    // Twice the size, to find a whole aligned region in it (only the pages touched count).
    let map = memmap2::MmapMut::map_anon(2 * REGION).ok()?;
    let base = map.as_ptr() as usize;
    // (Anonymous maps start on a page: the skip is a whole number of pages.)
    let skip = base.next_multiple_of(REGION) - base;
    // A hint: refused, the region keeps 4 KiB pages.
    let _ = map.advise_range(memmap2::Advice::HugePage, skip, REGION);
    let map: &'static mut memmap2::MmapMut = Box::leak(Box::new(map));
    let bytes = &mut map[skip..skip + REGION];
    // SAFETY: `bytes` is `REGION` bytes of a private anonymous map, so zero-filled; leaked, so
    // it lives as long as the process; borrowed mutably here and never used again other than
    // through the returned slice, which covers exactly those bytes (`REGION_CHUNKS` chunks of
    // `REGION / REGION_CHUNKS` bytes). Its start is aligned to `REGION` (2 MiB), more than a
    // `Chunk`'s alignment (128). Zero bytes are valid `AtomicU64`s (so valid chunks), and the
    // memory is only ever accessed through those atomics. Tested by
    // `sst::pool::tests::chunks_start_zero` (every word of fresh and reused chunks, over
    // more than a region).
    Some(unsafe { std::slice::from_raw_parts(bytes.as_mut_ptr().cast::<Chunk>(), REGION_CHUNKS) })
}

/// (No huge pages asked for elsewhere.)
#[cfg(not(all(target_os = "linux", not(miri))))]
fn huge_region() -> Option<&'static [Chunk]> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_zero(c: &Chunks) -> bool {
        (0..c.len()).all(|i| {
            c.get(i)
                .is_some_and(|c| c.0.iter().all(|w| w.load(Ordering::Relaxed) == 0))
        })
    }

    /// Chunks start with every word zero: fresh ones (more than a region's worth, so a
    /// second region is mapped) and ones given back after every word was written; each is
    /// writable on its own.
    #[test]
    fn chunks_start_zero() {
        for round in 0..3 {
            let c = Chunks::new(REGION_CHUNKS + 3);
            assert_eq!(c.bytes(), (REGION_CHUNKS + 3) * 8192);
            assert!(all_zero(&c), "round {round}");
            for i in 0..c.len() {
                for (j, w) in c.get(i).unwrap().0.iter().enumerate() {
                    w.store((i * CHUNK_WORDS + j) as u64 | 1, Ordering::Relaxed);
                }
            }
            for i in 0..c.len() {
                let w = &c.get(i).unwrap().0;
                assert_eq!(
                    w[7].load(Ordering::Relaxed),
                    (i * CHUNK_WORDS + 7) as u64 | 1
                );
            }
            assert!(c.get(c.len()).is_none());
        }
    }
}
