//! Errors of loading code (module and library management): an image the crate refuses to
//! hand to the driver, a variable looked up as an element type it is not made of, a device
//! runtime library that is nowhere to be found.
//!
//! Re-exported as [`crate::module::ModuleError`] (for libraries too); an
//! [`Error`](super::Error) holds one as [`Error::Module`](super::Error::Module). A failed
//! compile or link is [`Error::Jit`](super::Error::Jit), with the JIT's log, and a name the
//! module does not define is [`Error::NotFound`](super::Error::NotFound): both carry the
//! driver's result code.

/// Code or a variable of a module or library that the crate refuses (see the
/// [module docs](self)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ModuleError {
    /// An image (PTX, cubin, fatbin) that the crate refuses to hand to the driver: not
    /// self-contained, truncated, or with tables pointing outside the bytes given.
    #[error("malformed {kind} image: {reason}")]
    MalformedImage {
        /// What the bytes look like: "ELF", "fatbin", "PTX", "fat-binary wrapper", ...
        kind: &'static str,
        /// What is wrong.
        reason: String,
    },

    /// A variable whose size is not a whole number of the element type asked for (a module
    /// global or a library managed variable looked up as `[T]`).
    #[error("{kind} `{name}` is {bytes} bytes, not a whole number of {elem} ({size} bytes)")]
    SizeMismatch {
        /// What: "global", "managed variable".
        kind: &'static str,
        /// Its name.
        name: String,
        /// Its size in bytes.
        bytes: usize,
        /// The element type's name.
        elem: &'static str,
        /// The element type's size in bytes.
        size: usize,
    },

    /// The CUDA device runtime library (`libcudadevrt.a`), which device code calling the
    /// device runtime (`cudaGraphSetConditional`) is linked with, is in none of the places
    /// searched ([`find_device_runtime`](crate::module::find_device_runtime)).
    #[error(
        "libcudadevrt.a (the CUDA device runtime, linked with device code that calls \
         cudaGraphSetConditional) not found; looked at: {}; set {env} to the file, or CUDA_PATH \
         to a CUDA 13.0 toolkit (/usr/local/cuda) or the nvidia-cuda-runtime wheel's nvidia/cu13 \
         folder",
        .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    DeviceRuntimeNotFound {
        /// Every file looked for, in order.
        searched: Vec<std::path::PathBuf>,
        /// The variable that names the file (`CUDA_DRIVER_CUDADEVRT`).
        env: &'static str,
    },
}
