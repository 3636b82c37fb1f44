//! Finding and opening NVRTC ([`Nvrtc`]) and nvJitLink ([`NvJitLink`]) at run time.
//!
//! Nothing is linked at build time: a program that never compiles at run time never needs the
//! libraries, and one that does finds them where they are installed. Each library is searched
//! for, in this order, the first that opens winning:
//!
//! 1. the path in `CUDA_DRIVER_RTC_NVRTC` / `CUDA_DRIVER_RTC_NVJITLINK` (the library file, or
//!    the directory holding it); when set, nothing else is tried;
//! 2. a CUDA toolkit: `$CUDA_PATH/lib64`, `$CUDA_PATH/lib`, then the same under `$CUDA_HOME`
//!    (`bin` on Windows);
//! 3. the pip wheels (`nvidia-cuda-nvrtc`, `nvidia-nvjitlink`), in the `site-packages` of the
//!    virtual environment in `$VIRTUAL_ENV`, of a `.venv` directory in the current directory
//!    or one of its parents, then of `python3` (asked for `site.getsitepackages()` and the
//!    user's site directory): `nvidia/cu13/lib` (the CUDA 13 wheels' layout), then
//!    `nvidia/cuda_nvrtc/lib` and `nvidia/nvjitlink/lib`;
//! 4. the system's loader, by file name (`libnvrtc.so.13`: `LD_LIBRARY_PATH`, the `ldconfig`
//!    cache, the default directories).
//!
//! Where none opens, [`Error::LibraryNotFound`] lists every
//! place tried and why it did not work there. The search runs once per process
//! ([`Nvrtc::load`]); [`Nvrtc::open`] opens a given file instead.
//!
//! The file names carry the major version the bindings are written for: `libnvrtc.so.13` and
//! `libnvJitLink.so.13` (`nvrtc64_130_0.dll`, `nvJitLink_130_0.dll` on Windows). NVRTC loads
//! its builtins library (`libnvrtc-builtins.so.13.0`) by file name when it compiles, which
//! the system's loader finds only in its own directories; so when NVRTC is opened from a
//! directory, the builtins of its version in the same directory are opened first.
//!
//! An opened library stays loaded until the process ends: programs and linkers hold
//! `&'static` references to it.
//!
//! Opening a library runs its code: the search trusts the places it looks in, the `.venv`
//! directories above the current directory among them. Where that is not wanted, set
//! `CUDA_DRIVER_RTC_NVRTC` / `CUDA_DRIVER_RTC_NVJITLINK` (nothing else is searched then), or
//! open a file with [`Nvrtc::open`] / [`NvJitLink::open`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use crate::error::{check_nvjitlink, check_nvrtc, Error, LoadError, Result};
use crate::sys::{nvjitlink, nvrtc};
use crate::version::Version;

/// One of the two libraries: its file name, where to look for it, what to say when it is
/// missing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    /// The file name (`libnvrtc.so.13`).
    pub(crate) file: &'static str,
    /// The variable naming the file or its directory.
    pub(crate) env: &'static str,
    /// The directories of a toolkit root that hold it.
    pub(crate) toolkit_dirs: &'static [&'static str],
    /// The directories of a `site-packages` that hold it (pip wheels).
    pub(crate) wheel_dirs: &'static [&'static str],
    /// What to do when it is missing.
    pub(crate) hint: &'static str,
}

#[cfg(not(windows))]
const TOOLKIT_DIRS: &[&str] = &["lib64", "lib"];
#[cfg(windows)]
const TOOLKIT_DIRS: &[&str] = &["bin", "bin/x64"];

