//! Outlier detection: passive health checking in front of a service's
//! pods, as Envoy's (and Istio's `outlierDetection`) does it.
//!
//! Every answer a pod gives is judged: a 5xx, a reset or a timeout of the
//! caller waiting for it is a failure, anything else a success. A pod
//! failing `consecutive_5xx` times in a row is ejected at once; every
//! `interval`, pods whose ejection has lasted `base_ejection_time` times
//! the number of their ejections (at most `max_ejection_time`) come back,
//! and pods whose share of successes over the last interval lies more
//! than `success_rate_stdev_factor` standard deviations below the mean of
//! the pods with `success_rate_request_volume` answers (at least
//! `success_rate_minimum_hosts` of them) are ejected, as are, when
//! `enforcing_failure_percentage` turns that detector on (Envoy's default
//! leaves it off; gRPC's outlier detection has it beside the success
//! rate), pods failing at least `failure_percentage_threshold` per cent
//! of `failure_percentage_request_volume` answers or more, however the
//! others fare: the one detector that still ejects when every pod fails
//! alike. No ejection takes
//! the ejected pods past `max_ejection_percent` of them all, unless
//! `always_eject_one_host` and none is ejected: with Envoy's default of
//! 10 %, a service of fewer than ten pods never loses one.
//!
//! The rules are Envoy's `DetectorImpl` (`outlier_detection_impl.cc`),
//! read in its source: the consecutive count fires when it reaches the
//! threshold, and is reset then (ejected or not) and when a pod comes
//! back, not when an already ejected pod reaches it again; each ejection
//! raises the pod's multiplier, and each interval a pod spends in rotation
//! a whole interval after it came back lowers it by one. The cap counts
//! every pod the service holds, down ones included (Envoy counts the
//! hosts its discovery lists, which drops a pod while it is replaced),
//! and a pod keeps its record through a restart. A pod the success-rate
//! sweep ejects is not ejected a second time by the failure-percentage
//! one in the same sweep (Envoy asserts as much in its debug builds).
//! Not modelled: the gateway-failure and local-origin detectors (off by
//! default; every failure here is the pod's answer or a caller's
//! timeout), and the ejection jitter (0 by default). The balancer's
//! panic mode is kept (`lb.rs`): with fewer than half the serving pods in
//! rotation, Envoy balances over them all, ejected or not.
//!
//! `rules: grpc` follows gRPC's `outlier_detection` balancer instead
//! (gRFC A50, read with grpc-go's code): where it differs is told at
//! [`OutlierRules::Grpc`]; the one that matters most is its cap, which
//! lets one pod of eight out where Envoy's lets none. A proxyless gRPC
//! client runs a detector in every caller; here one detector per service
//! sees every caller's answers, as a front proxy's does (with one caller
//! the two are the same).

use rand::RngExt;
use serde::{Deserialize, Serialize};
use sim_core::rng::SimRng;
use sim_core::time::{SimDuration, SimTime};

use crate::config::{Problems, secs};

/// Whose rules a detector follows: they differ where the two
/// implementations do, read in their sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutlierRules {
    /// Envoy's `DetectorImpl` (and Istio's `outlierDetection`): a
    /// consecutive-failure detector, the cap rounded down, ejections
    /// returned before the sweep judges, the balancer's panic mode.
    #[default]
    Envoy,
    /// gRPC's `outlier_detection` balancer (gRFC A50, grpc-go's
    /// `intervalTimerAlgorithm`), as a proxyless client runs it: no
    /// consecutive-failure detector and no panic mode; each detector on
    /// only when configured (its enforcing share given); the cap checked
    /// before each ejection (`ejected % >= max_ejection_percent` stops),
    /// so it lets out one pod of any number when the per cent is above 0;
    /// a pod fails the failure percentage only above the threshold; the
    /// sweep judges before it returns pods and counts ejected pods with
    /// answers in the success-rate statistics; a pod's multiplier rises
    /// at each ejection without Envoy's bound, so it takes longer to fall
    /// back (one a sweep in rotation, as Envoy's).
    Grpc,
}

