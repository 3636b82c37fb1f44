//! Legacy inter-process communication: device memory and events shared between processes
//! through 64-byte handles.
//!
//! * [`DeviceBuffer::ipc_handle`] gives the [`IpcMemHandle`] of a `cuMemAlloc` allocation, a
//!   plain `Copy` value of 64 bytes ([`IpcMemHandle::to_bytes`]) to send to another process
//!   by any means (a pipe, a socket, shared memory).
//! * [`IpcMemHandle::open`] maps it in the other process as [`IpcMemory`], a memory owner of
//!   the crate's model closed by `cuIpcCloseMemHandle` on drop.
//! * [`Event::ipc_handle`] gives the [`IpcEventHandle`] of an event created with
//!   [`EventFlags::INTERPROCESS`] and [`EventFlags::DISABLE_TIMING`];
//!   [`IpcEventHandle::open`] opens it as an [`Event`] in the other process, which records
//!   and waits on the same event.
//!
//! A handle opened in the process that made it, made of random bytes, or whose allocation is
//! freed, is an error ([`Error::Driver`]), and the context stays usable.
//!
//! Legacy IPC works between processes on the same node, on Linux; virtual memory
//! ([`PhysicalAllocation::export_fd`](crate::memory::vmm::PhysicalAllocation::export_fd)) and pools
//! ([`MemPool::export_fd`](crate::memory::pool::MemPool::export_fd)) are the newer ways.

use std::marker::PhantomData;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::error::vmm::VmmError;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::handle::Handle;
use crate::memory::device::DeviceBuffer;
use crate::memory::owner::device_memory;
use crate::repr::DeviceRepr;

use crate::types::IpcMemFlags;

/// The IPC handle of a device allocation (`CUipcMemHandle`): 64 opaque bytes, `Copy`, to
/// send to another process and [`open`](Self::open) there.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "CUipcMemHandle")]
pub struct IpcMemHandle([u8; 64]);

/// The IPC handle of an interprocess event (`CUipcEventHandle`): 64 opaque bytes, `Copy`, to
/// send to another process and [`open`](Self::open) there.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "CUipcEventHandle")]
pub struct IpcEventHandle([u8; 64]);

fn bytes_of(reserved: [std::ffi::c_char; 64]) -> [u8; 64] {
    reserved.map(|c| c as u8)
}

fn chars_of(bytes: [u8; 64]) -> [std::ffi::c_char; 64] {
    bytes.map(|b| b as std::ffi::c_char)
}

fn fmt_prefix(f: &mut std::fmt::Formatter<'_>, name: &str, bytes: &[u8; 64]) -> std::fmt::Result {
    write!(f, "{name}(")?;
    for b in &bytes[..8] {
        write!(f, "{b:02x}")?;
    }
    write!(f, "..)")
}

impl IpcMemHandle {
    /// The size of a handle in bytes.
    pub const SIZE: usize = 64;

    /// The handle's bytes, to send to another process.
    pub const fn to_bytes(self) -> [u8; 64] {
        self.0
    }

    /// A handle from bytes received from another process. Any bytes make a handle; opening
    /// one that no process exported is an error.
    pub const fn from_bytes(bytes: [u8; 64]) -> IpcMemHandle {
        IpcMemHandle(bytes)
    }

    /// Wraps a raw `CUipcMemHandle`.
    pub fn from_raw(raw: sys::CUipcMemHandle) -> IpcMemHandle {
        IpcMemHandle(bytes_of(raw.reserved))
    }

    /// The raw `CUipcMemHandle`.
    pub fn as_raw(&self) -> sys::CUipcMemHandle {
        sys::CUipcMemHandle {
            reserved: chars_of(self.0),
        }
    }

