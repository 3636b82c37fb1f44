//! Module Management: device code (PTX, cubin, fatbin) loaded into one context ([`Module`]),
//! its kernels ([`Function`]), its module-scope variables ([`Global`]), and the JIT
//! [`Linker`] (`cuLink*`, which the CUDA Driver API reference lists in this group).
//!
//! A [`Module`] is the driver's `CUmodule`: code loaded into one [`Context`], unloaded when the
//! last handle (the module, or a [`Function`] or [`Global`] taken from it) is dropped. To load
//! code once for every context and device, use a [`Library`](crate::Library) instead.
//!
//! A failed load returns [`Error::Jit`] with the compiler's error log. [`JitOptions`] sets the
//! compiler options; a load with any option set also captures the info log
//! ([`Module::info_log`]) and the wall time, and a load with none costs what the raw
//! `cuModuleLoadData` costs (only when it fails is it made again with the log buffers). The image is checked before the
//! driver sees it ([`ModuleError::MalformedImage`]); each kernel's parameters are read at its first
//! checked launch, from the driver (see [`Function::params`] and
//! [`ParamSource`](crate::launch::ParamSource)). What the crate refuses itself, before or
//! after the driver is called, is a [`ModuleError`] (in [`Error::Module`]), for modules,
//! libraries and the linker alike.
//!
//! ```no_run
//! use cuda_driver::{Device, jit::JitOptions, Module};
//!
//! let ctx = Device::get(0)?.primary_context()?;
//! let ptx = "...PTX text...";
//! let module = Module::load_data_with(&ctx, ptx, &JitOptions::new().max_registers(32).verbose(true))?;
//! println!("{}", module.info_log());
//! let vec_add = module.function("VecAdd")?;
//! # Ok::<(), cuda_driver::Error>(())
//! ```

pub(crate) mod device_runtime;
pub(crate) mod function;
pub(crate) mod global;
pub(crate) mod linker;

use std::any::Any;
use std::ffi::c_void;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::Context;
use crate::cstr::{path_to_c_string, with_c_str};
use crate::entry_point::newer;
pub use crate::error::module::ModuleError;
use crate::error::{Error, Result};
use crate::handle::{Handle, OwnedHandle};
pub use crate::image::ModuleImage;
use crate::image::{Image, ImageKind, ParamCounts};
use crate::init::init;
use crate::jit::{check_jit, check_lookup, JitCall, JitOptions, LiveJit};
use crate::params::{counts_at_load, ParamCache};
use crate::release::SendRaw;
use crate::repr::DeviceRepr;

use crate::types::ModuleLoadingMode;
pub use device_runtime::{find_device_runtime, DEVICE_RUNTIME_ENV};
pub(crate) use function::FunctionOwner;
pub use function::{Function, FunctionRef};
pub use global::Global;
pub(crate) use global::{element_count, AddressClaim};
pub use linker::Linker;

/// What keeps loaded code alive, type-erased: a module's or a library's shared state.
pub(crate) type Keep = Arc<dyn Any + Send + Sync>;

/// A module loaded into a context (`CUmodule`). Cloning is cheap and shares it.
///
/// The module keeps its [`Context`] alive, and is unloaded (`cuModuleUnload`) when the last
/// handle to it is dropped: the module, its clones, and every [`Function`] and [`Global`]
/// taken from it (they hold it through an `Arc`, so they cannot dangle). A module returned by
/// [`Library::module`](crate::Library::module) belongs to its library and is never unloaded by
/// this handle.
///
/// `Send + Sync`: a module may be used from any thread.
#[wraps(CUmodule)]
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

pub(crate) struct ModuleInner {
    raw: sys::CUmodule,
    ctx: Context,
    /// `None`: loaded by this crate (or handed over), unloaded on drop. `Some`: a library's
    /// module in one context, which the library owns; this keeps the library loaded.
    owner: Option<Keep>,
    /// The option arrays and log buffers of the load, which the driver may write until the
    /// unload.
    jit: Option<LiveJit>,
    /// The info log, read from the JIT's buffer when first asked for.
    info_log: std::sync::OnceLock<String>,
    wall_time_ms: Option<f32>,
    /// The parameter counts the image told, by kernel name.
    counts: Option<Arc<ParamCounts>>,
    /// Set by [`Module::into_raw`]: the caller unloads the module.
    released: AtomicBool,
    /// Set when a [`Global`] of the module was handed out: its views may have queued work
    /// on any stream of the context, which the unload must not outrun.
    globals_used: AtomicBool,
}

