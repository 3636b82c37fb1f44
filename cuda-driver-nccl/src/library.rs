//! Loading NCCL at run time: one library per process, found in the places a user would put
//! it, never unloaded; see [`Nccl::get`].

use std::ffi::{c_char, c_int, CStr, OsString};
use std::fmt;
use std::panic::Location;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{Error, NcclResult, Progress, Result};
use crate::load::{Attempt, LoadError, LIBRARY_VAR};
use crate::sys;
use crate::version::Version;

/// The environment variable that turns NVLink multicast (NVLS) on or off in NCCL; the crate
/// sets it to `0` before NCCL is loaded (see the crate docs).
pub const NVLS_VAR: &str = "NCCL_NVLS_ENABLE";

/// The NCCL library of this process: opened once, never closed (NCCL runs threads of its
/// own), with its functions looked up once.
pub struct Nccl {
    _lib: libloading::Library,
    path: String,
    version: Version,
    fns: sys::Functions,
}

impl fmt::Debug for Nccl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nccl")
            .field("path", &self.path)
            .field("version", &self.version)
            .finish()
    }
}

static LOADED: OnceLock<&'static Nccl> = OnceLock::new();
static LOADING: Mutex<()> = Mutex::new(());

impl Nccl {
    /// The process's NCCL library, loaded on the first call from the first place that has an
    /// NCCL 2.x, in this order:
    ///
    /// 1. the file named by [`LIBRARY_VAR`] (`CUDA_DRIVER_NCCL_LIBRARY`), when set;
    /// 2. the `nvidia-nccl-cu13` (or `-cu12`) wheel, `nvidia/nccl/lib/libnccl.so.2` in the
    ///    site-packages of `$VIRTUAL_ENV`, of a `.venv` in the current directory or one above
    ///    it, and of `python3` (its `site.getsitepackages()` and user site);
    /// 3. the system's loader: `libnccl.so.2` (`LD_LIBRARY_PATH`, the `ldconfig` cache).
    ///
    /// When none loads, the [`LoadError`] lists every place tried and why it failed. Before
    /// the first library is opened, `NCCL_NVLS_ENABLE` is set to `0` (see the crate docs:
    /// NVLink multicast stays off). Later calls return the same library; a failed search is
    /// tried again by the next call. [`Nccl::load`] loads a file the program names instead.
    pub fn get() -> Result<&'static Nccl> {
        if let Some(nccl) = LOADED.get() {
            return Ok(nccl);
        }
        let _lock = LOADING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(nccl) = LOADED.get() {
            return Ok(nccl);
        }
        disable_nvls();
        let nccl = open_first(&default_candidates())?;
        Ok(LOADED.get_or_init(|| Box::leak(Box::new(nccl))))
    }

    /// Loads the NCCL library at `path` as the process's library (and nothing else: no
    /// other place is tried). When a library is loaded already, returns it if it is the same
    /// file, and an error otherwise: a process uses one NCCL.
    pub fn load(path: impl AsRef<Path>) -> Result<&'static Nccl> {
        let path = path.as_ref();
        let _lock = LOADING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(nccl) = LOADED.get() {
            if same_file(Path::new(&nccl.path), path) {
                return Ok(nccl);
            }
            return Err(LoadError {
                attempts: vec![Attempt {
                    library: path.display().to_string(),
                    found_through: "the path given to Nccl::load".into(),
                    reason: format!(
                        "NCCL {} is loaded already from {}; a process uses one NCCL library",
                        nccl.version, nccl.path
                    ),
                }],
            }
            .into());
        }
        disable_nvls();
        let nccl = open_first(&[Candidate {
            library: path.as_os_str().to_owned(),
            found_through: "the path given to Nccl::load".into(),
        }])?;
        Ok(LOADED.get_or_init(|| Box::leak(Box::new(nccl))))
    }

    /// The library loaded so far, if any (no search).
    pub fn loaded() -> Option<&'static Nccl> {
        LOADED.get().copied()
    }

    /// The library's version (`ncclGetVersion`).
    #[doc(alias = "ncclGetVersion")]
    pub fn version(&self) -> Version {
        self.version
    }

    /// The file the library was loaded from (or the name the system's loader resolved).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The raw functions of the library, for calls this crate does not wrap.
    pub fn functions(&self) -> &sys::Functions {
        &self.fns
    }

    /// `f`, or [`Error::MissingFunction`] when the library does not export it.
    #[inline]
    pub(crate) fn function<F>(&self, f: Option<F>, name: &'static str) -> Result<F> {
        match f {
            Some(f) => Ok(f),
            None => Err(self.missing(name)),
        }
    }

    #[cold]
    #[inline(never)]
    fn missing(&self, name: &'static str) -> Error {
        Error::MissingFunction {
            name,
            version: self.version,
        }
    }

    /// NCCL's description of `code` (`ncclGetErrorString`).
    pub(crate) fn error_string(&self, code: NcclResult) -> Option<&'static str> {
        let f = self.fns.ncclGetErrorString?;
        // SAFETY: ncclGetErrorString takes any code and returns a static string or null.
        let p = unsafe { f(code.as_raw()) };
        static_str(p)
    }

    /// NCCL's last error message (`ncclGetLastError`), if it has one.
    #[doc(alias = "ncclGetLastError")]
    pub fn last_error(&self) -> Option<String> {
        let f = self.fns.ncclGetLastError?;
        // SAFETY: the argument is unused by every NCCL 2.x (documented: "can be NULL"); the
        // result is a string NCCL keeps, copied out at once.
        let p = unsafe { f(std::ptr::null_mut()) };
        static_str(p).map(str::to_string).filter(|s| !s.is_empty())
    }

    /// A new unique id (`ncclGetUniqueId`), to distribute to every rank of a new
    /// communicator; see [`UniqueId`](crate::UniqueId).
    #[doc(alias = "ncclGetUniqueId")]
    #[track_caller]
    pub fn unique_id(&'static self) -> Result<crate::UniqueId> {
        let f = self.function(self.fns.ncclGetUniqueId, "ncclGetUniqueId")?;
        let mut id = sys::ncclUniqueId::default();
        // SAFETY: writes one ncclUniqueId.
        check(self, unsafe { f(&mut id) }, "ncclGetUniqueId")?;
        Ok(crate::UniqueId::from_raw(id))
    }
}

