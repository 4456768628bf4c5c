//! The bundled operator action (`experiments/incidents/operator-scale-out.yaml`):
//! a metastable storm that never ends by itself ends when the operator
//! scales the dependency out for two minutes, on several seeds, and stays
//! ended once the extra capacity is gone.

use rayon::prelude::*;
use sim_models::kpi::{kpi_rows, kpis};
use sim_models::outcome::Reason;
use sim_models::world::run;
use stormsim::load::{InputLimits, load};
use stormsim::sweep::{cell_world, cells};

use crate::common;

#[test]
fn only_the_operators_scale_out_ends_the_storm() {
    let path = common::root().join("experiments/incidents/operator-scale-out.yaml");
    let exp = load(&path, &InputLimits::default()).expect("the experiment loads");
    let cells = cells(&exp).expect("cells");
    let seeds = [7u64, 8, 9];
    let outcomes: Vec<(String, u64, bool, bool, f64)> = cells
        .par_iter()
        .flat_map(|cell| seeds.par_iter().map(move |&seed| (cell, seed)))
        .map(|(cell, seed)| {
            let mut world = cell_world(&exp, cell).expect("cell world");
            world.seed = seed;
            let out = run(&world, Vec::new()).expect("runs");
            let rows = kpi_rows(&out.sink);
            let k = kpis(
                &rows,
                &out.totals,
                &out.steps,
                &exp.outputs.recovery,
                world.clock.window,
            );
            // Success in the last two minutes, after the capacity is back.
            let tail = &out.sink[out.sink.len() - 24..];
            let (ok, all) = tail.iter().fold((0u64, 0u64), |(ok, all), r| {
                (ok + r.outcome(Reason::Success), all + r.finished())
            });
            (
                cell.name(),
                seed,
                k.metastable,
                k.time_to_recover_s.is_some(),
                ok as f64 / all.max(1) as f64,
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
