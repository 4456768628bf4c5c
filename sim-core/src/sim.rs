//! The simulation loop: a model (state plus an event handler) driven by a
//! scheduler in `(time, seq)` order.
//!
//! The loop is deliberately small. Each step pops the least pending event,
//! advances the clock to its time, hands it to [`Model::handle`], and (when
//! enabled) runs [`Model::check_invariants`]. Everything a model does to the
//! future goes through the [`Scheduler`] it is handed.

use std::fmt;

use crate::queue::fifo::COMPACT_FLOOR;
use crate::queue::{EventId, EventKey, EventQueue, LazyHeap};
use crate::time::{SimDuration, SimTime};

/// Why an event could not be scheduled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedulingError {
    /// The requested time is earlier than the current time. The engine never
    /// clamps: a model that asks for the past has a bug worth seeing.
    InPast {
        /// When the event was asked for.
        requested: SimTime,
        /// The clock at the time of asking.
        now: SimTime,
    },
}

impl fmt::Display for SchedulingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedulingError::InPast { requested, now } => {
                write!(
                    f,
                    "cannot schedule an event at {requested}: the clock is already at {now}"
                )
            }
        }
    }
}
impl std::error::Error for SchedulingError {}

/// The clock and the pending events, as a model sees them.
///
/// Ordering guarantee: events run in ascending time; events scheduled for
/// the same time run in the order they were scheduled (FIFO), whichever
/// method scheduled them.
///
/// Cancellation is O(1) and leaves a tombstone that is swept once
/// tombstones outnumber live events, so memory stays within twice the
/// pending events even when nearly every timer is cancelled (the queue
/// behind it is [`LazyHeap`], chosen by measurement: see
/// `sim-core/benches/README.md`).
pub struct Scheduler<E> {
    now: SimTime,
    next_seq: u64,
    queue: LazyHeap<E>,
    /// Events for now that are never cancelled ([`Scheduler::schedule_now`]),
    /// with their sequence numbers: all due at `now` (the clock cannot
    /// pass them), in FIFO order.
    now_lane: NowLane<E>,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler {
            now: SimTime::ZERO,
            next_seq: 0,
            queue: LazyHeap::new(),
            now_lane: NowLane::default(),
        }
    }
}

impl<E> Scheduler<E> {
    /// An empty scheduler at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current simulated time.
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `time`, which may equal but not precede `now`.
    pub fn schedule_at(&mut self, time: SimTime, event: E) -> Result<EventId, SchedulingError> {
        let delay = time
            .checked_since(self.now)
            .ok_or(SchedulingError::InPast {
                requested: time,
                now: self.now,
            })?;
        Ok(self.push(time, delay, event))
    }

    /// Schedules `event` `delay` from now. A delay that would overflow the
    /// clock saturates at [`SimTime::MAX`], which no bounded run reaches.
    #[inline(always)]
    pub fn schedule_in(&mut self, delay: SimDuration, event: E) -> EventId {
        self.push(self.now.saturating_add(delay), delay, event)
    }

    /// Schedules `event` `delay` from now in FIFO stream `stream`: for a
    /// stream of events whose times rarely go back (one source's
    /// arrivals, the timers of one fixed delay), O(1) each way instead of
    /// a heap's O(log n). An event that would go back in its stream, or a
    /// stream past [`crate::queue::MAX_STREAMS`], is scheduled in the
    /// heap: the order of events is the same either way.
    #[inline]
    pub fn schedule_in_stream(&mut self, stream: usize, delay: SimDuration, event: E) -> EventId {
        let key = EventKey {
            time: self.now.saturating_add(delay),
            seq: self.next_seq,
        };
        self.next_seq += 1;
        self.queue.push_in_stream(stream, key, event)
    }

    /// Schedules `event` for now, after everything already pending for
    /// now: the same place as `schedule_in(ZERO, event)`, for an event
    /// that will never be cancelled (a message crossing a leg with no
    /// delay). O(1), no slot, no heap.
    #[inline]
    pub fn schedule_now(&mut self, event: E) {
        self.now_lane.push(self.next_seq, event);
        self.next_seq += 1;
    }

    /// Cancels a pending event. Returns `false`, harmlessly, if it already
    /// ran or was already cancelled.
    #[inline]
    pub fn cancel(&mut self, id: EventId) -> bool {
        self.queue.cancel(id)
    }

