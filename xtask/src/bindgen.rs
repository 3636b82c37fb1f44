//! `cargo xtask bindgen [--check]`: generates `cuda-driver-sys/src/bindings.rs` and the stub
//! library source `cuda-driver-sys/stub/cuda_stub.c` from `cuda.h` and `cudaTypedefs.h` (with
//! the profiler control of `cudaProfiler.h` and `cudaProfilerTypedefs.h`, whose functions
//! libcuda exports too: see [`util::API_HEADERS`]), and
//! from them the safe crate's types for cuda.h's enums and flags (`cuda-driver/src/types.rs`,
//! see [`safe_types`]), its entry point markers (`cuda-driver/src/entry_point/pfn.rs`), and the
//! reference table of `#[wraps(..)]` (`cuda-driver-macros/src/names.rs`, see [`wraps_table`]).
//!
//! cuda.h renames most of its functions with the preprocessor (`#define cuMemAlloc
//! cuMemAlloc_v2`), and more of them when `CUDA_API_PER_THREAD_DEFAULT_STREAM` is defined
//! (`cuLaunchKernel` -> `cuLaunchKernel_ptsz`). bindgen only sees the expanded names, so the
//! header is read three times:
//!
//! 1. as an application sees it: every declared symbol, all types, constants and `PFN_*`s;
//! 2. with `CUDA_API_PER_THREAD_DEFAULT_STREAM`: the `_ptds`/`_ptsz` symbols;
//! 3. with `__CUDA_API_VERSION_INTERNAL`: the older versioned symbols the header keeps
//!    (`cuCtxCreate_v2`, `cuCtxCreate_v3`). Unversioned names declared there are the legacy
//!    32-bit ABI and are not exposed under those names.
//!
//! The C preprocessor itself then tells, for every name, which symbol the header maps it to in
//! each mode, so the name C code writes (`cuMemAlloc`) is declared with `#[link_name]` of the
//! symbol it means (`cuMemAlloc_v2`), and, under the `per-thread-default-stream` feature, of
//! the per-thread symbol. Nothing is hand-listed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::{ForeignItem, ForeignItemFn, Item};

use crate::util;

mod header;
mod safe_types;
mod wraps_table;

/// The cuda.h these bindings mirror.
const CUDA_VERSION: u32 = 13000;
const FEATURE: &str = "per-thread-default-stream";

/// Per-thread targets that cuda.h defines as `static inline` functions rather than driver
/// symbols. `cuda-driver-sys/src/lib.rs` ports each of them to Rust; the generator fails when
/// the header grows a new one, so that it gets ported too.
const INLINE_PTDS: &[&str] = &["cuGetProcAddress_v2_ptsz"];

