//! hypercore@6's bitfield file: pages of `page_size` bytes (3584 by default), each holding a
//! data section (1024 B, one bit per block), a tree section (2048 B, one bit per merkle node)
//! and an index section (the rest, a flat tree of 2-bit summaries of the data bytes).
//!
//! This is a faithful port of `hypercore/lib/bitfield.js` over `memory-pager` and
//! `sparse-bitfield`, including their length bookkeeping, because the bytes of the index
//! section depend on it.

use super::flat::{self, FlatIter};

const INDEX_UPDATE_MASK: [u8; 4] = [63, 207, 243, 252];

fn map_parent_right(i: u8) -> u8 {
    let a = i >> 4;
    let b = i & 15;
    let f = |n: u8| match n {
        15 => 3,
        0 => 0,
        _ => 1,
    };
    (f(a) << 2) | f(b)
}

fn map_parent_left(i: u8) -> u8 {
    map_parent_right(i) << 4
}

fn index_value(n: u8) -> u8 {
    match n {
        255 => 192,
        0 => 0,
        _ => 64,
    }
}

/// One `sparse-bitfield` view into the shared pages.
#[derive(Clone, Copy, Debug)]
struct View {
    page_size: u64,
    page_offset: usize,
    byte_length: u64,
}

/// The in-memory bitfield and the set of pages that changed since the last flush.
#[derive(Clone, Debug)]
pub struct Bitfield {
    page_size: usize,
    pages: Vec<Option<Box<[u8]>>>,
    pages_len: u64,
    data: View,
    tree: View,
    index: View,
    ite: FlatIter,
    updated: std::collections::BTreeSet<u64>,
}

/// Which view an operation applies to.
#[derive(Clone, Copy)]
enum Which {
    Data,
    Tree,
    Index,
}

impl Bitfield {
    /// A bitfield with `page_size`-byte pages (3072 + a power of two), loaded with `pages`.
    pub fn new(page_size: usize, pages: Vec<Vec<u8>>) -> Bitfield {
        let index_size = (page_size - 3072) as u64;
        let pages_len = pages.len() as u64;
        let mut stored = Vec::with_capacity(pages.len());
        for p in pages {
            if p.iter().all(|&b| b == 0) {
                stored.push(None);
            } else {
                let mut buf = vec![0u8; page_size];
                let n = p.len().min(page_size);
                buf[..n].copy_from_slice(&p[..n]);
                stored.push(Some(buf.into_boxed_slice()));
            }
        }
        let view = |ps: u64, off: usize| View {
            page_size: ps,
            page_offset: off,
            byte_length: pages_len * ps,
        };
        Bitfield {
            page_size,
            pages: stored,
            pages_len,
            data: view(1024, 0),
            tree: view(2048, 1024),
            index: view(index_size, 3072),
            ite: FlatIter::default(),
            updated: Default::default(),
        }
    }

    fn view(&self, w: Which) -> View {
        match w {
            Which::Data => self.data,
            Which::Tree => self.tree,
            Which::Index => self.index,
        }
    }

    fn view_mut(&mut self, w: Which) -> &mut View {
        match w {
            Which::Data => &mut self.data,
            Which::Tree => &mut self.tree,
            Which::Index => &mut self.index,
        }
    }

    fn get_byte(&self, w: Which, i: u64) -> u8 {
        let v = self.view(w);
        let j = i / v.page_size;
        let o = (i % v.page_size) as usize + v.page_offset;
        match self.pages.get(j as usize) {
            Some(Some(p)) => p[o],
            _ => 0,
        }
    }

    fn set_byte(&mut self, w: Which, i: u64, b: u8) -> bool {
        let v = self.view(w);
        let j = i / v.page_size;
        let o = (i % v.page_size) as usize + v.page_offset;
        if self.pages.len() <= j as usize {
            self.pages.resize(j as usize + 1, None);
        }
        if j >= self.pages_len {
            self.pages_len = j + 1;
        }
        let page_size = self.page_size;
        let page =
            self.pages[j as usize].get_or_insert_with(|| vec![0u8; page_size].into_boxed_slice());
        if page[o] == b {
            return false;
        }
        page[o] = b;
        let vm = self.view_mut(w);
        if i >= vm.byte_length {
            vm.byte_length = i + 1;
        }
        self.updated.insert(j);
        true
    }

    fn get_bit(&self, w: Which, i: u64) -> bool {
        self.get_byte(w, i / 8) & (128 >> (i & 7)) != 0
    }

    fn set_bit(&mut self, w: Which, i: u64) -> bool {
        let b = self.get_byte(w, i / 8) | (128 >> (i & 7));
        self.set_byte(w, i / 8, b)
    }

    /// True when block `i` is present.
    pub fn has_block(&self, i: u64) -> bool {
        self.get_bit(Which::Data, i)
    }

