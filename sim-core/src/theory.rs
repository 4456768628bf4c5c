//! Closed-form queueing results the engine and the models are checked
//! against (Erlang B and C, M/M/c waiting times, the M/M/c/K queue, the
//! M/M/1 queue whose customers wait a fixed time at most).

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

/// The share of customers who give up in an M/M/1 queue (arrival rate
/// `lambda`, service rate `mu`, first come first served) where each
/// waits at most `patience` for service and then leaves (M/M/1+D).
///
/// A customer's wait is the work ahead of it that will be served (those
/// ahead who give up add none), so one arriving to more than `patience`
/// of it leaves. That work V has an atom π₀ at 0 and, by level crossing,
/// the density λπ₀e^{−(μ−λ)x} below `patience` and f(τ)e^{−μ(x−τ)} above
/// it; the share leaving is P(V > τ) = ρπ₀e^{−(μ−λ)τ} (arrivals see time
/// averages), with π₀ from the total mass. Any load, ρ ≥ 1 included.
pub fn mm1_patience_abandonment(lambda: f64, mu: f64, patience: f64) -> f64 {
    let rho = lambda / mu;
    let delta = mu - lambda;
    let tail = (-delta * patience).exp();
    // ∫₀^τ e^{−δx} dx, which is τ at δ = 0.
    let below = if delta.abs() * patience < 1e-12 {
        patience
    } else {
        (1.0 - tail) / delta
    };
    let pi0 = 1.0 / (1.0 + lambda * below + rho * tail);
    rho * pi0 * tail
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
        // No patience: Erlang's loss system with one server, a/(1 + a).
        let lost = mm1_patience_abandonment(0.8, 1.0, 0.0);
        assert!((lost - erlang_b(1, 0.8)).abs() < 1e-12, "{lost}");
        // Endless patience below capacity: no one leaves.
        assert!(mm1_patience_abandonment(0.8, 1.0, 200.0) < 1e-12);
        // Past capacity at least 1 − 1/ρ must leave, and do, in the limit.
        let over = mm1_patience_abandonment(2.0, 1.0, 200.0);
        assert!((over - 0.5).abs() < 1e-9, "{over}");
        // At ρ = 1 the formula's limit: π₀ = 1/(2 + λτ), share π₀.
        let even = mm1_patience_abandonment(1.0, 1.0, 2.0);
        assert!((even - 0.25).abs() < 1e-12, "{even}");
        // Against the same at ρ a hair off 1 (the formula is continuous).
        let near = mm1_patience_abandonment(1.0 + 1e-7, 1.0, 2.0);
        assert!((near - even).abs() < 1e-6, "{near}");
    }
}
