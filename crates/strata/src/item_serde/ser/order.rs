//! The name order of a map's entries: the serializer writes a struct's fields in declaration
//! order and moves them into name order (the stored order) at the end of the map; how that
//! order is found (a struct type's order kept per thread, the previous map's order hinted, a
//! sort) and how the entries are moved.

use super::{SerError, R};

/// One entry of a map being written, as offsets into the output: where it starts (its name's
/// length), where its name's bytes start, where its value starts; and the name's first 8
/// bytes as a big-endian word (zero-padded), which orders most names without reading them.
#[derive(Clone, Copy, Default)]
pub(super) struct Entry {
    pub(super) start: usize,
    pub(super) name_at: usize,
    pub(super) value_at: usize,
    pub(super) head: u64,
}

/// The first 8 bytes of `name` as a big-endian word, zero-padded: the words of two names order
/// like the names' first 8 bytes (a tie says nothing).
#[inline]
pub(super) fn name_head(name: &[u8]) -> u64 {
    match name.first_chunk::<8>() {
        Some(w) => u64::from_be_bytes(*w),
        None => name
            .iter()
            .enumerate()
            .fold(0, |acc, (i, &b)| acc | u64::from(b) << (56 - 8 * i)),
    }
}

/// The entries of a map being written: up to 8 inline (a row's attributes), more on the heap.
pub(super) struct Entries {
    inline: [Entry; 8],
    pub(super) len: usize,
    spill: Vec<Entry>,
}

impl Entries {
    pub(super) fn new() -> Entries {
        Entries {
            inline: [Entry::default(); 8],
            len: 0,
            spill: Vec::new(),
        }
    }

    #[inline]
    pub(super) fn push(&mut self, e: Entry) {
        if self.len < self.inline.len() {
            self.inline[self.len] = e;
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.inline);
            }
            self.spill.push(e);
        }
        self.len += 1;
    }

    #[inline]
    pub(super) fn as_slice(&self) -> &[Entry] {
        if self.len <= self.inline.len() {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }

    #[inline]
    pub(super) fn as_mut_slice(&mut self) -> &mut [Entry] {
        if self.len <= self.inline.len() {
            &mut self.inline[..self.len]
        } else {
            &mut self.spill
        }
    }
}

thread_local! {
    /// The name order of the last map of at most 8 entries that needed sorting on this thread:
    /// (entry count, entry indices in name order). Only a hint, checked before use.
    static LAST_ORDER: std::cell::Cell<(u8, [u8; 8])> = const { std::cell::Cell::new((0, [0; 8])) };
}

/// The name order of a map's entries (its bytes in `out`): `order[k]` is the index of the
/// entry that goes `k`-th. Refuses a name given twice.
pub(super) fn name_order(out: &[u8], entries: &[Entry], order: &mut [usize]) -> R {
    let n = entries.len();
    let name = |i: usize| &out[entries[i].name_at..entries[i].value_at];
    // Names compare by their first 8 bytes in one word, then in full on a tie.
    let cmp = |a: usize, b: usize| {
        entries[a]
            .head
            .cmp(&entries[b].head)
            .then_with(|| name(a).cmp(name(b)))
    };
    // The order of the last map of this many entries (a type's rows come one after another)
    // is tried first; it is kept only if the names come strictly ascending in it, which
    // proves it is the name order and that no name repeats.
    let hinted = n <= 8
        && LAST_ORDER.with(|h| {
            let (hn, perm) = h.get();
            if usize::from(hn) != n {
                return false;
            }
            for (o, &p) in order.iter_mut().zip(perm.iter()) {
                *o = usize::from(p);
            }
            order
                .windows(2)
                .all(|w| cmp(w[0], w[1]) == std::cmp::Ordering::Less)
        });
    if hinted {
        return Ok(());
    }
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    if n <= 8 {
        insertion_sort(order, cmp);
    } else {
        order.sort_unstable_by(|&a, &b| cmp(a, b));
    }
    if let Some(w) = order
        .windows(2)
        .find(|w| entries[w[0]].head == entries[w[1]].head && name(w[0]) == name(w[1]))
    {
        return Err(SerError(format!(
            "attribute {:?} appears twice",
            String::from_utf8_lossy(name(w[0]))
        )));
    }
    if n <= 8 {
        LAST_ORDER.with(|h| h.set((n as u8, perm_of(order))));
    }
    Ok(())
}

/// A name order of at most 8 entries, packed.
pub(super) fn perm_of(order: &[usize]) -> [u8; 8] {
    let mut perm = [0u8; 8];
    for (p, &o) in perm.iter_mut().zip(order.iter()) {
        *p = o as u8;
    }
    perm
}