/// NVRTC.
pub(crate) const NVRTC: Spec = Spec {
    #[cfg(not(windows))]
    file: "libnvrtc.so.13",
    #[cfg(windows)]
    file: "nvrtc64_130_0.dll",
    env: "CUDA_DRIVER_RTC_NVRTC",
    toolkit_dirs: TOOLKIT_DIRS,
    #[cfg(not(windows))]
    wheel_dirs: &["nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"],
    #[cfg(windows)]
    wheel_dirs: &[
        "nvidia/cu13/bin/x86_64",
        "nvidia/cu13/bin",
        "nvidia/cuda_nvrtc/bin",
    ],
    hint: "Install the wheel (pip install nvidia-cuda-nvrtc==13.0.*) or a CUDA 13 toolkit, or \
           set CUDA_DRIVER_RTC_NVRTC to the library's path.",
};

/// nvJitLink.
pub(crate) const NVJITLINK: Spec = Spec {
    #[cfg(not(windows))]
    file: "libnvJitLink.so.13",
    #[cfg(windows)]
    file: "nvJitLink_130_0.dll",
    env: "CUDA_DRIVER_RTC_NVJITLINK",
    toolkit_dirs: TOOLKIT_DIRS,
    #[cfg(not(windows))]
    wheel_dirs: &["nvidia/cu13/lib", "nvidia/nvjitlink/lib"],
    #[cfg(windows)]
    wheel_dirs: &[
        "nvidia/cu13/bin/x86_64",
        "nvidia/cu13/bin",
        "nvidia/nvjitlink/bin",
    ],
    hint: "Install the wheel (pip install nvidia-nvjitlink==13.0.*) or a CUDA 13 toolkit, or \
           set CUDA_DRIVER_RTC_NVJITLINK to the library's path.",
};

/// What the search reads from the process's surroundings (the real ones, or a test's).
pub(crate) struct Env<'a> {
    /// An environment variable.
    pub(crate) var: &'a dyn Fn(&str) -> Option<OsString>,
    /// The current directory.
    pub(crate) cwd: Option<PathBuf>,
    /// `python3`'s site-packages directories, or why there are none; asked only when the
    /// search gets that far.
    pub(crate) python_sites: &'a dyn Fn() -> std::result::Result<Vec<PathBuf>, String>,
}

impl Env<'static> {
    /// The process's environment, current directory and `python3`.
    pub(crate) fn process() -> Env<'static> {
        Env {
            var: &|name| std::env::var_os(name),
            cwd: std::env::current_dir().ok(),
            python_sites: &python_site_packages,
        }
    }
}

/// Where a library may be opened from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// A file.
    File(PathBuf),
    /// A name for the system's loader.
    System(&'static str),
}

