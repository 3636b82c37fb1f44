//! The extended attributes of a launch through `cuLaunchKernelEx`: [`LaunchAttributes`].

use std::ptr;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use super::{Dim3, LaunchConfig};
use crate::error::{Error, Result};

/// At most this many attributes go into one [`LaunchAttributes`].
pub const MAX_LAUNCH_ATTRIBUTES: usize = 8;

/// The extended attributes of a launch through `cuLaunchKernelEx` (`CUlaunchAttribute`), kept
/// in a fixed array on the stack.
///
/// ```
/// use cuda_driver::{Dim3, launch::LaunchAttributes};
/// let attrs = LaunchAttributes::new().cluster_dim((2, 1, 1)).priority(-1);
/// assert_eq!(attrs.as_raw().len(), 2);
/// ```
#[wraps(CUlaunchAttribute)]
#[derive(Clone, Copy)]
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
    /// (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`, compute capability 9.0). The grid of the
    /// [`LaunchConfig`](crate::LaunchConfig) counts blocks, not clusters, and must be a multiple
    /// of `dim` in each dimension ([`LaunchConfig::clusters`](crate::LaunchConfig::clusters)
    /// builds it from a count of clusters); clusters of more than 8 blocks need
    /// [`NON_PORTABLE_CLUSTER_SIZE_ALLOWED`](crate::types::FunctionAttribute::NON_PORTABLE_CLUSTER_SIZE_ALLOWED).
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
    /// ([`Function::max_active_blocks_per_multiprocessor`](crate::Function::max_active_blocks_per_multiprocessor)
    /// times the multiprocessor count).
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
    /// [`Error::CapacityExceeded`] when [`MAX_LAUNCH_ATTRIBUTES`] are set.
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
            None => Err(Error::CapacityExceeded {
                what: "LaunchAttributes",
                capacity: MAX_LAUNCH_ATTRIBUTES,
                unit: "attributes",
            }),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let full = unsafe { a.with_raw(attr) };
        assert!(matches!(
            full,
            Err(Error::CapacityExceeded {
                what: "LaunchAttributes",
                capacity: MAX_LAUNCH_ATTRIBUTES,
                unit: "attributes"
            })
        ));
        attr.id = 100;
        // SAFETY: as above; replacing an existing id fits.
        assert!(unsafe { a.with_raw(attr) }.is_ok());
    }
}
