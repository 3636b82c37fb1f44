//! Library Management (CUDA 12.0): context-independent loading, [`Library`], [`Kernel`] and
//! [`Managed`] variables.
//!
//! A library is device code loaded once for the whole process: the driver loads it into every
//! context that needs it (at context creation, or lazily at the first use in a context) and
//! unloads it from all of them at [`cuLibraryUnload`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__LIBRARY.html).
//! Its [`Kernel`]s are context-independent handles: one `Kernel` launches in whichever context
//! its stream belongs to, on any device. Loading needs no context, only an initialised driver.
//!
//! # Lazy loading
//!
//! With lazy loading (the driver's default since CUDA 12.2, `CUDA_MODULE_LOADING=LAZY`),
//! [`Library::load_data`] may return `Ok` for code that does not compile (invalid PTX, a
//! header-only cubin): the driver compiles it when it first loads the library into a context,
//! and the failure shows at a lookup ([`Library::kernel`], [`Library::global`],
//! [`Library::managed`], [`Library::module`], [`Kernel::function`]) or at a launch. The
//! library keeps its JIT log buffers for as long as it lives, so that such a lookup error is
//! [`Error::Jit`] with the compiler's log. To have errors at load time, load eagerly into a
//! context: [`Library::load_data_eager`] or [`Library::load_into`].
//!
//! The errors of loading code that the crate finds itself (a malformed image, a managed
//! variable that is not a whole number of the element type) are the module's:
//! [`ModuleError`](crate::module::ModuleError), in [`Error::Module`].
//!
//! ```no_run
//! use cuda_driver::prelude::*;
//! use cuda_driver::{Device, DeviceBuffer, Library, LaunchConfig, Stream};
//!
//! let lib = Library::load_data("...PTX, cubin or fatbin...")?; // no context needed
//! let kernel = lib.kernel("myKernel")?;
//! for dev in Device::all()? {
//!     let ctx = dev.primary_context()?;
//!     let stream = Stream::null(&ctx);
//!     let mut out = DeviceBuffer::<i32>::new(&ctx, 256)?;
//!     let n = 256i32;
//!     // SAFETY: myKernel(int* out, int n) writes out[0..n).
//!     unsafe { kernel.launch(&stream, &LaunchConfig::for_num_elems(256)?, (out.as_view_mut(), &n))? };
//!     stream.synchronize()?;
//! }
//! # Ok::<(), cuda_driver::Error>(())
//! ```

use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cuda_driver_macros::{call, wraps};
use cuda_driver_sys as sys;

use crate::context::current::AnyCurrent;
use crate::context::Context;
use crate::cstr::{path_to_c_string, with_c_str};
use crate::device::Device;
use crate::entry_point::newer;
use crate::error::{report_drop_error, Error, Result};
use crate::handle::{Handle, OwnedHandle};
use crate::image::{Image, ImageKind, ModuleImage, ParamCounts};
use crate::jit::{check_jit, check_lookup, JitCall, JitOptions, LiveJit};
use crate::memory::{DeviceSlice, DeviceSliceMut};
use crate::module::{AddressClaim, Function, FunctionOwner, Global, Module};
use crate::params::{counts_at_load, KernelParams, ParamCache, ParamInfo};
use crate::release::{release, SendRaw};
use crate::repr::DeviceRepr;
use crate::types::CacheConfig;
use crate::types::FunctionAttribute;

/// Options of a library load (`CUlibraryOption`).
///
/// `CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE` is for the CUDA runtime's internal use
/// and has no setter.
#[wraps(CUlibraryOption)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LibraryOptions {
    binary_is_preserved: bool,
}

impl LibraryOptions {
    /// No options.
    pub const fn new() -> Self {
        LibraryOptions {
            binary_is_preserved: false,
        }
    }

    /// Tells the driver that the image stays readable until the library is unloaded
    /// (`CU_LIBRARY_BINARY_IS_PRESERVED`), so it need not keep its own copy for lazy loading.
    ///
    /// [`Library::load_data_with`] then keeps a copy of the image in the library (the image
    /// borrowed for the call could be gone long before the unload); [`Library::load_static`]
    /// uses a `'static` image as it is.
    #[doc(alias = "CU_LIBRARY_BINARY_IS_PRESERVED")]
    pub const fn binary_is_preserved(mut self, on: bool) -> Self {
        self.binary_is_preserved = on;
        self
    }
}

