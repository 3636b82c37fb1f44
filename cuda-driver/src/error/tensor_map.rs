//! Errors of tensor maps: parameters that break one of the encoding's rules.
//!
//! Re-exported as [`crate::tensor_map::TensorMapError`]; an [`Error`](super::Error) holds one
//! as [`Error::TensorMap`](super::Error::TensorMap).

/// A tensor map that cannot be encoded (see the [module docs](self)).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TensorMapError {
    /// Parameters of a tensor map that break one of the encoding's rules.
    #[error("tensor map rule broken ({rule}): {detail}")]
    Rule {
        /// The rule: "rank", "global dims", "global strides", "box dims", ...
        rule: &'static str,
        /// What is wrong, with the values.
        detail: String,
    },
}
