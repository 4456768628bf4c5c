//! The bundled replays of the write-ups' incidents other than A (whose
//! replay has its own file, `replay_1402.rs`): each on several seeds,
//! against the direction and size the write-up reports.

use rayon::prelude::*;
use sim_core::time::SimTime;
use sim_models::kpi::{Kpis, kpi_rows, kpis};
use sim_models::outcome::Reason;
use sim_models::recorder::{BucketRow, Count};
use sim_models::world::run;
use stormsim::load::{InputLimits, load};
use stormsim::sweep::{cell_world, cells};

use crate::common;

/// Every cell of the bundled `file` on each of `seeds`: the cell's name,
/// the seed, its key figures and its bucket rows.
fn replay(file: &str, seeds: &[u64]) -> Vec<(String, u64, Kpis, Vec<BucketRow>)> {
    let path = common::root().join(file);
    let exp = load(&path, &InputLimits::default()).expect("the experiment loads");
    let cells = cells(&exp).expect("cells");
    cells
        .par_iter()
        .flat_map(|cell| seeds.par_iter().map(move |&seed| (cell, seed)))
        .map(|(cell, seed)| {
            let mut world = cell_world(&exp, cell).expect("cell world");
            world.seed = seed;
            let out = run(&world, Vec::new()).expect("runs");
            let k = kpis(
                &kpi_rows(&out.sink),
                &out.totals,
                &out.steps,
                &exp.outputs.recovery,
                world.clock.window,
            );
            (cell.name(), seed, k, out.sink)
        })
        .collect()
}

/// Incident D (`experiments/incidents/db-hiccup-4x.yaml`): "within a few
/// seconds 10,000 requests/s became 40,000", and the chain stayed down
/// (for half an hour, until the people on call stepped in). The
/// write-up's remedy keeps the load near one attempt a request and the
/// service up.
#[test]
fn a_200ms_database_hiccup_quadruples_the_load_until_the_remedy() {
    let seeds = [3u64, 4, 5];
    let runs = replay("experiments/incidents/db-hiccup-4x.yaml", &seeds);
    assert_eq!(runs.len(), 2 * seeds.len());
    let trigger = SimTime::from_nanos(20_000_000_000);
    for (name, seed, k, rows) in &runs {
        let ratio = |r: &BucketRow| r.attempts() as f64 / r.count(Count::Offered).max(1) as f64;
        // The first 5 s bucket from the hiccup on.
        let first = rows.iter().find(|r| r.start >= trigger).expect("a bucket");
        let tail = &rows[rows.len() - 6..];
        let (ok, all) = tail.iter().fold((0u64, 0u64), |(ok, all), r| {
            (ok + r.outcome(Reason::Success), all + r.finished())
        });
        let tail_success = ok as f64 / all.max(1) as f64;
        match name.as_str() {
            "old policy" => {
                // Four attempts a request (3 retries), within 5 s.
                assert!(
                    ratio(first) > 3.0,
                    "seed {seed}: {:.2} in the first bucket",
                    ratio(first)
                );
                assert!(
                    (3.9..=4.05).contains(&k.amplification_peak),
                    "seed {seed}: peak amplification {}",
                    k.amplification_peak
                );
                let last = ratio(rows.last().unwrap());
                assert!(
                    (3.9..=4.05).contains(&last),
                    "seed {seed}: {last:.2} at the end"
                );
                assert!(k.metastable, "seed {seed}: the storm outlives the hiccup");
                assert!(tail_success < 0.01, "seed {seed}: {tail_success}");
            }
            "the fix" => {
                assert!(
                    k.amplification_peak < 1.2,
                    "seed {seed}: peak amplification {}",
                    k.amplification_peak
                );
                assert!(!k.metastable, "seed {seed}");
                assert!(
                    k.time_to_recover_s.is_some_and(|t| t <= 15.0),
                    "seed {seed}: recovered after {:?} s",
                    k.time_to_recover_s
                );
                assert!(k.success_rate > 0.99, "seed {seed}: {}", k.success_rate);
                assert!(tail_success > 0.999, "seed {seed}: {tail_success}");
            }
            other => panic!("unexpected cell {other}"),
        }
    }
}
