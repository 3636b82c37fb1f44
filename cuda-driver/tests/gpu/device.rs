//! GPU tests: devices (Device Management): count and ordinals, identity, PCI bus ids, LUID
//! and NUMA ids, atomic capabilities.

use cuda_driver::prelude::*;
use cuda_driver::{types::DeviceAttribute, Device, DeviceBuffer, Error};

use crate::common::note;

/// Whether `id` reads like `"0000:19:00.0"`: domain, bus and device in hex, then a function.
fn is_pci_bus_id(id: &str) -> bool {
    let hex = |s: &str, min: usize, max: usize| {
        (min..=max).contains(&s.len()) && s.chars().all(|c| c.is_ascii_hexdigit())
    };
    let Some((head, function)) = id.rsplit_once('.') else {
        return false;
    };
    let parts: Vec<&str> = head.split(':').collect();
    parts.len() == 3
        && hex(parts[0], 4, 8)
        && hex(parts[1], 2, 2)
        && hex(parts[2], 2, 2)
        && hex(function, 1, 1)
}

#[gpu_test]
fn pci_bus_id_format_checker() {
    assert!(is_pci_bus_id("0000:19:00.0"));
    assert!(is_pci_bus_id("00000000:1B:00.0"));
    assert!(!is_pci_bus_id("0000:19:00"));
    assert!(!is_pci_bus_id("19:00.0"));
}

#[gpu_test]
fn count_and_out_of_range_ordinal() {
    let _ctx = gpu_or_skip!();
    let n = Device::count().unwrap();
    assert!(n >= 1);
    assert_eq!(Device::all().unwrap().len(), n);
    let e = Device::get(n).unwrap_err();
    assert!(
        matches!(e, Error::DeviceOutOfRange { ordinal, count } if ordinal == n && count == n),
        "{e:?}"
    );
    assert!(!e.is_no_gpu());
    assert!(
        e.to_string()
            .contains(&format!("device ordinal {n} is out of range")),
        "{e}"
    );
}

#[gpu_test]
fn identity_of_every_device() {
    let _ctx = gpu_or_skip!();
    for dev in Device::all().unwrap() {
        let name = dev.name().unwrap();
        assert!(!name.trim().is_empty(), "{dev:?} has an empty name");
        let uuid = dev.uuid().unwrap();
        assert_ne!(uuid, [0u8; 16], "{name}: zero UUID");
        let bus = dev.pci_bus_id().unwrap();
        assert!(is_pci_bus_id(&bus), "{name}: PCI bus id {bus:?}");
        assert!(dev.total_memory().unwrap() > 0);
        let cc = dev.compute_capability().unwrap();
        assert!(cc >= (7, 5), "{name}: compute capability {cc:?}");
        assert!(
            dev.attribute(DeviceAttribute::MULTIPROCESSOR_COUNT)
                .unwrap()
                > 0
        );
        assert_eq!(
            dev.attribute(DeviceAttribute::COMPUTE_CAPABILITY_MAJOR)
                .unwrap(),
            cc.0
        );
        // The driver answers for a device and itself (whatever it answers).
        dev.can_access_peer(dev).unwrap();
        assert_eq!(Device::from_raw(dev.as_raw()), dev);
    }
    // Distinct devices have distinct UUIDs.
    let uuids: std::collections::HashSet<_> = Device::all()
        .unwrap()
        .into_iter()
        .map(|d| d.uuid().unwrap())
        .collect();
    assert_eq!(uuids.len(), Device::count().unwrap());
}

/// Issue 23: an empty list of atomic operations is answered without asking the driver (no
/// zero-length arrays handed to it); a list of one gets one answer.
#[gpu_test]
fn atomic_capabilities_of_no_operations_are_an_empty_list() {
    use cuda_driver::types::AtomicOperation;
    let _ctx = gpu_or_skip!();
    let dev = Device::get(0).unwrap();
    match dev.host_atomic_capabilities(&[]) {
        Err(e @ Error::Unsupported { .. }) => {
            crate::common::skip(format!("atomic capabilities need CUDA 13.0: {e}"))
        }
        r => assert!(r.unwrap().is_empty()),
    }
    assert!(dev.p2p_atomic_capabilities(dev, &[]).unwrap().is_empty());
    let one = dev
        .host_atomic_capabilities(&[AtomicOperation::INTEGER_ADD])
        .unwrap();
    assert_eq!(one.len(), 1);
}

#[gpu_test]
fn devices_by_pci_bus_id_luid_and_numa_ids() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let id = dev.pci_bus_id().unwrap();
    assert_eq!(Device::by_pci_bus_id(&id).unwrap(), dev, "{id}");
    // The bus id is case-insensitive hex.
    assert_eq!(
        Device::by_pci_bus_id(&id.to_ascii_lowercase()).unwrap(),
        dev
    );
    for d in Device::all().unwrap() {
        assert_eq!(Device::by_pci_bus_id(&d.pci_bus_id().unwrap()).unwrap(), d);
    }
    // Bad ids: errors, and the context is usable.
    assert!(Device::by_pci_bus_id("not a bus id").is_err());
    assert!(Device::by_pci_bus_id("ffff:ff:1f.7").is_err());
    assert!(matches!(
        Device::by_pci_bus_id("0000:01:00.0\0x"),
        Err(Error::InvalidString { .. })
    ));
    // The LUID is Windows-only: on Linux the driver refuses it.
    if cfg!(target_os = "linux") {
        match dev.luid() {
            Err(e) => note(format!("luid on Linux: {e}")),
            Ok(l) => panic!("a LUID on Linux: {l:?}"),
        }
    } else {
        dev.luid().unwrap();
    }
    // NUMA ids agree with the attributes (-1: none).
    let numa = dev.attribute(DeviceAttribute::NUMA_ID).unwrap();
    assert_eq!(dev.numa_id().unwrap(), (numa >= 0).then_some(numa as u32));
    let host = dev.attribute(DeviceAttribute::HOST_NUMA_ID).unwrap();
    assert_eq!(
        dev.host_numa_id().unwrap(),
        (host >= 0).then_some(host as u32)
    );
    note(format!("NUMA id {numa}, host NUMA id {host}"));
    let b = DeviceBuffer::from_slice(&ctx, &[5u32; 4]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [5; 4]);
}
