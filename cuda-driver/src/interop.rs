//! External resource interoperability: memory and semaphores that another API (another CUDA
//! process, Vulkan, Direct3D, NvSciBuf/NvSciSync) exports, imported into a context.
//!
//! * [`ExternalMemory`] (`cuImportExternalMemory`, destroyed with `cuDestroyExternalMemory`)
//!   hands out [`ExternalBuffer`]s (`cuExternalMemoryGetMappedBuffer`, memory owners of the
//!   crate's model) and [`ExternalMipmappedArray`]s
//!   (`cuExternalMemoryGetMappedMipmappedArray`); both keep the imported memory alive.
//! * [`ExternalSemaphore`] (`cuImportExternalSemaphore`, `cuDestroyExternalSemaphore`) is
//!   signalled and waited on in stream order (`cuSignalExternalSemaphoresAsync`,
//!   `cuWaitExternalSemaphoresAsync`).
//!
//! Opaque POSIX file descriptors are imported safely ([`ExternalMemory::from_opaque_fd`],
//! [`ExternalSemaphore::from_opaque_fd`]); the memory path is tested on these machines with a
//! descriptor exported from a CUDA virtual-memory allocation. The other handle types (Win32
//! handles, Direct3D resources, NvSciBuf/NvSciSync objects, Vulkan timeline semaphores)
//! go through the `unsafe` `from_raw_desc` constructors and are **not tested here** (no
//! Vulkan, Direct3D or NvSci on these machines; CUDA cannot export a semaphore itself).

use std::marker::PhantomData;
#[cfg(unix)]
use std::os::fd::{IntoRawFd, OwnedFd};
use std::ptr;
use std::sync::Arc;

use cuda_driver_macros::{call, uses, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::count::count_u32;
pub use crate::error::interop::InteropError;
use crate::error::layout::LayoutError;
use crate::error::{check, Error, Result};
use crate::handle::{Handle, OwnedHandle};
use crate::memory::owner::device_memory;
use crate::memory::{ArrayDescriptor, ArrayElement, ArrayRefMut, MipmappedArray};
use crate::release::SendRaw;
use crate::repr::DeviceRepr;
use crate::stream::Stream;

use crate::types::{
    ExternalSemaphoreHandleType, ExternalSemaphoreSignalFlags, ExternalSemaphoreWaitFlags,
};

struct MemoryInner {
    raw: sys::CUexternalMemory,
    size: u64,
    ctx: Context,
}

// SAFETY: an external memory handle may be used from any thread; it is destroyed once.
unsafe impl Send for MemoryInner {}
// SAFETY: as above; the handle is only read.
unsafe impl Sync for MemoryInner {}

impl Drop for MemoryInner {
    fn drop(&mut self) {
        let raw = SendRaw(self.raw);
        // SAFETY: imported by cuImportExternalMemory and owned by this value; every buffer
        // and array mapped from it holds an Arc of it, so none is left.
        self.ctx.release("cuDestroyExternalMemory", move || unsafe {
            sys::cuDestroyExternalMemory(raw.get())
        });
    }
}

/// Memory imported from another API or process (`CUexternalMemory`), destroyed on drop once
/// every buffer and array mapped from it is gone. Keeps its context alive; `Send + Sync`.
#[wraps(CUexternalMemory)]
#[derive(Clone)]
pub struct ExternalMemory {
    inner: Arc<MemoryInner>,
}

impl std::fmt::Debug for ExternalMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalMemory")
            .field("raw", &self.inner.raw)
            .field("size", &self.inner.size)
            .finish()
    }
}

impl Handle for ExternalMemory {
    type Raw = sys::CUexternalMemory;

    /// The raw `CUexternalMemory`, valid while `self` (or a clone, buffer or array) lives.
    #[inline]
    fn as_raw(&self) -> sys::CUexternalMemory {
        self.inner.raw
    }
}

