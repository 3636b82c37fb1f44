//! The JIT linker (`cuLinkCreate` and friends, in the reference's Module Management group):
//! links PTX, cubins, fatbins, objects and libraries with relocatable device code into one
//! cubin.
//!
//! ```no_run
//! use cuda_driver::{Device, types::JitInputType, jit::JitOptions, module::Linker, Module};
//!
//! let ctx = Device::get(0)?.primary_context()?;
//! let (main_ptx, helper_ptx) = ("...", "...");
//! let mut linker = Linker::new(&ctx, &JitOptions::new().verbose(true))?;
//! linker.add_data(JitInputType::PTX, main_ptx, "link_main.ptx")?;
//! linker.add_data(JitInputType::PTX, helper_ptx, "link_helper.ptx")?;
//! let cubin = linker.complete()?; // owned bytes: outlive the linker
//! println!("linked in {} ms:\n{}", linker.wall_time_ms(), linker.info_log());
//! let module = Module::load_data(&ctx, &cubin)?;
//! # Ok::<(), cuda_driver::Error>(())
//! ```

use std::path::Path;
use std::ptr;

use cuda_driver_macros::wraps;
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::cstr::{path_to_c_string, with_c_str, with_nul_terminated};
use crate::error::module::ModuleError;
use crate::error::{report_drop_error, Error, Result};
use crate::handle::{give_up, Handle, OwnedHandle};
use crate::image::{Image, ImageKind, ModuleImage};
use crate::jit::{check_jit, JitCall, JitOptions};

use crate::types::JitInputType;

/// A pending JIT link (`CUlinkState`), destroyed on drop (`cuLinkDestroy`).
///
/// The info and error logs are always captured; a failed [`add_data`](Self::add_data),
/// [`add_file`](Self::add_file) or [`complete`](Self::complete) returns
/// [`Error::Jit`] with the error log. The option arrays and log buffers
/// given to `cuLinkCreate` live in a box owned by the linker, since the driver writes to them
/// until the link state is destroyed.
///
/// `Send` (it can move to another thread, where its context is made current), not `Sync`:
/// adding inputs needs `&mut self`.
#[wraps(CUlinkState)]
pub struct Linker {
    raw: sys::CUlinkState,
    // Boxed so that the arrays the driver holds pointers to never move; dropped after `raw`
    // is destroyed (Drop runs before the fields drop). `None` for a link state from
    // `from_raw`.
    jit: Option<Box<JitCall>>,
    ctx: Context,
}

// SAFETY: a link state may be used from any thread with its context current (every method
// makes it current); the boxed JitCall holds only pointers into its own heap buffers.
unsafe impl Send for Linker {}

impl Drop for Linker {
    fn drop(&mut self) {
        // cuLinkDestroy frees only host-side state and needs no context. It runs now even
        // inside a host function (it makes no device call), because `jit`, which the link
        // state points into, is freed right after.
        // SAFETY: `raw` was created by cuLinkCreate_v2 and is owned by self; destroyed once,
        // before `jit` is freed.
        let r = unsafe { sys::cuLinkDestroy(self.raw) };
        report_drop_error("cuLinkDestroy", r);
    }
}

impl std::fmt::Debug for Linker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Linker").field("raw", &self.raw).finish()
    }
}

impl Handle for Linker {
    type Raw = sys::CUlinkState;

    /// The raw `CUlinkState`, valid while `self` lives.
    fn as_raw(&self) -> sys::CUlinkState {
        self.raw
    }
}

impl OwnedHandle for Linker {
    type Parent<'p> = &'p Context;

    /// Takes ownership of a link state created in `ctx`; it is destroyed on drop. Its logs are
    /// not captured (the options it was created with are the caller's):
    /// [`info_log`](Self::info_log) and [`error_log`](Self::error_log) are empty, and a failed
    /// call is a plain driver error.
    ///
    /// # Safety
    /// `raw` is a live link state created by `cuLinkCreate` with `ctx` current, that nothing
    /// else destroys, and whose option arrays and log buffers stay valid until it is.
    unsafe fn from_raw(raw: sys::CUlinkState, ctx: &Context) -> Linker {
        Linker {
            raw,
            jit: None,
            ctx: ctx.clone(),
        }
    }

    /// Gives up ownership and returns the raw `CUlinkState`, which the caller destroys
    /// (`cuLinkDestroy`). The option arrays and log buffers it writes to are leaked, since the
    /// driver may write them until then.
    fn into_raw(self) -> sys::CUlinkState {
        give_up!(self, raw; drop(ctx); forget(jit))
    }
}

impl Linker {
    /// Starts a link in `ctx` (which gives the target architecture unless `options` sets
    /// one), with options for the linker and for compiling PTX inputs.
    #[wraps(cuLinkCreate)]
    #[track_caller]
    pub fn new(ctx: &Context, options: &JitOptions) -> Result<Linker> {
        let _cur = ctx.enter()?;
        let mut jit = JitCall::new(options);
        let mut raw = ptr::null_mut();
        // SAFETY: the option arrays hold jit.len() entries and live, with the log buffers they
        // point to, in a box that the Linker keeps unmoved until after cuLinkDestroy (or that
        // is dropped right here if creation fails); writes one CUlinkState.
        let r = unsafe {
            sys::cuLinkCreate_v2(jit.len(), jit.options_ptr(), jit.values_ptr(), &mut raw)
        };
        check_jit(r, "cuLinkCreate_v2", || jit.error_log())?;
        Ok(Linker {
            raw,
            jit: Some(jit),
            ctx: ctx.clone(),
        })
    }

