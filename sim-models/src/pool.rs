//! A pod's connection pool: a bounded set of connections with a FIFO queue
//! of waiters. No polling: a waiter is served exactly when a connection is
//! released or a slot frees up.
//!
//! The pool only counts; the world decides what a served waiter does. Every
//! connection is in exactly one state: dialling, in use, idle or leaked,
//! and their sum never exceeds `max`.

use std::collections::VecDeque;

use sim_core::time::{SimDuration, SimTime};
use sim_core::waitline::{WaitLine, Waiting};

use crate::config::{Problems, millis, secs};
use crate::request::AttRef;
use serde::{Deserialize, Serialize};
use sim_core::dist::DistSpec;

/// What [`Pool::acquire`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// An idle connection, now in use.
    Reused,
    /// No idle connection but room for a new one: dial it (counted as
    /// dialling until [`Pool::dialled`]).
    Dial,
    /// The pool is full: wait in line.
    Wait,
    /// The pool is full and so is its line (`max_pending`): fail.
    LineFull,
    /// The idle connection reused was closed by the far end while idle,
    /// unnoticed (`pool.detects_close: false`): the attempt sent on it
    /// fails at once, and its place counts as a failed dial (counted as
    /// dialling until [`Pool::dialled`]).
    Stale,
}

/// An attempt waiting for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiter {
    /// The waiting attempt; stale once it is no longer waiting.
    pub att: AttRef,
    /// When it started waiting.
    pub since: SimTime,
}

/// Connection counts and the waiter line of one pod.
#[derive(Clone, Debug)]
pub struct Pool {
    max: u32,
    idle_timeout: Option<SimDuration>,
    /// An idle connection older than this was closed by the far end
    /// without the pool noticing: reusing it fails ([`Acquire::Stale`]).
    stale_after: Option<SimDuration>,
    max_idle: Option<u32>,
    in_use: u32,
    dialling: u32,
    /// Of the dials, those the far end refused whose refusal is still on
    /// its way: they hold a place in this pool but none at the far end.
    refused: u32,
    leaked: u32,
    /// Idle connections by the time they became idle (oldest first); the
    /// most recently used is reused first, as Go and HttpClient do.
    idle: VecDeque<SimTime>,
    /// When the oldest idle connection passes the idle timeout
    /// ([`SimTime::MAX`] with none idle or no timeout): kept here so that
    /// every acquire checks a field of the pool rather than the front of
    /// the idle line, a line of memory nothing else touches (sampled on
    /// the steady world, that check was 2.3 % of the CPU for 0.55 % of the
    /// instructions).
    idle_expires: SimTime,
    /// Attempts waiting for a connection (stale entries are skipped).
    waiters: WaitLine<Waiter>,
    /// Most attempts in line at once (`None`: no bound).
    max_pending: Option<u32>,
    /// Idle connections closed by the idle timeout, total.
    pub closed_idle: u64,
    /// Multiplexed: streams each connection carries (`None`: one call per
    /// connection). Then `in_use` counts streams, `connections` the open
    /// connections, and there are no idle or leaked ones.
    streams: Option<u32>,
    connections: u32,
}

impl Pool {
    /// An empty pool of at most `max` connections.
    pub fn new(max: u32, idle_timeout: Option<SimDuration>) -> Self {
        Pool {
            max,
            idle_timeout,
            stale_after: None,
            max_idle: None,
            in_use: 0,
            dialling: 0,
            refused: 0,
            leaked: 0,
            idle: VecDeque::new(),
            idle_expires: SimTime::MAX,
            waiters: WaitLine::new(),
            max_pending: None,
            closed_idle: 0,
            streams: None,
            connections: 0,
        }
    }

    /// Connections carry up to `k` calls at once (HTTP/2 streams).
    pub fn with_streams(mut self, k: Option<u32>) -> Self {
        self.streams = k;
        self
    }

    /// Whether calls share connections as streams.
    #[inline]
    pub fn multiplexed(&self) -> bool {
        self.streams.is_some()
    }

