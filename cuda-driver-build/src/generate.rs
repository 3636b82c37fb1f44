//! The generator: PTX in, Rust source with one typed handle per kernel out.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::ptx::{self, PtxEntry, PtxParam};
use crate::types::{self, CppParam, ParamType};
use crate::Error;

/// The most parameters a launch takes (the tuples `KernelArgs` is implemented for).
pub const MAX_PARAMS: usize = 12;

/// Generates typed launchers from PTX: one handle type per `.entry`, whose `launch` takes
/// the kernel's parameters as Rust types in order (see the [crate docs](crate) for the
/// mapping).
///
/// ```
/// let ptx = ".visible .entry _Z5scaleIfEvPT_S0_i(.param .u64 a, .param .f32 b, .param .u32 c)\n{\n}\n";
/// let src = cuda_driver_build::Generator::new().generate(ptx, None).unwrap();
/// assert!(src.contains("pub struct ScaleF32"));
/// assert!(src.contains("p0: ::cuda_driver::DeviceSliceMut<'_, ::core::primitive::f32>"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Generator {
    signatures: Vec<(String, String)>,
    renames: Vec<(String, String)>,
    /// `Some(hints)`: the generated `load` links the PTX with the device runtime.
    device_runtime: Option<Vec<PathBuf>>,
}

/// One kernel as the generator typed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypedKernel {
    /// The PTX entry name (what `cuModuleGetFunction` looks up).
    pub entry: String,
    /// The C++ signature, or the PTX types of an unannotated `extern "C"` kernel.
    pub signature: String,
    /// The Rust handle's type name.
    pub rust_name: String,
    /// The parameters, in order.
    pub params: Vec<TypedParam>,
}

/// One parameter of a [`TypedKernel`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypedParam {
    /// The Rust argument's name.
    pub name: String,
    /// The C++ type (or `.u32` and so on for an unannotated `extern "C"` kernel).
    pub cpp: String,
    /// The Rust side.
    pub rust: ParamType,
    /// Its size in the PTX parameter list, in bytes.
    pub size: u32,
    /// Its alignment in the PTX parameter list, in bytes.
    pub align: u32,
}

impl Generator {
    /// A generator with no annotations.
    pub fn new() -> Generator {
        Generator::default()
    }

    /// Gives the C++ parameter list of kernel `kernel` (a PTX entry name, typically of an
    /// `extern "C"` kernel, whose PTX has only `.u64` for its pointers), so that its pointers
    /// become typed views and its parameters get names:
    /// `signature("VecAdd", "const float* A, const float* B, float* C, int N")`.
    /// The generator checks it against the PTX parameter list (count and sizes).
    pub fn signature(&mut self, kernel: &str, params: &str) -> &mut Generator {
        self.signatures.push((kernel.into(), params.into()));
        self
    }

    /// Makes the generated `Kernels::load` link the PTX (relocatable device code, `nvcc
    /// -rdc=true`) with the CUDA device runtime (`libcudadevrt.a`) before it loads it, through
    /// `cuda_driver::Module::load_with_device_runtime`, which looks at `hints` (files) first,
    /// then where `cuda_driver::module::find_device_runtime` looks at run time. For kernels that call
    /// the device runtime, such as `cudaGraphSetConditional` (graph if, while and switch
    /// nodes driven from a kernel). [`Build::device_runtime`](crate::Build::device_runtime)
    /// sets it, with the library it found at build time as the hint.
    pub fn device_runtime(&mut self, hints: &[PathBuf]) -> &mut Generator {
        self.device_runtime = Some(hints.to_vec());
        self
    }

    /// Names the handle of `kernel` (a PTX entry name, or a C++ name such as
    /// `scale<float>`) `rust_name`, instead of the name derived from the kernel's.
    pub fn rename(&mut self, kernel: &str, rust_name: &str) -> &mut Generator {
        self.renames.push((kernel.into(), rust_name.into()));
        self
    }

    /// The options that name a kernel of `ptx` (for a build of several files), and the
    /// names of the options that do.
    pub(crate) fn restricted_to(&self, ptx: &str) -> Result<(Generator, Vec<String>), Error> {
        let entries = ptx::entries(ptx)?;
        let known = |k: &String| {
            entries
                .iter()
                .any(|e| &e.name == k || cpp_name(e).as_deref() == Some(k))
        };
        let keep = |list: &Vec<(String, String)>| -> Vec<(String, String)> {
            list.iter().filter(|(k, _)| known(k)).cloned().collect()
        };
        let g = Generator {
            signatures: keep(&self.signatures),
            renames: keep(&self.renames),
            device_runtime: self.device_runtime.clone(),
        };
        let used = g
            .signatures
            .iter()
            .chain(&g.renames)
            .map(|(k, _)| k.clone())
            .collect();
        Ok((g, used))
    }

    /// Every option's kernel name with the option, for [`Error::UnknownKernel`].
    pub(crate) fn option_names(&self) -> Vec<(&'static str, &str)> {
        let s = self
            .signatures
            .iter()
            .map(|(k, _)| ("signature", k.as_str()));
        let r = self.renames.iter().map(|(k, _)| ("rename", k.as_str()));
        s.chain(r).collect()
    }

