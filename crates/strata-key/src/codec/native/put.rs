//! Appending a short element to the output with one fixed-size store.

/// Appends the first `n` bytes of `bytes` (`n` is clamped to `N`) with one `N`-byte store
/// into reserved capacity, then sets the length: the encoders build an element in a register,
/// write it whole and keep only its real length. Unlike `extend_from_slice` + `truncate`, the
/// new length is computed from the old one, not re-read after the store (a store through the
/// buffer might alias the length, so the compiler would otherwise reload it and every element
/// would wait on a store-to-load round trip).
#[inline(always)]
pub(crate) fn put_cut<const N: usize>(out: &mut Vec<u8>, bytes: [u8; N], n: usize) {
    out.reserve(N);
    let len = out.len();
    // SAFETY: `reserve(N)` guarantees room for `N` more bytes after `len`, so the unaligned
    // `N`-byte write at offset `len` stays inside the allocation, and it initialises all of
    // them; the new length `len + min(n, N)` covers only initialised bytes. Tested by
    // `put_cut_grows_and_cuts` (every `n`, with the buffer exactly full so that it must grow)
    // and by every encoder test.
    unsafe {
        out.as_mut_ptr()
            .add(len)
            .cast::<[u8; N]>()
            .write_unaligned(bytes);
        out.set_len(len + n.min(N));
    }
}

/// Where the encoders append: a `Vec<u8>`, or a [`Cursor`] over one.
pub(crate) trait Out {
    /// [`put_cut`]: appends the first `min(n, N)` bytes of `bytes` with one `N`-byte store.
    fn put_cut<const N: usize>(&mut self, bytes: [u8; N], n: usize);
    /// Runs `f` on the vector itself (for the rare elements written with `Vec` methods).
    fn with_vec<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R;
    /// Appends `n` bytes that `write` stores through the pointer it is given, which has room
    /// for `N` bytes: one capacity check for an element written with several (possibly
    /// overlapping) stores.
    ///
    /// # Safety
    /// `n <= N`; `write` writes only inside bytes `0..N` behind the pointer (unaligned) and
    /// initialises all of the bytes `0..n`.
    unsafe fn put_raw<const N: usize>(&mut self, n: usize, write: impl FnOnce(*mut u8));
}

impl Out for Vec<u8> {
    #[inline(always)]
    fn put_cut<const N: usize>(&mut self, bytes: [u8; N], n: usize) {
        put_cut(self, bytes, n)
    }
    #[inline(always)]
    fn with_vec<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        f(self)
    }
    #[inline(always)]
    unsafe fn put_raw<const N: usize>(&mut self, n: usize, write: impl FnOnce(*mut u8)) {
        self.reserve(N);
        let len = self.len();
        // SAFETY: `reserve(N)` leaves room for `N` bytes after `len`, where `write` stores
        // (the caller's contract), and `write` initialises `len..len + n` with `n <= N`.
        // Tested by `put_raw_appends_like_put_cut` and by every encoder test.
        unsafe {
            write(self.as_mut_ptr().add(len));
            self.set_len(len + n);
        }
    }
}

/// Appends to a `Vec<u8>` with the vector's pointer and length held in the cursor (in
/// registers while a key is written) instead of re-read from the vector after every store (a
/// byte store through the buffer may alias the vector's fields, so the compiler reloads them).
/// The vector's length is brought up to date when the cursor is dropped and around
/// [`Out::with_vec`].
///
/// The cursor holds `capacity − SLACK` as its `limit` (negative for a capacity below
/// [`SLACK`]): a put of up to `SLACK` bytes checks for room with one comparison of the length
/// against the limit (no subtraction).
pub(crate) struct Cursor<'a> {
    vec: &'a mut Vec<u8>,
    ptr: *mut u8,
    len: usize,
    limit: isize,
}

/// Bytes a put of at most this size finds free whenever the cursor's length is at most its
/// limit. At least the largest fixed-size put of the encoders (18 bytes: a 16-byte string
/// with its tag and terminator), so that they all take the one-comparison check.
const SLACK: usize = 32;