    /// Streams free on open connections (0 for a one-call pool).
    #[inline]
    pub fn free_streams(&self) -> u32 {
        match self.streams {
            Some(_) => {
                let free = self
                    .stream_capacity()
                    .saturating_sub(u64::from(self.in_use));
                u32::try_from(free).unwrap_or(u32::MAX)
            }
            None => 0,
        }
    }

    /// Streams the open connections can carry (10^6 connections of 10^6
    /// streams do not fit a `u32`).
    fn stream_capacity(&self) -> u64 {
        u64::from(self.connections) * u64::from(self.streams.unwrap_or(1))
    }

    /// The far end (the server, or a proxy or balancer between) closes a
    /// connection idle longer than `peer`. A pool that `detects` it closes
    /// the connection then too, as if its own idle timeout were the
    /// shorter; one that does not keeps it and finds out when it reuses
    /// it ([`Acquire::Stale`]).
    pub fn with_peer_idle_timeout(mut self, peer: Option<SimDuration>, detects: bool) -> Self {
        match (peer, detects) {
            (None, _) => {}
            (Some(peer), true) => {
                self.idle_timeout = Some(self.idle_timeout.map_or(peer, |own| own.min(peer)));
            }
            (Some(peer), false) => self.stale_after = Some(peer),
        }
        self
    }

    /// At most `k` attempts wait in line at once; the next is turned away
    /// ([`Acquire::LineFull`]).
    pub fn with_max_pending(mut self, k: Option<u32>) -> Self {
        self.max_pending = k;
        self
    }

    /// At most `n` idle connections are kept; one returned past that is
    /// closed (Go's `MaxIdleConnsPerHost`).
    pub fn with_max_idle(mut self, n: Option<u32>) -> Self {
        self.max_idle = n;
        self
    }

    /// Connections that exist or are being dialled.
    #[inline]
    pub fn total(&self) -> u32 {
        match self.streams {
            Some(_) => self.connections + self.dialling,
            None => self.in_use + self.dialling + self.leaked + self.idle.len() as u32,
        }
    }
    /// The pool's bound.
    #[inline]
    pub fn max(&self) -> u32 {
        self.max
    }
    /// Connections carrying a request.
    #[inline]
    pub fn in_use(&self) -> u32 {
        self.in_use
    }
    /// Connections being set up.
    #[inline]
    pub fn dialling(&self) -> u32 {
        self.dialling
    }
    /// Connections lost to leaks.
    #[inline]
    pub fn leaked(&self) -> u32 {
        self.leaked
    }
    /// Idle connections.
    #[inline]
    pub fn idle(&self) -> u32 {
        self.idle.len() as u32
    }
    /// Attempts waiting for a connection.
    #[inline]
    pub fn waiters(&self) -> u32 {
        self.waiters.len() as u32
    }

    /// Closes idle connections older than the idle timeout.
    #[inline]
    pub fn expire_idle(&mut self, now: SimTime) {
        if now > self.idle_expires {
            self.close_expired(now);
        }
    }

    /// The idle connections idle longer than the timeout at `now` are
    /// closed, oldest first.
    #[cold]
    #[inline(never)]
    fn close_expired(&mut self, now: SimTime) {
        while now > self.idle_expires {
            self.idle.pop_front();
            self.closed_idle += 1;
            self.idle_expires = self.expiry_of_oldest();
        }
    }

    /// When the oldest idle connection expires (see `idle_expires`).
    #[inline]
    fn expiry_of_oldest(&self) -> SimTime {
        match (self.idle.front(), self.idle_timeout) {
            // Closed once idle longer than the limit, `now - t > limit`,
            // that is `now > t + limit` (never, past the end of time).
            (Some(&t), Some(limit)) => t.saturating_add(limit),
            _ => SimTime::MAX,
        }
    }

