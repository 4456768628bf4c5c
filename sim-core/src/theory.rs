//! Closed-form queueing results the engine and the models are checked
//! against (Erlang B and C, M/M/c waiting times, the M/M/c/K queue, the
//! M/M/c queue whose customers wait a fixed time at most).

/// Erlang B: the probability that an arrival finds all `c` servers busy in
/// an M/M/c/c loss system offered `a = λ/μ` erlangs (and is lost).
pub fn erlang_b(c: u32, a: f64) -> f64 {
    // B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1)): stable for large c.
    let mut b = 1.0;
    for k in 1..=c {
        b = a * b / (f64::from(k) + a * b);
    }
    b
}

/// Erlang C: the probability that an arrival waits in an M/M/c queue
/// offered `a = λ/μ` erlangs (requires `a < c`).
pub fn erlang_c(c: u32, a: f64) -> f64 {
    let b = erlang_b(c, a);
    let c = f64::from(c);
    c * b / (c - a * (1.0 - b))
}

/// Mean waiting time in queue (before service) of an M/M/c queue with
/// arrival rate `lambda` and service rate `mu` per server.
pub fn mmc_mean_wait(c: u32, lambda: f64, mu: f64) -> f64 {
    let a = lambda / mu;
    erlang_c(c, a) / (f64::from(c) * mu - lambda)
}

/// The M/M/c/K queue's state probabilities p_0 … p_K at offered load
/// `a = λ/μ` (c servers, room for K in all): the birth–death chain's,
/// p_n ∝ aⁿ/n! up to c and aⁿ/(c!·c^(n−c)) beyond. An arrival finds the
/// system full with probability p_K (arrivals see time averages).
pub fn mmck(c: u32, k: u32, a: f64) -> Vec<f64> {
    let weights: Vec<f64> = (0..=k)
        .scan(1.0, |w, n| {
            if n > 0 {
                *w *= a / f64::from(n.min(c));
            }
            Some(*w)
        })
        .collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total).collect()
}

/// The M/M/c queue whose customers wait at most a fixed time for a
/// server and then leave (M/M/c+D, Baccelli and Hebuterne).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Impatient {
    /// The share of customers who give up.
    pub gives_up: f64,
    /// Servers busy on average.
    pub busy: f64,
    /// Customers waiting on average (those who will give up included,
    /// until they do).
    pub waiting: f64,
    /// The probability that exactly one server is free, p_(c−1): all c
    /// are busy again after each arrival that finds it so.
    pub one_free: f64,
}

