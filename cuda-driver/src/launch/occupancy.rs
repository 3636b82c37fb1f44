//! Occupancy: how many blocks or clusters of a kernel fit on a multiprocessor or device
//! (`cuOccupancy*`), for [`Function`] and [`FunctionRef`] and, in a given context, [`Kernel`].
//!
//! The driver takes block sizes and block counts as `int`: a `u32` above `i32::MAX` is
//! [`Error::InvalidArgument`](crate::Error::InvalidArgument) before the driver is called.

use cuda_driver_macros::call;
use std::ptr;

use cuda_driver_sys as sys;

use super::{LaunchAttributes, LaunchConfig, Launchable};
use crate::context::Context;
use crate::count::int_arg;
use crate::error::{check, Result};
use crate::library::Kernel;
use crate::module::{Function, FunctionRef};
use crate::types::OccupancyFlags;

/// The block size that maximises occupancy, and the smallest grid that reaches it
/// ([`Function::max_potential_block_size`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockSizeSuggestion {
    /// The smallest grid (in blocks) that reaches full occupancy on the device.
    pub min_grid_size: u32,
    /// The block size (in threads).
    pub block_size: u32,
}

#[track_caller]
fn active_blocks(f: sys::CUfunction, block_size: u32, dynamic_smem_bytes: usize) -> Result<u32> {
    const CALL: &str = "cuOccupancyMaxActiveBlocksPerMultiprocessor";
    let block_size = int_arg(CALL, "block size", block_size)?;
    let mut n = 0;
    check(
        // SAFETY: `f` is alive and its context (or, for a kernel, the target context) is current;
        // writes one int.
        unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut n,
                f,
                block_size,
                dynamic_smem_bytes,
            )
        },
        CALL,
    )?;
    Ok(n as u32)
}

#[track_caller]
fn potential_block_size(
    f: sys::CUfunction,
    dynamic_smem_bytes: usize,
    block_size_limit: u32,
) -> Result<BlockSizeSuggestion> {
    const CALL: &str = "cuOccupancyMaxPotentialBlockSize";
    let block_size_limit = int_arg(CALL, "block size limit", block_size_limit)?;
    let (mut grid, mut block) = (0, 0);
    check(
        // SAFETY: as above; no callback (a constant dynamic shared memory size); writes two ints.
        unsafe {
            sys::cuOccupancyMaxPotentialBlockSize(
                &mut grid,
                &mut block,
                f,
                None,
                dynamic_smem_bytes,
                block_size_limit,
            )
        },
        CALL,
    )?;
    Ok(BlockSizeSuggestion {
        min_grid_size: grid as u32,
        block_size: block as u32,
    })
}

#[track_caller]
fn active_blocks_with_flags(
    f: sys::CUfunction,
    block_size: u32,
    dynamic_smem_bytes: usize,
    flags: OccupancyFlags,
) -> Result<u32> {
    const CALL: &str = "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags";
    let block_size = int_arg(CALL, "block size", block_size)?;
    let mut n = 0;
    check(
        // SAFETY: as in active_blocks; writes one int.
        unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
                &mut n,
                f,
                block_size,
                dynamic_smem_bytes,
                flags.bits() as _,
            )
        },
        CALL,
    )?;
    Ok(n as u32)
}

#[track_caller]
fn potential_block_size_with_flags(
    f: sys::CUfunction,
    dynamic_smem_bytes: usize,
    block_size_limit: u32,
    flags: OccupancyFlags,
) -> Result<BlockSizeSuggestion> {
    const CALL: &str = "cuOccupancyMaxPotentialBlockSizeWithFlags";
    let block_size_limit = int_arg(CALL, "block size limit", block_size_limit)?;
    let (mut grid, mut block) = (0, 0);
    check(
        // SAFETY: as in potential_block_size; no callback; writes two ints.
        unsafe {
            sys::cuOccupancyMaxPotentialBlockSizeWithFlags(
                &mut grid,
                &mut block,
                f,
                None,
                dynamic_smem_bytes,
                block_size_limit,
                flags.bits() as _,
            )
        },
        CALL,
    )?;
    Ok(BlockSizeSuggestion {
        min_grid_size: grid as u32,
        block_size: block as u32,
    })
}

#[track_caller]
fn available_smem(f: sys::CUfunction, num_blocks: u32, block_size: u32) -> Result<usize> {
    const CALL: &str = "cuOccupancyAvailableDynamicSMemPerBlock";
    let num_blocks = int_arg(CALL, "number of blocks", num_blocks)?;
    let block_size = int_arg(CALL, "block size", block_size)?;
    let mut bytes = 0;
    check(
        // SAFETY: as above; writes one size_t.
        unsafe {
            sys::cuOccupancyAvailableDynamicSMemPerBlock(&mut bytes, f, num_blocks, block_size)
        },
        CALL,
    )?;
    Ok(bytes)
}

#[track_caller]
fn potential_cluster_size(
    f: sys::CUfunction,
    cfg: &LaunchConfig,
    attrs: &LaunchAttributes,
) -> Result<u32> {
    let config = attrs.raw_config(cfg, ptr::null_mut());
    let mut n = 0;
    call!(
        // SAFETY: as above; `config` points to `attrs`, alive for the call (null stream: the
        // current context); writes one int.
        unsafe { sys::cuOccupancyMaxPotentialClusterSize(&mut n, f, &config) },
    )?;
    Ok(n as u32)
}