/// Walks the search order of the [module docs](self), calling `open` on every place that may
/// hold the library (a file that exists, or the system's loader), and returns the first
/// success, or every place tried with why it failed.
pub(crate) fn search<T>(
    spec: &Spec,
    env: &Env<'_>,
    mut open: impl FnMut(&Place) -> std::result::Result<T, String>,
) -> std::result::Result<T, LoadError> {
    let mut tried: Vec<(String, String)> = Vec::new();
    let fail = |tried| LoadError {
        library: spec.file,
        tried,
        hint: spec.hint,
    };
    // Tries `file` if it exists.
    let mut try_file = |file: PathBuf, label: &str, tried: &mut Vec<(String, String)>| {
        if !file.is_file() {
            return None;
        }
        match open(&Place::File(file.clone())) {
            Ok(t) => Some(Ok(t)),
            Err(why) => {
                tried.push((format!("{} ({label})", file.display()), why));
                None
            }
        }
    };

    // 1. The explicit path: nothing else when it is set.
    if let Some(v) = (spec.env_var(env)).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(v);
        let file = if p.is_dir() { p.join(spec.file) } else { p };
        if let Some(t) = try_file(file.clone(), spec.env, &mut tried) {
            return t;
        }
        if tried.is_empty() {
            tried.push((
                format!("{} ({})", file.display(), spec.env),
                "no such file".into(),
            ));
        }
        return Err(fail(tried));
    }
    tried.push((spec.env.into(), "not set".into()));

    // 2. A toolkit.
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        let Some(root) = (env.var)(var).filter(|v| !v.is_empty()) else {
            tried.push((var.into(), "not set".into()));
            continue;
        };
        let root = PathBuf::from(root);
        let before = tried.len();
        for dir in spec.toolkit_dirs {
            if let Some(t) = try_file(root.join(dir).join(spec.file), var, &mut tried) {
                return t;
            }
        }
        if tried.len() == before {
            tried.push((
                format!("{} ({var})", root.display()),
                format!("no {}", spec.in_dirs(spec.toolkit_dirs)),
            ));
        }
    }

    // 3. The pip wheels: $VIRTUAL_ENV, .venv here or above, python3.
    let mut wheels = |site: &Path, label: &str, tried: &mut Vec<(String, String)>| {
        let before = tried.len();
        for dir in spec.wheel_dirs {
            if let Some(t) = try_file(site.join(dir).join(spec.file), label, tried) {
                return Some(t);
            }
        }
        if tried.len() == before {
            tried.push((
                format!("{} ({label})", site.display()),
                format!("no {}", spec.in_dirs(spec.wheel_dirs)),
            ));
        }
        None
    };
    match (env.var)("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
        Some(venv) => {
            for site in venv_site_packages(Path::new(&venv)) {
                if let Some(t) = wheels(&site, "VIRTUAL_ENV", &mut tried) {
                    return t;
                }
            }
        }
        None => tried.push(("VIRTUAL_ENV".into(), "not set".into())),
    }
    match &env.cwd {
        Some(cwd) => {
            let venvs: Vec<PathBuf> = cwd
                .ancestors()
                .map(|d| d.join(".venv"))
                .filter(|v| v.is_dir())
                .collect();
            if venvs.is_empty() {
                tried.push((
                    format!(".venv in {} and its parents", cwd.display()),
                    "none there".into(),
                ));
            }
            for venv in venvs {
                let sites = venv_site_packages(&venv);
                if sites.is_empty() {
                    tried.push((
                        format!("{} (.venv)", venv.display()),
                        "no site-packages".into(),
                    ));
                }
                for site in sites {
                    if let Some(t) = wheels(&site, ".venv", &mut tried) {
                        return t;
                    }
                }
            }
        }
        None => tried.push((".venv".into(), "no current directory".into())),
    }
    match (env.python_sites)() {
        Ok(sites) => {
            let sites: Vec<PathBuf> = sites.into_iter().filter(|s| s.is_dir()).collect();
            if sites.is_empty() {
                tried.push(("python3's site-packages".into(), "none exist".into()));
            }
            for site in sites {
                if let Some(t) = wheels(&site, "python3", &mut tried) {
                    return t;
                }
            }
        }
        Err(why) => tried.push(("python3's site-packages".into(), why)),
    }

    // 4. The system's loader.
    match open(&Place::System(spec.file)) {
        Ok(t) => Ok(t),
        Err(why) => {
            tried.push((format!("{} (the system's loader)", spec.file), why));
            Err(fail(tried))
        }
    }
}

impl Spec {
    fn env_var(&self, env: &Env<'_>) -> Option<OsString> {
        (env.var)(self.env)
    }

    /// `nvidia/cu13/lib/libnvrtc.so.13 or nvidia/cuda_nvrtc/lib/libnvrtc.so.13`.
    fn in_dirs(&self, dirs: &[&str]) -> String {
        dirs.iter()
            .map(|d| format!("{d}/{}", self.file))
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

/// The `site-packages` directories of a virtual environment: `lib/python3.*/site-packages`
/// (`Lib/site-packages` on Windows).
fn venv_site_packages(venv: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(venv.join("lib")) {
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("python"))
            })
            .map(|p| p.join("site-packages"))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        out.extend(dirs);
    }
    let windows = venv.join("Lib").join("site-packages");
    if windows.is_dir() && !out.contains(&windows) {
        out.push(windows);
    }
    out
}

