//! Safe, zero-overhead bindings to the CUDA Driver API.
//!
//! `cuda-driver` is the idiomatic layer over [`cuda_driver_sys`] (cuda.h in Rust): devices,
//! contexts and the per-thread context stack, streams and events, device, page-locked and
//! managed memory, modules, the JIT linker, context-independent libraries and kernels, and
//! checked kernel launches. Every wrapper names the driver call it wraps and gives access to
//! the raw handle (`as_raw`), so a program can drop down to `cuda_driver_sys` at any point.
//!
//! * **Errors** carry the failing driver call and the caller's location
//!   (`cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory) at src/main.rs:12:5`);
//!   distinct failures are distinct [`Error`] variants, and [`Error::is_sticky`] tells the
//!   errors after which a context is lost for good.
//! * **One memory model**: every kind of memory is an owner that hands out typed views
//!   ([`DeviceSlice`], [`DeviceSliceMut`]); copies, memsets and kernel arguments are
//!   implemented once, on the views, and every owner gets them through [`DeviceMemory`] and
//!   [`DeviceMemoryMut`] (import [`prelude`]). Memory freed in stream order
//!   ([`AsyncDeviceBuffer`]) is used on its own stream only, which safe code cannot break.
//! * **Contexts**: no operation changes the caller's context stack. Each object makes its
//!   context current for the span of one operation when it is not (pushing and popping it);
//!   when it is, the whole cost is one `cuCtxGetCurrent`. Launches and stream-ordered
//!   allocations and frees on a created stream cost not even that: the driver takes their
//!   context from the stream.
//! * **Ownership**: every handle is released in `Drop`, which never panics (failures go to
//!   the [`log`](https://docs.rs/log) crate and [`drop_error_count`]); objects keep their
//!   context alive, work from any thread, and are never released inside a host function.
//!   Owned and borrowed handles are different types ([`Stream`] / [`StreamRef`],
//!   [`MemPool`] / [`MemPoolRef`]); every handle has `as_raw`, `from_raw(raw, ..)` and
//!   `into_raw`.
//! * **Speed**: the launch and copy paths allocate nothing; launches check arguments against
//!   the kernel's parameter list read once from the driver.
//!
//! # Your first program
//!
//! Multiplies 1000 floats by 3 on the GPU and checks them. The kernel is PTX, which the
//! driver compiles for the GPU at hand; without a GPU the program says so in one line
//! (`error: no CUDA driver found: ...`) and exits with status 1.
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! use cuda_driver::prelude::*;
//! use cuda_driver::{Device, DeviceBuffer, LaunchConfig, Module, Stream, StreamFlags};
//!
//! /// `scale(float* data, float factor, int n)`, `data[i] *= factor` for every `i < n`: what
//! /// `nvcc --ptx` makes of a three-line CUDA C kernel (its comment lines left out).
//! const SCALE_PTX: &str = "
//! .version 7.0
//! .target sm_75
//! .address_size 64
//!
//! .visible .entry scale(
//!     .param .u64 scale_param_0,
//!     .param .f32 scale_param_1,
//!     .param .u32 scale_param_2
//! )
//! {
//!     .reg .pred %p<2>;
//!     .reg .f32 %f<4>;
//!     .reg .b32 %r<6>;
//!     .reg .b64 %rd<5>;
//!
//!     ld.param.u64 %rd1, [scale_param_0];
//!     ld.param.f32 %f1, [scale_param_1];
//!     ld.param.u32 %r2, [scale_param_2];
//!     mov.u32 %r3, %ctaid.x;
//!     mov.u32 %r4, %ntid.x;
//!     mov.u32 %r5, %tid.x;
//!     mad.lo.s32 %r1, %r3, %r4, %r5;
//!     setp.ge.s32 %p1, %r1, %r2;
//!     @%p1 bra DONE;
//!     cvta.to.global.u64 %rd2, %rd1;
//!     mul.wide.s32 %rd3, %r1, 4;
//!     add.s64 %rd4, %rd2, %rd3;
//!     ld.global.f32 %f2, [%rd4];
//!     mul.f32 %f3, %f2, %f1;
//!     st.global.f32 [%rd4], %f3;
//! DONE:
//!     ret;
//! }
//! ";
//!
//! fn main() -> ExitCode {
//!     match run() {
//!         Ok(()) => ExitCode::SUCCESS,
//!         Err(e) => {
//!             eprintln!("error: {e}");
//!             ExitCode::FAILURE
//!         }
//!     }
//! }
//!
//! fn run() -> Result<(), cuda_driver::Error> {
//!     // Device 0 and its primary context (the one the CUDA runtime uses, too).
//!     let device = Device::get(0)?;
//!     let ctx = device.primary_context()?;
//!
//!     // The driver compiles the PTX for this GPU; `scale` is the kernel's entry name.
//!     let module = Module::load_data(&ctx, SCALE_PTX)?;
//!     let scale = module.function("scale")?;
//!
//!     // 1000 floats copied to device memory.
//!     let host: Vec<f32> = (0..1000).map(|i| i as f32).collect();
//!     let mut data = DeviceBuffer::from_slice(&ctx, &host)?;
//!
//!     // One thread per element, on a stream of our own.
//!     let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
//!     let cfg = LaunchConfig::for_num_elems(host.len())?;
//!     let n = host.len() as i32;
//!     // SAFETY: `scale` takes (float*, float, int), which the arguments are (the launch checks
//!     // their number and sizes against the kernel's parameters), and it writes only data[..n].
//!     unsafe { scale.launch(&stream, &cfg, (&mut data.as_view_mut(), &3.0f32, &n))? };
//!     stream.synchronize()?;
//!
//!     // Back to the host, every element checked.
//!     let result = data.to_vec()?;
//!     assert!(result.iter().zip(&host).all(|(r, h)| *r == 3.0 * h));
//!     println!("scaled {} floats on {}", result.len(), device.name()?);
//!     Ok(())
//! }
//! ```
//!
//! Driver support: any driver from CUDA 12.0 on. Functions newer than 12.0 are resolved at run
//! time (see [`entry_point`]) and return [`Error::Unsupported`] on an older driver.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

