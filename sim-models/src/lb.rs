//! The load balancer: which pod gets the next request.

use std::cmp::Reverse;

use priority_queue::PriorityQueue;
use rand::RngExt;
use sim_core::rng::SimRng;

use crate::config::BalancerKind;

/// Picks pods among those in rotation.
pub struct Balancer {
    kind: BalancerKind,
    next: usize,
    rng: SimRng,
    /// Least-outstanding: pods in rotation keyed by (outstanding, index),
    /// reversed so the least is on top. `priority-queue` changes a key in
    /// place, which is exactly this job. Kept only for that rule.
    least: PriorityQueue<u32, Reverse<(u32, u32)>>,
    /// In rotation: serving and not ejected.
    up: Vec<bool>,
    /// Serving as far as the pod goes (up and ready).
    serving: Vec<bool>,
    /// Ejected by the service's outlier detection.
    ejected: Vec<bool>,
    outstanding: Vec<u32>,
    /// Pods serving, and of those in rotation.
    serving_count: u32,
    up_count: u32,
    /// Envoy's `healthy_panic_threshold`: with fewer than this per cent
    /// of the serving pods in rotation, the balancer picks among every
    /// serving pod, ejected ones too (0: never).
    panic_below: u32,
    /// Whether it panics now.
    panic: bool,
}

impl Balancer {
    /// A balancer over `pods` pods, all in rotation.
    pub fn new(kind: BalancerKind, pods: u32, rng: SimRng) -> Self {
        let mut b = Balancer {
            kind,
            next: 0,
            rng,
            least: PriorityQueue::new(),
            up: Vec::new(),
            serving: Vec::new(),
            ejected: Vec::new(),
            outstanding: Vec::new(),
            serving_count: 0,
            up_count: 0,
            panic_below: 0,
            panic: false,
        };
        for p in 0..pods {
            b.add_pod(p);
        }
        b
    }

    /// Grows the pod list to include `pod`, in rotation.
    pub fn add_pod(&mut self, pod: u32) {
        let i = pod as usize;
        if self.up.len() <= i {
            self.up.resize(i + 1, false);
            self.serving.resize(i + 1, false);
            self.ejected.resize(i + 1, false);
            self.outstanding.resize(i + 1, 0);
        }
        self.set_up(pod, true);
    }

    /// The pod serves or stops serving (its state and readiness).
    pub fn set_up(&mut self, pod: u32, up: bool) {
        self.serving[pod as usize] = up;
        self.sync(pod);
    }

    /// Whether outlier detection holds the pod out.
    pub fn is_ejected(&self, pod: u32) -> bool {
        self.ejected.get(pod as usize).copied().unwrap_or(false)
    }

    /// Outlier detection ejects the pod or lets it back.
    pub fn set_ejected(&mut self, pod: u32, ejected: bool) {
        self.ejected[pod as usize] = ejected;
        self.sync(pod);
    }

    /// Sets the share of serving pods in rotation below which the
    /// balancer panics (outlier detection's `healthy_panic_threshold`).
    pub fn set_panic_threshold(&mut self, percent: u32) {
        self.panic_below = percent;
        self.update_panic();
    }

    /// Whether it picks among every serving pod now, ejected ones too.
    pub fn panics(&self) -> bool {
        self.panic
    }

    fn update_panic(&mut self) {
        self.panic = self.panic_below > 0
            && self.serving_count > 0
            && u64::from(self.up_count) * 100
                < u64::from(self.panic_below) * u64::from(self.serving_count);
    }

    /// Puts a pod in or out of rotation: in when it serves and is not
    /// ejected.
    fn sync(&mut self, pod: u32) {
        let i = pod as usize;
        let up = self.serving[i] && !self.ejected[i];
        self.serving_count = self.serving.iter().filter(|s| **s).count() as u32;
        if self.up[i] != up {
            match up {
                true => self.up_count += 1,
                false => self.up_count -= 1,
            }
        }
        self.up[i] = up;
        self.update_panic();
        if self.kind != BalancerKind::LeastOutstanding {
            return;
        }
        if up {
            self.least.push(pod, Reverse((self.outstanding[i], pod)));
        } else {
            self.least.remove(&pod);
        }
    }

    /// Requests in progress on `pod` changed by `delta`. Counted only
    /// for the rule that picks by them: the others never read the count,
    /// and every request would pay for it twice.
    #[inline]
    pub fn outstanding_changed(&mut self, pod: u32, delta: i32) {
        if self.kind != BalancerKind::LeastOutstanding {
            return;
        }
        let i = pod as usize;
        self.outstanding[i] = self.outstanding[i].saturating_add_signed(delta);
        if self.up[i] {
            self.least
                .change_priority(&pod, Reverse((self.outstanding[i], pod)));
        }
    }

