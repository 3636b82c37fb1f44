//! GPU tests: module.
