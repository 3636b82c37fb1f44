//! GPU tests on two devices (an `nvidia-h200-x2`): memory of one GPU used by another
//! (physical memory of GPU 1 written by a kernel on GPU 0, a pool of GPU 0 used from GPU 1,
//! IPC memory of GPU 1 opened by a process working on GPU 0). On one GPU they skip with a
//! printed reason.

use std::sync::Arc;

use cuda_driver::prelude::*;
use cuda_driver::{
    memory::pool::MemPool, memory::vmm::AddressRange, memory::vmm::AllocationProps,
    memory::vmm::MemAccessDesc, memory::vmm::PhysicalAllocation, memory::MemLocation,
    types::DeviceAttribute, types::MemAccessFlags, types::StreamFlags, Context, Device, Stream,
};
#[cfg(unix)]
use cuda_driver::{memory::IpcMemHandle, types::IpcMemFlags, DeviceBuffer};

use crate::child::pattern;
#[cfg(unix)]
use crate::child::{child_role, spawn_child};
use crate::common::skip;
use crate::vmm::write_pattern_on;

/// The primary context of device 1 when GPU 0 can reach GPU 1's memory; the test skips
/// otherwise.
fn two_gpus(ctx0: &Context) -> Context {
    let count = Device::count().unwrap();
    if count < 2 {
        crate::common::skip_needs_gpus(2, format!("{count} GPU; this test needs two"));
    }
    let d1 = Device::get(1).unwrap();
    if !ctx0.device().can_access_peer(d1).unwrap() {
        skip("device 0 cannot access device 1 (no peer access)");
    }
    d1.primary_context().unwrap()
}

#[gpu_test]
fn memory_of_gpu1_written_by_a_kernel_on_gpu0() {
    let ctx0 = gpu_or_skip!();
    let ctx1 = two_gpus(&ctx0);
    let (d0, d1) = (ctx0.device(), ctx1.device());
    if d1
        .attribute(DeviceAttribute::VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
        .unwrap()
        == 0
    {
        skip("no virtual memory management on device 1");
    }
    let props = AllocationProps::device(d1);
    let g = props.minimum_granularity().unwrap();
    let phys = Arc::new(PhysicalAllocation::new(&ctx1, g, &props).unwrap());
    // The range and the mapping belong to GPU 0's context: its kernels use them.
    let range = AddressRange::reserve(&ctx0, g, 0).unwrap();
    let mut m = range.map::<u32>(0, phys, 0, g).unwrap();
    m.set_access(&[MemAccessDesc::read_write(d0), MemAccessDesc::read_write(d1)])
        .unwrap();
    assert_eq!(
        m.access(MemLocation::device(d0)).unwrap(),
        MemAccessFlags::READWRITE
    );
    let stream = Stream::new(&ctx0, StreamFlags::NON_BLOCKING).unwrap();
    write_pattern_on(&ctx0, &stream, &mut m, 121);
    assert_eq!(m.to_vec().unwrap(), pattern(121, m.len()));
    assert_eq!(
        m.allocation().properties().unwrap().location(),
        MemLocation::device(d1)
    );
}

#[gpu_test]
fn a_pool_of_gpu0_used_from_gpu1() {
    let ctx0 = gpu_or_skip!();
    let ctx1 = two_gpus(&ctx0);
    let (d0, d1) = (ctx0.device(), ctx1.device());
    if !d1.can_access_peer(d0).unwrap() {
        skip("device 1 cannot access device 0");
    }
    let pool = MemPool::new(d0).unwrap();
    assert_eq!(
        pool.access(MemLocation::device(d1)).unwrap(),
        MemAccessFlags::NONE
    );
    pool.set_access(&[MemAccessDesc::read_write(d1)]).unwrap();
    assert_eq!(
        pool.access(MemLocation::device(d1)).unwrap(),
        MemAccessFlags::READWRITE
    );
    // Allocated from GPU 0's pool on a stream of GPU 1, written by a kernel on GPU 1.
    let stream1 = Stream::new(&ctx1, StreamFlags::NON_BLOCKING).unwrap();
    let mut buf = pool.alloc_async::<u32>(&stream1, 1 << 18).unwrap();
    write_pattern_on(&ctx1, &stream1, &mut buf, 131);
    assert_eq!(buf.to_vec().unwrap(), pattern(131, 1 << 18));
    assert!(pool.used_mem_current().unwrap() >= 1 << 20);
    drop(buf);
    stream1.synchronize().unwrap();
    pool.set_access(&[MemAccessDesc::none(d1)]).unwrap();
    assert_eq!(
        pool.access(MemLocation::device(d1)).unwrap(),
        MemAccessFlags::NONE
    );
}

#[cfg(unix)]
#[gpu_test]
fn ipc_memory_of_gpu1_opened_by_a_process_on_gpu0() {
    if let Some(mut chan) = child_role("ipc_gpu1") {
        let ctx0 = gpu_or_skip!();
        let h = IpcMemHandle::from_bytes(chan.recv_64().unwrap());
        let n = chan.recv_u64().unwrap() as usize;
        // SAFETY: the parent frees the allocation only after this process has finished.
        let mut mem =
            unsafe { h.open::<u32>(&ctx0, n, IpcMemFlags::LAZY_ENABLE_PEER_ACCESS) }.unwrap();
        assert_eq!(mem.to_vec().unwrap(), pattern(141, n), "GPU 1's data");
        let stream = Stream::new(&ctx0, StreamFlags::NON_BLOCKING).unwrap();
        write_pattern_on(&ctx0, &stream, &mut mem, 142);
        chan.send(b"written").unwrap();
        return;
    }
    let ctx0 = gpu_or_skip!();
    let ctx1 = two_gpus(&ctx0);
    let n = 1 << 18;
    let buf = DeviceBuffer::from_slice(&ctx1, &pattern(141, n)).unwrap();
    let (mut child, mut chan) = spawn_child("ipc_gpu1");
    let r = chan.send(&buf.ipc_handle().unwrap().to_bytes());
    child.check(r, "send the handle");
    let r = chan.send_u64(n as u64);
    child.check(r, "send the length");
    let r = chan.recv();
    assert_eq!(child.check(r, "wait for the child"), b"written");
    assert_eq!(buf.to_vec().unwrap(), pattern(142, n));
    child.finish();
}