    /// Number of leading present blocks (the feed length of a contiguous single-writer feed).
    pub fn contiguous_blocks(&self) -> u64 {
        let mut n = 0u64;
        loop {
            let byte = self.get_byte(Which::Data, n / 8);
            if byte == 0xff {
                n += 8;
                continue;
            }
            let mut k = 0;
            while k < 8 && byte & (128 >> k) != 0 {
                k += 1;
            }
            return n + k;
        }
    }

    /// Marks block `i` present (hypercore's `Bitfield.set(i, true)`).
    pub fn set_block(&mut self, i: u64) {
        let o = (i & 7) as usize;
        let byte_index = i / 8;
        let old = self.get_byte(Which::Data, byte_index);
        let v = old | (128 >> o);
        if !self.set_byte(Which::Data, byte_index, v) {
            return;
        }
        self.set_index(byte_index, v);
    }

    fn set_index(&mut self, i: u64, value: u8) {
        let o = (i & 3) as usize;
        let i = i / 4;
        let start = 2 * i;
        let mut byte = (self.get_byte(Which::Index, start) & INDEX_UPDATE_MASK[o])
            | (index_value(value) >> (2 * o));
        let len_bits = self.index.byte_length * 8;
        let max_length = self.pages_len * self.index.page_size;
        let mut ite = self.ite;
        ite.seek(start);
        while ite.index < max_length && self.set_byte(Which::Index, ite.index, byte) {
            if ite.is_left() {
                let s = ite.sibling();
                byte = map_parent_left(byte) | map_parent_right(self.get_byte(Which::Index, s));
            } else {
                let s = ite.sibling();
                byte = map_parent_right(byte) | map_parent_left(self.get_byte(Which::Index, s));
            }
            ite.parent();
        }
        self.ite = ite;
        if len_bits != self.index.byte_length * 8 {
            self.expand(len_bits);
        }
    }

    fn expand(&mut self, len: u64) {
        let roots = flat::full_roots(2 * len);
        let mut ite = self.ite;
        for r in roots {
            ite.seek(r);
            let mut byte = self.get_byte(Which::Index, ite.index);
            loop {
                if ite.is_left() {
                    let s = ite.sibling();
                    byte = map_parent_left(byte) | map_parent_right(self.get_byte(Which::Index, s));
                } else {
                    let s = ite.sibling();
                    byte = map_parent_right(byte) | map_parent_left(self.get_byte(Which::Index, s));
                }
                let p = ite.parent();
                if 8 * p >= self.index.byte_length * 8 || !self.set_byte(Which::Index, p, byte) {
                    break;
                }
            }
        }
        self.ite = ite;
    }

    /// Marks merkle node `index` present and every parent whose children are both present
    /// (hypercore's `TreeIndex.set`).
    pub fn set_tree(&mut self, mut index: u64) {
        if !self.set_bit(Which::Tree, index) {
            return;
        }
        while self.get_bit(Which::Tree, flat::sibling(index)) {
            index = flat::parent(index);
            if !self.set_bit(Which::Tree, index) {
                break;
            }
        }
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Takes the pages changed since the last call, as `(page number, page bytes)`.
    pub fn take_updates(&mut self) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        let _ = self.drain_updates(|j, bytes| {
            out.push((j, bytes.to_vec()));
            Ok::<(), ()>(())
        });
        out
    }

    /// Hands each page changed since the last call to `write` (page number, page bytes), in
    /// ascending page order, without copying it. A page that `write` fails on, and those
    /// after it, stay marked as changed.
    pub fn drain_updates<E>(
        &mut self,
        mut write: impl FnMut(u64, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        while let Some(j) = self.updated.pop_first() {
            let done = match self.pages.get(j as usize) {
                Some(Some(p)) => write(j, p),
                _ => write(j, &vec![0u8; self.page_size]),
            };
            if let Err(e) = done {
                self.updated.insert(j);
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_updates_hands_out_changed_pages_once_and_keeps_failed_ones() {
        let mut b = Bitfield::new(3584, Vec::new());
        b.set_block(0);
        b.set_tree(0);
        let mut seen = Vec::new();
        let failed: Result<(), &str> = b.drain_updates(|_, _| Err("disk full"));
        assert_eq!(failed, Err("disk full"));
        b.drain_updates(|j, page| {
            seen.push((j, page.len(), page[0]));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(seen.len(), 1, "the page that failed is written again");
        assert_eq!(seen[0].1, 3584);
        assert_ne!(seen[0].2, 0, "block 0 is marked in the data section");
        assert!(b.take_updates().is_empty(), "nothing changed since");
        b.set_block(1);
        assert_eq!(b.take_updates().len(), 1);
    }
}
