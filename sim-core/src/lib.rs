//! # sim-core: the stormsim engine
//!
//! A deterministic discrete-event engine. It knows nothing about retries,
//! HTTP or pods: those live in `sim-models`. What it owns:
//!
//! * [`time`]: [`SimTime`](time::SimTime) and
//!   [`SimDuration`](time::SimDuration), integer nanoseconds; durations
//!   parsed with units (`250ms`, `1h30m`); wall-clock labels (`14:02:30`).
//! * [`sim`]: the loop. A [`Model`](sim::Model) handles typed events; a
//!   [`Scheduler`](sim::Scheduler) holds the clock and the pending events.
//! * [`queue`]: the pending-event structures, chosen by measurement.
//! * [`rng`]: one ChaCha8 stream per component, derived from
//!   (master seed, stable key).
//! * [`dist`]: delay distributions, validated from config.
//! * [`slab`]: records addressed by typed, generation-checked references
//!   (stale events find nothing, never someone else's record).
//! * [`waitline`]: a FIFO line of waiters that skips those who left.
//! * [`deadlines`]: timers of a fixed delay as a FIFO with one wake-up
//!   (no heap entry, no cancellation per timer).
//! * [`metrics`]: log-linear histograms and time-bucketed series.
//! * [`prefetch`]: the hint that starts loading a record its line will
//!   read soon (the workspace's one `unsafe` block).
//! * [`theory`]: Erlang B/C, to check models against.
//!
//! ## The ordering guarantee
//!
//! Events run in ascending time. Events for the same time run in the order
//! they were scheduled (FIFO), including events scheduled for "now" while
//! handling another event: they run after everything already pending for
//! that instant. Internally every event carries the key `(time, seq)`, where
//! `seq` counts scheduling calls; that one line is the whole rule.
//! Scheduling into the past is a typed error
//! ([`SchedulingError::InPast`](sim::SchedulingError)), never a clamp.
//!
//! ## The determinism contract
//!
//! A run is a pure function of the model's configuration and its master
//! seed: the engine never reads the wall clock, never does I/O, never
//! iterates a randomly ordered map, and never uses floating-point time.
//! Randomness comes only from [`rng::RngStreams`], whose derivation is
//! fixed and documented, so adding a component never shifts another's
//! draws. One run is single-threaded; parallelism belongs to sweeps.
//!
//! ## Example: a single-server queue
//!
//! ```
//! use sim_core::sim::{Limits, Model, Scheduler, Simulation};
//! use sim_core::time::{SimDuration, SimTime};
//!
//! #[derive(Debug)]
//! enum Event {
//!     CustomerArrived,
//!     ServiceCompleted,
//! }
//!
//! #[derive(Default)]
//! struct Desk {
//!     waiting: u32,
//!     busy: bool,
//!     served: u32,
//! }
//!
//! impl Model for Desk {
//!     type Event = Event;
//!     fn handle(&mut self, event: Event, sched: &mut Scheduler<Event>) {
//!         match event {
//!             Event::CustomerArrived if self.busy => self.waiting += 1,
//!             Event::CustomerArrived => {
//!                 self.busy = true;
//!                 sched.schedule_in(SimDuration::from_secs(3), Event::ServiceCompleted);
//!             }
//!             Event::ServiceCompleted => {
//!                 self.served += 1;
//!                 if self.waiting > 0 {
//!                     self.waiting -= 1;
//!                     sched.schedule_in(SimDuration::from_secs(3), Event::ServiceCompleted);
//!                 } else {
//!                     self.busy = false;
//!                 }
//!             }
//!         }
//!     }
//!     fn check_invariants(&self, _now: SimTime) -> Result<(), String> {
//!         if self.waiting > 0 && !self.busy {
//!             return Err("a customer waits at an idle desk".into());
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let mut sim = Simulation::new(Desk::default(), Limits::default());
//! for s in [0, 1, 2] {
//!     let at = SimTime::ZERO + SimDuration::from_secs(s);
//!     sim.scheduler().schedule_at(at, Event::CustomerArrived).unwrap();
//! }
//! sim.run_until_idle().unwrap();
//! assert_eq!(sim.model().served, 3);
//! assert_eq!(sim.now(), SimTime::ZERO + SimDuration::from_secs(9));
//! ```

pub mod deadlines;
pub mod dist;
pub mod metrics;
pub mod prefetch;
pub mod queue;
pub mod rng;
pub mod sim;
pub mod slab;
pub mod theory;
pub mod time;
pub mod waitline;