// Invariant of a `Cursor`: `ptr` is the vector's buffer and `limit + SLACK` its capacity (the
// vector is not touched but through the cursor while it lives), `vec.len() <= len <= limit +
// SLACK`, and the bytes `0..len` of the buffer are initialised. (A `Vec`'s capacity is at most
// `isize::MAX`, so the limit is exact.)
impl<'a> Cursor<'a> {
    /// A cursor appending to `vec`.
    #[inline(always)]
    pub(crate) fn new(vec: &'a mut Vec<u8>) -> Cursor<'a> {
        Cursor {
            ptr: vec.as_mut_ptr(),
            len: vec.len(),
            limit: limit_of(vec.capacity()),
            vec,
        }
    }

    /// Makes sure of room for `N` more bytes: for `N <= SLACK` one comparison.
    #[inline(always)]
    fn room<const N: usize>(&mut self) {
        let short = if N <= SLACK {
            // cap − len >= SLACK >= N unless len > limit (len <= cap <= isize::MAX).
            self.len as isize > self.limit
        } else {
            self.vec_capacity() - self.len < N
        };
        if short {
            self.grow(N);
        }
    }

    /// Makes room for `n` more bytes (at least `SLACK`, so that the next short puts find it
    /// with the one comparison). The work is out of line (keys are
    /// short and the buffer is reused), and it is given the vector, not the cursor: a cursor
    /// whose address no call takes can live in registers.
    #[inline(always)]
    fn grow(&mut self, n: usize) {
        // SAFETY: bytes `0..len` are initialised and `len <= cap` (the invariant).
        unsafe { reserve_after(self.vec, self.len, n.max(SLACK)) };
        self.ptr = self.vec.as_mut_ptr();
        self.limit = limit_of(self.vec.capacity());
    }

    /// The vector's capacity (`limit + SLACK`).
    #[inline(always)]
    fn vec_capacity(&self) -> usize {
        (self.limit + SLACK as isize) as usize
    }
}

/// `capacity − SLACK`: a `Vec`'s capacity is at most `isize::MAX`, so this is exact.
#[inline(always)]
fn limit_of(capacity: usize) -> isize {
    capacity as isize - SLACK as isize
}

/// Sets `vec`'s length to `len` and reserves `n` more bytes.
///
/// # Safety
/// The bytes `0..len` of `vec`'s buffer are initialised and `len` is at most its capacity.
#[cold]
#[inline(never)]
unsafe fn reserve_after(vec: &mut Vec<u8>, len: usize, n: usize) {
    // SAFETY: the caller's contract. The length must be right before `reserve`, which
    // copies only `0..len` when it moves the buffer (`cursor_keeps_its_bytes_across_growths`
    // crashes without this line).
    unsafe { vec.set_len(len) };
    vec.reserve(n);
}

impl Out for Cursor<'_> {
    #[inline(always)]
    fn put_cut<const N: usize>(&mut self, bytes: [u8; N], n: usize) {
        self.room::<N>();
        // SAFETY: `room` leaves `cap − len >= N` (see there) and `ptr` is the vector's buffer
        // of `cap` bytes (the invariant), so the unaligned `N`-byte write at `len` stays inside
        // the allocation and initialises those bytes; the new length `len + min(n, N)` stays
        // within `cap` and covers only initialised bytes. Tested by `cursor_appends_like_the_vec`
        // (every `n`, buffers exactly full so that every put grows) and by
        // `asc_serializer_writes_what_the_ordered_one_writes`.
        unsafe {
            self.ptr
                .add(self.len)
                .cast::<[u8; N]>()
                .write_unaligned(bytes);
        }
        self.len += n.min(N);
    }

    #[inline(always)]
    unsafe fn put_raw<const N: usize>(&mut self, n: usize, write: impl FnOnce(*mut u8)) {
        self.room::<N>();
        // SAFETY: `room` leaves `cap − len >= N` and `ptr` is the vector's buffer of `cap`
        // bytes (the invariant), so `write`, which stores only inside `0..N` from `len` (the
        // caller's contract), stays inside the allocation; it initialises `len..len + n` and
        // `n <= N`, so the invariant holds for the new length. Tested by
        // `put_raw_appends_like_put_cut` (buffers exactly full so that every put grows) and by
        // `asc_serializer_writes_what_the_ordered_one_writes`.
        unsafe { write(self.ptr.add(self.len)) };
        self.len += n;
    }

    #[inline(always)]
    fn with_vec<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        // SAFETY: bytes `0..len` are initialised and `len <= cap` (the invariant).
        unsafe { self.vec.set_len(self.len) };
        let r = f(self.vec);
        self.ptr = self.vec.as_mut_ptr();
        self.len = self.vec.len();
        self.limit = limit_of(self.vec.capacity());
        r
    }
}

