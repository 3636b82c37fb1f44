//! GPU coredump settings (CUDA 12.1+, resolved at run time), per context and process-wide.

use std::ffi::c_void;

use cuda_driver_macros::wraps;

use crate::context::Context;
use crate::entry_point::newer;
use crate::error::{check, Result};
use crate::init;

use crate::types::{CoredumpGenerationFlags, CoredumpSettings};

/// Whether a setting is a path (`FILE`, `PIPE`) rather than a boolean or flags.
fn is_path(attr: CoredumpSettings) -> bool {
    attr == CoredumpSettings::FILE || attr == CoredumpSettings::PIPE
}

/// A coredump setting's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoredumpValue {
    /// `ENABLE_ON_EXCEPTION`, `TRIGGER_HOST`, `LIGHTWEIGHT`, `ENABLE_USER_TRIGGER`.
    Bool(bool),
    /// `GENERATION_FLAGS`.
    Flags(CoredumpGenerationFlags),
    /// `FILE`, `PIPE`.
    Path(String),
}

#[track_caller]
fn get(attr: CoredumpSettings, ctx: Option<&Context>) -> Result<CoredumpValue> {
    let f = if ctx.is_some() {
        newer::cuCoredumpGetAttribute()?
    } else {
        newer::cuCoredumpGetAttributeGlobal()?
    };
    let _cur = ctx.map(|c| c.enter()).transpose()?;
    let call = if ctx.is_some() {
        "cuCoredumpGetAttribute"
    } else {
        "cuCoredumpGetAttributeGlobal"
    };
    if is_path(attr) {
        let mut buf = vec![0u8; 1024];
        let mut size = buf.len();
        check(
            // SAFETY: `buf` holds `size` bytes; the driver writes a NUL-terminated path.
            unsafe { f(attr.as_raw(), buf.as_mut_ptr().cast::<c_void>(), &mut size) },
            call,
        )?;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Ok(CoredumpValue::Path(
            String::from_utf8_lossy(&buf[..end]).into_owned(),
        ))
    } else if attr == CoredumpSettings::GENERATION_FLAGS {
        let mut v: u32 = 0;
        let mut size = size_of::<u32>();
        check(
            // SAFETY: writes one unsigned int.
            unsafe { f(attr.as_raw(), (&mut v as *mut u32).cast(), &mut size) },
            call,
        )?;
        Ok(CoredumpValue::Flags(CoredumpGenerationFlags::from_raw(v)))
    } else {
        // Read as a byte, not a Rust `bool`: any value the driver writes is then valid.
        let mut v: u8 = 0;
        let mut size = size_of::<u8>();
        check(
            // SAFETY: the boolean settings are one C bool (one byte), written to `v` (GPU test
            // coredump::coredump_settings_round_trip_globally_and_per_context).
            unsafe { f(attr.as_raw(), (&mut v as *mut u8).cast(), &mut size) },
            call,
        )?;
        Ok(CoredumpValue::Bool(v != 0))
    }
}

#[track_caller]
fn set(attr: CoredumpSettings, value: &CoredumpValue, ctx: Option<&Context>) -> Result<()> {
    let f = if ctx.is_some() {
        newer::cuCoredumpSetAttribute()?
    } else {
        newer::cuCoredumpSetAttributeGlobal()?
    };
    let _cur = ctx.map(|c| c.enter()).transpose()?;
    let call = if ctx.is_some() {
        "cuCoredumpSetAttribute"
    } else {
        "cuCoredumpSetAttributeGlobal"
    };
    match value {
        CoredumpValue::Bool(b) => {
            let mut v = *b;
            let mut size = size_of::<bool>();
            check(
                // SAFETY: one C bool, read by the driver.
                unsafe { f(attr.as_raw(), (&mut v as *mut bool).cast(), &mut size) },
                call,
            )
        }
        CoredumpValue::Flags(fl) => {
            let mut v = fl.as_raw();
            let mut size = size_of::<u32>();
            check(
                // SAFETY: one unsigned int, read by the driver.
                unsafe { f(attr.as_raw(), (&mut v as *mut u32).cast(), &mut size) },
                call,
            )
        }
        CoredumpValue::Path(p) => {
            let mut c =
                crate::cstr::path_to_c_string(std::path::Path::new(p))?.into_bytes_with_nul();
            let mut size = c.len();
            check(
                // SAFETY: `c` holds `size` bytes with the terminating NUL.
                unsafe { f(attr.as_raw(), c.as_mut_ptr().cast(), &mut size) },
                call,
            )
        }
    }
}

impl Context {
    /// A coredump setting of this context.
    #[wraps(cuCoredumpGetAttribute)]
    #[track_caller]
    pub fn coredump_attribute(&self, attr: CoredumpSettings) -> Result<CoredumpValue> {
        get(attr, Some(self))
    }

    /// Changes a coredump setting of this context.
    #[wraps(cuCoredumpSetAttribute)]
    #[track_caller]
    pub fn set_coredump_attribute(
        &self,
        attr: CoredumpSettings,
        value: &CoredumpValue,
    ) -> Result<()> {
        set(attr, value, Some(self))
    }
}

/// A process-wide coredump setting (the default of contexts created later).
#[wraps(cuCoredumpGetAttributeGlobal)]
#[track_caller]
pub fn coredump_attribute_global(attr: CoredumpSettings) -> Result<CoredumpValue> {
    init()?;
    get(attr, None)
}

/// Changes a process-wide coredump setting.
#[wraps(cuCoredumpSetAttributeGlobal)]
#[track_caller]
pub fn set_coredump_attribute_global(attr: CoredumpSettings, value: &CoredumpValue) -> Result<()> {
    init()?;
    set(attr, value, None)
}
