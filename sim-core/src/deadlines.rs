//! A line of deadlines that mostly arrive in order: the timers of a fixed
//! delay (every attempt's timeout is "now + the same timeout").
//!
//! A model that arms one timer per attempt and cancels nearly all of them
//! (most attempts answer in time) keeps the scheduler's heap full of
//! entries that will never fire. Deadlines of one fixed delay are already
//! in order when armed, so they can wait in a FIFO instead, with a single
//! scheduled wake-up at the earliest one: arming is O(1), and a timer that
//! is no longer wanted is not cancelled at all, only recognised as stale
//! when it reaches the front.
//!
//! When the delay changes (a deploy shortens the timeout), new deadlines
//! come before old ones. Inserting each in its place would move the whole
//! tail of a long line at every arm (quadratic over the old delay's
//! span), so a deadline earlier than every run's last starts a run of its
//! own: the line is a few sorted FIFO runs, one per delay in use, and the
//! earliest deadline is the least of their fronts. Past [`MAX_RUNS`] runs
//! (delays that vary from arm to arm, which this structure is not for) a
//! deadline is inserted in its place in the run that ends nearest before
//! it, so the line stays right whatever the delays.
//!
//! A run is a list read from a cursor (`queue/fifo.rs`), like the streams
//! beside the scheduler's heap: cheaper per deadline than a ring buffer
//! (−0.6 % of the steady world's instructions), and it holds at most
//! twice its unread deadlines plus 1,024.

use crate::prefetch::LOAD_AHEAD;
use crate::queue::EventId;
use crate::queue::fifo::Fifo;
use crate::sim::Scheduler;
use crate::time::SimTime;

/// Stale deadlines a line may hold beyond twice its live ones before
/// [`DeadlineLine::wants_sweep`] says so.
const SWEEP_FLOOR: usize = 1024;

/// Runs a line keeps before it inserts in place: each costs a comparison
/// when the earliest deadline is looked for.
pub const MAX_RUNS: usize = 8;

/// One deadline: when, the order it was armed in (ties between runs), and
/// its subject.
type Entry<T> = (SimTime, u64, T);

/// Deadlines with their subjects, earliest first; equal deadlines in the
/// order they were armed.
#[derive(Clone, Debug)]
pub struct DeadlineLine<T> {
    runs: Vec<Fifo<Entry<T>>>,
    armed: u64,
    /// The wake-up scheduled for the earliest deadline, and when.
    wake: Option<(SimTime, EventId)>,
    /// True while the due deadlines are being delivered (between
    /// [`DeadlineLine::woken`] and [`DeadlineLine::delivered`]): arming
    /// then schedules no wake-up, the delivery's end does.
    delivering: bool,
}

impl<T> Default for DeadlineLine<T> {
    fn default() -> Self {
        DeadlineLine {
            runs: Vec::new(),
            armed: 0,
            wake: None,
            delivering: false,
        }
    }
}

/// What a deadline line asks of its caller about the subjects it holds:
/// whether each is still wanted and, optionally, a hint that one will be
/// asked about soon. A closure `FnMut(SimTime, &T) -> bool` answers the
/// first and ignores the hint.
pub trait Subjects<T> {
    /// Whether `subject`'s deadline `at` is still wanted.
    fn is_live(&mut self, at: SimTime, subject: &T) -> bool;

    /// `subject` will be asked about a few entries from now: a caller
    /// whose subjects live in memory long out of cache starts loading it.
    #[inline]
    fn prefetch(&self, _subject: &T) {}
}

impl<T, F: FnMut(SimTime, &T) -> bool> Subjects<T> for F {
    #[inline]
    fn is_live(&mut self, at: SimTime, subject: &T) -> bool {
        self(at, subject)
    }
}

impl<T: Copy> DeadlineLine<T> {
    /// An empty line.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `subject`'s deadline `at`. O(1) when deadlines arrive in order,
    /// and when they arrive in order within each of a few delays.
    #[inline]
    pub fn push(&mut self, at: SimTime, subject: T) {
        self.push_in_order(at, subject);
    }