/// Outlier detection as configured (`outlier_detection:` on a service;
/// `{}` is Envoy's defaults, `{ rules: grpc }` gRPC's: no detector until
/// one is configured).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "OutlierInput", into = "OutlierInput")]
pub struct OutlierSpec {
    /// Envoy's rules (default) or gRPC's.
    pub rules: OutlierRules,
    /// Failures in a row that eject a pod (default 5; 0: never; gRPC has
    /// no such detector).
    pub consecutive_5xx: u32,
    /// Time between sweeps: returns, success-rate and failure-percentage
    /// ejections (default `10s`).
    pub interval: SimDuration,
    /// A pod's ejection lasts this times its ejections so far (default
    /// `30s`).
    pub base_ejection_time: SimDuration,
    /// The longest ejection (default `300s`, or `base_ejection_time` if
    /// longer).
    pub max_ejection_time: Option<SimDuration>,
    /// Most pods ejected at once, in per cent of them all (default 10).
    pub max_ejection_percent: u32,
    /// Ejects one pod even past `max_ejection_percent` when none is
    /// ejected (default false).
    pub always_eject_one_host: bool,
    /// Per cent of consecutive-failure ejections carried out (default
    /// 100).
    pub enforcing_consecutive_5xx: u32,
    /// Per cent of success-rate ejections carried out (default 100, with
    /// gRPC's rules 0; 0 turns the success-rate detector off).
    pub enforcing_success_rate: u32,
    /// Pods with enough answers needed for a success-rate sweep (default
    /// 5).
    pub success_rate_minimum_hosts: u32,
    /// Answers in the last interval a pod needs to count (default 100).
    pub success_rate_request_volume: u32,
    /// Standard deviations below the mean that eject (default 1.9:
    /// Envoy's 1900 in thousandths).
    pub success_rate_stdev_factor: f64,
    /// A pod failing at least this per cent of its answers in the last
    /// interval is ejected by the failure-percentage sweep (default 85).
    pub failure_percentage_threshold: u32,
    /// Per cent of failure-percentage ejections carried out (default 0:
    /// the detector is off, as in Envoy; gRPC's is on at 100 once
    /// configured).
    pub enforcing_failure_percentage: u32,
    /// Pods with enough answers needed for a failure-percentage sweep
    /// (default 5).
    pub failure_percentage_minimum_hosts: u32,
    /// Answers in the last interval a pod needs for its failure
    /// percentage to count (default 50).
    pub failure_percentage_request_volume: u32,
    /// With fewer than this per cent of the serving pods in rotation, the
    /// balancer picks among them all, ejected ones too (Envoy's
    /// `healthy_panic_threshold`, a balancer setting; default 50; 0:
    /// never, as gRPC's balancers).
    pub healthy_panic_threshold: u32,
}

impl Default for OutlierSpec {
    fn default() -> Self {
        OutlierInput::default().into()
    }
}

/// What a file gives: the fields whose default depends on `rules` left
/// `None` until they are resolved into an [`OutlierSpec`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutlierInput {
    rules: OutlierRules,
    consecutive_5xx: Option<u32>,
    interval: SimDuration,
    base_ejection_time: SimDuration,
    max_ejection_time: Option<SimDuration>,
    max_ejection_percent: u32,
    always_eject_one_host: bool,
    enforcing_consecutive_5xx: u32,
    enforcing_success_rate: Option<u32>,
    success_rate_minimum_hosts: u32,
    success_rate_request_volume: u32,
    success_rate_stdev_factor: f64,
    failure_percentage_threshold: u32,
    enforcing_failure_percentage: Option<u32>,
    failure_percentage_minimum_hosts: u32,
    failure_percentage_request_volume: u32,
    healthy_panic_threshold: Option<u32>,
}

impl Default for OutlierInput {
    fn default() -> Self {
        OutlierInput {
            rules: OutlierRules::Envoy,
            consecutive_5xx: None,
            interval: secs(10),
            base_ejection_time: secs(30),
            max_ejection_time: None,
            max_ejection_percent: 10,
            always_eject_one_host: false,
            enforcing_consecutive_5xx: 100,
            enforcing_success_rate: None,
            success_rate_minimum_hosts: 5,
            success_rate_request_volume: 100,
            success_rate_stdev_factor: 1.9,
            failure_percentage_threshold: 85,
            enforcing_failure_percentage: None,
            failure_percentage_minimum_hosts: 5,
            failure_percentage_request_volume: 50,
            healthy_panic_threshold: None,
        }
    }
}

impl From<OutlierInput> for OutlierSpec {
    /// Envoy's defaults: 5 failures in a row, the success rate on, the
    /// failure percentage off, panic below 50 %. gRPC's: none of them
    /// (a detector is on when its enforcing share is given, as gRPC's is
    /// when its section is; the enforcing share it then defaults to, 100,
    /// is written out).
    fn from(i: OutlierInput) -> OutlierSpec {
        let envoy = i.rules == OutlierRules::Envoy;
        let (consecutive, success, panic) = match envoy {
            true => (5, 100, 50),
            false => (0, 0, 0),
        };
        OutlierSpec {
            rules: i.rules,
            consecutive_5xx: i.consecutive_5xx.unwrap_or(consecutive),
            interval: i.interval,
            base_ejection_time: i.base_ejection_time,
            max_ejection_time: i.max_ejection_time,
            max_ejection_percent: i.max_ejection_percent,
            always_eject_one_host: i.always_eject_one_host,
            enforcing_consecutive_5xx: i.enforcing_consecutive_5xx,
            enforcing_success_rate: i.enforcing_success_rate.unwrap_or(success),
            success_rate_minimum_hosts: i.success_rate_minimum_hosts,
            success_rate_request_volume: i.success_rate_request_volume,
            success_rate_stdev_factor: i.success_rate_stdev_factor,
            failure_percentage_threshold: i.failure_percentage_threshold,
            enforcing_failure_percentage: i.enforcing_failure_percentage.unwrap_or(0),
            failure_percentage_minimum_hosts: i.failure_percentage_minimum_hosts,
            failure_percentage_request_volume: i.failure_percentage_request_volume,
            healthy_panic_threshold: i.healthy_panic_threshold.unwrap_or(panic),
        }
    }
}