impl ExternalMemory {
    /// Imports `size` bytes of memory exported as an opaque POSIX file descriptor (by
    /// another CUDA process through `cuMemExportToShareableHandle`, or by Vulkan's
    /// `VK_KHR_external_memory_fd`). On success the driver owns the descriptor; on failure
    /// it is closed. `dedicated`: the memory is a dedicated allocation (Vulkan's dedicated
    /// allocations must say so).
    #[cfg(unix)]
    #[wraps(cuImportExternalMemory)]
    #[track_caller]
    pub fn from_opaque_fd(ctx: &Context, fd: OwnedFd, size: u64, dedicated: bool) -> Result<Self> {
        // SAFETY: a plain C struct of integers, pointers and a union of them; zero is valid.
        let mut desc: sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC = unsafe { std::mem::zeroed() };
        desc.type_ = sys::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
        desc.size = size;
        desc.flags = if dedicated {
            sys::CUDA_EXTERNAL_MEMORY_DEDICATED
        } else {
            0
        };
        let raw_fd = fd.into_raw_fd();
        desc.handle.fd = raw_fd;
        // SAFETY: `desc` describes an opaque fd we own (moved in).
        let r = unsafe { Self::import(ctx, &desc) };
        if r.is_err() {
            // SAFETY: the import failed, so the driver did not take the descriptor; it is
            // still ours to close.
            drop(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw_fd) });
        }
        r
    }

    /// Imports memory described by a raw handle descriptor: any handle type (Win32 handles,
    /// Direct3D heaps and resources, NvSciBuf objects). **Untested on these machines**
    /// except for opaque file descriptors.
    ///
    /// # Safety
    /// `desc` is a valid descriptor: its handle is live, of the type named, and describes
    /// `desc.size` bytes; for a file descriptor, ownership passes to the driver on success.
    #[wraps(cuImportExternalMemory)]
    #[track_caller]
    pub unsafe fn from_raw_desc(
        ctx: &Context,
        desc: &sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC,
    ) -> Result<Self> {
        // SAFETY: the caller's guarantees.
        unsafe { Self::import(ctx, desc) }
    }

    /// # Safety
    /// As for `from_raw_desc`.
    #[track_caller]
    unsafe fn import(ctx: &Context, desc: &sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC) -> Result<Self> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the caller's guarantees on `desc`; writes one handle, owned by the
            // value built next.
            unsafe { sys::cuImportExternalMemory(&mut raw, desc) },
        )?;
        Ok(ExternalMemory {
            inner: Arc::new(MemoryInner {
                raw,
                size: desc.size,
                ctx: ctx.clone(),
            }),
        })
    }

    /// The imported size in bytes.
    pub fn size(&self) -> u64 {
        self.inner.size
    }

    /// The context the memory was imported into.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Maps `len` elements of `T` from byte `offset` as device memory. The range must lie in
    /// the imported size ([`Error::OutOfBounds`] in bytes otherwise) and `offset` be aligned
    /// for `T`.
    #[wraps(cuExternalMemoryGetMappedBuffer)]
    #[track_caller]
    pub fn mapped_buffer<T: DeviceRepr>(
        &self,
        offset: u64,
        len: usize,
    ) -> Result<ExternalBuffer<T>> {
        let bytes =
            crate::memory::view::byte_len::<T>("ExternalMemory::mapped_buffer", len)? as u64;
        let end = offset.checked_add(bytes);
        if end.is_none_or(|e| e > self.inner.size) || offset % align_of::<T>() as u64 != 0 {
            return Err(Error::OutOfBounds {
                start: offset as usize,
                end: end.unwrap_or(u64::MAX) as usize,
                len: self.inner.size as usize,
            });
        }
        // SAFETY: a plain C struct of integers; zero is valid.
        let mut desc: sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC = unsafe { std::mem::zeroed() };
        desc.offset = offset;
        desc.size = bytes;
        let _cur = self.inner.ctx.enter()?;
        let mut ptr = 0;
        call!(
            // SAFETY: the memory is alive and the range lies in it (checked); writes one
            // device pointer, owned by the buffer built next (freed with cuMemFree).
            unsafe { sys::cuExternalMemoryGetMappedBuffer(&mut ptr, self.inner.raw, &desc) },
        )?;
        Ok(ExternalBuffer {
            ptr,
            len,
            mem: self.inner.clone(),
            _marker: PhantomData,
        })
    }

    /// Maps a mipmapped array of `levels` levels whose level 0 has the shape of `desc` from
    /// byte `offset` (the layout must be the exporter's: in practice a Vulkan image). The
    /// shape is checked as [`MipmappedArray::new`] checks it (a zero width or level count is
    /// [`LayoutError::ZeroExtent`], `T` must be an element of the format) before the driver is
    /// asked.
    #[wraps(cuExternalMemoryGetMappedMipmappedArray)]
    #[track_caller]
    pub fn mapped_mipmapped_array<T: ArrayElement>(
        &self,
        offset: u64,
        desc: &ArrayDescriptor,
        levels: u32,
    ) -> Result<ExternalMipmappedArray<T>> {
        const WHAT: &str = "ExternalMemory::mapped_mipmapped_array";
        desc.validate::<T>(WHAT)?;
        if levels == 0 {
            return Err(Error::Layout(LayoutError::ZeroExtent {
                what: WHAT,
                axis: "number of levels",
            }));
        }
        // SAFETY: a plain C struct of integers; zero is valid.
        let mut d: sys::CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC = unsafe { std::mem::zeroed() };
        d.offset = offset;
        d.arrayDesc = desc.as_raw();
        d.numLevels = levels;
        let _cur = self.inner.ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the memory is alive and `d` a valid descriptor (shape checked above); a
            // shape past the memory's end is the driver's error to return, not an access by
            // this process; writes one handle, owned by the array built next.
            unsafe { sys::cuExternalMemoryGetMappedMipmappedArray(&mut raw, self.inner.raw, &d) },
        )?;
        Ok(ExternalMipmappedArray {
            // SAFETY: just created in this context with this shape, owned by nobody else;
            // destroyed with cuMipmappedArrayDestroy, as the driver requires.
            array: unsafe { MipmappedArray::from_raw(raw, (&self.inner.ctx, *desc, levels)) },
            _mem: self.inner.clone(),
        })
    }
}