// SAFETY: a CUmodule may be used from any host thread; ModuleInner unloads it once, in Drop,
// with its context made current. The JIT buffers are only read (volatile) through `&self`.
unsafe impl Send for ModuleInner {}
// SAFETY: no method mutates ModuleInner (but the atomic flag); the driver's module calls are
// thread-safe.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        let jit = self.jit.take();
        if self.owner.is_some() || *self.released.get_mut() {
            // Not ours to unload: the JIT buffers (if any) are leaked with `jit`, since the
            // driver may still write them.
            return;
        }
        let raw = SendRaw(self.raw);
        // Unloading frees the module's variables. When a `Global` handed out views of them,
        // work queued through those may still run (cuModuleUnload is not known to wait for
        // it): synchronise the context first. Modules whose variables were never handed out
        // unload directly.
        let release = if *self.globals_used.get_mut() {
            Context::release_after_sync
        } else {
            Context::release
        };
        release(&self.ctx, "cuModuleUnload", move || {
            // SAFETY: `raw` was loaded into the context made current here and is owned by this
            // inner, the last holder: every Function and Global of it held this Arc and is
            // gone.
            let r = unsafe { sys::cuModuleUnload(raw.get()) };
            if r == sys::CUDA_SUCCESS {
                if let Some(jit) = jit {
                    // SAFETY: the module is unloaded; the driver no longer writes the logs.
                    unsafe { jit.free() };
                }
            }
            r
        });
    }
}

impl ModuleInner {
    /// The JIT's error log of the load as it stands now (empty without a log).
    fn error_log(&self) -> String {
        self.jit
            .as_ref()
            .map(|j| j.get().error_log())
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("raw", &self.inner.raw)
            .field("ctx", &self.inner.ctx.as_raw())
            .finish()
    }
}

impl Handle for Module {
    type Raw = sys::CUmodule;

    /// The raw `CUmodule`, valid while `self` lives.
    fn as_raw(&self) -> sys::CUmodule {
        self.inner.raw
    }
}

impl OwnedHandle for Module {
    type Parent<'p> = &'p Context;

    /// Takes ownership of a module loaded into `ctx`; it is unloaded when the last handle
    /// is dropped. Its kernels' parameter counts are unknown (checked launches probe the
    /// driver for them, see [`Function::params`]).
    ///
    /// # Safety
    /// `raw` is a live module of `ctx` that nothing else unloads.
    unsafe fn from_raw(raw: sys::CUmodule, ctx: &Context) -> Module {
        Self::wrap(raw, ctx, None, None, None)
    }

    /// Gives up the crate's ownership and returns the raw `CUmodule`: the crate no longer
    /// unloads it, the caller does (`cuModuleUnload`). Clones, [`Function`]s and [`Global`]s of
    /// it keep working until then; unloading it while they live is the caller's to avoid.
    /// For a module of a [`Library`](crate::Library), the library still owns it.
    fn into_raw(self) -> sys::CUmodule {
        self.inner.released.store(true, Ordering::Relaxed);
        self.inner.raw
    }
}

impl Module {
    fn wrap(
        raw: sys::CUmodule,
        ctx: &Context,
        owner: Option<Keep>,
        jit: Option<Box<JitCall>>,
        counts: Option<Arc<ParamCounts>>,
    ) -> Module {
        Module {
            inner: Arc::new(ModuleInner {
                raw,
                ctx: ctx.clone(),
                owner,
                info_log: std::sync::OnceLock::new(),
                wall_time_ms: jit.as_deref().map(JitCall::wall_time_ms),
                jit: jit.map(LiveJit::new),
                counts,
                released: AtomicBool::new(false),
                globals_used: AtomicBool::new(false),
            }),
        }
    }

