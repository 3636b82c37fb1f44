//! The CUDA sample simpleIPC with the safe API: legacy IPC of device memory and of an event.
//! The parent allocates and fills a buffer, creates an interprocess event, and sends both
//! handles (cuIpcGetMemHandle, cuIpcGetEventHandle: 64 plain bytes each) to a child process;
//! the child opens them (cuIpcOpenMemHandle, cuIpcOpenEventHandle), checks the data, queues a
//! kernel that rewrites it and records the shared event; the parent waits on the event and
//! verifies every element.
//!
//! Run: `cargo run -p cuda-driver-examples --example simple_ipc` (Linux)

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    unix::main()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("simple_ipc: needs POSIX file descriptors and Unix sockets (Linux)");
    std::process::ExitCode::SUCCESS
}

#[cfg(unix)]
mod unix {
    use std::process::ExitCode;

    use cuda_driver::prelude::*;
    use cuda_driver::{
        memory::IpcEventHandle, memory::IpcMemHandle, types::EventFlags, types::IpcMemFlags,
        types::StreamFlags, Device, DeviceBuffer, Event, LaunchConfig, Module, Stream,
    };
    use cuda_driver_examples::ipc::{connect_to_parent, spawn_self, Peer};
    use cuda_driver_examples::{check, ptx, run_example, Failure};

    const N: usize = 1 << 20;
    const ADD: u32 = 1000;

    pub fn main() -> ExitCode {
        run_example(|| match connect_to_parent()? {
            Some(parent) => child(parent),
            None => parent(),
        })
    }

    fn parent() -> Result<(), Failure> {
        let ctx = Device::get(0)?.primary_context()?;
        let data: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(3)).collect();
        let buf = DeviceBuffer::from_slice(&ctx, &data)?;
        let event = Event::new(&ctx, EventFlags::INTERPROCESS | EventFlags::DISABLE_TIMING)?;

        let (child, mut peer) = spawn_self()?;
        peer.send(&buf.ipc_handle()?.to_bytes())?;
        peer.send(&event.ipc_handle()?.to_bytes())?;
        let reply = peer.recv()?;
        check!(reply == b"recorded", "the child answered {reply:?}");
        // The child's kernel may still be running: the shared event completes after it.
        event.synchronize()?;
        peer.send(b"seen")?;
        child.wait()?;

        let back = buf.to_vec()?;
        if let Some(i) = (0..N).find(|&i| back[i] != data[i].wrapping_add(ADD)) {
            return Err(format!(
                "element {i}: expected {}, found {}",
                data[i].wrapping_add(ADD),
                back[i]
            )
            .into());
        }
        println!(
            "simpleIPC: a child process rewrote {N} elements through IPC handles, all correct"
        );
        Ok(())
    }

    fn child(mut parent: Peer) -> Result<(), Failure> {
        let ctx = Device::get(0)?.primary_context()?;
        let mem_handle = IpcMemHandle::from_bytes(parent.recv_array::<64>()?);
        let event_handle = IpcEventHandle::from_bytes(parent.recv_array::<64>()?);
        // SAFETY: the parent frees the allocation only after this process has exited.
        let mut mem =
            unsafe { mem_handle.open::<u32>(&ctx, N, IpcMemFlags::LAZY_ENABLE_PEER_ACCESS) }?;
        let event = event_handle.open(&ctx)?;
        let seen = mem.to_vec()?;
        check!(
            (0..N).all(|i| seen[i] == (i as u32).wrapping_mul(3)),
            "the child does not see the parent's data"
        );

        let module = Module::load_data(&ctx, ptx::VMM_KERNELS)?;
        let add = module.function("add_u32")?;
        let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
        let n = i32::try_from(N)?;
        // SAFETY: add_u32(unsigned*, unsigned, int) matches the arguments and touches only the
        // N opened words; the memory stays open until the parent has waited on the event.
        unsafe {
            add.launch(
                &stream,
                &LaunchConfig::for_num_elems(N)?,
                (mem.as_view_mut(), &ADD, &n),
            )?
        };
        event.record(&stream)?;
        parent.send(b"recorded")?;
        let reply = parent.recv()?;
        check!(reply == b"seen", "the parent answered {reply:?}");
        stream.synchronize()?;
        Ok(())
    }
}
