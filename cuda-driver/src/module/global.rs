//! [`Global`]: a module-scope variable, and the registry that keeps its handles exclusive.

use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;
use std::sync::Mutex;

use cuda_driver_sys as sys;

use super::Keep;
use crate::context::Context;
use crate::error::module::ModuleError;
use crate::error::{Error, Result};
use crate::memory::owner::device_memory;
use crate::repr::DeviceRepr;

/// The device addresses that a live [`Global`] or [`Managed`](crate::library::Managed) handle refers to.
/// A module's variable and the same variable through its library have one address, so the
/// registry catches every alias.
static CLAIMED: Mutex<BTreeSet<sys::CUdeviceptr>> = Mutex::new(BTreeSet::new());

/// The one live handle to the variable at a device address: released on drop.
pub(crate) struct AddressClaim(sys::CUdeviceptr);

impl AddressClaim {
    /// Claims `ptr` for the variable `name` (a `kind`: "global", "managed variable"), or
    /// [`Error::AlreadyBorrowed`] while another handle holds it.
    pub(crate) fn new(ptr: sys::CUdeviceptr, kind: &'static str, name: &str) -> Result<Self> {
        let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
        if claimed.insert(ptr) {
            Ok(AddressClaim(ptr))
        } else {
            Err(Error::AlreadyBorrowed {
                kind,
                name: name.to_owned(),
            })
        }
    }
}

impl Drop for AddressClaim {
    fn drop(&mut self) {
        CLAIMED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

/// The number of `T`s in a variable of `bytes` bytes, or [`ModuleError::SizeMismatch`].
pub(crate) fn element_count<T>(kind: &'static str, name: &str, bytes: usize) -> Result<usize> {
    let size = size_of::<T>();
    if size == 0 || bytes % size != 0 {
        return Err(Error::Module(ModuleError::SizeMismatch {
            kind,
            name: name.to_owned(),
            bytes,
            elem: std::any::type_name::<T>(),
            size,
        }));
    }
    Ok(bytes / size)
}

/// A module-scope variable (`__device__` or `__constant__`) of a module or library in one
/// context, viewed as `len` elements of `T`: copy to and from it, or pass its views to a
/// kernel. It keeps its module (or library) and context alive.
///
/// A `Global` is the only handle to its variable while it lives: looking the variable up again
/// (through the module, a clone of it, or its library) is [`Error::AlreadyBorrowed`] until it
/// is dropped, so two mutable views of one variable cannot exist.
pub struct Global<T: DeviceRepr> {
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: Context,
    _claim: AddressClaim,
    _keep: Keep,
    _marker: PhantomData<T>,
}

// SAFETY: a device address of a loaded module; the driver's copies are thread-safe, T is
// plain data.
unsafe impl<T: DeviceRepr> Send for Global<T> {}
// SAFETY: as above; `&self` methods only read device memory through the driver.
unsafe impl<T: DeviceRepr> Sync for Global<T> {}

impl<T: DeviceRepr> std::fmt::Debug for Global<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Global")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: DeviceRepr> Global<T> {
    /// The variable `name` at `ptr`, `bytes` long, in `ctx`, kept loaded by `keep`: its size
    /// checked against `T`, its address claimed.
    #[track_caller]
    pub(crate) fn new(
        ptr: sys::CUdeviceptr,
        bytes: usize,
        name: &str,
        ctx: &Context,
        keep: Keep,
    ) -> Result<Global<T>> {
        let len = element_count::<T>("global", name, bytes)?;
        Ok(Global {
            ptr,
            len,
            ctx: ctx.clone(),
            _claim: AddressClaim::new(ptr, "global", name)?,
            _keep: keep,
            _marker: PhantomData,
        })
    }

    /// The variable's device address in its context.
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }
}

// SAFETY: the view covers the variable (`len` elements, checked at lookup), which stays loaded
// while `self` lives; not stream-ordered. Mutable views borrow `self` exclusively; the address
// claim makes this the only handle to the variable, so no other handle can make a second
// mutable view.
device_memory!(
    impl[T: DeviceRepr] Global<T>, mut impl[T: DeviceRepr] Global<T>;
    |this| (this.ptr, this.len, &this.ctx, ptr::null_mut())
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_per_address_until_dropped() {
        // Addresses no real allocation has (the registry is process-wide).
        let a = AddressClaim::new(0xdead_0000_0010, "global", "x").unwrap();
        match AddressClaim::new(0xdead_0000_0010, "managed variable", "x_again") {
            Err(Error::AlreadyBorrowed { kind, name }) => {
                assert_eq!((kind, name.as_str()), ("managed variable", "x_again"))
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        let b = AddressClaim::new(0xdead_0000_0020, "global", "y").unwrap();
        drop(a);
        let a2 = AddressClaim::new(0xdead_0000_0010, "global", "x").unwrap();
        drop((a2, b));
    }

    #[test]
    fn sizes_must_be_whole_elements() {
        assert_eq!(element_count::<f32>("global", "t", 64).unwrap(), 16);
        assert_eq!(element_count::<[f32; 16]>("global", "t", 64).unwrap(), 1);
        match element_count::<f64>("global", "dev_counter", 4) {
            Err(Error::Module(ModuleError::SizeMismatch {
                kind,
                name,
                bytes,
                size,
                ..
            })) => assert_eq!(
                (kind, name.as_str(), bytes, size),
                ("global", "dev_counter", 4, 8)
            ),
            other => panic!("{other:?}"),
        }
        assert!(element_count::<()>("global", "z", 0).is_err());
    }
}
