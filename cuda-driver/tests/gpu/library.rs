//! GPU tests: library.
