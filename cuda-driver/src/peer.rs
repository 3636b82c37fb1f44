//! Peer Context Memory Access: whether one device can reach another's memory, the link's
//! attributes, and enabling a context's access to a peer context's memory. Peer copies are
//! written once on the views (`memory/view.rs`); cross-context uses are fenced (see
//! `docs/SOUNDNESS.md`).

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::count::count_u32;
use crate::device::Device;
use crate::entry_point::newer;
use crate::error::Result;
use crate::handle::Handle;
use crate::init::init;
use crate::types::{AtomicOperation, AtomicOperationCapability, DeviceP2PAttribute};

impl Context {
    /// Lets this context access memory of `peer` (another device's context) directly.
    #[wraps(cuCtxEnablePeerAccess)]
    #[track_caller]
    pub fn enable_peer_access(&self, peer: &Context) -> Result<()> {
        let _cur = self.enter()?;
        call!(
            // SAFETY: `peer` is alive; flags must be 0.
            unsafe { sys::cuCtxEnablePeerAccess(peer.as_raw(), 0) },
        )
    }

    /// Revokes access enabled by [`enable_peer_access`](Self::enable_peer_access).
    #[wraps(cuCtxDisablePeerAccess)]
    #[track_caller]
    pub fn disable_peer_access(&self, peer: &Context) -> Result<()> {
        let _cur = self.enter()?;
        call!(
            // SAFETY: `peer` is alive.
            unsafe { sys::cuCtxDisablePeerAccess(peer.as_raw()) },
        )
    }
}

impl Device {
    /// Whether contexts on this device can access memory of `peer` directly.
    #[wraps(cuDeviceCanAccessPeer)]
    #[track_caller]
    pub fn can_access_peer(self, peer: Device) -> Result<bool> {
        let mut v = 0;
        call!(
            // SAFETY: writes one int to a valid pointer.
            unsafe { sys::cuDeviceCanAccessPeer(&mut v, self.as_raw(), peer.as_raw()) },
        )?;
        Ok(v != 0)
    }

    /// A peer attribute from this device to `peer` (performance rank, access, atomics).
    #[wraps(cuDeviceGetP2PAttribute)]
    #[track_caller]
    pub fn p2p_attribute(self, attr: DeviceP2PAttribute, peer: Device) -> Result<i32> {
        init()?;
        let mut v = 0;
        call!(
            // SAFETY: writes one int.
            unsafe {
                sys::cuDeviceGetP2PAttribute(&mut v, attr.as_raw(), self.as_raw(), peer.as_raw())
            },
        )?;
        Ok(v)
    }
}

impl crate::device::Device {
    /// Which of `ops` the device can perform atomically on `peer`'s memory; CUDA 13.0. An
    /// empty `ops` is an empty list, without asking the driver.
    #[wraps(cuDeviceGetP2PAtomicCapabilities)]
    #[track_caller]
    pub fn p2p_atomic_capabilities(
        self,
        peer: Device,
        ops: &[AtomicOperation],
    ) -> Result<Vec<AtomicOperationCapability>> {
        init()?;
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let count = count_u32("Device::p2p_atomic_capabilities", "operations", ops.len())?;
        let raw: Vec<sys::CUatomicOperation> = ops.iter().map(|o| o.as_raw()).collect();
        let mut caps = vec![0u32; ops.len()];
        call!(
            // SAFETY: both arrays hold `len` elements.
            unsafe {
                newer::cuDeviceGetP2PAtomicCapabilities()?(
                    caps.as_mut_ptr(),
                    raw.as_ptr(),
                    count,
                    self.as_raw(),
                    peer.as_raw(),
                )
            },
        )?;
        Ok(caps
            .into_iter()
            .map(AtomicOperationCapability::from_raw)
            .collect())
    }
}
