//! GPU tests: stream.
