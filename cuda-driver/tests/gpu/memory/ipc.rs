//! GPU tests across processes: legacy IPC of memory and events, bad IPC handles, the IPC
//! leak test. Each multi-process test re-executes this binary as a child (see child.rs): the
//! child writes through the imported memory, the parent verifies.

use cuda_driver::memory::vmm::VmmError;
use cuda_driver::prelude::*;
use cuda_driver::{
    memory::IpcEventHandle, memory::IpcMemHandle, types::EventFlags, types::IpcMemFlags,
    types::StreamFlags, DeviceBuffer, Error, Event, Stream,
};

use crate::child::{child_role, open_fds, pattern, spawn_child};
use crate::vmm::write_pattern_on;

const N: usize = 1 << 20;

#[gpu_test]
fn bad_ipc_handles_are_errors_and_the_context_stays_usable() {
    let ctx = gpu_or_skip!();
    let usable = || {
        let b = DeviceBuffer::from_slice(&ctx, &pattern(1, 64)).unwrap();
        assert_eq!(b.to_vec().unwrap(), pattern(1, 64));
    };
    // Random bytes.
    let random: Vec<u8> = crate::common::xorshift32(16, 99)
        .flat_map(u32::to_le_bytes)
        .collect();
    let h = IpcMemHandle::from_bytes(random.clone().try_into().unwrap());
    // SAFETY: refused by the driver (random bytes): nothing is opened.
    let e = unsafe { h.open::<u32>(&ctx, 16, IpcMemFlags::LAZY_ENABLE_PEER_ACCESS) }.unwrap_err();
    assert!(e.code().is_some(), "{e:?}");
    usable();
    let e = IpcEventHandle::from_bytes(random.try_into().unwrap())
        .open(&ctx)
        .unwrap_err();
    assert!(e.code().is_some(), "{e:?}");
    usable();
    // A handle of this process, opened in this process.
    let buf = DeviceBuffer::<u32>::new(&ctx, 1024).unwrap();
    let h = buf.ipc_handle().unwrap();
    assert_eq!(IpcMemHandle::from_bytes(h.to_bytes()), h);
    // SAFETY: refused by the driver (a handle of this process): nothing is opened.
    let e = unsafe { h.open::<u32>(&ctx, 1024, IpcMemFlags::empty()) }.unwrap_err();
    assert!(e.code().is_some(), "{e:?}");
    usable();
    // The handle of a freed allocation.
    drop(buf);
    // SAFETY: refused by the driver: nothing is opened.
    assert!(unsafe { h.open::<u32>(&ctx, 1024, IpcMemFlags::empty()) }.is_err());
    usable();
    // An event without INTERPROCESS has no handle.
    let ev = Event::new(&ctx, EventFlags::DISABLE_TIMING).unwrap();
    assert!(ev.ipc_handle().is_err());
    let ev = Event::new(&ctx, EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING).unwrap();
    let eh = ev.ipc_handle().unwrap();
    assert_eq!(IpcEventHandle::from_bytes(eh.to_bytes()), eh);
    usable();
}

#[gpu_test]
fn legacy_ipc_memory_and_events_across_processes() {
    if let Some(mut chan) = child_role("legacy_ipc") {
        let ctx = gpu_or_skip!();
        let mem_h = IpcMemHandle::from_bytes(chan.recv_64().unwrap());
        let ev_h = IpcEventHandle::from_bytes(chan.recv_64().unwrap());
        let n = chan.recv_u64().unwrap() as usize;
        // More than the allocation holds: refused, and the handle is closed again.
        // SAFETY: refused (too long): the handle is closed again at once.
        let e =
            unsafe { mem_h.open::<u32>(&ctx, n + (4 << 20), IpcMemFlags::LAZY_ENABLE_PEER_ACCESS) }
                .unwrap_err();
        assert!(
            matches!(e, Error::Vmm(VmmError::SharedAllocationTooSmall { .. })),
            "{e:?}"
        );
        // SAFETY: the parent frees the allocation only after this process has finished.
        let mut mem =
            unsafe { mem_h.open::<u32>(&ctx, n, IpcMemFlags::LAZY_ENABLE_PEER_ACCESS) }.unwrap();
        assert_eq!(mem.to_vec().unwrap(), pattern(61, n), "the parent's data");
        let ev = ev_h.open(&ctx).unwrap();
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
        write_pattern_on(&ctx, &stream, &mut mem, 62);
        // Once more, asynchronously: the parent waits for it through the shared event.
        mem.memset_async(0u32, &stream).unwrap();
        let module = cuda_driver::Module::load_data(&ctx, crate::child::VMM_KERNELS).unwrap();
        let f = module.function("write_pattern").unwrap();
        let cfg = cuda_driver::LaunchConfig::for_num_elems(n).unwrap();
        let (seed, count) = (63u32, n as i32);
        // SAFETY: write_pattern(unsigned*, unsigned, int) over the n opened words; the memory
        // stays open until the parent has waited on the event and said so.
        unsafe { f.launch(&stream, &cfg, (mem.as_view_mut(), &seed, &count)) }.unwrap();
        ev.record(&stream).unwrap();
        chan.send(b"recorded").unwrap();
        assert_eq!(chan.recv().unwrap(), b"seen");
        stream.synchronize().unwrap();
        return;
    }
    let ctx = gpu_or_skip!();
    let buf = DeviceBuffer::from_slice(&ctx, &pattern(61, N)).unwrap();
    let ev = Event::new(&ctx, EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING).unwrap();
    let (mut child, mut chan) = spawn_child("legacy_ipc");
    let r = chan.send(&buf.ipc_handle().unwrap().to_bytes());
    child.check(r, "send the memory handle");
    let r = chan.send(&ev.ipc_handle().unwrap().to_bytes());
    child.check(r, "send the event handle");
    let r = chan.send_u64(N as u64);
    child.check(r, "send the length");
    let r = chan.recv();
    assert_eq!(child.check(r, "wait for the child's record"), b"recorded");
    // The child's kernel may still run: the shared event orders the read after it.
    ev.synchronize().unwrap();
    assert_eq!(buf.to_vec().unwrap(), pattern(63, N));
    let r = chan.send(b"seen");
    child.check(r, "release the child");
    child.finish();
}

