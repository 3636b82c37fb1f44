//! Raw bindings to `nccl.h` of NCCL 2.28.9 (the pinned `nvidia-nccl-cu13` wheel), generated
//! by `cargo xtask bindgen`: C names untouched, enumerators as constants typed by their
//! typedef (`ncclSuccess: ncclResult_t`; no Rust enums: a newer library may return a value the
//! header does not know), and the functions as the fields of [`Functions`], looked up in the
//! library the crate loaded ([`Nccl::functions`](crate::Nccl::functions)). A function the loaded
//! library does not export (a library older than 2.28.9) is `None` there.
//!
//! `cudaStream_t` is the driver's `CUstream` ([`cuda_driver::Stream::as_raw`]), and device
//! pointers are `CUdeviceptr`s cast to `*const c_void` / `*mut c_void`, as in C.
//!
//! ```no_run
//! use cuda_driver_nccl::{sys, Nccl};
//! let nccl = Nccl::get()?;
//! let get_version = nccl.functions().ncclGetVersion.expect("every NCCL exports ncclGetVersion");
//! let mut version = 0;
//! // SAFETY: writes one int.
//! assert_eq!(unsafe { get_version(&mut version) }, sys::ncclSuccess);
//! # Ok::<(), cuda_driver_nccl::Error>(())
//! ```
#![allow(
    missing_docs,
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    clippy::all,
    // bindgen's `Default` impls zero the struct in an unsafe block without a comment.
    clippy::undocumented_unsafe_blocks,
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls,
    rustdoc::invalid_rust_codeblocks
)]

#[rustfmt::skip]
mod bindings;

pub use bindings::*;
