//! Safe bindings to the CUDA Driver API.
#![deny(missing_docs)]
