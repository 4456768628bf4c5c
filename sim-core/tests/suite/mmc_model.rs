#![allow(dead_code)] // shared by several test crates, each using a part
//! An M/M/c queue (and, with no waiting room, an M/M/c/c loss system)
//! built on the engine: Poisson arrivals, `c` servers, exponential
//! service, FIFO waiting line. Shared by the validation tests and the
//! `mmc` example.

use std::collections::VecDeque;

use sim_core::dist::{Dist, DistSpec};
use sim_core::rng::{RngStreams, SimRng};
use sim_core::sim::{Limits, Model, Scheduler, Simulation};
use sim_core::time::{SimDuration, SimTime};

/// What happens in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueEvent {
    /// A customer arrived.
    CustomerArrived,
    /// A server finished serving a customer.
    ServiceCompleted,
}

/// Parameters of one experiment.
#[derive(Clone, Copy, Debug)]
pub struct MmcParams {
    /// Servers.
    pub servers: u32,
    /// Arrivals per second.
    pub lambda: f64,
    /// Services per second per server.
    pub mu: f64,
    /// Waiting room: `None` unbounded (M/M/c), `Some(0)` loss (M/M/c/c).
    pub waiting_room: Option<usize>,
    /// Customers counted after the warm-up.
    pub customers: u64,
    /// Customers ignored at the start (the queue starts empty).
    pub warmup: u64,
    /// Master seed.
    pub seed: u64,
}

/// Batch means: splits a stream of observations into fixed-size batches so
/// the standard error of the mean can be estimated despite correlation.
#[derive(Clone, Debug, Default)]
pub struct BatchMeans {
    batch_size: u64,
    current: (f64, u64),
    means: Vec<f64>,
}

impl BatchMeans {
    fn new(batch_size: u64) -> Self {
        BatchMeans {
            batch_size,
            ..Default::default()
        }
    }
    fn push(&mut self, x: f64) {
        self.current.0 += x;
        self.current.1 += 1;
        if self.current.1 == self.batch_size {
            self.means.push(self.current.0 / self.batch_size as f64);
            self.current = (0.0, 0);
        }
    }
    /// Grand mean of the completed batches.
    pub fn mean(&self) -> f64 {
        self.means.iter().sum::<f64>() / self.means.len() as f64
    }
    /// Standard error of the grand mean, from the spread of batch means.
    pub fn std_error(&self) -> f64 {
        let m = self.mean();
        let k = self.means.len() as f64;
        let var = self.means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1.0);
        (var / k).sqrt()
    }
}

/// The queue's state and statistics.
pub struct Mmc {
    p: MmcParams,
    interarrival: Dist,
    service: Dist,
    arrivals_rng: SimRng,
    service_rng: SimRng,
    busy: u32,
    line: VecDeque<SimTime>,
    seen: u64,
    /// Waiting time before service, seconds, per counted customer.
    pub wait: BatchMeans,
    /// 1 if the counted customer had to wait (or was lost), else 0.
    pub delayed: BatchMeans,
    /// Time-integral of the line length over the counted period.
    line_area: f64,
    last_change: SimTime,
    counting_since: Option<SimTime>,
    /// A trace of (time ns, event) for determinism checks.
    pub trace_hash: u64,
}

impl Mmc {
    fn new(p: MmcParams) -> Self {
        let streams = RngStreams::new(p.seed);
        let secs = |s: f64| SimDuration::from_secs_f64(s);
        let batch = p.customers / 50;
        Mmc {
            interarrival: Dist::new(&DistSpec::Exponential {
                mean: secs(1.0 / p.lambda),
            })
            .unwrap(),
            service: Dist::new(&DistSpec::Exponential {
                mean: secs(1.0 / p.mu),
            })
            .unwrap(),
            arrivals_rng: streams.stream("arrivals"),
            service_rng: streams.stream("service"),
            busy: 0,
            line: VecDeque::new(),
            seen: 0,
            wait: BatchMeans::new(batch),
            delayed: BatchMeans::new(batch),
            line_area: 0.0,
            last_change: SimTime::ZERO,
            counting_since: None,
            trace_hash: 0xcbf2_9ce4_8422_2325,
            p,
        }
    }