/// Device memory mapped from an [`ExternalMemory`] (`cuExternalMemoryGetMappedBuffer`),
/// freed with `cuMemFree` on drop; keeps the imported memory alive. A memory owner: copies,
/// memsets and kernel arguments go through its views.
pub struct ExternalBuffer<T: DeviceRepr> {
    ptr: sys::CUdeviceptr,
    len: usize,
    mem: Arc<MemoryInner>,
    _marker: PhantomData<T>,
}

impl<T: DeviceRepr> std::fmt::Debug for ExternalBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalBuffer")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl<T: DeviceRepr> Drop for ExternalBuffer<T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        let p = self.ptr;
        // SAFETY: mapped by cuExternalMemoryGetMappedBuffer and owned by self; the driver
        // requires cuMemFree for it; the external memory outlives it (Arc, dropped after).
        self.mem
            .ctx
            .release("cuMemFree_v2", move || unsafe { sys::cuMemFree(p) });
    }
}

// SAFETY: views of `len` elements at `ptr`, mapped in `mem.ctx`, alive while self lives; not
// stream-ordered (`cuMemFree` waits for the device); `&mut self` makes a mutable view exclusive.
device_memory!(
    impl[T: DeviceRepr] ExternalBuffer<T>, mut impl[T: DeviceRepr] ExternalBuffer<T>;
    |this| (this.ptr, this.len, &this.mem.ctx, std::ptr::null_mut())
);

/// A mipmapped array mapped from an [`ExternalMemory`]
/// (`cuExternalMemoryGetMappedMipmappedArray`); derefs to `&`[`MipmappedArray`] (shared
/// only), is destroyed with `cuMipmappedArrayDestroy` on drop, and keeps the imported memory
/// alive.
///
/// There is no `DerefMut`: the mapped array cannot be moved out of its keep-alive (it would
/// outlive the imported memory), nor another array moved in (`MipmappedArray`'s `&self`
/// methods neither free nor move it).
///
/// ```compile_fail,E0596
/// # fn f(
/// #     ext: &mut cuda_driver::interop::ExternalMipmappedArray<f32>,
/// #     other: cuda_driver::memory::MipmappedArray<f32>,
/// # ) {
/// let mapped = std::mem::replace(&mut **ext, other);
/// # drop(mapped);
/// # }
/// ```
///
/// ```compile_fail,E0596
/// # fn f(
/// #     a: &mut cuda_driver::interop::ExternalMipmappedArray<f32>,
/// #     b: &mut cuda_driver::memory::MipmappedArray<f32>,
/// # ) {
/// std::mem::swap(&mut **a, b);
/// # }
/// ```
///
/// Its levels are written through [`level_mut`](Self::level_mut) and read through the
/// deref's [`level`](MipmappedArray::level):
///
/// ```
/// # fn f(ext: &mut cuda_driver::interop::ExternalMipmappedArray<f32>) -> cuda_driver::Result<()> {
/// let n = ext.level(0)?.len();
/// ext.level_mut(0)?.copy_from_host(&vec![1.0; n])?;
/// let mut back = vec![0.0; n];
/// ext.level(0)?.copy_to_host(&mut back)?;
/// # Ok(()) }
/// ```
pub struct ExternalMipmappedArray<T: ArrayElement> {
    // Dropped before `_mem`: the array goes before the memory it lies in.
    array: MipmappedArray<T>,
    _mem: Arc<MemoryInner>,
}

