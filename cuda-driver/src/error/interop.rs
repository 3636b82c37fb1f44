//! Errors of external resource interoperability (memory and semaphores of other APIs).
//!
//! Re-exported as [`crate::interop::InteropError`]; an [`Error`](super::Error) holds one as
//! [`Error::Interop`](super::Error::Interop).

/// An external resource the crate refuses before the driver is called (see the
/// [module docs](self)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum InteropError {
    /// An external-resource handle of a type the operation cannot take.
    #[error("{what}: external handle type {handle_type} is not supported here")]
    HandleTypeUnsupported {
        /// The operation.
        what: &'static str,
        /// The raw handle type.
        handle_type: u32,
    },
}