    /// A library's module in `ctx`, which `owner` (the library) keeps loaded.
    pub(crate) fn of_library(
        raw: sys::CUmodule,
        ctx: &Context,
        owner: Keep,
        counts: Option<Arc<ParamCounts>>,
    ) -> Module {
        Self::wrap(raw, ctx, Some(owner), None, counts)
    }

    /// Loads PTX text, a cubin or a fatbin into `ctx` with the driver's default JIT options:
    /// the raw `cuModuleLoadData` after the image's check, and, only when that fails,
    /// `cuModuleLoadDataEx` with the log buffers for the error log ([`Error::Jit`]). No info
    /// log or wall time is kept ([`info_log`](Self::info_log) is empty).
    ///
    /// See [`load_data_with`](Self::load_data_with).
    #[track_caller]
    pub fn load_data<I: ModuleImage + ?Sized>(ctx: &Context, image: &I) -> Result<Module> {
        Self::load_data_with(ctx, image, &JitOptions::default())
    }

    /// Loads PTX text, a cubin or a fatbin into `ctx`, compiling PTX with `options`.
    ///
    /// PTX needs no NUL terminator (`"...\0"` avoids a copy). The image is checked first: the
    /// driver reads a cubin or fatbin through a bare pointer as far as its headers say, so an
    /// image that is not self-contained and within `image`'s bytes is refused with
    /// [`ModuleError::MalformedImage`] naming what is wrong (see that variant). A failed compile is
    /// [`Error::Jit`] with the compiler's error log; the info log of a successful one is
    /// [`Module::info_log`]. With `options` equal to [`JitOptions::default`] this is
    /// [`load_data`](Self::load_data): no option arrays, no info log, and the logged load only
    /// after a failed one. Nothing else is read from the image: each kernel's parameters are
    /// asked from the driver at its first checked launch, or, under
    /// [`ParamSource::Image`](crate::launch::ParamSource::Image), read from the image here (PTX:
    /// offsets and sizes, so the checked launches ask the driver nothing; binaries: counts,
    /// so they ask for exactly those parameters).
    ///
    ///
    /// ```no_run
    /// # let ctx = cuda_driver::Device::get(0)?.primary_context()?;
    /// use cuda_driver::{Error, jit::JitOptions, Module};
    /// match Module::load_data_with(&ctx, "not PTX", &JitOptions::new()) {
    ///     Err(Error::Jit { log, .. }) => eprintln!("the JIT says:\n{log}"),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[wraps(cuModuleLoadDataEx, cuModuleLoadData)]
    #[track_caller]
    pub fn load_data_with<I: ModuleImage + ?Sized>(
        ctx: &Context,
        image: &I,
        options: &JitOptions,
    ) -> Result<Module> {
        let image = Image::check(image.image_bytes())?;
        let counts = counts_at_load(&image);
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        if *options == JitOptions::default() {
            // No option set: the load the raw call makes, without option arrays or log
            // buffers. Only a failed one is made again below, with them, for the error log.
            let r = image.with_ptr(|p| {
                // SAFETY: `p` points to a checked image the driver reads within its bounds (a
                // binary whose headers lie within it, or NUL-terminated text), alive for the
                // call; no options; writes one CUmodule.
                unsafe { sys::cuModuleLoadData(&mut raw, p) }
            });
            if r == sys::CUDA_SUCCESS {
                return Ok(Self::wrap(raw, ctx, None, None, counts));
            }
        }
        let mut call = JitCall::new(options);
        let r = image.with_ptr(|p| {
            // SAFETY: `p` points to a checked image the driver reads within its bounds (a
            // binary whose headers lie within it, or NUL-terminated text), alive for the call;
            // the option arrays hold `call.len()` entries whose buffers live in the boxed
            // `call`, which the module keeps until it is unloaded; writes one CUmodule.
            unsafe {
                sys::cuModuleLoadDataEx(
                    &mut raw,
                    p,
                    call.len(),
                    call.options_ptr(),
                    call.values_ptr(),
                )
            }
        });
        check_jit(r, "cuModuleLoadDataEx", || call.error_log())?;
        Ok(Self::wrap(raw, ctx, None, Some(call), counts))
    }