    /// Number of pending (not cancelled) events.
    pub fn pending(&self) -> usize {
        self.queue.len() + self.now_lane.len()
    }

    /// Entries held in memory: cancelled ones not yet swept and read
    /// ones not yet dropped included.
    pub fn stored(&self) -> usize {
        self.queue.stored() + self.now_lane.items.len()
    }

    /// Time of the next pending event.
    pub fn peek_time(&mut self) -> Option<SimTime> {
        if !self.now_lane.is_empty() {
            return Some(self.now);
        }
        self.queue.peek().map(|k| k.time)
    }

    #[inline]
    fn push(&mut self, time: SimTime, delay: SimDuration, event: E) -> EventId {
        let key = EventKey {
            time,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        self.queue.push(key, delay, event)
    }

    /// Takes the next event due at or before `end`, advancing the clock.
    #[inline(always)]
    fn pop_due(&mut self, end: SimTime) -> Option<E> {
        if let Some(seq) = self.now_lane.front_seq() {
            // The heap may hold events for now scheduled earlier. Its top
            // bounds its least live key, so only a top for now needs the
            // liveness check.
            let before = |k: EventKey| k.time == self.now && k.seq < seq;
            let heap_first = self.queue.peek_bound().is_some_and(before)
                && self.queue.peek().is_some_and(before);
            if !heap_first {
                return self.now_lane.pop();
            }
        }
        let (key, event) = self.queue.pop_at_or_before(end)?;
        debug_assert!(key.time >= self.now, "time went backwards");
        self.now = key.time;
        Some(event)
    }
}

/// The events for now, in FIFO order: a list read from a cursor and
/// emptied whenever the cursor reaches its end. The lane empties before
/// the clock moves on (its events are all due now), so that is usually
/// after a few events; a long run of events at one instant is compacted
/// as it goes, so the list holds about what is pending, never more than
/// twice that plus `COMPACT_FLOOR`. The streams and the
/// deadline lines use a generic list of the same kind (`queue/fifo.rs`);
/// the lane on it was measured at +0.2–0.4 % of a world's instructions
/// (its read inlined differently), so the lane keeps its own few lines.
struct NowLane<E> {
    /// Each event with its sequence number; `None` once taken.
    items: Vec<(u64, Option<E>)>,
    /// The first event not yet taken.
    head: usize,
}

impl<E> Default for NowLane<E> {
    fn default() -> Self {
        NowLane {
            items: Vec::new(),
            head: 0,
        }
    }
}

impl<E> NowLane<E> {
    #[inline]
    fn push(&mut self, seq: u64, event: E) {
        self.items.push((seq, Some(event)));
    }

    /// The sequence number of the first pending event.
    #[inline]
    fn front_seq(&self) -> Option<u64> {
        self.items.get(self.head).map(|&(seq, _)| seq)
    }

    /// Takes the first pending event.
    #[inline]
    fn pop(&mut self) -> Option<E> {
        let event = self.items.get_mut(self.head)?.1.take();
        self.head += 1;
        if self.head == self.items.len() {
            self.items.clear();
            self.head = 0;
        } else if self.head >= COMPACT_FLOOR && self.head * 2 >= self.items.len() {
            self.items.drain(..self.head);
            self.head = 0;
        }
        event
    }

    /// Pending events.
    #[inline]
    fn len(&self) -> usize {
        self.items.len() - self.head
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The world being simulated.
pub trait Model {
    /// Everything that can happen, named as facts (`AttemptTimedOut`).
    type Event;

    /// Reacts to one event at `sched.now()`.
    fn handle(&mut self, event: Self::Event, sched: &mut Scheduler<Self::Event>);

    /// Checks the model's invariants (conservation, bounds). Called after
    /// every event when [`Limits::check_every_event`] is set, and once at
    /// the end of every `run_*` call.
    fn check_invariants(&self, _now: SimTime) -> Result<(), String> {
        Ok(())
    }
}

/// The limits every run has. There is always a limit on events: a model
/// that schedules forever stops with [`RunError::EventLimit`] instead of
/// hanging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most events one simulation may process in total.
    pub max_events: u64,
    /// The most events one instant may hold: a loop of zero delays (an
    /// answer given at once and asked again at once) never moves the
    /// clock, and stops here rather than at `max_events`, which it would
    /// take minutes to reach.
    pub max_events_at_instant: u64,
    /// Run [`Model::check_invariants`] after every event (on by default in
    /// debug builds; always once at the end of a run call).
    pub check_every_event: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_events: 1_000_000_000,
            max_events_at_instant: 100_000_000,
            check_every_event: cfg!(debug_assertions),
        }
    }
}

