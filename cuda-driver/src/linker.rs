//! The JIT linker.

use cuda_driver_sys as sys;

c_enum! {
    /// The kind of input given to the linker (`CUjitInputType`).
    #[doc(alias = "CUjitInputType")]
    JitInputType(sys::CUjitInputType)
}
