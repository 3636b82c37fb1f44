//! The CUDA device runtime library (`libcudadevrt.a`): device code that calls into the CUDA
//! runtime from a kernel (`cudaGraphSetConditional`, which drives a graph's if, while and
//! switch nodes; device-side launches) is compiled as relocatable code (`nvcc -rdc=true`) and
//! linked with it (`cuLinkAddFile`, `CU_JIT_INPUT_LIBRARY`) before it loads.
//!
//! [`find_device_runtime`] finds the library where a CUDA 13 toolkit or its wheels put it,
//! [`Linker::add_device_runtime`] adds it to a link, and [`Module::load_with_device_runtime`]
//! links PTX with it and loads the result. cuda-driver-build's `Build::device_runtime` makes
//! the generated `Kernels::load` do the same.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use cuda_driver_macros::wraps;

use crate::context::Context;
use crate::error::module::ModuleError;
use crate::error::{Error, Result};
use crate::jit::JitOptions;
use crate::module::linker::Linker;
use crate::module::Module;
use crate::types::JitInputType;

/// The environment variable naming the device runtime library file: when it is set, that
/// file is used and nothing else is searched.
pub const DEVICE_RUNTIME_ENV: &str = "CUDA_DRIVER_CUDADEVRT";

/// The library's file name on this system.
const FILE: &str = if cfg!(windows) {
    "cudadevrt.lib"
} else {
    "libcudadevrt.a"
};

/// The folders of a toolkit (or of the `nvidia/cu13` wheel folder) where the library lies.
fn toolkit_dirs(root: &Path, out: &mut Vec<PathBuf>) {
    for sub in ["lib64", "lib", "lib/x64"] {
        out.push(root.join(sub).join(FILE));
    }
    for arch in ["x86_64-linux", "sbsa-linux", "aarch64-linux"] {
        out.push(root.join("targets").join(arch).join("lib").join(FILE));
    }
}

/// `<venv>/lib/python3.*/site-packages/nvidia/cu13/lib/` (the pinned `nvidia-cuda-runtime`
/// wheel of a virtual environment).
fn venv_dirs(venv: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = std::fs::read_dir(venv.join("lib")) {
        let mut pythons: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        pythons.sort();
        for py in pythons {
            out.push(py.join("site-packages/nvidia/cu13/lib").join(FILE));
        }
    }
}

/// Every place [`find_device_runtime`] looks, in order, given the environment `env`, the
/// current directory and the running executable.
fn candidates(
    hints: &[&Path],
    env: &dyn Fn(&str) -> Option<OsString>,
    cwd: Option<&Path>,
    exe: Option<&Path>,
) -> std::result::Result<Vec<PathBuf>, PathBuf> {
    let set = |v: &str| env(v).filter(|s| !s.is_empty());
    if let Some(file) = set(DEVICE_RUNTIME_ENV) {
        return Err(PathBuf::from(file));
    }
    let mut out: Vec<PathBuf> = hints.iter().map(|h| h.to_path_buf()).collect();
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = set(var) {
            toolkit_dirs(Path::new(&root), &mut out);
        }
    }
    if let Some(venv) = set("VIRTUAL_ENV") {
        venv_dirs(Path::new(&venv), &mut out);
    }
    // A `.venv` in the current directory, the executable's, or one of their parents (a
    // repository's pinned wheels, for its tests and examples).
    for start in [cwd, exe.and_then(Path::parent)].into_iter().flatten() {
        for dir in start.ancestors() {
            let venv = dir.join(".venv");
            if venv.is_dir() {
                venv_dirs(&venv, &mut out);
            }
        }
    }
    // The toolkit of the nvcc on PATH.
    if let Some(path) = set("PATH") {
        let exe_name = if cfg!(windows) { "nvcc.exe" } else { "nvcc" };
        for dir in std::env::split_paths(&path) {
            if dir.join(exe_name).is_file() {
                if let Some(root) = dir.parent() {
                    toolkit_dirs(root, &mut out);
                }
            }
        }
    }
    // Where toolkits install themselves.
    let cuda = Path::new("/usr/local/cuda");
    toolkit_dirs(cuda, &mut out);
    if let Ok(rd) = std::fs::read_dir("/usr/local") {
        let mut versioned: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("cuda-13"))
            })
            .collect();
        versioned.sort();
        for root in versioned.iter().rev() {
            toolkit_dirs(root, &mut out);
        }
    }
    toolkit_dirs(Path::new("/opt/cuda"), &mut out);
    out.push(Path::new("/usr/lib/x86_64-linux-gnu").join(FILE));
    out.push(Path::new("/usr/lib64").join(FILE));
    out.dedup();
    Ok(out)
}

