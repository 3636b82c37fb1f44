//! Errors of memory layout: the shape of arrays, pitched allocations, 2D/3D copies and
//! memsets (an extent of zero, a region past its operand, an element type that does not fit
//! the array format or the memset word, an array without a flag or of the wrong rank).
//!
//! Re-exported as [`crate::memory::LayoutError`]; an [`Error`](super::Error) holds one as
//! [`Error::Layout`](super::Error::Layout).

/// A shape, region or element type that the memory operation cannot take, checked before
/// the driver is called (see the [module docs](self)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// An extent that must not be zero is (an array's width, a pitched allocation's height,
    /// the number of layers or mipmap levels).
    #[error("{what}: the {axis} is zero")]
    ZeroExtent {
        /// The operation.
        what: &'static str,
        /// Which extent.
        axis: &'static str,
    },

    /// A 2D/3D copy, a row or a sub-rectangle that would reach past a view, a slice's rows
    /// or an array.
    #[error("{what}: the {operand} region reaches {end} along {axis}, past its limit {limit}")]
    RegionOutOfBounds {
        /// The operation.
        what: &'static str,
        /// Which operand: "source", "destination", "view".
        operand: &'static str,
        /// The axis: "x", "x (bytes)", "y", "z", "bytes".
        axis: &'static str,
        /// Where the region ends along that axis.
        end: usize,
        /// The operand's extent along that axis.
        limit: usize,
    },

    /// A memset whose word width does not divide the element size.
    #[error(
        "{what} writes {width}-byte words, but the element type {elem} is {size} bytes, not a \
         multiple of {width}"
    )]
    MemsetWidth {
        /// The operation.
        what: &'static str,
        /// The word width in bytes (1, 2 or 4).
        width: usize,
        /// The element type's name.
        elem: &'static str,
        /// The element type's size in bytes.
        size: usize,
    },

    /// An element type whose size is not that of the array format it is used with.
    #[error("{what}: the element type {elem} is {size} bytes, not an element of {format}")]
    ElementFormat {
        /// The operation.
        what: &'static str,
        /// The element type's name.
        elem: &'static str,
        /// Its size in bytes.
        size: usize,
        /// The format and channel count.
        format: String,
    },

    /// An array without a flag the operation needs (a surface needs
    /// [`Array3DFlags::SURFACE_LDST`](crate::types::Array3DFlags::SURFACE_LDST)).
    #[error("{what} needs an array created with {flag}")]
    MissingArrayFlag {
        /// The operation.
        what: &'static str,
        /// The flag's name.
        flag: &'static str,
    },

    /// An operation on 1D arrays used with an array of more dimensions (the legacy
    /// `cuMemcpyAtoH`-style copies address a 1D array by byte offset).
    #[error("{what} needs a 1D array, not one of {height} rows and depth {depth}")]
    ArrayNot1D {
        /// The operation.
        what: &'static str,
        /// The array's height.
        height: usize,
        /// The array's depth.
        depth: usize,
    },
}
