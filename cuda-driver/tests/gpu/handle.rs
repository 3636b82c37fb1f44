//! GPU tests: the one raw-handle API (`cuda_driver::handle`): `from_raw(into_raw(x))` for every
//! owner kind gives back an owner that works and releases its handle once, and a borrowed
//! function (`FunctionRef`) launches through the same checked launch as a `Function`.

use std::fmt::Debug;

use cuda_driver::launch::LaunchError;
use cuda_driver::prelude::*;
use cuda_driver::{
    graph::{Graph, UserObject},
    jit::JitOptions,
    memory::pool::MemPool,
    memory::vmm::{AllocationProps, PhysicalAllocation},
    memory::Array,
    module::{FunctionRef, Linker},
    texture::{ResourceDesc, TextureDesc, TextureObject},
    types::{Array3DFlags, ContextFlags, EventFlags, GraphInstantiateFlags, StreamFlags},
    Context, DeviceBuffer, Error, Event, LaunchConfig, Library, Module, Stream,
};

use crate::common::TEST_KERNELS;

/// Gives `owner` up and takes it back: the raw handle is the same, and the new owner is the
/// one that releases it.
fn round_trip<T: OwnedHandle>(owner: T, parent: T::Parent<'_>) -> T
where
    T::Raw: PartialEq + Debug,
{
    let raw = owner.as_raw();
    let given_up = owner.into_raw();
    assert_eq!(given_up, raw);
    // SAFETY: `given_up` is the live handle an owner of this kind in `parent` just gave up;
    // nothing else releases it.
    let back = unsafe { T::from_raw(given_up, parent) };
    assert_eq!(back.as_raw(), raw);
    back
}

/// Launches `fill_u32(out, v, n)` with `launch` and checks every element.
fn check_fill(ctx: &Context, launch: impl FnOnce(&Stream, &LaunchConfig, &mut DeviceBuffer<u32>)) {
    let stream = Stream::new(ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut out = DeviceBuffer::<u32>::from_slice(ctx, &[1; 256]).unwrap();
    launch(&stream, &LaunchConfig::new(1, 256), &mut out);
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![0xC0FFEE; 256]);
}

#[gpu_test]
fn streams_and_events_round_trip_and_still_work() {
    let ctx = gpu_or_skip!();
    let stream = round_trip(Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap(), &ctx);
    let event = round_trip(Event::new(&ctx, EventFlags::DEFAULT).unwrap(), &ctx);
    event.record(&stream).unwrap();
    event.synchronize().unwrap();
    stream.synchronize().unwrap();
}

#[gpu_test]
fn code_handles_round_trip_and_launch() {
    let ctx = gpu_or_skip!();
    let module = round_trip(Module::load_data(&ctx, TEST_KERNELS).unwrap(), &ctx);
    let f = round_trip(module.function("fill_u32").unwrap(), &module);
    drop(module); // the function keeps it loaded
    check_fill(&ctx, |s, cfg, out| {
        // SAFETY: fill_u32(unsigned* out, unsigned v, int n) writes out[0..n).
        unsafe { f.launch(s, cfg, (out.as_view_mut(), &0xC0FFEEu32, &256i32)) }.unwrap();
    });

    let library = round_trip(Library::load_data(TEST_KERNELS).unwrap(), ());
    let k = round_trip(library.kernel("fill_u32").unwrap(), &library);
    drop(library); // the kernel keeps it loaded
    check_fill(&ctx, |s, cfg, out| {
        // SAFETY: as above.
        unsafe { k.launch(s, cfg, (out.as_view_mut(), &0xC0FFEEu32, &256i32)) }.unwrap();
    });

    let linker = round_trip(Linker::new(&ctx, &JitOptions::new()).unwrap(), &ctx);
    drop(linker);
}

#[gpu_test]
fn a_borrowed_function_launches_through_the_checked_launch() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let owned = module.function("fill_u32").unwrap();
    // SAFETY: a function of `module`, which stays loaded (and alive) while `f` is used.
    let f = unsafe { FunctionRef::borrow_raw(owned.as_raw(), &ctx) };
    assert_eq!(f.as_raw(), owned.as_raw());
    check_fill(&ctx, |s, cfg, out| {
        // SAFETY: fill_u32(unsigned* out, unsigned v, int n) writes out[0..n).
        unsafe { f.launch(s, cfg, (out.as_view_mut(), &0xC0FFEEu32, &256i32)) }.unwrap();
    });
    // Its launches are checked as a Function's: a wrong argument count launches nothing.
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&ctx, 4).unwrap();
    // SAFETY: refused before the launch (one argument missing).
    let r = unsafe {
        f.launch(
            &stream,
            &LaunchConfig::new(1, 4),
            (out.as_view_mut(), &1u32),
        )
    };
    if f.params().unwrap().is_some() {
        assert!(
            matches!(r, Err(Error::Launch(LaunchError::ArgumentCount { .. }))),
            "{r:?}"
        );
    }
    // Attributes and occupancy are the owned function's.
    assert_eq!(f.num_registers().unwrap(), owned.num_registers().unwrap());
    assert_eq!(
        f.max_active_blocks_per_multiprocessor(256, 0).unwrap(),
        owned.max_active_blocks_per_multiprocessor(256, 0).unwrap()
    );
    // The borrowed form of an owned function launches too.
    let borrowed = owned.as_function_ref();
    check_fill(&ctx, |s, cfg, out| {
        // SAFETY: as above.
        unsafe { borrowed.launch(s, cfg, (out.as_view_mut(), &0xC0FFEEu32, &256i32)) }.unwrap();
    });
}