    /// [`DeadlineLine::push`], saying whether the deadline went behind
    /// every one held (the usual case: it changes no run's front).
    #[inline]
    fn push_in_order(&mut self, at: SimTime, subject: T) -> bool {
        let entry = (at, self.armed, subject);
        self.armed += 1;
        // The run that ends latest at or before `at` keeps every run
        // sorted; the last run is the usual one.
        let fits = |r: &Fifo<Entry<T>>| r.back().is_none_or(|b| b.0 <= at);
        if let [only] = &mut self.runs[..]
            && fits(only)
        {
            let behind = !only.is_empty();
            only.push_back(entry);
            return behind;
        }
        if let Some(last) = self.runs.last_mut()
            && fits(last)
        {
            last.push_back(entry);
            return false;
        }
        let best = self
            .runs
            .iter()
            .enumerate()
            .filter(|(_, r)| fits(r))
            .max_by_key(|(_, r)| r.back().map(|b| b.0))
            .map(|(i, _)| i);
        match best {
            Some(i) => self.runs[i].push_back(entry),
            None if self.runs.len() < MAX_RUNS => self.runs.push(Fifo::of(entry)),
            None => {
                // Too many delays: in place, in the run whose first
                // deadline is latest at or before `at` (or the first).
                let i = self
                    .runs
                    .iter()
                    .rposition(|r| r.front().is_some_and(|f| f.0 <= at))
                    .unwrap_or(0);
                let run = &mut self.runs[i];
                let k = run.partition_point(|e| e.0 <= at);
                run.insert(k, entry);
            }
        }
        false
    }

    /// Arms `subject`'s deadline `at`: adds it, sweeps the line when stale
    /// deadlines crowd the `live` ones, and makes sure `wake` is due at the
    /// earliest live deadline. `is_live` tells a deadline still wanted.
    ///
    /// A deadline behind every one held, with a wake-up already scheduled,
    /// needs nothing more: the wake-up is no later than the earliest
    /// deadline, which this one is not (the usual case, a fixed delay).
    #[inline]
    pub fn arm<E>(
        &mut self,
        at: SimTime,
        subject: T,
        live: usize,
        mut is_live: impl Subjects<T>,
        sched: &mut Scheduler<E>,
        wake: E,
    ) {
        let behind = self.push_in_order(at, subject);
        if self.wants_sweep(live) {
            self.sweep(&mut is_live);
        }
        if behind && self.wake.is_some() {
            return;
        }
        self.schedule_wake(sched, is_live, wake);
    }

    /// Makes sure `wake` is scheduled at the earliest live deadline (stale
    /// ones at the fronts dropped first): a wake-up already due in time is
    /// kept, a later one moved. Call after arming and after a delivery.
    pub fn schedule_wake<E>(
        &mut self,
        sched: &mut Scheduler<E>,
        is_live: impl Subjects<T>,
        wake: E,
    ) {
        if self.delivering {
            return;
        }
        self.drop_stale(is_live);
        let Some(next) = self.next() else {
            return; // nothing armed
        };
        match self.wake {
            Some((at, _)) if at <= next => {} // already due in time
            old => {
                if let Some((_, id)) = old {
                    sched.cancel(id);
                }
                let at = next.max(sched.now());
                self.wake = sched.schedule_at(at, wake).ok().map(|id| (at, id));
            }
        }
    }

    /// The wake-up ran: the deadlines due now are delivered next
    /// ([`DeadlineLine::pop_live_due`]), then [`DeadlineLine::delivered`].
    pub fn woken(&mut self) {
        self.wake = None;
        self.delivering = true;
    }

    /// The delivery is over: `wake` is scheduled at the earliest live
    /// deadline left (see [`DeadlineLine::schedule_wake`]).
    pub fn delivered<E>(&mut self, sched: &mut Scheduler<E>, is_live: impl Subjects<T>, wake: E) {
        self.delivering = false;
        self.schedule_wake(sched, is_live, wake);
    }

