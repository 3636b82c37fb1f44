//! `cargo xtask bindgen-rtc [--check]`: generates the raw bindings of `cuda-driver-rtc`,
//! `cuda-driver-rtc/src/sys/nvrtc.rs` from `nvrtc.h` and `cuda-driver-rtc/src/sys/nvjitlink.rs`
//! from `nvJitLink.h`, of the pinned wheels [`NVRTC_WHEEL`] and [`NVJITLINK_WHEEL`] (installed
//! into `.venv` by `.ci/run`).
//!
//! Both libraries are opened at run time, so bindgen writes each header's functions as the
//! fields of one struct (`Nvrtc`, `NvJitLink`) that `libloading` fills when the library is
//! opened; every symbol must be there (a library that lacks one is refused when opened, not
//! when the function is called). Names are the headers' own.
//!
//! `nvJitLink.h` declares versioned symbols (`__nvJitLinkCreate_13_0`) and `static inline`
//! functions under the names C code calls (`nvJitLinkCreate`) that forward to them. The header
//! is read with `NVJITLINK_NO_INLINE` (the versioned symbols only), and each `static inline` is
//! ported as a method of the same name and signature that calls its symbol, so C code ports
//! line by line. Nothing is hand-listed: a versioned symbol `__<name>_<major>_<minor>` gets the
//! method `<name>`, and the generator fails when the header's inline functions and the
//! versioned symbols do not pair up.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;
use syn::{Attribute, Expr, Fields, Item, Lit};

use crate::util;

/// The wheel whose `nvrtc.h` the bindings mirror (also pinned in `.ci/run`).
pub const NVRTC_WHEEL: (&str, &str) = ("nvidia-cuda-nvrtc", "13.0.88");
/// The wheel whose `nvJitLink.h` the bindings mirror (also pinned in `.ci/run`).
pub const NVJITLINK_WHEEL: (&str, &str) = ("nvidia-nvjitlink", "13.0.88");

pub fn run(args: &[String]) -> Result<(), String> {
    let mut check = false;
    for a in args {
        match a.as_str() {
            "--check" => check = true,
            other => return Err(format!("unknown option `{other}` (expected --check)")),
        }
    }
    let inc = include_dir()?;
    eprintln!("xtask bindgen-rtc: reading {}", inc.display());
    let bindgen_version = util::locked_version("bindgen").unwrap_or_else(|| "unknown".into());
    let root = util::root();

    let nvrtc = generate(
        &inc,
        "nvrtc.h",
        "Nvrtc",
        &[],
        NVRTC_WHEEL,
        &bindgen_version,
        "NVRTC, the CUDA runtime compiler (`libnvrtc.so.13`, `nvrtc64_130_0.dll`)",
    )?;
    util::write_or_check(
        &root.join("cuda-driver-rtc/src/sys/nvrtc.rs"),
        &nvrtc,
        check,
        util::exact,
    )?;
    let nvjitlink = generate(
        &inc,
        "nvJitLink.h",
        "NvJitLink",
        &["-DNVJITLINK_NO_INLINE"],
        NVJITLINK_WHEEL,
        &bindgen_version,
        "nvJitLink, the JIT LTO linker (`libnvJitLink.so.13`, `nvJitLink_130_0.dll`)",
    )?;
    util::write_or_check(
        &root.join("cuda-driver-rtc/src/sys/nvjitlink.rs"),
        &nvjitlink,
        check,
        util::exact,
    )?;
    Ok(())
}