/// Device code loaded for every context and device (`CUlibrary`). Cloning is cheap and
/// shares it.
///
/// No context is needed to load it. It is unloaded (`cuLibraryUnload`) when the last holder
/// is dropped: the library, its clones, and every [`Kernel`], [`Managed`] variable, [`Global`],
/// [`Module`] and [`Function`] taken from it. Contexts it was loaded into may be destroyed
/// before that: the driver unloads it from each context as the context goes.
///
/// The driver may compile the library lazily, when it first loads it into a context; see
/// [lazy loading](crate::Library#lazy-loading-and-errors) below.
///
/// # Lazy loading and errors
///
/// With lazy loading (the driver's default since CUDA 12.2, `CUDA_MODULE_LOADING=LAZY`), a
/// load of code that does not compile (invalid PTX, a header-only cubin) may succeed, and the
/// error come at the first lookup or launch in a context. The library keeps its JIT log buffers
/// (the driver writes the logs then) for as long as it lives, and the lookups ([`kernel`],
/// [`global`], [`managed`], [`module`], [`Kernel::function`]) return [`Error::Jit`] with the
/// error log when the driver wrote one. [`load_data_eager`] and [`load_into`] load into a
/// context at once, to get such errors at load time.
///
/// `Send + Sync`.
///
/// [`kernel`]: Self::kernel
/// [`global`]: Self::global
/// [`managed`]: Self::managed
/// [`module`]: Self::module
/// [`load_data_eager`]: Self::load_data_eager
/// [`load_into`]: Self::load_into
#[wraps(CUlibrary)]
#[derive(Clone)]
pub struct Library {
    inner: Arc<LibraryInner>,
}

pub(crate) struct LibraryInner {
    raw: sys::CUlibrary,
    /// The option arrays and log buffers of the load: the driver may write the logs until the
    /// unload (lazy loading).
    jit: Option<LiveJit>,
    /// The image the driver may read until the unload (`CU_LIBRARY_BINARY_IS_PRESERVED`)
    /// when this library owns it.
    image: Option<Box<[u8]>>,
    /// The parameter counts the image told, by kernel name.
    counts: Option<Arc<ParamCounts>>,
    /// Set by [`Library::into_raw`]: the caller unloads the library.
    released: AtomicBool,
    /// The contexts in which views of the library's variables ([`Global`], [`Managed`]) were
    /// handed out: work queued through them may still run, so the unload synchronises them
    /// first (cuLibraryUnload is not known to wait for it).
    used_in: std::sync::Mutex<Vec<Context>>,
}

// SAFETY: a CUlibrary is context-independent and may be used from any host thread;
// LibraryInner unloads it once, in Drop. The JIT buffers are only read (volatile) through
// `&self`.
unsafe impl Send for LibraryInner {}
// SAFETY: no method mutates LibraryInner (but the atomic flag); the driver's library calls are
// thread-safe.
unsafe impl Sync for LibraryInner {}

impl Drop for LibraryInner {
    fn drop(&mut self) {
        let (jit, image) = (self.jit.take(), self.image.take());
        if *self.released.get_mut() {
            // The caller unloads it: what the driver may still read or write is leaked.
            std::mem::forget(image);
            return;
        }
        let raw = SendRaw(self.raw);
        let used_in = std::mem::take(self.used_in.get_mut().unwrap_or_else(|e| e.into_inner()));
        release(move || {
            // Work queued through views of the library's variables finishes first; if a
            // context cannot be synchronised, the library (and its variables) is leaked.
            if !used_in
                .iter()
                .all(|ctx| ctx.sync_for_release("cuLibraryUnload"))
            {
                // The JIT buffers (`jit`) are freed only after an unload: `LiveJit` leaks
                // them when it goes out of scope here.
                std::mem::forget(image);
                return;
            }
            // SAFETY: `raw` was loaded by cuLibraryLoad* and is owned by this inner, the last
            // holder; cuLibraryUnload needs no current context.
            let r = unsafe { sys::cuLibraryUnload(raw.get()) };
            report_drop_error("cuLibraryUnload", r);
            if r == sys::CUDA_SUCCESS {
                if let Some(jit) = jit {
                    // SAFETY: unloaded: the driver no longer writes the logs.
                    unsafe { jit.free() };
                }
                drop(image);
            } else {
                std::mem::forget(image);
            }
        });
    }
}

impl LibraryInner {
    /// Notes that views of the library's variables were handed out in `ctx`.
    fn note_used_in(&self, ctx: &Context) {
        let mut used = self.used_in.lock().unwrap_or_else(|e| e.into_inner());
        if !used.iter().any(|c| c.as_raw() == ctx.as_raw()) {
            used.push(ctx.clone());
        }
    }

    fn error_log(&self) -> String {
        self.jit
            .as_ref()
            .map(|j| j.get().error_log())
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("raw", &self.inner.raw)
            .finish()
    }
}

/// The `CUlibraryOption` arrays of one load.
struct LibraryCall {
    options: [sys::CUlibraryOption; 1],
    values: [*mut c_void; 1],
    count: u32,
}

impl LibraryCall {
    fn new(opts: &LibraryOptions) -> LibraryCall {
        let mut call = LibraryCall {
            options: [0; 1],
            values: [ptr::null_mut(); 1],
            count: 0,
        };
        if opts.binary_is_preserved {
            // A value of 1 in the option's slot, as for the JIT's integer options.
            call.options[0] = sys::CU_LIBRARY_BINARY_IS_PRESERVED;
            call.values[0] = 1usize as *mut c_void;
            call.count = 1;
        }
        call
    }
}