/// A string NCCL returned, as a `&'static str` (NCCL's strings are static or live as long as
/// the library, which is never unloaded).
fn static_str(p: *const c_char) -> Option<&'static str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string NCCL keeps for the life of the library, which is never
    // unloaded.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// Sets `NCCL_NVLS_ENABLE=0` unless it is `0` already (see the crate docs).
fn disable_nvls() {
    match std::env::var_os(NVLS_VAR) {
        Some(v) if v == "0" => {}
        other => {
            if let Some(v) = other {
                log::warn!(
                    "cuda-driver-nccl: {NVLS_VAR}={} overridden with 0: NVLink multicast stays off",
                    v.to_string_lossy()
                );
            }
            std::env::set_var(NVLS_VAR, "0");
        }
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A place to load NCCL from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Candidate {
    /// A path, or a bare file name for the system's loader.
    library: OsString,
    found_through: String,
}

/// The file name of NCCL for the system's loader.
#[cfg(not(windows))]
const SYSTEM_NAMES: &[&str] = &["libnccl.so.2", "libnccl.so"];
#[cfg(windows)]
const SYSTEM_NAMES: &[&str] = &["nccl.dll"];

/// The places [`Nccl::get`] tries, in order (see the module docs).
fn default_candidates() -> Vec<Candidate> {
    let mut out = Vec::new();
    if let Some(path) = std::env::var_os(LIBRARY_VAR).filter(|p| !p.is_empty()) {
        out.push(Candidate {
            library: path,
            found_through: LIBRARY_VAR.into(),
        });
    }
    let mut venvs: Vec<(PathBuf, String)> = Vec::new();
    if let Some(v) = std::env::var_os("VIRTUAL_ENV").filter(|p| !p.is_empty()) {
        venvs.push((PathBuf::from(v), "$VIRTUAL_ENV".into()));
    }
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            let venv = dir.join(".venv");
            if venv.is_dir() {
                venvs.push((venv, format!("the .venv in {}", dir.display())));
            }
        }
    }
    for (venv, how) in venvs {
        for site in venv_site_packages(&venv) {
            out.push(wheel_candidate(
                &site,
                &format!("the nvidia-nccl wheel in {how}"),
            ));
        }
    }
    for site in python_site_packages() {
        out.push(wheel_candidate(&site, "the nvidia-nccl wheel of python3"));
    }
    for name in SYSTEM_NAMES {
        out.push(Candidate {
            library: (*name).into(),
            found_through: "the system's library search path".into(),
        });
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|c| seen.insert(c.library.clone()));
    out
}