#[gpu_test]
fn a_created_context_round_trips_and_its_objects_still_work() {
    let ctx = gpu_exclusive_or_skip!();
    let dev = ctx.device();
    let own = round_trip(Context::new(dev, ContextFlags::SCHED_AUTO).unwrap(), dev);
    let buf = DeviceBuffer::from_slice(&own, &[1.5f32, 2.5]).unwrap();
    assert_eq!(buf.to_vec().unwrap(), [1.5, 2.5]);
    assert_eq!(own.as_context_ref(), own);
}

#[gpu_test]
fn graphs_and_user_objects_round_trip() {
    let ctx = gpu_or_skip!();
    let graph = round_trip(Graph::new().unwrap(), ());
    graph.add_empty(&[]).unwrap();
    let exec = round_trip(
        graph.instantiate(GraphInstantiateFlags::empty()).unwrap(),
        (),
    );
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    exec.launch(&stream).unwrap();
    stream.synchronize().unwrap();
    let object = round_trip(UserObject::new(7u32).unwrap(), ());
    drop(object);
}

#[gpu_test]
fn arrays_textures_and_pools_round_trip() {
    let ctx = gpu_or_skip!();
    let mut arr = Array::<f32>::new_2d(&ctx, 8, 4, Array3DFlags::empty()).unwrap();
    arr.copy_from_host(&[2.0; 32]).unwrap();
    let desc = *arr.desc();
    let arr = round_trip(arr, (&ctx, desc));
    let mut back = [0.0f32; 32];
    arr.view().copy_to_host(&mut back).unwrap();
    assert_eq!(back, [2.0; 32]);
    {
        let tex =
            TextureObject::new(&ResourceDesc::array(&arr), &TextureDesc::new(), None).unwrap();
        drop(round_trip(tex, &ctx));
    }
    drop(round_trip(
        MemPool::new(ctx.device()).unwrap(),
        ctx.device(),
    ));

    let props = AllocationProps::device(ctx.device());
    if let Ok(g) = props.minimum_granularity() {
        let phys = PhysicalAllocation::new(&ctx, g, &props).unwrap();
        let size = phys.size();
        drop(round_trip(phys, (size, &ctx)));
    }
}
