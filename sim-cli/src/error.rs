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