impl Handle for Library {
    type Raw = sys::CUlibrary;

    /// The raw `CUlibrary`, valid while `self` lives.
    fn as_raw(&self) -> sys::CUlibrary {
        self.inner.raw
    }
}

impl OwnedHandle for Library {
    type Parent<'p> = ();

    /// Takes ownership of a loaded library; it is unloaded when the last holder is dropped.
    /// Its kernels' parameter counts are unknown (checked launches probe the driver for them,
    /// see [`Kernel::params`]), and its logs are not captured.
    ///
    /// # Safety
    /// `raw` is a live library that nothing else unloads, and whose image (if it was loaded
    /// with `CU_LIBRARY_BINARY_IS_PRESERVED`) and JIT log buffers stay valid until then.
    unsafe fn from_raw(raw: sys::CUlibrary, (): ()) -> Library {
        Self::wrap(raw, None, None, None)
    }

    /// Gives up the crate's ownership and returns the raw `CUlibrary`: the crate no longer
    /// unloads it, the caller does (`cuLibraryUnload`). The JIT log buffers and a preserved
    /// image are leaked, since the driver may use them until then. Clones and handles taken
    /// from it keep working until the caller unloads it.
    fn into_raw(self) -> sys::CUlibrary {
        self.inner.released.store(true, Ordering::Relaxed);
        self.inner.raw
    }
}

impl Library {
    fn wrap(
        raw: sys::CUlibrary,
        jit: Option<Box<JitCall>>,
        image: Option<Box<[u8]>>,
        counts: Option<Arc<ParamCounts>>,
    ) -> Library {
        Library {
            inner: Arc::new(LibraryInner {
                raw,
                jit: jit.map(LiveJit::new),
                image,
                counts,
                released: AtomicBool::new(false),
                used_in: std::sync::Mutex::new(Vec::new()),
            }),
        }
    }

    /// Loads PTX text, a cubin or a fatbin with the driver's default options. See
    /// [`load_data_with`](Self::load_data_with).
    #[track_caller]
    pub fn load_data<I: ModuleImage + ?Sized>(image: &I) -> Result<Library> {
        Self::load_data_with(image, &JitOptions::default(), &LibraryOptions::default())
    }

    /// Loads PTX text, a cubin or a fatbin for every context, with JIT and library options.
    /// Initialises the driver if needed; no context is needed.
    ///
    /// As with [`Module::load_data_with`], PTX needs no NUL terminator, the image is checked
    /// first ([`ModuleError::MalformedImage`](crate::module::ModuleError::MalformedImage)) and
    /// a failed compile is [`Error::Jit`] with the log; the kernels' parameters are read at
    /// their first checked launch (see [`ParamSource`](crate::launch::ParamSource)). With lazy
    /// loading the compile may happen later, in a context (see
    /// [lazy loading](Self#lazy-loading-and-errors)). With
    /// [`LibraryOptions::binary_is_preserved`] the library keeps its own copy of the image.
    #[wraps(cuLibraryLoadData)]
    #[track_caller]
    pub fn load_data_with<I: ModuleImage + ?Sized>(
        image: &I,
        jit: &JitOptions,
        options: &LibraryOptions,
    ) -> Result<Library> {
        let image = Image::check(image.image_bytes())?;
        let counts = counts_at_load(&image);
        if options.binary_is_preserved {
            let owned = owned_image(&image);
            // SAFETY: the owned image (checked above, NUL-terminated when text) is moved into
            // the library, which keeps it (at the same heap address) until after
            // cuLibraryUnload.
            return unsafe {
                Self::load_raw(owned.as_ptr().cast(), Some(owned), jit, options, counts)
            };
        }
        image.with_ptr(|p| {
            // SAFETY: `p` is a checked image alive for the call; without BINARY_IS_PRESERVED
            // the driver does not read it afterwards.
            unsafe { Self::load_raw(p, None, jit, options, counts) }
        })
    }

    /// Loads an image that lives for the whole program, such as an `include_bytes!` cubin or
    /// a `"...\0"` PTX constant. With [`LibraryOptions::binary_is_preserved`] the driver reads
    /// it in place whenever it loads the library into a context, and no copy is made (except of
    /// PTX text without a NUL terminator, which the library then keeps).
    #[wraps(cuLibraryLoadData)]
    #[track_caller]
    pub fn load_static<I: ModuleImage + ?Sized>(
        image: &'static I,
        jit: &JitOptions,
        options: &LibraryOptions,
    ) -> Result<Library> {
        let bytes = image.image_bytes();
        let checked = Image::check(bytes)?;
        let needs_copy = checked.kind() == ImageKind::Text && bytes.last() != Some(&0);
        if options.binary_is_preserved && needs_copy {
            return Self::load_data_with(image, jit, options);
        }
        let counts = counts_at_load(&checked);
        checked.with_ptr(|p| {
            // SAFETY: `p` points into the checked 'static image (no copy was needed for a
            // preserved load), which the driver may read for as long as it likes.
            unsafe { Self::load_raw(p, None, jit, options, counts) }
        })
    }

