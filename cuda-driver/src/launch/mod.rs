//! Launching kernels: [`LaunchConfig`], the extended attributes of `cuLaunchKernelEx`
//! ([`LaunchAttributes`]: clusters, cooperative launches, priority), arguments
//! ([`KernelArgs`]) and packed parameter buffers ([`ParamBuffer`]).
//!
//! [`Function`] (a kernel of a module in one context) and [`Kernel`] (a context-independent
//! kernel of a library) launch the same ways:
//!
//! | method | driver call | arguments checked |
//! |--------|-------------|-------------------|
//! | [`launch`](Function::launch) | `cuLaunchKernel` | count and sizes |
//! | [`launch_unchecked`](Function::launch_unchecked) | `cuLaunchKernel` | no |
//! | [`launch_ex`](Function::launch_ex) | `cuLaunchKernelEx` | count and sizes |
//! | [`launch_ex_unchecked`](Function::launch_ex_unchecked) | `cuLaunchKernelEx` | no |
//! | [`launch_packed`](Function::launch_packed) | `cuLaunchKernel` with `extra` | count, offsets and sizes |
//! | [`launch_packed_unchecked`](Function::launch_packed_unchecked) | `cuLaunchKernel` with `extra` | no |
//!
//! A checked launch compares the arguments with the kernel's parameter list, which it reads
//! once from the driver (`cuFuncGetParamInfo` / `cuKernelGetParamInfo`, CUDA 12.4) and caches
//! in the `Function` or `Kernel`; from then on the check is a few integer comparisons, with no
//! driver call and no allocation. A mismatch is [`Error::ArgumentCount`] or
//! [`Error::ArgumentSize`] and nothing is launched. On a driver older than 12.4 the parameter
//! list is unknown: the first checked launch says so once on stderr, and launches go unchecked.
//!
//! Every launch makes the stream's context current first (one `cuCtxGetCurrent` when it
//! already is) and allocates nothing: arguments are packed into an array on the stack.

mod args;
mod occupancy;
mod param_buffer;

use std::ffi::c_void;
use std::ptr;
use std::sync::{Once, OnceLock};

use cuda_driver_sys as sys;

use crate::entry_point::newer;
use crate::error::{check, Error, Result};
use crate::{ErrorCode, Function, Kernel, Stream};

pub use args::{KernelArg, KernelArgs};
pub use occupancy::BlockSizeSuggestion;
pub use param_buffer::{ParamBuffer, PARAM_BUFFER_CAPACITY, PARAM_BUFFER_MAX_PARAMS};

/// Threads per block of [`LaunchConfig::for_num_elems`].
pub const DEFAULT_BLOCK_SIZE: u32 = 256;

/// Three dimensions of a grid (in blocks), a block (in threads) or a cluster (in blocks).
///
/// ```
/// use cuda_driver::Dim3;
/// assert_eq!(Dim3::from(64), Dim3::new(64, 1, 1));
/// assert_eq!(Dim3::from((8, 4)), Dim3::new(8, 4, 1));
/// assert_eq!(Dim3::new(8, 4, 2).volume(), 64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Extent along x.
    pub x: u32,
    /// Extent along y.
    pub y: u32,
    /// Extent along z.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// `x * y * z`.
    pub const fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

impl Default for Dim3 {
    /// `(1, 1, 1)`.
    fn default() -> Self {
        Dim3::new(1, 1, 1)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3::new(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3::new(x, y, z)
    }
}

impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Self {
        Dim3::new(x, y, z)
    }
}

/// The execution configuration of a launch: grid and block dimensions and the dynamic
/// shared memory per block.
///
/// ```
/// use cuda_driver::{Dim3, LaunchConfig};
/// let cfg = LaunchConfig::for_num_elems(1000)?;
/// assert_eq!((cfg.grid, cfg.block), (Dim3::from(4), Dim3::from(256)));
/// let cfg = LaunchConfig::new((16, 16), (8, 8)).with_shared_mem(4096);
/// assert_eq!(cfg.shared_mem_bytes, 4096);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes (`sharedMemBytes`).
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// A grid of `grid` blocks of `block` threads, without dynamic shared memory.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem_bytes: 0,
        }
    }

    /// The same configuration with `bytes` of dynamic shared memory per block.
    pub const fn with_shared_mem(mut self, bytes: u32) -> LaunchConfig {
        self.shared_mem_bytes = bytes;
        self
    }

    /// One thread per element for `n` elements: blocks of 256 threads, and as many blocks as
    /// cover `n` (at least one). A grid wider than CUDA's limit of 2^31 - 1 blocks is
    /// [`Error::InvalidArgument`].
    #[track_caller]
    pub fn for_num_elems(n: usize) -> Result<LaunchConfig> {
        Self::for_num_elems_with_block(n, DEFAULT_BLOCK_SIZE)
    }

    /// One thread per element for `n` elements in blocks of `block_size` threads (at least
    /// one block).
    #[track_caller]
    pub fn for_num_elems_with_block(n: usize, block_size: u32) -> Result<LaunchConfig> {
        if block_size == 0 {
            return Err(Error::InvalidArgument("a block of 0 threads".into()));
        }
        let blocks = n.div_ceil(block_size as usize).max(1);
        match u32::try_from(blocks) {
            Ok(b) if b <= i32::MAX as u32 => Ok(LaunchConfig::new(b, block_size)),
            _ => Err(Error::InvalidArgument(format!(
                "{n} elements need {blocks} blocks of {block_size} threads, more than the \
                 grid's x dimension allows (2^31 - 1)"
            ))),
        }
    }
}