    /// Asks for a connection for an attempt that is not already waiting.
    #[inline]
    pub fn acquire(&mut self, now: SimTime) -> Acquire {
        self.expire_idle(now);
        // A free stream on an open connection, or an idle connection.
        if self.free_streams() > 0 {
            self.in_use += 1;
            Acquire::Reused
        } else if let Some(since) = self.take_idle() {
            // Closed by the far end once idle longer than its timeout,
            // `now - since > limit`, as the pool's own.
            if self
                .stale_after
                .is_some_and(|limit| now > since.saturating_add(limit))
            {
                self.dialling += 1;
                Acquire::Stale
            } else {
                self.in_use += 1;
                Acquire::Reused
            }
        } else if self.total() < self.max {
            self.dialling += 1;
            Acquire::Dial
        } else if self
            .max_pending
            .is_some_and(|k| self.waiters.len() >= k as usize)
        {
            Acquire::LineFull
        } else {
            Acquire::Wait
        }
    }

    /// Takes the idle connection used last, if any: when it became idle.
    #[inline]
    fn take_idle(&mut self) -> Option<SimTime> {
        let since = self.idle.pop_back()?;
        if self.idle.is_empty() {
            self.idle_expires = SimTime::MAX;
        }
        Some(since)
    }

    /// Puts an attempt in line (`is_live` tells the waiters still waiting,
    /// for the sweep of stale entries).
    #[inline]
    pub fn wait(&mut self, w: Waiter, is_live: impl Waiting<Waiter>) {
        self.waiters.push(w, is_live);
    }

    /// A waiter left the line (timed out, deadline, restart); its entry is
    /// dropped lazily.
    #[inline]
    pub fn waiter_left(&mut self) {
        self.waiters.left();
    }

    /// The next waiter still waiting, per `is_live`; stale entries in front
    /// of it are dropped.
    #[inline]
    pub fn next_waiter(&mut self, is_live: impl Waiting<Waiter>) -> Option<Waiter> {
        self.waiters.pop(is_live)
    }

    /// How long the oldest live waiter has waited.
    pub fn oldest_wait(
        &mut self,
        now: SimTime,
        is_live: impl Waiting<Waiter>,
    ) -> Option<SimDuration> {
        self.waiters
            .front(is_live)
            .map(|w| now.saturating_since(w.since))
    }

    /// A dial finished (either way): it no longer counts as dialling. On
    /// success the caller decides who gets the connection via
    /// [`Pool::hand_over`] or [`Pool::put_idle`].
    #[inline]
    pub fn dialled(&mut self) {
        self.dialling -= 1;
    }

    /// A dial succeeded: the connection is open (a multiplexed one then
    /// carries streams until the pod restarts). The caller hands it over
    /// or puts it idle.
    #[inline]
    pub fn established(&mut self) {
        self.dialling -= 1;
        if self.multiplexed() {
            self.connections += 1;
        }
    }

    /// The far end refused the dial just started; the pool learns it when
    /// the refusal arrives ([`Pool::refusal_arrived`]).
    pub fn refuse(&mut self) {
        self.refused += 1;
    }

    /// A refused dial's answer arrived: the dial is over.
    pub fn refusal_arrived(&mut self) {
        self.refused -= 1;
        self.dialling -= 1;
    }

    /// Connections the far end holds for this pool at `now`: open or
    /// being set up, refused dials left out, and idle ones it has closed
    /// without the pool noticing (the idle line is oldest first).
    #[inline]
    pub fn open(&self, now: SimTime) -> u32 {
        let closed = self.stale_after.map_or(0, |limit| {
            self.idle
                .partition_point(|&since| now > since.saturating_add(limit))
        });
        self.total() - self.refused - closed as u32
    }

    /// A connection (new, or released by its previous user) goes straight
    /// to a new user.
    #[inline]
    pub fn hand_over(&mut self) {
        self.in_use += 1;
    }

