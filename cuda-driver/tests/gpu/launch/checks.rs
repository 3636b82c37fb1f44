//! GPU tests: what a checked launch refuses before launching: stream-ordered memory used on
//! another stream (also through a packed buffer), a Function on another context's stream.

use cuda_driver::prelude::*;
use cuda_driver::{
    launch::LaunchAttributes, launch::ParamBuffer, types::ContextFlags, Context, DeviceBuffer,
    Error, LaunchConfig, Library, Module,
};

use crate::common::{stream, TEST_KERNELS};
use crate::launch::PARAM_BUFFER;

#[gpu_test]
fn stream_ordered_arguments_launch_only_on_their_stream() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let f = module.function("fill_u32").unwrap();
    let k = Library::load_data(TEST_KERNELS)
        .unwrap()
        .kernel("fill_u32")
        .unwrap();
    let (home, other) = (stream(&ctx), stream(&ctx));
    let n = 1024usize;
    let mut buf = DeviceBuffer::<u32>::new_async(&home, n).unwrap();
    buf.memset_async(0u32, &home).unwrap();
    let cfg = LaunchConfig::for_num_elems(n).unwrap();
    let (v, len) = (5u32, n as i32);

    let refused = |r: cuda_driver::Result<()>| match r {
        Err(Error::StreamMismatch {
            expected, found, ..
        }) => {
            assert_eq!(expected, home.as_raw() as usize);
            assert_eq!(found, other.as_raw() as usize);
        }
        r => panic!("expected StreamMismatch, got {r:?}"),
    };
    // SAFETY: fill_u32(unsigned* out, unsigned v, int n) writes out[0..n) of a buffer of n
    // elements (so does every launch below); the refused ones launch nothing.
    refused(unsafe { f.launch(&other, &cfg, (buf.as_view_mut(), &v, &len)) });
    // SAFETY: as above.
    refused(unsafe { k.launch(&other, &cfg, (buf.as_view_mut(), &v, &len)) });
    // SAFETY: as above.
    refused(unsafe {
        f.launch_ex(
            &other,
            &cfg,
            &LaunchAttributes::new(),
            (buf.as_view_mut(), &v, &len),
        )
    });
    // A shared view is ordered on its stream too.
    // SAFETY: as above.
    refused(unsafe { f.launch(&other, &cfg, (buf.as_view(), &v, &len)) });
    // On its own stream it runs.
    // SAFETY: as above.
    unsafe { f.launch(&home, &cfg, (buf.as_view_mut(), &v, &len)) }.unwrap();
    // SAFETY: as above.
    unsafe { k.launch(&home, &cfg, (buf.as_view_mut(), &(v + 1), &len)) }.unwrap();
    // Moved to the other stream, it launches there.
    let mut buf = buf.move_to_stream(&other).unwrap();
    // SAFETY: as above.
    unsafe { f.launch(&other, &cfg, (buf.as_view_mut(), &(v + 2), &len)) }.unwrap();
    let mut back = vec![0u32; n];
    buf.copy_to_host(&mut back).unwrap();
    assert_eq!(back, vec![v + 2; n]);

    // Memory that is not stream-ordered launches on any stream of its context.
    let mut plain = DeviceBuffer::<u32>::new(&ctx, n).unwrap();
    // SAFETY: as above.
    unsafe { f.launch(&other, &cfg, (plain.as_view_mut(), &v, &len)) }.unwrap();
    // SAFETY: as above.
    unsafe { f.launch(&home, &cfg, (plain.as_view_mut(), &v, &len)) }.unwrap();
    home.synchronize().unwrap();
    other.synchronize().unwrap();
    assert_eq!(plain.to_vec().unwrap(), vec![v; n]);
}

#[gpu_test]
fn packed_buffers_keep_the_stream_order_of_their_views() {
    let ctx = gpu_or_skip!();
    let f = Module::load_data(&ctx, PARAM_BUFFER)
        .unwrap()
        .function("param_buffer")
        .unwrap();
    let (home, other) = (stream(&ctx), stream(&ctx));
    let mut out = DeviceBuffer::<f32>::new_async(&home, 11).unwrap();
    let mut params = ParamBuffer::new();
    params
        .push(1i32)
        .unwrap()
        .push(cuda_driver::vector::Float4::default())
        .unwrap()
        .push(1i8)
        .unwrap()
        .push(1.0f32)
        .unwrap()
        .push_arg(out.as_view_mut())
        .unwrap()
        .push(cuda_driver::vector::Float2::default())
        .unwrap();
    // SAFETY: refused before launching.
    let e = unsafe { f.launch_packed(&other, &LaunchConfig::new(1, 1), &params) }.unwrap_err();
    assert!(matches!(e, Error::StreamMismatch { .. }), "{e}");
    // SAFETY: param_buffer's six parameters in its layout; out holds 11 floats.
    unsafe { f.launch_packed(&home, &LaunchConfig::new(1, 1), &params) }.unwrap();
    let _ = params;
    let mut words = [0.0f32; 11];
    out.copy_to_host(&mut words).unwrap();
    assert_eq!(words[0].to_bits(), 1);
}

#[gpu_test]
fn a_function_launches_only_on_streams_of_its_context() {
    let primary = gpu_exclusive_or_skip!();
    // A created context takes much device memory: not while memory-level tests run.
    let f = Module::load_data(&primary, TEST_KERNELS)
        .unwrap()
        .function("fill_u32")
        .unwrap();
    let other = Context::new(primary.device(), ContextFlags::SCHED_AUTO).unwrap();
    let s = stream(&other);
    let mut out = DeviceBuffer::<u32>::new(&other, 32).unwrap();
    // SAFETY: refused before launching.
    let e = unsafe {
        f.launch(
            &s,
            &LaunchConfig::new(1, 32),
            (out.as_view_mut(), &1u32, &32i32),
        )
    }
    .unwrap_err();
    match e {
        Error::ContextMismatch {
            expected, found, ..
        } => {
            assert_eq!(expected, primary.as_raw() as usize);
            assert_eq!(found, other.as_raw() as usize);
        }
        e => panic!("expected ContextMismatch, got {e:?}"),
    }
    // The same kernel as a library Kernel launches in any context.
    let k = Library::load_data(TEST_KERNELS)
        .unwrap()
        .kernel("fill_u32")
        .unwrap();
    // SAFETY: fill_u32 writes out[0..32).
    unsafe {
        k.launch(
            &s,
            &LaunchConfig::new(1, 32),
            (out.as_view_mut(), &9u32, &32i32),
        )
    }
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![9; 32]);
    drop((s, out));
}