    /// Types every kernel of `ptx`.
    pub fn kernels(&self, ptx: &str) -> Result<Vec<TypedKernel>, Error> {
        let entries = ptx::entries(ptx)?;
        for (option, list) in [("signature", &self.signatures), ("rename", &self.renames)] {
            for (k, _) in list {
                if !entries
                    .iter()
                    .any(|e| &e.name == k || cpp_name(e).as_deref() == Some(k))
                {
                    return Err(Error::UnknownKernel {
                        option,
                        kernel: k.clone(),
                    });
                }
            }
        }
        let mut out = Vec::new();
        // C++ name -> signatures, to find overloads.
        let mut by_cpp_name: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
        for e in &entries {
            let (k, cpp) = self.kernel(e)?;
            let renamed = self.renamed(e, cpp.as_deref()).is_some();
            if let Some(c) = cpp {
                by_cpp_name
                    .entry(c)
                    .or_default()
                    .push((k.signature.clone(), renamed));
            }
            out.push(k);
        }
        for (name, sigs) in by_cpp_name {
            if sigs.len() > 1 && sigs.iter().filter(|(_, renamed)| !renamed).count() > 1 {
                return Err(Error::Overload {
                    name,
                    kernels: sigs.into_iter().map(|(s, _)| s).collect(),
                });
            }
        }
        let mut names: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for k in &out {
            names
                .entry(k.rust_name.as_str())
                .or_default()
                .push(k.signature.as_str());
        }
        for (rust_name, kernels) in names {
            if kernels.len() > 1 || rust_name == "Kernels" {
                return Err(Error::Collision {
                    rust_name: rust_name.into(),
                    kernels: kernels.into_iter().map(|k| format!("`{k}`")).collect(),
                });
            }
        }
        Ok(out)
    }

    fn renamed(&self, e: &PtxEntry, cpp: Option<&str>) -> Option<&str> {
        self.renames
            .iter()
            .rev()
            .find(|(k, _)| *k == e.name || Some(k.as_str()) == cpp)
            .map(|(_, r)| r.as_str())
    }