impl Drop for Cursor<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: bytes `0..len` are initialised and `len <= cap` (the invariant).
        unsafe { self.vec.set_len(self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_cut_grows_and_cuts() {
        for n in 0..=20 {
            for have in 0..20usize {
                let mut out: Vec<u8> = Vec::with_capacity(have);
                out.extend((0..have).map(|i| i as u8));
                out.shrink_to_fit(); // full: the put must grow the buffer
                let bytes: [u8; 16] = std::array::from_fn(|i| 100 + i as u8);
                put_cut(&mut out, bytes, n);
                let mut want: Vec<u8> = (0..have).map(|i| i as u8).collect();
                want.extend_from_slice(&bytes[..n.min(16)]);
                assert_eq!(out, want);
                // Appending after a cut continues at the cut.
                put_cut(&mut out, [7u8; 3], 2);
                want.extend_from_slice(&[7, 7]);
                assert_eq!(out, want);
            }
        }
    }

    /// Many growths in a row through one cursor (no `with_vec` in between to bring the
    /// vector's length up to date): each growth keeps every byte written so far.
    #[test]
    fn cursor_keeps_its_bytes_across_growths() {
        let mut want: Vec<u8> = Vec::new();
        let mut got: Vec<u8> = Vec::new();
        {
            let mut c = Cursor::new(&mut got);
            for i in 0..600usize {
                let bytes: [u8; 9] = std::array::from_fn(|j| (i * 9 + j) as u8);
                let n = i % 10;
                c.put_cut(bytes, n);
                want.put_cut(bytes, n);
            }
        }
        assert_eq!(got, want);
    }

    /// `put_raw` with several overlapping stores (the way the string encoders use it) appends
    /// what `put_cut` appends, on a vector and through a cursor, with buffers exactly full so
    /// that every put grows.
    #[test]
    fn put_raw_appends_like_put_cut() {
        fn raw<O: Out>(o: &mut O, bytes: [u8; 16], n: usize) {
            // Two overlapping 8-byte stores and one byte store, like `put_string`'s.
            // SAFETY: n <= 16 < 18; the stores write bytes 0..8, n/2..n/2+8 and 17 of the 18;
            // they cover 0..n for n <= 16 (n/2 <= 8 and n/2 + 8 >= n).
            unsafe {
                o.put_raw::<18>(n, |p| {
                    p.cast::<[u8; 8]>()
                        .write_unaligned(bytes[..8].try_into().unwrap());
                    p.add(n / 2)
                        .cast::<[u8; 8]>()
                        .write_unaligned(bytes[n / 2..n / 2 + 8].try_into().unwrap());
                    p.add(17).write(0xee);
                })
            }
        }
        for have in 0..20usize {
            let start: Vec<u8> = (0..have).map(|i| i as u8).collect();
            let mut want = start.clone();
            let mut got_vec = start.clone();
            let mut got = start.clone();
            got.shrink_to_fit();
            {
                let mut c = Cursor::new(&mut got);
                for n in 0..=16 {
                    let bytes: [u8; 16] = std::array::from_fn(|i| (n * 16 + i) as u8);
                    raw(&mut c, bytes, n);
                    got_vec.shrink_to_fit();
                    raw(&mut got_vec, bytes, n);
                    want.put_cut(bytes, n);
                }
            }
            assert_eq!(got, want);
            assert_eq!(got_vec, want);
        }
    }

    #[test]
    fn cursor_appends_like_the_vec() {
        for have in 0..20usize {
            let start: Vec<u8> = (0..have).map(|i| i as u8).collect();
            let mut want = start.clone();
            let mut got = start.clone();
            got.shrink_to_fit(); // full: the first put must grow the buffer
            {
                let mut c = Cursor::new(&mut got);
                for n in 0..=20 {
                    let bytes: [u8; 16] = std::array::from_fn(|i| (n * 16 + i) as u8);
                    c.put_cut(bytes, n);
                    want.put_cut(bytes, n);
                    c.put_cut([n as u8; 1], 1);
                    want.put_cut([n as u8; 1], 1);
                    if n % 5 == 0 {
                        // Through the vector and back: the cursor continues after it.
                        c.with_vec(|v| {
                            v.extend_from_slice(&[9; 40]);
                            v.shrink_to_fit();
                        });
                        want.extend_from_slice(&[9; 40]);
                    }
                }
            }
            assert_eq!(got, want);
        }
    }
}
