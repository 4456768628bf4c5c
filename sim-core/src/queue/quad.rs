//! A four-ary min-heap whose pop chooses among children without branches.
//!
//! The keys the scheduler's heap holds are mostly a dependency's
//! completions, due at random times: at every level of a pop, which of
//! four children is least is a coin toss, and a branch on it is
//! mispredicted about once a level (sampled on the steady world: the
//! heap's pop was 8 % of the CPU for about 1 % of the instructions). Here
//! the least child is found by a tournament of three comparisons whose
//! results are used as numbers (two independent ones, then one), so a pop
//! costs a few more instructions and no guesses: the steady world 1.6 %
//! more instructions and 0.97× the CPU, M/M/8 1.0 % and 0.97×, the storm
//! the same CPU (`sim-cli/benches/README.md`, "A heap that does not
//! guess"; `dary_heap`'s four-ary heap, which this replaces, branches).
//! The pop takes the hole left by the top down to the bottom, then lifts
//! the last entry from there (Floyd's), which usually moves it up little
//! or not at all.
//!
//! Ties cannot occur (ranks are unique), so entries come out in the same
//! order as from any other heap.

/// What a [`QuadHeap`] orders: a rank, unique among the entries held.
pub(crate) trait Ranked: Copy {
    /// The entry's place in the order: least first.
    fn rank(&self) -> u128;
}

/// A four-ary min-heap (children of `i` at `4i + 1 ..= 4i + 4`).
#[derive(Clone, Debug)]
pub(crate) struct QuadHeap<T> {
    v: Vec<T>,
}

impl<T> Default for QuadHeap<T> {
    fn default() -> Self {
        QuadHeap { v: Vec::new() }
    }
}

impl<T: Ranked> QuadHeap<T> {
    /// Entries held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.v.len()
    }

    /// Whether it holds nothing.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    /// The least entry.
    #[inline(always)]
    pub(crate) fn peek(&self) -> Option<&T> {
        self.v.first()
    }

    /// Adds `e`. Out of line, like the pop: inlined, the two changed
    /// what the compiler inlined into the event loop, and the steady
    /// world ran at 1.03× the CPU of the heap they replaced instead of
    /// 0.97×.
    #[inline(never)]
    pub(crate) fn push(&mut self, e: T) {
        self.v.push(e);
        self.lift(self.v.len() - 1, e);
    }

    /// Takes the least entry (out of line: see [`QuadHeap::push`]).
    #[inline(never)]
    pub(crate) fn pop(&mut self) -> Option<T> {
        let last = self.v.pop()?;
        let Some(&top) = self.v.first() else {
            return Some(last);
        };
        let n = self.v.len();
        let mut hole = 0;
        // Down to the bottom, the least child moving up into the hole.
        loop {
            let c = 4 * hole + 1;
            let least = if c + 3 < n {
                c + least_of_four(&self.v[c..c + 4])
            } else if c < n {
                // The last parent: one to three children, one step.
                (c + 1..n).fold(c, |m, j| {
                    if self.v[j].rank() < self.v[m].rank() {
                        j
                    } else {
                        m
                    }
                })
            } else {
                break;
            };
            self.v[hole] = self.v[least];
            hole = least;
        }
        self.lift(hole, last);
        Some(top)
    }

    /// Puts `e` at `hole` or above it, moving down the parents it
    /// precedes.
    #[inline(always)]
    fn lift(&mut self, mut hole: usize, e: T) {
        let r = e.rank();
        while hole > 0 {
            let parent = (hole - 1) / 4;
            if r >= self.v[parent].rank() {
                break;
            }
            self.v[hole] = self.v[parent];
            hole = parent;
        }
        self.v[hole] = e;
    }

    /// Keeps the entries `keep` wants, and the heap order.
    pub(crate) fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.v.retain(keep);
        let Some(last_parent) = self.v.len().checked_sub(2).map(|i| i / 4) else {
            return;
        };
        for i in (0..=last_parent).rev() {
            self.sink(i);
        }
    }

    /// Moves the entry at `i` down below the children it follows.
    fn sink(&mut self, mut i: usize) {
        let e = self.v[i];
        let n = self.v.len();
        loop {
            let c = 4 * i + 1;
            if c >= n {
                break;
            }
            let least = (c + 1..n.min(c + 4)).fold(c, |m, j| {
                if self.v[j].rank() < self.v[m].rank() {
                    j
                } else {
                    m
                }
            });
            if e.rank() <= self.v[least].rank() {
                break;
            }
            self.v[i] = self.v[least];
            i = least;
        }
        self.v[i] = e;
    }
}

