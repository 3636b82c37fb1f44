//! The CUDA sample memMapIPCDrv with the safe API: virtual memory shared between two
//! processes through a POSIX file descriptor. The parent creates exportable physical memory
//! (cuMemCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), maps it, fills it and exports
//! it (cuMemExportToShareableHandle); the descriptor crosses to the child over a Unix socket
//! (SCM_RIGHTS, through the crate's IpcSocket); the child imports it
//! (cuMemImportFromShareableHandle), maps it into its own address range, checks the parent's
//! data and adds to every element with a kernel; the parent verifies the result.
//!
//! Run: `cargo run -p cuda-driver-examples --example mem_map_ipc_drv` (Linux)

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    unix::main()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("mem_map_ipc_drv: needs POSIX file descriptors and Unix sockets (Linux)");
    std::process::ExitCode::SUCCESS
}

#[cfg(unix)]
mod unix {
    use std::process::ExitCode;
    use std::sync::Arc;

    use cuda_driver::prelude::*;
    use cuda_driver::{
        memory::vmm::AddressRange, memory::vmm::AllocationProps, memory::vmm::PhysicalAllocation,
        types::DeviceAttribute, types::MemAllocationHandleType, types::StreamFlags, Device,
        LaunchConfig, Module, Stream,
    };
    use cuda_driver_examples::ipc::{connect_to_parent, spawn_self, Peer};
    use cuda_driver_examples::{check, ptx, run_example, Failure};

    const ADD: u32 = 7;

    pub fn main() -> ExitCode {
        run_example(|| match connect_to_parent()? {
            Some(parent) => child(parent),
            None => parent(),
        })
    }

    fn parent() -> Result<(), Failure> {
        let dev = Device::get(0)?;
        check!(
            dev.attribute(DeviceAttribute::VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)? != 0
                && dev.attribute(DeviceAttribute::HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)?
                    != 0,
            "device 0 cannot share virtual memory through file descriptors"
        );
        let ctx = dev.primary_context()?;
        let props = AllocationProps::device(dev)
            .with_handle_types(MemAllocationHandleType::POSIX_FILE_DESCRIPTOR);
        let size = props.recommended_granularity()?;
        let phys = Arc::new(PhysicalAllocation::new(&ctx, size, &props)?);
        let range = AddressRange::reserve(&ctx, size, 0)?;
        // Read-write for `dev` as soon as it is mapped (cuMemMap + cuMemSetAccess).
        let mut mem = range.map::<u32>(0, phys.clone(), 0, size)?;
        let data: Vec<u32> = (0..mem.len() as u32).collect();
        mem.copy_from_host(&data)?;
        ctx.synchronize()?;

        let (child, mut peer) = spawn_self()?;
        // cuMemExportToShareableHandle, then the fd (SCM_RIGHTS) with the size it lacks.
        peer.0.send_allocation(&phys)?;
        let reply = peer.recv()?;
        check!(reply == b"done", "the child answered {reply:?}");
        child.wait()?;

        let back = mem.to_vec()?;
        if let Some(i) = (0..back.len()).find(|&i| back[i] != data[i] + ADD) {
            return Err(format!(
                "element {i}: expected {} after the child's kernel, found {}",
                data[i] + ADD,
                back[i]
            )
            .into());
        }
        println!(
            "memMapIPCDrv: {size} bytes shared with a child process through a file descriptor; \
             its kernel's {} writes all seen",
            back.len()
        );
        Ok(())
    }

    fn child(mut parent: Peer) -> Result<(), Failure> {
        let dev = Device::get(0)?;
        let ctx = dev.primary_context()?;
        // The fd and size, imported (cuMemImportFromShareableHandle); the fd is closed.
        let phys = parent.0.recv_allocation(&ctx)?;
        let size = phys.size().ok_or("the allocation's size did not come")?;
        let range = AddressRange::reserve(&ctx, size, 0)?;
        let mut mem = range.map::<u32>(0, Arc::new(phys), 0, size)?;
        let seen = mem.to_vec()?;
        check!(
            seen.iter().enumerate().all(|(i, &x)| x == i as u32),
            "the child does not see the parent's data"
        );

        let module = Module::load_data(&ctx, ptx::VMM_KERNELS)?;
        let add = module.function("add_u32")?;
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
        let n = i32::try_from(mem.len())?;
        // SAFETY: add_u32(unsigned*, unsigned, int) matches the arguments and touches only the
        // first n words of the mapping; the stream is synchronised before the mapping is dropped.
        unsafe {
            add.launch(
                &stream,
                &LaunchConfig::for_num_elems(mem.len())?,
                (mem.as_view_mut(), &ADD, &n),
            )?
        };
        stream.synchronize()?;
        parent.send(b"done")?;
        Ok(())
    }
}
