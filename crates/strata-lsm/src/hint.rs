//! CPU hints shared by the read and write paths (block search, in-place point reads, the file
//! index, the memtable index).

/// Asks the CPU to bring the cache line holding `p` closer; no effect on anything else. Any
/// address may be passed (one past an array, null): a prefetch never faults.
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: a prefetch is a hint: it never faults (whatever the address, mapped or not), reads
    // nothing the program can observe and writes nothing; SSE is part of the x86-64 baseline.
    // Tested with null and the last address in `sst::block`'s
    // `prefetch_of_any_address_is_harmless`.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    let _ = p;
}
