//! The bundled vulnerable-region maps (`experiments/maps/`): the same
//! near-capacity world and the same triggers (latency × magnitude for a
//! duration), once with 3 immediate retries and once under a 10 % retry
//! budget. Expected outcomes are asserted on a few cells, including the
//! sharp boundary retry-heavy policies show.

use std::collections::BTreeMap;

use rayon::prelude::*;
use stormsim::load::{InputLimits, load};
use stormsim::sweep::{canonical, cell_world, cells};

use crate::common;

/// Metastable or not, by (magnitude, duration) as written in the file.
fn map(file: &str) -> BTreeMap<(String, String), bool> {
    let path = common::root().join("experiments/maps").join(file);
    let exp = load(&path, &InputLimits::default()).expect("the map loads");
    let cells = cells(&exp).expect("cells");
    cells
        .par_iter()
        .map(|cell| {
            let world = cell_world(&exp, cell).expect("cell world");
            let (k, _) = common::run_and_judge(&exp, &world);
            let key = (canonical(&cell.params[0].1), canonical(&cell.params[1].1));
            (key, k.metastable)
        })
        .collect()
}

fn at(m: &BTreeMap<(String, String), bool>, value: &str, duration: &str) -> bool {
    *m.get(&(value.to_string(), duration.to_string()))
        .unwrap_or_else(|| panic!("no cell ×{value} for {duration} in {m:?}"))
}

#[test]
fn retries_leave_a_sharp_collapsed_region_that_a_budget_shrinks() {
    let retries = map("near-capacity-retries.yaml");
    let budget = map("near-capacity-budget.yaml");
    // Small triggers are shaken off; big ones leave the system collapsed.
    assert!(!at(&retries, "1.5", "10s"));
    assert!(!at(&retries, "2", "10s"));
    assert!(at(&retries, "10", "250ms"));
    assert!(at(&retries, "5", "10s"));
    // The boundary is sharp: one second more of the same trigger flips it.
    assert!(!at(&retries, "3", "1s") && at(&retries, "3", "2s"));
    assert!(!at(&retries, "5", "250ms") && at(&retries, "5", "500ms"));
    // Collapse is monotone in both axes on this map.
    let durations = ["250ms", "500ms", "1s", "2s", "3s", "5s", "10s"];
    let values = ["1.5", "2", "3", "5", "10"];
    for v in values {
        for w in durations.windows(2) {
            assert!(
                !at(&retries, v, w[0]) || at(&retries, v, w[1]),
                "×{v}: {} collapsed, {} not",
                w[0],
                w[1]
            );
        }
    }
    // The budget recovers from every trigger that collapses the retries,
    // including ×10 for 10 s.
    let collapsed = |m: &BTreeMap<_, bool>| m.values().filter(|&&x| x).count();
    assert!(
        collapsed(&retries) >= 15,
        "retries: {} collapsed cells",
        collapsed(&retries)
    );
    assert_eq!(collapsed(&budget), 0, "budget: {budget:?}");
    assert!(!at(&budget, "10", "10s"));
}