/// `python3`'s site-packages directories (`site.getsitepackages()` and the user's).
fn python_site_packages() -> std::result::Result<Vec<PathBuf>, String> {
    let python = if cfg!(windows) { "python" } else { "python3" };
    let out = Command::new(python)
        .args([
            "-c",
            "import site\nfor p in site.getsitepackages() + [site.getusersitepackages()]: print(p)",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{python} failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect())
}

/// Opens a library file, or a name through the system's loader.
fn open_library(place: &Place) -> std::result::Result<libloading::Library, String> {
    let name: &std::ffi::OsStr = match place {
        Place::File(p) => p.as_os_str(),
        Place::System(n) => n.as_ref(),
    };
    // SAFETY: opening NVRTC, its builtins or nvJitLink runs their initialisers, which have no
    // preconditions; the returned library is kept until the process ends (see `leak`), so no
    // symbol taken from it outlives it.
    unsafe { libloading::Library::new(name) }.map_err(|e| e.to_string())
}

/// Where a library was opened from, for messages.
fn describe(place: &Place) -> String {
    match place {
        Place::File(p) => p.display().to_string(),
        Place::System(n) => format!("{n} (the system's loader)"),
    }
}

/// NVRTC, opened: its functions, version and architectures.
///
/// ```no_run
/// let nvrtc = cuda_driver_rtc::Nvrtc::load()?;
/// println!("NVRTC {} from {}, sm_{:?}", nvrtc.version(), nvrtc.location(), nvrtc.supported_archs());
/// # Ok::<(), cuda_driver_rtc::Error>(())
/// ```
pub struct Nvrtc {
    raw: nvrtc::Nvrtc,
    location: String,
    version: Version,
    supported: Vec<u32>,
    /// The builtins library of the same directory, kept open for NVRTC to find by name.
    _builtins: Option<libloading::Library>,
}

impl std::fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvrtc")
            .field("location", &self.location)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// Libraries opened by path, once each.
static OPENED_NVRTC: Mutex<Vec<(PathBuf, &'static Nvrtc)>> = Mutex::new(Vec::new());
static OPENED_NVJITLINK: Mutex<Vec<(PathBuf, &'static NvJitLink)>> = Mutex::new(Vec::new());

impl Nvrtc {
    /// NVRTC, searched for in the order of the [module docs](self) the first time, and the
    /// same library (or the same error) after that.
    pub fn load() -> Result<&'static Nvrtc> {
        static DEFAULT: OnceLock<std::result::Result<&'static Nvrtc, LoadError>> = OnceLock::new();
        DEFAULT
            .get_or_init(|| search(&NVRTC, &Env::process(), Nvrtc::open_place))
            .clone()
            .map_err(Error::from)
    }

    /// NVRTC from the file `path` (opened once per path; the builtins library of its version
    /// in the same directory is opened first).
    pub fn open(path: impl AsRef<Path>) -> Result<&'static Nvrtc> {
        let path = path.as_ref().to_path_buf();
        let mut opened = OPENED_NVRTC.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, n)) = opened.iter().find(|(p, _)| *p == path) {
            return Ok(n);
        }
        let n = Nvrtc::open_place(&Place::File(path.clone())).map_err(|why| LoadError {
            library: NVRTC.file,
            tried: vec![(path.display().to_string(), why)],
            hint: NVRTC.hint,
        })?;
        opened.push((path, n));
        Ok(n)
    }

    fn open_place(place: &Place) -> std::result::Result<&'static Nvrtc, String> {
        let lib = open_library(place)?;
        // SAFETY: the library is NVRTC (its file name says so); every symbol of nvrtc.h is
        // looked up with the type the header declares.
        let raw = unsafe { nvrtc::Nvrtc::from_library(lib) }
            .map_err(|e| format!("not an NVRTC 13 library: {e}"))?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: writes two ints.
        let code = unsafe { raw.nvrtcVersion(&mut major, &mut minor) };
        check_nvrtc(code, "nvrtcVersion").map_err(|e| e.to_string())?;
        let version = Version::new(major as u32, minor as u32);
        let builtins = match place {
            Place::File(p) => p
                .parent()
                .map(|dir| dir.join(builtins_file(version)))
                .filter(|b| b.is_file())
                .map(|b| open_library(&Place::File(b)))
                .transpose()?,
            Place::System(_) => None,
        };
        let mut n = 0;
        // SAFETY: writes one int.
        let code = unsafe { raw.nvrtcGetNumSupportedArchs(&mut n) };
        check_nvrtc(code, "nvrtcGetNumSupportedArchs").map_err(|e| e.to_string())?;
        let mut archs = vec![0; usize::try_from(n).unwrap_or(0)];
        if !archs.is_empty() {
            // SAFETY: writes `n` ints, the length of `archs`.
            let code = unsafe { raw.nvrtcGetSupportedArchs(archs.as_mut_ptr()) };
            check_nvrtc(code, "nvrtcGetSupportedArchs").map_err(|e| e.to_string())?;
        }
        let supported = archs
            .into_iter()
            .filter_map(|a| u32::try_from(a).ok())
            .collect();
        Ok(leak(Nvrtc {
            raw,
            location: describe(place),
            version,
            supported,
            _builtins: builtins,
        }))
    }

    /// NVRTC's version (`nvrtcVersion`): `13.0`.
    #[doc(alias = "nvrtcVersion")]
    pub fn version(&self) -> Version {
        self.version
    }

    /// The architectures NVRTC compiles for (`nvrtcGetSupportedArchs`): `[75, 80, 86, ..]`.
    #[doc(alias = "nvrtcGetSupportedArchs")]
    pub fn supported_archs(&self) -> &[u32] {
        &self.supported
    }

    /// Where the library was opened from: its path, or its file name and "the system's
    /// loader".
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The raw functions (see [`sys`](crate::sys)).
    pub fn as_raw(&self) -> &nvrtc::Nvrtc {
        &self.raw
    }
}

