//! Closed-form queueing results the engine and the models are checked
//! against (Erlang B and C, M/M/c waiting times).

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
    }
}