    /// The run holding the earliest deadline.
    #[inline]
    fn earliest_run(&self) -> Option<usize> {
        if self.runs.len() == 1 {
            return (!self.runs[0].is_empty()).then_some(0);
        }
        self.runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.front().map(|f| ((f.0, f.1), i)))
            .min()
            .map(|(_, i)| i)
    }

    /// The subject `k` places behind the first run's front.
    #[inline]
    pub fn ahead(&self, k: usize) -> Option<&T> {
        self.runs.first().and_then(|r| r.get(k)).map(|e| &e.2)
    }

    /// The earliest deadline, stale ones included.
    #[inline]
    pub fn next(&self) -> Option<SimTime> {
        self.earliest_run()
            .and_then(|i| self.runs[i].front())
            .map(|f| f.0)
    }

    /// Takes the earliest deadline still wanted (per `is_live`) if it is
    /// at or before `now`; stale ones before it are dropped.
    #[inline]
    pub fn pop_live_due(
        &mut self,
        now: SimTime,
        mut is_live: impl Subjects<T>,
    ) -> Option<(SimTime, T)> {
        while let Some((at, subject)) = self.pop_due(now) {
            if is_live.is_live(at, &subject) {
                return Some((at, subject));
            }
        }
        None
    }

    /// Takes the earliest deadline if it is at or before `now`.
    #[inline]
    pub fn pop_due(&mut self, now: SimTime) -> Option<(SimTime, T)> {
        let i = self.earliest_run()?;
        if self.runs[i].front().is_none_or(|f| f.0 > now) {
            return None;
        }
        let (at, _, subject) = self.runs[i].pop_front()?;
        self.forget_empty(i);
        Some((at, subject))
    }

    /// Drops run `i` if it is empty and not the only one.
    #[inline]
    fn forget_empty(&mut self, i: usize) {
        if self.runs[i].is_empty() && self.runs.len() > 1 {
            self.runs.remove(i);
        }
    }

    /// Drops deadlines at the fronts that are no longer wanted, so that the
    /// next wake-up is for a live one.
    #[inline]
    pub fn drop_stale(&mut self, mut is_live: impl Subjects<T>) {
        if let [run] = &mut self.runs[..] {
            while let Some((t, _, s)) = run.front() {
                if let Some(next) = run.get(LOAD_AHEAD) {
                    is_live.prefetch(&next.2);
                }
                if is_live.is_live(*t, s) {
                    return;
                }
                run.advance();
            }
            return;
        }
        for run in &mut self.runs {
            while let Some((t, _, s)) = run.front() {
                if let Some(next) = run.get(LOAD_AHEAD) {
                    is_live.prefetch(&next.2);
                }
                if is_live.is_live(*t, s) {
                    break;
                }
                run.advance();
            }
        }
        if self.runs.len() > 1 {
            self.runs.retain(|r| !r.is_empty());
        }
    }

    /// Keeps only the deadlines still wanted, wherever they are in the
    /// line: for a caller whose stale deadlines pile up behind a live one
    /// (most are never due), so that memory follows the live ones.
    pub fn retain(&mut self, mut is_live: impl Subjects<T>) {
        self.sweep(&mut is_live);
    }

    fn sweep(&mut self, is_live: &mut impl Subjects<T>) {
        for run in &mut self.runs {
            run.retain_ahead(LOAD_AHEAD, |e, next| {
                if let Some(n) = next {
                    is_live.prefetch(&n.2);
                }
                is_live.is_live(e.0, &e.2)
            });
        }
        if self.runs.len() > 1 {
            self.runs.retain(|r| !r.is_empty());
        }
    }

    /// Whether the line holds more than twice `live` deadlines plus a
    /// floor: when a caller that knows how many are live should
    /// [`DeadlineLine::retain`] (amortised O(1) per deadline).
    #[inline]
    pub fn wants_sweep(&self, live: usize) -> bool {
        self.len() > 2 * live + SWEEP_FLOOR
    }

    /// Deadlines held, stale ones included.
    #[inline]
    pub fn len(&self) -> usize {
        // One run is the usual line (one fixed delay), asked at every
        // arm: its length without a loop over the runs.
        match &self.runs[..] {
            [only] => only.len(),
            runs => runs.iter().map(Fifo::len).sum(),
        }
    }

    /// Runs held (one per delay in use, at most [`MAX_RUNS`]).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.runs.iter().all(Fifo::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

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
    fn a_shorter_delay_starts_a_run_and_the_order_holds_across_runs() {
        // A 30-unit delay armed at 0..100, then a 1-unit delay from 100:
        // every new deadline is earlier than the old ones still held.
        let mut line = DeadlineLine::new();
        for now in 0..100u64 {
            line.push(t(now + 30), ("long", now));
        }
        for now in 100..200u64 {
            line.push(t(now + 1), ("short", now));
        }
        assert_eq!(line.runs(), 2, "one run per delay, no insertion");
        let mut out = Vec::new();
        while let Some((at, s)) = line.pop_due(t(1000)) {
            out.push((at.as_nanos(), s));
        }
        let mut sorted = out.clone();
        sorted.sort_by_key(|&(at, (_, armed))| (at, armed));
        assert_eq!(out, sorted, "earliest first, ties in arming order");
        assert_eq!(out.len(), 200);
        assert_eq!(line.runs(), 1, "emptied runs are forgotten");
    }

    #[test]
    fn deadlines_of_many_delays_come_out_in_order() {
        // Delays that change at every arm: more runs than kept, so some
        // are inserted in place; the order is still by time, then by arming.
        let mut line = DeadlineLine::new();
        let mut x = 12345u64;
        let mut armed = Vec::new();
        for i in 0..2000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = i + (x >> 40) % 500;
            line.push(t(at), i);
            armed.push((at, i));
        }
        assert!(line.runs() <= MAX_RUNS);
        armed.sort();
        let mut out = Vec::new();
        while let Some((at, i)) = line.pop_due(t(10_000)) {
            out.push((at.as_nanos(), i));
        }
        assert_eq!(out, armed);
    }

    #[test]
    fn stale_deadlines_at_the_front_are_dropped() {
        let mut line = DeadlineLine::new();
        for i in 0..5 {
            line.push(t(i), i);
        }
        line.drop_stale(|_: SimTime, s: &u64| *s >= 3);
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
        line.retain(|_: SimTime, s: &u64| s.is_multiple_of(10));
        assert_eq!(line.len(), 300);
        assert!(!line.wants_sweep(300));
        let mut out = Vec::new();
        while let Some((_, s)) = line.pop_due(t(100)) {
            out.push(s);
        }
        assert_eq!(out, (0..=100).step_by(10).collect::<Vec<_>>());
    }

    /// Subjects that are live from `from` on, noting what the line asks
    /// and hints.
    struct Noted<'a> {
        from: u64,
        asked: &'a RefCell<Vec<u64>>,
        hinted: &'a RefCell<Vec<u64>>,
    }

    impl Subjects<u64> for Noted<'_> {
        fn is_live(&mut self, _at: SimTime, s: &u64) -> bool {
            self.asked.borrow_mut().push(*s);
            *s >= self.from
        }
        fn prefetch(&self, s: &u64) {
            self.hinted.borrow_mut().push(*s);
        }
    }

    #[test]
    fn the_line_hints_at_the_subject_it_will_ask_about_a_few_entries_on() {
        let mut line = DeadlineLine::new();
        for i in 0..100u64 {
            line.push(t(i), i);
        }
        let (asked, hinted) = (RefCell::new(Vec::new()), RefCell::new(Vec::new()));
        let noted = |from| Noted {
            from,
            asked: &asked,
            hinted: &hinted,
        };
        let ahead = LOAD_AHEAD as u64;
        line.drop_stale(noted(20));
        // Each subject asked about was hinted at LOAD_AHEAD entries before.
        assert_eq!(asked.take(), (0..=20).collect::<Vec<_>>());
        assert_eq!(hinted.take(), (ahead..=20 + ahead).collect::<Vec<_>>());
        assert_eq!(line.next(), Some(t(20)));

        // A sweep hints the same way, and keeps what a closure would.
        line.retain(noted(50));
        assert_eq!(asked.take(), (20..100).collect::<Vec<_>>());
        assert_eq!(hinted.take(), (20 + ahead..100).collect::<Vec<_>>());
        assert_eq!(line.len(), 50);
        assert_eq!(line.next(), Some(t(50)));
    }
}
