//! GPU tests: functions (Execution Control): attributes (shared memory, carveout, clusters),
//! cache configuration, explicit loading, and parameter layouts read from PTX and from the
//! image, checked against the driver's.

use cuda_driver::prelude::*;
use cuda_driver::types::SharedCarveout;
use cuda_driver::{
    jit::JitOptions, launch::LaunchAttributes, module::FunctionRef, module::Linker,
    types::CacheConfig, types::DeviceAttribute, types::FunctionAttribute,
    types::FunctionLoadingState, types::JitInputType, types::StreamFlags, Context, DeviceBuffer,
    Error, Function, LaunchConfig, Library, Module, Stream,
};

use crate::common::{note, skip, TEST_KERNELS};
use crate::launch::{CLUSTER, PARAM_BUFFER};
use crate::module::{LINK_HELPER, LINK_MAIN};

#[gpu_test]
fn functions_load_explicitly_and_take_attributes() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let m = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let fns = match m.functions() {
        Err(e @ Error::Unsupported { .. }) => skip(format!("enumerating functions: {e}")),
        r => r.unwrap(),
    };
    assert_eq!(fns.len(), m.function_count().unwrap());
    assert!(fns.len() >= 10, "{}", fns.len());
    note(format!(
        "module loading mode: {:?}",
        cuda_driver::module::module_loading_mode()
    ));
    for f in &fns {
        let before = f.loading_state().unwrap();
        assert!(
            before == FunctionLoadingState::LOADED || before == FunctionLoadingState::UNLOADED,
            "{before:?}"
        );
        f.load().unwrap();
        assert_eq!(f.loading_state().unwrap(), FunctionLoadingState::LOADED);
        assert_eq!(f.module_raw().unwrap(), m.as_raw());
    }

    // The shared-memory carveout preference reads back.
    let f = m.function("fill_u32").unwrap();
    assert_eq!(f.module_raw().unwrap(), m.as_raw());
    for pct in [
        SharedCarveout::MAX_L1.as_raw(),
        50,
        SharedCarveout::MAX_SHARED.as_raw(),
    ] {
        f.set_attribute(FunctionAttribute::PREFERRED_SHARED_MEMORY_CARVEOUT, pct)
            .unwrap();
        assert_eq!(
            f.attribute(FunctionAttribute::PREFERRED_SHARED_MEMORY_CARVEOUT)
                .unwrap(),
            pct
        );
    }
    // Beyond 100 percent: an error, the function still launches.
    assert!(f
        .set_attribute(FunctionAttribute::PREFERRED_SHARED_MEMORY_CARVEOUT, 150)
        .is_err());
    f.set_attribute(
        FunctionAttribute::PREFERRED_SHARED_MEMORY_CARVEOUT,
        SharedCarveout::DEFAULT.as_raw(),
    )
    .unwrap();
    f.set_cache_config(CacheConfig::PREFER_SHARED).unwrap();
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let mut out = DeviceBuffer::<u32>::zeroed(&ctx, 256).unwrap();
    let (v, n) = (8u32, 256i32);
    // SAFETY: fill_u32(unsigned*, unsigned, int) writes out[i] for i < n = out's length.
    unsafe { f.launch(&s, &LaunchConfig::new(1, 256), (out.as_view_mut(), &v, &n)) }.unwrap();
    s.synchronize().unwrap();
    assert!(out.to_vec().unwrap().iter().all(|&x| x == 8));

    // The same through a library's kernel, per device.
    let lib = Library::load_data(TEST_KERNELS).unwrap();
    let k = lib.kernel("fill_u32").unwrap();
    k.set_attribute(FunctionAttribute::PREFERRED_SHARED_MEMORY_CARVEOUT, 25, dev)
        .unwrap();
    assert_eq!(
        k.attribute(FunctionAttribute::PREFERRED_SHARED_MEMORY_CARVEOUT, dev)
            .unwrap(),
        25
    );
    k.set_cache_config(CacheConfig::PREFER_L1, dev).unwrap();
    k.set_cache_config(CacheConfig::PREFER_NONE, dev).unwrap();
}

