//! Procedural macros of [`cuda-driver`](https://docs.rs/cuda-driver).
//!
//! * [`#[derive(DeviceRepr)]`](macro@DeviceRepr), re-exported as `cuda_driver::DeviceRepr`:
//!   implements `cuda_driver::DeviceRepr` for a `#[repr(C)]` struct of `DeviceRepr` fields
//!   without padding, and refuses any other type at compile time.
//! * [`#[wraps(cuMemAlloc)]`](macro@wraps), for cuda-driver's own items: one driver name gives
//!   both the link into the CUDA Driver API reference and the `#[doc(alias)]`es that let users
//!   find the wrapper by the C name.
//! * [`call!(unsafe { sys::cuMemFree(ptr) })`](macro@call), for cuda-driver's own driver calls:
//!   the call's error names the function called (its exported symbol), taken from the call.
#![deny(missing_docs)]

mod call;
mod device_repr;
#[rustfmt::skip]
mod names;
mod wraps;

use proc_macro::TokenStream;

/// Documents an item as the wrapper of one or more functions (or types) of cuda.h.
///
/// `#[wraps(cuMemAlloc)]` appends to the item's docs the line
/// "Wraps [`cuMemAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)."
/// and adds `#[doc(alias = "cuMemAlloc")]` and `#[doc(alias = "cuMemAlloc_v2")]`: an alias for
/// the name and for every symbol cuda.h maps it to, so a search for either finds the wrapper.
/// Several names (`#[wraps(cuFuncGetParamInfo, cuKernelGetParamInfo)]`) give a list.
///
/// The page of each name is its doxygen group in cuda.h 13.0, from a table that
/// `cargo xtask bindgen` generates; a name that cuda.h does not declare is a compile error, so
/// the docs cannot drift from the header.
///
/// ```
/// use cuda_driver_macros::wraps;
///
/// /// Allocates device memory.
/// #[wraps(cuMemAlloc)]
/// pub fn alloc() {}
/// ```
///
/// ```compile_fail
/// use cuda_driver_macros::wraps;
///
/// #[wraps(cuMemAllocate)] // error: `cuMemAllocate` is not a function or type of cuda.h
/// pub fn alloc() {}
/// ```
#[proc_macro_attribute]
pub fn wraps(attr: TokenStream, item: TokenStream) -> TokenStream {
    wraps::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Documents an item that calls driver functions of other groups as part of its work, without
/// being their wrapper: `#[uses(cuStreamSynchronize)]` appends "Calls [`cuStreamSynchronize`](..)."
/// and the same `#[doc(alias)]`es as [`#[wraps]`](macro@wraps). `cargo xtask check-homes`
/// checks where each `#[wraps]` stands (the home of its function's group); a `#[uses]` may
/// stand anywhere, as a composite operation (a buffer's host access that waits for its stream)
/// belongs with what it operates on.
///
/// ```
/// use cuda_driver_macros::uses;
///
/// /// Waits for the buffer's stream, then reads it.
/// #[uses(cuStreamSynchronize)]
/// pub fn to_vec() {}
/// ```
#[proc_macro_attribute]
pub fn uses(attr: TokenStream, item: TokenStream) -> TokenStream {
    wraps::expand_as("Calls", attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// A driver call whose error names the call itself: `call!(unsafe { sys::cuMemFree(ptr) })` is
/// `check(unsafe { sys::cuMemFree(ptr) }, "cuMemFree_v2")`, the crate's one conversion of a
/// `CUresult` into its `Result`, with the name taken from the call (the symbol the library
/// exports, `_v2` and all), so it is typed once and cannot name another function. A function
/// reached through the crate's table of newer entry points is named the same way:
/// `call!(unsafe { newer::cuCtxCreate()?(..) })`. For cuda-driver's own use: the expansion
/// names `crate::error::check`.
#[proc_macro]
pub fn call(input: TokenStream) -> TokenStream {
    call::expand(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Implements `cuda_driver::DeviceRepr` for a struct that may be copied bit for bit between
/// host and device.
///
/// The struct must be `#[repr(C)]` (or `#[repr(transparent)]`), `Copy`, not generic, every field
/// `DeviceRepr`, and without padding (the size of the struct is the sum of its fields'). Anything
/// else is a compile error: an enum or a union, another representation, a `bool` field, padding.
/// Its examples are on the trait, `cuda_driver::DeviceRepr`.
///
/// The expansion names everything by its full path (`::core::assert!`,
/// `::core::mem::size_of`, `::cuda_driver::DeviceRepr`), so nothing the deriving scope defines
/// (its own `assert!`, a module named `core`, no prelude) changes what the checks do.
#[proc_macro_derive(DeviceRepr)]
pub fn derive_device_repr(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    device_repr::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
