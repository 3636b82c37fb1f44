//! The driver's error log (CUDA 12.9+, resolved at run time): its messages routed into the
//! [`log`](https://docs.rs/log) crate through a callback, and the accumulated log dumped to
//! a file or to memory from a position ([`LogPosition`]).

use std::ffi::{c_char, c_void};
use std::path::Path;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::callback;
use crate::entry_point::newer;
use crate::error::{report_drop_error, Result};
use crate::init;

/// The callback: forwards one driver message to the `log` crate (target `cuda_driver::driver`).
/// The driver calls it, so nothing may unwind out of it: the whole forwarding runs under
/// [`callback::log`], and a logger that panics is caught and counted in
/// [`logger_panic_count`](crate::error::logger_panic_count).
unsafe extern "C" fn forward(
    _data: *mut c_void,
    level: sys::CUlogLevel,
    msg: *mut c_char,
    len: usize,
) {
    if msg.is_null() {
        return;
    }
    callback::log(|| {
        // SAFETY: the driver passes `len` bytes of message at `msg`, valid during the call.
        let bytes = unsafe { std::slice::from_raw_parts(msg.cast::<u8>(), len) };
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\0', '\n']);
        let lvl = if level == sys::CU_LOG_LEVEL_ERROR {
            log::Level::Error
        } else {
            log::Level::Warn
        };
        log::log!(target: "cuda_driver::driver", lvl, "{text}");
    });
}

/// A registered log callback forwarding the driver's messages to the `log` crate;
/// unregistered on drop.
#[derive(Debug)]
pub struct LogForwarder {
    handle: sys::CUlogsCallbackHandle,
}

// SAFETY: the handle only identifies the registration; the driver allows unregistering from
// any thread.
unsafe impl Send for LogForwarder {}
// SAFETY: no method mutates through `&self`.
unsafe impl Sync for LogForwarder {}

impl LogForwarder {
    /// Registers the forwarding callback.
    #[wraps(cuLogsRegisterCallback)]
    #[track_caller]
    pub fn register() -> Result<LogForwarder> {
        init()?;
        let mut handle = std::ptr::null_mut();
        call!(
            // SAFETY: `forward` is a plain function valid for the program's life and ignores its
            // user data; writes one handle, owned by the forwarder from here on.
            unsafe {
                newer::cuLogsRegisterCallback()?(Some(forward), std::ptr::null_mut(), &mut handle)
            },
        )?;
        Ok(LogForwarder { handle })
    }

    /// Unregisters now, returning the error instead of counting it.
    #[wraps(cuLogsUnregisterCallback)]
    #[track_caller]
    pub fn unregister(self) -> Result<()> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: the handle is registered and unregistered once (Drop does not run).
        call!(unsafe { newer::cuLogsUnregisterCallback()?(this.handle) })
    }
}

impl Drop for LogForwarder {
    fn drop(&mut self) {
        if let Ok(f) = newer::cuLogsUnregisterCallback() {
            // SAFETY: the handle is registered and unregistered once, here.
            report_drop_error("cuLogsUnregisterCallback", unsafe { f(self.handle) });
        }
    }
}

/// A position in the driver's log (`CUlogIterator`): dumps start there and advance it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogPosition(sys::CUlogIterator);

impl LogPosition {
    /// The current end of the log: a later dump returns only messages logged after now.
    #[wraps(cuLogsCurrent)]
    #[track_caller]
    pub fn current() -> Result<LogPosition> {
        init()?;
        let mut it = 0;
        // SAFETY: writes one iterator; flags must be 0.
        call!(unsafe { newer::cuLogsCurrent()?(&mut it, 0) })?;
        Ok(LogPosition(it))
    }

    /// The start of the log the driver still holds.
    pub fn start() -> LogPosition {
        LogPosition(0)
    }