/// Finds the CUDA device runtime library (`libcudadevrt.a`).
///
/// When [`DEVICE_RUNTIME_ENV`] (`CUDA_DRIVER_CUDADEVRT`) is set, it names the file and nothing
/// else is searched. Otherwise the first file that exists of: the `hints` (files), the
/// toolkits at `CUDA_PATH` and `CUDA_HOME` (`lib64/`, `lib/`, `targets/<arch>/lib/`; the
/// wheel folder `nvidia/cu13` too), the `nvidia/cu13/lib` of the virtual environment at
/// `VIRTUAL_ENV` and of a `.venv` in the current directory, the executable's, or one of their
/// parents, the toolkit of the `nvcc` on `PATH`, `/usr/local/cuda`, `/usr/local/cuda-13*`,
/// `/opt/cuda`, and the system library folders.
///
/// Use the library of the toolkit that compiled the device code (the CUDA 13.0 one for PTX
/// that must load on CUDA 13.0 drivers): a newer one may hold code the driver cannot link.
///
/// # Errors
///
/// [`ModuleError::DeviceRuntimeNotFound`], listing every place it looked.
#[doc(alias = "cudadevrt")]
#[doc(alias = "libcudadevrt")]
pub fn find_device_runtime(hints: &[&Path]) -> Result<PathBuf> {
    let cwd = std::env::current_dir().ok();
    let exe = std::env::current_exe().ok();
    find_in(
        hints,
        &|v| std::env::var_os(v),
        cwd.as_deref(),
        exe.as_deref(),
    )
}

fn find_in(
    hints: &[&Path],
    env: &dyn Fn(&str) -> Option<OsString>,
    cwd: Option<&Path>,
    exe: Option<&Path>,
) -> Result<PathBuf> {
    match candidates(hints, env, cwd, exe) {
        Err(named) if named.is_file() => Ok(named),
        Err(named) => Err(Error::Module(ModuleError::DeviceRuntimeNotFound {
            searched: vec![named],
            env: DEVICE_RUNTIME_ENV,
        })),
        Ok(all) => match all.iter().find(|p| p.is_file()) {
            Some(p) => Ok(p.clone()),
            None => Err(Error::Module(ModuleError::DeviceRuntimeNotFound {
                searched: all,
                env: DEVICE_RUNTIME_ENV,
            })),
        },
    }
}

impl Linker {
    /// Adds the CUDA device runtime library ([`find_device_runtime`] with `hints`) as a
    /// library input (`cuLinkAddFile` with `CU_JIT_INPUT_LIBRARY`), for relocatable device code
    /// that calls the device runtime (`cudaGraphSetConditional`); returns the file used.
    ///
    /// # Errors
    ///
    /// [`ModuleError::DeviceRuntimeNotFound`] (where it looked), or the linker's error.
    #[wraps(cuLinkAddFile)]
    #[doc(alias = "CU_JIT_INPUT_LIBRARY")]
    #[doc(alias = "cudadevrt")]
    #[track_caller]
    pub fn add_device_runtime(&mut self, hints: &[&Path]) -> Result<PathBuf> {
        let lib = find_device_runtime(hints)?;
        self.add_file(JitInputType::LIBRARY, &lib)?;
        Ok(lib)
    }
}

