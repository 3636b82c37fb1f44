//! The execution configuration of a launch: [`Dim3`] and [`LaunchConfig`].

use crate::error::{Error, Result};

/// Threads per block of [`LaunchConfig::for_num_elems`].
pub const DEFAULT_BLOCK_SIZE: u32 = 256;

/// Three dimensions of a grid (in blocks), a block (in threads) or a cluster (in blocks).
///
/// ```
/// use cuda_driver::Dim3;
/// assert_eq!(Dim3::from(64), Dim3::new(64, 1, 1));
/// assert_eq!(Dim3::from((8, 4)), Dim3::new(8, 4, 1));
/// assert_eq!(Dim3::new(8, 4, 2).volume(), 64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Extent along x.
    pub x: u32,
    /// Extent along y.
    pub y: u32,
    /// Extent along z.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// `x * y * z`.
    pub const fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

impl Default for Dim3 {
    /// `(1, 1, 1)`.
    fn default() -> Self {
        Dim3::new(1, 1, 1)
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3::new(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3::new(x, y, z)
    }
}

impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Self {
        Dim3::new(x, y, z)
    }
}

/// The execution configuration of a launch: grid and block dimensions and the dynamic
/// shared memory per block.
///
/// The grid always counts **blocks**, also in a clustered launch
/// ([`LaunchAttributes::cluster_dim`](crate::launch::LaunchAttributes::cluster_dim)): as in
/// `cuLaunchKernelEx`, `gridDimX` is the number of blocks, which must be a multiple of the
/// cluster's size in each dimension. (NVIDIA's cuda.core counts clusters instead.) To give the
/// grid in clusters, use [`LaunchConfig::clusters`], which multiplies it out.
///
/// ```
/// use cuda_driver::{Dim3, LaunchConfig};
/// let cfg = LaunchConfig::for_num_elems(1000)?;
/// assert_eq!((cfg.grid, cfg.block), (Dim3::from(4), Dim3::from(256)));
/// let cfg = LaunchConfig::new((16, 16), (8, 8)).with_shared_mem(4096);
/// assert_eq!(cfg.shared_mem_bytes, 4096);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block.
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes (`sharedMemBytes`).
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// A grid of `grid` blocks of `block` threads, without dynamic shared memory.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem_bytes: 0,
        }
    }

    /// A grid of `clusters` thread-block clusters of `cluster` blocks each, of `block` threads,
    /// as the grid in blocks the driver takes (`clusters × cluster` in each dimension); launch
    /// it with [`LaunchAttributes::cluster_dim`](crate::launch::LaunchAttributes::cluster_dim)`(cluster)`.
    /// A grid dimension that overflows `u32` is [`Error::InvalidArgument`].
    ///
    /// ```
    /// use cuda_driver::{Dim3, LaunchConfig};
    /// let cfg = LaunchConfig::clusters((4, 2), (2, 1), 128)?;
    /// assert_eq!(cfg.grid, Dim3::new(8, 2, 1));
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[track_caller]
    pub fn clusters(
        clusters: impl Into<Dim3>,
        cluster: impl Into<Dim3>,
        block: impl Into<Dim3>,
    ) -> Result<LaunchConfig> {
        let (n, c) = (clusters.into(), cluster.into());
        let mul = |a: u32, b: u32, axis: &str| {
            a.checked_mul(b).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{a} clusters of {b} blocks overflow the grid's {axis} dimension"
                ))
            })
        };
        Ok(LaunchConfig::new(
            Dim3::new(
                mul(n.x, c.x, "x")?,
                mul(n.y, c.y, "y")?,
                mul(n.z, c.z, "z")?,
            ),
            block,
        ))
    }

    /// The same configuration with `bytes` of dynamic shared memory per block.
    pub const fn with_shared_mem(mut self, bytes: u32) -> LaunchConfig {
        self.shared_mem_bytes = bytes;
        self
    }

    /// One thread per element for `n` elements: blocks of 256 threads, and as many blocks as
    /// cover `n` (at least one). A grid wider than CUDA's limit of 2^31 - 1 blocks is
    /// [`Error::InvalidArgument`].
    #[track_caller]
    pub fn for_num_elems(n: usize) -> Result<LaunchConfig> {
        Self::for_num_elems_with_block(n, DEFAULT_BLOCK_SIZE)
    }

    /// One thread per element for `n` elements in blocks of `block_size` threads (at least
    /// one block).
    #[track_caller]
    pub fn for_num_elems_with_block(n: usize, block_size: u32) -> Result<LaunchConfig> {
        if block_size == 0 {
            return Err(Error::InvalidArgument("a block of 0 threads".into()));
        }
        let blocks = n.div_ceil(block_size as usize).max(1);
        match u32::try_from(blocks) {
            Ok(b) if b <= i32::MAX as u32 => Ok(LaunchConfig::new(b, block_size)),
            _ => Err(Error::InvalidArgument(format!(
                "{n} elements need {blocks} blocks of {block_size} threads, more than the \
                 grid's x dimension allows (2^31 - 1)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_num_elems_covers_every_element() {
        for (n, blocks) in [(0usize, 1u32), (1, 1), (256, 1), (257, 2), (1 << 20, 4096)] {
            let cfg = LaunchConfig::for_num_elems(n).unwrap();
            assert_eq!(cfg.grid, Dim3::new(blocks, 1, 1), "n = {n}");
            assert_eq!(cfg.block, Dim3::new(256, 1, 1));
            assert_eq!(cfg.shared_mem_bytes, 0);
        }
        let max = (i32::MAX as usize) * 256;
        assert_eq!(
            LaunchConfig::for_num_elems(max).unwrap().grid.x,
            i32::MAX as u32
        );
        let e = LaunchConfig::for_num_elems(max + 1).unwrap_err();
        assert!(e.to_string().contains("2^31 - 1"), "{e}");
        assert!(LaunchConfig::for_num_elems(usize::MAX).is_err());
        assert!(LaunchConfig::for_num_elems_with_block(10, 0).is_err());
        assert_eq!(
            LaunchConfig::for_num_elems_with_block(10, 4)
                .unwrap()
                .grid
                .x,
            3
        );
    }
}
