//! The CUDA sample vectorAddMMAP with the safe API: three vectors whose physical memory is
//! striped over every device that can reach device 0's memory (cuMemCreate on each device,
//! with no context on it: `PhysicalAllocation::on_device`), mapped contiguously into one
//! reserved address range per vector (cuMemAddressReserve, cuMemMap), readable and writable
//! from all those devices through one cuMemSetAccess over each whole range: the safe
//! `MultiMapping::striped`, one owner and one view per vector. VecAdd runs on device 0 and
//! every element is verified. With one GPU each vector is striped over several allocations of
//! that device.
//!
//! Run: `cargo run -p cuda-driver-examples --example vector_add_mmap`

use std::process::ExitCode;

use cuda_driver::prelude::*;
use cuda_driver::{
    memory::vmm::MultiMapping, types::DeviceAttribute, types::StreamFlags, Device, LaunchConfig,
    Module, Stream,
};
use cuda_driver_examples::{check, ptx, run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

fn run() -> Result<(), Failure> {
    let n = 50_000usize;
    let h_a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let h_b: Vec<f32> = (0..n).map(|i| (n - i) as f32 * 0.25).collect();

    let dev0 = Device::get(0)?;
    check!(
        dev0.attribute(DeviceAttribute::VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)? != 0,
        "device 0 does not support virtual memory management"
    );
    // Device 0 and every device with peer access both ways and VMM support back the vectors
    // (device 0 twice when it is alone: several allocations of one device); all of them may
    // read and write them.
    let mut devices = vec![dev0];
    for d in Device::all()?.into_iter().skip(1) {
        if dev0.can_access_peer(d)?
            && d.can_access_peer(dev0)?
            && d.attribute(DeviceAttribute::VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)? != 0
        {
            devices.push(d);
        }
    }
    let backing = if devices.len() == 1 {
        vec![dev0, dev0]
    } else {
        devices.clone()
    };
    // The only context: device 0's, where the kernel runs.
    let ctx = dev0.primary_context()?;
    let mut a = MultiMapping::<f32>::striped(&ctx, n, &backing, &devices)?;
    let mut b = MultiMapping::<f32>::striped(&ctx, n, &backing, &devices)?;
    let mut c = MultiMapping::<f32>::striped(&ctx, n, &backing, &devices)?;
    a.copy_from_host(&h_a)?;
    b.copy_from_host(&h_b)?;

    let module = Module::load_data(&ctx, ptx::VMM_KERNELS)?;
    let vec_add = module.function("vec_add")?;
    let cfg = LaunchConfig::for_num_elems(n)?;
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
    let n_param = i32::try_from(n)?;
    // SAFETY: vec_add(const float*, const float*, float*, int) matches the arguments; the
    // three vectors hold n floats and the kernel skips i >= n.
    unsafe {
        vec_add.launch(
            &stream,
            &cfg,
            (a.as_view(), b.as_view(), c.as_view_mut(), &n_param),
        )?
    };
    stream.synchronize()?;

    let h_c = c.to_vec()?;
    if let Some(i) = (0..n).find(|&i| h_c[i] != h_a[i] + h_b[i]) {
        return Err(format!(
            "element {i}: {} + {} = {}, but the device computed {}",
            h_a[i],
            h_b[i],
            h_a[i] + h_b[i],
            h_c[i]
        )
        .into());
    }
    let stripe = a.pieces().next().map_or(0, |(_, bytes, _)| bytes);
    println!(
        "vectorAddMMAP: {n} elements striped over {} device(s) in {} stripes of {stripe} \
         bytes each, all correct",
        devices.len(),
        a.piece_count() + b.piece_count() + c.piece_count()
    );
    Ok(())
}