    /// Types one entry; also returns its C++ name (with template arguments), if mangled.
    fn kernel(&self, e: &PtxEntry) -> Result<(TypedKernel, Option<String>), Error> {
        let annotation = self
            .signatures
            .iter()
            .rev()
            .find(|(k, _)| *k == e.name || Some(k.as_str()) == cpp_name(e).as_deref());
        let (signature, cpp_name, default_name, cpp_params) = if let Some((_, params)) = annotation
        {
            let base = match demangle(e)? {
                Some(d) => d,
                None => types::split_signature(&format!("{}()", e.name)).map_err(|detail| {
                    Error::Demangle {
                        kernel: e.name.clone(),
                        detail,
                    }
                })?,
            };
            let sig = format!("{}({})", base.name, params.trim());
            let parsed = parse_list(&sig, params, true)?;
            (
                sig,
                None,
                types::rust_type_name(&base.base, &base.template_args),
                Some(parsed),
            )
        } else if let Some(d) = demangle(e)? {
            let sig = format!("{}({})", d.name, d.params.join(", "));
            let parsed = parse_list(&sig, &d.params.join(", "), false)?;
            (
                sig,
                Some(d.name.clone()),
                types::rust_type_name(&d.base, &d.template_args),
                Some(parsed),
            )
        } else {
            let sig = format!(
                "{}({})",
                e.name,
                e.params
                    .iter()
                    .map(|p| match p.array {
                        Some(n) => format!(".align {} .b8[{n}]", p.alignment().unwrap_or(1)),
                        None => format!(".{}", p.ty),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            (sig, None, types::rust_type_name(&e.name, &[]), None)
        };
        let rust_name = self
            .renamed(e, cpp_name.as_deref())
            .map_or(default_name, str::to_string);
        if !is_ident(&rust_name) || types::is_keyword(&rust_name) {
            return Err(Error::Collision {
                rust_name,
                kernels: vec![format!("`{signature}` (not a Rust identifier)")],
            });
        }
        if e.params.len() > MAX_PARAMS {
            return Err(Error::Unsupported {
                kernel: signature,
                param: MAX_PARAMS,
                ty: format!("{} parameters", e.params.len()),
                detail: format!(
                    "a launch takes at most {MAX_PARAMS} arguments: pack the rest in a struct"
                ),
            });
        }
        let params = match cpp_params {
            Some(cpp) => typed_params(&signature, &cpp, &e.params)?,
            None => e
                .params
                .iter()
                .enumerate()
                .map(|(i, p)| ptx_param(&signature, i, p))
                .collect::<Result<_, _>>()?,
        };
        Ok((
            TypedKernel {
                entry: e.name.clone(),
                signature,
                rust_name,
                params,
            },
            cpp_name,
        ))
    }

    /// Generates the Rust source for every kernel of `ptx`. With `ptx_file`, the source also
    /// embeds that file (`include_str!` of its absolute path) as `PTX` and offers
    /// `Kernels::load(ctx)`; without, `Kernels::new(&module)` looks the kernels up in a module
    /// the caller loaded.
    ///
    /// The source is a list of items for `include!` inside a module of the user's crate:
    /// ```ignore
    /// mod kernels {
    ///     include!(concat!(env!("OUT_DIR"), "/vector_add.rs"));
    /// }
    /// ```
    /// Every item carries `#[allow(dead_code)]`: a program uses some of what is generated
    /// (`from_function`, `function`, the field `module`, kernels it does not launch), and the
    /// rest must not warn in a private module (`include!` takes no inner `#![allow]`).
    pub fn generate(&self, ptx: &str, ptx_file: Option<&Path>) -> Result<String, Error> {
        let kernels = self.kernels(ptx)?;
        Ok(render(&kernels, ptx_file, self.device_runtime.as_deref()))
    }
}

/// The C++ name of a mangled entry (`scale<float>`), if it is one.
fn cpp_name(e: &PtxEntry) -> Option<String> {
    demangle(e).ok().flatten().map(|d| d.name)
}

/// The demangled signature of a C++ kernel, or `None` for an `extern "C"` one.
fn demangle(e: &PtxEntry) -> Result<Option<types::Demangled>, Error> {
    if !e.name.starts_with("_Z") {
        return Ok(None);
    }
    let err = |detail: String| Error::Demangle {
        kernel: e.name.clone(),
        detail,
    };
    let sym = cpp_demangle::Symbol::new(e.name.as_bytes()).map_err(|x| err(x.to_string()))?;
    let text = sym
        .demangle(&cpp_demangle::DemangleOptions::default())
        .map_err(|x| err(x.to_string()))?;
    types::split_signature(&text).map(Some).map_err(err)
}

fn parse_list(sig: &str, list: &str, annotated: bool) -> Result<Vec<CppParam>, Error> {
    let list = list.trim();
    if list.is_empty() || list == "void" {
        return Ok(Vec::new());
    }
    types::split_top_level(list)
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            types::parse_param(p, annotated).map_err(|detail| Error::Unsupported {
                kernel: sig.into(),
                param: i,
                ty: p.trim().into(),
                detail,
            })
        })
        .collect()
}

/// Pairs C++ parameters with the PTX ones, checking count and sizes.
fn typed_params(sig: &str, cpp: &[CppParam], ptx: &[PtxParam]) -> Result<Vec<TypedParam>, Error> {
    if cpp.len() != ptx.len() {
        return Err(Error::Mismatch {
            kernel: sig.into(),
            detail: format!("{} parameters in C++, {} in the PTX", cpp.len(), ptx.len()),
        });
    }
    let mut out = Vec::new();
    let mut used = Vec::new();
    for (i, (c, p)) in cpp.iter().zip(ptx).enumerate() {
        let size = p.size().unwrap_or(0);
        let align = p.alignment().unwrap_or(1);
        let want = match &c.rust {
            ParamType::Value { size, .. } => Some(*size),
            ParamType::Pointer { .. } | ParamType::Untyped => Some(8),
            ParamType::Struct { .. } => None,
        };
        if let Some(want) = want {
            if want != size {
                return Err(Error::Mismatch {
                    kernel: sig.into(),
                    detail: format!(
                        "parameter {i} (`{}`) has {want} bytes, the PTX parameter {size}",
                        c.ty
                    ),
                });
            }
        }
        let name = arg_name(c.name.as_deref(), i, &used);
        used.push(name.clone());
        out.push(TypedParam {
            name,
            cpp: c.ty.clone(),
            rust: c.rust.clone(),
            size,
            align,
        });
    }
    Ok(out)
}

/// The Rust side of an unannotated `extern "C"` kernel's parameter, from its PTX type.
fn ptx_param(sig: &str, i: usize, p: &PtxParam) -> Result<TypedParam, Error> {
    let size = p.size().unwrap_or(0);
    let align = p.alignment().unwrap_or(1);
    let value = |rust, size| ParamType::Value { rust, size };
    let rust = match (p.array, p.ty.as_str()) {
        (Some(_), _) => ParamType::Struct {
            cpp: format!(".b8[{size}]"),
        },
        (None, _) if p.ptr => ParamType::Untyped,
        (None, "u64" | "b64") => ParamType::Untyped,
        (None, "s64") => value("i64", 8),
        (None, "u32" | "b32") => value("u32", 4),
        (None, "s32") => value("i32", 4),
        (None, "u16" | "b16") => value("u16", 2),
        (None, "s16") => value("i16", 2),
        (None, "u8" | "b8") => value("u8", 1),
        (None, "s8") => value("i8", 1),
        (None, "f16") => value("::cuda_driver::half::f16", 2),
        (None, "f32") => value("f32", 4),
        (None, "f64") => value("f64", 8),
        (None, t) => {
            return Err(Error::Unsupported {
                kernel: sig.into(),
                param: i,
                ty: format!(".{t}"),
                detail: "no Rust type for this PTX type".into(),
            })
        }
    };
    Ok(TypedParam {
        name: format!("p{i}"),
        cpp: match p.array {
            Some(n) => format!(".align {align} .b8[{n}]"),
            None => format!(".{}", p.ty),
        },
        rust,
        size,
        align,
    })
}

/// A Rust type of the generated source by its absolute path: a primitive type through
/// `::core::primitive` (a user's module may define its own `f32`), the others as they are
/// (`::cuda_driver::vector::Float4`).
fn absolute(rust: &str) -> String {
    const PRIMITIVES: &[&str] = &[
        "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32",
        "i64", "i128", "isize", "f32", "f64",
    ];
    if PRIMITIVES.contains(&rust) {
        format!("::core::primitive::{rust}")
    } else {
        debug_assert!(rust.starts_with("::"), "{rust} is not an absolute path");
        rust.to_string()
    }
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The Rust name of argument `i`: the annotation's, in snake case, unless it clashes.
fn arg_name(given: Option<&str>, i: usize, used: &[String]) -> String {
    if let Some(n) = given {
        let s = types::snake(n);
        let reserved = matches!(s.as_str(), "stream" | "cfg" | "self" | "_");
        if is_ident(&s) && !types::is_keyword(&s) && !reserved && !used.contains(&s) {
            return s;
        }
    }
    format!("p{i}")
}

/// The Rust source for `kernels`.
fn render(
    kernels: &[TypedKernel],
    ptx_file: Option<&Path>,
    device_runtime: Option<&[PathBuf]>,
) -> String {
    let mut s = String::new();
    let from = ptx_file
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let _ = writeln!(
        s,
        "// @generated by cuda-driver-build {}{}: do not edit.\n",
        env!("CARGO_PKG_VERSION"),
        from.as_deref()
            .map(|f| format!(" from {f}"))
            .unwrap_or_default()
    );
    if let Some(p) = ptx_file {
        let _ = writeln!(
            s,
            "/// The PTX these launchers were generated from{}, NUL-terminated.\n\
             #[allow(dead_code)]\n\
             pub const PTX: &::core::primitive::str = \
             ::core::concat!(::core::include_str!({:?}), \"\\0\");\n",
            from.as_deref()
                .map(|f| format!(" (`{f}`)"))
                .unwrap_or_default(),
            p.display().to_string()
        );
    }
    for k in kernels {
        render_kernel(&mut s, k);
    }
    // Every kernel, looked up in one module.
    let field = |k: &TypedKernel| {
        let f = types::snake(&k.rust_name);
        if types::is_keyword(&f) || f == "module" {
            format!("{f}_")
        } else {
            f
        }
    };
    let _ = writeln!(
        s,
        "/// Every kernel of the PTX, looked up in one module.\n\
         #[derive(::core::clone::Clone)]\n\
         #[allow(dead_code)]\n\
         pub struct Kernels {{\n    \
             /// The module the kernels were looked up in.\n    \
             pub module: ::cuda_driver::Module,"
    );
    for k in kernels {
        let _ = writeln!(
            s,
            "    /// `{}`.\n    pub {}: {},",
            k.signature,
            field(k),
            k.rust_name
        );
    }
    let _ = writeln!(
        s,
        "}}\n\n\
         #[allow(dead_code)]\n\
         impl Kernels {{\n    \
             /// Looks every kernel up in `module` (`cuModuleGetFunction`).\n    \
             #[track_caller]\n    \
             pub fn new(module: &::cuda_driver::Module) -> ::cuda_driver::Result<Kernels> {{\n        \
                 ::core::result::Result::Ok(Kernels {{"
    );
    for k in kernels {
        let _ = writeln!(
            s,
            "            {}: {}::new(module)?,",
            field(k),
            k.rust_name
        );
    }
    let _ = writeln!(
        s,
        "            module: ::core::clone::Clone::clone(module),\n        \
                 }})\n    \
             }}"
    );
    match (ptx_file, device_runtime) {
        (Some(_), None) => {
            let _ = writeln!(
                s,
                "\n    /// Loads [`PTX`] into `ctx` (`cuModuleLoadData`, JIT-compiled for its device) \
                 and looks every kernel up.\n    \
                 #[track_caller]\n    \
                 pub fn load(ctx: &::cuda_driver::Context) -> ::cuda_driver::Result<Kernels> {{\n        \
                     Kernels::new(&::cuda_driver::Module::load_data(ctx, PTX)?)\n    \
                 }}"
            );
        }
        (Some(p), Some(hints)) => {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let hints: Vec<String> = hints
                .iter()
                .map(|h| format!("::std::path::Path::new({:?})", h.display().to_string()))
                .collect();
            let _ = writeln!(
                s,
                "\n    /// Links [`PTX`] with the CUDA device runtime (`libcudadevrt.a`: the one \
                 found at build time, else where `cuda_driver::module::find_device_runtime` looks) and \
                 loads the result into `ctx` (`cuLinkCreate`, `cuLinkAddFile`, \
                 `cuModuleLoadData`), then looks every kernel up.\n    \
                 #[track_caller]\n    \
                 pub fn load(ctx: &::cuda_driver::Context) -> ::cuda_driver::Result<Kernels> {{\n        \
                     Kernels::new(&::cuda_driver::Module::load_with_device_runtime(\n            \
                         ctx,\n            \
                         PTX,\n            \
                         {name:?},\n            \
                         &[{}],\n        \
                     )?)\n    \
                 }}",
                hints.join(", ")
            );
        }
        (None, _) => {}
    }
    let _ = writeln!(s, "}}");
    s
}

fn render_kernel(s: &mut String, k: &TypedKernel) {
    let n = &k.rust_name;
    let _ = writeln!(
        s,
        "/// The kernel `{sig}` (PTX entry `{entry}`), with a typed [`launch`]({n}::launch).\n\
         #[derive(::core::clone::Clone)]\n\
         #[allow(dead_code)]\n\
         pub struct {n} {{\n    \
             function: ::cuda_driver::Function,\n\
         }}\n\n\
         #[allow(dead_code)]\n\
         impl {n} {{\n    \
             /// The PTX entry name, which `cuModuleGetFunction` looks up.\n    \
             pub const ENTRY: &'static ::core::primitive::str = {entry:?};\n\n    \
             /// Looks the kernel up in `module` (`cuModuleGetFunction`).\n    \
             #[track_caller]\n    \
             pub fn new(module: &::cuda_driver::Module) -> ::cuda_driver::Result<{n}> {{\n        \
                 module.function(Self::ENTRY).map(|function| {n} {{ function }})\n    \
             }}\n\n    \
             /// Wraps a function handle. Its launches are checked against the handle's \
             parameter list, so a handle of another kernel fails to launch (unless its \
             parameter sizes happen to match: look it up with [`new`]({n}::new)).\n    \
             pub fn from_function(function: ::cuda_driver::Function) -> {n} {{\n        \
                 {n} {{ function }}\n    \
             }}\n\n    \
             /// The function handle, for attributes, occupancy, or untyped launches.\n    \
             pub fn function(&self) -> &::cuda_driver::Function {{\n        \
                 &self.function\n    \
             }}\n",
        sig = k.signature,
        entry = k.entry,
    );
    // The launch.
    let mut generics = Vec::new();
    let mut args = Vec::new();
    let mut tuple = Vec::new();
    let mut asserts = Vec::new();
    let mut docs = Vec::new();
    let mut contract = Vec::new();
    for (i, p) in k.params.iter().enumerate() {
        let name = &p.name;
        let (ty, pass, doc) = match &p.rust {
            ParamType::Value { rust, .. } => (
                absolute(rust),
                format!("&{name}"),
                format!("`{}`, by value", p.cpp),
            ),
            ParamType::Struct { cpp } => {
                let t = format!("T{i}");
                generics.push(format!("{t}: ::cuda_driver::DeviceRepr"));
                asserts.push(format!(
                    "        const {{\n            \
                         ::core::assert!(\n                \
                             ::core::mem::size_of::<{t}>() == {size} && ::core::mem::align_of::<{t}>() == {align},\n                \
                             \"{kname}: `{name}` must have the size ({size}) and alignment ({align}) of the C++ `{cpp}`\"\n            \
                         )\n        \
                     }};",
                    size = p.size,
                    align = p.align,
                    kname = k.rust_name,
                ));
                contract.push(format!(
                    "/// * `{t}` has the layout of the C++ `{cpp}` (its size and alignment are \
                     checked, its fields are not);"
                ));
                (
                    t,
                    format!("&{name}"),
                    format!(
                        "`{}` by value: a `#[repr(C)]` [`DeviceRepr`](::cuda_driver::DeviceRepr) \
                         of {} bytes, aligned to {}",
                        p.cpp, p.size, p.align
                    ),
                )
            }
            ParamType::Pointer {
                elem, cpp, mutable, ..
            } => {
                let e = match elem {
                    Some(e) => absolute(e),
                    None => {
                        let t = format!("T{i}");
                        generics.push(format!("{t}: ::cuda_driver::DeviceRepr"));
                        contract.push(format!("/// * `{t}` has the layout of the C++ `{cpp}`;"));
                        t
                    }
                };
                if *mutable {
                    (
                        format!("::cuda_driver::DeviceSliceMut<'_, {e}>"),
                        name.clone(),
                        format!("`{}`: the kernel may write it (a mutable view)", p.cpp),
                    )
                } else {
                    (
                        format!("::cuda_driver::DeviceSlice<'_, {e}>"),
                        name.clone(),
                        format!("`{}`: the kernel reads it (a shared view)", p.cpp),
                    )
                }
            }
            ParamType::Untyped => {
                let t = format!("T{i}");
                generics.push(format!("{t}: ::cuda_driver::launch::KernelArg"));
                asserts.push(format!(
                    "        const {{\n            \
                         ::core::assert!(\n                \
                             <{t} as ::cuda_driver::launch::KernelArg>::PARAM_SIZE == 8,\n                \
                             \"{kname}: `{name}` is pointer-sized: pass a view or a `&u64`\"\n            \
                         )\n        \
                     }};",
                    kname = k.rust_name,
                ));
                contract.push(format!(
                    "/// * `{name}` is what the kernel expects at `{}` (an untyped pointer-sized \
                     parameter: a view of the right element type, or a raw address);",
                    p.cpp
                ));
                (
                    t,
                    name.clone(),
                    format!(
                        "`{}`: pointer-sized, untyped (any view, or `&u64`); annotate the kernel \
                         with `Generator::signature` for a typed view",
                        p.cpp
                    ),
                )
            }
        };
        args.push(format!("{name}: {ty}"));
        tuple.push(pass);
        docs.push(format!("/// * `{name}`: {doc}"));
    }
    let generics = if generics.is_empty() {
        String::new()
    } else {
        format!("<{}>", generics.join(", "))
    };
    let tuple = match tuple.len() {
        0 => "()".to_string(),
        1 => format!("({},)", tuple[0]),
        _ => format!("({})", tuple.join(", ")),
    };
    let indent = |v: &[String]| v.iter().map(|l| format!("    {l}\n")).collect::<String>();
    let _ = write!(
        s,
        "    /// Launches `{sig}` on `stream` through the checked\n    \
         /// [`Function::launch`](::cuda_driver::Function::launch): the compiler checks the \
         argument types,\n    \
         /// the launch their count and sizes against the loaded kernel (so PTX that does not \
         match\n    \
         /// this code is an error, not undefined behaviour), and the stream order of the views.\n    \
         ///\n    \
         /// Arguments, in the kernel's order:\n\
         {docs}    \
         ///\n    \
         /// # Safety\n    \
         /// The types are enforced; what the kernel does with them is not:\n\
         {contract}    \
         /// * the kernel stays in bounds of the memory it is given, for this launch \
         configuration\n    \
         ///   (a view's length is not passed to it unless a parameter says so);\n    \
         /// * memory the kernel writes is not read or written by the host or other work \
         until it has\n    \
         ///   finished (synchronise the stream or order the work with events), nor memory it \
         reads\n    \
         ///   written meanwhile; the memory stays allocated until then;\n    \
         /// * the kernel's own requirements hold (dynamic shared memory, block shape, ...).\n    \
         #[inline]\n    \
         #[track_caller]\n    \
         #[allow(clippy::too_many_arguments)]\n    \
         pub unsafe fn launch{generics}(\n        \
             &self,\n        \
             stream: &::cuda_driver::Stream,\n        \
             cfg: &::cuda_driver::LaunchConfig,\n\
         {args}    \
         ) -> ::cuda_driver::Result<()> {{\n\
         {asserts}        \
             // SAFETY: the argument types are the kernel's parameter types (generated from \
         its\n        \
             // signature; count and sizes checked by the launch); the caller guarantees the \
         rest.\n        \
             unsafe {{ self.function.launch(stream, cfg, {tuple}) }}\n    \
         }}\n\
         }}\n\n",
        sig = k.signature,
        docs = indent(&docs),
        contract = indent(&contract),
        args = k
            .params
            .iter()
            .zip(&args)
            .map(|(_, a)| format!("        {a},\n"))
            .collect::<String>(),
        asserts = asserts
            .iter()
            .map(|a| format!("{a}\n"))
            .collect::<String>(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const VEC_ADD: &str = "
.visible .entry VecAdd(
	.param .u64 VecAdd_param_0,
	.param .u64 VecAdd_param_1,
	.param .u64 VecAdd_param_2,
	.param .u32 VecAdd_param_3
)
{
}
";

    /// Regression: a binary crate that `include!`s the launchers in a private module and uses
    /// some of them got `dead_code` warnings for the rest (`from_function`, `function`, the
    /// field `module`). Every generated item allows it (CI's consumer crate builds with
    /// `-D warnings`).
    #[test]
    fn every_generated_item_allows_dead_code() {
        let mut g = Generator::new();
        g.signature("VecAdd", "const float* A, const float* B, float* C, int N");
        let src = g
            .generate(VEC_ADD, Some(Path::new("/out/vector_add.ptx")))
            .unwrap();
        let lines: Vec<&str> = src.lines().collect();
        let items: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                l.starts_with("pub struct") || l.starts_with("impl") || l.starts_with("pub const")
            })
            .map(|(i, _)| i)
            .collect();
        assert_eq!(items.len(), 5, "{src}");
        for i in items {
            assert_eq!(lines[i - 1], "#[allow(dead_code)]", "{}", lines[i]);
        }
    }

    #[test]
    fn extern_c_kernels_are_typed_from_the_ptx() {
        let k = Generator::new().kernels(VEC_ADD).unwrap();
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].signature, "VecAdd(.u64, .u64, .u64, .u32)");
        let rust: Vec<_> = k[0].params.iter().map(|p| p.rust.clone()).collect();
        assert_eq!(
            rust,
            [
                ParamType::Untyped,
                ParamType::Untyped,
                ParamType::Untyped,
                ParamType::Value {
                    rust: "u32",
                    size: 4
                }
            ]
        );
    }