    fn counting(&self) -> bool {
        self.seen > self.p.warmup && self.seen <= self.p.warmup + self.p.customers
    }

    fn line_changes(&mut self, now: SimTime) {
        if self.counting_since.is_some() {
            self.line_area += self.line.len() as f64 * (now - self.last_change).as_secs_f64();
        }
        self.last_change = now;
    }

    /// Mean line length over the counted period (for Little's law).
    pub fn mean_line_length(&self, end: SimTime) -> f64 {
        let since = self.counting_since.expect("counted customers");
        self.line_area / (end - since).as_secs_f64()
    }

    fn start_service(&mut self, sched: &mut Scheduler<QueueEvent>) {
        self.busy += 1;
        let d = self.service.sample(&mut self.service_rng);
        sched.schedule_in(d, QueueEvent::ServiceCompleted);
    }
}

impl Model for Mmc {
    type Event = QueueEvent;

    fn handle(&mut self, event: QueueEvent, sched: &mut Scheduler<QueueEvent>) {
        let now = sched.now();
        self.trace_hash =
            (self.trace_hash ^ now.as_nanos() ^ (event as u64)).wrapping_mul(0x100_0000_01b3);
        match event {
            QueueEvent::CustomerArrived => {
                self.seen += 1;
                if self.seen == self.p.warmup + 1 {
                    self.counting_since = Some(now);
                    self.last_change = now;
                }
                if self.seen < self.p.warmup + self.p.customers {
                    let gap = self.interarrival.sample(&mut self.arrivals_rng);
                    sched.schedule_in(gap, QueueEvent::CustomerArrived);
                }
                let counting = self.counting();
                if self.busy < self.p.servers {
                    if counting {
                        self.wait.push(0.0);
                        self.delayed.push(0.0);
                    }
                    self.start_service(sched);
                } else if self
                    .p
                    .waiting_room
                    .is_none_or(|room| self.line.len() < room)
                {
                    self.line_changes(now);
                    // Waits are recorded when service starts; mark whether
                    // this customer counts by its arrival index.
                    self.line
                        .push_back(if counting { now } else { SimTime::MAX });
                    if counting {
                        self.delayed.push(1.0);
                    }
                } else if counting {
                    // Lost: the M/M/c/c blocking event.
                    self.delayed.push(1.0);
                }
            }
            QueueEvent::ServiceCompleted => {
                self.busy -= 1;
                if let Some(arrived) = self.line.front().copied() {
                    self.line_changes(now);
                    self.line.pop_front();
                    if arrived != SimTime::MAX {
                        self.wait.push((now - arrived).as_secs_f64());
                    }
                    self.start_service(sched);
                }
            }
        }
    }

    fn check_invariants(&self, _now: SimTime) -> Result<(), String> {
        if self.busy > self.p.servers {
            return Err(format!("{} busy servers of {}", self.busy, self.p.servers));
        }
        if !self.line.is_empty() && self.busy < self.p.servers {
            return Err("customers wait while a server is idle".into());
        }
        Ok(())
    }
}

/// Runs one experiment to completion and returns the final model and the
/// end time.
pub fn run(p: MmcParams) -> (Mmc, SimTime) {
    let limits = Limits {
        max_events: 10 * (p.customers + p.warmup) + 100,
        check_every_event: false,
        ..Limits::default()
    };
    let mut sim = Simulation::new(Mmc::new(p), limits);
    sim.scheduler()
        .schedule_in(SimDuration::ZERO, QueueEvent::CustomerArrived);
    sim.run_until_idle().expect("bounded run");
    let end = sim.now();
    (sim.into_model(), end)
}
