//! PTX ISA versions and the drivers that load them.
//!
//! PTX starts with `.version MAJOR.MINOR`, the PTX ISA it is written in; nvcc writes the ISA
//! of its own release (CUDA 12.0 writes 8.0, CUDA 13.0 writes 9.0). The driver JIT-compiles PTX
//! of its own ISA or older and rejects newer PTX when the module is loaded
//! (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`). So the PTX a program embeds decides the oldest driver
//! it runs on: PTX from the CUDA 13.0 toolkit needs a CUDA 13.0 driver, even where the rest of
//! the program (cuda-driver itself) runs on drivers from CUDA 12.0 on.
//!
//! | driver | newest PTX ISA |
//! |--------|----------------|
//! | CUDA 12.0 to 12.5 | 8.0 to 8.5 |
//! | CUDA 12.6 | 8.5 |
//! | CUDA 12.7, 12.8, 12.9 | 8.6, 8.7, 8.8 |
//! | CUDA 13.N | 9.N |
//!
//! [`Build`](crate::Build) checks what it embeds against [`Build::oldest_driver`]
//! (by default [`OLDEST_SUPPORTED_DRIVER`]); the repository's `cargo xtask build-kernels` uses
//! the same rule for the CUDA 13.0 driver.
//!
//! [`Build::oldest_driver`]: crate::Build::oldest_driver

/// The oldest driver cuda-driver supports: CUDA 12.0 (R525), whose newest PTX ISA is 8.0.
pub const OLDEST_SUPPORTED_DRIVER: (u32, u32) = (12, 0);

/// The CUDA 13.0 toolkit the repository pins, as pip wheels (what
/// [`install_advice`] names for drivers from CUDA 13.0 on).
pub const PINNED_CUDA_13_WHEELS: &str = "nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 \
                                         nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96 \
                                         nvidia-cuda-cccl==13.0.85";

/// The newest PTX ISA that a driver of CUDA `driver` (`(major, minor)`) loads, or `None` for a
/// driver this crate does not know (older than CUDA 12.0, or of a later major release).
pub fn newest_ptx_isa(driver: (u32, u32)) -> Option<(u32, u32)> {
    match driver {
        (12, m @ 0..=5) => Some((8, m)),
        (12, 6) => Some((8, 5)),
        (12, m @ 7..=9) => Some((8, m - 1)),
        (13, m) => Some((9, m)),
        _ => None,
    }
}

/// The oldest driver (from CUDA 12.0 on) that loads PTX of ISA `isa`, or `None` for an ISA newer
/// than any driver this crate knows.
pub fn oldest_driver_for(isa: (u32, u32)) -> Option<(u32, u32)> {
    match isa {
        (major, _) if major < 8 => Some(OLDEST_SUPPORTED_DRIVER),
        (8, m @ 0..=5) => Some((12, m)),
        (8, m @ 6..=8) => Some((12, m + 1)),
        (9, m) => Some((13, m)),
        _ => None,
    }
}

/// The ISA of the first `.version` directive of `ptx`.
pub fn ptx_isa_version(ptx: &str) -> Result<(u32, u32), String> {
    let v = ptx
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(".version"))
        .map(str::trim)
        .ok_or("the PTX has no .version directive")?;
    v.split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .ok_or_else(|| format!("cannot parse the PTX's `.version {v}`"))
}

