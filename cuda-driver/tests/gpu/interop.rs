//! GPU tests: external resource interop (memory imported from an opaque fd exported by a
//! CUDA virtual-memory allocation; semaphores: typed errors only, nothing here exports one).

use std::os::fd::OwnedFd;
use std::sync::Arc;

use cuda_driver::interop::InteropError;
use cuda_driver::prelude::*;
use cuda_driver::{
    interop::ExternalMemory, interop::ExternalSemaphore, interop::SemaphoreValue,
    memory::vmm::AddressRange, memory::vmm::MemAccessDesc, memory::vmm::PhysicalAllocation,
    memory::ArrayDescriptor, types::Array3DFlags, types::ExternalSemaphoreHandleType,
    types::ExternalSemaphoreSignalFlags, types::StreamFlags, Error, Stream,
};

use crate::child::pattern;
use crate::common::skip;

#[gpu_test]
fn external_memory_from_a_vmm_fd_is_the_same_memory() {
    let ctx = gpu_or_skip!();
    let props = crate::vmm::fd_exportable_props(&ctx);
    let dev = ctx.device();
    let g = props.minimum_granularity().unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx, g, &props).unwrap());
    let r = AddressRange::reserve(&ctx, g, 0).unwrap();
    let mut m = r.map::<u32>(0, phys.clone(), 0, g).unwrap();
    m.set_access(&[MemAccessDesc::read_write(dev)]).unwrap();
    m.copy_from_host(&pattern(7, m.len())).unwrap();

    let ext =
        ExternalMemory::from_opaque_fd(&ctx, phys.export_fd().unwrap(), g as u64, false).unwrap();
    assert_eq!(ext.size(), g as u64);
    // Read through the import what the VMM mapping wrote ...
    let mut buf = ext.mapped_buffer::<u32>(0, g / 4).unwrap();
    assert_eq!(buf.to_vec().unwrap(), pattern(7, g / 4));
    // ... and the other way round, at an offset.
    let half = g / 8;
    let mut tail = ext.mapped_buffer::<u32>((g / 2) as u64, half).unwrap();
    tail.copy_from_host(&vec![0xabcd_u32; half]).unwrap();
    let all = m.to_vec().unwrap();
    assert!(all[half..].iter().all(|&v| v == 0xabcd));
    assert_eq!(all[..half], pattern(7, g / 4)[..half]);
    // The buffers keep the import alive after the handle is gone.
    drop(ext);
    buf.copy_from_host(&pattern(9, g / 4)).unwrap();
    assert_eq!(m.to_vec().unwrap(), pattern(9, g / 4));

    // Bad input: a range past the end, and an fd that is not a CUDA export.
    let ext2 =
        ExternalMemory::from_opaque_fd(&ctx, phys.export_fd().unwrap(), g as u64, false).unwrap();
    assert!(matches!(
        ext2.mapped_buffer::<u32>(0, g / 4 + 1),
        Err(Error::OutOfBounds { .. })
    ));
    let devnull = std::fs::File::open("/dev/null").unwrap();
    assert!(ExternalMemory::from_opaque_fd(&ctx, OwnedFd::from(devnull), 4096, false).is_err());
    assert!(DeviceBufferCheck::ok(&ctx));
}

/// Issue #23, hole 6: a mipmapped array mapped from imported memory is written and read
/// through its levels while the import lives, also after the `ExternalMemory` handle is
/// dropped (the array keeps the import alive). That the array cannot be moved out of that
/// keep-alive is the `compile_fail` examples on `ExternalMipmappedArray`.
#[gpu_test]
fn external_mipmapped_array_levels_are_written_and_read_while_the_import_lives() {
    let ctx = gpu_or_skip!();
    let props = crate::vmm::fd_exportable_props(&ctx);
    let g = props.minimum_granularity().unwrap();
    let phys = PhysicalAllocation::new(&ctx, g, &props).unwrap();
    let ext =
        ExternalMemory::from_opaque_fd(&ctx, phys.export_fd().unwrap(), g as u64, false).unwrap();
    // 64 x 64 floats and two smaller levels: 21 KiB, well inside one granule.
    let desc = ArrayDescriptor::of::<f32>(64, 64, 0, Array3DFlags::empty());
    let mut arr = match ext.mapped_mipmapped_array::<f32>(0, &desc, 3) {
        Ok(a) => a,
        Err(e) if e.code().is_some() => skip(format!(
            "the driver maps no mipmapped array from this import: {e}"
        )),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(arr.levels(), 3);
    drop(ext);
    let area = |l: u32| (64usize >> l) * (64usize >> l);
    for l in 0..3u32 {
        let mut level = arr.level_mut(l).unwrap();
        assert_eq!(level.len(), area(l));
        level
            .copy_from_host(&vec![l as f32 + 0.5; area(l)])
            .unwrap();
    }
    for l in 0..3u32 {
        let level = arr.level(l).unwrap();
        let mut back = vec![0.0f32; area(l)];
        level.copy_to_host(&mut back).unwrap();
        assert_eq!(back, vec![l as f32 + 0.5; area(l)], "level {l}");
    }
    assert!(matches!(arr.level_mut(3), Err(Error::OutOfBounds { .. })));
    drop(arr);
    drop(phys);
    assert!(DeviceBufferCheck::ok(&ctx));
}

struct DeviceBufferCheck;
impl DeviceBufferCheck {
    /// The context still works.
    fn ok(ctx: &cuda_driver::Context) -> bool {
        let b = cuda_driver::DeviceBuffer::<u32>::from_slice(ctx, &[1, 2, 3]).unwrap();
        assert_eq!(b.to_vec().unwrap(), [1, 2, 3]);
        true
    }
}

#[gpu_test]
fn external_semaphores_refuse_bad_handles() {
    // CUDA cannot export a semaphore fd itself and there is no Vulkan here: only the error
    // paths are testable. Signal/wait and the graph semaphore nodes are untested.
    let ctx = gpu_or_skip!();
    let fd = || OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
    assert!(matches!(
        ExternalSemaphore::from_opaque_fd(&ctx, fd(), ExternalSemaphoreHandleType::D3D12_FENCE),
        Err(Error::Interop(InteropError::HandleTypeUnsupported { .. }))
    ));
    assert!(
        ExternalSemaphore::from_opaque_fd(&ctx, fd(), ExternalSemaphoreHandleType::OPAQUE_FD)
            .is_err()
    );
    // An empty signal list is a no-op.
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    s.signal_external_semaphores(&[], ExternalSemaphoreSignalFlags::empty())
        .unwrap();
    assert_eq!(SemaphoreValue::default().fence, 0);
    assert!(DeviceBufferCheck::ok(&ctx));
}
