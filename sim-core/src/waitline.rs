//! A FIFO line of waiters whose entries may go stale.
//!
//! A waiter that leaves early (its timeout fired, its caller gave up, its
//! pod restarted) is not searched for and removed: its entry stays where it
//! is and is skipped when it reaches the front. The model tells the line
//! how many waiters left ([`WaitLine::left`]), so the count of live
//! waiters is exact, and passes a liveness test when it takes the next one.
//! Stale entries are swept on push once they outnumber the live ones, so
//! memory follows the waiters, not the history.

use std::collections::VecDeque;

/// Stale entries tolerated before a sweep, whatever the live count.
const SWEEP_FLOOR: usize = 64;

/// A first-in, first-out line of waiters of type `T`.
#[derive(Clone, Debug)]
pub struct WaitLine<T> {
    entries: VecDeque<T>,
    live: usize,
}

impl<T> Default for WaitLine<T> {
    fn default() -> Self {
        WaitLine {
            entries: VecDeque::new(),
            live: 0,
        }
    }
}

impl<T> WaitLine<T> {
    /// An empty line.
    pub fn new() -> Self {
        Self::default()
    }

    /// Puts `waiter` at the back. `is_live` says which entries are still
    /// waiting, for the sweep of stale ones.
    pub fn push(&mut self, waiter: T, is_live: impl FnMut(&T) -> bool) {
        if self.entries.len() >= 2 * self.live + SWEEP_FLOOR {
            self.entries.retain(is_live);
            debug_assert_eq!(self.entries.len(), self.live, "live count out of step");
        }
        self.entries.push_back(waiter);
        self.live += 1;
    }

    /// One waiter left the line early; its entry is now stale (the caller
    /// has made `is_live` false for it).
    pub fn left(&mut self) {
        debug_assert!(self.live > 0, "a waiter left an empty line");
        self.live = self.live.saturating_sub(1);
    }

    /// Takes the first live waiter, dropping stale entries in front of it.
    pub fn pop(&mut self, mut is_live: impl FnMut(&T) -> bool) -> Option<T> {
        while let Some(w) = self.entries.pop_front() {
            if is_live(&w) {
                self.live -= 1;
                return Some(w);
            }
        }
        None
    }

    /// The first live waiter, dropping stale entries in front of it.
    pub fn front(&mut self, mut is_live: impl FnMut(&T) -> bool) -> Option<&T> {
        while let Some(w) = self.entries.front() {
            if is_live(w) {
                break;
            }
            self.entries.pop_front();
        }
        self.entries.front()
    }

    /// The entry `k` places behind the front, stale or not.
    pub fn ahead(&self, k: usize) -> Option<&T> {
        self.entries.get(k)
    }

    /// Live waiters.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no one waits.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Entries held, stale ones included.
    pub fn stored(&self) -> usize {
        self.entries.len()
    }

    /// Empties the line (everyone waiting has been dealt with elsewhere).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.live = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn stale_entries_are_skipped_and_the_count_stays_exact() {
        let mut gone = BTreeSet::new();
        let mut line = WaitLine::new();
        for i in 0..5 {
            line.push(i, |_| true);
        }
        gone.insert(1);
        line.left();
        gone.insert(0);
        line.left();
        assert_eq!(line.len(), 3);
        assert_eq!(line.front(|w| !gone.contains(w)), Some(&2));
        assert_eq!(line.pop(|w| !gone.contains(w)), Some(2));
        assert_eq!(line.pop(|w| !gone.contains(w)), Some(3));
        assert_eq!(line.len(), 1);
    }

    #[test]
    fn memory_follows_the_live_waiters() {
        let mut line = WaitLine::new();
        // A line nobody serves, whose waiters all time out: without the
        // sweep it would grow by one entry per waiter, forever.
        for i in 0..100_000u32 {
            line.push(i, |&w| w == i);
            line.left();
        }
        assert_eq!(line.len(), 0);
        assert!(line.stored() <= SWEEP_FLOOR + 1, "{}", line.stored());
    }
}