    /// A connection becomes idle.
    #[inline]
    pub fn put_idle(&mut self, now: SimTime) {
        if self.multiplexed() {
            return; // a free stream on an open connection
        }
        if self.max_idle.is_some_and(|m| self.idle.len() as u32 >= m) {
            self.closed_idle += 1;
        } else {
            self.idle.push_back(now);
            if self.idle.len() == 1 {
                self.idle_expires = self.expiry_of_oldest();
            }
        }
    }

    /// The attempt using a connection is done with it; `leak` loses it.
    /// Returns true if the connection is available again (not leaked).
    #[inline]
    pub fn release(&mut self, leak: bool) -> bool {
        self.in_use -= 1;
        if leak {
            self.leaked += 1;
            false
        } else {
            true
        }
    }

    /// The attempt using a connection gave up on it mid-request: the
    /// connection is closed, its slot free for a new dial.
    #[inline]
    pub fn close_in_use(&mut self) {
        self.in_use -= 1;
    }

    /// Starts a dial for a waiter when a slot is free; false if full.
    #[inline]
    pub fn try_dial(&mut self) -> bool {
        if self.total() < self.max {
            self.dialling += 1;
            true
        } else {
            false
        }
    }

    /// True when a waiter is live and a connection could be dialled.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.total() < self.max
    }

    /// Empties the pool (pod restart): every connection and waiter is gone.
    pub fn reset(&mut self) {
        let (closed_idle, stale_after) = (self.closed_idle, self.stale_after);
        *self = Pool::new(self.max, self.idle_timeout)
            .with_max_idle(self.max_idle)
            .with_streams(self.streams)
            .with_max_pending(self.max_pending);
        self.closed_idle = closed_idle;
        self.stale_after = stale_after;
    }

    /// Breaks the bound on purpose, for the test that bounds are checked
    /// at every bucket close.
    #[cfg(test)]
    pub(crate) fn overfill_for_test(&mut self) {
        self.in_use = self.max + 1;
    }

    /// Whether the line's count of waiters is those `is_live` finds in it
    /// (see [`WaitLine::check`]).
    pub fn check_waiters(&self, is_live: impl Waiting<Waiter>) -> Result<(), String> {
        self.waiters.check(is_live)
    }

    /// Checks the pool's bound; `Err` describes the violation.
    pub fn check(&self) -> Result<(), String> {
        if let Some(k) = self.max_pending
            && self.waiters.len() > k as usize
        {
            return Err(format!(
                "pool's line holds {} attempts over its max_pending {k}",
                self.waiters.len()
            ));
        }
        if let Some(k) = self.streams
            && u64::from(self.in_use) > self.stream_capacity()
        {
            return Err(format!(
                "pool carries {} streams on {} connections of {k}",
                self.in_use, self.connections
            ));
        }
        if self.total() > self.max {
            return Err(format!(
                "pool holds {} connections (in use {}, dialling {}, idle {}, leaked {}) over its max {}",
                self.total(),
                self.in_use,
                self.dialling,
                self.idle.len(),
                self.leaked,
                self.max
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------
// Configuration: what users write for this part, its defaults, and its
// check (run by `WorldConfig::validate` under the section's path).
// ---------------------------------------------------------------------

/// A pod's connection pool to the upstream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PoolConfig {
    /// Most connections open at once, idle, in use and being dialled
    /// (default 50).
    pub max_connections: u32,
    /// How long an attempt may wait for a connection before failing with
    /// `pool_timeout`; omitted means it waits until its own timeout or
    /// deadline, like Go's `MaxConnsPerHost` (default: none).
    pub acquire_timeout: Option<SimDuration>,
    /// Most attempts waiting for a connection at once: the one that finds
    /// this many in line fails at once with `pool_timeout`, counted
    /// `pool_overflow` (Envoy's `max_pending_requests`, 1,024 unless set,
    /// and Istio's `http1MaxPendingRequests`: a local 503 and
    /// `upstream_rq_pending_overflow`). `0` lets no attempt wait, as
    /// `acquire_timeout: 0s` does (default: no limit).
    pub max_pending: Option<u32>,
    /// Time to set up a new connection, TCP and TLS (default `constant: 5ms`).
    pub connect_time: DistSpec,
    /// An idle connection older than this is closed instead of reused
    /// (default `90s`, Go's `IdleConnTimeout`).
    pub idle_timeout: Option<SimDuration>,
    /// Most idle connections kept; a connection returned when this many
    /// are idle is closed (Go's `MaxIdleConnsPerHost`, 2 unless set;
    /// default: no limit).
    pub max_idle: Option<u32>,
    /// Fraction of responses whose connection is never released (a leak, as
    /// when a response body is not closed); leaked connections count
    /// against `max_connections` until the pod restarts (default 0).
    pub leak_fraction: f64,
    /// The far end (the server, or a proxy or load balancer between)
    /// closes a connection idle this long: nginx's `keepalive_timeout`
    /// (75 s), an AWS load balancer's idle timeout (60 s), Node's
    /// `keepAliveTimeout` (5 s) (default: none, it keeps them open).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer_idle_timeout: Option<SimDuration>,
    /// Whether the client notices the far end closing an idle connection
    /// and drops it (default true: Go's transport reads the close at once,
    /// urllib3 and OkHttp check before reuse, HttpClient 4.4+ after 2 s
    /// idle). `false` (HttpClient with its stale check off, the
    /// "NoHttpResponseException" of a pool that outlives the server's
    /// keep-alive): the next attempt on it fails at once as
    /// `connect_failure`, the server having done nothing, so a retry is
    /// safe.
    #[serde(skip_serializing_if = "is_true")]
    pub detects_close: bool,
    /// Multiplexed connections (HTTP/2, gRPC): each carries up to this many
    /// calls at once as streams, a call takes a free stream on an open
    /// connection before a new one is dialled, and a call that times out
    /// resets its stream, not the connection. Connections of a multiplexed
    /// pool stay open (default: none, one call per connection).
    pub streams_per_connection: Option<u32>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_connections: 50,
            streams_per_connection: None,
            acquire_timeout: None,
            max_pending: None,
            connect_time: DistSpec::Constant(millis(5)),
            idle_timeout: Some(secs(90)),
            max_idle: None,
            leak_fraction: 0.0,
            peer_idle_timeout: None,
            detects_close: true,
        }
    }
}

/// For serde: the default of `detects_close`, left out of the resolved
/// configuration.
fn is_true(b: &bool) -> bool {
    *b
}

impl PoolConfig {
    /// Checks the pool, `at` its path.
    pub(crate) fn check(&self, at: &str, p: &mut Problems) {
        if self.max_connections == 0 {
            p.add(&format!("{at}.max_connections"), "must be at least 1");
        }
        p.dist(&format!("{at}.connect_time"), &self.connect_time);
        p.probability(&format!("{at}.leak_fraction"), self.leak_fraction);
        if let Some(k) = self.streams_per_connection {
            if k == 0 || k > 1_000_000 {
                p.add(
                    &format!("{at}.streams_per_connection"),
                    format!("must be in 1..=10^6, found {k}"),
                );
            }
            if self.leak_fraction > 0.0 {
                p.add(
                    &format!("{at}.leak_fraction"),
                    "a multiplexed pool's streams do not leak: set it to 0 with streams_per_connection",
                );
            }
            if self.peer_idle_timeout.is_some() {
                p.add(
                    &format!("{at}.peer_idle_timeout"),
                    "a multiplexed pool's connections stay open (HTTP/2 pings keep them alive): remove it with streams_per_connection",
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_millis(ms)
    }

    #[test]
    fn fills_then_queues_then_reuses() {
        let mut p = Pool::new(2, Some(SimDuration::from_secs(1)));
        assert_eq!(p.acquire(t(0)), Acquire::Dial);
        assert_eq!(p.acquire(t(0)), Acquire::Dial);
        assert_eq!(p.acquire(t(0)), Acquire::Wait);
        p.dialled();
        p.hand_over();
        assert!(p.release(false));
        p.put_idle(t(10));
        assert_eq!(p.acquire(t(20)), Acquire::Reused);
        assert_eq!(p.in_use(), 1);
        assert!(p.check().is_ok());
    }

    /// A pool of `n` connections dialled at 0 and put idle at 0, 10, 20
    /// ms..., closed by the far end after 60 s idle, noticed or not.
    fn idle_pool(n: u32, detects: bool) -> Pool {
        let p = Pool::new(n, Some(SimDuration::from_secs(90)))
            .with_peer_idle_timeout(Some(SimDuration::from_secs(60)), detects);
        with_idle(p, n)
    }

    /// `p` with `n` connections dialled at 0 and put idle at 0, 10, 20
    /// ms...
    fn with_idle(mut p: Pool, n: u32) -> Pool {
        for _ in 0..n {
            assert_eq!(p.acquire(t(0)), Acquire::Dial);
            p.established();
            p.hand_over();
        }
        for i in 0..n {
            assert!(p.release(false));
            p.put_idle(t(10 * u64::from(i)));
        }
        p
    }

    #[test]
    fn a_connection_the_far_end_closed_is_dropped_when_noticed_and_fails_when_not() {
        // Noticed: closed as at the shorter idle timeout, 60 s after it
        // went idle (idle longer than it, as the pool's own rule).
        let mut p = idle_pool(2, true);
        assert_eq!(p.acquire(t(60_010)), Acquire::Reused);
        assert_eq!(p.idle(), 0, "the older one closed first");
        assert_eq!(p.closed_idle, 1);
        // Not noticed: kept, and the one used last is reused first (it
        // went idle at 10 ms): at 60.010 s it is not yet past 60 s, the
        // other is.
        let mut p = idle_pool(2, false);
        assert_eq!((p.open(t(60_000)), p.open(t(60_005))), (2, 1));
        assert_eq!(p.acquire(t(60_010)), Acquire::Reused);
        assert_eq!(p.acquire(t(60_010)), Acquire::Stale);
        assert_eq!((p.in_use(), p.dialling(), p.idle()), (1, 1, 0));
        p.dialled();
        assert_eq!(p.total(), 1, "the stale one is gone");
        // Past the pool's own 90 s, its own timeout closes them first.
        let mut p = idle_pool(2, false);
        assert_eq!(p.acquire(t(90_011)), Acquire::Dial);
        assert_eq!(p.closed_idle, 2);
        // A restart keeps the rule.
        let mut p = idle_pool(1, false);
        p.reset();
        let mut p = with_idle(p, 1);
        assert_eq!(p.acquire(t(61_000)), Acquire::Stale);
        assert!(p.check().is_ok());
    }

    #[test]
    fn idle_connections_expire_and_leaks_count_against_max() {
        let mut p = Pool::new(1, Some(SimDuration::from_secs(1)));
        assert_eq!(p.acquire(t(0)), Acquire::Dial);
        p.dialled();
        p.hand_over();
        assert!(p.release(false));
        p.put_idle(t(0));
        // Idle for 2 s: closed, so the next acquire dials.
        assert_eq!(p.acquire(t(2_000)), Acquire::Dial);
        assert_eq!(p.closed_idle, 1);
        p.dialled();
        p.hand_over();
        assert!(!p.release(true));
        assert_eq!(p.leaked(), 1);
        assert_eq!(
            p.acquire(t(3_000)),
            Acquire::Wait,
            "the leaked connection still counts"
        );
        p.reset();
        assert_eq!(p.acquire(t(4_000)), Acquire::Dial);
    }

    #[test]
    fn the_oldest_idle_connection_expires_just_past_the_limit_whatever_was_reused_since() {
        let mut p = Pool::new(3, Some(SimDuration::from_secs(1)));
        for _ in 0..3 {
            assert_eq!(p.acquire(t(0)), Acquire::Dial);
            p.dialled();
            p.hand_over();
        }
        for at in [0, 100, 200] {
            assert!(p.release(false));
            p.put_idle(t(at));
        }
        // The newest (idle since 200 ms) is reused and returned later;
        // the oldest (since 0) is still idle, not yet past 1 s at 1 s.
        assert_eq!(p.acquire(t(300)), Acquire::Reused);
        assert!(p.release(false));
        p.put_idle(t(900));
        assert_eq!(p.acquire(t(1_000)), Acquire::Reused);
        assert_eq!((p.idle(), p.closed_idle), (2, 0));
        assert!(p.release(false));
        p.put_idle(t(1_000));
        // Just past 1 s the one idle since 0 closes (and the one since
        // 1 s is reused); just past 1.1 s the one since 100 ms.
        assert_eq!(p.acquire(t(1_001)), Acquire::Reused);
        assert_eq!((p.idle(), p.closed_idle), (1, 1));
        assert!(p.release(false));
        p.put_idle(t(1_001));
        p.expire_idle(t(1_100));
        assert_eq!((p.idle(), p.closed_idle), (2, 1));
        p.expire_idle(t(1_101));
        assert_eq!((p.idle(), p.closed_idle), (1, 2));
        p.expire_idle(t(2_002));
        assert_eq!((p.idle(), p.closed_idle), (0, 3));
        // With none idle nothing expires, and a new idle one starts anew.
        assert_eq!(p.acquire(t(5_000)), Acquire::Dial);
        p.dialled();
        p.hand_over();
        assert!(p.release(false));
        p.put_idle(t(5_000));
        p.expire_idle(t(6_000));
        assert_eq!(p.idle(), 1);
        p.expire_idle(t(6_001));
        assert_eq!((p.idle(), p.closed_idle), (0, 4));
    }

    #[test]
    fn connections_past_the_idle_limit_close_on_return() {
        let mut p = Pool::new(5, None).with_max_idle(Some(2));
        for _ in 0..3 {
            assert_eq!(p.acquire(t(0)), Acquire::Dial);
            p.dialled();
            p.hand_over();
        }
        for _ in 0..3 {
            assert!(p.release(false));
            p.put_idle(t(10));
        }
        assert_eq!((p.idle(), p.total(), p.closed_idle), (2, 2, 1));
        // The limit survives a restart.
        p.reset();
        for _ in 0..3 {
            assert_eq!(p.acquire(t(20)), Acquire::Dial);
            p.dialled();
            p.hand_over();
        }
        for _ in 0..3 {
            assert!(p.release(false));
            p.put_idle(t(30));
        }
        assert_eq!(p.idle(), 2);
        assert!(p.check().is_ok());
    }

    #[test]
    fn a_multiplexed_pool_dials_only_when_every_stream_is_taken() {
        let mut p = Pool::new(2, None).with_streams(Some(3));
        assert_eq!(p.acquire(t(0)), Acquire::Dial);
        p.established();
        p.hand_over();
        // Two more calls ride the open connection.
        assert_eq!(p.acquire(t(1)), Acquire::Reused);
        assert_eq!(p.acquire(t(1)), Acquire::Reused);
        assert_eq!((p.in_use(), p.total()), (3, 1));
        // The fourth needs a second connection, the seventh waits.
        assert_eq!(p.acquire(t(2)), Acquire::Dial);
        p.established();
        p.hand_over();
        assert_eq!(p.free_streams(), 2);
        assert_eq!(p.acquire(t(3)), Acquire::Reused);
        assert_eq!(p.acquire(t(3)), Acquire::Reused);
        assert_eq!(p.acquire(t(3)), Acquire::Wait);
        p.check().unwrap();
        // A call done (or a stream reset) frees a stream, not a connection.
        assert!(p.release(false));
        p.put_idle(t(4));
        assert_eq!((p.free_streams(), p.total(), p.idle()), (1, 2, 0));
        assert_eq!(p.acquire(t(5)), Acquire::Reused);
        p.reset();
        assert!(p.multiplexed() && p.total() == 0);
    }
}