impl<T: ArrayElement> std::fmt::Debug for ExternalMipmappedArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ExternalMipmappedArray")
            .field(&self.array)
            .finish()
    }
}

impl<T: ArrayElement> std::ops::Deref for ExternalMipmappedArray<T> {
    type Target = MipmappedArray<T>;
    fn deref(&self) -> &MipmappedArray<T> {
        &self.array
    }
}

impl<T: ArrayElement> ExternalMipmappedArray<T> {
    /// Level `level`, borrowed exclusively (to copy into it); see
    /// [`MipmappedArray::level_mut`]. The shared forms ([`level`](MipmappedArray::level),
    /// [`as_raw`](MipmappedArray::as_raw), ...) come through the deref.
    #[uses(cuMipmappedArrayGetLevel)]
    #[track_caller]
    pub fn level_mut(&mut self, level: u32) -> Result<ArrayRefMut<'_, T>> {
        self.array.level_mut(level)
    }
}

/// A semaphore imported from another API (`CUexternalSemaphore`), destroyed on drop. Keeps
/// its context alive; `Send + Sync`.
#[wraps(CUexternalSemaphore)]
pub struct ExternalSemaphore {
    raw: sys::CUexternalSemaphore,
    kind: ExternalSemaphoreHandleType,
    ctx: Context,
}

// SAFETY: an external semaphore handle may be used from any thread; destroyed once.
unsafe impl Send for ExternalSemaphore {}
// SAFETY: as above; signal and wait are stream operations the driver serialises.
unsafe impl Sync for ExternalSemaphore {}

impl std::fmt::Debug for ExternalSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalSemaphore")
            .field("raw", &self.raw)
            .field("kind", &self.kind)
            .finish()
    }
}

impl Drop for ExternalSemaphore {
    fn drop(&mut self) {
        let raw = SendRaw(self.raw);
        // SAFETY: imported by cuImportExternalSemaphore and owned by self; signals and waits
        // already queued keep their own reference in the driver.
        self.ctx
            .release("cuDestroyExternalSemaphore", move || unsafe {
                sys::cuDestroyExternalSemaphore(raw.get())
            });
    }
}

/// What a signal or wait on an [`ExternalSemaphore`] uses: a fence value (timeline
/// semaphores, D3D12 fences, NvSciSync), or a keyed-mutex key (D3D11; waits also take a
/// timeout). Binary opaque-fd semaphores ignore the value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SemaphoreValue {
    /// The fence value to signal, or to wait for (reached or passed).
    pub fence: u64,
    /// The keyed-mutex key (keyed-mutex handle types only).
    pub key: u64,
    /// The keyed-mutex wait timeout in milliseconds (waits on keyed mutexes only).
    pub timeout_ms: u32,
}

impl Handle for ExternalSemaphore {
    type Raw = sys::CUexternalSemaphore;

    /// The raw `CUexternalSemaphore`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUexternalSemaphore {
        self.raw
    }
}

