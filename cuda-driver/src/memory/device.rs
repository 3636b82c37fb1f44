//! Device memory: [`DeviceBuffer`], allocated with `cuMemAlloc_v2` and freed with
//! `cuMemFree_v2`. Its operations are those of its views (see [`super::view`]).

use std::marker::PhantomData;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::view::byte_len;
use crate::context::Context;
use crate::error::Result;
use crate::memory::owner::{device_memory, DeviceMemory, DeviceMemoryMut};
use crate::repr::DeviceRepr;
use crate::stream::Stream;

/// A typed allocation of device memory (`cuMemAlloc_v2`), freed on drop in its own context.
///
/// The buffer keeps its [`Context`] alive and can be used from any thread: each operation
/// makes the context current for its span if it is not. Its copies and memsets are those of
/// its views, [`DeviceSlice`](crate::DeviceSlice) and
/// [`DeviceSliceMut`](crate::DeviceSliceMut), through [`DeviceMemory`] and
/// [`DeviceMemoryMut`] (in [`prelude`](crate::prelude)); a kernel takes its views as
/// arguments.
///
/// **Its blocking operations (those without a stream) are not ordered after work queued on
/// [`NON_BLOCKING`](crate::types::StreamFlags::NON_BLOCKING) streams**: after a kernel or an
/// `*_async` operation on such a stream, synchronise it before a blocking copy or memset (see
/// [below](#ordering-of-the-blocking-operations)).
///
/// ```no_run
/// use cuda_driver::prelude::*;
/// use cuda_driver::{Device, DeviceBuffer};
///
/// let ctx = Device::get(0)?.primary_context()?;
/// let mut buf = DeviceBuffer::from_slice(&ctx, &[1u32, 2, 3, 4])?;
/// buf.slice_mut(2..)?.memset(7u32)?;
/// assert_eq!(buf.to_vec()?, [1, 2, 7, 7]);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
///
/// # Ordering of the blocking operations
///
/// The operations without a stream run on the default stream (the legacy one, or the
/// per-thread one with the `per-thread-default-stream` feature) and are ordered like it, in
/// both directions: after the work already queued on the default stream and on streams
/// created with [`StreamFlags::DEFAULT`](crate::types::StreamFlags::DEFAULT), and before the work
/// queued there later; **not** after, nor before, the work of
/// [`NON_BLOCKING`](crate::types::StreamFlags::NON_BLOCKING) streams (with the feature, of any
/// stream but this thread's default stream and the legacy one). So synchronise a non-blocking stream ([`Stream::synchronize`]) before a blocking
/// operation that must see its work, and synchronise the default stream
/// ([`Stream::null`]`(ctx).synchronize()`) before work on a non-blocking stream that must
/// see a blocking operation's result, or use the `*_async` forms on that stream. A
/// blocking operation that misses such work reads or overwrites bytes a stream is still
/// writing: a data race on device memory with unspecified results (every bit pattern is a
/// valid `T`), not undefined behaviour on the host; the GPU test
/// `memory::copy::blocking_copies_follow_blocking_streams_not_non_blocking_ones` shows the rule.
///
/// When they return, with the driver's
/// [synchronisation rules](https://docs.nvidia.com/cuda/cuda-driver-api/api-sync-behavior.html):
/// a copy to the host is done; a copy from page-locked memory too; a copy from pageable
/// memory has read `src` but may still be travelling to the device; memsets and
/// device-to-device copies may still be running. The constructors [`zeroed`](Self::zeroed)
/// and [`from_slice`](Self::from_slice) return only when the data is in place.
#[wraps(CUdeviceptr)]
pub struct DeviceBuffer<T: DeviceRepr> {
    /// Kept first and by value: a kernel argument is a pointer to this field.
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
    pub(crate) ctx: Context,
    pub(crate) _marker: PhantomData<T>,
}

// SAFETY: device memory is not tied to a host thread; DeviceBuffer<T> only hands out T by copy
// (T: DeviceRepr is Copy + 'static, plain data), and the driver's copy functions are
// thread-safe.
unsafe impl<T: DeviceRepr> Send for DeviceBuffer<T> {}
// SAFETY: shared access only reads device memory through the driver.
unsafe impl<T: DeviceRepr> Sync for DeviceBuffer<T> {}

