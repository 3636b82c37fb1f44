//! GPU tests: entry_point.