impl From<OutlierSpec> for OutlierInput {
    fn from(s: OutlierSpec) -> OutlierInput {
        OutlierInput {
            rules: s.rules,
            consecutive_5xx: Some(s.consecutive_5xx),
            interval: s.interval,
            base_ejection_time: s.base_ejection_time,
            max_ejection_time: s.max_ejection_time,
            max_ejection_percent: s.max_ejection_percent,
            always_eject_one_host: s.always_eject_one_host,
            enforcing_consecutive_5xx: s.enforcing_consecutive_5xx,
            enforcing_success_rate: Some(s.enforcing_success_rate),
            success_rate_minimum_hosts: s.success_rate_minimum_hosts,
            success_rate_request_volume: s.success_rate_request_volume,
            success_rate_stdev_factor: s.success_rate_stdev_factor,
            failure_percentage_threshold: s.failure_percentage_threshold,
            enforcing_failure_percentage: Some(s.enforcing_failure_percentage),
            failure_percentage_minimum_hosts: s.failure_percentage_minimum_hosts,
            failure_percentage_request_volume: s.failure_percentage_request_volume,
            healthy_panic_threshold: Some(s.healthy_panic_threshold),
        }
    }
}

impl OutlierSpec {
    /// The longest ejection in force: Envoy's default of 300 s, or the
    /// base time when that is longer.
    pub fn max_ejection(&self) -> SimDuration {
        self.max_ejection_time
            .unwrap_or_else(|| secs(300).max(self.base_ejection_time))
    }

    /// Most of `pods` pods ejected at once: the cap's share of them,
    /// rounded down (one at least with `always_eject_one_host`).
    pub fn most_ejected(&self, pods: u32) -> u32 {
        let share = u64::from(self.max_ejection_percent.min(100)) * u64::from(pods);
        let k = match self.rules {
            OutlierRules::Envoy => share / 100,
            OutlierRules::Grpc => share.div_ceil(100),
        };
        let k = k as u32;
        match self.always_eject_one_host {
            true => k.max(1).min(pods),
            false => k,
        }
    }

    /// One line for `explain`: what it ejects, and how many at most of
    /// `pods` pods.
    pub fn describe(&self, pods: u32) -> String {
        let most = self.most_ejected(pods);
        let cap = match most {
            0 => format!(
                "never ejects: {} % of {pods} pods is less than one (ten pods at least, or always_eject_one_host)",
                self.max_ejection_percent
            ),
            n => format!("at most {n} of {pods} pods out at once"),
        };
        let mut by = Vec::new();
        if self.consecutive_5xx > 0 {
            by.push(format!("{} failures in a row", self.consecutive_5xx));
        }
        if self.enforcing_success_rate > 0 {
            by.push("a success rate below the others'".to_string());
        }
        if self.enforcing_failure_percentage > 0 {
            let t = self.failure_percentage_threshold;
            by.push(match self.rules {
                OutlierRules::Envoy => format!("{t} % failures or more"),
                OutlierRules::Grpc => format!("more than {t} % failures"),
            });
        }
        let by = match by.is_empty() {
            true => "nothing (every detector off)".to_string(),
            false => by.join(", "),
        };
        let rules = match self.rules {
            OutlierRules::Envoy => "",
            OutlierRules::Grpc => " (gRPC's rules)",
        };
        format!(
            "outlier detection{rules}: {by}, out {} × the ejections so far (at most {}), {cap}",
            self.base_ejection_time,
            self.max_ejection()
        )
    }

    /// Checks the fields, `at` their section's path.
    pub(crate) fn check(&self, at: &str, p: &mut Problems) {
        p.positive(&format!("{at}.interval"), self.interval);
        p.positive(&format!("{at}.base_ejection_time"), self.base_ejection_time);
        if let Some(m) = self.max_ejection_time
            && m < self.base_ejection_time
        {
            p.add(
                &format!("{at}.max_ejection_time"),
                format!(
                    "must be at least base_ejection_time ({}), found {m}",
                    self.base_ejection_time
                ),
            );
        }
        for (field, v) in [
            ("max_ejection_percent", self.max_ejection_percent),
            ("enforcing_consecutive_5xx", self.enforcing_consecutive_5xx),
            ("enforcing_success_rate", self.enforcing_success_rate),
            (
                "failure_percentage_threshold",
                self.failure_percentage_threshold,
            ),
            (
                "enforcing_failure_percentage",
                self.enforcing_failure_percentage,
            ),
            ("healthy_panic_threshold", self.healthy_panic_threshold),
        ] {
            if v > 100 {
                p.add(
                    &format!("{at}.{field}"),
                    format!("must be a per cent from 0 to 100, found {v}"),
                );
            }
        }
        if self.rules == OutlierRules::Grpc {
            for (field, v, what) in [
                (
                    "consecutive_5xx",
                    self.consecutive_5xx,
                    "gRPC's outlier detection has no consecutive-failure detector",
                ),
                (
                    "healthy_panic_threshold",
                    self.healthy_panic_threshold,
                    "gRPC's balancers have no panic mode",
                ),
            ] {
                if v > 0 {
                    p.add(
                        &format!("{at}.{field}"),
                        format!("{what} (rules: grpc): leave it out or set 0, found {v}"),
                    );
                }
            }
        }
        let f = self.success_rate_stdev_factor;
        if !(f.is_finite() && f >= 0.0) {
            p.add(
                &format!("{at}.success_rate_stdev_factor"),
                format!("must be a number of standard deviations of at least 0, found {f}"),
            );
        }
    }
}

