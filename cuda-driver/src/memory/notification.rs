//! Asynchronous notifications of a device (of the reference's memory management group): the
//! driver tells the program, on a thread of its own, that the device is over its memory
//! budget.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::device::Device;
use crate::entry_point::newer;
use crate::error::{report_drop_error, Result};
use crate::init::init;
use crate::stream::run_host_fn;
use crate::types::AsyncNotificationType;

/// One notification (`CUasyncNotificationInfo`).
#[wraps(CUasyncNotificationInfo)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncNotification {
    /// What happened.
    pub kind: AsyncNotificationType,
    /// For [`AsyncNotificationType::OVER_BUDGET`]: by how many bytes the device's memory use
    /// exceeds its budget.
    pub bytes_over_budget: Option<u64>,
}

type Callback = Arc<dyn Fn(AsyncNotification) + Send + Sync>;

/// The registered callbacks, by id: the driver is handed the id, never a pointer, so a
/// notification that arrives while (or after) its registration is dropped finds nothing and
/// does nothing instead of calling a freed closure.
static NEXT: AtomicUsize = AtomicUsize::new(1);
static CALLBACKS: Mutex<Option<HashMap<usize, Callback>>> = Mutex::new(None);

fn table() -> std::sync::MutexGuard<'static, Option<HashMap<usize, Callback>>> {
    CALLBACKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Turns the driver's description into an [`AsyncNotification`]; `None` for a null pointer.
///
/// # Safety
/// `info` is null or points to a `CUasyncNotificationInfo` valid for the call.
unsafe fn notification(info: *const sys::CUasyncNotificationInfo) -> Option<AsyncNotification> {
    // SAFETY: the caller's guarantee.
    let info = unsafe { info.as_ref() }?;
    let kind = AsyncNotificationType::from_raw(info.type_);
    let bytes_over_budget = if kind == AsyncNotificationType::OVER_BUDGET {
        // SAFETY: for this type the union holds `overBudget` (cuda.h).
        Some(unsafe { info.info.overBudget.bytesOverBudget })
    } else {
        None
    };
    Some(AsyncNotification {
        kind,
        bytes_over_budget,
    })
}

/// The callback the driver calls: looks the closure up by id and runs it where a panic is
/// caught (counted in [`host_fn_panic_count`](crate::stream::host_fn_panic_count)), never
/// unwinding into the driver.
unsafe extern "C" fn trampoline(
    info: *mut sys::CUasyncNotificationInfo,
    data: *mut c_void,
    _handle: sys::CUasyncCallbackHandle,
) {
    run_host_fn(|| {
        // SAFETY: the driver passes a description valid for the call, or null.
        let Some(n) = (unsafe { notification(info) }) else {
            return;
        };
        let f = table()
            .as_ref()
            .and_then(|t| t.get(&(data as usize)).cloned());
        if let Some(f) = f {
            f(n);
        }
    });
}

/// A callback registered for a device's asynchronous notifications; unregistered on drop.
///
/// The callback runs on a thread of the driver's: it must not call CUDA (the crate's calls
/// from it are refused as from a host function), and a panic in it is caught and counted in
/// [`host_fn_panic_count`](crate::stream::host_fn_panic_count).
#[derive(Debug)]
pub struct AsyncNotificationRegistration {
    device: Device,
    handle: sys::CUasyncCallbackHandle,
    id: usize,
}

// SAFETY: the handle only identifies the registration, which may be removed from any thread.
unsafe impl Send for AsyncNotificationRegistration {}
// SAFETY: no method mutates through `&self`.
unsafe impl Sync for AsyncNotificationRegistration {}

impl Device {
    /// Registers `f` to be called with this device's asynchronous notifications (today: the
    /// device went over its memory budget).
    #[wraps(cuDeviceRegisterAsyncNotification)]
    #[track_caller]
    pub fn register_async_notification<F>(self, f: F) -> Result<AsyncNotificationRegistration>
    where
        F: Fn(AsyncNotification) + Send + Sync + 'static,
    {
        init()?;
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        table()
            .get_or_insert_with(HashMap::new)
            .insert(id, Arc::new(f));
        let mut handle = std::ptr::null_mut();
        let r = call!(
            // SAFETY: `trampoline` matches CUasyncCallback and only reads the table; the user
            // data is a plain id, no pointer; writes one handle, owned from here on.
            unsafe {
                newer::cuDeviceRegisterAsyncNotification()?(
                    self.as_raw(),
                    Some(trampoline),
                    id as *mut c_void,
                    &mut handle,
                )
            }
        );
        if let Err(e) = r {
            table().as_mut().map(|t| t.remove(&id));
            return Err(e);
        }
        Ok(AsyncNotificationRegistration {
            device: self,
            handle,
            id,
        })
    }
}

