//! Closed-form queueing results the engine and the models are checked
//! against (Erlang B and C, M/M/c waiting times, the M/M/c/K queue).

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
}