/// Why a pod was ejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ejection {
    /// `consecutive_5xx` failures in a row.
    Consecutive,
    /// Its success rate lay below the sweep's threshold.
    SuccessRate,
    /// It failed `failure_percentage_threshold` per cent or more.
    FailurePercentage,
}

/// A change a sweep makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The pod is ejected.
    Eject(u32, Ejection),
    /// The pod's ejection is over.
    Return(u32),
}

/// What the detector knows of one pod.
#[derive(Clone, Debug, Default)]
struct Host {
    consecutive: u32,
    /// When its ejection began, while it is ejected.
    ejected_at: Option<SimTime>,
    /// Envoy's `ejectTimeBackoff`: the ejection's multiple of the base.
    backoff: u64,
    last_return: Option<SimTime>,
    /// Answers and successes in this interval and the last.
    total: u64,
    ok: u64,
    last_total: u64,
    last_ok: u64,
}

/// The detector of one service: each pod's record, and how many are out.
#[derive(Clone, Debug)]
pub struct OutlierDetector {
    spec: OutlierSpec,
    max_ejection: u64,
    hosts: Vec<Host>,
    ejected: u32,
    rng: SimRng,
}

impl OutlierDetector {
    /// A detector over `pods` pods, none ejected; `rng` draws only for an
    /// enforcing share strictly between 0 and 100.
    pub fn new(spec: &OutlierSpec, pods: u32, rng: SimRng) -> Self {
        OutlierDetector {
            max_ejection: spec.max_ejection().as_nanos(),
            spec: spec.clone(),
            hosts: vec![Host::default(); pods as usize],
            ejected: 0,
            rng,
        }
    }

    /// Its configuration.
    pub fn spec(&self) -> &OutlierSpec {
        &self.spec
    }

    /// A pod the timeline added.
    pub fn add_pod(&mut self) {
        self.hosts.push(Host::default());
    }

    /// Pods ejected now.
    pub fn ejected(&self) -> u32 {
        self.ejected
    }

    /// Pods it knows.
    pub fn pods(&self) -> u32 {
        self.hosts.len() as u32
    }

    /// Whether `pod` is ejected.
    pub fn is_ejected(&self, pod: u32) -> bool {
        self.hosts
            .get(pod as usize)
            .is_some_and(|h| h.ejected_at.is_some())
    }

    /// `pod` answered, `failed` or not: `Some(pod)` if that ejects it.
    pub fn judge(&mut self, pod: u32, failed: bool, now: SimTime) -> Option<u32> {
        let threshold = self.spec.consecutive_5xx;
        let h = self.hosts.get_mut(pod as usize)?;
        h.total += 1;
        if !failed {
            h.ok += 1;
            h.consecutive = 0;
            return None;
        }
        h.consecutive = h.consecutive.saturating_add(1);
        if threshold == 0 || h.consecutive != threshold || h.ejected_at.is_some() {
            return None;
        }
        let ejected = self.eject(pod, now, self.spec.enforcing_consecutive_5xx);
        self.hosts[pod as usize].consecutive = 0;
        ejected.then_some(pod)
    }

    /// Ejects `pod` if the bound on ejected pods allows and the enforcing
    /// share draws it.
    fn eject(&mut self, pod: u32, now: SimTime, enforcing: u32) -> bool {
        let n = self.hosts.len() as u64;
        let (out, most) = (
            u64::from(self.ejected),
            u64::from(self.spec.max_ejection_percent) * n,
        );
        let within = match self.spec.rules {
            OutlierRules::Envoy => 100 * (out + 1) <= most,
            OutlierRules::Grpc => 100 * out < most,
        };
        let allowed = within || (self.spec.always_eject_one_host && self.ejected == 0);
        if !allowed || self.hosts[pod as usize].ejected_at.is_some() || !self.enforced(enforcing) {
            return false;
        }
        let base = self.spec.base_ejection_time.as_nanos();
        let max = self.max_ejection;
        let h = &mut self.hosts[pod as usize];
        h.ejected_at = Some(now);
        let grows = match self.spec.rules {
            OutlierRules::Envoy => {
                u128::from(h.backoff) * u128::from(base) < u128::from(max) + u128::from(base)
            }
            OutlierRules::Grpc => true,
        };
        if grows {
            h.backoff = h.backoff.saturating_add(1);
        }
        self.ejected += 1;
        true
    }

    fn enforced(&mut self, percent: u32) -> bool {
        match percent {
            0 => false,
            100.. => true,
            p => self.rng.random_range(0..100u32) < p,
        }
    }