/// The `bytemuck` crate, whose [`Pod`](bytemuck::Pod) types are device memory and kernel
/// arguments as [`Pod<T>`](crate::Pod).
#[cfg(feature = "bytemuck")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytemuck")))]
pub use bytemuck;
pub use cuda_driver_sys as sys;
/// The `half` crate, whose [`f16`](half::f16) and [`bf16`](half::bf16) are [`DeviceRepr`].
pub use half;

// `#[derive(DeviceRepr)]` names the crate `::cuda_driver`, also inside it.
extern crate self as cuda_driver;

mod callback;
mod checkpoint;
mod context;
mod coredump;
mod count;
mod cstr;
mod device;
mod device_info;
pub mod entry_point;
mod error;
mod event;
pub mod external;
mod graph;
mod green;
mod image;
mod init;
mod interop;
mod jit;
mod launch;
mod library;
mod logs;
mod memory;
mod module;
mod params;
mod peer;
#[cfg(feature = "bytemuck")]
mod pod;
mod profiler;
mod release;
mod repr;
mod stream;
mod stream_attr;
mod stream_memop;
mod surface;
mod tensor_map;
mod texture;
#[rustfmt::skip]
pub mod types;
#[cfg(test)]
mod types_tests;
mod vector;

pub use callback::logger_panic_count;
pub use checkpoint::{
    checkpoint_checkpoint, checkpoint_lock, checkpoint_restore, checkpoint_restore_thread_id,
    checkpoint_state, checkpoint_unlock, ProcessState,
};
pub use context::{
    CacheConfig, Context, ContextCreateParams, ContextFlags, ContextGuard, ExecAffinityType, Limit,
    SharedMemConfig,
};
pub use coredump::{
    coredump_attribute_global, set_coredump_attribute_global, CoredumpGenerationFlags,
    CoredumpSettings, CoredumpValue,
};
pub use cuda_driver_macros::DeviceRepr;
pub use device::{Device, DeviceAttribute};
pub use device_info::{
    flush_gpudirect_rdma_writes, AtomicOperation, AtomicOperationCapability, DeviceP2PAttribute,
    FlushGPUDirectRDMAWritesScope, FlushGPUDirectRDMAWritesTarget,
};
pub use entry_point::ProcAddressFlags;
pub use error::{drop_error_count, Error, ErrorCode, ProcAddressStatus, Result};
pub use event::{Event, EventFlags, EventRecordFlags, EventWaitFlags};
pub use graph::{
    exchange_thread_capture_mode, BatchMemOp, BatchMemOpNode, Capture, CaptureInfo, CaptureMode,
    CaptureStatus, ChildGraphNode, ConditionalHandle, ConditionalNode, EdgeData, EventRecordNode,
    EventWaitNode, ExtSemSignalNode, ExtSemWaitNode, Graph, GraphAllocation,
    GraphConditionalNodeType, GraphDebugDotFlags, GraphDependencyType, GraphExec, GraphExecFlags,
    GraphExecUpdateResult, GraphInstantiateFlags, GraphMemAttribute, GraphMemory, GraphNode,
    GraphNodeType, GraphRef, HostNode, InstantiateOptions, KernelNode, MemAllocNode, MemFreeNode,
    MemcpyNode, MemsetNode, MemsetParams, UserObject,
};
pub use green::{
    DevResource, DevResourceDesc, DevResourceType, DevSmResourceSplitFlags, GreenContext,
    GreenCtxCreateFlags,
};
/// The entry points of the fuzz targets in `fuzz/`: not part of the API.
#[cfg(feature = "__fuzz")]
#[doc(hidden)]
pub use image::fuzz as __fuzz;
pub use image::ModuleImage;
pub(crate) use init::driver_version_raw;
pub use init::{driver_version, init};
pub use interop::{
    ExternalBuffer, ExternalMemory, ExternalMemoryFlags, ExternalMemoryHandleType,
    ExternalMipmappedArray, ExternalSemaphore, ExternalSemaphoreHandleType,
    ExternalSemaphoreSignalFlags, ExternalSemaphoreWaitFlags, SemaphoreValue,
};
pub use jit::{JitCacheMode, JitFallback, JitOptions, JitTarget, DEFAULT_JIT_LOG_SIZE};
pub use launch::*;
pub use library::{Kernel, Library, LibraryOptions, Managed};
pub use logs::{LogForwarder, LogLevel, LogPosition};
pub use memory::*;
pub use module::{
    module_loading_mode, Function, FunctionAttribute, FunctionLoadingState, Global, JitInputType,
    Linker, Module, ModuleLoadingMode,
};
pub use params::{argument_check, set_argument_check, ArgumentCheck, ParamInfo};
#[cfg(feature = "bytemuck")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytemuck")))]
pub use pod::Pod;
pub use profiler::ProfilerRange;
pub use release::wait_for_deferred_releases;
pub use repr::DeviceRepr;
pub use stream::{host_fn_panic_count, Stream, StreamFlags, StreamRef};
pub use stream_attr::{
    AccessPolicyWindow, AccessProperty, LaunchMemSyncDomain, SynchronizationPolicy,
};
pub use stream_memop::{
    MemOpBatch, StreamMemoryBarrierFlags, StreamWaitValueFlags, StreamWriteValueFlags,
    MAX_BATCH_MEM_OPS,
};
pub use surface::SurfaceObject;
pub use tensor_map::*;
pub use texture::{
    AddressMode, FilterMode, ResourceDesc, ResourceViewDesc, ResourceViewFormat, Resourcetype,
    TextureDesc, TextureFlags, TextureObject,
};

/// The traits most programs need in scope: the memory model's [`DeviceMemory`] and
/// [`DeviceMemoryMut`], whose methods (copies, memsets, slicing) every memory owner has.
///
/// ```
/// use cuda_driver::prelude::*;
/// ```
pub mod prelude {
    pub use crate::{DeviceMemory, DeviceMemoryMut};
}
pub use vector::*;
