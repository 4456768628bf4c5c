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

use crate::prefetch::{LOAD_AHEAD, prefetch_storage};

/// Stale entries tolerated before a sweep, whatever the live count.
const SWEEP_FLOOR: usize = 64;

/// What a line asks of its caller about the waiters it holds: whether each
/// still waits and, optionally, a hint that one will be asked about soon
/// (its record loaded ahead of its turn: `prefetch.rs`). A closure
/// `FnMut(&T) -> bool` answers the first and ignores the hint.
pub trait Waiting<T> {
    /// Whether `waiter` still waits.
    fn is_live(&mut self, waiter: &T) -> bool;

    /// `waiter` will be asked about a few entries from now.
    #[inline]
    fn prefetch(&self, _waiter: &T) {}
}

impl<T, F: FnMut(&T) -> bool> Waiting<T> for F {
    #[inline]
    fn is_live(&mut self, waiter: &T) -> bool {
        self(waiter)
    }
}

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
    /// waiting, for the sweep of stale ones. Always inlined: called out of
    /// line, the waiter went through memory, written as its fields and read
    /// back whole, and that read waited for every store before it to
    /// reach the cache (4 % of a storm's samples).
    #[inline(always)]
    pub fn push(&mut self, waiter: T, mut is_live: impl Waiting<T>) {
        if self.entries.len() >= 2 * self.live + SWEEP_FLOOR {
            self.sweep(&mut is_live);
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
    /// Always inlined: taken on every request's path through a pool, and
    /// left out of line (with its hint) the calls cost more than the hint.
    #[inline(always)]
    pub fn pop(&mut self, mut is_live: impl Waiting<T>) -> Option<T> {
        while let Some(w) = self.entries.pop_front() {
            if let Some(next) = self.entries.get(LOAD_AHEAD - 1) {
                is_live.prefetch(next);
                prefetch_storage(next);
            }
            if is_live.is_live(&w) {
                self.live -= 1;
                return Some(w);
            }
        }
        None
    }

    /// The first live waiter, dropping stale entries in front of it.
    pub fn front(&mut self, mut is_live: impl Waiting<T>) -> Option<&T> {
        while let Some(w) = self.entries.front() {
            if is_live.is_live(w) {
                break;
            }
            self.entries.pop_front();
        }
        self.entries.front()
    }

    /// Keeps the live entries, in order, hinting at each one
    /// [`LOAD_AHEAD`] entries before it is asked about. Out of line: rare,
    /// and kept out of the push that is always inlined.
    #[inline(never)]
    fn sweep(&mut self, is_live: &mut impl Waiting<T>) {
        let mut kept = 0;
        for i in 0..self.entries.len() {
            if let Some(next) = self.entries.get(i + LOAD_AHEAD) {
                is_live.prefetch(next);
            }
            if is_live.is_live(&self.entries[i]) {
                self.entries.swap(kept, i);
                kept += 1;
            }
        }
        self.entries.truncate(kept);
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

    /// Whether the count kept by `push`, `left` and `pop` is the number of
    /// entries `is_live` calls live, counted one by one: a check of the
    /// model's `left` calls (a waiter told as leaving that still waits, or
    /// one leaving untold), for the world's audit, not its hot path.
    pub fn check(&self, mut is_live: impl Waiting<T>) -> Result<(), String> {
        let counted = self.entries.iter().filter(|w| is_live.is_live(w)).count();
        if counted == self.live {
            Ok(())
        } else {
            Err(format!(
                "a line counts {} waiters but holds {counted} still waiting",
                self.live
            ))
        }
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
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    #[test]
    fn stale_entries_are_skipped_and_the_count_stays_exact() {
        let mut gone = BTreeSet::new();
        let mut line = WaitLine::new();
        for i in 0..5 {
            line.push(i, |_: &i32| true);
        }
        gone.insert(1);
        line.left();
        gone.insert(0);
        line.left();
        assert_eq!(line.len(), 3);
        assert_eq!(line.front(|w: &i32| !gone.contains(w)), Some(&2));
        assert_eq!(line.pop(|w: &i32| !gone.contains(w)), Some(2));
        assert_eq!(line.pop(|w: &i32| !gone.contains(w)), Some(3));
        assert_eq!(line.len(), 1);
        assert_eq!(line.check(|w: &i32| !gone.contains(w)), Ok(()));
        // A waiter told as leaving that still waits shows in the check.
        line.push(5, |_: &i32| true);
        line.left();
        assert_eq!(
            line.check(|w: &i32| !gone.contains(w)),
            Err("a line counts 1 waiters but holds 2 still waiting".into())
        );
    }

    #[test]
    fn memory_follows_the_live_waiters() {
        let mut line = WaitLine::new();
        // A line nobody serves, whose waiters all time out: without the
        // sweep it would grow by one entry per waiter, forever.
        for i in 0..100_000u32 {
            line.push(i, |w: &u32| *w == i);
            line.left();
        }
        assert_eq!(line.len(), 0);
        assert!(line.stored() <= SWEEP_FLOOR + 1, "{}", line.stored());
    }

    /// Waiters live from `from` on, noting what the line asks and hints.
    struct Noted<'a> {
        from: u32,
        asked: &'a RefCell<Vec<u32>>,
        hinted: &'a RefCell<Vec<u32>>,
    }

    impl Waiting<u32> for Noted<'_> {
        fn is_live(&mut self, w: &u32) -> bool {
            self.asked.borrow_mut().push(*w);
            *w >= self.from
        }
        fn prefetch(&self, w: &u32) {
            self.hinted.borrow_mut().push(*w);
        }
    }

    #[test]
    fn the_line_hints_at_the_waiter_it_will_ask_about_a_few_entries_on() {
        let (asked, hinted) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
        let noted = |from| Noted {
            from,
            asked: &asked,
            hinted: &hinted,
        };
        let ahead = LOAD_AHEAD as u32;
        let mut line = WaitLine::new();
        for i in 0..100u32 {
            line.push(i, |_: &u32| true);
        }
        // Waiters 0..10 left: the pop skips them, hinting LOAD_AHEAD on.
        for _ in 0..10 {
            line.left();
        }
        assert_eq!(line.pop(noted(10)), Some(10));
        assert_eq!(asked.take(), (0..=10).collect::<Vec<_>>());
        assert_eq!(hinted.take(), (ahead..=10 + ahead).collect::<Vec<_>>());

        // The sweep a push makes hints the same way and keeps the order.
        for _ in 11..100 {
            line.left();
        }
        line.push(100, noted(100));
        assert_eq!(asked.take(), (11..100).collect::<Vec<_>>());
        assert_eq!(hinted.take(), (11 + ahead..100).collect::<Vec<_>>());
        assert_eq!(line.stored(), 1);
        assert_eq!(line.pop(|_: &u32| true), Some(100));
    }
}
