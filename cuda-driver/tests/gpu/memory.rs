//! GPU tests: memory.
