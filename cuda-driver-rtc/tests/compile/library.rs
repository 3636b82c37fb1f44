//! Finding and opening the libraries.

use cuda_driver_rtc::{Error, NvJitLink, Nvrtc, Version};

use crate::common::{note, nvjitlink, nvrtc};

#[gpu_test]
fn nvrtc_reports_its_version_and_architectures() {
    let n = nvrtc();
    note(format!("NVRTC {} from {}", n.version(), n.location()));
    assert_eq!(n.version().major, 13);
    assert!(
        n.supported_archs().contains(&75),
        "{:?}",
        n.supported_archs()
    );
    assert!(n.supported_archs().windows(2).all(|w| w[0] < w[1]));
    // The same library every time.
    assert!(std::ptr::eq(n, Nvrtc::load().unwrap()));
    // Opened by its path: once per path.
    if !n.location().ends_with("(the system's loader)") {
        let a = Nvrtc::open(n.location()).unwrap();
        let b = Nvrtc::open(n.location()).unwrap();
        assert!(std::ptr::eq(a, b));
        assert_eq!(a.version(), n.version());
    }
}

#[gpu_test]
fn nvjitlink_reports_its_version() {
    let j = nvjitlink();
    note(format!("nvJitLink {} from {}", j.version(), j.location()));
    assert!(j.version() >= Version::new(13, 0));
    assert!(std::ptr::eq(j, NvJitLink::load().unwrap()));
}

#[gpu_test]
fn opening_a_file_that_is_not_the_library_is_an_error_naming_it() {
    nvrtc();
    let dir = crate::common::temp_dir("open");
    let fake = dir.join("libnvrtc.so.13");
    std::fs::write(&fake, b"not a library").unwrap();
    for path in [fake.clone(), dir.join("missing.so")] {
        let e = Nvrtc::open(&path).unwrap_err();
        assert!(matches!(e, Error::LibraryNotFound(_)), "{e:?}");
        let text = e.to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.contains("pip install nvidia-cuda-nvrtc"), "{text}");
    }
    // A real library that is not NVRTC: its missing symbols are named.
    let j = nvjitlink();
    if !j.location().ends_with("(the system's loader)") {
        let e = Nvrtc::open(j.location()).unwrap_err().to_string();
        assert!(e.contains("not an NVRTC 13 library"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