/// Which of four entries has the least rank: the least of each pair, then
/// of the two, each comparison's result used as a number (no branch).
#[inline(always)]
fn least_of_four<T: Ranked>(s: &[T]) -> usize {
    let (r0, r1, r2, r3) = (s[0].rank(), s[1].rank(), s[2].rank(), s[3].rank());
    let a = usize::from(r1 < r0);
    let b = 2 + usize::from(r3 < r2);
    let (ra, rb) = (select(r1 < r0, r1, r0), select(r3 < r2, r3, r2));
    let pick_b = usize::from(rb < ra).wrapping_neg();
    a ^ ((a ^ b) & pick_b)
}

/// `x` when `c`, else `y`, as arithmetic on the halves (a conditional
/// move, not a branch).
#[inline(always)]
fn select(c: bool, x: u128, y: u128) -> u128 {
    let mask = u128::from(c).wrapping_neg();
    y ^ ((x ^ y) & mask)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    impl Ranked for u64 {
        fn rank(&self) -> u128 {
            u128::from(*self)
        }
    }

    #[test]
    fn least_of_four_finds_the_least_wherever_it_is() {
        for perm in [
            [0u64, 1, 2, 3],
            [1, 0, 2, 3],
            [1, 2, 0, 3],
            [1, 2, 3, 0],
            [3, 2, 1, 0],
            [2, 3, 0, 1],
        ] {
            let at = perm.iter().position(|&x| x == 0).unwrap();
            assert_eq!(least_of_four(&perm), at, "{perm:?}");
        }
        // Ranks that differ only in their high half (the time).
        let hi = |t: u64| (t as u128) << 64;
        #[derive(Clone, Copy)]
        struct R(u128);
        impl Ranked for R {
            fn rank(&self) -> u128 {
                self.0
            }
        }
        let s = [R(hi(5) | 1), R(hi(4) | 9), R(hi(6)), R(hi(4) | 8)];
        assert_eq!(least_of_four(&s), 3);
    }

    proptest! {
        /// Pushes and pops interleaved, and a retain, give what a sorted
        /// list of the same keys gives.
        #[test]
        fn pops_come_out_least_first(
            ops in prop::collection::vec((any::<bool>(), 0u64..1_000), 0..400),
            keep_odd in any::<bool>(),
        ) {
            let mut heap = QuadHeap::default();
            let mut model: Vec<u64> = Vec::new();
            // Unique keys: the value then its position.
            for (i, (push, v)) in ops.into_iter().enumerate() {
                let key = v * 1_000 + i as u64;
                if push || model.is_empty() {
                    heap.push(key);
                    model.push(key);
                } else {
                    model.sort_unstable();
                    let least = model.remove(0);
                    prop_assert_eq!(heap.pop(), Some(least));
                }
                prop_assert_eq!(heap.len(), model.len());
            }
            heap.retain(|k| (k % 2 == 1) == keep_odd);
            model.retain(|k| (k % 2 == 1) == keep_odd);
            model.sort_unstable();
            for want in model {
                prop_assert_eq!(heap.peek().copied(), Some(want));
                prop_assert_eq!(heap.pop(), Some(want));
            }
            prop_assert!(heap.is_empty());
            prop_assert_eq!(heap.pop(), None);
        }
    }
}