/// Why a run stopped early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunError {
    /// The run hit [`Limits::max_events`].
    EventLimit {
        /// The limit that was hit.
        limit: u64,
        /// The clock when it was hit.
        now: SimTime,
    },
    /// At least [`Limits::max_events_at_instant`] events ran at one
    /// instant (counted from the first check that saw it).
    ClockStoodStill {
        /// The limit that was hit.
        limit: u64,
        /// The instant.
        now: SimTime,
    },
    /// [`Model::check_invariants`] failed.
    InvariantViolated {
        /// The clock when the check failed.
        now: SimTime,
        /// Events processed so far.
        events: u64,
        /// What the model reported.
        message: String,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::EventLimit { limit, now } => write!(
                f,
                "stopped at {now}: the limit of {limit} events (max_events) was reached"
            ),
            RunError::ClockStoodStill { limit, now } => write!(
                f,
                "stopped at {now}: {limit} events or more ran at that instant without the clock moving (max_events_at_instant): a loop of zero delays"
            ),
            RunError::InvariantViolated {
                now,
                events,
                message,
            } => {
                write!(
                    f,
                    "invariant violated at {now} after {events} events: {message}"
                )
            }
        }
    }
}
impl std::error::Error for RunError {}

/// A model and its scheduler.
pub struct Simulation<M: Model> {
    model: M,
    sched: Scheduler<M::Event>,
    limits: Limits,
    events: u64,
    /// The event count at which the limits are next checked: every few
    /// thousand events, so the loop pays one compare per event for both.
    next_check: u64,
    /// The clock at the last check, and the event count when a check
    /// first saw it: the clock never goes back, so while it reads the same
    /// at each check, every event since ran at that instant.
    instant: SimTime,
    instant_since: u64,
}