    /// Loads a module from a bare pointer with no options and no checks. The kernels'
    /// parameter counts are unknown, so a checked launch probes the driver for them (see
    /// [`Function::params`]).
    ///
    ///
    /// # Safety
    /// `image` points to a cubin, a fatbin or NUL-terminated PTX that stays readable for the
    /// call, and whose headers describe only memory that is part of it.
    #[wraps(cuModuleLoadData)]
    #[track_caller]
    pub unsafe fn load_data_unchecked(ctx: &Context, image: *const c_void) -> Result<Module> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: the caller guarantees `image`; writes one CUmodule.
            unsafe { sys::cuModuleLoadData(&mut raw, image) },
        )?;
        Ok(Self::wrap(raw, ctx, None, None, None))
    }

    /// Loads a fatbin (as output by `nvcc -fatbin`), after checking it as
    /// [`load_data_with`](Self::load_data_with) does; anything but a fatbin is
    /// [`ModuleError::MalformedImage`].
    #[wraps(cuModuleLoadFatBinary)]
    #[track_caller]
    pub fn load_fat_binary<I: ModuleImage + ?Sized>(ctx: &Context, fatbin: &I) -> Result<Module> {
        let image = Image::check(fatbin.image_bytes())?;
        if image.kind() != ImageKind::FatBinary {
            return Err(Error::Module(ModuleError::MalformedImage {
                kind: "fatbin",
                reason: "load_fat_binary: the image does not start with the fatbin magic \
                         0xBA55ED50"
                    .into(),
            }));
        }
        let counts = counts_at_load(&image);
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        let r = image.with_ptr(|p| {
            // SAFETY: a checked fatbin whose header and entries lie within its bytes, alive for
            // the call; writes one CUmodule.
            call!(unsafe { sys::cuModuleLoadFatBinary(&mut raw, p) })
        });
        r?;
        Ok(Self::wrap(raw, ctx, None, None, counts))
    }

    /// Loads a module from a file: a cubin, PTX or fatbin.
    ///
    /// The file is read and loaded as [`load_data`](Self::load_data) loads bytes
    /// (`cuModuleLoadDataEx`): checked first, with the JIT's logs. A file that cannot be
    /// read is handed to `cuModuleLoad`, whose error says why (`CUDA_ERROR_FILE_NOT_FOUND`,
    /// ...).
    ///
    /// Calls `cuModuleLoadDataEx` (and `cuModuleLoad` for its error).
    #[wraps(cuModuleLoadDataEx, cuModuleLoad)]
    #[track_caller]
    pub fn load_file(ctx: &Context, path: impl AsRef<Path>) -> Result<Module> {
        let path = path.as_ref();
        let c_path = path_to_c_string(path)?;
        if let Ok(bytes) = std::fs::read(path) {
            return Self::load_data(ctx, &bytes);
        }
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        call!(
            // SAFETY: a NUL-terminated path alive for the call; writes one CUmodule. The file
            // could not be read here, so the driver is expected to fail too.
            unsafe { sys::cuModuleLoad(&mut raw, c_path.as_ptr()) },
        )?;
        Ok(Self::wrap(raw, ctx, None, None, None))
    }

    /// The context the module is loaded in.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// The JIT's info log of the load (empty for binaries and for loads without a log: those
    /// with no [`JitOptions`] set, as [`load_data`](Self::load_data) makes).
    /// [`JitOptions::verbose`] adds register and memory use of each kernel.
    pub fn info_log(&self) -> &str {
        self.inner.info_log.get_or_init(|| {
            self.inner
                .jit
                .as_ref()
                .map(|j| j.get().info_log())
                .unwrap_or_default()
        })
    }

    /// Milliseconds the driver spent compiling and linking the module (`CU_JIT_WALL_TIME`),
    /// for loads with an option set (`None` for [`load_data`](Self::load_data)).
    pub fn wall_time_ms(&self) -> Option<f32> {
        self.inner.wall_time_ms
    }

    /// The kernel `name` (its PTX name: `extern "C"` names are the C names, others are
    /// mangled). A missing name is [`Error::NotFound`] naming it.
    #[wraps(cuModuleGetFunction)]
    #[track_caller]
    pub fn function(&self, name: &str) -> Result<Function> {
        let _cur = self.inner.ctx.enter()?;
        let mut raw = ptr::null_mut();
        let r = with_c_str("kernel name", name, |p| {
            // SAFETY: the module is alive; `p` is NUL-terminated; writes one CUfunction.
            unsafe { sys::cuModuleGetFunction(&mut raw, self.inner.raw, p) }
        })?;
        check_lookup(r, "cuModuleGetFunction", "kernel", name, || {
            self.inner.error_log()
        })?;
        Ok(Function::new(
            raw,
            FunctionOwner::Module(self.inner.clone()),
            ParamCache::named(name, self.inner.counts.clone()),
        ))
    }

    /// The module-scope variable `name` (`__device__` or `__constant__`) as `len` elements of
    /// `T`, where the variable's size must be a whole number of `T`s
    /// ([`ModuleError::SizeMismatch`] otherwise).
    ///
    /// The handle is exclusive: while it lives, another lookup of the same variable (through
    /// this module, a clone, or the library it belongs to) is [`Error::AlreadyBorrowed`].
    ///
    ///
    /// ```no_run
    /// # let ctx = cuda_driver::Device::get(0)?.primary_context()?;
    /// # let module = cuda_driver::Module::load_data(&ctx, "")?;
    /// use cuda_driver::prelude::*;
    /// // __constant__ float const_table[16];
    /// let mut table = module.global::<f32>("const_table")?;
    /// table.copy_from_host(&[1.0; 16])?;
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[wraps(cuModuleGetGlobal)]
    #[track_caller]
    pub fn global<T: DeviceRepr>(&self, name: &str) -> Result<Global<T>> {
        let _cur = self.inner.ctx.enter()?;
        let (mut ptr, mut bytes) = (0, 0);
        let r = with_c_str("global name", name, |p| {
            // SAFETY: the module is alive; `p` is NUL-terminated; writes a pointer and a size.
            unsafe { sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, self.inner.raw, p) }
        })?;
        check_lookup(r, "cuModuleGetGlobal_v2", "global", name, || {
            self.inner.error_log()
        })?;
        let global = Global::new(ptr, bytes, name, &self.inner.ctx, self.inner.clone())?;
        self.inner.globals_used.store(true, Ordering::Relaxed);
        Ok(global)
    }
}

