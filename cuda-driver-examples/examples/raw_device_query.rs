//! Seed 003 ("CUDA篇-Cuda Driver API", 1.2), ported line for line to `cuda_driver_sys`:
//! initialise the driver, read its version and the name of device 0, and check every call
//! with `checkDriver`, whose error report (cuGetErrorName / cuGetErrorString) is shown once on
//! purpose with a call that must fail.
//!
//! Run: `cargo run -p cuda-driver-examples --example raw_device_query`

use std::ffi::{c_char, c_int, CStr};

use cuda_driver_examples::{check_cuda_driver, check_driver, ensure, raw_init_or_exit};
use cuda_driver_sys::*;

fn main() {
    // checkDriver(cuInit(0)), telling "no driver" and "no device" apart.
    raw_init_or_exit();

    // The driver's CUDA version, 1000 * major + 10 * minor (13000 is CUDA 13.0).
    let mut driver_version: c_int = 0;
    // SAFETY: `driver_version` is a live c_int the call writes the version to.
    unsafe {
        check_driver!(cuDriverGetVersion(&mut driver_version));
    }
    println!(
        "Driver version is {driver_version} (CUDA {}.{})",
        driver_version / 1000,
        driver_version % 1000 / 10
    );
    ensure!(
        driver_version >= 10000,
        "a CUDA driver reports at least 10000 (CUDA 10.0), got {driver_version}"
    );

    let mut device_count: c_int = 0;
    // SAFETY: `device_count` is a live c_int the call writes the count to.
    unsafe {
        check_driver!(cuDeviceGetCount(&mut device_count));
    }
    println!("{device_count} CUDA device(s)");
    ensure!(device_count >= 1, "cuInit succeeded, so there is a device");

    // The name of device 0, as the seed asks for it: ordinal 0 is a valid CUdevice handle.
    let mut device_name: [c_char; 100] = [0; 100];
    let device: CUdevice = 0;
    // SAFETY: the buffer is valid for writes of `device_name.len()` bytes, the length passed;
    // the driver writes a NUL-terminated name of at most that many bytes.
    unsafe {
        check_driver!(cuDeviceGetName(
            device_name.as_mut_ptr(),
            device_name.len() as c_int,
            device
        ));
    }
    // SAFETY: cuDeviceGetName succeeded, so the buffer holds a NUL-terminated string, and it
    // is not written while the CStr is alive.
    let name = unsafe { CStr::from_ptr(device_name.as_ptr()) };
    println!("Device {device} name is {}", name.to_string_lossy());
    ensure!(!name.is_empty(), "device {device} has a name");

    // The error report: `if(!checkDriver(...)) return -1;` is the seed's pattern for a call
    // that may fail. Device ordinal `device_count` is one past the last, so this must fail
    // (with CUDA_ERROR_INVALID_DEVICE), and checkDriver prints the error's name and description.
    println!("Asking for the name of device {device_count}, which does not exist:");
    // SAFETY: as above: the buffer is valid for `device_name.len()` bytes.
    let code = unsafe {
        cuDeviceGetName(
            device_name.as_mut_ptr(),
            device_name.len() as c_int,
            device_count,
        )
    };
    let ok = check_cuda_driver(
        code,
        "cuDeviceGetName(device_name, sizeof(device_name), device_count)",
        file!(),
        line!(),
    );
    ensure!(
        !ok,
        "device {device_count} does not exist, yet cuDeviceGetName succeeded"
    );

    // The strings behind that report, checked directly.
    let mut err_name: *const c_char = std::ptr::null();
    let mut err_message: *const c_char = std::ptr::null();
    // SAFETY: both out-pointers are valid for a write of a `*const c_char`.
    unsafe {
        check_driver!(cuGetErrorName(CUDA_ERROR_INVALID_DEVICE, &mut err_name));
        check_driver!(cuGetErrorString(
            CUDA_ERROR_INVALID_DEVICE,
            &mut err_message
        ));
    }
    // SAFETY: both calls succeeded, so both pointers are non-null and point to the driver's
    // static NUL-terminated strings.
    let (err_name, err_message) =
        unsafe { (CStr::from_ptr(err_name), CStr::from_ptr(err_message)) };
    ensure!(
        err_name == c"CUDA_ERROR_INVALID_DEVICE",
        "cuGetErrorName names the code, got {err_name:?}"
    );
    ensure!(
        !err_message.is_empty(),
        "cuGetErrorString describes the code"
    );
    println!("All checks passed.");
}