    /// Loads a library and, at once, into `ctx` (see [`load_into`](Self::load_into)), so that
    /// code that does not compile fails here with [`Error::Jit`] and its log, whatever the
    /// driver's lazy loading. The default JIT and library options; for others,
    /// [`load_data_with`](Self::load_data_with) then [`load_into`](Self::load_into).
    #[wraps(cuLibraryLoadData, cuLibraryGetModule)]
    #[track_caller]
    pub fn load_data_eager<I: ModuleImage + ?Sized>(image: &I, ctx: &Context) -> Result<Library> {
        let lib = Self::load_data(image)?;
        lib.load_into(ctx)?;
        Ok(lib)
    }

    /// # Safety
    /// `image` is a checked, loadable image that stays readable until the unload when
    /// `options` ask to preserve it (which `keep` may own), or for the call otherwise.
    #[track_caller]
    unsafe fn load_raw(
        image: *const c_void,
        keep: Option<Box<[u8]>>,
        jit: &JitOptions,
        options: &LibraryOptions,
        counts: Option<Arc<ParamCounts>>,
    ) -> Result<Library> {
        crate::init()?;
        let mut call = JitCall::for_library(jit);
        let mut lib_call = LibraryCall::new(options);
        let mut raw = ptr::null_mut();
        // SAFETY: the caller guarantees `image`; both option arrays hold the counts given and
        // their buffers live in the boxed `call`, which the library keeps until it is unloaded
        // (the driver may write the logs when it compiles lazily); writes one CUlibrary.
        let r = unsafe {
            sys::cuLibraryLoadData(
                &mut raw,
                image,
                call.options_ptr(),
                call.values_ptr(),
                call.len(),
                lib_call.options.as_mut_ptr(),
                lib_call.values.as_mut_ptr(),
                lib_call.count,
            )
        };
        check_jit(r, "cuLibraryLoadData", || call.error_log())?;
        Ok(Self::wrap(raw, Some(call), keep, counts))
    }

    /// Loads a library from a cubin, PTX or fatbin file, with JIT and library options.
    ///
    /// The file is read and loaded as [`load_data_with`](Self::load_data_with) loads bytes:
    /// checked first. A file that cannot be read is
    /// handed to `cuLibraryLoadFromFile`, whose error says why.
    ///
    /// Calls `cuLibraryLoadData` (and `cuLibraryLoadFromFile` for its error).
    #[wraps(cuLibraryLoadData, cuLibraryLoadFromFile)]
    #[track_caller]
    pub fn load_file(
        path: impl AsRef<Path>,
        jit: &JitOptions,
        options: &LibraryOptions,
    ) -> Result<Library> {
        let path = path.as_ref();
        let c_path = path_to_c_string(path)?;
        if let Ok(bytes) = std::fs::read(path) {
            return Self::load_data_with(&bytes, jit, options);
        }
        crate::init()?;
        let mut call = JitCall::for_library(jit);
        let mut raw = ptr::null_mut();
        // SAFETY: a NUL-terminated path; the JIT option arrays hold call.len() entries whose
        // buffers live in the boxed `call`, kept by the library; no library options (the
        // preserve option is for cuLibraryLoadData only); writes one CUlibrary. The file could
        // not be read here, so the driver is expected to fail too.
        let r = unsafe {
            sys::cuLibraryLoadFromFile(
                &mut raw,
                c_path.as_ptr(),
                call.options_ptr(),
                call.values_ptr(),
                call.len(),
                ptr::null_mut(),
                ptr::null_mut(),
                0,
            )
        };
        check_jit(r, "cuLibraryLoadFromFile", || call.error_log())?;
        Ok(Self::wrap(raw, Some(call), None, None))
    }

    /// The JIT's info log as the driver has written it so far: at the load, or later, when it
    /// compiled the library lazily (see [`JitOptions::verbose`]). Empty for a library loaded
    /// with no JIT option set, which asks for the error log only (see [`JitOptions`]).
    pub fn info_log(&self) -> String {
        self.inner
            .jit
            .as_ref()
            .map(|j| j.get().info_log())
            .unwrap_or_default()
    }

    /// The JIT's error log as the driver has written it so far (empty unless a compile
    /// failed; see [lazy loading](Self#lazy-loading-and-errors)).
    pub fn error_log(&self) -> String {
        self.inner.error_log()
    }

    /// Loads the library into `ctx` now, if it is not yet (the driver does so lazily
    /// otherwise), so that code that does not compile fails here: [`Error::Jit`] with the
    /// compiler's log.
    #[wraps(cuLibraryGetModule)]
    #[track_caller]
    pub fn load_into(&self, ctx: &Context) -> Result<()> {
        self.module_raw(ctx).map(|_| ())
    }