impl AsyncNotificationRegistration {
    /// The device whose notifications this registration receives.
    pub fn device(&self) -> Device {
        self.device
    }

    fn unregister_raw(&mut self) -> Result<()> {
        let id = std::mem::take(&mut self.id);
        if id == 0 {
            return Ok(());
        }
        // The closure goes first: a notification racing with the unregistration finds no
        // closure (the driver holds only the id).
        let f = table().as_mut().and_then(|t| t.remove(&id));
        drop(f);
        call!(
            // SAFETY: the registration made by register_async_notification, unregistered once.
            unsafe {
                newer::cuDeviceUnregisterAsyncNotification()?(self.device.as_raw(), self.handle)
            }
        )
    }

    /// Unregisters now, returning the error instead of counting it.
    #[wraps(cuDeviceUnregisterAsyncNotification)]
    #[track_caller]
    pub fn unregister(mut self) -> Result<()> {
        self.unregister_raw()
    }
}

impl Drop for AsyncNotificationRegistration {
    fn drop(&mut self) {
        if let Err(e) = self.unregister_raw() {
            let code = e.code().map_or(sys::CUDA_ERROR_UNKNOWN, |c| c.as_raw());
            report_drop_error("cuDeviceUnregisterAsyncNotification", code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_are_read_by_type_and_a_null_one_is_ignored() {
        // SAFETY: null is allowed.
        assert_eq!(unsafe { notification(std::ptr::null()) }, None);
        let mut info = sys::CUasyncNotificationInfo {
            type_: sys::CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET,
            ..Default::default()
        };
        info.info.overBudget.bytesOverBudget = 4096;
        // SAFETY: a valid description.
        let n = unsafe { notification(&info) }.unwrap();
        assert_eq!(n.kind, AsyncNotificationType::OVER_BUDGET);
        assert_eq!(n.bytes_over_budget, Some(4096));
        info.type_ = 77;
        // SAFETY: a valid description of a type cuda.h 13.0 does not name.
        let n = unsafe { notification(&info) }.unwrap();
        assert_eq!((n.kind.as_raw(), n.bytes_over_budget), (77, None));
    }

    #[test]
    fn the_trampoline_runs_the_closure_by_id_contains_its_panic_and_ignores_unknown_ids() {
        use std::sync::atomic::AtomicU64;
        let seen = Arc::new(AtomicU64::new(0));
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let s = seen.clone();
        table().get_or_insert_with(HashMap::new).insert(
            id,
            Arc::new(move |n: AsyncNotification| {
                s.store(n.bytes_over_budget.unwrap_or(1), Ordering::SeqCst);
                if n.bytes_over_budget == Some(13) {
                    panic!("a panicking notification callback");
                }
            }),
        );
        let mut info = sys::CUasyncNotificationInfo {
            type_: sys::CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET,
            ..Default::default()
        };
        info.info.overBudget.bytesOverBudget = 7;
        // SAFETY: a valid description and a registered id.
        unsafe { trampoline(&mut info, id as *mut c_void, std::ptr::null_mut()) };
        assert_eq!(seen.load(Ordering::SeqCst), 7);
        let panics = crate::stream::host_fn_panic_count();
        info.info.overBudget.bytesOverBudget = 13;
        // SAFETY: as above; the closure panics, which must not unwind out of the trampoline.
        unsafe { trampoline(&mut info, id as *mut c_void, std::ptr::null_mut()) };
        assert_eq!(seen.load(Ordering::SeqCst), 13);
        assert!(crate::stream::host_fn_panic_count() > panics);
        table().as_mut().unwrap().remove(&id);
        info.info.overBudget.bytesOverBudget = 99;
        // SAFETY: an id with no closure: nothing runs.
        unsafe { trampoline(&mut info, id as *mut c_void, std::ptr::null_mut()) };
        assert_eq!(seen.load(Ordering::SeqCst), 13);
    }
}