#[gpu_test]
fn a_thousand_ipc_open_close_cycles_leak_nothing() {
    if let Some(mut chan) = child_role("ipc_leak") {
        let ctx = gpu_or_skip!();
        let h = IpcMemHandle::from_bytes(chan.recv_64().unwrap());
        let n = chan.recv_u64().unwrap() as usize;
        let cycle = || {
            // SAFETY: the parent keeps the allocation until this process is done.
            let m =
                unsafe { h.open::<u32>(&ctx, n, IpcMemFlags::LAZY_ENABLE_PEER_ACCESS) }.unwrap();
            assert_ne!(m.as_raw(), 0);
        };
        cycle();
        let (free0, _) = ctx.mem_info().unwrap();
        let fds0 = open_fds();
        for _ in 0..1000 {
            cycle();
        }
        let (free1, _) = ctx.mem_info().unwrap();
        let fds1 = open_fds();
        // SAFETY: as above.
        let m = unsafe { h.open::<u32>(&ctx, n, IpcMemFlags::LAZY_ENABLE_PEER_ACCESS) }.unwrap();
        assert_eq!(m.to_vec().unwrap(), pattern(91, n));
        assert!(
            free1 + (16 << 20) >= free0,
            "free device memory fell from {free0} to {free1}"
        );
        assert!(fds1 <= fds0 + 2, "open fds went from {fds0} to {fds1}");
        chan.send(b"done").unwrap();
        return;
    }
    let ctx = gpu_exclusive_or_skip!();
    let buf = DeviceBuffer::from_slice(&ctx, &pattern(91, N)).unwrap();
    let (mut child, mut chan) = spawn_child("ipc_leak");
    let r = chan.send(&buf.ipc_handle().unwrap().to_bytes());
    child.check(r, "send the handle");
    let r = chan.send_u64(N as u64);
    child.check(r, "send the length");
    let r = chan.recv();
    assert_eq!(child.check(r, "wait for the child"), b"done");
    child.finish();
}

/// A pipe: (read end, write end).
#[cfg(unix)]
fn pipe() -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: writes two descriptors, owned by the values built next.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fresh descriptors from pipe2, owned here.
    unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    }
}