/// The builtins library NVRTC `version` opens by name.
fn builtins_file(version: Version) -> String {
    if cfg!(windows) {
        format!("nvrtc-builtins64_{}{}.dll", version.major, version.minor)
    } else {
        format!("libnvrtc-builtins.so.{}.{}", version.major, version.minor)
    }
}

/// nvJitLink, opened: its functions and version.
pub struct NvJitLink {
    raw: nvjitlink::NvJitLink,
    location: String,
    version: Version,
}

impl std::fmt::Debug for NvJitLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvJitLink")
            .field("location", &self.location)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl NvJitLink {
    /// nvJitLink, searched for in the order of the [module docs](self) the first time, and
    /// the same library (or the same error) after that.
    pub fn load() -> Result<&'static NvJitLink> {
        static DEFAULT: OnceLock<std::result::Result<&'static NvJitLink, LoadError>> =
            OnceLock::new();
        DEFAULT
            .get_or_init(|| search(&NVJITLINK, &Env::process(), NvJitLink::open_place))
            .clone()
            .map_err(Error::from)
    }

    /// nvJitLink from the file `path` (opened once per path).
    pub fn open(path: impl AsRef<Path>) -> Result<&'static NvJitLink> {
        let path = path.as_ref().to_path_buf();
        let mut opened = OPENED_NVJITLINK.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, n)) = opened.iter().find(|(p, _)| *p == path) {
            return Ok(n);
        }
        let n = NvJitLink::open_place(&Place::File(path.clone())).map_err(|why| LoadError {
            library: NVJITLINK.file,
            tried: vec![(path.display().to_string(), why)],
            hint: NVJITLINK.hint,
        })?;
        opened.push((path, n));
        Ok(n)
    }

    fn open_place(place: &Place) -> std::result::Result<&'static NvJitLink, String> {
        let lib = open_library(place)?;
        // SAFETY: the library is nvJitLink (its file name says so); every symbol of
        // nvJitLink.h is looked up with the type the header declares.
        let raw = unsafe { nvjitlink::NvJitLink::from_library(lib) }
            .map_err(|e| format!("not an nvJitLink 13 library: {e}"))?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: writes two unsigned ints.
        let code = unsafe { raw.nvJitLinkVersion(&mut major, &mut minor) };
        check_nvjitlink(code, "nvJitLinkVersion").map_err(|e| e.to_string())?;
        Ok(leak(NvJitLink {
            raw,
            location: describe(place),
            version: Version::new(major, minor),
        }))
    }

    /// nvJitLink's version (`nvJitLinkVersion`): `13.0`.
    #[doc(alias = "nvJitLinkVersion")]
    pub fn version(&self) -> Version {
        self.version
    }

    /// Where the library was opened from.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The raw functions (see [`sys`](crate::sys)).
    pub fn as_raw(&self) -> &nvjitlink::NvJitLink {
        &self.raw
    }
}