fn wheel_candidate(site_packages: &Path, how: &str) -> Candidate {
    Candidate {
        library: site_packages
            .join("nvidia/nccl/lib/libnccl.so.2")
            .into_os_string(),
        found_through: how.into(),
    }
}

/// `lib/python3.*/site-packages` of a virtual environment.
fn venv_site_packages(venv: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(venv.join("lib")) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("python") {
                out.push(e.path().join("site-packages"));
            }
        }
    }
    out.sort();
    out
}

/// How long the `python3` asked for its site-packages may take.
const PYTHON_TIMEOUT: Duration = Duration::from_secs(10);

/// The site-packages directories of `python3` (none when there is no python3, or it fails
/// or takes longer than [`PYTHON_TIMEOUT`]).
fn python_site_packages() -> Vec<PathBuf> {
    let script = "import site\n\
                  for p in site.getsitepackages() + [site.getusersitepackages()]: print(p)";
    let Ok(mut child) = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return Vec::new();
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < PYTHON_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Vec::new();
            }
        }
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        use std::io::Read;
        let _ = stdout.read_to_string(&mut out);
    }
    out.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Opens the first candidate that is an NCCL 2.x library.
fn open_first(candidates: &[Candidate]) -> std::result::Result<Nccl, LoadError> {
    let mut attempts = Vec::new();
    for c in candidates {
        match open(&c.library) {
            Ok(nccl) => return Ok(nccl),
            Err(reason) => attempts.push(Attempt {
                library: Path::new(&c.library).display().to_string(),
                found_through: c.found_through.clone(),
                reason,
            }),
        }
    }
    Err(LoadError { attempts })
}

/// Opens `library` and checks that it is NCCL 2.x; the reason otherwise.
fn open(library: &OsString) -> std::result::Result<Nccl, String> {
    let is_path = Path::new(library).components().count() > 1;
    if is_path && !Path::new(library).exists() {
        return Err("no such file".into());
    }
    // SAFETY: loading runs the library's initialisers; NCCL's are safe to run on any thread
    // and at any time. The library is never unloaded while a function of it may run: a
    // loaded `Nccl` is leaked, and one that fails the checks below was never called into
    // beyond ncclGetVersion.
    let lib = unsafe { libloading::Library::new(library) }.map_err(|e| e.to_string())?;
    // SAFETY: the functions are looked up under nccl.h's names; the library is checked to be
    // NCCL (it exports ncclGetVersion and reports 2.x) before anything else is called, and
    // `Nccl` keeps it loaded.
    let fns = unsafe { sys::Functions::load(&lib) };
    let Some(get_version) = fns.ncclGetVersion else {
        return Err("not an NCCL library: it exports no ncclGetVersion".into());
    };
    let mut code: c_int = 0;
    // SAFETY: writes one int.
    let r = unsafe { get_version(&mut code) };
    if r != sys::ncclSuccess || code <= 0 {
        return Err(format!(
            "ncclGetVersion failed ({})",
            NcclResult::from_raw(r).name()
        ));
    }
    let version = Version::from_code(code as u32);
    if version.major != 2 {
        return Err(format!(
            "NCCL {version}: this crate binds NCCL 2.x (nccl.h {})",
            Version::HEADER
        ));
    }
    Ok(Nccl {
        _lib: lib,
        path: Path::new(library).display().to_string(),
        version,
        fns,
    })
}

impl NcclResult {
    /// NCCL's description of the code (`ncclGetErrorString` of the loaded library), or
    /// `None` when no library is loaded.
    #[doc(alias = "ncclGetErrorString")]
    pub fn description(self) -> Option<&'static str> {
        Nccl::loaded().and_then(|nccl| nccl.error_string(self))
    }
}