pub fn run(args: &[String]) -> Result<(), String> {
    let mut check = false;
    for a in args {
        match a.as_str() {
            "--check" => check = true,
            other => return Err(format!("unknown option `{other}` (expected --check)")),
        }
    }
    let inc = util::cuda_include_dir()?;
    let cuda_h = std::fs::read_to_string(inc.join("cuda.h"))
        .map_err(|e| format!("cannot read cuda.h: {e}"))?;
    let version = regex::Regex::new(r"(?m)^#define\s+CUDA_VERSION\s+(\d+)")
        .unwrap()
        .captures(&cuda_h)
        .and_then(|c| c[1].parse::<u32>().ok())
        .ok_or("cuda.h has no CUDA_VERSION")?;
    if version != CUDA_VERSION {
        return Err(format!(
            "{} is CUDA_VERSION {version}; the bindings mirror {CUDA_VERSION} (install the pinned 13.0 toolkit)",
            inc.join("cuda.h").display()
        ));
    }
    eprintln!("xtask bindgen: reading {}", inc.display());
    // cuda.h and cudaProfiler.h: their doxygen groups, enums and `#define`s.
    let api_h = util::read_headers(&inc, util::API_HEADERS)?;

    let normal = parse(&bindgen_pass(&inc, &[])?)?;
    let ptds = parse(&bindgen_pass(
        &inc,
        &["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"],
    )?)?;
    let internal = parse(&bindgen_pass(&inc, &["-D__CUDA_API_VERSION_INTERNAL"])?)?;

    let gen = Generated::new(&inc, &cuda_h, &api_h, normal, ptds, internal)?;
    let root = util::root();
    util::write_or_check(
        &root.join("cuda-driver-sys/src/bindings.rs"),
        &gen.bindings,
        check,
        util::exact,
    )?;
    util::write_or_check(
        &root.join("cuda-driver-sys/src/dynamic/functions.rs"),
        &crate::dynload::generate(&gen.bindings)?,
        check,
        util::exact,
    )?;
    util::write_or_check(
        &root.join("cuda-driver-sys/stub/cuda_stub.c"),
        &gen.stub,
        check,
        util::exact,
    )?;
    util::write_or_check(
        &root.join("cuda-driver/src/types.rs"),
        &gen.safe_types,
        check,
        util::exact,
    )?;
    util::write_or_check(
        &root.join("cuda-driver-macros/src/names.rs"),
        &gen.wraps_table,
        check,
        util::exact,
    )?;
    util::write_or_check(
        &root.join("cuda-driver/src/entry_point/pfn.rs"),
        &gen.entry_points,
        check,
        util::exact,
    )?;
    crate::nccl::run(check)
}

/// `#include`s of every header the bindings mirror, as C code would write them.
fn includes() -> String {
    util::API_HEADERS
        .iter()
        .chain(util::TYPEDEF_HEADERS)
        .map(|h| format!("#include <{h}>\n"))
        .collect()
}

fn bindgen_pass(inc: &Path, defines: &[&str]) -> Result<String, String> {
    let mut b = bindgen::Builder::default()
        .header_contents("cuda_driver_sys.h", &includes())
        .clang_arg(format!("-I{}", inc.display()))
        .clang_args(defines.iter().copied());
    for h in util::API_HEADERS.iter().chain(util::TYPEDEF_HEADERS) {
        b = b.allowlist_file(format!(r".*[/\\]{}", regex::escape(h)));
    }
    let b = b
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(true)
        .generate_comments(true)
        .use_core()
        .ctypes_prefix("::core::ffi")
        .formatter(bindgen::Formatter::None);
    let out = b
        .generate()
        .map_err(|e| format!("bindgen failed on cuda.h (defines {defines:?}): {e}"))?;
    Ok(out.to_string())
}

fn parse(src: &str) -> Result<syn::File, String> {
    syn::parse_file(src).map_err(|e| format!("cannot parse bindgen output: {e}"))
}

fn foreign_fns(file: &syn::File) -> BTreeMap<String, ForeignItemFn> {
    let mut out = BTreeMap::new();
    for item in &file.items {
        if let Item::ForeignMod(m) = item {
            for fi in &m.items {
                if let ForeignItem::Fn(f) = fi {
                    out.insert(f.sig.ident.to_string(), f.clone());
                }
            }
        }
    }
    out
}

/// The name an item defines, for the items whose names can collide.
fn item_name(item: &Item) -> Option<String> {
    match item {
        Item::Struct(s) => Some(s.ident.to_string()),
        Item::Union(u) => Some(u.ident.to_string()),
        Item::Type(t) => Some(t.ident.to_string()),
        Item::Enum(e) => Some(e.ident.to_string()),
        Item::Const(c) if c.ident != "_" => Some(c.ident.to_string()),
        Item::Use(u) => match &u.tree {
            syn::UseTree::Path(p) => match &*p.tree {
                syn::UseTree::Rename(r) => Some(r.rename.to_string()),
                syn::UseTree::Name(n) => Some(n.ident.to_string()),
                _ => None,
            },
            _ => None,
        },
        Item::Impl(_) => None,
        _ => None,
    }
}