    #[test]
    fn annotations_type_extern_c_kernels() {
        let mut g = Generator::new();
        g.signature("VecAdd", "const float* A, const float* B, float* C, int N");
        let k = g.kernels(VEC_ADD).unwrap();
        let names: Vec<_> = k[0].params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "n"]);
        let src = g.generate(VEC_ADD, None).unwrap();
        assert!(
            src.contains("a: ::cuda_driver::DeviceSlice<'_, ::core::primitive::f32>"),
            "{src}"
        );
        assert!(
            src.contains("c: ::cuda_driver::DeviceSliceMut<'_, ::core::primitive::f32>"),
            "{src}"
        );
        assert!(src.contains("n: ::core::primitive::i32"), "{src}");
        assert!(src.contains("(a, b, c, &n)"), "{src}");
        // A stale annotation is an error naming the kernel.
        let mut g = Generator::new();
        g.signature("VecAdd", "const float* A, float* C, int N");
        let e = g.kernels(VEC_ADD).unwrap_err().to_string();
        assert!(
            e.contains("VecAdd") && e.contains("3 parameters in C++, 4"),
            "{e}"
        );
        let mut g = Generator::new();
        g.signature(
            "VecAdd",
            "const float* A, const float* B, float* C, double N",
        );
        let e = g.kernels(VEC_ADD).unwrap_err().to_string();
        assert!(e.contains("(`double`) has 8 bytes"), "{e}");
        let mut g = Generator::new();
        g.signature("VecSub", "int");
        assert!(matches!(
            g.kernels(VEC_ADD),
            Err(Error::UnknownKernel { .. })
        ));
    }

    const CPP: &str = "
