//! Stream queries and attributes: id, context, device, the attributes of
//! `cuStreamGetAttribute`/`cuStreamSetAttribute` (L2 access-policy window, synchronisation
//! policy, priority, memory sync domain), copying them, and attaching managed memory.

use std::ffi::c_void;
use std::ptr;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::device::Device;
use crate::entry_point::newer;
use crate::error::Result;
use crate::handle::Handle;
use crate::stream::{AccessPolicyWindow, Stream};

use crate::types::{AccessProperty, LaunchAttributeID, LaunchMemSyncDomain, SynchronizationPolicy};

fn zero_value() -> sys::CUstreamAttrValue {
    sys::CUstreamAttrValue { pad: [0; 64] }
}

impl Stream {
    /// The stream's unique id in this process.
    #[wraps(cuStreamGetId)]
    #[track_caller]
    pub fn id(&self) -> Result<u64> {
        let _cur = self.context().enter()?;
        let mut id = 0;
        call!(
            // SAFETY: the stream is alive; writes one unsigned long long.
            unsafe { sys::cuStreamGetId(self.as_raw(), &mut id) },
        )?;
        Ok(id)
    }

    /// The raw context the driver says the stream belongs to (compare with
    /// [`context`](Self::context)`().as_raw()`).
    #[wraps(cuStreamGetCtx)]
    #[track_caller]
    pub fn query_context(&self) -> Result<sys::CUcontext> {
        let _cur = self.context().enter()?;
        let mut c = ptr::null_mut();
        call!(
            // SAFETY: the stream is alive; writes one CUcontext.
            unsafe { sys::cuStreamGetCtx(self.as_raw(), &mut c) },
        )?;
        Ok(c)
    }

    /// The raw context and, for a stream of a green context, the raw green context; CUDA 12.5.
    #[wraps(cuStreamGetCtx_v2)]
    #[track_caller]
    pub fn query_contexts(&self) -> Result<(sys::CUcontext, Option<sys::CUgreenCtx>)> {
        let _cur = self.context().enter()?;
        let (mut c, mut g) = (ptr::null_mut(), ptr::null_mut());
        call!(
            // SAFETY: the stream is alive; writes one CUcontext and one CUgreenCtx.
            unsafe { newer::cuStreamGetCtx_v2()?(self.as_raw(), &mut c, &mut g) },
        )?;
        Ok((c, (!g.is_null()).then_some(g)))
    }

    /// The device the stream runs on; CUDA 12.8.
    #[wraps(cuStreamGetDevice)]
    #[track_caller]
    pub fn device(&self) -> Result<Device> {
        let _cur = self.context().enter()?;
        let mut d = 0;
        // SAFETY: the stream is alive; writes one CUdevice.
        call!(unsafe { newer::cuStreamGetDevice()?(self.as_raw(), &mut d) })?;
        Ok(Device::from_raw(d))
    }

    /// The raw value of attribute `id` (a `CUstreamAttrValue` union).
    #[wraps(cuStreamGetAttribute)]
    #[track_caller]
    pub fn attribute_raw(&self, id: LaunchAttributeID) -> Result<sys::CUstreamAttrValue> {
        let _cur = self.context().enter()?;
        let mut v = zero_value();
        call!(
            // SAFETY: the stream is alive; writes one CUstreamAttrValue.
            unsafe { sys::cuStreamGetAttribute(self.as_raw(), id.as_raw(), &mut v) },
        )?;
        Ok(v)
    }

