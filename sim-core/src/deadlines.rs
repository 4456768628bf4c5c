//! A line of deadlines that mostly arrive in order: the timers of a fixed
//! delay (every attempt's timeout is "now + the same timeout").
//!
//! A model that arms one timer per attempt and cancels nearly all of them
//! (most attempts answer in time) keeps the scheduler's heap full of
//! entries that will never fire. Deadlines of one fixed delay are already
//! in order when armed, so they can wait in a FIFO instead, with a single
//! scheduled wake-up at the earliest one: arming is O(1), and a timer that
//! is no longer wanted is not cancelled at all, only recognised as stale
//! when it reaches the front. A deadline earlier than the last one (the
//! delay was changed) is inserted in its place, so the line stays sorted
//! whatever the delays.

use std::collections::VecDeque;

use crate::time::SimTime;

/// Stale deadlines a line may hold beyond twice its live ones before
/// [`DeadlineLine::wants_sweep`] says so.
const SWEEP_FLOOR: usize = 1024;

/// Deadlines with their subjects, earliest first.
#[derive(Clone, Debug)]
pub struct DeadlineLine<T> {
    line: VecDeque<(SimTime, T)>,
}

impl<T> Default for DeadlineLine<T> {
    fn default() -> Self {
        DeadlineLine {
            line: VecDeque::new(),
        }
    }
}

impl<T> DeadlineLine<T> {
    /// An empty line.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `subject`'s deadline `at`. O(1) when deadlines arrive in order;
    /// an earlier one is inserted in its place (after equal deadlines, so
    /// equal deadlines keep the order they were armed in).
    pub fn push(&mut self, at: SimTime, subject: T) {
        if self.line.back().is_none_or(|(last, _)| *last <= at) {
            self.line.push_back((at, subject));
        } else {
            let i = self.line.partition_point(|(t, _)| *t <= at);
            self.line.insert(i, (at, subject));
        }
    }

    /// The earliest deadline, stale ones included.
    pub fn next(&self) -> Option<SimTime> {
        self.line.front().map(|(t, _)| *t)
    }

    /// Takes the earliest deadline if it is at or before `now`.
    pub fn pop_due(&mut self, now: SimTime) -> Option<(SimTime, T)> {
        if self.line.front().is_some_and(|(t, _)| *t <= now) {
            self.line.pop_front()
        } else {
            None
        }
    }

    /// Drops deadlines at the front that are no longer wanted, so that the
    /// next wake-up is for a live one.
    pub fn drop_stale(&mut self, mut is_live: impl FnMut(SimTime, &T) -> bool) {
        while let Some((t, s)) = self.line.front() {
            if is_live(*t, s) {
                return;
            }
            self.line.pop_front();
        }
    }

    /// Keeps only the deadlines still wanted, wherever they are in the
    /// line: for a caller whose stale deadlines pile up behind a live one
    /// (most are never due), so that memory follows the live ones.
    pub fn retain(&mut self, mut is_live: impl FnMut(SimTime, &T) -> bool) {
        self.line.retain(|(t, s)| is_live(*t, s));
    }

    /// Whether the line holds more than twice `live` deadlines plus a
    /// floor: when a caller that knows how many are live should
    /// [`DeadlineLine::retain`] (amortised O(1) per deadline).
    pub fn wants_sweep(&self, live: usize) -> bool {
        self.line.len() > 2 * live + SWEEP_FLOOR
    }

    /// Deadlines held, stale ones included.
    pub fn len(&self) -> usize {
        self.line.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.line.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u64) -> SimTime {
        SimTime::from_nanos(n)
    }

    #[test]
    fn deadlines_come_out_earliest_first_whatever_the_order_they_went_in() {
        let mut line = DeadlineLine::new();
        for (at, s) in [
            (10, "a"),
            (20, "b"),
            (20, "c"),
            (15, "d"),
            (30, "e"),
            (20, "f"),
        ] {
            line.push(t(at), s);
        }
        let mut out = Vec::new();
        while let Some((_, s)) = line.pop_due(t(25)) {
            out.push(s);
        }
        assert_eq!(out, ["a", "d", "b", "c", "f"]);
        assert_eq!(line.next(), Some(t(30)));
        assert_eq!(line.pop_due(t(29)), None);
    }

    #[test]
    fn stale_deadlines_at_the_front_are_dropped() {
        let mut line = DeadlineLine::new();
        for i in 0..5 {
            line.push(t(i), i);
        }
        line.drop_stale(|_, &s| s >= 3);
        assert_eq!(line.next(), Some(t(3)));
        assert_eq!(line.len(), 2);
    }

    #[test]
    fn a_sweep_keeps_the_live_deadlines_in_order_wherever_they_are() {
        let mut line = DeadlineLine::new();
        for i in 0..3000u64 {
            line.push(t(i), i);
        }
        // One in ten is still wanted: 300 live, 3000 held.
        assert!(line.wants_sweep(300));
        line.retain(|_, &s| s % 10 == 0);
        assert_eq!(line.len(), 300);
        assert!(!line.wants_sweep(300));
        let mut out = Vec::new();
        while let Some((_, s)) = line.pop_due(t(100)) {
            out.push(s);
        }
        assert_eq!(out, (0..=100).step_by(10).collect::<Vec<_>>());
    }
}
