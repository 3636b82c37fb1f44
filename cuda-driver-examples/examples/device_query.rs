//! Seed 003 ("CUDA篇-Cuda Driver API", 1.2) with the safe API: initialise the driver, read its
//! version and the name of device 0, then list every device with its compute capability,
//! memory, multiprocessor count and UUID. An error is a value: asking for a device past the
//! last one shows the message the crate gives.
//!
//! Run: `cargo run -p cuda-driver-examples --example device_query`

use std::process::ExitCode;

use cuda_driver::{types::DeviceAttribute, Device, Error};
use cuda_driver_examples::{check, run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

/// A UUID as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as nvidia-smi shows it (after `GPU-`).
fn uuid_text(b: [u8; 16]) -> String {
    let hex =
        |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!(
        "{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    )
}

fn run() -> Result<(), Failure> {
    // cuInit(0), telling "no driver" and "no device" apart in its message.
    cuda_driver::init()?;
    let (major, minor) = cuda_driver::driver_version()?;
    println!("Driver version is CUDA {major}.{minor}");
    check!(
        major >= 12,
        "the crate needs a CUDA 12.0 driver or newer, found {major}.{minor}"
    );

    let device = Device::get(0)?;
    let name = device.name()?;
    println!("Device 0 name is {name}");
    check!(!name.is_empty(), "device 0 has a name");

    let count = Device::count()?;
    println!("{count} CUDA device(s)");
    for (ordinal, dev) in Device::all()?.into_iter().enumerate() {
        let (cc_major, cc_minor) = dev.compute_capability()?;
        let memory = dev.total_memory()?;
        let sms = dev.attribute(DeviceAttribute::MULTIPROCESSOR_COUNT)?;
        let uuid = dev.uuid()?;
        println!(
            "  {ordinal}: {}, compute capability {cc_major}.{cc_minor}, {:.1} GiB, {sms} SMs, \
             GPU-{}, PCI {}",
            dev.name()?,
            memory as f64 / (1u64 << 30) as f64,
            uuid_text(uuid),
            dev.pci_bus_id()?
        );
        check!(memory > 0, "device {ordinal} has memory");
        check!(sms > 0, "device {ordinal} has multiprocessors");
        check!(uuid != [0; 16], "device {ordinal} has a UUID");
    }

    // An ordinal past the last device is an error value with a message that says why.
    match Device::get(count) {
        Err(e @ Error::DeviceOutOfRange { .. }) => println!("Device::get({count}): {e}"),
        other => return Err(format!("Device::get({count}) should fail, got {other:?}").into()),
    }
    println!("All checks passed.");
    Ok(())
}
