//! GPU tests: entry_point (typed and untyped cuGetProcAddress lookups, the lazily resolved
//! functions).

use std::ffi::CStr;

use cuda_driver::entry_point::{self, pfn, proc_address, EntryPoint, Lazy, Pfn};
use cuda_driver::handle::Handle;
use cuda_driver::{sys, types::ProcAddressFlags, types::ProcAddressStatus, Error, Stream};

/// The driver's version as cuDriverGetVersion reports it (12080 for 12.8).
fn driver() -> i32 {
    let (major, minor) = cuda_driver::driver_version().unwrap();
    (major * 1000 + minor * 10) as i32
}

#[gpu_test]
fn typed_lookup_is_callable() {
    let _ctx = gpu_or_skip!();
    let get_version = entry_point::get::<pfn::cuDriverGetVersion_v2020>().unwrap();
    let mut v = -1;
    // SAFETY: cuDriverGetVersion writes one int.
    let r = unsafe { get_version(&mut v) };
    assert_eq!(r, sys::CUDA_SUCCESS);
    assert_eq!(v, driver());
    assert!(
        v >= 12000,
        "cuda-driver supports drivers from CUDA 12.0 on, got {v}"
    );

    // The cached form finds the same function.
    static GET_VERSION: Lazy<pfn::cuDriverGetVersion_v2020> = Lazy::new();
    let cached = GET_VERSION.get().unwrap();
    assert_eq!(cached as usize, get_version as usize);
    assert_eq!(GET_VERSION.get().unwrap() as usize, get_version as usize);
}

#[gpu_test]
fn typed_lookup_matches_the_untyped_one() {
    let _ctx = gpu_or_skip!();
    let typed = entry_point::get::<pfn::cuMemAlloc_v3020>().unwrap();
    let untyped = proc_address(c"cuMemAlloc", 3020, ProcAddressFlags::LEGACY_STREAM).unwrap();
    assert_eq!(typed as usize, untyped.as_ptr() as usize);
    // The unversioned marker is the newest ABI.
    let newest = entry_point::get::<pfn::cuMemAlloc>().unwrap();
    assert_eq!(newest as usize, typed as usize);
}

#[gpu_test]
fn explicit_versions_give_the_two_abis() {
    let _ctx = gpu_or_skip!();
    let v1 = entry_point::get::<pfn::cuStreamBeginCapture_v10000>().unwrap();
    let v2 = entry_point::get::<pfn::cuStreamBeginCapture_v10010>().unwrap();
    assert_ne!(v1 as usize, v2 as usize);
    let by_name = proc_address(
        c"cuStreamBeginCapture",
        10010,
        ProcAddressFlags::LEGACY_STREAM,
    )
    .unwrap();
    assert_eq!(by_name.as_ptr() as usize, v2 as usize);
}

#[gpu_test]
fn per_thread_and_legacy_flavours_differ() {
    let ctx = gpu_or_skip!();
    let legacy = entry_point::get::<pfn::cuLaunchKernel_v4000>().unwrap();
    let per_thread = entry_point::get::<pfn::cuLaunchKernel_v7000_ptsz>().unwrap();
    assert_ne!(legacy as usize, per_thread as usize);
    assert_eq!(
        <pfn::cuLaunchKernel_v7000_ptsz as EntryPoint>::FLAGS,
        ProcAddressFlags::PER_THREAD_DEFAULT_STREAM
    );
    let by_flag = |flags| {
        proc_address(c"cuLaunchKernel", 7000, flags)
            .unwrap()
            .as_ptr() as usize
    };
    assert_eq!(by_flag(ProcAddressFlags::LEGACY_STREAM), legacy as usize);
    assert_eq!(
        by_flag(ProcAddressFlags::PER_THREAD_DEFAULT_STREAM),
        per_thread as usize
    );
    // DEFAULT follows the crate's feature, like cuda.h follows
    // CUDA_API_PER_THREAD_DEFAULT_STREAM.
    let expected = if entry_point::CRATE_FLAGS == ProcAddressFlags::PER_THREAD_DEFAULT_STREAM {
        per_thread as usize
    } else {
        legacy as usize
    };
    assert_eq!(by_flag(ProcAddressFlags::DEFAULT), expected);

    // The per-thread flavour of cuStreamSynchronize works on this thread's default stream.
    let sync_ptsz = entry_point::get::<pfn::cuStreamSynchronize_v7000_ptsz>().unwrap();
    let stream = Stream::per_thread(&ctx);
    // No operation leaves a context current: push it for the raw call below.
    let _current = ctx.push().unwrap();
    // SAFETY: CU_STREAM_PER_THREAD is a valid stream handle of the current context.
    assert_eq!(unsafe { sync_ptsz(stream.as_raw()) }, sys::CUDA_SUCCESS);
}