/// At most this many attributes go into one [`LaunchAttributes`].
pub const MAX_LAUNCH_ATTRIBUTES: usize = 8;

/// The extended attributes of a launch through `cuLaunchKernelEx` (`CUlaunchAttribute`), kept
/// in a fixed array on the stack.
///
/// ```
/// use cuda_driver::{Dim3, LaunchAttributes};
/// let attrs = LaunchAttributes::new().cluster_dim((2, 1, 1)).priority(-1);
/// assert_eq!(attrs.as_raw().len(), 2);
/// ```
#[derive(Clone, Copy)]
#[doc(alias = "CUlaunchAttribute")]
pub struct LaunchAttributes {
    attrs: [sys::CUlaunchAttribute; MAX_LAUNCH_ATTRIBUTES],
    len: usize,
}

impl Default for LaunchAttributes {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for LaunchAttributes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.as_raw().iter().map(|a| a.id))
            .finish()
    }
}

impl LaunchAttributes {
    /// No attributes.
    pub fn new() -> Self {
        LaunchAttributes {
            attrs: [sys::CUlaunchAttribute::default(); MAX_LAUNCH_ATTRIBUTES],
            len: 0,
        }
    }

    /// The slot for attribute `id`: its existing entry, or a new one. None when full.
    fn slot(&mut self, id: sys::CUlaunchAttributeID) -> Option<&mut sys::CUlaunchAttribute> {
        let i = match self.attrs[..self.len].iter().position(|a| a.id == id) {
            Some(i) => i,
            None if self.len < MAX_LAUNCH_ATTRIBUTES => {
                self.len += 1;
                self.len - 1
            }
            None => return None,
        };
        let slot = &mut self.attrs[i];
        *slot = sys::CUlaunchAttribute::default();
        slot.id = id;
        Some(slot)
    }

    fn set(
        mut self,
        id: sys::CUlaunchAttributeID,
        f: impl FnOnce(&mut sys::CUlaunchAttribute),
    ) -> Self {
        // The three named attributes always fit: MAX_LAUNCH_ATTRIBUTES is larger, and each
        // replaces its own earlier entry.
        if let Some(slot) = self.slot(id) {
            f(slot);
        }
        self
    }

    /// Launches the grid in thread-block clusters of `dim` blocks
    /// (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`, compute capability 9.0). The grid must be a
    /// multiple of `dim` in each dimension; clusters of more than 8 blocks need
    /// [`NON_PORTABLE_CLUSTER_SIZE_ALLOWED`](crate::FunctionAttribute::NON_PORTABLE_CLUSTER_SIZE_ALLOWED).
    #[doc(alias = "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION")]
    pub fn cluster_dim(self, dim: impl Into<Dim3>) -> Self {
        let d = dim.into();
        self.set(sys::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, |a| {
            a.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
                x: d.x,
                y: d.y,
                z: d.z,
            };
        })
    }

    /// Launches cooperatively (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`): every block is resident
    /// at once, so the kernel may synchronise the whole grid. The grid must fit on the device
    /// ([`Function::max_active_blocks_per_multiprocessor`] times the multiprocessor count).
    #[doc(alias = "CU_LAUNCH_ATTRIBUTE_COOPERATIVE")]
    pub fn cooperative(self, on: bool) -> Self {
        self.set(sys::CU_LAUNCH_ATTRIBUTE_COOPERATIVE, |a| {
            a.value.cooperative = on as i32;
        })
    }

    /// The launch's priority (`CU_LAUNCH_ATTRIBUTE_PRIORITY`), in the range of
    /// [`Context::stream_priority_range`](crate::Context::stream_priority_range); lower numbers
    /// are higher priorities.
    #[doc(alias = "CU_LAUNCH_ATTRIBUTE_PRIORITY")]
    pub fn priority(self, priority: i32) -> Self {
        self.set(sys::CU_LAUNCH_ATTRIBUTE_PRIORITY, |a| {
            a.value.priority = priority;
        })
    }

    /// Adds (or replaces) a raw attribute, for attributes without a setter. Fails with
    /// [`Error::InvalidArgument`] when [`MAX_LAUNCH_ATTRIBUTES`] are set.
    ///
    /// # Safety
    /// `attr.value` holds the field that `attr.id` reads, with a valid value (an event handle
    /// that stays alive until the launch, for example).
    pub unsafe fn with_raw(mut self, attr: sys::CUlaunchAttribute) -> Result<Self> {
        match self.slot(attr.id) {
            Some(slot) => {
                *slot = attr;
                Ok(self)
            }
            None => Err(Error::InvalidArgument(format!(
                "at most {MAX_LAUNCH_ATTRIBUTES} launch attributes"
            ))),
        }
    }

    /// The attributes set, as the driver takes them.
    #[inline]
    pub fn as_raw(&self) -> &[sys::CUlaunchAttribute] {
        &self.attrs[..self.len]
    }

    /// A `CUlaunchConfig` of `cfg` on `stream` with these attributes; it points into `self`.
    #[inline]
    pub(crate) fn raw_config(
        &self,
        cfg: &LaunchConfig,
        stream: sys::CUstream,
    ) -> sys::CUlaunchConfig {
        sys::CUlaunchConfig {
            gridDimX: cfg.grid.x,
            gridDimY: cfg.grid.y,
            gridDimZ: cfg.grid.z,
            blockDimX: cfg.block.x,
            blockDimY: cfg.block.y,
            blockDimZ: cfg.block.z,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: stream,
            attrs: if self.len == 0 {
                ptr::null_mut()
            } else {
                self.attrs.as_ptr().cast_mut()
            },
            numAttrs: self.len as u32,
        }
    }
}