/// `cuFoo_v2_ptsz` -> `cuFoo`; the name C code writes for a versioned symbol.
fn base_name(name: &str) -> String {
    let re = regex::Regex::new(r"(_v\d+)?(_ptds|_ptsz)?$").unwrap();
    re.replace(name, "").into_owned()
}

fn is_versioned(name: &str) -> bool {
    regex::Regex::new(r"(_v\d+|_ptds|_ptsz)$")
        .unwrap()
        .is_match(name)
}

/// Expands every name with the C preprocessor, as C code including cuda.h would see it.
fn expand(
    inc: &Path,
    names: &BTreeSet<String>,
    defines: &[&str],
) -> Result<HashMap<String, String>, String> {
    let dir = std::env::temp_dir().join(format!("xtask-bindgen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let file = dir.join("expand.c");
    let mut src = includes();
    for n in names {
        src.push_str(&format!("xtask_map \"{n}\" {n}\n"));
    }
    std::fs::write(&file, src).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = util::run_capture(
        Command::new(&cc)
            .arg("-E")
            .arg("-P")
            .arg(format!("-I{}", inc.display()))
            .args(defines)
            .arg(&file),
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    let mut map = HashMap::new();
    for line in out.lines() {
        if let Some(rest) = line.trim().strip_prefix("xtask_map \"") {
            let (name, exp) = rest
                .split_once('"')
                .ok_or("malformed preprocessor output")?;
            map.insert(name.to_string(), exp.trim().to_string());
        }
    }
    for n in names {
        if !map.contains_key(n) {
            return Err(format!("the preprocessor dropped `{n}`"));
        }
    }
    Ok(map)
}

struct Generated {
    bindings: String,
    stub: String,
    safe_types: String,
    entry_points: String,
    wraps_table: String,
}

impl Generated {
    /// `cuda_h`: cuda.h; `api_h`: cuda.h and cudaProfiler.h (see [`util::API_HEADERS`]).
    fn new(
        inc: &Path,
        cuda_h: &str,
        api_h: &str,
        normal: syn::File,
        ptds: syn::File,
        internal: syn::File,
    ) -> Result<Self, String> {
        let a = foreign_fns(&normal);
        let p = foreign_fns(&ptds);
        let i = foreign_fns(&internal);

        // Every symbol under its own name.
        let mut decl: BTreeMap<String, ForeignItemFn> = a.clone();
        for (n, f) in &p {
            if n.ends_with("_ptds") || n.ends_with("_ptsz") {
                decl.entry(n.clone()).or_insert_with(|| f.clone());
            }
        }
        let mut legacy_versioned = BTreeSet::new();
        for (n, f) in &i {
            if is_versioned(n) && !decl.contains_key(n) {
                legacy_versioned.insert(n.clone());
                decl.insert(n.clone(), f.clone());
            }
        }

        // What the header maps each name to, in both modes.
        let mut names: BTreeSet<String> = decl.keys().cloned().collect();
        names.extend(decl.keys().map(|n| base_name(n)));
        let norm_map = expand(inc, &names, &[])?;
        let ptds_map = expand(inc, &names, &["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"])?;

        struct Fn {
            sig: ForeignItemFn,
            link: String,
            link_ptds: String,
            alias: bool,
            /// The per-thread target is a `static inline` of the header, ported in lib.rs.
            inline_ptds: bool,
        }
        let mut fns: BTreeMap<String, Fn> = BTreeMap::new();
        for n in &names {
            let e = &norm_map[n];
            let e2 = &ptds_map[n];
            let (sig, alias) = if let Some(f) = decl.get(n) {
                (f.clone(), false)
            } else if e == n && e2 == n {
                continue; // a legacy name the public header does not declare
            } else {
                let f = decl
                    .get(e)
                    .ok_or_else(|| format!("`{n}` expands to `{e}`, which bindgen did not see"))?;
                (f.clone(), true)
            };
            let inline_ptds = INLINE_PTDS.contains(&e2.as_str());
            if e2 != e && !inline_ptds {
                let f2 = decl.get(e2).ok_or_else(|| {
                    format!("`{n}` expands to `{e2}` per thread, which bindgen did not see")
                })?;
                if signature(f2) != signature(&sig) {
                    return Err(format!("`{n}`: `{e}` and `{e2}` have different signatures"));
                }
            }
            if let Some(ret) = ret_type(&sig) {
                if ret != "CUresult" {
                    return Err(format!("`{n}` returns `{ret}`; the stub assumes CUresult"));
                }
            }
            fns.insert(
                n.clone(),
                Fn {
                    sig,
                    link: e.clone(),
                    link_ptds: e2.clone(),
                    alias,
                    inline_ptds,
                },
            );
        }

        // Emit the function declarations.
        let mut fn_tokens = TokenStream::new();
        let mut symbols = BTreeSet::new();
        for (n, f) in &fns {
            let mut sig = f.sig.clone();
            sig.sig.ident = format_ident!("{}", n);
            if f.alias {
                sig.attrs.retain(|a| !a.path().is_ident("link_name"));
                let doc = if f.link_ptds != f.link {
                    format!(
                        " `{n}` as cuda.h spells it: the symbol `{}` (`{}` with the `{FEATURE}` feature).",
                        f.link, f.link_ptds
                    )
                } else {
                    format!(" `{n}` as cuda.h spells it: the symbol `{}`.", f.link)
                };
                sig.attrs.retain(|a| !a.path().is_ident("doc"));
                sig.attrs.insert(0, syn::parse_quote!(#[doc = #doc]));
            } else if legacy_versioned.contains(n) {
                let doc = format!(
                    " Older ABI of `{}`, declared by cuda.h's versioning section for code written against older headers.",
                    base_name(n)
                );
                sig.attrs.insert(0, syn::parse_quote!(#[doc = #doc]));
            }
            let link = &f.link;
            let link_ptds = &f.link_ptds;
            let link_attr = if f.inline_ptds {
                // With the feature, lib.rs defines this name as the port of the header's inline.
                quote! {
                    #[cfg(not(feature = #FEATURE))]
                    #[link_name = #link]
                }
            } else if link_ptds != link {
                quote! {
                    #[cfg_attr(not(feature = #FEATURE), link_name = #link)]
                    #[cfg_attr(feature = #FEATURE, link_name = #link_ptds)]
                }
            } else if link != n {
                quote! { #[link_name = #link] }
            } else {
                quote! {}
            };
            symbols.insert(link.clone());
            if !f.inline_ptds {
                symbols.insert(link_ptds.clone());
            }
            let attrs = &sig.attrs;
            let vis = &sig.vis;
            let s = &sig.sig;
            fn_tokens.extend(quote! { #(#attrs)* #link_attr #vis #s; });
        }

        // Types and constants: everything of the application's view but its functions, plus the
        // types the older versioned functions need.
        let mut items: Vec<Item> = Vec::new();
        let mut defined: BTreeSet<String> = BTreeSet::new();
        for item in &normal.items {
            if matches!(item, Item::ForeignMod(_)) {
                continue;
            }
            if let Some(n) = item_name(item) {
                defined.insert(n);
            }
            items.push(item.clone());
        }
        let mut legacy_types = BTreeSet::new();
        for item in &internal.items {
            if let Some(n) = item_name(item) {
                if !defined.contains(&n) && !matches!(item, Item::Const(_)) {
                    legacy_types.insert(n.clone());
                    defined.insert(n);
                    items.push(item.clone());
                }
            }
        }
        for item in &internal.items {
            match item {
                Item::Impl(imp) => {
                    let ty = imp.self_ty.to_token_stream().to_string();
                    if legacy_types.contains(&ty) {
                        items.push(item.clone());
                    }
                }
                Item::Const(c) if c.ident == "_" => {
                    let toks = c.to_token_stream().to_string();
                    if legacy_types
                        .iter()
                        .any(|t| toks.contains(&format!("size_of :: < {t} >")))
                    {
                        items.push(item.clone());
                    }
                }
                _ => {}
            }
        }
        retype_enum_constants(&mut items);
        let stub_code = stub_library_code(&items)?;
        items.extend(pointer_defines(api_h, &items)?);

        let file: syn::File = syn::parse2(quote! {
            #(#items)*
            #[cfg(not(cuda_dynamic_loading))] // see dynload.rs
            unsafe extern "C" { #fn_tokens }
        })
        .map_err(|e| format!("generated code does not parse: {e}"))?;
        let bindgen_version = util::locked_version("bindgen").unwrap_or_else(|| "unknown".into());
        let header = format!(
            "// Generated by `cargo xtask bindgen` from cuda.h, cudaProfiler.h, cudaTypedefs.h and\n\
             // cudaProfilerTypedefs.h of CUDA 13.0 (CUDA_VERSION {CUDA_VERSION}) with bindgen {bindgen_version}.\n\
             // Do not edit by hand: regenerate with `cargo xtask bindgen`; CI runs `cargo xtask bindgen --check`.\n\n"
        );
        let bindings = header + &prettyplease::unparse(&file);

        let mut stub = format!(
            "/* Generated by `cargo xtask bindgen` from cuda.h and cudaProfiler.h of CUDA 13.0 (CUDA_VERSION {CUDA_VERSION}).\n\
             * Do not edit by hand.\n\
             *\n\
             * A stand-in for libcuda.so.1 on machines without the NVIDIA driver: it exports every\n\
             * symbol cuda-driver-sys links to, and each returns CUDA_ERROR_STUB_LIBRARY. build.rs\n\
             * compiles it only when no libcuda is found. */\n\n\
             #define CUDA_DRIVER_SYS_STUB(name) int name(void) {{ return {stub_code}; }}\n\n"
        );
        for s in &symbols {
            stub.push_str(&format!("CUDA_DRIVER_SYS_STUB({s})\n"));
        }
        let header = header::Header::parse(api_h)?;
        // The safe crate's types are cuda.h's: the one enum of cudaProfiler.h (`CUoutput_mode`)
        // is an argument of the deprecated `cuProfilerInitialize` only, which has returned
        // CUDA_ERROR_NOT_SUPPORTED since CUDA 12.0.
        let safe_types = safe_types::generate(&items, &header::Header::parse(cuda_h)?)?;
        let entry_points = entry_point_markers(&items, &normal)?;
        let links: BTreeMap<String, Vec<String>> = fns
            .iter()
            .map(|(n, f)| {
                let mut links: Vec<String> = Vec::new();
                for l in [&f.link, &f.link_ptds] {
                    if l != n && !links.contains(l) {
                        links.push(l.clone());
                    }
                }
                (n.clone(), links)
            })
            .collect();
        let wraps_table = wraps_table::generate(&header, &links)?;
        Ok(Generated {
            bindings,
            stub,
            safe_types,
            entry_points,
            wraps_table,
        })
    }
}

fn signature(f: &ForeignItemFn) -> String {
    let inputs = &f.sig.inputs;
    let output = &f.sig.output;
    quote!(#inputs #output).to_string()
}

fn ret_type(f: &ForeignItemFn) -> Option<String> {
    match &f.sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, t) => Some(t.to_token_stream().to_string()),
    }
}

/// bindgen types each enumerator by the enum's tag (`cudaError_enum`); C code uses the
/// typedef (`CUresult`). Both are aliases of one integer type; use the typedef.
fn retype_enum_constants(items: &mut [Item]) {
    let mut alias: HashMap<String, String> = HashMap::new();
    for item in items.iter() {
        match item {
            Item::Use(u) => {
                if let syn::UseTree::Path(p) = &u.tree {
                    if let syn::UseTree::Rename(r) = &*p.tree {
                        alias
                            .entry(r.ident.to_string())
                            .or_insert_with(|| r.rename.to_string());
                    }
                }
            }
            Item::Type(t) => {
                if let syn::Type::Path(tp) = &*t.ty {
                    if let Some(id) = tp.path.get_ident() {
                        alias
                            .entry(id.to_string())
                            .or_insert_with(|| t.ident.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    for item in items.iter_mut() {
        if let Item::Const(c) = item {
            if let syn::Type::Path(tp) = &*c.ty {
                if let Some(id) = tp.path.get_ident() {
                    let id = id.to_string();
                    if id.ends_with("_enum") {
                        if let Some(to) = alias.get(&id) {
                            let to = format_ident!("{}", to);
                            *c.ty = syn::parse_quote!(#to);
                        }
                    }
                }
            }
        }
    }
}

fn stub_library_code(items: &[Item]) -> Result<String, String> {
    for item in items {
        if let Item::Const(c) = item {
            if c.ident == "CUDA_ERROR_STUB_LIBRARY" {
                return Ok(c.expr.to_token_stream().to_string());
            }
        }
    }
    Err("cuda.h defines no CUDA_ERROR_STUB_LIBRARY".into())
}

/// The `#define NAME ((TYPE)VALUE)` constants bindgen skips (`CU_LAUNCH_PARAM_END`,
/// `CU_STREAM_LEGACY`, `CU_DEVICE_CPU`, ...).
fn pointer_defines(cuda_h: &str, items: &[Item]) -> Result<Vec<Item>, String> {
    let mut defined = BTreeSet::new();
    let mut pointer_aliases = BTreeSet::new();
    for item in items {
        if let Some(n) = item_name(item) {
            defined.insert(n);
        }
        if let Item::Type(t) = item {
            if matches!(&*t.ty, syn::Type::Ptr(_)) {
                pointer_aliases.insert(t.ident.to_string());
            }
        }
    }
    let re =
        regex::Regex::new(r"(?m)^#define\s+(\w+)\s+\(\(\s*(\w+)\s*(\*?)\s*\)\s*(-?\w+)\s*\)\s*$")
            .unwrap();
    let mut out = Vec::new();
    for c in re.captures_iter(cuda_h) {
        let (name, ty, star, value) = (&c[1], &c[2], !c[3].is_empty(), &c[4]);
        if defined.contains(name) {
            continue;
        }
        let doc = format!(
            " `#define {name} (({ty}{}){value})` of cuda.h.",
            if star { "*" } else { "" }
        );
        let name_id = format_ident!("{}", name);
        let value_expr: syn::Expr = syn::parse_str(value).map_err(|e| format!("{name}: {e}"))?;
        let item: Item = if star {
            if ty != "void" {
                return Err(format!("{name}: unexpected pointer type {ty}*"));
            }
            syn::parse_quote! {
                #[doc = #doc]
                pub const #name_id: *mut ::core::ffi::c_void = (#value_expr) as usize as *mut ::core::ffi::c_void;
            }
        } else {
            let ty_id = format_ident!("{}", ty);
            if pointer_aliases.contains(ty) {
                syn::parse_quote! {
                    #[doc = #doc]
                    pub const #name_id: #ty_id = (#value_expr) as usize as #ty_id;
                }
            } else {
                syn::parse_quote! {
                    #[doc = #doc]
                    pub const #name_id: #ty_id = (#value_expr) as #ty_id;
                }
            }
        };
        out.push(item);
    }
    Ok(out)
}

/// `cuda-driver/src/entry_point/pfn.rs`: one marker type per `PFN_*` typedef of cudaTypedefs.h
/// (those of the versioning section too), tying the function pointer type to the symbol,
/// CUDA version and stream flavour it is the type of, so that `entry_point::get` is safe.
///
/// `PFN_cuLaunchKernel_v7000_ptsz` becomes the line
/// `cuLaunchKernel_v7000_ptsz = PFN_cuLaunchKernel_v7000_ptsz("cuLaunchKernel", 7000, PER_THREAD_DEFAULT_STREAM);`
/// of an `entry_points!` invocation (the macro lives in `entry_point.rs`); the unversioned
/// name of each function cuda.h still declares (`cuLaunchKernel`) is an alias of its newest
/// legacy-stream marker, like the unversioned `PFN_*` of older cudaTypedefs.h.
fn entry_point_markers(items: &[Item], current: &syn::File) -> Result<String, String> {
    let re = regex::Regex::new(r"^PFN_(cu[A-Za-z0-9]+)_v(\d+)(_ptds|_ptsz)?$").unwrap();
    let split = |name: &str| -> Result<(String, u32, bool), String> {
        let c = re.captures(name).ok_or_else(|| {
            format!("`{name}`: not of the form PFN_<symbol>_v<version>[_ptds|_ptsz]")
        })?;
        let version = c[2]
            .parse::<u32>()
            .map_err(|e| format!("`{name}`: version: {e}"))?;
        Ok((c[1].to_string(), version, c.get(3).is_some()))
    };
    let pfn_names = |items: &[Item]| -> Vec<String> {
        items
            .iter()
            .filter_map(|item| match item {
                Item::Type(t) if t.ident.to_string().starts_with("PFN_") => {
                    Some(t.ident.to_string())
                }
                _ => None,
            })
            .collect()
    };
    // (symbol, version, per-thread) -> PFN name, in that order.
    let mut all: BTreeMap<(String, u32, bool), String> = BTreeMap::new();
    for name in pfn_names(items) {
        let key = split(&name)?;
        if let Some(old) = all.insert(key, name.clone()) {
            return Err(format!(
                "`{old}` and `{name}` name the same symbol and version"
            ));
        }
    }
    if all.is_empty() {
        return Err("cudaTypedefs.h defines no PFN_* typedefs".into());
    }
    // The newest legacy-stream version of each symbol outside the versioning section.
    let mut newest: BTreeMap<String, u32> = BTreeMap::new();
    for name in pfn_names(&current.items) {
        let (symbol, version, per_thread) = split(&name)?;
        if !per_thread {
            let v = newest.entry(symbol).or_insert(version);
            *v = (*v).max(version);
        }
    }

    let mut out = format!(
        "// Generated by `cargo xtask bindgen` from cudaTypedefs.h and cudaProfilerTypedefs.h of CUDA 13.0\n\
         // (CUDA_VERSION {CUDA_VERSION}).\n\
         // Do not edit by hand: regenerate with `cargo xtask bindgen`.\n\n\
         //! One marker type per `PFN_*` typedef of cudaTypedefs.h, for [`get`](super::get) and\n\
         //! [`Lazy`](super::Lazy): `cuStreamBeginCapture_v10010` is `cuStreamBeginCapture` at CUDA 10.1\n\
         //! (the `cuStreamBeginCapture_v2` ABI), `cuLaunchKernel_v7000_ptsz` the per-thread default\n\
         //! stream flavour of `cuLaunchKernel`. The unversioned names (`cuStreamBeginCapture`) are\n\
         //! aliases of the newest legacy-stream marker cuda.h 13.0 declares, like the unversioned\n\
         //! `PFN_*` of older headers.\n\n\
         #![allow(non_camel_case_types)]\n\n\
         entry_points! {{\n"
    );
    for ((symbol, version, per_thread), name) in &all {
        let marker = name.strip_prefix("PFN_").unwrap();
        let flags = if *per_thread {
            "PER_THREAD_DEFAULT_STREAM"
        } else {
            "LEGACY_STREAM"
        };
        out.push_str(&format!(
            "    {marker} = {name}(\"{symbol}\", {version}, {flags});\n"
        ));
    }
    out.push_str("}\n\nlatest_entry_points! {\n");
    for (symbol, version) in &newest {
        out.push_str(&format!("    {symbol} = {symbol}_v{version};\n"));
    }
    out.push_str("}\n");
    Ok(out)
}