/// Whether every copy of a pipe's write end is closed (the read end sees end-of-file).
#[cfg(unix)]
fn all_writers_closed(mut r: std::fs::File) -> bool {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    // SAFETY: sets O_NONBLOCK on a descriptor owned by `r`.
    unsafe { libc::fcntl(r.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    matches!(r.read(&mut [0u8; 1]), Ok(0))
}

/// Garbage over the crate's IPC socket: a descriptor that is no CUDA export, messages of the
/// wrong kind, an allocation made without POSIX fd handles. Each is an error (the driver's,
/// for the descriptor), never undefined behaviour; no descriptor is leaked; the context stays
/// usable.
#[cfg(unix)]
#[gpu_test]
fn an_ipc_socket_refuses_garbage_and_descriptors_that_are_no_cuda_export() {
    use std::os::fd::AsFd;
    use std::sync::Arc;

    use cuda_driver::memory::pool::MemPool;
    use cuda_driver::memory::vmm::{AddressRange, AllocationProps, PhysicalAllocation};
    use cuda_driver::memory::{IpcSocket, IpcSocketError};
    let ctx = gpu_or_skip!();
    let props = crate::vmm::fd_exportable_props(&ctx);
    let dev = ctx.device();
    let (mut a, mut b) = IpcSocket::pair().unwrap();
    // A pipe sent where a pool or an allocation is expected: the wrong kind, closed.
    let (r, w) = pipe();
    a.send_fd(w.as_fd(), b"pool").unwrap();
    assert!(matches!(
        b.recv_pool(dev),
        Err(IpcSocketError::UnexpectedKind { .. })
    ));
    a.send_fd(w.as_fd(), b"allocation").unwrap();
    assert!(matches!(
        b.recv_allocation(&ctx),
        Err(IpcSocketError::UnexpectedKind { .. })
    ));
    // The driver asked to import a pipe: its error.
    let e = MemPool::import_fd(dev, w.as_fd()).unwrap_err();
    assert!(e.code().is_some(), "{e:?}");
    let e = PhysicalAllocation::import_fd(&ctx, w.as_fd()).unwrap_err();
    assert!(e.code().is_some(), "{e:?}");
    drop(w);
    assert!(all_writers_closed(r), "a refused descriptor was leaked");
    // Garbage bytes where a pool pointer is expected.
    a.send_bytes(&[0xff; 72]).unwrap();
    assert!(matches!(
        b.recv_pool_pointer(),
        Err(IpcSocketError::UnexpectedKind { .. })
    ));
    // An allocation without a POSIX fd handle type cannot be sent: the driver's error,
    // nothing sent (the next message is the one after it).
    let size = props.minimum_granularity().unwrap();
    let plain = PhysicalAllocation::new(&ctx, size, &AllocationProps::device(dev)).unwrap();
    assert!(matches!(
        a.send_allocation(&plain),
        Err(IpcSocketError::Cuda(_))
    ));
    // Of unknown size (a handle retained from a mapping): refused before anything is
    // exported.
    let exportable = Arc::new(PhysicalAllocation::new(&ctx, size, &props).unwrap());
    let range = AddressRange::reserve(&ctx, size, 0).unwrap();
    let m = range.map::<u32>(0, exportable, 0, size).unwrap();
    let retained = m.retain_allocation().unwrap();
    assert_eq!(retained.size(), None);
    assert!(matches!(
        a.send_allocation(&retained),
        Err(IpcSocketError::Cuda(Error::InvalidArgument(_)))
    ));
    // Nothing was sent by the refused calls: the next message is the next one received.
    a.send_bytes(b"next").unwrap();
    assert_eq!(b.recv_bytes().unwrap(), b"next");
    drop((retained, m));
    let b2 = DeviceBuffer::from_slice(&ctx, &pattern(5, 64)).unwrap();
    assert_eq!(b2.to_vec().unwrap(), pattern(5, 64));
}

/// An allocation sent over the crate's IPC socket from another thread, its sender's handle
/// dropped before the receiver imports it: the descriptor in flight keeps the memory
/// importable, or the import is the driver's error; the imported memory maps and works.
#[cfg(unix)]
#[gpu_test]
fn an_allocation_sent_from_another_thread_and_dropped_by_the_sender_is_imported_or_refused() {
    use std::sync::Arc;

    use cuda_driver::memory::vmm::{AddressRange, PhysicalAllocation};
    use cuda_driver::memory::{IpcSocket, IpcSocketError};
    let ctx = gpu_or_skip!();
    let props = crate::vmm::fd_exportable_props(&ctx);
    let size = props.minimum_granularity().unwrap() * 2;
    let (a, mut b) = IpcSocket::pair().unwrap();
    let sender = {
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let mut a = a;
            let phys = PhysicalAllocation::new(&ctx, size, &props).unwrap();
            a.send_allocation(&phys).unwrap();
            drop(phys); // before the receiver imports it
            a
        })
    };
    let a = sender.join().unwrap();
    match b.recv_allocation(&ctx) {
        Ok(phys) => {
            assert_eq!(phys.size(), Some(size));
            let range = AddressRange::reserve(&ctx, size, 0).unwrap();
            let mut m = range.map::<u32>(0, Arc::new(phys), 0, size).unwrap();
            let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
            write_pattern_on(&ctx, &stream, &mut m, 91);
            assert_eq!(m.to_vec().unwrap(), pattern(91, m.len()));
        }
        Err(IpcSocketError::Cuda(e)) => assert!(e.code().is_some(), "{e:?}"),
        Err(e) => panic!("{e:?}"),
    }
    drop(a);
}