/// The toolkit release nvcc names in the PTX's header comment (`13.0.88` from
/// `// Cuda compilation tools, release 13.0, V13.0.88`).
pub fn toolkit_of(ptx: &str) -> Option<&str> {
    ptx.lines()
        .take_while(|l| l.trim_start().starts_with("//") || l.trim().is_empty())
        .find_map(|l| l.trim_start().strip_prefix("// Cuda compilation tools"))
        .and_then(|l| l.rsplit(", V").next())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Fails when PTX of ISA `isa` does not load on a driver of CUDA `oldest_driver`; the error
/// says which driver it needs.
pub fn check(isa: (u32, u32), oldest_driver: (u32, u32)) -> Result<(), String> {
    let newest = newest_ptx_isa(oldest_driver).ok_or_else(|| unknown_driver(oldest_driver))?;
    if isa <= newest {
        return Ok(());
    }
    let needs = match oldest_driver_for(isa) {
        Some((a, b)) => format!("drivers from CUDA {a}.{b} on"),
        None => "a driver newer than any this version of cuda-driver-build knows".into(),
    };
    Err(format!(
        "PTX ISA {}.{} loads only on {needs}, not on CUDA {}.{} drivers (newest PTX ISA {}.{})",
        isa.0, isa.1, oldest_driver.0, oldest_driver.1, newest.0, newest.1
    ))
}

pub(crate) fn unknown_driver((a, b): (u32, u32)) -> String {
    format!(
        "CUDA {a}.{b} is not a driver this version of cuda-driver-build knows the PTX ISA of \
         (it knows CUDA 12.0 to 12.9 and 13.x; cuda-driver supports drivers from CUDA 12.0 on)"
    )
}

/// What to install to produce PTX that drivers from `oldest_driver` on load, pinned to an exact
/// release: the CUDA 13.0 wheels for a 13.x driver, the CUDA 12.0 toolkit for a 12.x driver.
pub fn install_advice(oldest_driver: (u32, u32)) -> String {
    if oldest_driver >= (13, 0) {
        format!(
            "the pinned CUDA 13.0 toolkit (`pip install {PINNED_CUDA_13_WHEELS}`, then set \
             CUDA_PATH to the wheels' `nvidia/cu13` folder in site-packages)"
        )
    } else {
        "the CUDA 12.0 toolkit (release 12.0.1, nvcc 12.0.140, from NVIDIA's installers: no pip \
         wheel of CUDA 12.0 ships nvcc), then set CUDA_PATH to it"
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_drivers() {
        assert_eq!(newest_ptx_isa((12, 0)), Some((8, 0)));
        assert_eq!(newest_ptx_isa((12, 6)), Some((8, 5)));
        assert_eq!(newest_ptx_isa((12, 8)), Some((8, 7)));
        assert_eq!(newest_ptx_isa((13, 0)), Some((9, 0)));
        assert_eq!(newest_ptx_isa((11, 8)), None);
        assert_eq!(newest_ptx_isa((14, 0)), None);
        assert_eq!(oldest_driver_for((7, 0)), Some((12, 0)));
        assert_eq!(oldest_driver_for((8, 5)), Some((12, 5)));
        assert_eq!(oldest_driver_for((8, 7)), Some((12, 8)));
        assert_eq!(oldest_driver_for((9, 5)), Some((13, 5)));
        assert_eq!(oldest_driver_for((10, 0)), None);
    }

    #[test]
    fn the_pinned_toolkit_needs_a_13_driver() {
        // The xtask's rule: CUDA 13.0's PTX (9.0) on a 13.0 driver, not 13.5's (9.5).
        assert!(check((9, 0), (13, 0)).is_ok());
        let e = check((9, 5), (13, 0)).unwrap_err();
        assert!(
            e.contains("PTX ISA 9.5 loads only on drivers from CUDA 13.5 on"),
            "{e}"
        );
        // And the default, CUDA 12.0: 8.0 and older only.
        assert!(check((8, 0), (12, 0)).is_ok());
        assert!(check((7, 0), (12, 0)).is_ok());
        let e = check((9, 0), (12, 0)).unwrap_err();
        assert!(
            e.contains("not on CUDA 12.0 drivers (newest PTX ISA 8.0)"),
            "{e}"
        );
        assert!(check((8, 0), (14, 0))
            .unwrap_err()
            .contains("CUDA 14.0 is not a driver"));
        assert!(check((11, 0), (13, 0))
            .unwrap_err()
            .contains("newer than any"));
    }

    #[test]
    fn versions_and_toolkits_from_ptx() {
        let ptx = "//\n// Generated by NVIDIA NVVM Compiler\n//\n// Compiler Build ID: CL-1\n\
                   // Cuda compilation tools, release 13.0, V13.0.88\n// Based on NVVM 7.0.1\n//\n\
                   \n.version 9.0\n.target sm_75\n";
        assert_eq!(ptx_isa_version(ptx), Ok((9, 0)));
        assert_eq!(toolkit_of(ptx), Some("13.0.88"));
        assert_eq!(ptx_isa_version("\n  .version 7.0\n"), Ok((7, 0)));
        assert_eq!(toolkit_of("\n  .version 7.0\n"), None);
        assert!(ptx_isa_version(".target sm_75\n").is_err());
        assert!(ptx_isa_version(".version 9\n").is_err());
        assert!(ptx_isa_version(".version x.y\n").is_err());
        // A comment further down does not count as nvcc's header.
        assert_eq!(
            toolkit_of(".version 8.0\n// Cuda compilation tools, release 1, V1\n"),
            None
        );
    }

    #[test]
    fn advice_is_pinned() {
        for d in [(12, 0), (12, 9), (13, 0), (13, 5)] {
            let a = install_advice(d);
            assert!(!a.contains("pip install nvidia-cuda-nvcc ") && !a.ends_with("nvcc"));
            assert!(a.contains("==13.0.88") || a.contains("12.0.1"), "{a}");
        }
    }

    proptest! {
        /// Every ISA a known driver accepts is accepted by the driver `oldest_driver_for`
        /// names, and by no older one.
        #[test]
        fn the_tables_agree(major in 12u32..=13, minor in 0u32..=9) {
            let driver = (major, minor);
            let isa = newest_ptx_isa(driver).unwrap();
            let oldest = oldest_driver_for(isa).unwrap();
            prop_assert!(oldest <= driver);
            prop_assert!(check(isa, oldest).is_ok());
            prop_assert!(check(isa, driver).is_ok());
        }

        /// Garbage never panics the parser.
        #[test]
        fn any_text_parses_or_fails(s in ".{0,200}") {
            let _ = ptx_isa_version(&s);
            let _ = toolkit_of(&s);
        }
    }
}
