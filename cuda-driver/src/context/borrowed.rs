//! [`ContextRef`]: a context borrowed by its raw handle, which the crate never releases.

use std::marker::PhantomData;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use super::Context;
use crate::error::Result;
use crate::handle::Handle;

/// A borrowed context (`CUcontext`): one the crate did not create and does not release, such
/// as the one `cuCtxGetCurrent` returns in a program that mixes libraries, or one a C library
/// hands over. Dropping it releases nothing; it is `Copy`.
///
/// It is a different type from the owner [`Context`], not a flag inside it, and it does not
/// deref to one: objects created in a context keep a [`Context`] alive, which a borrow cannot
/// promise. It carries the lifetime of what keeps the context alive:
///
/// ```compile_fail,E0597
/// use cuda_driver::context::ContextRef;
/// # fn f(dev: cuda_driver::Device) -> cuda_driver::Result<()> {
/// let borrowed: ContextRef<'_>;
/// {
///     let ctx = dev.primary_context()?;
///     borrowed = ctx.as_context_ref();
/// } // `ctx` released here, while `borrowed` is still used below
/// let _ = borrowed.api_version();
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
#[doc(alias = "CUcontext")]
pub struct ContextRef<'a> {
    raw: sys::CUcontext,
    _borrow: PhantomData<&'a Context>,
}

// SAFETY: a CUcontext may be used from any host thread (CUDA Programming Guide, Driver API,
// Context); a ContextRef only names it and releases nothing.
unsafe impl Send for ContextRef<'_> {}
// SAFETY: as above; a ContextRef has no mutable state.
unsafe impl Sync for ContextRef<'_> {}

impl std::fmt::Debug for ContextRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ContextRef").field(&self.raw).finish()
    }
}

impl Handle for ContextRef<'_> {
    type Raw = sys::CUcontext;

    /// The raw `CUcontext`, valid for the borrow. It is not the crate's: never release it.
    #[inline]
    fn as_raw(&self) -> sys::CUcontext {
        self.raw
    }
}

impl PartialEq<Context> for ContextRef<'_> {
    fn eq(&self, other: &Context) -> bool {
        self.raw == other.as_raw()
    }
}

impl PartialEq<ContextRef<'_>> for Context {
    fn eq(&self, other: &ContextRef<'_>) -> bool {
        self.as_raw() == other.raw
    }
}

impl<'a> ContextRef<'a> {
    /// Borrows a context by its raw handle; dropping the borrow releases nothing.
    ///
    /// # Safety
    /// `raw` is a live context that stays alive (is neither destroyed nor, for a primary
    /// context, released for the last time) for `'a`.
    #[inline]
    pub unsafe fn borrow_raw(raw: sys::CUcontext) -> ContextRef<'a> {
        ContextRef {
            raw,
            _borrow: PhantomData,
        }
    }

    /// Whether this context is current on the calling thread.
    #[track_caller]
    pub fn is_current(&self) -> Result<bool> {
        Ok(Context::current_raw()? == Some(self.raw))
    }

    /// The API version the context was created with (such as 3020).
    #[wraps(cuCtxGetApiVersion)]
    #[track_caller]
    pub fn api_version(&self) -> Result<u32> {
        let mut v = 0;
        call!(
            // SAFETY: the context is alive for 'a (borrow_raw's contract); writes one
            // unsigned int.
            unsafe { sys::cuCtxGetApiVersion(self.raw, &mut v) },
        )?;
        Ok(v)
    }

    /// The context's unique id in this process.
    #[wraps(cuCtxGetId)]
    #[track_caller]
    pub fn id(&self) -> Result<u64> {
        let mut id = 0;
        call!(
            // SAFETY: the context is alive for 'a (borrow_raw's contract); writes one unsigned
            // long long.
            unsafe { sys::cuCtxGetId(self.raw, &mut id) },
        )?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use std::mem::ManuallyDrop;

    use super::ContextRef;
    use crate::context::Context;
    use crate::device::Device;
    use crate::handle::{Handle, OwnedHandle};

    #[test]
    fn a_borrowed_context_names_the_owner_it_borrows() {
        // SAFETY: a fake handle, never given to the driver and never dropped.
        let ctx = ManuallyDrop::new(unsafe {
            Context::from_raw(0x10 as crate::sys::CUcontext, Device::from_raw(0))
        });
        let borrowed = ctx.as_context_ref();
        assert_eq!(borrowed.as_raw(), ctx.as_raw());
        assert_eq!(borrowed, *ctx);
        assert_eq!(*ctx, borrowed);
        // SAFETY: a fake handle, never given to the driver.
        let other = unsafe { ContextRef::borrow_raw(0x20 as crate::sys::CUcontext) };
        assert!(other != borrowed);
    }
}
