//! Why a command failed, and so which exit code applies.

/// Why a command failed.
#[derive(Debug)]
pub enum Failure {
    /// Bad input (a file, a flag, an output folder that holds something
    /// else): exit code 2.
    Input(String),
    /// A run stopped (invariant, limit) or output could not be written:
    /// exit code 1.
    Run(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Input(m) | Failure::Run(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Failure {}

/// Writes a line to stdout. A reader that stopped reading (`stormsim
/// explain FILE | head`) ends the command quietly, exit 0: the output was
/// wanted no further, which is not an error and never a panic.
pub fn say(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.write_all(b"\n")) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `println!` for command output, through [`say`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::error::say(format_args!($($arg)*))
    };
}