impl Module {
    /// The number of functions (kernels) in the module; CUDA 12.4.
    #[wraps(cuModuleGetFunctionCount)]
    #[track_caller]
    pub fn function_count(&self) -> Result<usize> {
        let _cur = self.inner.ctx.enter()?;
        let mut n = 0;
        call!(
            // SAFETY: the module is alive; writes one unsigned int.
            unsafe { newer::cuModuleGetFunctionCount()?(&mut n, self.inner.raw) },
        )?;
        Ok(n as usize)
    }

    /// Every function of the module, each keeping the module loaded; CUDA 12.4.
    #[wraps(cuModuleEnumerateFunctions)]
    #[track_caller]
    pub fn functions(&self) -> Result<Vec<Function>> {
        let n = self.function_count()?;
        let _cur = self.inner.ctx.enter()?;
        let mut raw = vec![ptr::null_mut(); n];
        call!(
            // SAFETY: `raw` has room for `n` handles; the module is alive.
            unsafe {
                newer::cuModuleEnumerateFunctions()?(raw.as_mut_ptr(), n as u32, self.inner.raw)
            },
        )?;
        Ok(raw
            .into_iter()
            .map(|r| {
                Function::new(
                    r,
                    FunctionOwner::Module(self.inner.clone()),
                    ParamCache::unnamed(None),
                )
            })
            .collect())
    }
}

/// Whether this process loads modules eagerly or lazily (`CUDA_MODULE_LOADING`).
#[wraps(cuModuleGetLoadingMode)]
#[track_caller]
pub fn module_loading_mode() -> Result<ModuleLoadingMode> {
    init()?;
    let mut m = 0;
    call!(
        // SAFETY: writes one CUmoduleLoadingMode.
        unsafe { sys::cuModuleGetLoadingMode(&mut m) },
    )?;
    Ok(ModuleLoadingMode(m))
}