impl Module {
    /// Links `ptx` (relocatable device code, `nvcc -rdc=true`) with the CUDA device runtime
    /// ([`Linker::add_device_runtime`]) and loads the linked cubin into `ctx`: kernels that
    /// set graph conditionals from device code (`cudaGraphSetConditional`) load this way.
    /// `name` appears in the link logs.
    ///
    /// ```no_run
    /// use cuda_driver::{Device, Module};
    ///
    /// let ctx = Device::get(0)?.primary_context()?;
    /// let ptx = std::fs::read_to_string("graph_conditional.ptx").unwrap();
    /// let module = Module::load_with_device_runtime(&ctx, &ptx, "graph_conditional.ptx", &[])?;
    /// let set = module.function("set_condition")?;
    /// # let _ = set;
    /// # Ok::<(), cuda_driver::Error>(())
    /// ```
    #[wraps(
        cuLinkCreate,
        cuLinkAddData,
        cuLinkAddFile,
        cuLinkComplete,
        cuModuleLoadData
    )]
    #[doc(alias = "cudadevrt")]
    #[track_caller]
    pub fn load_with_device_runtime(
        ctx: &Context,
        ptx: &str,
        name: &str,
        hints: &[&Path],
    ) -> Result<Module> {
        let mut linker = Linker::new(ctx, &JitOptions::new())?;
        linker.add_data(JitInputType::PTX, ptx, name)?;
        linker.add_device_runtime(hints)?;
        let cubin = linker.complete()?;
        Module::load_data(ctx, &cubin[..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |v| {
            vars.iter()
                .find(|(k, _)| *k == v)
                .map(|(_, x)| OsString::from(x))
        }
    }

    #[test]
    fn nothing_found_is_an_error_that_lists_where_it_looked() {
        let dir = std::env::temp_dir().join(format!("cudadevrt-none-{}", std::process::id()));
        let e = find_in(
            &[Path::new("/nonexistent/hint/libcudadevrt.a")],
            &env_of(&[("CUDA_PATH", "/nonexistent/toolkit")]),
            Some(&dir),
            None,
        );
        // A machine with a toolkit installed finds it in a system folder: only the error's
        // form is checked where there is none.
        if let Err(e) = e {
            let Error::Module(ModuleError::DeviceRuntimeNotFound { searched, env }) = &e else {
                panic!("{e:?}");
            };
            assert_eq!(*env, DEVICE_RUNTIME_ENV);
            assert_eq!(searched[0], Path::new("/nonexistent/hint/libcudadevrt.a"));
            assert!(searched.contains(&PathBuf::from("/nonexistent/toolkit/lib64").join(FILE)));
            assert!(searched.contains(&PathBuf::from("/usr/local/cuda/lib64").join(FILE)));
            let msg = e.to_string();
            assert!(msg.contains("CUDA_DRIVER_CUDADEVRT"), "{msg}");
            assert!(msg.contains("/usr/local/cuda/lib64"), "{msg}");
            assert!(msg.contains("/nonexistent/hint/libcudadevrt.a"), "{msg}");
        }
    }

    #[test]
    fn the_variable_decides_alone_and_hints_come_first() {
        let dir = std::env::temp_dir().join(format!("cudadevrt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join(FILE);
        std::fs::write(&lib, b"!<arch>\n").unwrap();
        let lib_s = lib.to_str().unwrap();
        // Named by the variable: used; a missing one is the error, nothing else searched.
        let found = find_in(&[], &env_of(&[(DEVICE_RUNTIME_ENV, lib_s)]), None, None).unwrap();
        assert_eq!(found, lib);
        let e = find_in(
            &[&lib],
            &env_of(&[(DEVICE_RUNTIME_ENV, "/nonexistent/libcudadevrt.a")]),
            None,
            None,
        )
        .unwrap_err();
        match e {
            Error::Module(ModuleError::DeviceRuntimeNotFound { searched, .. }) => {
                assert_eq!(searched, [PathBuf::from("/nonexistent/libcudadevrt.a")])
            }
            other => panic!("{other:?}"),
        }
        // A hint before everything else; a toolkit root's lib64.
        assert_eq!(find_in(&[&lib], &env_of(&[]), None, None).unwrap(), lib);
        let root = dir.join("toolkit");
        std::fs::create_dir_all(root.join("lib64")).unwrap();
        std::fs::write(root.join("lib64").join(FILE), b"!<arch>\n").unwrap();
        let found = find_in(
            &[],
            &env_of(&[("CUDA_PATH", root.to_str().unwrap())]),
            None,
            None,
        )
        .unwrap();
        assert_eq!(found, root.join("lib64").join(FILE));
        // A .venv above the current directory.
        let venv_lib = dir.join("repo/.venv/lib/python3.12/site-packages/nvidia/cu13/lib");
        std::fs::create_dir_all(&venv_lib).unwrap();
        std::fs::write(venv_lib.join(FILE), b"!<arch>\n").unwrap();
        let sub = dir.join("repo/a/b");
        std::fs::create_dir_all(&sub).unwrap();
        let found = find_in(&[], &env_of(&[]), Some(&sub), None).unwrap();
        assert_eq!(found, venv_lib.join(FILE));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