    fn error_log_now(&self) -> String {
        self.jit.as_ref().map(|j| j.error_log()).unwrap_or_default()
    }

    /// Adds an input from memory: PTX (NUL-terminated by a copy only when it is not), a cubin,
    /// a fatbin, a host object or a library, told by `kind`. `name` appears in the logs.
    ///
    /// A cubin or a fatbin is checked as [`Module::load_data`](crate::Module::load_data)
    /// checks it ([`ModuleError::MalformedImage`]), and must be what `kind` says.
    #[wraps(cuLinkAddData)]
    #[track_caller]
    pub fn add_data<I: ModuleImage + ?Sized>(
        &mut self,
        kind: JitInputType,
        data: &I,
        name: &str,
    ) -> Result<()> {
        let bytes = data.image_bytes();
        let expected = match kind {
            JitInputType::CUBIN => Some((ImageKind::Elf, "ELF")),
            JitInputType::FATBINARY => Some((ImageKind::FatBinary, "fatbin")),
            _ => None,
        };
        if let Some((expected, shown)) = expected {
            if Image::check(bytes)?.kind() != expected {
                return Err(Error::Module(ModuleError::MalformedImage {
                    kind: shown,
                    reason: format!("an input added as {kind:?} is no {shown} image"),
                }));
            }
        }
        let _cur = self.ctx.enter()?;
        let raw = self.raw;
        let add = |p: *const u8, len: usize| {
            with_c_str("input name", name, |name| {
                // SAFETY: `p` points to `len` readable bytes alive for the call (the driver
                // keeps no reference to inputs after it returns); `name` is NUL-terminated;
                // no per-input options.
                unsafe {
                    sys::cuLinkAddData_v2(
                        raw,
                        kind.as_raw(),
                        p.cast_mut().cast(),
                        len,
                        name,
                        0,
                        ptr::null_mut(),
                        ptr::null_mut(),
                    )
                }
            })
        };
        let r = if kind == JitInputType::PTX {
            let len = bytes.len() + usize::from(bytes.last() != Some(&0));
            with_nul_terminated(bytes, |p| add(p, len))?
        } else {
            add(bytes.as_ptr(), bytes.len())?
        };
        check_jit(r, "cuLinkAddData_v2", || self.error_log_now())
    }

    /// Adds an input from a file, of the kind told by `kind`.
    #[wraps(cuLinkAddFile)]
    #[track_caller]
    pub fn add_file(&mut self, kind: JitInputType, path: impl AsRef<Path>) -> Result<()> {
        let path = path_to_c_string(path.as_ref())?;
        let _cur = self.ctx.enter()?;
        // SAFETY: a NUL-terminated path alive for the call; no per-input options.
        let r = unsafe {
            sys::cuLinkAddFile_v2(
                self.raw,
                kind.as_raw(),
                path.as_ptr(),
                0,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        check_jit(r, "cuLinkAddFile_v2", || self.error_log_now())
    }

    /// Links everything added and returns the cubin, copied out of the link state (which owns
    /// the driver's buffer), so it outlives the linker. Load it with
    /// [`Module::load_data`](crate::Module::load_data) or
    /// [`Library::load_data`](crate::Library::load_data).
    #[wraps(cuLinkComplete)]
    #[track_caller]
    pub fn complete(&mut self) -> Result<Vec<u8>> {
        let _cur = self.ctx.enter()?;
        let mut cubin = ptr::null_mut();
        let mut size = 0;
        // SAFETY: the link state is alive; writes a pointer and a size.
        let r = unsafe { sys::cuLinkComplete(self.raw, &mut cubin, &mut size) };
        check_jit(r, "cuLinkComplete", || self.error_log_now())?;
        if cubin.is_null() || size == 0 {
            return Ok(Vec::new());
        }
        // SAFETY: on success the driver's buffer holds `size` bytes, owned by the link state,
        // which is alive; copied before anything else can touch the state.
        Ok(unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec())
    }

    /// The linker's info log so far (see [`JitOptions::verbose`]).
    pub fn info_log(&self) -> String {
        self.jit.as_ref().map(|j| j.info_log()).unwrap_or_default()
    }

    /// The linker's error log so far.
    pub fn error_log(&self) -> String {
        self.error_log_now()
    }

    /// Milliseconds spent compiling and linking, once [`complete`](Self::complete) succeeded
    /// (`CU_JIT_WALL_TIME`; 0 for a linker from [`from_raw`](Self::from_raw)).
    pub fn wall_time_ms(&self) -> f32 {
        self.jit.as_ref().map_or(0.0, |j| j.wall_time_ms())
    }

    /// The context the link runs in.
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}