.visible .entry _Z5scaleIfEvPT_S0_i(.param .u64 a, .param .f32 b, .param .u32 c) {}
.visible .entry _Z5scaleIdEvPT_S0_i(.param .u64 a, .param .f64 b, .param .u32 c) {}
.visible .entry _Z5apply6ParamsPf(.param .align 16 .b8 p[32], .param .u64 out) {}
";

    #[test]
    fn templates_get_one_handle_each() {
        let k = Generator::new().kernels(CPP).unwrap();
        let names: Vec<_> = k.iter().map(|k| k.rust_name.as_str()).collect();
        assert_eq!(names, ["ScaleF32", "ScaleF64", "Apply"]);
        assert_eq!(k[0].signature, "scale<float>(float*, float, int)");
        assert_eq!(
            k[2].params[0].rust,
            ParamType::Struct {
                cpp: "Params".into()
            }
        );
        assert_eq!((k[2].params[0].size, k[2].params[0].align), (32, 16));
        let src = Generator::new().generate(CPP, None).unwrap();
        assert!(
            src.contains("pub unsafe fn launch<T0: ::cuda_driver::DeviceRepr>"),
            "{src}"
        );
        assert!(src.contains("::core::mem::size_of::<T0>() == 32"), "{src}");
        assert!(src.contains("pub scale_f32: ScaleF32"), "{src}");
        // Renamed.
        let mut g = Generator::new();
        g.rename("scale<double>", "ScaleDouble");
        let k = g.kernels(CPP).unwrap();
        assert_eq!(k[1].rust_name, "ScaleDouble");
    }

    #[test]
    fn the_device_runtime_loader_links_before_it_loads() {
        let mut g = Generator::new();
        g.device_runtime(&[PathBuf::from("/toolkit/lib64/libcudadevrt.a")]);
        let src = g
            .generate(VEC_ADD, Some(Path::new("/out/graph_conditional.ptx")))
            .unwrap();
        assert!(
            src.contains("::cuda_driver::Module::load_with_device_runtime("),
            "{src}"
        );
        assert!(src.contains("\"graph_conditional.ptx\""), "{src}");
        assert!(
            src.contains("::std::path::Path::new(\"/toolkit/lib64/libcudadevrt.a\")"),
            "{src}"
        );
        assert!(!src.contains("Module::load_data(ctx, PTX)"), "{src}");
        // Without a hint: the run-time search alone.
        let mut g = Generator::new();
        g.device_runtime(&[]);
        let src = g.generate(VEC_ADD, Some(Path::new("/out/k.ptx"))).unwrap();
        assert!(src.contains("&[],"), "{src}");
        // Kept through a build's per-file restriction.
        let (r, _) = g.restricted_to(VEC_ADD).unwrap();
        assert!(r
            .generate(VEC_ADD, Some(Path::new("/out/k.ptx")))
            .unwrap()
            .contains("load_with_device_runtime"));
        // The plain loader otherwise.
        let src = Generator::new()
            .generate(VEC_ADD, Some(Path::new("/out/k.ptx")))
            .unwrap();
        assert!(src.contains("Module::load_data(ctx, PTX)"), "{src}");
    }

    #[test]
    fn overloads_collisions_and_unsupported_types_are_errors() {
        let overloads = "
.visible .entry _Z3fooPf(.param .u64 a) {}
.visible .entry _Z3fooPi(.param .u64 a) {}
";
        let e = Generator::new().kernels(overloads).unwrap_err().to_string();
        assert!(e.contains("`foo` is overloaded"), "{e}");
        assert!(e.contains("foo(float*)") && e.contains("foo(int*)"), "{e}");
        let mut g = Generator::new();
        g.rename("_Z3fooPi", "FooI32");
        assert_eq!(g.kernels(overloads).unwrap()[0].rust_name, "Foo");

        let collision = "
.visible .entry fill_u32(.param .u64 a) {}
.visible .entry FillU32(.param .u64 a) {}
";
        let e = Generator::new().kernels(collision).unwrap_err().to_string();
        assert!(e.contains("`FillU32`") && e.contains("fill_u32"), "{e}");

        let unsupported = ".visible .entry _Z3barPPfb(.param .u64 a, .param .u8 b) {}";
        let e = Generator::new()
            .kernels(unsupported)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bar(float**, bool)") && e.contains("float**"),
            "{e}"
        );
    }

    #[test]
    fn no_parameters_and_the_loader() {
        let src = Generator::new()
            .generate(
                ".visible .entry empty()\n{\n}\n",
                Some(Path::new("/x/bench.ptx")),
            )
            .unwrap();
        assert!(
            src.contains("self.function.launch(stream, cfg, ())"),
            "{src}"
        );
        assert!(src.contains("include_str!(\"/x/bench.ptx\")"), "{src}");
        assert!(
            src.contains("pub fn load(ctx: &::cuda_driver::Context)"),
            "{src}"
        );
    }

    /// The paths of generated source that a user's scope could change, where the source is
    /// `include!`d: a macro called by a path that does not start with `::` (`assert!`,
    /// `concat!`), or such a path that starts with a name of std's prelude, `core`, `std` or
    /// a primitive type (`Ok`, `Clone`, `core::mem::size_of`, `str`). Comments and string
    /// literals are skipped.
    fn relative_paths(src: &str) -> Vec<String> {
        #[rustfmt::skip]
        const PRELUDE: &[&str] = &[
            "core", "std", "alloc", "Option", "Some", "None", "Result", "Ok", "Err", "Vec",
            "String", "Box", "ToString", "ToOwned", "Clone", "Copy", "Send", "Sync", "Sized",
            "Unpin", "Drop", "Fn", "FnMut", "FnOnce", "Default", "Into", "From", "TryInto",
            "TryFrom", "AsRef", "AsMut", "Iterator", "IntoIterator", "Extend", "PartialEq",
            "Eq", "PartialOrd", "Ord", "drop", "size_of", "align_of",
            "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16",
            "i32", "i64", "i128", "isize", "f32", "f64",
        ];
        // Tokens: identifiers, `::`, and single other characters.
        let mut tokens: Vec<String> = Vec::new();
        let b = src.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if src[i..].starts_with("//") {
                i += src[i..].find('\n').unwrap_or(src.len() - i);
            } else if c == b'"' {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                tokens.push("\"..\"".into());
                i += 1;
            } else if c == b'\'' {
                // A lifetime (`'_`, `'static`): skipped with its name.
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            } else if c.is_ascii_alphabetic() || c == b'_' {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                tokens.push(src[start..i].into());
            } else if src[i..].starts_with("::") {
                tokens.push("::".into());
                i += 2;
            } else {
                if !c.is_ascii_whitespace() {
                    tokens.push((c as char).into());
                }
                i += 1;
            }
        }
        let ident = |t: &str| t.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic());
        let mut found = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            // The last segment of a path: `name` in `a::b::name`.
            if !ident(t) || tokens.get(i + 1).is_some_and(|n| n == "::") {
                continue;
            }
            let mut start = i;
            while start >= 2 && tokens[start - 1] == "::" && ident(&tokens[start - 2]) {
                start -= 2;
            }
            let absolute = start >= 1 && tokens[start - 1] == "::";
            let is_macro = tokens.get(i + 1).is_some_and(|n| n == "!")
                && tokens.get(i + 2).is_none_or(|n| n != "=");
            if !absolute && (is_macro || PRELUDE.contains(&tokens[start].as_str())) {
                found.push(tokens[start..=i].concat());
            }
        }
        found
    }

    #[test]
    fn the_checker_finds_relative_paths() {
        let src = "/// `Ok` in docs, `assert!` in a comment\n\
                   const X: &'static str = \"assert!(Ok)\";\n\
                   fn f<'a>() -> Result<(), ()> { assert!(a != b); core::mem::drop(1); \
                   ::core::assert!(true); Ok(()) }\n\
                   #[derive(Clone)] struct S(::core::primitive::u32, u8);";
        assert_eq!(
            relative_paths(src),
            [
                "str",
                "Result",
                "assert",
                "core::mem::drop",
                "Ok",
                "Clone",
                "u8"
            ]
        );
    }

    /// Generated source is `include!`d in the user's module, whose names it must not pick up:
    /// every path in it is absolute (`::core::assert!`, `::core::result::Result::Ok`).
    #[test]
    fn generated_source_names_everything_by_its_full_path() {
        let mut annotated = Generator::new();
        annotated.signature("VecAdd", "const float* A, const float* B, float* C, int N");
        let plain = Generator::new();
        let untyped =
            ".visible .entry raw(.param .u64 p, .param .f32 x, .param .align 8 .b8 s[16])\n{\n}\n";
        for (g, ptx, file) in [
            (&annotated, VEC_ADD, Some(Path::new("/x/vec_add.ptx"))),
            (&annotated, VEC_ADD, None),
            (&plain, VEC_ADD, None),
            (&plain, CPP, Some(Path::new("/x/cpp.ptx"))),
            (&plain, untyped, Some(Path::new("/x/raw.ptx"))),
            (&plain, ".visible .entry empty()\n{\n}\n", None),
        ] {
            let src = g.generate(ptx, file).unwrap();
            assert_eq!(relative_paths(&src), Vec::<String>::new(), "{src}");
        }
        // The checks are there, by their full paths.
        for ptx in [CPP, untyped] {
            let src = plain.generate(ptx, None).unwrap();
            assert!(src.contains("::core::assert!("), "{src}");
        }
    }
}