/// Moves the entries of a map (its bytes `out[first..]`) into `order`, recording each
/// entry's final (name start, value start) in `placed`. The bytes are copied aside once (on
/// the stack for a typical row) and written back in order.
pub(super) fn move_entries(
    out: &mut [u8],
    first: usize,
    entries: &[Entry],
    order: impl Iterator<Item = usize>,
    placed: &mut [(usize, usize)],
) {
    let end = out.len();
    // The entries' bytes, copied aside (on the stack for a typical row).
    let mut stack = [0u8; 256];
    let heap;
    let region: &[u8] = if end - first <= stack.len() {
        stack[..end - first].copy_from_slice(&out[first..end]);
        &stack[..end - first]
    } else {
        heap = out[first..end].to_vec();
        &heap
    };
    let mut w = first;
    for (p, i) in placed.iter_mut().zip(order) {
        let e = entries[i];
        let stop = entries.get(i + 1).map_or(end, |x| x.start);
        let len = stop - e.start;
        out[w..w + len].copy_from_slice(&region[e.start - first..stop - first]);
        *p = (w + (e.name_at - e.start), w + (e.value_at - e.start));
        w += len;
    }
}

/// The field names of a struct type in the order its `Serialize` gives them, and their name
/// order, as a struct of that type was last written on this thread. A struct whose fields
/// come as the very same `&'static str`s (address and length: the same names, in the same
/// order) takes `order` without comparing its names: it was computed by sorting these names
/// and checking them strictly ascending, hence distinct.
#[derive(Clone, Copy)]
struct KnownFields {
    n: u8,
    names: [&'static str; 8],
    known: Known,
}

/// What is kept of a struct type (see [`KnownFields`]).
#[derive(Clone, Copy)]
pub(super) struct Known {
    /// The fields' name order: `order[k]` is the index of the field that goes `k`-th.
    pub(super) order: [u8; 8],
    /// A guess, for the key fields of the table the last row of this type went to, of the
    /// index of the field of each ([`NO_FIELD`]: none yet). Only a guess: checked by name
    /// before use (see `MapEnc::finish_known`).
    pub(super) keys: [u8; KEY_GUESSES],
}

/// How many key fields [`Known::keys`] guesses (a table with more key fields records its
/// key spots by comparing names).
pub(super) const KEY_GUESSES: usize = 4;

/// [`Known::keys`] of a key field with no guess.
pub(super) const NO_FIELD: u8 = u8::MAX;

/// How many struct types' field orders each thread keeps (a row type and the structs nested
/// in it).
const KNOWN_TYPES: usize = 4;

const EMPTY: KnownFields = KnownFields {
    n: 0,
    names: [""; 8],
    known: Known {
        order: [0; 8],
        keys: [NO_FIELD; KEY_GUESSES],
    },
};

thread_local! {
    /// Field orders of the struct types last written on this thread (see [`KnownFields`]);
    /// `n == 0`: an empty slot. The next one to replace is `.1`.
    static KNOWN: std::cell::RefCell<([KnownFields; KNOWN_TYPES], usize)> = const {
        std::cell::RefCell::new(([EMPTY; KNOWN_TYPES], 0))
    };
}

/// True when `a` and `b` are the same string in memory (address and length).
#[inline]
fn same_str(a: &'static str, b: &'static str) -> bool {
    std::ptr::eq(a, b)
}

/// True when slot `f` holds struct fields `names`.
#[inline]
fn holds(f: &KnownFields, names: &[&'static str]) -> bool {
    usize::from(f.n) == names.len() && f.names.iter().zip(names).all(|(&a, &b)| same_str(a, b))
}

/// What is known of struct fields `names` (declaration order, 2 to 8 of them) on this thread.
pub(super) fn known_fields(names: &[&'static str]) -> Option<Known> {
    KNOWN
        .try_with(|k| {
            let k = k.try_borrow().ok()?;
            k.0.iter().find(|f| holds(f, names)).map(|f| f.known)
        })
        .ok()
        .flatten()
}

/// The name order of struct fields `names` (declaration order, 2 to 8 of them), if known on
/// this thread.
pub(super) fn known_order(names: &[&'static str]) -> Option<[u8; 8]> {
    known_fields(names).map(|k| k.order)
}

/// Records the name order of struct fields `names` (2 to 8 of them), just computed and
/// checked strictly ascending.
pub(super) fn remember_order(names: &[&'static str], order: [u8; 8]) {
    let mut f = EMPTY;
    f.n = names.len() as u8;
    f.known.order = order;
    f.names[..names.len()].copy_from_slice(names);
    let _ = KNOWN.try_with(|k| {
        if let Ok(mut k) = k.try_borrow_mut() {
            let next = k.1;
            k.0[next] = f;
            k.1 = (next + 1) % KNOWN_TYPES;
        }
    });
}

/// Records the key field guess of struct fields `names`, if their order is still kept.
pub(super) fn remember_keys(names: &[&'static str], keys: [u8; KEY_GUESSES]) {
    let _ = KNOWN.try_with(|k| {
        if let Ok(mut k) = k.try_borrow_mut() {
            if let Some(f) = k.0.iter_mut().find(|f| holds(f, names)) {
                f.known.keys = keys;
            }
        }
    });
}

/// Sorts a few indices (a struct's fields; at most 8) by `cmp`: insertion sort, no calls.
#[inline]
fn insertion_sort(v: &mut [usize], cmp: impl Fn(usize, usize) -> std::cmp::Ordering) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && cmp(v[j - 1], x) == std::cmp::Ordering::Greater {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}
