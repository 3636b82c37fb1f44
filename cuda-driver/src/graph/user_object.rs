//! User objects: values whose lifetime graphs and executable graphs share, destroyed by the
//! driver when the last reference is released.

//! Graph nodes of every kind: adding them to a [`Graph`], their typed handles and parameters.

use crate::error::Result;
use crate::graph::Graph;
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::stream::run_host_fn;
use crate::types::UserObjectFlags;
use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;
use std::ffi::c_void;
use std::ptr;

impl Graph {
    /// Makes this graph hold one more reference to `obj` (`cuGraphRetainUserObject`); the
    /// graph, its clones and execs made from it keep the object alive. Release it with
    /// [`release_user_object`](Self::release_user_object).
    #[wraps(cuGraphRetainUserObject)]
    #[track_caller]
    pub fn retain_user_object(&self, obj: &UserObject) -> Result<()> {
        call!(
            // SAFETY: both are live; takes a new reference (no move).
            unsafe { sys::cuGraphRetainUserObject(self.raw, obj.raw, 1, 0) },
        )
    }

    /// Drops one reference this graph holds to `obj`.
    ///
    /// # Safety
    /// The graph holds a reference to `obj` taken with
    /// [`retain_user_object`](Self::retain_user_object) and not yet released.
    #[wraps(cuGraphReleaseUserObject)]
    #[track_caller]
    pub unsafe fn release_user_object(&self, obj: &UserObject) -> Result<()> {
        call!(
            // SAFETY: the caller's guarantee: the graph holds the reference released.
            unsafe { sys::cuGraphReleaseUserObject(self.raw, obj.raw, 1) },
        )
    }
}

/// A CUDA user object (`CUuserObject`): a Rust value with a reference count the driver
/// shares with graphs, dropped (on a driver thread, under the host-function rules: crate
/// calls refused, CUDA objects released on the release thread, panics caught) when the last
/// reference, this handle's or a graph's, is gone. Cloning takes a new reference
/// (`cuUserObjectRetain`); dropping releases one (`cuUserObjectRelease`).
#[wraps(CUuserObject)]
pub struct UserObject {
    raw: sys::CUuserObject,
}

// SAFETY: user object references may be taken and dropped from any thread; the value is
// Send + Sync.
unsafe impl Send for UserObject {}
// SAFETY: as above.
unsafe impl Sync for UserObject {}
impl std::fmt::Debug for UserObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UserObject").field(&self.raw).finish()
    }
}

extern "C" fn user_object_drop<T: Send + Sync + 'static>(data: *mut c_void) {
    run_host_fn(|| {
        // SAFETY: `data` is the Box<T> leaked by UserObject::new; the driver calls the
        // destructor once, after the last reference is gone.
        drop(unsafe { Box::from_raw(data.cast::<T>()) });
    });
}

impl Handle for UserObject {
    type Raw = sys::CUuserObject;

    /// The raw `CUuserObject`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUuserObject {
        self.raw
    }
}

impl OwnedHandle for UserObject {
    type Parent<'p> = ();

    /// Takes ownership of one reference to a raw user object.
    ///
    /// # Safety
    /// The caller owns one reference to the live object `raw`, which moves into the value.
    unsafe fn from_raw(raw: sys::CUuserObject, (): ()) -> UserObject {
        UserObject { raw }
    }

    /// Gives up this handle's reference without releasing it (`cuUserObjectRelease`).
    fn into_raw(self) -> sys::CUuserObject {
        give_up!(self, raw; drop())
    }
}

impl UserObject {
    /// Moves `value` into a new user object holding one reference (this handle's).
    #[wraps(cuUserObjectCreate)]
    #[track_caller]
    pub fn new<T: Send + Sync + 'static>(value: T) -> Result<UserObject> {
        crate::init()?;
        let data = Box::into_raw(Box::new(value));
        let mut raw = ptr::null_mut();
        // SAFETY: `data` is a live Box<T>; the destructor takes it back once.
        let r = call!(unsafe {
            sys::cuUserObjectCreate(
                &mut raw,
                data.cast(),
                Some(user_object_drop::<T>),
                1,
                UserObjectFlags::NO_DESTRUCTOR_SYNC.as_raw(),
            )
        });
        if r.is_err() {
            // SAFETY: no user object owns the box: it is still ours.
            drop(unsafe { Box::from_raw(data) });
        }
        r?;
        Ok(UserObject { raw })
    }

    /// A new handle with its own reference.
    #[wraps(cuUserObjectRetain)]
    #[track_caller]
    pub fn try_clone(&self) -> Result<UserObject> {
        call!(
            // SAFETY: the object is alive (self holds a reference); takes one more.
            unsafe { sys::cuUserObjectRetain(self.raw, 1) },
        )?;
        Ok(UserObject { raw: self.raw })
    }
}

impl Drop for UserObject {
    fn drop(&mut self) {
        let raw = crate::release::SendRaw(self.raw);
        crate::release::release(move || {
            // SAFETY: releases the one reference this handle owns; the destructor runs on a
            // driver thread once the last reference is gone.
            let r = unsafe { sys::cuUserObjectRelease(raw.get(), 1) };
            crate::error::report_drop_error("cuUserObjectRelease", r);
        });
    }
}
