//! Where NCCL is looked for and why a place did not serve: [`LIBRARY_VAR`], [`Attempt`],
//! [`LoadError`]. The search itself is [`Nccl::get`](crate::Nccl::get)'s.

use std::fmt;

/// The environment variable naming the NCCL library file [`Nccl::get`](crate::Nccl::get) tries first.
pub const LIBRARY_VAR: &str = "CUDA_DRIVER_NCCL_LIBRARY";

/// One place [`Nccl::get`](crate::Nccl::get) or [`Nccl::load`](crate::Nccl::load) tried, and why it did not serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The file (or the name given to the system's loader).
    pub library: String,
    /// How the place was found: `"CUDA_DRIVER_NCCL_LIBRARY"`, `"the path given to Nccl::load"`,
    /// `"the nvidia-nccl wheel in .venv"`, ...
    pub found_through: String,
    /// Why it failed: the loader's message, or what was wrong with the library.
    pub reason: String,
}

/// No NCCL could be loaded: every place tried, each with its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub(crate) attempts: Vec<Attempt>,
}

impl LoadError {
    /// The places tried, in order.
    pub fn attempts(&self) -> &[Attempt] {
        &self.attempts
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot load NCCL 2.x; tried:")?;
        if self.attempts.is_empty() {
            write!(f, " no place")?;
        }
        for a in &self.attempts {
            write!(
                f,
                "\n  {} (from {}): {}",
                a.library, a.found_through, a.reason
            )?;
        }
        write!(
            f,
            "\ninstall NCCL (`python3 -m pip install nvidia-nccl-cu13`, or the system's \
             libnccl2 package), or set {LIBRARY_VAR} to the path of libnccl.so.2"
        )
    }
}

impl std::error::Error for LoadError {}