#[track_caller]
fn active_clusters(
    f: sys::CUfunction,
    cfg: &LaunchConfig,
    attrs: &LaunchAttributes,
) -> Result<u32> {
    let config = attrs.raw_config(cfg, ptr::null_mut());
    let mut n = 0;
    call!(
        // SAFETY: as in potential_cluster_size.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, f, &config) },
    )?;
    Ok(n as u32)
}

/// The occupancy queries of [`Function`] and [`FunctionRef`] (in their own context) and
/// [`Kernel`] (in a context given to each call), from one list: each method makes the context
/// current and calls its helper above with the kernel's handle and its own arguments.
macro_rules! occupancy_methods {
    (@function $fty:ty; $(
        $(#[doc = $doc:literal])*
        fn $name:ident($($arg:ident: $arg_ty:ty),*) -> $ret:ty = $helper:ident($call:literal);
    )*) => {
        impl $fty {
            $(
                $(#[doc = $doc])*
                ///
                #[doc = concat!("Wraps `", $call, "`.")]
                #[doc(alias = $call)]
                #[track_caller]
                pub fn $name(&self, $($arg: $arg_ty),*) -> Result<$ret> {
                    let _cur = self.context().enter()?;
                    $helper(self.raw_function(), $($arg),*)
                }
            )*
        }
    };
    (@kernel $(
        $(#[doc = $doc:literal])*
        fn $name:ident($($arg:ident: $arg_ty:ty),*) -> $ret:ty = $helper:ident($call:literal);
    )*) => {
        impl Kernel {
            $(
                #[doc = concat!(
                    "[`Function::", stringify!($name), "`] for this kernel on the device of `ctx`."
                )]
                ///
                #[doc = concat!("Wraps `", $call, "`.")]
                #[doc(alias = $call)]
                #[track_caller]
                pub fn $name(&self, ctx: &Context, $($arg: $arg_ty),*) -> Result<$ret> {
                    let _cur = ctx.enter()?;
                    $helper(self.raw_function(), $($arg),*)
                }
            )*
        }
    };
    ($($methods:tt)*) => {
        occupancy_methods!(@function Function; $($methods)*);
        occupancy_methods!(@function FunctionRef<'_>; $($methods)*);
        occupancy_methods!(@kernel $($methods)*);
    };
}

occupancy_methods! {
    /// How many blocks of `block_size` threads with `dynamic_smem_bytes` of dynamic shared
    /// memory can be resident on one multiprocessor at once.
    fn max_active_blocks_per_multiprocessor(block_size: u32, dynamic_smem_bytes: usize) -> u32
        = active_blocks("cuOccupancyMaxActiveBlocksPerMultiprocessor");

    /// The block size with the highest occupancy for a constant `dynamic_smem_bytes` per
    /// block, at most `block_size_limit` threads (0: no limit), and the smallest grid that
    /// fills the device with it (without a shared-memory callback).
    fn max_potential_block_size(dynamic_smem_bytes: usize, block_size_limit: u32)
        -> BlockSizeSuggestion = potential_block_size("cuOccupancyMaxPotentialBlockSize");

    /// [`max_active_blocks_per_multiprocessor`](Function::max_active_blocks_per_multiprocessor)
    /// with occupancy `flags` ([`OccupancyFlags::DISABLE_CACHING_OVERRIDE`]: assume global
    /// caching is on and cannot be turned off automatically).
    fn max_active_blocks_per_multiprocessor_with_flags(
        block_size: u32, dynamic_smem_bytes: usize, flags: OccupancyFlags
    ) -> u32 = active_blocks_with_flags("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags");

    /// [`max_potential_block_size`](Function::max_potential_block_size) with occupancy
    /// `flags`.
    fn max_potential_block_size_with_flags(
        dynamic_smem_bytes: usize, block_size_limit: u32, flags: OccupancyFlags
    ) -> BlockSizeSuggestion
        = potential_block_size_with_flags("cuOccupancyMaxPotentialBlockSizeWithFlags");

    /// The dynamic shared memory per block available when `num_blocks` blocks of
    /// `block_size` threads are resident on a multiprocessor.
    fn available_dynamic_shared_memory_per_block(num_blocks: u32, block_size: u32) -> usize
        = available_smem("cuOccupancyAvailableDynamicSMemPerBlock");

    /// The largest cluster (in blocks) this kernel can launch with in the configuration
    /// `cfg` (the cluster dimension in `attrs` is ignored): portable sizes (at most 8) unless
    /// the kernel allows non-portable ones.
    fn max_potential_cluster_size(cfg: &LaunchConfig, attrs: &LaunchAttributes) -> u32
        = potential_cluster_size("cuOccupancyMaxPotentialClusterSize");

    /// How many clusters of the shape in `attrs` ([`LaunchAttributes::cluster_dim`], required
    /// unless the kernel fixes it) can be resident on the device at once.
    fn max_active_clusters(cfg: &LaunchConfig, attrs: &LaunchAttributes) -> u32
        = active_clusters("cuOccupancyMaxActiveClusters");
}