#[gpu_test]
fn version_not_sufficient_says_so() {
    let _ctx = gpu_or_skip!();
    // cuLibraryLoadData exists since CUDA 12.0, every supported driver has it, but not at 11.0.
    let e = proc_address(c"cuLibraryLoadData", 11000, ProcAddressFlags::DEFAULT).unwrap_err();
    match &e {
        Error::EntryPoint {
            symbol,
            version,
            status,
        } => {
            assert_eq!(symbol, "cuLibraryLoadData");
            assert_eq!(*version, 11000);
            assert_eq!(*status, ProcAddressStatus::VERSION_NOT_SUFFICIENT);
        }
        other => panic!("expected Error::EntryPoint, got {other:?}"),
    }
    let s = e.to_string();
    assert!(
        s.contains("the driver has `cuLibraryLoadData`, but not at CUDA 11.0"),
        "{s}"
    );
    assert!(s.contains("VERSION_NOT_SUFFICIENT"), "{s}");
    // At 12.0 it is there.
    assert!(entry_point::get::<pfn::cuLibraryLoadData_v12000>().is_ok());
}

#[gpu_test]
fn missing_symbol_says_so() {
    let _ctx = gpu_or_skip!();
    let e = proc_address(c"cuNoSuchFunction", driver(), ProcAddressFlags::DEFAULT).unwrap_err();
    match &e {
        Error::EntryPoint { symbol, status, .. } => {
            assert_eq!(symbol, "cuNoSuchFunction");
            assert_eq!(*status, ProcAddressStatus::SYMBOL_NOT_FOUND);
        }
        other => panic!("expected Error::EntryPoint, got {other:?}"),
    }
    let s = e.to_string();
    assert!(s.contains("no symbol `cuNoSuchFunction`"), "{s}");
    assert!(s.contains("SYMBOL_NOT_FOUND"), "{s}");
}

/// `cuDriverGetVersion` as if a future CUDA had introduced it: newer than any driver.
enum FutureDriverGetVersion {}

// SAFETY: the type is cudaTypedefs.h's typedef of cuDriverGetVersion, whose ABI has not
// changed; the version is only there to be refused.
unsafe impl EntryPoint for FutureDriverGetVersion {
    type Pfn = <sys::PFN_cuDriverGetVersion_v2020 as Pfn>::Fn;
    const SYMBOL: &'static CStr = c"cuDriverGetVersion";
    const VERSION: i32 = 99990;
    const FLAGS: ProcAddressFlags = ProcAddressFlags::LEGACY_STREAM;
}

#[gpu_test]
fn newer_than_the_driver_is_unsupported() {
    let _ctx = gpu_or_skip!();
    match entry_point::get::<FutureDriverGetVersion>() {
        Err(Error::Unsupported {
            function,
            needs,
            driver: d,
        }) => {
            assert_eq!(function, "cuDriverGetVersion");
            assert_eq!(needs, 99990);
            assert_eq!(d, driver());
        }
        other => panic!(
            "expected Error::Unsupported, got {:?}",
            other.map(|f| f as usize)
        ),
    }
}

#[gpu_test]
fn lazily_resolved_functions_resolve_on_new_enough_drivers() {
    let _ctx = gpu_or_skip!();
    let driver = driver();
    let all = entry_point::lazy_functions();
    assert!(all.iter().any(|f| f.name() == "cuKernelGetParamInfo"));
    for f in all {
        match f.resolve() {
            Ok(()) => assert!(
                f.version() <= driver,
                "{} resolved on a CUDA {driver} driver but needs {}",
                f.name(),
                f.version()
            ),
            Err(Error::Unsupported {
                function,
                needs,
                driver: d,
            }) => {
                assert!(f.version() > driver, "{} is in CUDA {driver}", f.name());
                assert_eq!(function, f.symbol().to_str().unwrap());
                assert_eq!((needs, d), (f.version(), driver));
            }
            Err(e) => panic!("{}: {e}", f.name()),
        }
        // The result is cached: the second call agrees.
        assert_eq!(f.resolve().is_ok(), f.version() <= driver);
    }
}