#[gpu_test]
fn cluster_attributes_of_a_kernel() {
    let ctx = gpu_or_skip!();
    let (major, minor) = ctx.device().compute_capability().unwrap();
    if major < 9 {
        skip(format!(
            "compute capability {major}.{minor} < 9.0 has no thread-block clusters"
        ));
    }
    let s = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let run = |f: &cuda_driver::Function, blocks: u32, attrs: &LaunchAttributes| {
        let mut out = DeviceBuffer::from_slice(&ctx, &vec![u32::MAX; 4 * blocks as usize])?;
        // SAFETY: cluster_info(unsigned* out) writes out[4b..4b + 4] for each block b of a
        // one-dimensional grid of `blocks` blocks; out holds 4 * blocks words.
        unsafe {
            f.launch_ex(
                &s,
                &LaunchConfig::new(blocks, 32),
                attrs,
                (out.as_view_mut(),),
            )
        }?;
        s.synchronize()?;
        out.to_vec()
    };
    let check = |out: &[u32], k: u32| {
        for b in 0..out.len() as u32 / 4 {
            let w = &out[4 * b as usize..4 * b as usize + 4];
            assert_eq!(
                w,
                [b % k, k, b / k, b - b % k],
                "block {b}, clusters of {k}"
            );
        }
    };

    // Non-portable cluster sizes: allowed once the attribute says so.
    let m = Module::load_data(&ctx, CLUSTER).unwrap();
    let f = m.function("cluster_info").unwrap();
    f.set_attribute(FunctionAttribute::NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
        .unwrap();
    assert_eq!(
        f.attribute(FunctionAttribute::NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
            .unwrap(),
        1
    );
    let largest = f
        .max_potential_cluster_size(&LaunchConfig::new(32, 32), &LaunchAttributes::new())
        .unwrap();
    if largest > 8 {
        let out = run(
            &f,
            2 * largest,
            &LaunchAttributes::new().cluster_dim(largest),
        )
        .unwrap();
        check(&out, largest);
    } else {
        note(format!(
            "largest cluster {largest}: no non-portable size to launch"
        ));
    }
    f.set_attribute(FunctionAttribute::NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0)
        .unwrap();
    assert_eq!(
        f.attribute(FunctionAttribute::NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
            .unwrap(),
        0
    );

    // A required cluster shape, set at run time, reads back and shapes plain launches.
    let m2 = Module::load_data(&ctx, CLUSTER).unwrap();
    let g = m2.function("cluster_info").unwrap();
    for (a, v) in [
        (FunctionAttribute::REQUIRED_CLUSTER_WIDTH, 2),
        (FunctionAttribute::REQUIRED_CLUSTER_HEIGHT, 1),
        (FunctionAttribute::REQUIRED_CLUSTER_DEPTH, 1),
    ] {
        g.set_attribute(a, v).unwrap();
        assert_eq!(g.attribute(a).unwrap(), v, "{a:?}");
    }
    let out = run(&g, 8, &LaunchAttributes::new()).unwrap();
    check(&out, 2);
}

/// Every PTX file the tests load, by name.
const ALL_PTX: &[(&str, &str)] = &[
    ("bench", include_str!("../../ptx/bench.ptx")),
    ("cluster", include_str!("../../ptx/cluster.ptx")),
    ("graph_kernels", include_str!("../../ptx/graph_kernels.ptx")),
    ("green", include_str!("../../ptx/green.ptx")),
    ("library", include_str!("../../ptx/library.ptx")),
    ("param_buffer", PARAM_BUFFER),
    ("streams", include_str!("../../ptx/streams.ptx")),
    ("test_kernels", TEST_KERNELS),
    ("tex_kernels", include_str!("../../ptx/tex_kernels.ptx")),
    ("tma_kernels", include_str!("../../ptx/tma_kernels.ptx")),
    ("vector_add", include_str!("../../ptx/vector_add.ptx")),
    ("vmm_kernels", include_str!("../../ptx/vmm_kernels.ptx")),
];

#[gpu_test]
fn parameter_layouts_read_from_ptx_are_the_drivers() {
    let ctx = gpu_or_skip!();
    let (major, _) = ctx.device().compute_capability().unwrap();
    // The loads below read the layouts from the PTX (no test sets the source back: whichever
    // test sets it, the loads after it read the image).
    cuda_driver::launch::set_param_source(cuda_driver::launch::ParamSource::Image);
    let mut compared = 0;
    for &(file, ptx) in ALL_PTX {
        if file == "tma_kernels" && major < 9 {
            continue;
        }
        // The checked load reads the layouts from the PTX; the unchecked one knows nothing,
        // so its functions ask the driver (cuFuncGetParamInfo).
        let checked = Module::load_data(&ctx, ptx).unwrap();
        let text = std::ffi::CString::new(ptx).unwrap();
        // SAFETY: NUL-terminated PTX text, alive for the call.
        let probed = unsafe { Module::load_data_unchecked(&ctx, text.as_ptr().cast()) }.unwrap();
        let functions = match probed.functions() {
            Err(Error::Unsupported { .. }) => {
                crate::common::skip("cuModuleEnumerateFunctions needs CUDA 12.4")
            }
            f => f.unwrap(),
        };
        assert!(!functions.is_empty(), "{file}");
        for f in functions {
            let name = f.name().to_owned();
            let from_driver = f.params().unwrap().expect("the driver reports parameters");
            let from_ptx = checked.function(&name).unwrap();
            assert_eq!(
                from_ptx.params().unwrap().expect("read from the PTX"),
                from_driver,
                "{file}: {name}"
            );
            compared += 1;
        }
    }
    crate::common::note(format!("{compared} kernels' parameter layouts compared"));
}

/// The kernels of `test_kernels.cu`.
const KERNELS: [&str; 10] = [
    "add_u32",
    "fill_u32",
    "grid_sync_sum",
    "increment_counter",
    "read_globals",
    "saxpy",
    "sleep_ns",
    "struct_param",
    "use_dyn_shared",
    "vector_types",
];

/// The parameter list as the driver reports it when probed (no count known).
fn probed(f: &Function, ctx: &Context) -> Vec<cuda_driver::launch::ParamInfo> {
    // SAFETY: `f`'s module stays loaded while `f` lives, which outlives the borrow.
    let raw = unsafe { FunctionRef::borrow_raw(f.as_raw(), ctx) };
    raw.params().unwrap().unwrap().to_vec()
}

#[gpu_test]
fn parameter_counts_from_the_image_match_the_driver() {
    let ctx = gpu_or_skip!();
    // Read at load (see parameter_layouts_read_from_ptx_are_the_drivers).
    cuda_driver::launch::set_param_source(cuda_driver::launch::ParamSource::Image);
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    if module
        .function("saxpy")
        .unwrap()
        .params()
        .unwrap()
        .is_none()
    {
        crate::common::skip("no cuFuncGetParamInfo (a driver older than CUDA 12.4)");
    }
    let library = Library::load_data(TEST_KERNELS).unwrap();
    for name in KERNELS {
        let f = module.function(name).unwrap();
        let counted = f.params().unwrap().unwrap().to_vec();
        assert_eq!(counted, probed(&f, &ctx), "{name}");
        let k = library.kernel(name).unwrap();
        assert_eq!(k.params().unwrap().unwrap(), &counted[..], "{name}");
    }
    // A linked cubin: the counts come from its .nv.info sections.
    let mut linker = Linker::new(&ctx, &JitOptions::new()).unwrap();
    linker
        .add_data(JitInputType::PTX, LINK_MAIN, "link_main.ptx")
        .unwrap();
    linker
        .add_data(JitInputType::PTX, LINK_HELPER, "link_helper.ptx")
        .unwrap();
    let cubin = linker.complete().unwrap();
    let m = Module::load_data(&ctx, &cubin).unwrap();
    let f = m.function("scale_add").unwrap();
    let counted = f.params().unwrap().unwrap().to_vec();
    assert_eq!(counted.len(), 4);
    assert_eq!(counted, probed(&f, &ctx));
    let k = Library::load_data(&cubin)
        .unwrap()
        .kernel("scale_add")
        .unwrap();
    assert_eq!(k.params().unwrap().unwrap(), &counted[..]);
}

#[gpu_test]
fn function_attributes() {
    let ctx = gpu_or_skip!();
    let dev = ctx.device();
    let module = Module::load_data(&ctx, TEST_KERNELS).unwrap();
    let f = module.function("use_dyn_shared").unwrap();
    assert_eq!(f.name(), "use_dyn_shared");
    let max_threads = f.max_threads_per_block().unwrap();
    assert!((64..=1024).contains(&max_threads), "{max_threads}");
    assert!(f.num_registers().unwrap() > 0);
    assert_eq!(f.static_shared_bytes().unwrap(), 0);
    let ptx_version = f.attribute(FunctionAttribute::PTX_VERSION).unwrap();
    assert!(
        ptx_version >= 75,
        "compiled for compute_75 or later: {ptx_version}"
    );

    // Opt in to more dynamic shared memory than the default 48 KiB where the device has it.
    let optin = dev
        .attribute(DeviceAttribute::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .unwrap();
    let want = optin.min(64 * 1024);
    f.set_attribute(FunctionAttribute::MAX_DYNAMIC_SHARED_SIZE_BYTES, want)
        .unwrap();
    assert_eq!(
        f.attribute(FunctionAttribute::MAX_DYNAMIC_SHARED_SIZE_BYTES)
            .unwrap(),
        want
    );
    f.set_cache_config(CacheConfig::PREFER_SHARED).unwrap();

    // use_dyn_shared with all of that memory: out[t] = n - 1 - t.
    let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING).unwrap();
    let n = 512usize;
    let mut out = DeviceBuffer::from_slice(&ctx, &vec![-1.0f32; n]).unwrap();
    let cfg = LaunchConfig::new(1, n as u32).with_shared_mem(want as u32);
    // SAFETY: use_dyn_shared(float* out, int n) with one block of n threads and at least
    // n * 4 bytes of dynamic shared memory writes out[0..n).
    unsafe { f.launch(&stream, &cfg, (out.as_view_mut(), &(n as i32))) }.unwrap();
    stream.synchronize().unwrap();
    let expected: Vec<f32> = (0..n).map(|t| (n - 1 - t) as f32).collect();
    assert_eq!(out.to_vec().unwrap(), expected);
}
