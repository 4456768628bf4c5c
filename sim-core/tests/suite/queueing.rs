//! The engine against queueing theory: M/M/c waiting (Erlang C), M/M/c/c
//! blocking (Erlang B) and Little's law.
//!
//! Tolerances: each estimate is the grand mean of 50 batch means (batch
//! means absorb the autocorrelation of successive customers). The test
//! asserts the estimate within four of its own standard errors of theory,
//! that the standard error is small enough for that to mean something
//! (below 2 % of the theoretical value), and so within 8 % at the very
//! worst; in practice the errors are well under 2 %.

use crate::mmc_model::{MmcParams, run};
use sim_core::theory::{erlang_b, erlang_c, mmc_mean_wait};

fn assert_matches(what: &str, est: f64, se: f64, theory: f64) {
    assert!(
        se < 0.02 * theory,
        "{what}: standard error {se} too large to test against {theory}"
    );
    assert!(
        (est - theory).abs() <= 4.0 * se,
        "{what}: simulated {est:.5} ± {se:.5}, theory {theory:.5}"
    );
}

#[test]
fn mmc_waiting_matches_erlang_c() {
    for (servers, lambda, seed) in [(4, 3.2, 1), (8, 6.0, 2)] {
        let p = MmcParams {
            servers,
            lambda,
            mu: 1.0,
            waiting_room: None,
            customers: 1_000_000,
            warmup: 10_000,
            seed,
        };
        let (m, end) = run(p);
        let a = lambda / p.mu;
        let c = erlang_c(servers, a);
        let wq = mmc_mean_wait(servers, lambda, p.mu);
        assert_matches(
            &format!("P(wait) c={servers}"),
            m.delayed.mean(),
            m.delayed.std_error(),
            c,
        );
        assert_matches(
            &format!("Wq c={servers}"),
            m.wait.mean(),
            m.wait.std_error(),
            wq,
        );
        // Little's law on the waiting line: Lq = λ·Wq, within 3 %.
        let lq = m.mean_line_length(end);
        assert!(
            (lq - lambda * m.wait.mean()).abs() < 0.03 * lq,
            "Little: Lq {lq} vs λWq {}",
            lambda * m.wait.mean()
        );
    }
}

#[test]
fn mmcc_blocking_matches_erlang_b() {
    for (servers, lambda, seed) in [(10, 8.0, 3), (20, 15.0, 4)] {
        let p = MmcParams {
            servers,
            lambda,
            mu: 1.0,
            waiting_room: Some(0),
            customers: 1_000_000,
            warmup: 10_000,
            seed,
        };
        let (m, _) = run(p);
        let b = erlang_b(servers, lambda);
        assert_matches(
            &format!("blocking c={servers}"),
            m.delayed.mean(),
            m.delayed.std_error(),
            b,
        );
    }
}

#[test]
fn same_seed_same_trace_other_seed_other_trace() {
    let p = MmcParams {
        servers: 3,
        lambda: 2.5,
        mu: 1.0,
        waiting_room: None,
        customers: 50_000,
        warmup: 0,
        seed: 11,
    };
    let (a, end_a) = run(p);
    let (b, end_b) = run(p);
    assert_eq!((a.trace_hash, end_a), (b.trace_hash, end_b));
    let (c, _) = run(MmcParams { seed: 12, ..p });
    assert_ne!(a.trace_hash, c.trace_hash);
}
