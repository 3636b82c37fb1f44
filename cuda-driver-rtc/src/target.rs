//! Compiling for a device so that its driver loads the result: [`Target`].
//!
//! The driver JIT-compiles PTX only of a PTX ISA it knows, which is that of its own CUDA
//! version or older: PTX from a newer compiler is rejected at load
//! (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`). Machine code (a CUBIN for the device's
//! architecture) needs no JIT, and the driver loads one from a newer compiler of the same major
//! version (CUDA's minor version compatibility); code of a newer major version it does not
//! load at all. So for a compiler of version `C`, a driver supporting CUDA `D` and a device of
//! architecture `sm_XY` ([`Target::decide`]):
//!
//! | versions | output |
//! |---|---|
//! | `C <= D` | PTX for `compute_XY` (the highest architecture the compiler supports that is not newer than the device), or a CUBIN when asked to prefer one |
//! | `C > D`, same major | a CUBIN for `sm_XY` (or the newest `sm_XZ`, `Z <= Y`, the compiler supports: machine code runs on later minor revisions of its architecture) |
//! | `C > D`, newer major | [`Error::DriverTooOld`], one sentence naming both versions |
//!
//! and where no architecture fits, [`Error::UnsupportedDevice`] says which the compiler
//! supports. [`Program::compile_for`](crate::Program::compile_for) and
//! [`Linker::for_device`](crate::Linker::for_device) apply it.

use cuda_driver::Device;

use crate::arch::Arch;
use crate::error::{Error, Result};
use crate::version::Version;

/// The architecture to compile for so that one device's driver loads the output, and why
/// (see the [module docs](self) for the rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    arch: Arch,
    tool_version: Version,
    driver: Version,
    device_arch: u32,
}

impl Target {
    /// The target for `device` and its driver, for NVRTC of version `nvrtc_version`
    /// supporting the architectures `supported` (as [`Nvrtc::supported_archs`](crate::Nvrtc::supported_archs)
    /// lists them). Asks the driver for its version and the device for its compute capability.
    pub fn for_device(
        device: &Device,
        tool: &'static str,
        tool_version: Version,
        supported: &[u32],
        prefer_cubin: bool,
    ) -> Result<Target> {
        let (major, minor) = cuda_driver::driver_version()?;
        let (cc_major, cc_minor) = device.compute_capability()?;
        let device_arch = u32::try_from(cc_major * 10 + cc_minor).map_err(|_| {
            Error::InvalidOptions(format!(
                "the device reports compute capability {cc_major}.{cc_minor}"
            ))
        })?;
        Target::decide(
            tool,
            tool_version,
            supported,
            Version::new(major, minor),
            device_arch,
            prefer_cubin,
        )
    }

    /// The rule of the [module docs](self), without asking anyone: `tool` (`"NVRTC"`) of
    /// version `tool_version` supporting the architectures `supported` (`[75, 80, 86, ..]`;
    /// empty: any), a driver supporting CUDA `driver`, a device of architecture `device_arch`
    /// (`86` for 8.6), and whether a CUBIN is preferred where PTX would load too.
    ///
    /// ```
    /// use cuda_driver_rtc::{Arch, Target, Version};
    /// let supported = [75, 80, 86, 89, 90];
    /// // A driver as new as the compiler: PTX, JIT-compiled at load.
    /// let t = Target::decide("NVRTC", Version::new(13, 0), &supported, Version::new(13, 0), 86, false)?;
    /// assert_eq!(t.arch(), Arch::compute(8, 6));
    /// // An older driver of the same major version: machine code, no JIT.
    /// let t = Target::decide("NVRTC", Version::new(13, 2), &supported, Version::new(13, 0), 86, false)?;
    /// assert_eq!(t.arch(), Arch::sm(8, 6));
    /// // An older major version: nothing loads.
    /// let e = Target::decide("NVRTC", Version::new(13, 0), &supported, Version::new(12, 8), 86, false)
    ///     .unwrap_err();
    /// assert!(e.to_string().starts_with("NVRTC 13.0 is newer than the driver, which supports CUDA 12.8"));
    /// # Ok::<(), cuda_driver_rtc::Error>(())
    /// ```
    pub fn decide(
        tool: &'static str,
        tool_version: Version,
        supported: &[u32],
        driver: Version,
        device_arch: u32,
        prefer_cubin: bool,
    ) -> Result<Target> {
        if tool_version.major > driver.major {
            return Err(Error::DriverTooOld {
                tool,
                tool_version,
                driver,
            });
        }
        let supports = |a: u32| supported.is_empty() || supported.contains(&a);
        let list = || match (supported.iter().min(), supported.iter().max()) {
            (Some(lo), Some(hi)) => format!("it supports sm_{lo} to sm_{hi}"),
            _ => "it supports none".into(),
        };
        let no_machine_code =
            || format!("it has no machine code for this architecture ({})", list());
        let unsupported = |reason: String| Error::UnsupportedDevice {
            tool,
            tool_version,
            arch: device_arch,
            reason,
        };
        let target = |arch| Target {
            arch,
            tool_version,
            driver,
            device_arch,
        };
        let ptx_loads = tool_version <= driver;
        if ptx_loads && !prefer_cubin {
            // PTX is compiled forward by the driver: the newest supported architecture that
            // is not newer than the device.
            let best = if supports(device_arch) {
                Some(device_arch)
            } else {
                supported
                    .iter()
                    .copied()
                    .filter(|&a| a <= device_arch)
                    .max()
            };
            return match best {
                Some(a) => Ok(target(Arch::from_code(a, false))),
                None => Err(unsupported(format!(
                    "the device is older than every architecture it supports ({})",
                    list().trim_start_matches("it supports ")
                ))),
            };
        }
        // Machine code runs on its own architecture and later minor revisions of it.
        let best = if supports(device_arch) {
            Some(device_arch)
        } else {
            supported
                .iter()
                .copied()
                .filter(|&a| a / 10 == device_arch / 10 && a <= device_arch)
                .max()
        };
        match best {
            Some(a) => Ok(target(Arch::from_code(a, true))),
            None if ptx_loads => Err(unsupported(format!(
                "a CUBIN was asked for, and {}",
                no_machine_code()
            ))),
            None => Err(unsupported(format!(
                "it is newer than the driver, which supports CUDA {driver}, so only a CUBIN \
                 would load, and {}",
                no_machine_code()
            ))),
        }
    }

