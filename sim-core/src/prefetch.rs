//! A hint to the processor to start loading memory into its caches.
//!
//! A storm holds tens of thousands of requests, attempts and jobs in
//! flight, and each line of them (the upstream's queue, a pool's waiters,
//! a client's timeouts) comes back to a record last touched up to seconds
//! before, long out of cache. Knowing which records the next few entries
//! will read, a line asks for them early, so that their loads overlap the
//! work on the entries before them instead of stalling it one by one.
//!
//! This module holds the project's only `unsafe` code: the processor's
//! prefetch instruction behind `core::arch`, which the compiler treats as
//! unsafe only because it is declared with its target feature (SSE,
//! always present on x86-64). A prefetch reads nothing the program sees,
//! never faults, and changes no result, only timing. The crates that wrap
//! it safely take a reference, so reach only a record's first cache line;
//! records here span two to four, and the later lines were measured to
//! matter (the storm 1.08× slower with only the first and last). On
//! other architectures the hint does nothing.

/// How many entries ahead of the one read a line hints at the record its
/// caller will read: enough entries' work (a few hundred instructions
/// each) to cover a load from memory, few enough that what is loaded is
/// still in cache when its turn comes.
pub const LOAD_AHEAD: usize = 8;

/// Cache line size assumed for the hint: 64 bytes on every current
/// x86-64 processor.
const LINE: usize = 64;

/// Asks for every cache line of `value` to be loaded into all cache
/// levels. Only a hint: no effect on any result.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    let start = (value as *const T).cast::<i8>();
    let size = std::mem::size_of::<T>();
    let mut offset = 0;
    while offset < size {
        line(start.wrapping_add(offset));
        offset += LINE;
    }
    // The last line, when `value` does not start on a line boundary.
    if size > 0 {
        line(start.wrapping_add(size - 1));
    }
}

/// How many cache lines past the entry a line reads ahead its own
/// storage is hinted at (`prefetch_storage`): four lines took a pool wait
/// line's stall on its next entries from 5.0 % of a storm's samples to
/// about 3 %, one line only to 3.6 % (`sim-cli/benches/README.md`).
pub const STORAGE_LINES_AHEAD: usize = 4;

/// Asks for the cache line [`STORAGE_LINES_AHEAD`] lines after the one
/// `value` starts in: for a buffer of entries walked in order (a pool's
/// waiters, a client's timeouts), the buffer's own storage further on.
/// Such a buffer is walked a few entries at a time, in turn with many
/// others, and its next entries were found cold when reached (the
/// hardware's own prefetcher, it seems, does not follow so many slow
/// walks at once). The address may lie past the buffer's end: a hint
/// there is wasted, not wrong, since a prefetch never faults and reads
/// nothing the program sees.
#[inline(always)]
pub fn prefetch_storage<T>(value: &T) {
    line(
        (value as *const T)
            .cast::<i8>()
            .wrapping_add(STORAGE_LINES_AHEAD * LINE),
    );
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code)]
fn line(p: *const i8) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: `prefetch` only hints at the caches: it does not read `p`
    // as far as the program can see and never faults, whatever `p`. It is
    // `unsafe` for its target feature, SSE, which x86-64 always has.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn line(_p: *const i8) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last line's offset is `size - 1`: a zero-sized value must not
    /// underflow it (a panic in the dev profile, where overflow checks
    /// are on), and a value spanning many lines is hinted line by line.
    #[test]
    fn a_hint_on_a_value_of_any_size_even_none_neither_panics_nor_changes_it() {
        let small = 7u8;
        let large = [3u64; 40];
        let empty = ();
        prefetch(&small);
        prefetch(&large);
        prefetch(&empty);
        assert_eq!(small, 7);
        assert!(large.iter().all(|&x| x == 3));
    }

    /// A line's hint at its own storage may point past the buffer's end
    /// (its last entry, a one-entry buffer): the address is only computed,
    /// never read, so it neither faults nor trips the dev profile's checks.
    #[test]
    fn a_hint_past_the_end_of_a_buffer_neither_faults_nor_changes_it() {
        let one = vec![5u16];
        let many: Vec<u64> = (0..100).collect();
        prefetch_storage(&one[0]);
        prefetch_storage(&many[99]);
        prefetch_storage(&());
        assert_eq!(one, [5]);
        assert_eq!(many.iter().sum::<u64>(), 4950);
    }
}
