//! GPU tests: launch.