/// Turns an `ncclResult_t` into a [`Result`]: the one place a code becomes an error.
/// `ncclInProgress` is [`Progress::InProgress`].
#[inline]
#[track_caller]
pub(crate) fn check(nccl: &Nccl, code: sys::ncclResult_t, call: &'static str) -> Result<Progress> {
    match code {
        sys::ncclSuccess => Ok(Progress::Done),
        sys::ncclInProgress => Ok(Progress::InProgress),
        _ => Err(nccl_error(nccl, code, call, Location::caller())),
    }
}

#[cold]
#[inline(never)]
fn nccl_error(
    nccl: &Nccl,
    code: sys::ncclResult_t,
    call: &'static str,
    location: &'static Location<'static>,
) -> Error {
    Error::Nccl {
        call,
        code: NcclResult::from_raw(code),
        last_error: nccl.last_error(),
        location,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_decode_both_encodings_of_nccl_version() {
        assert_eq!(
            Version::from_code(22809),
            Version {
                major: 2,
                minor: 28,
                patch: 9
            }
        );
        assert_eq!(
            Version::from_code(2708),
            Version {
                major: 2,
                minor: 7,
                patch: 8
            }
        );
        for v in [
            Version::HEADER,
            Version::from_code(2708),
            Version::from_code(21903),
        ] {
            assert_eq!(Version::from_code(v.code()), v);
        }
        assert_eq!(Version::HEADER.code(), sys::NCCL_VERSION_CODE);
        assert_eq!(Version::HEADER.to_string(), "2.28.9");
    }

    #[test]
    fn a_bogus_path_is_refused_with_the_place_and_the_reason() {
        let err = open_first(&[Candidate {
            library: "/nonexistent/cuda-driver-nccl-test/libnccl.so.2".into(),
            found_through: "the path given to Nccl::load".into(),
        }])
        .expect_err("nothing can load from a bogus path");
        assert_eq!(err.attempts().len(), 1);
        let msg = err.to_string();
        assert!(msg.starts_with("cannot load NCCL 2.x; tried:"), "{msg}");
        assert!(
            msg.contains(
                "/nonexistent/cuda-driver-nccl-test/libnccl.so.2 (from the path given to \
                 Nccl::load): no such file"
            ),
            "{msg}"
        );
        assert!(msg.contains(LIBRARY_VAR), "{msg}");
    }

    #[test]
    fn a_library_that_is_not_nccl_is_refused_with_the_reason() {
        // A library every Linux process has loaded: it opens, but is not NCCL.
        #[cfg(all(unix, not(target_os = "macos")))]
        {
            let err = open_first(&[Candidate {
                library: "libc.so.6".into(),
                found_through: "a test".into(),
            }])
            .expect_err("libc is not NCCL");
            assert_eq!(
                err.attempts()[0].reason,
                "not an NCCL library: it exports no ncclGetVersion"
            );
        }
    }

    #[test]
    fn every_failure_is_listed_in_order() {
        let err = open_first(&[
            Candidate {
                library: "/nonexistent/a/libnccl.so.2".into(),
                found_through: "first".into(),
            },
            Candidate {
                library: "libcuda-driver-nccl-no-such-library.so.7".into(),
                found_through: "second".into(),
            },
        ])
        .expect_err("neither place exists");
        let places: Vec<_> = err
            .attempts()
            .iter()
            .map(|a| a.found_through.as_str())
            .collect();
        assert_eq!(places, ["first", "second"]);
        assert!(!err.attempts()[1].reason.is_empty());
    }

    #[test]
    fn the_default_search_ends_with_the_system_loader_and_has_no_duplicates() {
        let c = default_candidates();
        let last = c.last().unwrap();
        assert_eq!(last.found_through, "the system's library search path");
        let mut libs: Vec<_> = c.iter().map(|c| c.library.clone()).collect();
        libs.sort();
        libs.dedup();
        assert_eq!(libs.len(), c.len());
    }

    #[test]
    fn a_venv_s_site_packages_are_found_under_lib_python() {
        let dir =
            std::env::temp_dir().join(format!("cuda-driver-nccl-venv-{}", std::process::id()));
        let site = dir.join("lib/python3.99/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::create_dir_all(dir.join("lib/not-python")).unwrap();
        assert_eq!(venv_site_packages(&dir), vec![site.clone()]);
        assert_eq!(
            Path::new(&wheel_candidate(&site, "x").library),
            site.join("nvidia/nccl/lib/libnccl.so.2")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