/// Where a kernel parameter lives in the device-side parameter layout, as the driver reports
/// it (`cuFuncGetParamInfo`, `cuKernelGetParamInfo`) and as [`ParamBuffer`] places it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParamInfo {
    /// Offset in bytes from the start of the parameters.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// The name and parameter list of a kernel, read once from the driver and cached.
#[derive(Clone)]
pub(crate) struct LaunchMeta {
    name: OnceLock<Box<str>>,
    /// `None` inside: the driver cannot report parameters, launches go unchecked.
    params: OnceLock<Option<Box<[ParamInfo]>>>,
}

impl LaunchMeta {
    pub(crate) fn named(name: &str) -> LaunchMeta {
        LaunchMeta {
            name: OnceLock::from(Box::<str>::from(name)),
            params: OnceLock::new(),
        }
    }

    pub(crate) fn unnamed() -> LaunchMeta {
        LaunchMeta {
            name: OnceLock::new(),
            params: OnceLock::new(),
        }
    }

    /// The name if it is known without asking the driver.
    pub(crate) fn known_name(&self) -> Option<&str> {
        self.name.get().map(|s| &**s)
    }

    fn name<L: Launchable>(&self, l: &L) -> &str {
        self.name.get_or_init(|| {
            l.driver_name()
                .unwrap_or_else(|| format!("<kernel {:p}>", l.raw_function()))
                .into_boxed_str()
        })
    }

