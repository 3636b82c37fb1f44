//! Modules: device code loaded into a context.

use cuda_driver_sys as sys;

c_enum! {
    /// A kernel attribute (`CUfunction_attribute`).
    #[doc(alias = "CUfunction_attribute")]
    FunctionAttribute(sys::CUfunction_attribute)
}