    /// Opens the allocation in this process as memory of `len` elements in `ctx`, closed on
    /// drop. With [`IpcMemFlags::LAZY_ENABLE_PEER_ACCESS`] the allocation may be on another
    /// device than `ctx`'s, peer access being enabled as needed.
    ///
    /// `len * size_of::<T>()` bytes must fit in the shared allocation, which is checked
    /// (`cuMemGetAddressRange_v2`): more is [`VmmError::SharedAllocationTooSmall`], and the
    /// handle is closed again. A handle of this process, of random bytes, or of a freed
    /// allocation is a driver error.
    ///
    /// # Safety
    /// The exporting process keeps the allocation until the returned memory is dropped
    /// (CUDA: freeing an exported allocation before the importers close it is undefined
    /// behaviour); this process cannot check that.
    #[wraps(cuIpcOpenMemHandle)]
    #[doc(alias = "cuMemGetAddressRange")]
    #[track_caller]
    pub unsafe fn open<T: DeviceRepr>(
        &self,
        ctx: &Context,
        len: usize,
        flags: IpcMemFlags,
    ) -> Result<IpcMemory<T>> {
        let bytes = super::view::byte_len::<T>("IpcMemHandle::open", len)?;
        let _cur = ctx.enter()?;
        let mut ptr = 0;
        call!(
            // SAFETY: the handle is passed by value; writes one CUdeviceptr, owned by the
            // IpcMemory built in the next statement (closed with cuIpcCloseMemHandle).
            unsafe { sys::cuIpcOpenMemHandle_v2(&mut ptr, self.as_raw(), flags.as_raw()) },
        )?;
        let mem = IpcMemory {
            ptr,
            len,
            ctx: ctx.clone(),
            _marker: PhantomData,
        };
        let (mut base, mut size) = (0, 0);
        call!(
            // SAFETY: `ptr` is a live mapping; writes one CUdeviceptr and one size_t.
            unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr) },
        )?;
        let available = size.saturating_sub((ptr - base) as usize);
        if bytes > available {
            // `mem` is dropped here, closing the handle.
            return Err(Error::Vmm(VmmError::SharedAllocationTooSmall {
                what: "IpcMemHandle::open",
                needed: bytes,
                size: available,
            }));
        }
        Ok(mem)
    }
}

impl std::fmt::Debug for IpcMemHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fmt_prefix(f, "IpcMemHandle", &self.0)
    }
}

impl IpcEventHandle {
    /// The size of a handle in bytes.
    pub const SIZE: usize = 64;

    /// The handle's bytes, to send to another process.
    pub const fn to_bytes(self) -> [u8; 64] {
        self.0
    }

    /// A handle from bytes received from another process.
    pub const fn from_bytes(bytes: [u8; 64]) -> IpcEventHandle {
        IpcEventHandle(bytes)
    }

    /// Wraps a raw `CUipcEventHandle`.
    pub fn from_raw(raw: sys::CUipcEventHandle) -> IpcEventHandle {
        IpcEventHandle(bytes_of(raw.reserved))
    }

    /// The raw `CUipcEventHandle`.
    pub fn as_raw(&self) -> sys::CUipcEventHandle {
        sys::CUipcEventHandle {
            reserved: chars_of(self.0),
        }
    }

    /// Opens the event in this process, in `ctx`: recording it or waiting on it acts on the
    /// exporter's event. Destroyed (in this process) on drop.
    #[wraps(cuIpcOpenEventHandle)]
    #[track_caller]
    pub fn open(&self, ctx: &Context) -> Result<Event> {
        let _cur = ctx.enter()?;
        let mut raw = std::ptr::null_mut();
        call!(
            // SAFETY: the handle is passed by value; writes one CUevent, owned by the Event
            // built in the next statement.
            unsafe { sys::cuIpcOpenEventHandle(&mut raw, self.as_raw()) },
        )?;
        // SAFETY: `raw` is a live event of `ctx` opened just now, destroyed by the Event only;
        // an event opened from an IPC handle is interprocess, without timing (cuda.h:
        // cuIpcGetEventHandle requires both flags of the exported event).
        Ok(unsafe {
            Event::from_raw_with_flags(
                raw,
                ctx,
                crate::types::EventFlags::INTERPROCESS | crate::types::EventFlags::DISABLE_TIMING,
            )
        })
    }
}

impl std::fmt::Debug for IpcEventHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fmt_prefix(f, "IpcEventHandle", &self.0)
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// The IPC handle of the allocation, to open in another process
    /// ([`IpcMemHandle::open`]). The buffer must outlive every opening.
    #[wraps(cuIpcGetMemHandle)]
    #[track_caller]
    pub fn ipc_handle(&self) -> Result<IpcMemHandle> {
        let _cur = self.context().enter()?;
        let mut raw = sys::CUipcMemHandle { reserved: [0; 64] };
        call!(
            // SAFETY: the allocation is alive; writes one CUipcMemHandle.
            unsafe { sys::cuIpcGetMemHandle(&mut raw, self.as_raw()) },
        )?;
        Ok(IpcMemHandle::from_raw(raw))
    }
}

impl Event {
    /// The IPC handle of the event, to open in another process ([`IpcEventHandle::open`]).
    /// The event must have been created with [`EventFlags::INTERPROCESS`] and
    /// [`EventFlags::DISABLE_TIMING`](crate::types::EventFlags::DISABLE_TIMING).
    ///
    /// [`EventFlags::INTERPROCESS`]: crate::types::EventFlags::INTERPROCESS
    #[wraps(cuIpcGetEventHandle)]
    #[track_caller]
    pub fn ipc_handle(&self) -> Result<IpcEventHandle> {
        let _cur = self.context().enter()?;
        let mut raw = sys::CUipcEventHandle { reserved: [0; 64] };
        call!(
            // SAFETY: the event is alive; writes one CUipcEventHandle.
            unsafe { sys::cuIpcGetEventHandle(&mut raw, self.as_raw()) },
        )?;
        Ok(IpcEventHandle::from_raw(raw))
    }
}

