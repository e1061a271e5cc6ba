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
}