/// The `include` directory of the pinned wheels: a toolkit root (see
/// [`util::toolkit_roots`]) holding both headers whose site-packages has both wheels'
/// `.dist-info` at the pinned versions.
fn include_dir() -> Result<PathBuf, String> {
    let mut seen = Vec::new();
    for r in util::toolkit_roots() {
        let inc = r.join("include");
        if !(inc.join("nvrtc.h").is_file() && inc.join("nvJitLink.h").is_file()) {
            continue;
        }
        // <site-packages>/nvidia/cu13/include
        let site = r.parent().and_then(Path::parent);
        let pinned = |(name, version): (&str, &str)| {
            site.is_some_and(|s| {
                s.join(format!("{}-{version}.dist-info", name.replace('-', "_")))
                    .is_dir()
            })
        };
        if pinned(NVRTC_WHEEL) && pinned(NVJITLINK_WHEEL) {
            return Ok(inc);
        }
        seen.push(inc.display().to_string());
    }
    let (n, nv) = NVRTC_WHEEL;
    let (j, jv) = NVJITLINK_WHEEL;
    Err(format!(
        "nvrtc.h and nvJitLink.h of {n}=={nv} and {j}=={jv} not found{}: install the pinned \
         wheels into .venv (see .ci/run)",
        if seen.is_empty() {
            String::new()
        } else {
            format!(" (other versions in {})", seen.join(", "))
        }
    ))
}

fn generate(
    inc: &Path,
    header: &str,
    lib: &str,
    defines: &[&str],
    (wheel, version): (&str, &str),
    bindgen_version: &str,
    what: &str,
) -> Result<String, String> {
    let out = bindgen::Builder::default()
        .header_contents("cuda_driver_rtc.h", &format!("#include <{header}>\n"))
        .clang_arg(format!("-I{}", inc.display()))
        .clang_args(defines.iter().copied())
        .allowlist_file(format!(r".*[/\\]{}", regex::escape(header)))
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .generate_comments(true)
        .layout_tests(true)
        .ctypes_prefix("::core::ffi")
        .dynamic_library_name(lib)
        .dynamic_link_require_all(true)
        .wrap_unsafe_ops(true)
        .formatter(bindgen::Formatter::None)
        .generate()
        .map_err(|e| format!("bindgen failed on {header}: {e}"))?
        .to_string();
    let mut file =
        syn::parse_file(&out).map_err(|e| format!("cannot parse bindgen output: {e}"))?;
    TextDocs.visit_file_mut(&mut file);
    let text = std::fs::read_to_string(inc.join(header))
        .map_err(|e| format!("cannot read {header}: {e}"))?;
    file.items.extend(inline_ports(&file, lib, &text)?);
    let defines_note = if defines.is_empty() {
        String::new()
    } else {
        format!(" (with {})", defines.join(" "))
    };
    Ok(format!(
        "// Generated by `cargo xtask bindgen-rtc` from {header}{defines_note} of the wheel\n\
         // {wheel}=={version} with bindgen {bindgen_version}.\n\
         // Do not edit by hand: regenerate with `cargo xtask bindgen-rtc`; CI runs `cargo xtask bindgen-rtc --check`.\n\n\
         //! {header} in Rust: {what}, whose functions are the fields of [`{lib}`], filled\n\
         //! when the library is opened.\n\n{}",
        prettyplease::unparse(&file)
    ))
}