/// Device memory of another process, opened from an [`IpcMemHandle`] and closed with
/// `cuIpcCloseMemHandle` on drop. A memory owner of the crate's model: its views copy,
/// memset and go to kernels.
///
/// Writes by the two processes are ordered only by synchronisation between them (an
/// interprocess [`Event`], or a message after a synchronise).
///
/// Release: its views may be used on any stream of its context, and `cuIpcCloseMemHandle`
/// is not known to wait for that work, so dropping it synchronises the context first and
/// leaks the mapping when that fails (see `docs/SOUNDNESS.md`).
pub struct IpcMemory<T: DeviceRepr> {
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: Context,
    _marker: PhantomData<T>,
}

// SAFETY: as for DeviceBuffer: device memory addressed by an integer, T plain data.
unsafe impl<T: DeviceRepr> Send for IpcMemory<T> {}
// SAFETY: shared access only reads through the driver.
unsafe impl<T: DeviceRepr> Sync for IpcMemory<T> {}

impl<T: DeviceRepr> Drop for IpcMemory<T> {
    fn drop(&mut self) {
        let ptr = self.ptr;
        // SAFETY: `ptr` was returned by cuIpcOpenMemHandle (or handed over through from_raw),
        // is owned by self and closed once, here, after the context was synchronised (no
        // test shows that cuIpcCloseMemHandle waits for work still using the mapping, so the
        // release does not rely on it; see `Context::release_after_sync`).
        self.ctx
            .release_after_sync("cuIpcCloseMemHandle", move || unsafe {
                sys::cuIpcCloseMemHandle(ptr)
            });
    }
}

impl<T: DeviceRepr> std::fmt::Debug for IpcMemory<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpcMemory")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .finish()
    }
}

impl<T: DeviceRepr> IpcMemory<T> {
    /// Takes ownership of memory opened with `cuIpcOpenMemHandle` in `ctx`.
    ///
    /// # Safety
    /// `ptr` was returned by `cuIpcOpenMemHandle` in `ctx`, the allocation holds at least
    /// `len * size_of::<T>()` bytes, and nothing else closes it.
    pub unsafe fn from_raw(ptr: sys::CUdeviceptr, len: usize, ctx: &Context) -> Self {
        IpcMemory {
            ptr,
            len,
            ctx: ctx.clone(),
            _marker: PhantomData,
        }
    }

    /// Gives up ownership: the caller closes the pointer with `cuIpcCloseMemHandle`.
    pub fn into_raw(self) -> sys::CUdeviceptr {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped; the context clone is dropped once, here.
        unsafe { std::ptr::read(&this.ctx) };
        this.ptr
    }

    /// The device address in this process, valid while `self` lives.
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }
}

// SAFETY: the view covers the opened elements (checked against the allocation's size),
// borrowed from `self`; not stream-ordered (the close synchronises the context first); mutable
// views borrow `self` exclusively.
device_memory!(
    impl[T: DeviceRepr] IpcMemory<T>, mut impl[T: DeviceRepr] IpcMemory<T>;
    |this| (this.ptr, this.len, &this.ctx, std::ptr::null_mut())
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn handles_are_64_plain_bytes() {
        assert_eq!(std::mem::size_of::<IpcMemHandle>(), 64);
        assert_eq!(std::mem::size_of::<IpcEventHandle>(), 64);
        assert_eq!(
            std::mem::size_of::<sys::CUipcMemHandle>(),
            IpcMemHandle::SIZE
        );
        let mut b = [0u8; 64];
        b[0] = 0xff;
        b[63] = 0x80;
        let h = IpcMemHandle::from_bytes(b);
        assert_eq!(format!("{h:?}"), "IpcMemHandle(ff00000000000000..)");
        let e = IpcEventHandle::from_bytes(b);
        assert_eq!(IpcEventHandle::from_raw(e.as_raw()), e);
    }

    proptest! {
        #[test]
        fn mem_handles_round_trip(bytes in proptest::collection::vec(any::<u8>(), 64)) {
            let b: [u8; 64] = bytes.try_into().unwrap();
            let h = IpcMemHandle::from_bytes(b);
            prop_assert_eq!(h.to_bytes(), b);
            prop_assert_eq!(IpcMemHandle::from_raw(h.as_raw()), h);
            let e = IpcEventHandle::from_bytes(b);
            prop_assert_eq!(IpcEventHandle::from_raw(e.as_raw()).to_bytes(), b);
        }
    }
}