    #[inline]
    #[track_caller]
    fn params<L: Launchable>(&self, l: &L) -> Result<Option<&[ParamInfo]>> {
        match self.params.get() {
            Some(p) => Ok(p.as_deref()),
            None => self.init_params(l),
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn init_params<L: Launchable>(&self, l: &L) -> Result<Option<&[ParamInfo]>> {
        let params = match l.query_params() {
            Ok(p) => Some(p),
            Err(e) if cannot_report_params(&e) => {
                warn_unchecked_once(&e);
                None
            }
            Err(e) => return Err(e),
        };
        Ok(self.params.get_or_init(|| params).as_deref())
    }
}

fn cannot_report_params(e: &Error) -> bool {
    matches!(e, Error::Unsupported { .. }) || e.code() == Some(ErrorCode::NOT_SUPPORTED)
}

static UNCHECKED_WARNING: Once = Once::new();

#[cold]
fn warn_unchecked_once(why: &Error) {
    UNCHECKED_WARNING.call_once(|| {
        eprintln!(
            "cuda-driver: kernel arguments cannot be checked on this driver ({why}); \
             launches proceed unchecked"
        );
    });
}

/// The upper bound of the parameter index loop (the driver's parameter space is at most
/// 32764 bytes, so no kernel has more parameters).
const MAX_QUERIED_PARAMS: usize = 32768;

/// Reads a parameter list by index until the driver answers `CUDA_ERROR_INVALID_VALUE`.
#[cold]
#[track_caller]
fn read_param_list(
    call: &'static str,
    mut get: impl FnMut(usize, &mut usize, &mut usize) -> sys::CUresult,
) -> Result<Box<[ParamInfo]>> {
    let mut list = Vec::new();
    for index in 0..MAX_QUERIED_PARAMS {
        let (mut offset, mut size) = (0, 0);
        match check(get(index, &mut offset, &mut size), call) {
            Ok(()) => list.push(ParamInfo { offset, size }),
            Err(e) if e.code() == Some(ErrorCode::INVALID_VALUE) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(list.into_boxed_slice())
}

/// What the launch code needs from a [`Function`] or a [`Kernel`].
pub(crate) trait Launchable {
    /// The handle for `cuLaunchKernel` (a `CUkernel` cast to `CUfunction` for a kernel).
    fn raw_function(&self) -> sys::CUfunction;
    fn meta(&self) -> &LaunchMeta;
    fn query_params(&self) -> Result<Box<[ParamInfo]>>;
    fn driver_name(&self) -> Option<String>;
    /// Whether the kernel can launch on `stream`.
    fn check_stream(&self, stream: &Stream) -> Result<()>;
}

impl Launchable for Function {
    #[inline(always)]
    fn raw_function(&self) -> sys::CUfunction {
        self.raw
    }

    #[inline(always)]
    fn meta(&self) -> &LaunchMeta {
        &self.meta
    }

    #[track_caller]
    fn query_params(&self) -> Result<Box<[ParamInfo]>> {
        let f = newer::cuFuncGetParamInfo()?;
        let _cur = self.context().enter()?;
        read_param_list("cuFuncGetParamInfo", |i, offset, size| {
            // SAFETY: the function is alive; writes two size_t.
            unsafe { f(self.raw, i, offset, size) }
        })
    }

    fn driver_name(&self) -> Option<String> {
        let f = newer::cuFuncGetName().ok()?;
        let mut p = ptr::null();
        // SAFETY: the function is alive; writes a pointer to a NUL-terminated string that the
        // driver owns while the module is loaded.
        check(unsafe { f(&mut p, self.raw) }, "cuFuncGetName").ok()?;
        if p.is_null() {
            return None;
        }
        // SAFETY: a valid NUL-terminated string, copied at once.
        Some(
            unsafe { std::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .into_owned(),
        )
    }

    #[inline(always)]
    fn check_stream(&self, stream: &Stream) -> Result<()> {
        if stream.context().as_raw() == self.context().as_raw() {
            Ok(())
        } else {
            Err(self.wrong_context(stream))
        }
    }
}

impl Function {
    #[cold]
    #[inline(never)]
    fn wrong_context(&self, stream: &Stream) -> Error {
        Error::InvalidArgument(format!(
            "kernel `{}` belongs to context {:?} but the stream to context {:?}; a Function \
             launches only in its own context (a library Kernel launches in any)",
            self.meta.name(self),
            self.context().as_raw(),
            stream.context().as_raw()
        ))
    }
}

impl Launchable for Kernel {
    #[inline(always)]
    fn raw_function(&self) -> sys::CUfunction {
        // cuLaunchKernel, cuLaunchKernelEx and the occupancy functions take a CUkernel cast
        // to CUfunction (cuda.h: "context-less kernel").
        self.raw.cast()
    }

    #[inline(always)]
    fn meta(&self) -> &LaunchMeta {
        &self.meta
    }

    #[track_caller]
    fn query_params(&self) -> Result<Box<[ParamInfo]>> {
        let f = newer::cuKernelGetParamInfo()?;
        read_param_list("cuKernelGetParamInfo", |i, offset, size| {
            // SAFETY: the kernel's library is loaded; writes two size_t.
            unsafe { f(self.raw, i, offset, size) }
        })
    }

    fn driver_name(&self) -> Option<String> {
        crate::library::kernel_name(self.raw)
    }

    #[inline(always)]
    fn check_stream(&self, _stream: &Stream) -> Result<()> {
        Ok(())
    }
}

/// Checks argument sizes against the cached parameter list.
#[inline]
#[track_caller]
fn check_args<L: Launchable>(l: &L, sizes: &[usize]) -> Result<()> {
    if let Some(params) = l.meta().params(l)? {
        if params.len() != sizes.len() || params.iter().zip(sizes).any(|(p, &s)| p.size != s) {
            return Err(argument_error(l, params, sizes));
        }
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn argument_error<L: Launchable>(l: &L, params: &[ParamInfo], sizes: &[usize]) -> Error {
    let kernel = l.meta().name(l).to_owned();
    if params.len() != sizes.len() {
        return Error::ArgumentCount {
            kernel,
            expected: params.len(),
            actual: sizes.len(),
        };
    }
    let (index, (p, &actual)) = params
        .iter()
        .zip(sizes)
        .enumerate()
        .find(|(_, (p, &s))| p.size != s)
        .unwrap_or((0, (&params[0], &sizes[0])));
    Error::ArgumentSize {
        kernel,
        index,
        expected: p.size,
        actual,
    }
}

/// Checks a packed buffer's layout against the cached parameter list.
#[inline]
#[track_caller]
fn check_packed<L: Launchable, const N: usize>(l: &L, buf: &ParamBuffer<'_, N>) -> Result<()> {
    if let Some(params) = l.meta().params(l)? {
        if !buf.matches(params) {
            return Err(packed_error(l, params, buf));
        }
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn packed_error<L: Launchable, const N: usize>(
    l: &L,
    params: &[ParamInfo],
    buf: &ParamBuffer<'_, N>,
) -> Error {
    let kernel = l.meta().name(l).to_owned();
    if params.len() != buf.count() {
        return Error::ArgumentCount {
            kernel,
            expected: params.len(),
            actual: buf.count(),
        };
    }
    for (index, (p, b)) in params.iter().zip(buf.params()).enumerate() {
        if p.size != b.size {
            return Error::ArgumentSize {
                kernel,
                index,
                expected: p.size,
                actual: b.size,
            };
        }
        if p.offset != b.offset {
            return Error::InvalidArgument(format!(
                "kernel `{kernel}` parameter {index} is at offset {} but the ParamBuffer puts \
                 it at offset {} (an argument before it has a different alignment on the \
                 device: use this crate's vector types)",
                p.offset, b.offset
            ));
        }
    }
    Error::InvalidArgument(format!("kernel `{kernel}`: the ParamBuffer does not match"))
}

/// The one `cuLaunchKernel` call: `f` in the configuration `cfg` on `stream`, its arguments
/// in `params` (`kernelParams`) or `extra`.
///
/// # Safety
/// As for [`Function::launch_unchecked`]; `f` is a live function or kernel; `params` or
/// `extra` is null or describes `f`'s arguments as `cuLaunchKernel` requires, alive for the
/// call.
#[inline(always)]
#[track_caller]
unsafe fn cu_launch_kernel(
    f: sys::CUfunction,
    stream: &Stream,
    cfg: &LaunchConfig,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<()> {
    check(
        // SAFETY: the caller's guarantees.
        unsafe {
            sys::cuLaunchKernel(
                f,
                cfg.grid.x,
                cfg.grid.y,
                cfg.grid.z,
                cfg.block.x,
                cfg.block.y,
                cfg.block.z,
                cfg.shared_mem_bytes,
                stream.as_raw(),
                params,
                extra,
            )
        },
        "cuLaunchKernel",
    )
}

/// `kernelParams` for the argument pointers of a launch: null when there are none.
#[inline(always)]
fn kernel_params(pointers: &mut [*mut c_void]) -> *mut *mut c_void {
    if pointers.is_empty() {
        ptr::null_mut()
    } else {
        pointers.as_mut_ptr()
    }
}

/// `cuLaunchKernel` with a parameter pointer array.
///
/// # Safety
/// As for [`Function::launch_unchecked`]; `f` is a live function or kernel.
#[inline(always)]
#[track_caller]
unsafe fn launch_kernel<A: KernelArgs>(
    f: sys::CUfunction,
    stream: &Stream,
    cfg: &LaunchConfig,
    args: A,
) -> Result<()> {
    let mut pointers = args.pointers();
    let params = kernel_params(pointers.as_mut());
    // SAFETY: `params` holds one pointer per argument, each to the argument's bytes, alive
    // until `args` drops at the end of this function, after the call (the driver copies the
    // parameters during it); the caller guarantees the rest.
    unsafe { cu_launch_kernel(f, stream, cfg, params, ptr::null_mut()) }
}

/// `cuLaunchKernelEx` with a parameter pointer array.
///
/// # Safety
/// As for [`Function::launch_ex_unchecked`]; `f` is a live function or kernel.
#[inline(always)]
#[track_caller]
unsafe fn launch_kernel_ex<A: KernelArgs>(
    f: sys::CUfunction,
    stream: &Stream,
    cfg: &LaunchConfig,
    attrs: &LaunchAttributes,
    args: A,
) -> Result<()> {
    let config = attrs.raw_config(cfg, stream.as_raw());
    let mut pointers = args.pointers();
    let params = kernel_params(pointers.as_mut());
    check(
        // SAFETY: as in launch_kernel; `config` points to `attrs`' array, alive for the call.
        unsafe { sys::cuLaunchKernelEx(&config, f, params, ptr::null_mut()) },
        "cuLaunchKernelEx",
    )
}

/// `cuLaunchKernel` with a packed buffer in `extra`.
///
/// # Safety
/// As for [`Function::launch_packed_unchecked`]; `f` is a live function or kernel.
#[inline(always)]
#[track_caller]
unsafe fn launch_kernel_packed<const N: usize>(
    f: sys::CUfunction,
    stream: &Stream,
    cfg: &LaunchConfig,
    buf: &ParamBuffer<'_, N>,
) -> Result<()> {
    let mut size: usize = buf.len();
    let mut extra: [*mut c_void; 5] = [
        sys::CU_LAUNCH_PARAM_BUFFER_POINTER,
        buf.as_ptr().cast_mut().cast(),
        sys::CU_LAUNCH_PARAM_BUFFER_SIZE,
        (&mut size as *mut usize).cast(),
        sys::CU_LAUNCH_PARAM_END,
    ];
    // SAFETY: `extra` is an END-terminated list naming the buffer (len initialised bytes,
    // borrowed for the call) and a pointer to its size, both alive for the call; no
    // kernelParams; the caller guarantees the rest.
    unsafe { cu_launch_kernel(f, stream, cfg, ptr::null_mut(), extra.as_mut_ptr()) }
}

macro_rules! launch_methods {
    ($ty:ident, $where:literal) => {
        impl $ty {
            /// The kernel's name: the name it was looked up by, or the driver's
            /// (`cuFuncGetName` / `cuKernelGetName`, CUDA 12.3), cached.
            #[doc(alias = "cuFuncGetName")]
            #[doc(alias = "cuKernelGetName")]
            pub fn name(&self) -> &str {
                self.meta.name(self)
            }

            /// The kernel's parameters (offset and size of each), read from the driver on
            /// first use and cached; `None` when the driver cannot report them (older than
            /// CUDA 12.4).
            #[doc(alias = "cuFuncGetParamInfo")]
            #[doc(alias = "cuKernelGetParamInfo")]
            #[track_caller]
            pub fn params(&self) -> Result<Option<&[ParamInfo]>> {
                self.meta.params(self)
            }

            #[doc = concat!("Launches the kernel on `stream` ", $where, ", after checking")]
            /// the arguments against its parameter list.
            ///
            /// `args` is a tuple of [`KernelArg`]s: `&value` for a value parameter
            /// (numbers, vector types, `#[repr(C)]` structs), a buffer or view for a
            /// pointer parameter. The argument count and each argument's size are compared
            /// with the parameter list the driver reports (read once and cached, see
            /// [`params`](Self::params)); a mismatch is [`Error::ArgumentCount`] or
            /// [`Error::ArgumentSize`] naming the kernel, and nothing is launched. The
            /// stream's context is made current first. Nothing is allocated.
            ///
            /// Wraps `cuLaunchKernel`.
            ///
            /// ```no_run
            #[doc = concat!("# fn f(k: &cuda_driver::", stringify!($ty), ", stream: &cuda_driver::Stream,")]
            /// #      a: &cuda_driver::DeviceBuffer<f32>, b: &cuda_driver::DeviceBuffer<f32>,
            /// #      c: &mut cuda_driver::DeviceBuffer<f32>) -> cuda_driver::Result<()> {
            /// use cuda_driver::LaunchConfig;
            /// // VecAdd(const float* A, const float* B, float* C, int N)
            /// let n = c.len() as i32;
            /// let cfg = LaunchConfig::for_num_elems(c.len())?;
            /// // SAFETY: the arguments are VecAdd's parameters; a, b and c hold n floats and
            /// // are not touched by the host until the stream is synchronised.
            /// unsafe { k.launch(stream, &cfg, (a, b, c, &n))? };
            /// stream.synchronize()?;
            /// # Ok(()) }
            /// ```
            ///
            /// # Safety
            /// The driver cannot check what the kernel does with its arguments:
            /// * each argument has the layout and a valid value of the kernel's parameter
            ///   at its position (the check compares sizes only): a pointer parameter gets
            ///   device memory of the element type the kernel expects, a struct parameter a
            ///   `#[repr(C)]` struct with the device's alignment;
            /// * the kernel stays in bounds of the memory it is given for this launch
            ///   configuration, and touches only memory of the stream's context (or memory
            ///   it may reach otherwise, such as peer or managed memory);
            /// * memory the kernel may access stays allocated until the kernel has finished,
            ///   and memory it writes is neither read nor written by the host or other work
            ///   until then (synchronise the stream or order the work with events), nor
            ///   memory it reads written meanwhile;
            /// * the kernel's code stays loaded until the kernel has finished: the last handle
            ///   to its module or library (this one included) is not dropped before the
            ///   stream is synchronised;
            /// * the kernel's own requirements hold: the dynamic shared memory and block
            ///   shape it assumes, and so on.
            #[inline]
            #[track_caller]
            pub unsafe fn launch<A: KernelArgs>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                args: A,
            ) -> Result<()> {
                let _cur = stream.context().enter()?;
                self.check_stream(stream)?;
                check_args(self, A::SIZES)?;
                // SAFETY: the caller's guarantees, with the argument sizes checked.
                unsafe { launch_kernel(self.raw_function(), stream, cfg, args) }
            }

            /// [`launch`](Self::launch) without the argument check: makes the stream's
            /// context current and calls `cuLaunchKernel`, nothing else.
            ///
            /// Wraps `cuLaunchKernel`.
            ///
            /// # Safety
            /// As for [`launch`](Self::launch), and the argument count and sizes match the
            /// kernel's parameters.
            #[doc(alias = "cuLaunchKernel")]
            #[inline]
            #[track_caller]
            pub unsafe fn launch_unchecked<A: KernelArgs>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                args: A,
            ) -> Result<()> {
                let _cur = stream.context().enter()?;
                // SAFETY: the caller's guarantees.
                unsafe { launch_kernel(self.raw_function(), stream, cfg, args) }
            }

            /// Launches with extended attributes (thread-block clusters, cooperative launch,
            /// priority: see [`LaunchAttributes`]), after checking the arguments as
            /// [`launch`](Self::launch) does.
            ///
            /// Wraps `cuLaunchKernelEx`.
            ///
            /// # Safety
            /// As for [`launch`](Self::launch), and the attributes fit the kernel: a kernel
            /// that synchronises its grid is launched cooperatively, one that uses cluster
            /// features in clusters of the shape it assumes.
            #[doc(alias = "cuLaunchKernelEx")]
            #[inline]
            #[track_caller]
            pub unsafe fn launch_ex<A: KernelArgs>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                attrs: &LaunchAttributes,
                args: A,
            ) -> Result<()> {
                let _cur = stream.context().enter()?;
                self.check_stream(stream)?;
                check_args(self, A::SIZES)?;
                // SAFETY: the caller's guarantees, with the argument sizes checked.
                unsafe { launch_kernel_ex(self.raw_function(), stream, cfg, attrs, args) }
            }

            /// [`launch_ex`](Self::launch_ex) without the argument check.
            ///
            /// Wraps `cuLaunchKernelEx`.
            ///
            /// # Safety
            /// As for [`launch_ex`](Self::launch_ex), and the argument count and sizes match
            /// the kernel's parameters.
            #[inline]
            #[track_caller]
            pub unsafe fn launch_ex_unchecked<A: KernelArgs>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                attrs: &LaunchAttributes,
                args: A,
            ) -> Result<()> {
                let _cur = stream.context().enter()?;
                // SAFETY: the caller's guarantees.
                unsafe { launch_kernel_ex(self.raw_function(), stream, cfg, attrs, args) }
            }

            /// Launches with the parameters packed in one buffer
            /// (`CU_LAUNCH_PARAM_BUFFER_POINTER`), after checking the buffer's count,
            /// offsets and sizes against the kernel's parameter list (a wrong offset, from a
            /// type whose alignment differs on the device, is [`Error::InvalidArgument`]).
            ///
            /// Wraps `cuLaunchKernel` with `extra`.
            ///
            /// # Safety
            /// As for [`launch`](Self::launch), for the values in the buffer.
            #[doc(alias = "CU_LAUNCH_PARAM_BUFFER_POINTER")]
            #[inline]
            #[track_caller]
            pub unsafe fn launch_packed<const N: usize>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                params: &ParamBuffer<'_, N>,
            ) -> Result<()> {
                let _cur = stream.context().enter()?;
                self.check_stream(stream)?;
                check_packed(self, params)?;
                // SAFETY: the caller's guarantees, with the layout checked.
                unsafe { launch_kernel_packed(self.raw_function(), stream, cfg, params) }
            }

            /// [`launch_packed`](Self::launch_packed) without the layout check.
            ///
            /// Wraps `cuLaunchKernel` with `extra`.
            ///
            /// # Safety
            /// As for [`launch_packed`](Self::launch_packed), and the buffer's layout is the
            /// kernel's parameter layout.
            #[inline]
            #[track_caller]
            pub unsafe fn launch_packed_unchecked<const N: usize>(
                &self,
                stream: &Stream,
                cfg: &LaunchConfig,
                params: &ParamBuffer<'_, N>,
            ) -> Result<()> {
                let _cur = stream.context().enter()?;
                // SAFETY: the caller's guarantees.
                unsafe { launch_kernel_packed(self.raw_function(), stream, cfg, params) }
            }
        }
    };
}

launch_methods!(Function, "(a stream of the function's own context)");
launch_methods!(Kernel, "(in the stream's context, on any device)");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_num_elems_covers_every_element() {
        for (n, blocks) in [(0usize, 1u32), (1, 1), (256, 1), (257, 2), (1 << 20, 4096)] {
            let cfg = LaunchConfig::for_num_elems(n).unwrap();
            assert_eq!(cfg.grid, Dim3::new(blocks, 1, 1), "n = {n}");
            assert_eq!(cfg.block, Dim3::new(256, 1, 1));
            assert_eq!(cfg.shared_mem_bytes, 0);
        }
        let max = (i32::MAX as usize) * 256;
        assert_eq!(
            LaunchConfig::for_num_elems(max).unwrap().grid.x,
            i32::MAX as u32
        );
        let e = LaunchConfig::for_num_elems(max + 1).unwrap_err();
        assert!(e.to_string().contains("2^31 - 1"), "{e}");
        assert!(LaunchConfig::for_num_elems(usize::MAX).is_err());
        assert!(LaunchConfig::for_num_elems_with_block(10, 0).is_err());
        assert_eq!(
            LaunchConfig::for_num_elems_with_block(10, 4)
                .unwrap()
                .grid
                .x,
            3
        );
    }

    #[test]
    fn attributes_replace_their_own_entry() {
        let a = LaunchAttributes::new()
            .priority(1)
            .cooperative(true)
            .priority(-2)
            .cluster_dim(4);
        let raw = a.as_raw();
        assert_eq!(raw.len(), 3);
        assert_eq!(raw[0].id, sys::CU_LAUNCH_ATTRIBUTE_PRIORITY);
        // SAFETY: the priority field is the one written for this id.
        assert_eq!(unsafe { raw[0].value.priority }, -2);
        // SAFETY: as above, for cooperative.
        assert_eq!(unsafe { raw[1].value.cooperative }, 1);
        // SAFETY: as above, for clusterDim.
        let d = unsafe { raw[2].value.clusterDim };
        assert_eq!((d.x, d.y, d.z), (4, 1, 1));
        let cfg = a.raw_config(
            &LaunchConfig::new(8, 32).with_shared_mem(64),
            ptr::null_mut(),
        );
        assert_eq!(
            (cfg.gridDimX, cfg.blockDimX, cfg.sharedMemBytes),
            (8, 32, 64)
        );
        assert_eq!(cfg.numAttrs, 3);
        assert_eq!(cfg.attrs.cast_const(), raw.as_ptr());
        let none = LaunchAttributes::new().raw_config(&LaunchConfig::new(1, 1), ptr::null_mut());
        assert!(none.attrs.is_null());
    }

    #[test]
    fn raw_attributes_stop_at_the_capacity() {
        let mut a = LaunchAttributes::new();
        for id in 0..MAX_LAUNCH_ATTRIBUTES as u32 {
            let attr = sys::CUlaunchAttribute {
                id: 100 + id,
                ..Default::default()
            };
            // SAFETY: test only: the attributes are never given to the driver.
            a = unsafe { a.with_raw(attr) }.unwrap();
        }
        let mut attr = sys::CUlaunchAttribute {
            id: 99,
            ..Default::default()
        };
        // SAFETY: as above.
        assert!(unsafe { a.with_raw(attr) }.is_err());
        attr.id = 100;
        // SAFETY: as above; replacing an existing id fits.
        assert!(unsafe { a.with_raw(attr) }.is_ok());
    }

    #[test]
    fn argument_errors_name_the_position_and_sizes() {
        let params = [
            ParamInfo { offset: 0, size: 8 },
            ParamInfo { offset: 8, size: 4 },
        ];
        struct Fake(LaunchMeta);
        impl Launchable for Fake {
            fn raw_function(&self) -> sys::CUfunction {
                ptr::null_mut()
            }
            fn meta(&self) -> &LaunchMeta {
                &self.0
            }
            fn query_params(&self) -> Result<Box<[ParamInfo]>> {
                Ok(Box::new([
                    ParamInfo { offset: 0, size: 8 },
                    ParamInfo { offset: 8, size: 4 },
                ]))
            }
            fn driver_name(&self) -> Option<String> {
                None
            }
            fn check_stream(&self, _: &Stream) -> Result<()> {
                Ok(())
            }
        }
        let fake = Fake(LaunchMeta::named("saxpy"));
        assert!(check_args(&fake, &[8, 4]).is_ok());
        assert_eq!(fake.meta().params(&fake).unwrap().unwrap(), &params);
        match check_args(&fake, &[8]).unwrap_err() {
            Error::ArgumentCount {
                kernel,
                expected,
                actual,
            } => assert_eq!((kernel.as_str(), expected, actual), ("saxpy", 2, 1)),
            e => panic!("{e}"),
        }
        match check_args(&fake, &[8, 8]).unwrap_err() {
            Error::ArgumentSize {
                kernel,
                index,
                expected,
                actual,
            } => assert_eq!(
                (kernel.as_str(), index, expected, actual),
                ("saxpy", 1, 4, 8)
            ),
            e => panic!("{e}"),
        }
        let mut buf = ParamBuffer::new();
        buf.push(1u64).unwrap().push(2i32).unwrap();
        assert!(check_packed(&fake, &buf).is_ok());
        let mut buf = ParamBuffer::new();
        buf.push(1u32).unwrap().push(2i32).unwrap();
        assert!(matches!(
            check_packed(&fake, &buf),
            Err(Error::ArgumentSize { index: 0, .. })
        ));
        let unnamed = Fake(LaunchMeta::unnamed());
        assert!(unnamed.meta().name(&unnamed).starts_with("<kernel"));
    }
}
