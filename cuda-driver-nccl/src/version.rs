//! [`Version`]: a version of NCCL, as the header and the loaded library report it.

use std::fmt;

use crate::sys;

/// A version of NCCL (`NCCL_MAJOR`, `NCCL_MINOR`, `NCCL_PATCH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major version (2 for every library this crate loads).
    pub major: u32,
    /// The minor version.
    pub minor: u32,
    /// The patch level.
    pub patch: u32,
}

impl Version {
    /// The version of the nccl.h the bindings were generated from.
    pub const HEADER: Version = Version {
        major: sys::NCCL_MAJOR,
        minor: sys::NCCL_MINOR,
        patch: sys::NCCL_PATCH,
    };

    /// Decodes `NCCL_VERSION_CODE` as `ncclGetVersion` reports it: `X*1000 + Y*100 + Z` up to
    /// 2.8, `X*10000 + Y*100 + Z` from 2.9 on (nccl.h's `NCCL_VERSION` macro).
    pub fn from_code(code: u32) -> Version {
        if code >= 10000 {
            Version {
                major: code / 10000,
                minor: code % 10000 / 100,
                patch: code % 100,
            }
        } else {
            Version {
                major: code / 1000,
                minor: code % 1000 / 100,
                patch: code % 100,
            }
        }
    }

    /// The code nccl.h's `NCCL_VERSION(major, minor, patch)` gives.
    pub fn code(self) -> u32 {
        if self.major <= 2 && self.minor <= 8 {
            self.major * 1000 + self.minor * 100 + self.patch
        } else {
            self.major * 10000 + self.minor * 100 + self.patch
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}
