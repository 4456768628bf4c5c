//! A first-in, first-out list read from a cursor, for the engine's lines
//! that empty often or are read at the front only: the streams beside
//! the heap (a stream of one source's arrivals holds one entry at a time)
//! and the runs of a deadline line.
//!
//! A ring buffer (`VecDeque`) wraps its index at every push and pop; this
//! list is cleared whenever the cursor reaches its end instead, which
//! costs less per entry (`sim-cli/benches/README.md`, "Lists read from a
//! cursor"). A list that never empties drops the entries already read
//! once they outnumber the others and [`COMPACT_FLOOR`]: the move is paid
//! for by as many reads, and memory stays within twice the unread entries
//! plus the floor.

/// Entries already read that a list keeps before it drops them (when they
/// also outnumber the unread ones).
pub(crate) const COMPACT_FLOOR: usize = 1024;

/// A FIFO list: pushed at the back, read and dropped at the front.
#[derive(Clone, Debug)]
pub(crate) struct Fifo<T> {
    items: Vec<T>,
    /// The first entry not yet read.
    head: usize,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo {
            items: Vec::new(),
            head: 0,
        }
    }
}

impl<T> Fifo<T> {
    /// A list of one entry.
    pub(crate) fn of(first: T) -> Self {
        Fifo {
            items: vec![first],
            head: 0,
        }
    }

    /// The first entry not yet read.
    #[inline]
    pub(crate) fn front(&self) -> Option<&T> {
        self.items.get(self.head)
    }

    /// The unread entry `k` places behind the front, if any.
    #[inline]
    pub(crate) fn get(&self, k: usize) -> Option<&T> {
        self.items.get(self.head + k)
    }

    /// The last entry, if any is unread.
    #[inline]
    pub(crate) fn back(&self) -> Option<&T> {
        // The list's last entry, unless every entry was read (no slice of
        // the unread ones: its bounds check costs more than this test).
        if self.head < self.items.len() {
            self.items.last()
        } else {
            None
        }
    }

    /// Adds an entry at the back.
    #[inline]
    pub(crate) fn push_back(&mut self, entry: T) {
        self.items.push(entry);
    }

    /// Marks the first entry read.
    #[inline]
    pub(crate) fn advance(&mut self) {
        self.head += 1;
        if self.head >= self.items.len() {
            self.items.clear();
            self.head = 0;
        } else if self.head >= COMPACT_FLOOR && self.head * 2 >= self.items.len() {
            self.items.drain(..self.head);
            self.head = 0;
        }
    }

    /// Entries not yet read.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.items.len() - self.head
    }

    /// Whether every entry was read.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries in memory, those read and not yet dropped included.
    #[inline]
    pub(crate) fn held(&self) -> usize {
        self.items.len()
    }

    /// Keeps the unread entries `keep` accepts, in order, and drops those
    /// read.
    pub(crate) fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.items.drain(..self.head);
        self.head = 0;
        self.items.retain(keep);
    }

    /// [`Fifo::retain`], `keep` shown each entry with the one `k` places
    /// behind it (to start loading what it will read).
    pub(crate) fn retain_ahead(&mut self, k: usize, mut keep: impl FnMut(&T, Option<&T>) -> bool)
    where
        T: Copy,
    {
        self.items.drain(..self.head);
        self.head = 0;
        let mut kept = 0;
        for i in 0..self.items.len() {
            let e = self.items[i];
            if keep(&e, self.items.get(i + k)) {
                self.items[kept] = e;
                kept += 1;
            }
        }
        self.items.truncate(kept);
    }

    /// How many unread entries, from the front, `pred` holds for (the
    /// list partitioned by it, as `slice::partition_point`).
    pub(crate) fn partition_point(&self, pred: impl FnMut(&T) -> bool) -> usize {
        self.items[self.head..].partition_point(pred)
    }

    /// Inserts `entry` before the `index`-th unread entry: O(n), for the
    /// rare entry out of order.
    pub(crate) fn insert(&mut self, index: usize, entry: T) {
        self.items.insert(self.head + index, entry);
    }
}

impl<T: Copy> Fifo<T> {
    /// Reads and drops the first entry.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let first = *self.front()?;
        self.advance();
        Some(first)
    }
}

/// How many entries the tests' long instant adds after its `read`-th
/// read: two per read for the first 1,000, one per read until the
/// 6,000th, then none (the rest drain). The list never empties until
/// then, first growing, then steady.
#[cfg(test)]
pub(crate) fn long_instant_adds(read: u64) -> usize {
    match read {
        0..=1_000 => 2,
        1_001..=6_000 => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_that_never_empties_keeps_its_order_and_drops_what_was_read() {
        let mut fifo = Fifo::default();
        let mut next = 0u64;
        for _ in 0..3 {
            fifo.push_back(next);
            next += 1;
        }
        let mut expected = 0u64;
        let mut most_held = 0;
        while let Some(x) = fifo.pop_front() {
            assert_eq!(x, expected, "FIFO order");
            expected += 1;
            for _ in 0..long_instant_adds(expected) {
                fifo.push_back(next);
                next += 1;
            }
            assert_eq!(fifo.len() as u64, next - expected);
            most_held = most_held.max(fifo.held());
            assert!(
                fifo.held() <= 2 * fifo.len() + COMPACT_FLOOR + 1,
                "{} entries held for {} unread",
                fifo.held(),
                fifo.len()
            );
        }
        assert_eq!(expected, next, "every entry read once");
        assert!(fifo.is_empty() && fifo.held() == 0 && fifo.back().is_none());
        assert!(
            most_held < 3_000 && next > 7_000,
            "read entries dropped: at most {most_held} held of {next}"
        );
    }

    #[test]
    fn every_view_sees_the_unread_entries_only() {
        let mut fifo = Fifo::of(10);
        for x in [20, 30, 40] {
            fifo.push_back(x);
        }
        assert_eq!(fifo.pop_front(), Some(10));
        assert_eq!((fifo.len(), fifo.held(), fifo.back()), (3, 4, Some(&40)));
        assert_eq!(fifo.partition_point(|&x| x <= 30), 2);
        fifo.insert(2, 35);
        assert_eq!(fifo.front(), Some(&20));
        fifo.retain(|&x| x != 30);
        assert_eq!((fifo.len(), fifo.held()), (3, 3));
        assert_eq!(fifo.pop_front(), Some(20));
        assert_eq!(fifo.pop_front(), Some(35));
        assert_eq!(fifo.pop_front(), Some(40));
        assert_eq!(fifo.pop_front(), None);
    }
}