impl ExternalSemaphore {
    /// Imports a semaphore exported as an opaque POSIX file descriptor of `kind`
    /// ([`ExternalSemaphoreHandleType::OPAQUE_FD`] or
    /// [`ExternalSemaphoreHandleType::TIMELINE_SEMAPHORE_FD`]; Vulkan exports them). On
    /// success the driver owns the descriptor; on failure it is closed. Another kind is
    /// [`InteropError::HandleTypeUnsupported`] before any driver call.
    #[cfg(unix)]
    #[wraps(cuImportExternalSemaphore)]
    #[track_caller]
    pub fn from_opaque_fd(
        ctx: &Context,
        fd: OwnedFd,
        kind: ExternalSemaphoreHandleType,
    ) -> Result<Self> {
        if kind != ExternalSemaphoreHandleType::OPAQUE_FD
            && kind != ExternalSemaphoreHandleType::TIMELINE_SEMAPHORE_FD
        {
            return Err(Error::Interop(InteropError::HandleTypeUnsupported {
                what: "ExternalSemaphore::from_opaque_fd",
                handle_type: kind.as_raw(),
            }));
        }
        // SAFETY: a plain C struct of integers, pointers and a union of them; zero is valid.
        let mut desc: sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC = unsafe { std::mem::zeroed() };
        desc.type_ = kind.as_raw();
        let raw_fd = fd.into_raw_fd();
        desc.handle.fd = raw_fd;
        // SAFETY: `desc` names an fd we own (moved in) of the type `kind`.
        let r = unsafe { Self::from_raw_desc(ctx, &desc) };
        if r.is_err() {
            // SAFETY: the import failed; the descriptor is still ours to close.
            drop(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw_fd) });
        }
        r
    }

    /// Imports a semaphore described by a raw handle descriptor: any handle type (Win32
    /// handles, D3D12 fences, D3D11 keyed mutexes, NvSciSync objects). **Untested on these
    /// machines** (nothing here exports a semaphore).
    ///
    /// # Safety
    /// `desc` is a valid descriptor whose handle is live and of the type named; for a file
    /// descriptor, ownership passes to the driver on success.
    #[wraps(cuImportExternalSemaphore)]
    #[track_caller]
    pub unsafe fn from_raw_desc(
        ctx: &Context,
        desc: &sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC,
    ) -> Result<Self> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the caller's guarantees; writes one handle, owned by the value built next.
            unsafe { sys::cuImportExternalSemaphore(&mut raw, desc) },
        )?;
        Ok(ExternalSemaphore {
            raw,
            kind: ExternalSemaphoreHandleType::from_raw(desc.type_),
            ctx: ctx.clone(),
        })
    }

    /// The handle type it was imported from.
    pub fn kind(&self) -> ExternalSemaphoreHandleType {
        self.kind
    }

    /// The context it was imported into.
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

/// The raw signal parameters of `value`.
fn signal_params(
    value: SemaphoreValue,
    flags: ExternalSemaphoreSignalFlags,
) -> sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS {
    // SAFETY: a plain C struct of integers and unions of them; zero is valid.
    let mut p: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
    p.params.fence.value = value.fence;
    p.params.keyedMutex.key = value.key;
    p.flags = flags.bits();
    p
}

/// The raw wait parameters of `value`.
fn wait_params(
    value: SemaphoreValue,
    flags: ExternalSemaphoreWaitFlags,
) -> sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS {
    // SAFETY: as above.
    let mut p: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
    p.params.fence.value = value.fence;
    p.params.keyedMutex.key = value.key;
    p.params.keyedMutex.timeoutMs = value.timeout_ms;
    p.flags = flags.bits();
    p
}

/// What a signal and a wait of external semaphores differ in, keyed by their flags type:
/// the raw parameters of one semaphore, a graph node's parameter struct, and the stream
/// call. The stream operations and the graph nodes of both are written once over it.
pub(crate) trait SemaphoreOp: Copy {
    /// `CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS` or `CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS`.
    type Params;
    /// `CUDA_EXT_SEM_SIGNAL_NODE_PARAMS` or `CUDA_EXT_SEM_WAIT_NODE_PARAMS`.
    type NodeParams;
    /// The name of [`queue`](Self::queue)'s driver call.
    const QUEUE_CALL: &'static str;
    /// The raw parameters of `value` with these flags.
    fn params(self, value: SemaphoreValue) -> Self::Params;
    /// A node's parameters naming `n` semaphores and their parameters.
    fn node_params(
        sems: *mut sys::CUexternalSemaphore,
        params: *mut Self::Params,
        n: u32,
    ) -> Self::NodeParams;
    /// Queues the operation on `stream`.
    ///
    /// # Safety
    /// `sems` and `params` hold `n` live semaphores and their parameters; `stream` is alive.
    unsafe fn queue(
        sems: *const sys::CUexternalSemaphore,
        params: *const Self::Params,
        n: u32,
        stream: sys::CUstream,
    ) -> sys::CUresult;
}

