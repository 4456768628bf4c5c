//! Same seed, same run: byte for byte, on any thread.

use crate::mmc_model::{MmcParams, run};
use proptest::prelude::*;

fn params(servers: u32, load: f64, room: Option<usize>, seed: u64) -> MmcParams {
    MmcParams {
        servers,
        lambda: load * f64::from(servers),
        mu: 1.0,
        waiting_room: room,
        customers: 5_000,
        warmup: 100,
        seed,
    }
}

/// Everything observable about a run, as bytes.
fn fingerprint(p: MmcParams) -> Vec<u8> {
    let (m, end) = run(p);
    let mut out = Vec::new();
    out.extend_from_slice(&m.trace_hash.to_le_bytes());
    out.extend_from_slice(&end.as_nanos().to_le_bytes());
    out.extend_from_slice(&m.wait.mean().to_bits().to_le_bytes());
    out.extend_from_slice(&m.delayed.mean().to_bits().to_le_bytes());
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn two_runs_of_the_same_seed_are_byte_identical(
        servers in 1u32..12,
        load in 0.3f64..1.2,
        room in proptest::option::of(0usize..20),
        seed in any::<u64>(),
    ) {
        let p = params(servers, load, room, seed);
        prop_assert_eq!(fingerprint(p), fingerprint(p));
    }
}

#[test]
fn runs_on_other_threads_match_the_main_thread() {
    let p = params(4, 0.9, None, 99);
    let here = fingerprint(p);
    let handles: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(move || fingerprint(p)))
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), here);
    }
}
