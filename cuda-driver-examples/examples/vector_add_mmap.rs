//! The CUDA sample vectorAddMMAP with the safe API: three vectors whose physical memory is
//! striped over every device that can reach device 0's memory (cuMemCreate on each), mapped
//! contiguously into one reserved address range per vector (cuMemAddressReserve, cuMemMap),
//! readable and writable from all those devices (cuMemSetAccess: `map` grants device 0, the
//! ranges' device, and `set_access` the others); VecAdd runs on device 0 and every element is
//! verified. With one GPU the stripe is one allocation.
//!
//! Run: `cargo run -p cuda-driver-examples --example vector_add_mmap`

use std::process::ExitCode;
use std::sync::Arc;

use cuda_driver::prelude::*;
use cuda_driver::{
    memory::vmm::AddressRange, memory::vmm::AllocationProps, memory::vmm::Mapping,
    memory::vmm::MemAccessDesc, memory::vmm::PhysicalAllocation, types::DeviceAttribute,
    types::StreamFlags, Context, Device, DeviceSliceMut, LaunchConfig, Module, Stream,
};
use cuda_driver_examples::{check, ptx, run_example, Failure};

fn main() -> ExitCode {
    run_example(run)
}

/// A vector of `bytes` bytes striped over `devices`: the range, then its mappings.
fn reserve(ctx: &Context, bytes: usize) -> Result<AddressRange, Failure> {
    Ok(AddressRange::reserve(ctx, bytes, 0)?)
}

fn map_striped<'r>(
    range: &'r AddressRange,
    contexts: &[Context],
    stripe: usize,
    access: &[MemAccessDesc],
) -> Result<Vec<Mapping<'r, u8>>, Failure> {
    let mut maps = Vec::new();
    for (i, ctx) in contexts.iter().enumerate() {
        let props = AllocationProps::device(ctx.device());
        let phys = Arc::new(PhysicalAllocation::new(ctx, stripe, &props)?);
        // Read-write for the range's device (device 0) as soon as it is mapped.
        let mut m = range.map::<u8>(i * stripe, phys, 0, stripe)?;
        if !access.is_empty() {
            m.set_access(access)?;
        }
        maps.push(m);
    }
    Ok(maps)
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
    // Device 0 and every device with peer access both ways and VMM support.
    let mut devices = vec![dev0];
    for d in Device::all()?.into_iter().skip(1) {
        if dev0.can_access_peer(d)?
            && d.can_access_peer(dev0)?
            && d.attribute(DeviceAttribute::VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)? != 0
        {
            devices.push(d);
        }
    }
    let contexts = devices
        .iter()
        .map(|d| d.primary_context())
        .collect::<Result<Vec<_>, _>>()?;
    let ctx = &contexts[0];
    // Device 0 has read-write access to every mapping from the start; the others are granted
    // it.
    let access: Vec<MemAccessDesc> = devices[1..]
        .iter()
        .map(|&d| MemAccessDesc::read_write(d))
        .collect();

    // The stripe: the bytes per device, a multiple of every device's granularity.
    let mut g = 1;
    for &d in &devices {
        g = g.max(AllocationProps::device(d).minimum_granularity()?);
    }
    let per_device = (n * 4).div_ceil(devices.len());
    let stripe = per_device.div_ceil(g) * g;
    let bytes = stripe * devices.len();

    let (ra, rb, rc) = (
        reserve(ctx, bytes)?,
        reserve(ctx, bytes)?,
        reserve(ctx, bytes)?,
    );
    let ma = map_striped(&ra, &contexts, stripe, &access)?;
    let mb = map_striped(&rb, &contexts, stripe, &access)?;
    let mc = map_striped(&rc, &contexts, stripe, &access)?;

    // One view over each whole range (the stripes are contiguous).
    // SAFETY: each range is mapped over `bytes >= n * 4` bytes by the mappings above, which
    // live until the end of this function, readable and writable from device 0; f32 is
    // 4-aligned (the ranges are granularity-aligned); the host touches the memory only
    // through these views, and reads C after synchronising the stream.
    let (mut a, mut b, mut c) = unsafe {
        (
            DeviceSliceMut::<f32>::from_raw(ra.as_raw(), n, ctx),
            DeviceSliceMut::<f32>::from_raw(rb.as_raw(), n, ctx),
            DeviceSliceMut::<f32>::from_raw(rc.as_raw(), n, ctx),
        )
    };
    a.copy_from_host(&h_a)?;
    b.copy_from_host(&h_b)?;

    let module = Module::load_data(ctx, ptx::VMM_KERNELS)?;
    let vec_add = module.function("vec_add")?;
    let cfg = LaunchConfig::for_num_elems(n)?;
    let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING)?;
    let n_param = i32::try_from(n)?;
    // SAFETY: vec_add(const float*, const float*, float*, int) matches the arguments; the
    // three vectors hold n floats and the kernel skips i >= n.
    unsafe {
        vec_add.launch(
            &stream,
            &cfg,
            (a.as_view(), b.as_view(), c.reborrow(), &n_param),
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
    println!(
        "vectorAddMMAP: {n} elements striped over {} device(s) in {} stripes of {stripe} \
         bytes each, all correct",
        devices.len(),
        ma.len() + mb.len() + mc.len()
    );
    Ok(())
}