/// Keeps a library for the rest of the process: its functions may be called from any thread
/// at any time, so it is never closed.
fn leak<T>(t: T) -> &'static T {
    Box::leak(Box::new(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "cuda-driver-rtc-search-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"not a library").unwrap();
    }

    /// Runs the search with these variables, current directory and python3 answer, opening
    /// only `good` (every other file "fails to open"; the system's loader has nothing).
    fn run(
        vars: &[(&str, &Path)],
        cwd: Option<&Path>,
        python: std::result::Result<Vec<PathBuf>, String>,
        good: Option<&Path>,
    ) -> (std::result::Result<PathBuf, LoadError>, usize) {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        let var = move |k: &str| vars.get(k).cloned();
        let python_calls = std::cell::Cell::new(0);
        let python = || {
            python_calls.set(python_calls.get() + 1);
            python.clone()
        };
        let env = Env {
            var: &var,
            cwd: cwd.map(Path::to_path_buf),
            python_sites: &python,
        };
        let r = search(&NVRTC, &env, |place| match place {
            Place::File(p) if Some(p.as_path()) == good => Ok(p.clone()),
            Place::File(_) => Err("invalid ELF header".into()),
            Place::System(n) => Err(format!("{n}: cannot open shared object file")),
        });
        (r, python_calls.get())
    }

    #[test]
    fn an_explicit_path_is_the_only_place_tried() {
        let d = temp_dir("explicit");
        let lib = d.join(NVRTC.file);
        touch(&lib);
        let (r, python) = run(
            &[("CUDA_DRIVER_RTC_NVRTC", &d)],
            None,
            Ok(vec![]),
            Some(&lib),
        );
        assert_eq!(r.unwrap(), lib);
        assert_eq!(python, 0);
        let (r, _) = run(
            &[("CUDA_DRIVER_RTC_NVRTC", &lib)],
            None,
            Ok(vec![]),
            Some(&lib),
        );
        assert_eq!(r.unwrap(), lib);
        // Set but wrong: an error naming it, and no further search.
        let (r, python) = run(
            &[("CUDA_DRIVER_RTC_NVRTC", &d.join("nope.so"))],
            None,
            Ok(vec![]),
            Some(&lib),
        );
        let e = r.unwrap_err();
        assert_eq!(e.tried.len(), 1, "{e}");
        assert!(e.tried[0].0.contains("nope.so") && e.tried[0].1 == "no such file");
        assert_eq!(python, 0);
    }

    #[test]
    fn the_toolkit_comes_before_the_wheels_and_python() {
        let d = temp_dir("toolkit");
        let lib = d.join("cuda/lib64").join(NVRTC.file);
        touch(&lib);
        let venv_lib = d.join("proj/.venv/lib/python3.11/site-packages/nvidia/cu13/lib");
        touch(&venv_lib.join(NVRTC.file));
        let (r, python) = run(
            &[("CUDA_PATH", &d.join("cuda"))],
            Some(&d.join("proj/sub")),
            Ok(vec![]),
            Some(&lib),
        );
        assert_eq!(r.unwrap(), lib);
        assert_eq!(python, 0);
    }

    #[test]
    fn a_venv_in_a_parent_directory_is_found_before_python3_is_asked() {
        let d = temp_dir("venv");
        std::fs::create_dir_all(d.join("proj/sub/deeper")).unwrap();
        let lib = d
            .join("proj/.venv/lib/python3.11/site-packages/nvidia/cu13/lib")
            .join(NVRTC.file);
        touch(&lib);
        let (r, python) = run(
            &[],
            Some(&d.join("proj/sub/deeper")),
            Ok(vec![]),
            Some(&lib),
        );
        assert_eq!(r.unwrap(), lib);
        assert_eq!(python, 0);
    }

    #[test]
    fn python3s_site_packages_are_searched_in_both_layouts() {
        let d = temp_dir("python");
        let site = d.join("site-packages");
        let lib = site.join("nvidia/cuda_nvrtc/lib").join(NVRTC.file);
        touch(&lib);
        let (r, python) = run(&[], Some(&d), Ok(vec![d.join("missing"), site]), Some(&lib));
        assert_eq!(r.unwrap(), lib);
        assert_eq!(python, 1);
    }

    #[test]
    fn nothing_found_lists_every_place_and_why() {
        let d = temp_dir("nothing");
        let broken = d.join("cuda/lib64").join(NVRTC.file);
        touch(&broken);
        let (r, _) = run(
            &[("CUDA_PATH", &d.join("cuda"))],
            Some(&d),
            Err("cannot run python3: No such file or directory".into()),
            None,
        );
        let e = r.unwrap_err();
        let text = e.to_string();
        // The walk up from the temporary folder reaches folders this test does not own (`/tmp`,
        // `/`): a `.venv` the machine has there (CI's checkout may sit at `/`) is listed by its
        // path instead of "none there".
        let machine_venvs: Vec<String> = d
            .ancestors()
            .map(|a| a.join(".venv"))
            .filter(|v| v.is_dir())
            .map(|v| v.display().to_string())
            .collect();
        let venv_line = match machine_venvs.first() {
            None => "and its parents: none there".to_string(),
            Some(v) => v.clone(),
        };
        for want in [
            "libnvrtc.so.13 not found; searched:",
            "CUDA_DRIVER_RTC_NVRTC: not set",
            &format!("{} (CUDA_PATH): invalid ELF header", broken.display()),
            "CUDA_HOME: not set",
            "VIRTUAL_ENV: not set",
            &venv_line,
            "python3's site-packages: cannot run python3",
            "libnvrtc.so.13 (the system's loader): libnvrtc.so.13: cannot open shared object file",
            "pip install nvidia-cuda-nvrtc==13.0.*",
        ] {
            if cfg!(windows) {
                continue;
            }
            assert!(text.contains(want), "missing `{want}` in:\n{text}");
        }
        // Places are listed in the order they were tried.
        let places: Vec<&str> = e.tried.iter().map(|(p, _)| p.as_str()).collect();
        let pos = |s: &str| places.iter().position(|p| p.contains(s)).unwrap();
        assert!(pos("CUDA_DRIVER_RTC_NVRTC") < pos("CUDA_PATH"));
        assert!(pos("CUDA_PATH") < pos("VIRTUAL_ENV"));
        assert!(pos("VIRTUAL_ENV") < pos("python3"));
        assert!(pos("python3") < pos("system"));
    }

    #[test]
    fn builtins_carry_the_version() {
        if !cfg!(windows) {
            assert_eq!(
                builtins_file(Version::new(13, 0)),
                "libnvrtc-builtins.so.13.0"
            );
        }
    }
}