    /// The pod for the next request, or `None` when none is in rotation.
    #[inline(always)]
    pub fn pick(&mut self) -> Option<u32> {
        if self.panic {
            return self.pick_in_panic();
        }
        let n = self.up.len();
        match self.kind {
            BalancerKind::RoundRobin => {
                // From `next` on, wrapping once: no division per pick.
                let mut i = self.next;
                for _ in 0..n {
                    if i >= n {
                        i = 0;
                    }
                    if self.up[i] {
                        self.next = if i + 1 == n { 0 } else { i + 1 };
                        return Some(i as u32);
                    }
                    i += 1;
                }
                None
            }
            BalancerKind::Random => {
                let count = self.up.iter().filter(|u| **u).count();
                if count == 0 {
                    return None;
                }
                let r = self.rng.random_range(0..count);
                self.up
                    .iter()
                    .enumerate()
                    .filter(|(_, u)| **u)
                    .nth(r)
                    .map(|(i, _)| i as u32)
            }
            BalancerKind::LeastOutstanding => self.least.peek().map(|(p, _)| *p),
        }
    }

    /// A pick among every serving pod, ejected ones too (Envoy's panic
    /// mode: rare, so a scan).
    #[cold]
    fn pick_in_panic(&mut self) -> Option<u32> {
        let n = self.serving.len();
        match self.kind {
            BalancerKind::RoundRobin => {
                let start = self.next.min(n);
                let i = (start..n).chain(0..start).find(|&i| self.serving[i])?;
                self.next = if i + 1 == n { 0 } else { i + 1 };
                Some(i as u32)
            }
            BalancerKind::Random => {
                let count = self.serving_count as usize;
                if count == 0 {
                    return None;
                }
                let r = self.rng.random_range(0..count);
                (0..n).filter(|&i| self.serving[i]).nth(r).map(|i| i as u32)
            }
            BalancerKind::LeastOutstanding => (0..n)
                .filter(|&i| self.serving[i])
                .min_by_key(|&i| (self.outstanding[i], i))
                .map(|i| i as u32),
        }
    }
}

#[cfg(test)]
mod tests {
    use sim_core::rng::RngStreams;

    use super::*;

    #[test]
    fn round_robin_skips_pods_out_of_rotation() {
        let mut b = Balancer::new(BalancerKind::RoundRobin, 3, RngStreams::new(1).stream("lb"));
        b.set_up(1, false);
        let picks: Vec<_> = (0..4).map(|_| b.pick().unwrap()).collect();
        assert_eq!(picks, [0, 2, 0, 2]);
    }

    #[test]
    fn an_ejected_pod_stays_out_until_both_let_it_back() {
        for kind in [BalancerKind::RoundRobin, BalancerKind::LeastOutstanding] {
            let mut b = Balancer::new(kind, 2, RngStreams::new(1).stream("lb"));
            b.set_ejected(0, true);
            assert_eq!(b.pick(), Some(1), "{kind:?}");
            // Restarted while ejected: serving again, still ejected.
            b.set_up(0, false);
            b.set_up(0, true);
            assert_eq!(b.pick(), Some(1), "{kind:?}");
            b.set_ejected(0, false);
            b.set_up(1, false);
            assert_eq!(b.pick(), Some(0), "{kind:?}");
        }
    }

    #[test]
    fn fewer_than_half_in_rotation_panics_to_every_serving_pod() {
        for kind in [
            BalancerKind::RoundRobin,
            BalancerKind::Random,
            BalancerKind::LeastOutstanding,
        ] {
            let mut b = Balancer::new(kind, 4, RngStreams::new(1).stream("lb"));
            b.set_panic_threshold(50);
            b.set_up(3, false);
            b.set_ejected(0, true);
            // Two of three serving pods in rotation: no panic.
            assert!(!b.panics());
            assert!((0..30).all(|_| matches!(b.pick(), Some(1 | 2))), "{kind:?}");
            // One of three: every serving pod, the ejected one too, and
            // never the pod out of service.
            b.set_ejected(1, true);
            assert!(b.panics());
            let mut seen = [0u32; 4];
            for _ in 0..300 {
                let p = b.pick().unwrap() as usize;
                seen[p] += 1;
                if kind == BalancerKind::LeastOutstanding {
                    b.outstanding_changed(p as u32, 1);
                }
            }
            assert!(
                seen[..3].iter().all(|&c| c > 50) && seen[3] == 0,
                "{kind:?} {seen:?}"
            );
            b.set_ejected(1, false);
            assert!(!b.panics());
        }
    }

    #[test]
    fn least_outstanding_follows_load_and_ties_to_lowest_index() {
        let mut b = Balancer::new(
            BalancerKind::LeastOutstanding,
            3,
            RngStreams::new(1).stream("lb"),
        );
        assert_eq!(b.pick(), Some(0));
        b.outstanding_changed(0, 2);
        b.outstanding_changed(1, 1);
        assert_eq!(b.pick(), Some(2));
        b.outstanding_changed(2, 5);
        assert_eq!(b.pick(), Some(1));
        b.set_up(1, false);
        assert_eq!(b.pick(), Some(0));
        b.set_up(0, false);
        b.set_up(2, false);
        assert_eq!(b.pick(), None);
    }

    #[test]
    fn random_spreads_evenly() {
        let mut b = Balancer::new(BalancerKind::Random, 4, RngStreams::new(1).stream("lb"));
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[b.pick().unwrap() as usize] += 1;
        }
        // Each pod expects 10,000 ± 87 (binomial sd): allow 5 sd.
        assert!(
            counts.iter().all(|&c| (9_565..=10_435).contains(&c)),
            "{counts:?}"
        );
    }
}