    /// Writes the messages from this position to `path`, advancing the position.
    #[wraps(cuLogsDumpToFile)]
    #[track_caller]
    pub fn dump_to_file(&mut self, path: &Path) -> Result<()> {
        init()?;
        let c = crate::cstr::path_to_c_string(path)?;
        // SAFETY: `c` is NUL-terminated; the iterator is ours to advance; flags must be 0.
        call!(unsafe { newer::cuLogsDumpToFile()?(&mut self.0, c.as_ptr(), 0) })
    }

    /// The most bytes a dump to memory can return: the size of the driver's log buffer
    /// (25600 bytes, as the reference of `cuLogsDumpToMemory` states). A larger `max_bytes`
    /// is clamped to it.
    pub const MAX_DUMP_BYTES: usize = 25_600;

    /// The messages from this position (newline-separated), advancing the position. At most
    /// `max_bytes` are returned, and at most [`MAX_DUMP_BYTES`](Self::MAX_DUMP_BYTES): a
    /// larger `max_bytes` (`usize::MAX` included) is clamped to it, so the buffer handed to
    /// the driver is never larger than what it can fill. `max_bytes == 0` returns an empty
    /// string without asking the driver, and leaves the position alone.
    ///
    /// When the messages from the position do not fit, the driver keeps the most recent ones
    /// and says so at the head of the text; when not even one fits, it fails with
    /// `CUDA_ERROR_INVALID_VALUE`.
    #[wraps(cuLogsDumpToMemory)]
    #[track_caller]
    pub fn dump_to_memory(&mut self, max_bytes: usize) -> Result<String> {
        init()?;
        let Some(mut buf) = dump_buffer(max_bytes) else {
            return Ok(String::new());
        };
        let mut size = buf.len();
        call!(
            // SAFETY: `buf` holds `size` bytes (at least 2); the driver writes at most that,
            // NUL-terminated, and stores the length written (without the NUL) in `size`
            // (GPU test logs::dumping_the_driver_log_with_absurd_sizes_is_safe).
            unsafe {
                newer::cuLogsDumpToMemory()?(&mut self.0, buf.as_mut_ptr().cast(), &mut size, 0)
            },
        )?;
        buf.truncate(size.min(buf.len() - 1));
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}

/// The zeroed buffer of a dump of at most `max_bytes` bytes: room for
/// `min(max_bytes, MAX_DUMP_BYTES)` bytes and the NUL; `None` for 0 bytes.
fn dump_buffer(max_bytes: usize) -> Option<Vec<u8>> {
    let bytes = max_bytes.min(LogPosition::MAX_DUMP_BYTES);
    (bytes > 0).then(|| vec![0u8; bytes + 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dump_buffers_are_clamped_to_what_the_driver_can_fill() {
        assert!(dump_buffer(0).is_none());
        assert_eq!(dump_buffer(1).unwrap().len(), 2);
        assert_eq!(dump_buffer(100).unwrap().len(), 101);
        let max = LogPosition::MAX_DUMP_BYTES + 1;
        for absurd in [
            LogPosition::MAX_DUMP_BYTES,
            1 << 40,
            usize::MAX - 1,
            usize::MAX,
        ] {
            assert_eq!(dump_buffer(absurd).unwrap().len(), max, "{absurd}");
        }
    }

    #[test]
    fn a_panicking_logger_in_the_driver_log_callback_is_caught_and_counted() {
        crate::callback::test_logger::panic_on_this_thread(true);
        let before = crate::callback::logger_panic_count();
        let thrown = crate::callback::test_logger::thrown();
        let mut msg = *b"a driver message\n\0";
        // SAFETY: as the driver calls it: `len` bytes of message at `msg`, valid meanwhile.
        unsafe {
            forward(
                std::ptr::null_mut(),
                sys::CU_LOG_LEVEL_ERROR,
                msg.as_mut_ptr().cast(),
                msg.len(),
            )
        };
        crate::callback::test_logger::panic_on_this_thread(false);
        assert_eq!(crate::callback::test_logger::thrown(), thrown + 1);
        assert!(crate::callback::logger_panic_count() > before);
    }
}
