//! GPU tests: context.