    #[track_caller]
    fn module_raw(&self, ctx: &Context) -> Result<sys::CUmodule> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        // SAFETY: the library is alive, `ctx` is current; writes one CUmodule, which the
        // library owns.
        let r = unsafe { sys::cuLibraryGetModule(&mut raw, self.inner.raw) };
        check_lookup(r, "cuLibraryGetModule", "module", "(the library's)", || {
            self.inner.error_log()
        })?;
        Ok(raw)
    }

    /// The kernel `name`, a context-independent handle that keeps the library loaded. A missing
    /// name is [`Error::NotFound`] naming it; code that failed to compile lazily is
    /// [`Error::Jit`] with the log.
    #[wraps(cuLibraryGetKernel)]
    #[track_caller]
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let mut raw = ptr::null_mut();
        let r = with_c_str("kernel name", name, |p| {
            // SAFETY: the library is alive; `p` is NUL-terminated; writes one CUkernel.
            unsafe { sys::cuLibraryGetKernel(&mut raw, self.inner.raw, p) }
        })?;
        check_lookup(r, "cuLibraryGetKernel", "kernel", name, || {
            self.inner.error_log()
        })?;
        Ok(Kernel {
            raw,
            lib: self.inner.clone(),
            params: ParamCache::named(name, self.inner.counts.clone()),
        })
    }

    /// Every kernel of the library (names from [`Kernel::name`]).
    ///
    /// Calls `cuLibraryGetKernelCount` and `cuLibraryEnumerateKernels` (CUDA 12.4; an older
    /// driver gives [`Error::Unsupported`]).
    #[wraps(cuLibraryGetKernelCount, cuLibraryEnumerateKernels)]
    #[track_caller]
    pub fn kernels(&self) -> Result<Vec<Kernel>> {
        let mut n = 0;
        call!(
            // SAFETY: the library is alive; writes one unsigned int.
            unsafe { newer::cuLibraryGetKernelCount()?(&mut n, self.inner.raw) },
        )?;
        let mut raws = vec![ptr::null_mut(); n as usize];
        if n > 0 {
            call!(
                // SAFETY: `raws` holds n writable CUkernel slots.
                unsafe {
                    newer::cuLibraryEnumerateKernels()?(raws.as_mut_ptr(), n, self.inner.raw)
                },
            )?;
        }
        Ok(raws
            .into_iter()
            .map(|raw| Kernel {
                raw,
                lib: self.inner.clone(),
                params: ParamCache::unnamed(self.inner.counts.clone()),
            })
            .collect())
    }

    /// The `__managed__` variable `name` as `len` elements of `T` (its size must be a whole
    /// number of `T`s, [`ModuleError::SizeMismatch`](crate::module::ModuleError::SizeMismatch)
    /// otherwise): one allocation, at one address, shared by every context and device.
    ///
    /// The handle is exclusive: while it lives, another lookup of the same variable is
    /// [`Error::AlreadyBorrowed`].
    ///
    /// The driver registers a library's managed variables when it loads the library into a
    /// context; if it reports the name missing while a context is current on this thread, the
    /// library is loaded into that context (`cuLibraryGetModule`) and the lookup retried.
    #[wraps(cuLibraryGetManaged)]
    #[track_caller]
    pub fn managed<T: DeviceRepr>(&self, name: &str) -> Result<Managed<T>> {
        let lookup = || {
            let (mut ptr, mut bytes) = (0, 0);
            let r = with_c_str("managed variable name", name, |p| {
                // SAFETY: the library is alive; `p` is NUL-terminated; writes a pointer and a
                // size.
                unsafe { sys::cuLibraryGetManaged(&mut ptr, &mut bytes, self.inner.raw, p) }
            })?;
            check_lookup(r, "cuLibraryGetManaged", "managed variable", name, || {
                self.inner.error_log()
            })?;
            Ok::<_, Error>((ptr, bytes))
        };
        let (ptr, bytes) = match lookup() {
            Err(Error::NotFound { .. }) if Context::current_raw()?.is_some() => {
                let mut module = ptr::null_mut();
                let r =
                    // SAFETY: the library is alive and a context is current; writes one
                    // CUmodule, which the library owns.
                    unsafe { sys::cuLibraryGetModule(&mut module, self.inner.raw) };
                check_lookup(r, "cuLibraryGetModule", "module", "(the library's)", || {
                    self.inner.error_log()
                })?;
                lookup()?
            }
            r => r?,
        };
        let len = crate::module::element_count::<T>("managed variable", name, bytes)?;
        Ok(Managed {
            ptr,
            len,
            _claim: AddressClaim::new(ptr, "managed variable", name)?,
            lib: self.inner.clone(),
            _marker: PhantomData,
        })
    }

    /// The `__device__` or `__constant__` variable `name` in `ctx` (each context has its own
    /// copy), as `len` elements of `T`; exclusive as [`Module::global`] is.
    #[wraps(cuLibraryGetGlobal)]
    #[track_caller]
    pub fn global<T: DeviceRepr>(&self, name: &str, ctx: &Context) -> Result<Global<T>> {
        let _cur = ctx.enter()?;
        let (mut ptr, mut bytes) = (0, 0);
        let r = with_c_str("global name", name, |p| {
            // SAFETY: the library is alive, `ctx` is current; `p` is NUL-terminated; writes a
            // pointer and a size.
            unsafe { sys::cuLibraryGetGlobal(&mut ptr, &mut bytes, self.inner.raw, p) }
        })?;
        check_lookup(r, "cuLibraryGetGlobal", "global", name, || {
            self.inner.error_log()
        })?;
        let global = Global::new(ptr, bytes, name, ctx, self.inner.clone())?;
        self.inner.note_used_in(ctx);
        Ok(global)
    }

    /// The library's module in `ctx` (loading the library into `ctx` if it is not yet). The
    /// module belongs to the library and is not unloaded by the returned handle.
    #[wraps(cuLibraryGetModule)]
    #[track_caller]
    pub fn module(&self, ctx: &Context) -> Result<Module> {
        let raw = self.module_raw(ctx)?;
        Ok(Module::of_library(
            raw,
            ctx,
            self.inner.clone(),
            self.inner.counts.clone(),
        ))
    }
}