/// Methods under the names of the header's `static inline` forwarders (`nvJitLinkCreate`),
/// each calling the versioned symbol it forwards to (`__nvJitLinkCreate_13_0`).
fn inline_ports(file: &syn::File, lib: &str, header_text: &str) -> Result<Vec<Item>, String> {
    let re = regex::Regex::new(r"^__(\w+)_(\d+)_(\d+)$").unwrap();
    let inline_re = regex::Regex::new(r"static\s+inline\s+\w+\s+(\w+)\s*\(").unwrap();
    let inlines: Vec<String> = inline_re
        .captures_iter(header_text)
        .map(|c| c[1].to_string())
        .collect();
    let lib_ident = format_ident!("{lib}");
    let mut fields = Vec::new();
    for item in &file.items {
        if let Item::Struct(s) = item {
            if s.ident == lib_ident {
                if let Fields::Named(named) = &s.fields {
                    fields.extend(named.named.iter().cloned());
                }
            }
        }
    }
    let mut methods = TokenStream::new();
    let mut ported = Vec::new();
    for f in &fields {
        let name = f.ident.as_ref().expect("named field").to_string();
        let Some(c) = re.captures(&name) else {
            continue;
        };
        let plain = c[1].to_string();
        if !inlines.contains(&plain) {
            return Err(format!(
                "`{name}` has no static inline `{plain}` in the header: is the header newer?"
            ));
        }
        let syn::Type::BareFn(bare) = &f.ty else {
            return Err(format!("`{name}` is not a function pointer"));
        };
        let args: Vec<_> = bare
            .inputs
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let id = a
                    .name
                    .as_ref()
                    .map(|(n, _)| n.clone())
                    .unwrap_or_else(|| format_ident!("arg{i}"));
                (id, a.ty.clone())
            })
            .collect();
        let params = args.iter().map(|(n, t)| quote!(#n: #t));
        let names = args.iter().map(|(n, _)| n);
        let output = &bare.output;
        let field = format_ident!("{name}");
        let method = format_ident!("{plain}");
        let doc = format!(
            " `{plain}` of the header: a `static inline` that calls [`{name}`](Self::{name}).\n\n{}\n\n # Safety\n As for the C function.",
            text_block(&inline_comment(header_text, &plain).ok_or_else(|| {
                format!("the header's static inline `{plain}` has no comment before it")
            })?)
        );
        methods.extend(quote! {
            #[doc = #doc]
            pub unsafe fn #method(&self, #(#params),*) #output {
                unsafe { (self.#field)(#(#names),*) }
            }
        });
        ported.push(plain);
    }
    for i in &inlines {
        if !ported.contains(i) {
            return Err(format!(
                "the header's static inline `{i}` forwards to no versioned symbol the bindings have"
            ));
        }
    }
    if ported.is_empty() {
        return Ok(Vec::new());
    }
    let item: Item = syn::parse2(quote! {
        impl #lib_ident { #methods }
    })
    .map_err(|e| format!("generated inline ports do not parse: {e}"))?;
    Ok(vec![item])
}

/// The `/** .. */` comment closest before the `static inline` function `name`, without its
/// comment markers.
fn inline_comment(header_text: &str, name: &str) -> Option<String> {
    let def = regex::Regex::new(&format!(r"static\s+inline\s+\w+\s+{name}\s*\("))
        .unwrap()
        .find(header_text)?;
    let before = &header_text[..def.start()];
    let start = before.rfind("/**")?;
    let end = start + before[start..].find("*/")?;
    let body = &before[start + 3..end];
    let lines: Vec<&str> = body
        .lines()
        .map(|l| {
            let t = l.trim_start();
            t.strip_prefix("* ")
                .or_else(|| t.strip_prefix('*'))
                .unwrap_or(t)
                .trim_end()
        })
        .collect();
    Some(lines.join("\n").trim().to_string())
}

/// A header comment as a doc comment: verbatim, in a `text` block, so that rustdoc neither
/// reads Doxygen's markup as Markdown nor runs its indented examples as doctests.
fn text_block(comment: &str) -> String {
    let lines: Vec<&str> = comment.lines().collect();
    // The common indentation of the non-empty lines.
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let body: Vec<String> = lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end().to_string())
        .collect();
    let body = body.join("\n");
    format!(" ```text\n{}\n ```", body.trim_matches('\n'))
}

/// Turns every doc comment bindgen copied from the header into a [`text_block`].
struct TextDocs;

impl VisitMut for TextDocs {
    fn visit_attribute_mut(&mut self, attr: &mut Attribute) {
        if !attr.path().is_ident("doc") {
            return;
        }
        let syn::Meta::NameValue(nv) = &mut attr.meta else {
            return;
        };
        let Expr::Lit(lit) = &mut nv.value else {
            return;
        };
        let Lit::Str(s) = &lit.lit else {
            return;
        };
        let text = text_block(&s.value());
        lit.lit = Lit::Str(syn::LitStr::new(&text, s.span()));
    }
}