    /// The sweep every `interval`: ejections over return, the interval's
    /// answers judged, multipliers of pods in rotation lowered; the
    /// changes in `out`, in the order made (pod order within each step).
    /// Envoy returns pods before it judges (a pod back at this sweep may
    /// be ejected again at once) and lowers a multiplier once the pod has
    /// been back a whole interval; gRPC judges first, then lowers every
    /// multiplier in rotation and returns pods whose time is over (the
    /// same sweeps lower a multiplier under either).
    pub fn sweep(&mut self, now: SimTime, out: &mut Vec<Change>) {
        for h in &mut self.hosts {
            h.last_total = std::mem::take(&mut h.total);
            h.last_ok = std::mem::take(&mut h.ok);
        }
        match self.spec.rules {
            OutlierRules::Envoy => {
                for pod in 0..self.hosts.len() {
                    self.return_if_due(pod, now, out);
                }
                self.rate_sweeps(now, out);
                let interval = self.spec.interval;
                for h in &mut self.hosts {
                    if h.ejected_at.is_none()
                        && h.last_return
                            .is_some_and(|r| now.saturating_since(r) >= interval)
                    {
                        h.backoff = h.backoff.saturating_sub(1);
                    }
                }
            }
            OutlierRules::Grpc => {
                self.rate_sweeps(now, out);
                for pod in 0..self.hosts.len() {
                    let h = &mut self.hosts[pod];
                    if h.ejected_at.is_none() {
                        h.backoff = h.backoff.saturating_sub(1);
                    } else {
                        self.return_if_due(pod, now, out);
                    }
                }
            }
        }
    }

    /// Returns `pod` if it is ejected and its ejection, the base time
    /// its multiplier (at most the maximum), is over by `now`. (gRPC asks
    /// for `now` strictly after the end; its sweeps run on timers that
    /// always fire a little late, so in practice it returns pods at the
    /// same sweep as Envoy, which the simulation's exact sweeps keep.)
    fn return_if_due(&mut self, pod: usize, now: SimTime, out: &mut Vec<Change>) {
        let (base, max) = (self.spec.base_ejection_time.as_nanos(), self.max_ejection);
        let h = &mut self.hosts[pod];
        let Some(at) = h.ejected_at else {
            return;
        };
        let lasts = base.saturating_mul(h.backoff).min(max);
        if now.saturating_since(at).as_nanos() >= lasts {
            h.ejected_at = None;
            h.consecutive = 0;
            h.last_return = Some(now);
            self.ejected -= 1;
            out.push(Change::Return(pod as u32));
        }
    }