impl<M: Model> Simulation<M> {
    /// A simulation of `model` at time zero with no pending events.
    pub fn new(model: M, limits: Limits) -> Self {
        Simulation {
            model,
            sched: Scheduler::new(),
            limits,
            events: 0,
            next_check: 0,
            instant: SimTime::ZERO,
            instant_since: 0,
        }
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }
    /// The model, mutably (for setup between runs).
    pub fn model_mut(&mut self) -> &mut M {
        &mut self.model
    }
    /// Consumes the simulation, returning the model.
    pub fn into_model(self) -> M {
        self.model
    }
    /// The scheduler, for seeding the first events.
    pub fn scheduler(&mut self) -> &mut Scheduler<M::Event> {
        &mut self.sched
    }
    /// The model and the scheduler together (for setup code that needs
    /// both, such as a model scheduling its own first events).
    pub fn parts(&mut self) -> (&mut M, &mut Scheduler<M::Event>) {
        (&mut self.model, &mut self.sched)
    }
    /// The current simulated time.
    pub fn now(&self) -> SimTime {
        self.sched.now
    }
    /// Events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.events
    }

    fn check(&self) -> Result<(), RunError> {
        self.model
            .check_invariants(self.sched.now)
            .map_err(|message| RunError::InvariantViolated {
                now: self.sched.now,
                events: self.events,
                message,
            })
    }

    /// The event limits, checked every [`Simulation::check_interval`]
    /// events and at every event past `max_events`: the total (when an
    /// event is still due by `end`), then the events of one instant,
    /// which stop a run within the limit plus twice the interval.
    #[cold]
    fn check_limits(&mut self, end: SimTime) -> Result<(), RunError> {
        let now = self.sched.now;
        if self.events >= self.limits.max_events {
            if self.sched.peek_time().is_some_and(|t| t <= end) {
                return Err(RunError::EventLimit {
                    limit: self.limits.max_events,
                    now,
                });
            }
            return Ok(());
        }
        if now != self.instant {
            (self.instant, self.instant_since) = (now, self.events);
        } else if self.events - self.instant_since >= self.limits.max_events_at_instant {
            return Err(RunError::ClockStoodStill {
                limit: self.limits.max_events_at_instant,
                now,
            });
        }
        self.next_check = self
            .limits
            .max_events
            .min(self.events.saturating_add(self.check_interval()));
        Ok(())
    }

    /// Events between two checks of the instant limit: a quarter of it,
    /// at most 65,536 (a check costs about as much as an event).
    fn check_interval(&self) -> u64 {
        (self.limits.max_events_at_instant / 4).clamp(1, 65_536)
    }

    /// Processes the next event, if any; `Ok(false)` when none is pending.
    pub fn step(&mut self) -> Result<bool, RunError> {
        self.step_until(SimTime::MAX)
    }

    /// Processes the next event due at or before `end`; `Ok(false)` when
    /// there is none. Always inlined: it is the body of the event loop in
    /// [`Simulation::run_until`], and as a call of its own (left so when
    /// the caller's code unit changed) it cost the steady world 4 % more
    /// instructions.
    #[inline(always)]
    fn step_until(&mut self, end: SimTime) -> Result<bool, RunError> {
        if self.events >= self.next_check {
            self.check_limits(end)?;
        }
        let Some(event) = self.sched.pop_due(end) else {
            return Ok(false);
        };
        self.events += 1;
        self.model.handle(event, &mut self.sched);
        if self.limits.check_every_event {
            self.check()?;
        }
        Ok(true)
    }

    /// Runs every event at or before `end`, then sets the clock to `end`
    /// (if it is not already later). Events after `end` stay pending, so a
    /// later call continues where this one stopped.
    pub fn run_until(&mut self, end: SimTime) -> Result<(), RunError> {
        while self.step_until(end)? {}
        self.sched.now = self.sched.now.max(end);
        self.check()
    }

    /// Runs for `span` of simulated time from now.
    pub fn run_for(&mut self, span: SimDuration) -> Result<(), RunError> {
        self.run_until(self.sched.now.saturating_add(span))
    }

    /// Runs until no event is pending.
    pub fn run_until_idle(&mut self) -> Result<(), RunError> {
        while self.step()? {}
        self.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the order events run in.
    #[derive(Default)]
    struct Recorder {
        seen: Vec<(u64, &'static str)>,
    }

    impl Model for Recorder {
        type Event = &'static str;
        fn handle(&mut self, event: &'static str, sched: &mut Scheduler<&'static str>) {
            self.seen.push((sched.now().as_nanos(), event));
            if event == "spawn" {
                // Same-time events scheduled while handling run after the
                // ones already pending for that time.
                sched.schedule_in(SimDuration::ZERO, "spawned-now");
                sched.schedule_in(SimDuration::from_nanos(5), "spawned-later");
            }
            if event == "mix" {
                // The lane for now and the heap share one order: by
                // sequence, whichever method scheduled the event.
                sched.schedule_now("lane-1");
                sched.schedule_in(SimDuration::ZERO, "heap-2");
                sched.schedule_now("lane-3");
            }
            if event == "lane-1" {
                sched.schedule_now("lane-4");
            }
            if event == "streams" {
                // Streams, the heap and the lane for now share one order
                // too, a stream's event that goes back included.
                sched.schedule_in_stream(0, SimDuration::from_nanos(2), "stream-0-at-2");
                sched.schedule_in_stream(0, SimDuration::from_nanos(1), "stream-0-back-at-1");
                sched.schedule_in_stream(1, SimDuration::ZERO, "stream-1-now");
                sched.schedule_in(SimDuration::from_nanos(1), "heap-at-1");
                sched.schedule_now("lane-now");
                sched.schedule_in_stream(1, SimDuration::from_nanos(2), "stream-1-at-2");
            }
        }
    }

    #[test]
    fn streams_keep_the_one_order_of_every_event() {
        let mut sim = Simulation::new(Recorder::default(), Limits::default());
        sim.scheduler()
            .schedule_at(SimTime::from_nanos(3), "streams")
            .unwrap();
        sim.run_until_idle().unwrap();
        let order: Vec<_> = sim.model().seen.iter().map(|&(t, e)| (t, e)).collect();
        assert_eq!(
            order,
            [
                (3, "streams"),
                (3, "stream-1-now"),
                (3, "lane-now"),
                (4, "stream-0-back-at-1"),
                (4, "heap-at-1"),
                (5, "stream-0-at-2"),
                (5, "stream-1-at-2"),
            ]
        );
    }

    #[test]
    fn equal_times_run_in_scheduling_order() {
        let mut sim = Simulation::new(Recorder::default(), Limits::default());
        let s = sim.scheduler();
        s.schedule_at(SimTime::from_nanos(10), "heap-first")
            .unwrap();
        s.schedule_in(SimDuration::from_nanos(10), "relative-second");
        s.schedule_at(SimTime::from_nanos(10), "heap-third")
            .unwrap();
        s.schedule_at(SimTime::from_nanos(5), "spawn").unwrap();
        s.schedule_at(SimTime::from_nanos(5), "after-spawn")
            .unwrap();
        sim.run_until_idle().unwrap();
        let order: Vec<_> = sim.model().seen.iter().map(|(_, e)| *e).collect();
        assert_eq!(
            order,
            [
                "spawn",
                "after-spawn",
                "spawned-now",
                "heap-first",
                "relative-second",
                "heap-third",
                "spawned-later"
            ]
        );
    }

    #[test]
    fn events_for_now_keep_one_order_whether_in_the_lane_or_the_heap() {
        let mut sim = Simulation::new(Recorder::default(), Limits::default());
        let s = sim.scheduler();
        s.schedule_at(SimTime::from_nanos(7), "mix").unwrap();
        s.schedule_at(SimTime::from_nanos(7), "pending-before")
            .unwrap();
        s.schedule_at(SimTime::from_nanos(8), "later").unwrap();
        sim.run_until(SimTime::from_nanos(7)).unwrap();
        assert_eq!(sim.scheduler().pending(), 1, "only the 8 ns event is left");
        sim.run_until_idle().unwrap();
        let seen = &sim.model().seen;
        let order: Vec<_> = seen.iter().map(|(_, e)| *e).collect();
        assert_eq!(
            order,
            [
                "mix",
                "pending-before",
                "lane-1",
                "heap-2",
                "lane-3",
                "lane-4",
                "later"
            ]
        );
        assert!(seen[..6].iter().all(|(t, _)| *t == 7));
    }

    #[test]
    fn the_lane_for_now_keeps_fifo_order_and_its_memory_bounded_in_a_long_instant() {
        // One instant that never lets the lane empty.
        let mut lane = NowLane::default();
        let mut next = 0u64;
        for _ in 0..3 {
            lane.push(next, next);
            next += 1;
        }
        let mut expected = 0u64;
        let mut most_held = 0;
        while let Some(seq) = lane.front_seq() {
            assert_eq!(seq, expected);
            assert_eq!(lane.pop(), Some(expected), "FIFO order");
            expected += 1;
            for _ in 0..crate::queue::fifo::long_instant_adds(expected) {
                lane.push(next, next);
                next += 1;
            }
            assert_eq!(lane.len() as u64, next - expected);
            most_held = most_held.max(lane.items.len());
            assert!(
                lane.items.len() <= 2 * lane.len() + COMPACT_FLOOR + 1,
                "{} entries held for {} pending",
                lane.items.len(),
                lane.len()
            );
        }
        assert_eq!(expected, next, "every event taken once");
        assert!(lane.is_empty() && lane.items.is_empty());
        assert!(
            most_held < 3_000 && next > 7_000,
            "the taken front was dropped: at most {most_held} held of {next}"
        );
    }

    #[test]
    fn scheduling_in_the_past_is_a_typed_error() {
        let mut sim = Simulation::new(Recorder::default(), Limits::default());
        sim.run_until(SimTime::from_nanos(100)).unwrap();
        let err = sim
            .scheduler()
            .schedule_at(SimTime::from_nanos(99), "late")
            .unwrap_err();
        assert_eq!(
            err,
            SchedulingError::InPast {
                requested: SimTime::from_nanos(99),
                now: SimTime::from_nanos(100)
            }
        );
        assert!(
            sim.scheduler()
                .schedule_at(SimTime::from_nanos(100), "now")
                .is_ok()
        );
    }

    struct Forever;
    impl Model for Forever {
        type Event = ();
        fn handle(&mut self, _: (), sched: &mut Scheduler<()>) {
            sched.schedule_in(SimDuration::from_nanos(1), ());
        }
    }

    #[test]
    fn the_event_limit_stops_a_runaway_model_and_names_itself() {
        let limits = Limits {
            max_events: 1_000,
            ..Limits::default()
        };
        let mut sim = Simulation::new(Forever, limits);
        sim.scheduler().schedule_in(SimDuration::ZERO, ());
        let err = sim.run_until_idle().unwrap_err();
        assert_eq!(
            err,
            RunError::EventLimit {
                limit: 1_000,
                now: SimTime::from_nanos(999)
            }
        );
        assert!(err.to_string().contains("max_events"));
    }

    /// Schedules itself again at once: the clock never moves.
    struct Zeno;
    impl Model for Zeno {
        type Event = ();
        fn handle(&mut self, _: (), sched: &mut Scheduler<()>) {
            sched.schedule_now(());
        }
    }

    #[test]
    fn a_loop_of_zero_delays_stops_at_the_instant_limit_and_names_it() {
        let limits = Limits {
            max_events_at_instant: 500,
            ..Limits::default()
        };
        let mut sim = Simulation::new(Zeno, limits);
        sim.scheduler()
            .schedule_at(SimTime::from_nanos(7), ())
            .unwrap();
        let err = sim.run_until_idle().unwrap_err();
        assert_eq!(
            err,
            RunError::ClockStoodStill {
                limit: 500,
                now: SimTime::from_nanos(7)
            }
        );
        // Checked every 125 events: stopped within 500 + 2 × 125.
        assert!((500..=750).contains(&sim.events_processed()));
        assert!(err.to_string().contains("max_events_at_instant"), "{err}");
        // A model whose clock moves runs past the same count, and so does
        // one that waits at an instant the clock was moved to.
        let mut sim = Simulation::new(Forever, limits);
        sim.scheduler().schedule_in(SimDuration::ZERO, ());
        sim.run_until(SimTime::from_nanos(2_000)).unwrap();
        assert!(sim.events_processed() > 2_000);
        let mut sim = Simulation::new(Zeno, limits);
        sim.scheduler()
            .schedule_at(SimTime::from_nanos(10), ())
            .unwrap();
        for (i, end) in [9, 10].into_iter().enumerate() {
            let r = sim.run_until(SimTime::from_nanos(end));
            assert_eq!(r.is_err(), i == 1, "{r:?}");
        }
        assert!((500..=750).contains(&sim.events_processed()));
    }

    struct Broken(u32);
    impl Model for Broken {
        type Event = ();
        fn handle(&mut self, _: (), _: &mut Scheduler<()>) {
            self.0 += 1;
        }
        fn check_invariants(&self, _: SimTime) -> Result<(), String> {
            if self.0 > 2 {
                Err(format!("count {} > 2", self.0))
            } else {
                Ok(())
            }
        }
    }

    #[test]
    fn an_invariant_violation_stops_the_run_with_time_and_message() {
        let limits = Limits {
            check_every_event: true,
            ..Limits::default()
        };
        let mut sim = Simulation::new(Broken(0), limits);
        for t in 1..=5 {
            sim.scheduler()
                .schedule_at(SimTime::from_nanos(t), ())
                .unwrap();
        }
        let err = sim.run_until_idle().unwrap_err();
        assert_eq!(
            err,
            RunError::InvariantViolated {
                now: SimTime::from_nanos(3),
                events: 3,
                message: "count 3 > 2".into()
            }
        );
    }

    #[test]
    fn run_until_leaves_later_events_pending_and_advances_the_clock() {
        let mut sim = Simulation::new(Recorder::default(), Limits::default());
        sim.scheduler()
            .schedule_at(SimTime::from_nanos(50), "a")
            .unwrap();
        sim.scheduler()
            .schedule_at(SimTime::from_nanos(150), "b")
            .unwrap();
        sim.run_until(SimTime::from_nanos(100)).unwrap();
        assert_eq!(sim.now(), SimTime::from_nanos(100));
        assert_eq!(sim.scheduler().pending(), 1);
        sim.run_for(SimDuration::from_nanos(100)).unwrap();
        assert_eq!(sim.model().seen, [(50, "a"), (150, "b")]);
    }
}
