//! `stormsim`: the command-line front end.
//!
//! Not built yet: the experiment commands (run, sweep, replay, report,
//! validate) are not implemented. The binary says so and exits with
//! status 2, rather than pretending to run anything.

use std::process::ExitCode;

fn main() -> ExitCode {
    let version = env!("CARGO_PKG_VERSION");
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("stormsim {version}");
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "stormsim {version}: the experiment commands are not implemented yet.\n\
         The engine's validation example runs with:\n  \
         cargo run --release -p sim-core --example mmc"
    );
    ExitCode::from(2)
}