    /// The architecture to compile for: virtual (PTX) or real (a CUBIN).
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The version of the compiler (or linker) the target was chosen for.
    pub fn tool_version(&self) -> Version {
        self.tool_version
    }

    /// The CUDA version the driver supports.
    pub fn driver_version(&self) -> Version {
        self.driver
    }

    /// The device's architecture, `major * 10 + minor`.
    pub fn device_arch(&self) -> u32 {
        self.device_arch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V13_0: Version = Version::new(13, 0);
    const SUPPORTED: &[u32] = &[75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];

    fn arch(
        tool: Version,
        driver: Version,
        device: u32,
        prefer_cubin: bool,
    ) -> Result<Arch, String> {
        Target::decide("NVRTC", tool, SUPPORTED, driver, device, prefer_cubin)
            .map(|t| t.arch())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_driver_as_new_as_the_compiler_gets_ptx_for_the_device() {
        assert_eq!(arch(V13_0, V13_0, 86, false), Ok(Arch::compute(8, 6)));
        assert_eq!(
            arch(V13_0, Version::new(13, 2), 90, false),
            Ok(Arch::compute(9, 0))
        );
        // Older compiler, newer driver of another major version: PTX loads.
        assert_eq!(
            arch(Version::new(12, 8), V13_0, 80, false),
            Ok(Arch::compute(8, 0))
        );
        // A device newer than the compiler knows: the newest PTX it can write, JIT-compiled
        // forward by the driver.
        assert_eq!(arch(V13_0, V13_0, 130, false), Ok(Arch::compute(12, 1)));
        assert_eq!(arch(V13_0, V13_0, 85, false), Ok(Arch::compute(8, 0)));
        // Asked for machine code.
        assert_eq!(arch(V13_0, V13_0, 86, true), Ok(Arch::sm(8, 6)));
    }

    #[test]
    fn a_compiler_newer_than_the_driver_gets_a_cubin_for_the_device() {
        let newer = Version::new(13, 2);
        assert_eq!(arch(newer, V13_0, 86, false), Ok(Arch::sm(8, 6)));
        assert_eq!(arch(newer, V13_0, 120, false), Ok(Arch::sm(12, 0)));
        // Not in the list: the newest earlier minor revision of the same major architecture.
        assert_eq!(arch(newer, V13_0, 85, false), Ok(Arch::sm(8, 0)));
        // No machine code for this major architecture: a clear error, never PTX.
        let e = arch(newer, V13_0, 130, false).unwrap_err();
        assert_eq!(
            e,
            "NVRTC 13.2 cannot compile for this device (sm_130): it is newer than the driver, \
             which supports CUDA 13.0, so only a CUBIN would load, and it has no machine code for \
             this architecture (it supports sm_75 to sm_121)"
        );
    }

    #[test]
    fn a_compiler_of_a_newer_major_version_than_the_driver_fails_in_one_sentence() {
        for device in [75, 86, 90, 130] {
            for prefer in [false, true] {
                let e = arch(V13_0, Version::new(12, 8), device, prefer).unwrap_err();
                assert_eq!(
                    e,
                    "NVRTC 13.0 is newer than the driver, which supports CUDA 12.8, and a newer \
                     major version's code does not load there: install a driver for CUDA 13.0 or \
                     later, or use NVRTC 12.8 or older"
                );
            }
        }
    }

    #[test]
    fn a_device_older_than_every_supported_architecture_is_an_error() {
        let e = arch(V13_0, V13_0, 70, false).unwrap_err();
        assert!(e.contains("sm_70") && e.contains("sm_75 to sm_121"), "{e}");
        let e = arch(V13_0, V13_0, 70, true).unwrap_err();
        assert!(e.contains("a CUBIN was asked for"), "{e}");
    }

    #[test]
    fn the_choice_always_loads() {
        // Whatever the versions and device: the output is PTX only where the driver is at
        // least as new as the compiler, and a CUBIN only for an architecture the device runs.
        for tool_minor in 0..4 {
            for (driver_major, driver_minor) in [(12, 8), (13, 0), (13, 1), (13, 3), (14, 0)] {
                for device in [70, 75, 80, 86, 89, 90, 100, 120, 121, 130] {
                    for prefer in [false, true] {
                        let tool = Version::new(13, tool_minor);
                        let driver = Version::new(driver_major, driver_minor);
                        let Ok(a) = arch(tool, driver, device, prefer) else {
                            continue;
                        };
                        assert!(tool.major <= driver.major);
                        if a.is_real() {
                            assert_eq!(a.code() / 10, device / 10);
                            assert!(a.code() <= device);
                        } else {
                            assert!(tool <= driver && !prefer);
                            assert!(a.code() <= device);
                        }
                        assert!(SUPPORTED.contains(&a.code()));
                    }
                }
            }
        }
    }
}