impl<T: DeviceRepr> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        let ptr = self.ptr;
        // SAFETY: `ptr` was allocated by cuMemAlloc_v2 (or cuMemAllocManaged, for the
        // managed buffer that wraps this type) in `ctx`, is owned by self and freed once,
        // here. cuMemFree waits for device work still using the memory (GPU tests
        // release::cu_mem_free_waits_for_work_queued_through_views_on_another_stream and
        // release::cu_mem_free_of_managed_memory_waits_for_work_queued_on_its_stream).
        self.ctx
            .release("cuMemFree_v2", move || unsafe { sys::cuMemFree_v2(ptr) });
    }
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Allocates room for `len` elements. The contents are unspecified (but every bit pattern
    /// is a valid `T`). A buffer of zero bytes allocates nothing.
    #[wraps(cuMemAlloc)]
    #[track_caller]
    pub fn new(ctx: &Context, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>("DeviceBuffer::new", len)?;
        let _cur = ctx.enter()?;
        let mut ptr = 0;
        if bytes > 0 {
            call!(
                // SAFETY: writes one CUdeviceptr; the allocation is owned by the buffer built in
                // the next statement.
                unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) },
            )?;
        }
        Ok(DeviceBuffer {
            ptr,
            len,
            ctx: ctx.clone(),
            _marker: PhantomData,
        })
    }

    /// Allocates `len` elements with every byte zero, and returns once they are: the buffer
    /// is ready for work on any stream.
    ///
    /// Calls `cuMemAlloc_v2`, `cuMemsetD8_v2` and `cuStreamSynchronize` of the default stream.
    #[wraps(cuMemAlloc_v2, cuStreamSynchronize, cuMemsetD8)]
    #[track_caller]
    pub fn zeroed(ctx: &Context, len: usize) -> Result<Self> {
        let mut buf = Self::new(ctx, len)?;
        if buf.bytes() > 0 {
            buf.memset(0u8)?;
            Stream::null(ctx).synchronize()?;
        }
        Ok(buf)
    }

    /// Allocates a buffer holding a copy of `src`, and returns once the copy has landed: the
    /// buffer is ready for work on any stream.
    ///
    /// Calls `cuMemAlloc_v2`, `cuMemcpyHtoD_v2` and, for a pageable `src` whose copy may
    /// still be in flight, `cuStreamSynchronize` of the default stream.
    #[wraps(cuMemAlloc_v2, cuMemcpyHtoD)]
    #[track_caller]
    pub fn from_slice(ctx: &Context, src: &[T]) -> Result<Self> {
        let mut buf = Self::new(ctx, src.len())?;
        if buf.bytes() > 0 {
            buf.copy_from_host(src)?;
            Stream::null(ctx).synchronize()?;
        }
        Ok(buf)
    }

    /// Takes ownership of `len` elements at `ptr`, allocated with `cuMemAlloc` in `ctx`.
    ///
    /// # Safety
    /// `ptr` was returned by `cuMemAlloc*` in `ctx` for at least `len * size_of::<T>()` bytes
    /// (or is 0 with a zero-byte length) and nothing else frees it.
    pub unsafe fn from_raw(ptr: sys::CUdeviceptr, len: usize, ctx: &Context) -> Self {
        DeviceBuffer {
            ptr,
            len,
            ctx: ctx.clone(),
            _marker: PhantomData,
        }
    }

    /// Gives up ownership; the caller frees the pointer with `cuMemFree`.
    pub fn into_raw(self) -> sys::CUdeviceptr {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped; the context clone is dropped exactly once here.
        unsafe { std::ptr::read(&this.ctx) };
        this.ptr
    }

    /// The device address, valid while `self` lives (0 for a buffer of zero bytes).
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// The buffer's context.
    #[inline]
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

