//! GPU tests: device.