    /// Sets attribute `id` from a raw value.
    ///
    /// # Safety
    /// `value` holds the union member `id` names, and any pointer in it (an event of the
    /// stream's context) stays valid while the stream uses it.
    #[wraps(cuStreamSetAttribute)]
    #[track_caller]
    pub unsafe fn set_attribute_raw(
        &self,
        id: LaunchAttributeID,
        value: &sys::CUstreamAttrValue,
    ) -> Result<()> {
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: the stream is alive; the caller vouches for the value.
            unsafe { sys::cuStreamSetAttribute(self.as_raw(), id.as_raw(), value) },
        )
    }

    /// The L2 access-policy window of the stream's kernels.
    #[wraps(cuStreamGetAttribute)]
    #[track_caller]
    pub fn access_policy_window(&self) -> Result<AccessPolicyWindow> {
        let v = self.attribute_raw(LaunchAttributeID::ACCESS_POLICY_WINDOW)?;
        // SAFETY: the driver filled the accessPolicyWindow member for this attribute.
        let w = unsafe { v.accessPolicyWindow };
        Ok(AccessPolicyWindow {
            base: w.base_ptr as sys::CUdeviceptr,
            num_bytes: w.num_bytes,
            hit_ratio: w.hitRatio,
            hit_prop: AccessProperty(w.hitProp),
            miss_prop: AccessProperty(w.missProp),
        })
    }

    /// Sets the L2 access-policy window of the stream's kernels (see
    /// [`Limit::PERSISTING_L2_CACHE_SIZE`](crate::types::Limit)).
    #[wraps(cuStreamSetAttribute)]
    #[track_caller]
    pub fn set_access_policy_window(&self, w: AccessPolicyWindow) -> Result<()> {
        let mut v = zero_value();
        v.accessPolicyWindow = sys::CUaccessPolicyWindow {
            base_ptr: w.base as usize as *mut c_void,
            num_bytes: w.num_bytes,
            hitRatio: w.hit_ratio,
            hitProp: w.hit_prop.as_raw(),
            missProp: w.miss_prop.as_raw(),
        };
        // SAFETY: the member matches the attribute; the window is a cache hint, which the
        // driver never dereferences on the host.
        unsafe { self.set_attribute_raw(LaunchAttributeID::ACCESS_POLICY_WINDOW, &v) }
    }

    /// How host threads wait for the stream (spin, yield, blocking sync).
    #[wraps(cuStreamGetAttribute)]
    #[track_caller]
    pub fn synchronization_policy(&self) -> Result<SynchronizationPolicy> {
        let v = self.attribute_raw(LaunchAttributeID::SYNCHRONIZATION_POLICY)?;
        // SAFETY: the driver filled the syncPolicy member for this attribute.
        Ok(SynchronizationPolicy(unsafe { v.syncPolicy }))
    }

    /// Sets how host threads wait for the stream.
    #[wraps(cuStreamSetAttribute)]
    #[track_caller]
    pub fn set_synchronization_policy(&self, p: SynchronizationPolicy) -> Result<()> {
        let mut v = zero_value();
        v.syncPolicy = p.as_raw();
        // SAFETY: the member matches the attribute; plain data.
        unsafe { self.set_attribute_raw(LaunchAttributeID::SYNCHRONIZATION_POLICY, &v) }
    }

    /// The priority attribute of the stream's work (the stream's priority unless set).
    #[wraps(cuStreamGetAttribute)]
    #[track_caller]
    pub fn priority_attribute(&self) -> Result<i32> {
        let v = self.attribute_raw(LaunchAttributeID::PRIORITY)?;
        // SAFETY: the driver filled the priority member for this attribute.
        Ok(unsafe { v.priority })
    }

    /// Sets the priority of the stream's later work (clamped by the driver to the context's
    /// [`stream_priority_range`](crate::Context::stream_priority_range)).
    #[wraps(cuStreamSetAttribute)]
    #[track_caller]
    pub fn set_priority_attribute(&self, priority: i32) -> Result<()> {
        let mut v = zero_value();
        v.priority = priority;
        // SAFETY: the member matches the attribute; plain data.
        unsafe { self.set_attribute_raw(LaunchAttributeID::PRIORITY, &v) }
    }

    /// The memory synchronisation domain of the stream's kernels.
    #[wraps(cuStreamGetAttribute)]
    #[track_caller]
    pub fn mem_sync_domain(&self) -> Result<LaunchMemSyncDomain> {
        let v = self.attribute_raw(LaunchAttributeID::MEM_SYNC_DOMAIN)?;
        // SAFETY: the driver filled the memSyncDomain member for this attribute.
        Ok(LaunchMemSyncDomain(unsafe { v.memSyncDomain }))
    }

    /// Sets the memory synchronisation domain of the stream's kernels.
    #[wraps(cuStreamSetAttribute)]
    #[track_caller]
    pub fn set_mem_sync_domain(&self, d: LaunchMemSyncDomain) -> Result<()> {
        let mut v = zero_value();
        v.memSyncDomain = d.as_raw();
        // SAFETY: the member matches the attribute; plain data.
        unsafe { self.set_attribute_raw(LaunchAttributeID::MEM_SYNC_DOMAIN, &v) }
    }

    /// Copies every attribute of `src` to this stream (both of one context).
    #[wraps(cuStreamCopyAttributes)]
    #[track_caller]
    pub fn copy_attributes_from(&self, src: &Stream) -> Result<()> {
        let _cur = self.context().enter()?;
        call!(
            // SAFETY: both streams are alive.
            unsafe { sys::cuStreamCopyAttributes(self.as_raw(), src.as_raw()) },
        )
    }
}