// SAFETY: the view covers the buffer's allocation, borrowed from `self`; not stream-ordered
// (`cuMemFree` waits for the device); mutable views borrow `self` exclusively.
device_memory!(
    impl[T: DeviceRepr] DeviceBuffer<T>, mut impl[T: DeviceRepr] DeviceBuffer<T>;
    |this| (this.ptr, this.len, &this.ctx, std::ptr::null_mut())
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::layout::LayoutError;
    use crate::error::Error;
    use crate::handle::OwnedHandle;
    use crate::memory::pool::AsyncDeviceBuffer;
    use crate::memory::view::{byte_len, memset_count, resolve_range};
    use crate::stream::StreamRef;
    use proptest::prelude::*;
    use std::mem::ManuallyDrop;

    /// A context handle that is never used by the driver: every test below must fail before
    /// any driver call (on the stub, a driver call would fail with CUDA_ERROR_STUB_LIBRARY,
    /// not with the Rust-side error the tests expect).
    fn fake_context(raw: usize) -> ManuallyDrop<Context> {
        // SAFETY: the handle is never passed to the driver (the tests check that they fail
        // first) and never dropped (ManuallyDrop), so nothing destroys the fake context.
        ManuallyDrop::new(unsafe {
            Context::from_raw(raw as sys::CUcontext, crate::device::Device::from_raw(0))
        })
    }

    fn fake_buffer<T: DeviceRepr>(ctx: &Context, len: usize) -> ManuallyDrop<DeviceBuffer<T>> {
        // SAFETY: never dropped (ManuallyDrop) and never handed to the driver.
        ManuallyDrop::new(unsafe { DeviceBuffer::from_raw(0x1000, len, ctx) })
    }

    fn fake_stream(raw: usize, ctx: &Context) -> StreamRef<'_> {
        // SAFETY: never handed to the driver by the tests (they fail before any call).
        unsafe { StreamRef::borrow_raw(raw as sys::CUstream, ctx) }
    }

    fn is_mismatch(r: Result<()>, what: &str, dst: usize, src: usize) -> bool {
        matches!(r, Err(Error::LengthMismatch { what: w, dst: d, src: s }) if w == what && d == dst && s == src)
    }

    #[test]
    fn length_mismatches_fail_before_any_driver_call() {
        let ctx = fake_context(0x10);
        let mut buf = fake_buffer::<f32>(&ctx, 4);
        let other = fake_buffer::<f32>(&ctx, 3);
        let host3 = [1.0f32; 3];
        let mut host5 = [0.0f32; 5];
        assert!(is_mismatch(
            buf.copy_from_host(&host3),
            "copy_from_host",
            4,
            3
        ));
        assert!(is_mismatch(
            buf.copy_to_host(&mut host5),
            "copy_to_host",
            5,
            4
        ));
        assert!(is_mismatch(
            buf.copy_from_device(&*other),
            "copy_from_device",
            4,
            3
        ));
        assert!(is_mismatch(
            buf.copy_from_peer(&*other),
            "copy_from_peer",
            4,
            3
        ));
        let stream = fake_stream(0x20, &ctx);
        // SAFETY: the calls fail on the length check, before anything is queued.
        unsafe {
            assert!(is_mismatch(
                buf.copy_from_host_async(&host3, &stream),
                "copy_from_host_async",
                4,
                3
            ));
            assert!(is_mismatch(
                buf.copy_to_host_async(&mut host5, &stream),
                "copy_to_host_async",
                5,
                4
            ));
        }
        assert!(is_mismatch(
            buf.copy_from_device_async(&*other, &stream),
            "copy_from_device_async",
            4,
            3
        ));
        assert!(is_mismatch(
            buf.copy_from_peer_async(&*other, &stream),
            "copy_from_peer_async",
            4,
            3
        ));
        // Through views too.
        let mut view = buf.slice_mut(1..3).unwrap();
        assert!(is_mismatch(
            view.copy_from_host(&host3),
            "copy_from_host",
            2,
            3
        ));
    }

    #[test]
    fn empty_copies_make_no_driver_call() {
        let ctx = fake_context(0x10);
        let mut buf = fake_buffer::<u64>(&ctx, 0);
        buf.copy_from_host(&[]).unwrap();
        buf.copy_to_host(&mut []).unwrap();
        assert!(buf.to_vec().unwrap().is_empty());
        buf.memset(1u32).unwrap();
    }

    #[test]
    fn stream_of_another_context_is_refused() {
        let ctx = fake_context(0x10);
        let other = fake_context(0x11);
        let mut buf = fake_buffer::<u32>(&ctx, 4);
        let stream = fake_stream(0x20, &other);
        let e = buf.memset_async(0u32, &stream).unwrap_err();
        assert!(
            matches!(
                e,
                Error::ContextMismatch {
                    expected: 0x10,
                    found: 0x11,
                    ..
                }
            ),
            "{e:?}"
        );
        let src = fake_buffer::<u32>(&ctx, 4);
        assert!(matches!(
            buf.copy_from_device_async(&*src, &stream),
            Err(Error::ContextMismatch { .. })
        ));
    }

    #[test]
    fn stream_ordered_memory_refuses_other_streams() {
        let ctx = fake_context(0x10);
        let home = fake_stream(0x20, &ctx);
        let other = fake_stream(0x30, &ctx);
        // SAFETY: never dropped and never handed to the driver.
        let mut buf =
            ManuallyDrop::new(unsafe { AsyncDeviceBuffer::<u32>::from_raw(0x1000, 8, &home) });
        assert_eq!(buf.as_view().stream_order(), Some(0x20 as sys::CUstream));
        let e = buf.memset_async(1u32, &other).unwrap_err();
        assert!(
            matches!(
                e,
                Error::StreamMismatch {
                    what: "memset_async",
                    expected: 0x20,
                    found: 0x30
                }
            ),
            "{e:?}"
        );
        // A sub-view keeps the order.
        let mut part = buf.slice_mut(2..4).unwrap();
        assert!(matches!(
            part.memset_async(1u32, &other),
            Err(Error::StreamMismatch { .. })
        ));
        let mut host = [0u32; 8];
        // SAFETY: refused before anything is queued.
        let r = unsafe { buf.copy_to_host_async(&mut host, &other) };
        assert!(matches!(r, Err(Error::StreamMismatch { .. })));
        // A plain buffer copied into it on another stream: refused too.
        let mut plain = fake_buffer::<u32>(&ctx, 8);
        assert!(matches!(
            plain.copy_from_device_async(&*buf, &other),
            Err(Error::StreamMismatch { .. })
        ));
        // Two stream-ordered buffers of different streams in one blocking copy: refused.
        // SAFETY: as above.
        let b2 =
            ManuallyDrop::new(unsafe { AsyncDeviceBuffer::<u32>::from_raw(0x2000, 8, &other) });
        assert!(matches!(
            buf.copy_from_device(&*b2),
            Err(Error::StreamMismatch {
                what: "copy_from_device",
                ..
            })
        ));
    }

    #[test]
    fn per_thread_stream_cannot_order_memory() {
        let ctx = fake_context(0x10);
        let pt = Stream::per_thread(&ctx);
        let e = DeviceBuffer::<u32>::new_async(&pt, 16).unwrap_err();
        assert!(matches!(e, Error::InvalidStream { .. }), "{e:?}");
        if cfg!(feature = "per-thread-default-stream") {
            assert!(DeviceBuffer::<u32>::new_async(&Stream::null(&ctx), 16).is_err());
        }
    }

    #[test]
    fn out_of_bounds_views_name_the_values() {
        let ctx = fake_context(0x10);
        let mut buf = fake_buffer::<u32>(&ctx, 10);
        let e = buf.slice(4..11).unwrap_err();
        assert!(
            matches!(
                e,
                Error::OutOfBounds {
                    start: 4,
                    end: 11,
                    len: 10
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "range 4..11 is out of bounds of a buffer of 10 elements"
        );
        #[allow(clippy::reversed_empty_ranges)]
        let e = buf.slice_mut(6..5).unwrap_err();
        assert!(matches!(
            e,
            Error::OutOfBounds {
                start: 6,
                end: 5,
                len: 10
            }
        ));
        let e = buf.slice(..=usize::MAX).unwrap_err();
        assert!(matches!(
            e,
            Error::OutOfBounds {
                end: usize::MAX,
                ..
            }
        ));
        assert!(buf.as_view().split_at(11).is_err());
        assert!(buf.as_view_mut().split_at_mut(11).is_err());
        // A view of a view is bounded by the view.
        let v = buf.slice(2..6).unwrap();
        assert!(matches!(
            v.slice(3..5),
            Err(Error::OutOfBounds {
                start: 3,
                end: 5,
                len: 4
            })
        ));
    }

    #[test]
    fn views_address_the_right_elements() {
        let ctx = fake_context(0x10);
        let mut buf = fake_buffer::<[f32; 3]>(&ctx, 10);
        let v = buf.slice(2..7).unwrap();
        assert_eq!((v.as_raw(), v.len(), v.bytes()), (0x1000 + 24, 5, 60));
        let w = v.slice(1..=2).unwrap();
        assert_eq!((w.as_raw(), w.len()), (0x1000 + 36, 2));
        let (a, b) = v.split_at(5).unwrap();
        assert_eq!((a.len(), b.len(), b.as_raw()), (5, 0, 0x1000 + 84));
        let mut m = buf.as_view_mut();
        let (a, b) = m.split_at_mut(4).unwrap();
        assert_eq!((a.as_raw(), a.len()), (0x1000, 4));
        assert_eq!((b.as_raw(), b.len()), (0x1000 + 48, 6));
        assert_eq!(buf.bytes(), 120);
        assert_eq!(buf.device_ptr(), 0x1000);
    }

    #[test]
    fn memset_width_must_divide_the_element_size() {
        let ctx = fake_context(0x10);
        let mut bytes = fake_buffer::<u8>(&ctx, 8);
        let e = bytes.memset(1u16).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Layout(LayoutError::MemsetWidth {
                    width: 2,
                    size: 1,
                    ..
                })
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("memset writes 2-byte words"), "{e}");
        assert!(bytes.memset(1u32).is_err());
        let mut three = fake_buffer::<[u8; 3]>(&ctx, 8);
        assert!(three.memset(1u16).is_err());
        let mut sixes = fake_buffer::<[u16; 3]>(&ctx, 8);
        assert!(sixes.memset(1u32).is_err());
        let stream = fake_stream(0x20, &ctx);
        assert!(matches!(
            bytes.memset_async(1u32, &stream),
            Err(Error::Layout(LayoutError::MemsetWidth { .. }))
        ));
        assert_eq!(memset_count::<[u16; 3], u16>("m", 8).unwrap(), 24);
        assert_eq!(memset_count::<f64, u32>("m", 8).unwrap(), 16);
        assert_eq!(memset_count::<u8, u8>("m", 8).unwrap(), 8);
    }

    #[test]
    fn byte_size_overflow_is_an_error() {
        let e = byte_len::<u64>("DeviceBuffer::new", usize::MAX / 4).unwrap_err();
        assert!(matches!(
            e,
            Error::SizeOverflow { count, size: 8, .. } if count == usize::MAX / 4
        ));
        assert_eq!(byte_len::<u64>("x", 3).unwrap(), 24);
        let ctx = fake_context(0x10);
        // The overflow is found before the context is entered.
        assert!(matches!(
            DeviceBuffer::<u64>::new(&ctx, usize::MAX / 4),
            Err(Error::SizeOverflow { .. })
        ));
    }

    proptest! {
        #[test]
        fn resolve_range_accepts_exactly_the_ranges_inside(a in 0usize..40, b in 0usize..40, len in 0usize..32) {
            let r = resolve_range(a..b, len);
            if a <= b && b <= len {
                prop_assert_eq!(r.unwrap(), (a, b));
            } else {
                let is_oob = matches!(r, Err(Error::OutOfBounds { start, end, len: l }) if start == a && end == b && l == len);
                prop_assert!(is_oob);
            }
            let r = resolve_range(a..=b, len);
            prop_assert_eq!(r.is_ok(), a <= b + 1 && b < len);
        }
    }
}
