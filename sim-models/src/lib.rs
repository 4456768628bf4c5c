//! # sim-models: the retry-storm world
//!
//! Users send requests through a gateway to pods behind a load balancer;
//! each pod calls an overload-sensitive upstream through its own
//! connection pool, with timeouts and retries; health checks restart
//! saturated pods; an incident timeline changes the world at given times.
//! Built on `sim-core`: one typed event enum ([`world::Event`]) whose
//! variants are the parts' own event types ([`load::LoadEvent`],
//! [`pods::ServiceEvent`], [`client::ClientEvent`],
//! [`upstream::DependencyEvent`]), each declared next to its code, one model
//! ([`world::World`]), one entry point ([`world::run`]).
//!
//! ## The ordering rule
//!
//! Every step of a request that happens "later", however soon, is an event
//! through the scheduler: each network leg (gateway → pod, pod → upstream,
//! upstream → pod, pod → gateway) is scheduled whether its delay is drawn
//! from a distribution, `constant: 0s`, or not configured at all. So the
//! engine's guarantee holds for the whole world: events run in ascending
//! time, and events due at the same time run in the order they were
//! scheduled (FIFO), whichever part scheduled them. A handler never calls
//! another part's handler for something that crossed a leg; the same
//! physics always runs in the same order. (A leg with no delay costs O(1):
//! `Scheduler::schedule_now` keeps such events in a FIFO lane beside the
//! heap, in the same order.)
//!
//! Timers of a fixed delay (attempt timeouts, the gateway deadline) wait
//! in a `DeadlineLine` rather than one heap entry each: one wake-up event
//! is scheduled at the earliest, and when it runs it delivers every
//! deadline due at that instant, in the order they were armed. The
//! wake-up itself is an ordinary event under the rule above.
//!
//! ## Parts, the context, and the world's routing
//!
//! The world is made of parts, each owning its state, its event type and
//! its configuration: the load ([`load::Load`]), each service
//! ([`pods::Service`]: pods, workers, cores, health, balancer, and what a
//! request does there), each edge's client ([`client::Client`]: attempts,
//! retries, hedges, the policy pipeline), each dependency
//! ([`dependency::Dependency`]). A part acts on a small context (the clock
//! and the scheduler, the records of work in flight, the pods'
//! connections, the network's legs, the recorder, the world's fixed
//! facts), never on the world or on another part. What another part must
//! do, it asks: the ask is routed by the world once the asking part's
//! method returns, first asked first, each ask's own asks before the next
//! (as nested calls would run). An ask is not an event: it is what happens
//! at once in one place (a call's end told to its request on the same
//! pod, a request completed); anything that crosses a leg is an event
//! under the ordering rule above. The world ([`world::World`]) routes events
//! to parts by the index they carry, and asks to the part that acts on
//! them; the flows that span parts (dispatching, completing a request,
//! taking a pod down) are its short sequences of calls into parts.
//!
//! Code map (one file per part of the world):
//!
//! | file | part |
//! |---|---|
//! | `config.rs` | the world's configuration: the parts' sections (each next to its part's code) composed, defaults, validation with field paths |
//! | `context.rs` | what a part is handed: `Ctx`, the pods' connections (`Links`), the network's legs, the asks |
//! | `load.rs` | open- and closed-loop arrivals, the user's side (deadline, patience, door, gateway retries, outcome) |
//! | `lb.rs` | load balancer: round robin, random, least outstanding |
//! | `outlier.rs` | outlier detection: Envoy's passive ejection of failing pods |
//! | `pods.rs` | a service's pods: workers, cores, health probes, restarts, placement |
//! | `calls.rs` | a request at its service: its steps of calls, its end, its answer; attempts arriving from another service |
//! | `pool.rs` | connection pool: bounded, FIFO waiters, dial, idle timeout, leaks |
//! | `client.rs` | an edge's calls: attempts, timeouts, retries, hedges, and the policies around them |
//! | `policy/` | the resilience-policy catalogue: backoff and jitter, budgets, breakers, throttles, presets, static analysis |
//! | `upstream.rs` | the overload-sensitive upstream's state machine, and its events |
//! | `dependency.rs` | a dependency: requests reaching it, answers leaving it, other tenants |
//! | `timeline.rs`, `incidents.rs` | incident timeline: data, then effects (routed to the parts) |
//! | `recorder.rs` | per-bucket rows (streamed), attempt records, world events, run totals |
//! | `kpi.rs` | key figures of a run: rates, amplification, wasted work, recovery, metastability |
//! | `request.rs`, `outcome.rs` | requests, calls, attempts, how they end |
//! | `world.rs` | the event enum (the world's own events and one variant per part), the parts, routing, invariants, `run` |

/// The subject of an event, or an early `return` when the subject has
/// legitimately moved on: the request finished, the attempt ended or was
/// cut, the slot was reused. Such an event is stale and does nothing, by
/// design; this marker says so where it happens (a state that would be a
/// bug is a `debug_assert!` or a recorded violation instead).
macro_rules! stale {
    ($subject:expr) => {
        match $subject {
            Some(v) => v,
            None => return,
        }
    };
}

pub mod autoscaler;
pub mod calls;
pub mod client;
pub mod config;
pub(crate) mod context;
pub mod dependency;
pub mod graph;
pub mod incidents;
pub mod kpi;
pub mod lb;
pub mod load;
pub mod outcome;
pub mod outlier;
pub mod pods;
pub mod policy;
pub mod pool;
pub mod recorder;
pub mod request;
pub mod scenarios;
pub mod timeline;
pub mod upstream;
pub mod world;