/// A copy of a checked image that the driver can load: NUL-terminated when it is text.
fn owned_image(image: &Image<'_>) -> Box<[u8]> {
    let mut v = image.bytes().to_vec();
    if image.kind() == ImageKind::Text && v.last() != Some(&0) {
        v.push(0);
    }
    v.into_boxed_slice()
}

/// A kernel of a [`Library`] (`CUkernel`): a context-independent handle that launches in the
/// context of the stream it is launched on, on any device.
///
/// It holds its library through an `Arc` (the library stays loaded while any kernel of it
/// lives), and caches its name and its parameter list for checked launches. Cloning is cheap
/// apart from copying those caches. `Send + Sync`.
#[wraps(CUkernel)]
#[derive(Clone)]
pub struct Kernel {
    raw: sys::CUkernel,
    lib: Arc<LibraryInner>,
    params: ParamCache,
}

// SAFETY: a CUkernel is context-independent and may be used from any thread; the Arc keeps its
// library loaded.
unsafe impl Send for Kernel {}
// SAFETY: launches and attribute calls are thread-safe in the driver; the caches are OnceLocks.
unsafe impl Sync for Kernel {}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("raw", &self.raw)
            .field("name", &self.params.known_name())
            .finish()
    }
}

impl Handle for Kernel {
    type Raw = sys::CUkernel;

    /// The raw `CUkernel`, valid while `self` lives.
    #[inline]
    fn as_raw(&self) -> sys::CUkernel {
        self.raw
    }
}

impl OwnedHandle for Kernel {
    type Parent<'p> = &'p Library;

    /// Wraps a kernel of `library`, which the handle keeps loaded. Under
    /// [`ParamSource::Image`](crate::launch::ParamSource::Image), its parameter count is looked up
    /// under its driver name (`cuKernelGetName`) in what the library's image told.
    ///
    /// # Safety
    /// `raw` is a kernel of `library` (from `cuLibraryGetKernel` or
    /// `cuLibraryEnumerateKernels` on `library.as_raw()`).
    unsafe fn from_raw(raw: sys::CUkernel, library: &Library) -> Kernel {
        Kernel {
            raw,
            lib: library.inner.clone(),
            params: ParamCache::unnamed(library.inner.counts.clone()),
        }
    }

    /// The raw `CUkernel`, giving up this handle: it stays valid while its library is loaded
    /// (by another handle, or by the caller).
    fn into_raw(self) -> sys::CUkernel {
        self.raw
    }
}

impl Kernel {
    /// The library the kernel belongs to.
    pub fn library(&self) -> Library {
        Library {
            inner: self.lib.clone(),
        }
    }

    /// The kernel's name: the name it was looked up by, or the driver's (`cuKernelGetName`,
    /// CUDA 12.3), cached.
    #[wraps(cuKernelGetName)]
    pub fn name(&self) -> &str {
        self.kernel_name()
    }

    /// The kernel's parameters (offset and size of each), read from the driver on first use
    /// and cached; `None` when the driver cannot report them (older than CUDA 12.4). As for
    /// [`Function::params`]: the driver is probed once, or, under
    /// [`ParamSource::Image`](crate::launch::ParamSource::Image), asked for the count the library's
    /// image told.
    #[wraps(cuKernelGetParamInfo)]
    #[track_caller]
    pub fn params(&self) -> Result<Option<&[ParamInfo]>> {
        KernelParams::params(self)
    }

