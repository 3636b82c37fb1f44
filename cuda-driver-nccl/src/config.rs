//! The configuration of a new communicator (`ncclConfig_t`), and its timeout.

use std::ffi::c_int;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::sys;
use crate::version::Version;

/// How a communicator is created: its timeout, and NCCL's tuning attributes
/// (`ncclConfig_t`; unset ones are left to NCCL and its environment variables).
///
/// **The timeout.** Without one (the default) the communicator is *blocking*, NCCL's
/// default: its calls return when they are done, and a peer that died can make a call (or
/// the GPU work it queued) wait forever. With [`timeout`](Self::timeout) it is created
/// *non-blocking* (`blocking = 0`): every call returns at once and the crate polls
/// `ncclCommGetAsyncError` until the call finished, an error appears, or the timeout passed;
/// then it aborts the communicator (`ncclCommAbort`, which stops its GPU work) and returns
/// [`Error::Async`] or [`Error::Timeout`]. The same timeout bounds
/// [`Communicator::synchronize`](crate::Communicator::synchronize) and the finalization in
/// `Drop`. Choose it longer than the slowest operation of the program.
///
/// ```
/// use std::time::Duration;
/// use cuda_driver_nccl::CommConfig;
/// let config = CommConfig::new().timeout(Duration::from_secs(60)).max_ctas(16);
/// assert_eq!(config.timeout_value(), Some(Duration::from_secs(60)));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommConfig {
    pub(crate) timeout: Option<Duration>,
    cga_cluster_size: Option<u32>,
    min_ctas: Option<u32>,
    max_ctas: Option<u32>,
    split_share: Option<bool>,
}

impl CommConfig {
    /// The default: blocking, every attribute left to NCCL.
    pub fn new() -> CommConfig {
        CommConfig::default()
    }

    /// A non-blocking communicator whose operations fail, and abort it, when they take longer
    /// than `timeout` (see the type's docs).
    pub fn timeout(mut self, timeout: Duration) -> CommConfig {
        self.timeout = Some(timeout);
        self
    }

    /// The timeout, if one was chosen.
    pub fn timeout_value(&self) -> Option<Duration> {
        self.timeout
    }

    /// `cgaClusterSize`: the cooperative group array cluster size of NCCL's kernels (0 to 8).
    pub fn cga_cluster_size(mut self, size: u32) -> CommConfig {
        self.cga_cluster_size = Some(size);
        self
    }

    /// `minCTAs`: the least number of thread blocks NCCL's kernels use.
    pub fn min_ctas(mut self, n: u32) -> CommConfig {
        self.min_ctas = Some(n);
        self
    }

    /// `maxCTAs`: the most thread blocks NCCL's kernels use.
    pub fn max_ctas(mut self, n: u32) -> CommConfig {
        self.max_ctas = Some(n);
        self
    }

    /// `splitShare`: whether communicators split from this one share its resources.
    pub fn split_share(mut self, share: bool) -> CommConfig {
        self.split_share = Some(share);
        self
    }

    /// The `ncclConfig_t`: `NCCL_CONFIG_INITIALIZER` of nccl.h 2.28.9 with the chosen
    /// attributes. An older library reads the fields it knows (NCCL copies
    /// `min(config.size, its own size)` bytes), a newer one fills the rest with its defaults.
    pub(crate) fn to_raw(&self) -> Result<sys::ncclConfig_t> {
        let int = |what: &str, v: Option<u32>| -> Result<c_int> {
            match v {
                None => Ok(c_int::MIN),
                Some(v) => c_int::try_from(v).map_err(|_| {
                    Error::InvalidArgument(format!("CommConfig::{what}({v}) does not fit an int"))
                }),
            }
        };
        Ok(sys::ncclConfig_t {
            size: std::mem::size_of::<sys::ncclConfig_t>(),
            magic: CONFIG_MAGIC,
            version: Version::HEADER.code(),
            blocking: if self.timeout.is_some() {
                0
            } else {
                c_int::MIN
            },
            cgaClusterSize: int("cga_cluster_size", self.cga_cluster_size)?,
            minCTAs: int("min_ctas", self.min_ctas)?,
            maxCTAs: int("max_ctas", self.max_ctas)?,
            netName: std::ptr::null(),
            splitShare: match self.split_share {
                None => c_int::MIN,
                Some(s) => s.into(),
            },
            trafficClass: c_int::MIN,
            commName: std::ptr::null(),
            collnetEnable: c_int::MIN,
            CTAPolicy: c_int::MIN,
            shrinkShare: c_int::MIN,
            nvlsCTAs: c_int::MIN,
            nChannelsPerNetPeer: c_int::MIN,
            nvlinkCentricSched: c_int::MIN,
        })
    }
}

/// `magic` of `NCCL_CONFIG_INITIALIZER`.
const CONFIG_MAGIC: u32 = 0xcafe_beef;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raw_config_is_nccl_config_initializer_with_the_chosen_attributes() {
        let raw = CommConfig::new().to_raw().unwrap();
        assert_eq!(raw.size, std::mem::size_of::<sys::ncclConfig_t>());
        assert_eq!(raw.magic, 0xcafebeef);
        assert_eq!(raw.version, sys::NCCL_VERSION_CODE);
        assert_eq!(raw.blocking, c_int::MIN);
        assert_eq!(raw.maxCTAs, c_int::MIN);
        assert!(raw.netName.is_null() && raw.commName.is_null());

        let raw = CommConfig::new()
            .timeout(Duration::from_secs(1))
            .max_ctas(8)
            .split_share(true)
            .to_raw()
            .unwrap();
        assert_eq!(raw.blocking, 0);
        assert_eq!(raw.maxCTAs, 8);
        assert_eq!(raw.splitShare, 1);
    }

    #[test]
    fn an_attribute_beyond_int_is_refused() {
        let err = CommConfig::new().min_ctas(u32::MAX).to_raw().unwrap_err();
        assert!(err.to_string().contains("min_ctas"), "{err}");
    }
}
