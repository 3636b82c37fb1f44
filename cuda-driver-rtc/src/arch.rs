//! [`Arch`]: a GPU architecture to compile for, virtual or real.

use std::fmt;

/// A GPU architecture to compile for: virtual (`compute_86`, the output is PTX, which the
/// driver compiles for the GPU at load) or real (`sm_86`, the output is a CUBIN of machine
/// code for that GPU, and PTX besides).
///
/// ```
/// use cuda_driver_rtc::Arch;
/// assert_eq!(Arch::compute(8, 6).to_string(), "compute_86");
/// assert_eq!(Arch::sm(9, 0).option(), "--gpu-architecture=sm_90");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// `major * 10 + minor`.
    code: u32,
    real: bool,
}

impl Arch {
    /// The virtual architecture `compute_<major><minor>`: the output is PTX.
    pub const fn compute(major: u32, minor: u32) -> Arch {
        Arch {
            code: major * 10 + minor,
            real: false,
        }
    }

    /// The real architecture `sm_<major><minor>`: the output is a CUBIN for that GPU (and
    /// PTX).
    pub const fn sm(major: u32, minor: u32) -> Arch {
        Arch {
            code: major * 10 + minor,
            real: true,
        }
    }

    /// From the number NVRTC and nvJitLink use (`86` for 8.6), virtual or real.
    pub const fn from_code(code: u32, real: bool) -> Arch {
        Arch { code, real }
    }

    /// `major * 10 + minor`: 86 for `sm_86`.
    pub const fn code(self) -> u32 {
        self.code
    }

    /// Whether this is a real architecture (`sm_XX`), whose output is a CUBIN.
    pub const fn is_real(self) -> bool {
        self.real
    }

    /// The NVRTC option: `--gpu-architecture=compute_86`.
    pub fn option(self) -> String {
        format!("--gpu-architecture={self}")
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = if self.real { "sm" } else { "compute" };
        write!(f, "{prefix}_{}", self.code)
    }
}