    /// The kernel as a [`Function`] of the library's module in `ctx` (loading the library
    /// into `ctx` if needed: code that fails to compile then is [`Error::Jit`] with the log).
    ///
    /// Calls `cuKernelGetFunction` (with `ctx` current).
    #[wraps(cuKernelGetFunction)]
    #[track_caller]
    pub fn function(&self, ctx: &Context) -> Result<Function> {
        let _cur = ctx.enter()?;
        let mut raw = ptr::null_mut();
        // SAFETY: the kernel's library is alive and `ctx` is current; writes one CUfunction.
        let r = unsafe { sys::cuKernelGetFunction(&mut raw, self.raw) };
        // The name only for the (unexpected) NOT_FOUND; no driver call to learn it.
        let name = self.params.known_name().unwrap_or("(an enumerated kernel)");
        check_lookup(r, "cuKernelGetFunction", "kernel", name, || {
            self.lib.error_log()
        })?;
        Ok(Function::new(
            raw,
            FunctionOwner::Kept(self.lib.clone(), ctx.clone()),
            self.params.clone(),
        ))
    }

    /// An attribute of the kernel on `device`.
    #[wraps(cuKernelGetAttribute)]
    #[track_caller]
    pub fn attribute(&self, attr: FunctionAttribute, device: Device) -> Result<i32> {
        let mut v = 0;
        call!(
            // SAFETY: the kernel is alive; writes one int.
            unsafe { sys::cuKernelGetAttribute(&mut v, attr.as_raw(), self.raw, device.as_raw()) },
        )?;
        Ok(v)
    }

    /// Sets an attribute of the kernel on `device` (such as
    /// [`MAX_DYNAMIC_SHARED_SIZE_BYTES`](FunctionAttribute::MAX_DYNAMIC_SHARED_SIZE_BYTES)).
    #[wraps(cuKernelSetAttribute)]
    #[track_caller]
    pub fn set_attribute(&self, attr: FunctionAttribute, value: i32, device: Device) -> Result<()> {
        call!(
            // SAFETY: the kernel is alive; plain values.
            unsafe { sys::cuKernelSetAttribute(attr.as_raw(), value, self.raw, device.as_raw()) },
        )
    }

    /// Sets the preferred L1/shared memory split of the kernel on `device`.
    #[wraps(cuKernelSetCacheConfig)]
    #[track_caller]
    pub fn set_cache_config(&self, config: CacheConfig, device: Device) -> Result<()> {
        call!(
            // SAFETY: the kernel is alive; plain values.
            unsafe { sys::cuKernelSetCacheConfig(self.raw, config.as_raw(), device.as_raw()) },
        )
    }
}

impl KernelParams for Kernel {
    const PARAM_INFO_CALL: &'static str = "cuKernelGetParamInfo";

    #[inline(always)]
    fn param_cache(&self) -> &ParamCache {
        &self.params
    }

    #[track_caller]
    fn param_query_available(&self) -> Result<()> {
        newer::cuKernelGetParamInfo().map(|_| ())
    }

    /// The driver wants a current context even for a context-independent kernel: the
    /// current one, or the primary context of device 0 pushed for the list.
    type QueryScope<'a> = AnyCurrent;

    #[track_caller]
    fn enter_for_queries(&self) -> Result<AnyCurrent> {
        AnyCurrent::enter()
    }

    #[track_caller]
    fn query_param(&self, index: usize) -> Result<(sys::CUresult, usize, usize)> {
        let f = newer::cuKernelGetParamInfo()?;
        let (mut offset, mut size) = (0, 0);
        // SAFETY: the kernel's library is loaded (held by `lib`); writes two size_t.
        let r = unsafe { f(self.raw, index, &mut offset, &mut size) };
        Ok((r, offset, size))
    }

    fn driver_name(&self) -> Option<String> {
        let mut p = ptr::null();
        // SAFETY: the kernel is alive; writes a pointer to a NUL-terminated string the driver
        // owns while the library is loaded.
        call!(unsafe { newer::cuKernelGetName().ok()?(&mut p, self.raw) }).ok()?;
        if p.is_null() {
            return None;
        }
        // SAFETY: on success `p` is a valid NUL-terminated string; copied at once.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    fn raw_handle(&self) -> *mut c_void {
        self.raw.cast()
    }
}

/// A `__managed__` variable of a [`Library`]: `len` elements of `T` at one address that is the
/// same in every context and on every device, and on the host. It keeps the library loaded.
///
/// A `Managed` is the only handle to its variable while it lives: looking the variable up again
/// is [`Error::AlreadyBorrowed`] until it is dropped, so two mutable views of it cannot exist.
///
/// # Host access
/// The device may write the variable at any time from any context that runs a kernel of the
/// library, and this crate cannot know which contexts those are. So:
///
/// * copies through its views ([`view`](Self::view), [`view_mut`](Self::view_mut)) are safe:
///   the driver copies between the variable and host memory this crate owns, and every bit
///   pattern is a valid `T`, so a kernel running meanwhile can make the value stale or torn,
///   never undefined behaviour. Work in other contexts that uses the variable is the
///   caller's to synchronise.
/// * direct host references ([`as_host_slice`](Self::as_host_slice),
///   [`as_host_slice_mut`](Self::as_host_slice_mut)) are `unsafe`: a Rust reference must not
///   change under the host's feet, which only the caller can promise (and on devices without
///   concurrent managed access, touching managed memory while a kernel runs faults).
#[doc(alias = "__managed__")]
pub struct Managed<T: DeviceRepr> {
    ptr: sys::CUdeviceptr,
    len: usize,
    _claim: AddressClaim,
    lib: Arc<LibraryInner>,
    _marker: PhantomData<T>,
}