/// M/M/c+D: `c` servers of rate `mu`, Poisson arrivals at `lambda`, first
/// come first served, each customer waiting at most `patience`.
///
/// A customer knows on arrival whether it will be served: when V, the
/// time until a server frees for it (of those to be served), is below
/// the patience τ. With n < c servers busy V is 0 and n follows Erlang's
/// p_n ∝ aⁿ/n!; with all c busy V falls at rate one and grows, at each
/// arrival finding it below τ, by the time to the next of c services
/// ending, Exp(cμ): density λp_(c−1)e^(−βx) below τ and
/// λp_(c−1)e^(−βτ)e^(−cμ(x−τ)) above, β = cμ − λ, all summing to one. A
/// customer gives up with probability P(V ≥ τ) (arrivals see time
/// averages); servers are busy λ(1 − P(V ≥ τ))/μ on average and the line
/// holds λ·E[min(V, τ)] (Little). Any load, cμ ≤ λ included.
pub fn mmc_patience(c: u32, lambda: f64, mu: f64, patience: f64) -> Impatient {
    let c = c.max(1); // at least one server
    let all = f64::from(c) * mu;
    let beta = all - lambda;
    let tau = patience;
    let below = (-beta * tau).exp();
    // ∫₀^τ e^(−βx) dx = τ·(1 − e^(−y))/y and ∫₀^τ x·e^(−βx) dx =
    // τ²·(1 − e^(−y)(1 + y))/y², y = βτ: near y = 0 (a load near cμ) by
    // their series, where the closed forms lose every digit to
    // cancellation.
    let y = beta * tau;
    let (mass_below, first_moment) = if y.abs() < 1e-2 {
        (
            tau * (1.0 - y / 2.0 + y * y / 6.0 - y * y * y / 24.0),
            tau * tau * (0.5 - y / 3.0 + y * y / 8.0 - y * y * y / 30.0),
        )
    } else {
        (
            tau * -(-y).exp_m1() / y,
            tau * tau * (1.0 - below * (1.0 + y)) / (y * y),
        )
    };
    // Erlang's p_n ∝ aⁿ/n! for n < c (the M/M/c/K chain below c), then
    // the density's mass, in the same scale.
    let last = mmck(c, c - 1, lambda / mu)[c as usize - 1];
    let mass = lambda * last * (mass_below + below / all);
    let one_free = last / (1.0 + mass);
    let gives_up = lambda * one_free * below / all;
    let mean_wait = lambda * one_free * first_moment + tau * gives_up;
    Impatient {
        gives_up,
        busy: lambda * (1.0 - gives_up) / mu,
        waiting: lambda * mean_wait,
        one_free,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_values() {
        // Single server: P(wait) = ρ, Wq = ρ/(μ−λ).
        assert!((erlang_c(1, 0.8) - 0.8).abs() < 1e-12);
        assert!((mmc_mean_wait(1, 0.8, 1.0) - 4.0).abs() < 1e-12);
        // Tabulated Erlang B: 10 servers, 5 erlangs -> 0.018384.
        assert!((erlang_b(10, 5.0) - 0.018_384).abs() < 1e-6);
        // Tabulated Erlang C: 2 servers, 1 erlang -> 1/3.
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
        // M/M/c/c is Erlang's loss system; M/M/1/K at ρ = 1 is uniform.
        assert!((mmck(10, 10, 5.0)[10] - erlang_b(10, 5.0)).abs() < 1e-12);
        assert!(mmck(1, 4, 1.0).iter().all(|p| (p - 0.2).abs() < 1e-12));
    }

    #[test]
    fn patience_spans_loss_and_waiting() {
        let gives_up = |c, l, t| mmc_patience(c, l, 1.0, t).gives_up;
        // No patience: Erlang's loss system.
        for c in [1, 4] {
            let lost = gives_up(c, 3.2, 0.0);
            assert!((lost - erlang_b(c, 3.2)).abs() < 1e-12, "{c}: {lost}");
        }
        // Endless patience below capacity: no one leaves, and the line is
        // Erlang C's.
        let patient = mmc_patience(4, 3.2, 1.0, 200.0);
        assert!(patient.gives_up < 1e-12);
        assert!((patient.waiting - 3.2 * mmc_mean_wait(4, 3.2, 1.0)).abs() < 1e-9);
        assert!((patient.busy - 3.2).abs() < 1e-9);
        // Past capacity at least 1 − cμ/λ must leave, and do, in the limit.
        let over = gives_up(2, 4.0, 200.0);
        assert!((over - 0.5).abs() < 1e-9, "{over}");
        // One server at ρ = 1: π₀ = 1/(2 + λτ), the share leaving π₀.
        let even = gives_up(1, 1.0, 2.0);
        assert!((even - 0.25).abs() < 1e-12, "{even}");
        // Continuous through β = 0 and across the edge of the series
        // (|βτ| = 0.01, at λ = 1.005 here).
        let f = |l| mmc_patience(1, l, 1.0, 2.0);
        for (a, b) in [(1.0 - 1e-7, 1.0 + 1e-7), (1.005 - 1e-9, 1.005 + 1e-9)] {
            assert!((f(a).gives_up - f(b).gives_up).abs() < 1e-6, "{a}");
            assert!((f(a).waiting - f(b).waiting).abs() < 1e-6, "{a}");
        }
    }
}