    /// The two sweeps over the last interval's answers, as Envoy runs
    /// them: success rates more than the factor's standard deviations
    /// below the mean eject, then failure percentages at the threshold or
    /// above; each counts only pods in rotation with its volume of
    /// answers, and needs its minimum of them.
    fn rate_sweeps(&mut self, now: SimTime, out: &mut Vec<Change>) {
        let s = &self.spec;
        let n = self.hosts.len();
        let sr_on = s.enforcing_success_rate > 0 && n >= s.success_rate_minimum_hosts as usize;
        let fp_on =
            s.enforcing_failure_percentage > 0 && n >= s.failure_percentage_minimum_hosts as usize;
        if !sr_on && !fp_on {
            return;
        }
        // Envoy leaves ejected pods out of the statistics; gRPC counts
        // those with answers (requests they held when ejected), though it
        // cannot eject them again.
        let grpc = s.rules == OutlierRules::Grpc;
        let rates = |volume: u32| -> Vec<(u32, f64)> {
            self.hosts
                .iter()
                .enumerate()
                .filter(|(_, h)| {
                    (grpc || h.ejected_at.is_none())
                        && h.last_total > 0
                        && h.last_total >= u64::from(volume)
                })
                .map(|(i, h)| (i as u32, h.last_ok as f64 * 100.0 / h.last_total as f64))
                .collect()
        };
        let success = rates(s.success_rate_request_volume);
        let failure = rates(s.failure_percentage_request_volume);
        let (factor, threshold) = (s.success_rate_stdev_factor, s.failure_percentage_threshold);
        let (sr_enforcing, fp_enforcing) =
            (s.enforcing_success_rate, s.enforcing_failure_percentage);
        let sr_hosts = s.success_rate_minimum_hosts as usize;
        let fp_hosts = s.failure_percentage_minimum_hosts as usize;
        if sr_on && !success.is_empty() && success.len() >= sr_hosts {
            let k = success.len() as f64;
            let mean = success.iter().map(|r| r.1).sum::<f64>() / k;
            let var = success.iter().map(|r| (r.1 - mean).powi(2)).sum::<f64>() / k;
            let below = mean - factor * var.sqrt();
            for (pod, rate) in success {
                if rate < below && self.eject(pod, now, sr_enforcing) {
                    out.push(Change::Eject(pod, Ejection::SuccessRate));
                }
            }
        }
        if fp_on && !failure.is_empty() && failure.len() >= fp_hosts {
            for (pod, rate) in failure {
                let failing = 100.0 - rate;
                let over = match grpc {
                    false => failing >= f64::from(threshold),
                    true => failing > f64::from(threshold),
                };
                if over && self.eject(pod, now, fp_enforcing) {
                    out.push(Change::Eject(pod, Ejection::FailurePercentage));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use sim_core::rng::RngStreams;

    use super::*;

    fn detector(spec: OutlierSpec, pods: u32) -> OutlierDetector {
        OutlierDetector::new(&spec, pods, RngStreams::new(1).stream("outlier"))
    }

    /// `volume` answers from each of `pods` pods at 5 s, the first
    /// `failing(pod)` of them failures.
    fn answer(d: &mut OutlierDetector, pods: u32, volume: u32, failing: impl Fn(u32) -> u32) {
        for pod in 0..pods {
            for k in 0..volume {
                d.judge(pod, k < failing(pod), at(5));
            }
        }
    }

    fn at(s: u64) -> SimTime {
        SimTime::ZERO + secs(s)
    }

    #[test]
    fn five_failures_in_a_row_eject_and_a_success_resets_the_count() {
        let mut d = detector(OutlierSpec::default(), 10);
        for _ in 0..4 {
            assert_eq!(d.judge(3, true, at(1)), None);
        }
        assert_eq!(d.judge(3, false, at(1)), None);
        for _ in 0..4 {
            assert_eq!(d.judge(3, true, at(1)), None);
        }
        assert_eq!(d.judge(3, true, at(1)), Some(3));
        assert!(d.is_ejected(3));
        assert_eq!(d.ejected(), 1);
        // A second pod would be 20 % of ten: over the default 10 %.
        for _ in 0..5 {
            assert_eq!(d.judge(4, true, at(1)), None);
        }
        assert!(!d.is_ejected(4));
    }

    #[test]
    fn fewer_than_ten_pods_never_lose_one_at_the_default_percent() {
        let mut d = detector(OutlierSpec::default(), 9);
        for _ in 0..50 {
            assert_eq!(d.judge(0, true, at(1)), None);
        }
        let mut d = detector(
            OutlierSpec {
                always_eject_one_host: true,
                ..OutlierSpec::default()
            },
            9,
        );
        let ejected: Vec<_> = (0..5).filter_map(|_| d.judge(0, true, at(1))).collect();
        assert_eq!(ejected, [0]);
    }

    #[test]
    fn ejections_lengthen_and_end_at_the_sweep_after_their_time() {
        let mut d = detector(OutlierSpec::default(), 10);
        let mut out = Vec::new();
        let eject =
            |d: &mut OutlierDetector, t| (0..5).filter_map(|_| d.judge(0, true, at(t))).count();
        assert_eq!(eject(&mut d, 1), 1);
        // 30 s from 1 s: the sweep at 30 s is too early, 40 s brings it back.
        d.sweep(at(30), &mut out);
        assert!(out.is_empty());
        d.sweep(at(40), &mut out);
        assert_eq!(out, [Change::Return(0)]);
        // Ejected again at once: 60 s this time.
        assert_eq!(eject(&mut d, 41), 1);
        out.clear();
        d.sweep(at(100), &mut out);
        assert!(out.is_empty());
        d.sweep(at(101), &mut out);
        assert_eq!(out, [Change::Return(0)]);
        // A pod in rotation a whole interval after it came back: its
        // multiplier falls one a sweep, so the next ejection is 30 s again.
        for t in [111, 121] {
            d.sweep(at(t), &mut out);
        }
        out.clear();
        assert_eq!(eject(&mut d, 122), 1);
        d.sweep(at(151), &mut out);
        assert!(out.is_empty());
        d.sweep(at(152), &mut out);
        assert_eq!(out, [Change::Return(0)]);
    }

    #[test]
    fn ejections_stop_growing_at_the_maximum() {
        let spec = OutlierSpec {
            base_ejection_time: secs(100),
            max_ejection_time: Some(secs(250)),
            ..OutlierSpec::default()
        };
        let mut d = detector(spec, 10);
        let mut t = 0;
        let mut lengths = Vec::new();
        for _ in 0..5 {
            let start = t;
            assert_eq!((0..5).filter_map(|_| d.judge(0, true, at(t))).count(), 1);
            let mut out = Vec::new();
            while out.is_empty() {
                t += 10;
                d.sweep(at(t), &mut out);
            }
            lengths.push(t - start);
        }
        assert_eq!(lengths, [100, 200, 250, 250, 250]);
    }

    #[test]
    fn an_ejected_pod_reaching_the_count_again_is_not_ejected_twice() {
        let mut d = detector(OutlierSpec::default(), 20);
        assert_eq!((0..5).filter_map(|_| d.judge(0, true, at(1))).count(), 1);
        // Answers of requests it held keep coming: five more failures.
        assert_eq!((0..5).filter_map(|_| d.judge(0, true, at(1))).count(), 0);
        assert_eq!(d.ejected(), 1);
    }

    #[test]
    fn success_rate_ejects_a_pod_below_mean_less_stdev_factor_deviations() {
        // Nine pods at 100 %, one at 70 %: mean 97, standard deviation 9,
        // threshold 97 − 1.9 × 9 = 79.9.
        let spec = OutlierSpec {
            consecutive_5xx: 0,
            ..OutlierSpec::default()
        };
        let mut d = detector(spec.clone(), 10);
        answer(&mut d, 10, 100, |pod| if pod == 9 { 30 } else { 0 });
        let mut out = Vec::new();
        d.sweep(at(10), &mut out);
        assert_eq!(out, [Change::Eject(9, Ejection::SuccessRate)]);
        // At 85 % the threshold is 98.5 − 1.9 × 4.5 = 89.95: ejected; too
        // few answers (99) and the pod is not counted, nor are fewer than
        // five pods judged.
        for (bad, volume, pods, ejected) in [
            (15, 100, 10, true),
            (15, 99, 10, false),
            (30, 100, 4, false),
        ] {
            let mut d = detector(spec.clone(), pods);
            answer(&mut d, pods, volume, |pod| if pod == 0 { bad } else { 0 });
            let mut out = Vec::new();
            d.sweep(at(10), &mut out);
            assert_eq!(!out.is_empty(), ejected, "{bad} {volume} {pods}");
        }
    }

    #[test]
    fn failure_percentage_ejects_at_its_threshold_however_the_others_fare() {
        let spec = OutlierSpec {
            consecutive_5xx: 0,
            enforcing_success_rate: 0,
            enforcing_failure_percentage: 100,
            max_ejection_percent: 100,
            ..OutlierSpec::default()
        };
        // (failures of pod 0 in `volume`, every other pod's, volume, pods,
        // pods ejected): 85 % of 100 is at the threshold, 84 % is not;
        // 49 answers are under the volume of 50; four pods are too few;
        // every pod failing 90 % ejects them all (the success rate, whose
        // standard deviation is then 0, ejects none).
        for (bad, others, volume, pods, ejected) in [
            (85, 0, 100, 10, 1),
            (84, 0, 100, 10, 0),
            (49, 0, 49, 10, 0),
            (50, 0, 50, 10, 1),
            (90, 0, 100, 4, 0),
            (90, 90, 100, 10, 10),
        ] {
            // The success-rate sweep alone, on the same answers: the
            // odd pod out is ejected, pods failing alike are not.
            let sr_want = u32::from(pods >= 5 && volume >= 100 && others != bad);
            for (sr, fp, want, why) in [
                (0, 100, ejected, Ejection::FailurePercentage),
                (100, 0, sr_want, Ejection::SuccessRate),
            ] {
                let spec = OutlierSpec {
                    enforcing_success_rate: sr,
                    enforcing_failure_percentage: fp,
                    ..spec.clone()
                };
                let mut d = detector(spec, pods);
                answer(
                    &mut d,
                    pods,
                    volume,
                    |pod| if pod == 0 { bad } else { others },
                );
                let mut out = Vec::new();
                d.sweep(at(10), &mut out);
                assert!(
                    out.iter()
                        .all(|c| matches!(c, Change::Eject(_, w) if *w == why))
                );
                assert_eq!(
                    out.len(),
                    want as usize,
                    "{bad} {others} {volume} {pods} sr {sr}"
                );
            }
        }
    }

    #[test]
    fn a_pod_both_sweeps_condemn_is_ejected_once() {
        let spec = OutlierSpec {
            consecutive_5xx: 0,
            enforcing_failure_percentage: 100,
            ..OutlierSpec::default()
        };
        let mut d = detector(spec, 10);
        answer(&mut d, 10, 100, |pod| if pod == 9 { 90 } else { 0 });
        let mut out = Vec::new();
        d.sweep(at(10), &mut out);
        assert_eq!(out, [Change::Eject(9, Ejection::SuccessRate)]);
        assert_eq!(d.ejected(), 1);
    }

    /// gRPC's rules with the failure-percentage detector on: a pod
    /// failing more than half of ten answers or more is ejected.
    fn grpc(pods: u32) -> OutlierDetector {
        let spec = OutlierSpec {
            enforcing_failure_percentage: 100,
            failure_percentage_threshold: 50,
            failure_percentage_minimum_hosts: 1,
            failure_percentage_request_volume: 10,
            max_ejection_percent: 100,
            ..OutlierSpec::from(OutlierInput {
                rules: OutlierRules::Grpc,
                ..OutlierInput::default()
            })
        };
        detector(spec, pods)
    }

    fn fail(d: &mut OutlierDetector, pod: u32, n: u32, t: u64) {
        for _ in 0..n {
            assert_eq!(d.judge(pod, true, at(t)), None, "no consecutive detector");
        }
    }

    #[test]
    fn grpc_rules_start_with_no_detector_and_no_panic() {
        let spec = OutlierSpec::from(OutlierInput {
            rules: OutlierRules::Grpc,
            ..OutlierInput::default()
        });
        assert_eq!(
            (
                spec.consecutive_5xx,
                spec.enforcing_success_rate,
                spec.enforcing_failure_percentage,
                spec.healthy_panic_threshold
            ),
            (0, 0, 0, 0)
        );
        let envoy = OutlierSpec::default();
        assert_eq!(
            (
                envoy.consecutive_5xx,
                envoy.enforcing_success_rate,
                envoy.enforcing_failure_percentage,
                envoy.healthy_panic_threshold
            ),
            (5, 100, 0, 50)
        );
        assert!(spec.describe(8).contains("nothing"), "{}", spec.describe(8));
    }

    #[test]
    fn grpc_lets_one_pod_out_of_eight_where_envoy_lets_none() {
        // Three pods failing two answers in three. The cap is checked
        // before each ejection: 0 % ejected is under 10 %, so one goes
        // (12.5 %), then no more.
        let mut out = Vec::new();
        let mut d = grpc(8);
        d.spec.max_ejection_percent = 10;
        for pod in 0..8 {
            fail(&mut d, pod, if pod < 3 { 20 } else { 0 }, 5);
            for _ in 0..10 {
                d.judge(pod, false, at(5));
            }
        }
        d.sweep(at(10), &mut out);
        assert_eq!(out, [Change::Eject(0, Ejection::FailurePercentage)]);
        let envoy = OutlierSpec::default();
        let rounded_up = d.spec.clone();
        for (pods, e, g) in [(8, 0, 1), (10, 1, 1), (29, 2, 3), (1, 0, 1)] {
            assert_eq!(envoy.most_ejected(pods), e, "{pods}");
            assert_eq!(rounded_up.most_ejected(pods), g, "{pods}");
        }
        // Exactly half failing is not over gRPC's threshold of 50 %.
        let mut d = grpc(4);
        fail(&mut d, 0, 10, 5);
        for _ in 0..10 {
            d.judge(0, false, at(5));
        }
        out.clear();
        d.sweep(at(10), &mut out);
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn grpc_judges_before_it_returns_a_pod_envoy_after() {
        // Pod 0 ejected at 10 s (30 s); answers of requests it held keep
        // failing while it is out. At 40 s Envoy returns it and ejects it
        // again on those answers; gRPC, judging first, cannot eject a pod
        // still out, and returns it.
        for (rules, want) in [
            (
                OutlierRules::Envoy,
                vec![
                    Change::Return(0),
                    Change::Eject(0, Ejection::FailurePercentage),
                ],
            ),
            (OutlierRules::Grpc, vec![Change::Return(0)]),
        ] {
            let mut d = grpc(4);
            d.spec.rules = rules;
            d.spec.consecutive_5xx = 0;
            let mut out = Vec::new();
            fail(&mut d, 0, 10, 5);
            d.sweep(at(10), &mut out);
            assert_eq!(out, [Change::Eject(0, Ejection::FailurePercentage)]);
            for t in [20, 30] {
                out.clear();
                d.sweep(at(t), &mut out);
                assert!(out.is_empty());
            }
            fail(&mut d, 0, 10, 35);
            out.clear();
            d.sweep(at(40), &mut out);
            assert_eq!(out, want, "{rules:?}");
        }
    }

    #[test]
    fn grpc_multipliers_grow_without_bound_and_fall_every_sweep() {
        // Base 100 s, at most 250 s: five ejections in a row, each at the
        // sweep after the last return. Envoy's multiplier stops at 4 (its
        // 4 × 100 s is past 250 + 100 s), gRPC's reaches 5. Both lower it
        // at each sweep from the one after the return, so four sweeps
        // later the next ejection lasts 100 s under Envoy, 200 s under
        // gRPC.
        for (rules, last) in [(OutlierRules::Envoy, 100), (OutlierRules::Grpc, 200)] {
            let mut d = grpc(4);
            d.spec.rules = rules;
            d.spec.consecutive_5xx = 0;
            d.spec.base_ejection_time = secs(100);
            d.spec.max_ejection_time = Some(secs(250));
            d.max_ejection = secs(250).as_nanos();
            let mut t = 0;
            let mut lengths = Vec::new();
            let mut out = Vec::new();
            for round in 0..6 {
                if round == 5 {
                    for _ in 0..4 {
                        t += 10;
                        d.sweep(at(t), &mut out);
                    }
                    out.clear();
                }
                fail(&mut d, 0, 10, t + 5);
                t += 10;
                d.sweep(at(t), &mut out);
                assert!(out.contains(&Change::Eject(0, Ejection::FailurePercentage)));
                let start = t;
                out.clear();
                while !out.contains(&Change::Return(0)) {
                    t += 10;
                    d.sweep(at(t), &mut out);
                }
                out.clear();
                lengths.push(t - start);
            }
            assert_eq!(lengths, [100, 200, 250, 250, 250, last], "{rules:?}");
        }
    }

    #[test]
    fn the_cap_is_told_in_pods() {
        let spec = OutlierSpec::default();
        assert_eq!(spec.most_ejected(8), 0);
        assert_eq!(spec.most_ejected(10), 1);
        assert_eq!(spec.most_ejected(29), 2);
        assert!(
            spec.describe(8).contains("never ejects"),
            "{}",
            spec.describe(8)
        );
        let one = OutlierSpec {
            always_eject_one_host: true,
            ..OutlierSpec::default()
        };
        assert_eq!(one.most_ejected(8), 1);
        assert_eq!(one.most_ejected(0), 0);
    }

    #[test]
    fn enforcing_shares_eject_that_share() {
        let spec = OutlierSpec {
            enforcing_consecutive_5xx: 30,
            max_ejection_percent: 100,
            ..OutlierSpec::default()
        };
        let mut d = detector(spec, 10_000);
        let ejected = (0..10_000)
            .filter(|&pod| (0..5).filter_map(|_| d.judge(pod, true, at(1))).count() == 1)
            .count();
        // 3,000 expected, binomial sd 46: within 5 sd.
        assert!((2_770..=3_230).contains(&ejected), "{ejected}");
    }
}