// SAFETY: managed memory is addressable from every thread and context; T is plain data.
unsafe impl<T: DeviceRepr> Send for Managed<T> {}
// SAFETY: `&self` methods only copy through the driver; host references are unsafe.
unsafe impl<T: DeviceRepr> Sync for Managed<T> {}

impl<T: DeviceRepr> std::fmt::Debug for Managed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Managed")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: DeviceRepr> Managed<T> {
    /// The variable's address, the same in every context and on the host.
    #[inline]
    pub fn as_raw(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Number of `T` elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the variable holds no elements (never, for a variable the driver found).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    #[inline]
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The variable as a shared view in `ctx` (managed memory is reachable from every
    /// context): copy it to the host, or pass it to a kernel. Blocking copies through the
    /// view are ordered like any device memory's (after work on the default stream and on
    /// blocking streams of `ctx`); work in other contexts that writes the variable is the
    /// caller's to synchronise. Every bit pattern is a valid `T`, so a kernel running
    /// meanwhile can make a copy stale or torn, never undefined behaviour.
    #[inline]
    pub fn view<'a>(&'a self, ctx: &'a Context) -> DeviceSlice<'a, T> {
        self.lib.note_used_in(ctx);
        // SAFETY: the view covers memory that `self` owns or borrows (see the SAFETY comment of
        // this impl or function), released as `from_parts` requires, borrowed for the view's life.
        unsafe { DeviceSlice::from_parts(self.ptr, self.len, ctx, ptr::null_mut()) }
    }

    /// The variable as a mutable view in `ctx`; see [`view`](Self::view).
    #[inline]
    pub fn view_mut<'a>(&'a mut self, ctx: &'a Context) -> DeviceSliceMut<'a, T> {
        self.lib.note_used_in(ctx);
        // SAFETY: the view covers memory that `self` owns or borrows (see the SAFETY comment of
        // this impl or function), released as `from_parts` requires, borrowed for the view's life.
        unsafe { DeviceSliceMut::from_parts(self.ptr, self.len, ctx, ptr::null_mut()) }
    }

    /// The variable as a host slice, read in place.
    ///
    /// # Safety
    /// While the slice lives, no kernel and no copy in any context writes the variable (for
    /// example: every context that ran a kernel of the library was synchronised and none is
    /// launched until the slice is dropped), and the device supports host access to managed
    /// memory (`CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY`).
    pub unsafe fn as_host_slice(&self) -> &[T] {
        // SAFETY: managed memory of len elements, host-addressable at `ptr`, aligned for T as
        // the compiler laid out the variable; the caller guarantees nothing writes it.
        unsafe { std::slice::from_raw_parts(self.ptr as usize as *const T, self.len) }
    }

    /// The variable as a mutable host slice, written in place.
    ///
    /// # Safety
    /// As for [`as_host_slice`](Self::as_host_slice), and no kernel or copy reads the variable
    /// either while the slice lives.
    pub unsafe fn as_host_slice_mut(&mut self) -> &mut [T] {
        // SAFETY: as in as_host_slice; `&mut self` makes this the only slice from this handle,
        // and the caller guarantees no device access meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as usize as *mut T, self.len) }
    }
}

impl Kernel {
    /// The raw library this kernel belongs to; CUDA 12.5.
    #[cuda_driver_macros::wraps(cuKernelGetLibrary)]
    #[track_caller]
    pub fn library_raw(&self) -> Result<sys::CUlibrary> {
        let mut l = ptr::null_mut();
        // SAFETY: the kernel is alive while `self` is; writes one CUlibrary.
        call!(unsafe { crate::entry_point::newer::cuKernelGetLibrary()?(&mut l, self.raw) })?;
        Ok(l)
    }
}

impl Library {
    /// The address of the unified (host and device callable) function `name`, for
    /// libraries built with unified functions; [`Error::NotFound`] otherwise.
    #[cuda_driver_macros::wraps(cuLibraryGetUnifiedFunction)]
    #[track_caller]
    pub fn unified_function(&self, name: &str) -> Result<*mut std::ffi::c_void> {
        let mut p = ptr::null_mut();
        let r = crate::cstr::with_c_str("function name", name, |c| {
            // SAFETY: the library is alive; `c` is NUL-terminated; writes one pointer.
            call!(unsafe { sys::cuLibraryGetUnifiedFunction(&mut p, self.inner.raw, c) })
        })?;
        if r.as_ref()
            .is_err_and(|e| e.code() == Some(crate::types::ErrorCode::NOT_FOUND))
        {
            return Err(Error::NotFound {
                kind: "unified function",
                name: name.to_owned(),
                code: crate::types::ErrorCode::NOT_FOUND,
            });
        }
        r?;
        Ok(p)
    }
}
