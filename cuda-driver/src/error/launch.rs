//! Errors of kernel launches (execution control): arguments that do not match the kernel's
//! parameters, found before the driver is called.
//!
//! Re-exported as [`crate::launch::LaunchError`]; an [`Error`](super::Error) holds one as
//! [`Error::Launch`](super::Error::Launch).

/// A launch whose arguments do not match the kernel's parameters, refused before the
/// driver is called (see the [module docs](self)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// A launch whose argument count differs from the kernel's parameter count.
    #[error(
        "kernel `{kernel}` takes {expected} parameters but the launch passes {actual} arguments"
    )]
    ArgumentCount {
        /// The kernel's name.
        kernel: String,
        /// The kernel's parameter count.
        expected: usize,
        /// Arguments passed.
        actual: usize,
    },

    /// A launch argument whose size differs from the kernel parameter's.
    #[error(
        "kernel `{kernel}` parameter {index} is {expected} bytes but the argument at that \
         position is {actual} bytes"
    )]
    ArgumentSize {
        /// The kernel's name.
        kernel: String,
        /// Position of the parameter, from 0.
        index: usize,
        /// The parameter's size on the device.
        expected: usize,
        /// The argument's size.
        actual: usize,
    },

    /// A packed argument buffer whose layout differs from the kernel's parameters.
    #[error(
        "kernel `{kernel}` parameter {index} is at offset {expected} but the ParamBuffer puts \
         it at offset {actual} (an argument before it has a different alignment on the \
         device: use this crate's vector types)"
    )]
    ArgumentOffset {
        /// The kernel's name.
        kernel: String,
        /// Position of the parameter, from 0.
        index: usize,
        /// The parameter's offset on the device.
        expected: usize,
        /// The offset in the buffer.
        actual: usize,
    },
}
