//! The bundled operator action (`experiments/incidents/operator-scale-out.yaml`):
//! a metastable storm that never ends by itself ends when the operator
//! scales the dependency out for two minutes, on several seeds, and stays
//! ended once the extra capacity is gone.

use crate::common;

#[test]
fn only_the_operators_scale_out_ends_the_storm() {
    let runs = common::replay("experiments/incidents/operator-scale-out.yaml", &[7, 8, 9]);
    // Success in the last two minutes, after the capacity is back.
    let outcomes: Vec<(String, u64, bool, bool, f64)> = runs
        .iter()
        .map(|(name, seed, k, rows)| {
            (
                name.clone(),
                *seed,
                k.metastable,
                k.time_to_recover_s.is_some(),
                common::tail_success(rows, 24),
            )
        })
        .collect();
    for (name, seed, metastable, recovered, tail_success) in &outcomes {
        if name.contains("no operator") {
            assert!(
                *metastable,
                "{name}, seed {seed}: the storm outlives the trigger"
            );
            assert!(*tail_success < 0.5, "{name}, seed {seed}: {tail_success}");
        } else {
            assert!(
                !*metastable && *recovered,
                "{name}, seed {seed}: the action ends it"
            );
            assert!(*tail_success > 0.99, "{name}, seed {seed}: {tail_success}");
        }
    }
    assert_eq!(outcomes.len(), 6);
}