macro_rules! semaphore_op {
    ($flags:ty, $params:ty, $node:ident, $make:ident, $queue:ident) => {
        impl SemaphoreOp for $flags {
            type Params = $params;
            type NodeParams = sys::$node;
            const QUEUE_CALL: &'static str = ::core::stringify!($queue);

            #[inline]
            fn params(self, value: SemaphoreValue) -> Self::Params {
                $make(value, self)
            }

            #[inline]
            fn node_params(
                sems: *mut sys::CUexternalSemaphore,
                params: *mut Self::Params,
                n: u32,
            ) -> Self::NodeParams {
                sys::$node {
                    extSemArray: sems,
                    paramsArray: params,
                    numExtSems: n,
                }
            }

            #[inline]
            unsafe fn queue(
                sems: *const sys::CUexternalSemaphore,
                params: *const Self::Params,
                n: u32,
                stream: sys::CUstream,
            ) -> sys::CUresult {
                // SAFETY: the caller's guarantees.
                unsafe { sys::$queue(sems, params, n, stream) }
            }
        }
    };
}

semaphore_op!(
    ExternalSemaphoreSignalFlags,
    sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS,
    CUDA_EXT_SEM_SIGNAL_NODE_PARAMS,
    signal_params,
    cuSignalExternalSemaphoresAsync
);
semaphore_op!(
    ExternalSemaphoreWaitFlags,
    sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS,
    CUDA_EXT_SEM_WAIT_NODE_PARAMS,
    wait_params,
    cuWaitExternalSemaphoresAsync
);

/// Checks that every semaphore belongs to the stream's context.
#[track_caller]
fn same_ctx(
    what: &'static str,
    sems: &[(&ExternalSemaphore, SemaphoreValue)],
    stream: &Stream,
) -> Result<()> {
    for (s, _) in sems {
        if s.ctx.as_raw() != stream.context().as_raw() {
            return Err(Error::ContextMismatch {
                what,
                expected: s.ctx.as_raw() as usize,
                found: stream.context().as_raw() as usize,
            });
        }
    }
    Ok(())
}

impl Stream {
    /// Signals each semaphore with its value once the work queued before is done.
    #[wraps(cuSignalExternalSemaphoresAsync)]
    #[track_caller]
    pub fn signal_external_semaphores(
        &self,
        sems: &[(&ExternalSemaphore, SemaphoreValue)],
        flags: ExternalSemaphoreSignalFlags,
    ) -> Result<()> {
        self.queue_semaphores("Stream::signal_external_semaphores", sems, flags)
    }

    /// Makes the work queued after wait until each semaphore is signalled (with at least its
    /// value, for fences).
    #[wraps(cuWaitExternalSemaphoresAsync)]
    #[track_caller]
    pub fn wait_external_semaphores(
        &self,
        sems: &[(&ExternalSemaphore, SemaphoreValue)],
        flags: ExternalSemaphoreWaitFlags,
    ) -> Result<()> {
        self.queue_semaphores("Stream::wait_external_semaphores", sems, flags)
    }

    /// The one body of `signal_external_semaphores` and `wait_external_semaphores`.
    #[track_caller]
    fn queue_semaphores<F: SemaphoreOp>(
        &self,
        what: &'static str,
        sems: &[(&ExternalSemaphore, SemaphoreValue)],
        flags: F,
    ) -> Result<()> {
        same_ctx(what, sems, self)?;
        if sems.is_empty() {
            return Ok(());
        }
        let count = count_u32(what, "semaphores", sems.len())?;
        let raws: Vec<_> = sems.iter().map(|(s, _)| s.raw).collect();
        let params: Vec<_> = sems.iter().map(|&(_, v)| flags.params(v)).collect();
        let _cur = self.context().enter()?;
        check(
            // SAFETY: `raws` and `params` hold `count` live semaphores and their parameters,
            // read during the call.
            unsafe { F::queue(raws.as_ptr(), params.as_ptr(), count, self.as_raw()) },
            F::QUEUE_CALL,
        )
    }
}
