//! `cuda-driver/src/types.rs`: one `#[repr(transparent)]` type of the safe crate for every
//! `typedef enum` of cuda.h, and for the `#define` families of flags in [`DEFINE_FLAGS`].
//!
//! * A C enum becomes a newtype over its integer type with one associated constant per
//!   enumerator, `c_name()`, a `Debug` that prints the C name, and `From` both ways; never a
//!   Rust `enum`, since a newer driver can return a value this cuda.h does not know.
//! * A C bit mask (an enum whose name says `flags`, one of [`BITMASK_ENUMS`], or a `#define`
//!   family) becomes a `bitflags` set with the same raw access.
//!
//! Names: the type is the C name without `CU`/`CUDA_` and `_enum`, in UpperCamelCase
//! (`CUaddress_mode` -> `AddressMode`) unless [`NAMES`] says otherwise; a constant is the
//! enumerator without the prefix all the enumerators share (`CU_TR_ADDRESS_MODE_WRAP` ->
//! `AddressMode::WRAP`), or the one [`PREFIXES`] gives.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use quote::ToTokens;
use syn::Item;

use super::header::Header;
use super::CUDA_VERSION;

/// Rust names of C types that differ from the mechanical rule, or that the crate's users
/// already write and that must not change with it.
const NAMES: &[(&str, &str)] = &[
    ("CUresult", "ErrorCode"),
    ("CUctx_flags", "ContextFlags"),
    ("CUfunc_cache", "CacheConfig"),
    ("CUsharedconfig", "SharedMemConfig"),
    ("CUmemorytype", "MemoryType"),
    ("CUmem_advise", "MemAdvice"),
    ("CUmemAttach_flags", "AttachFlags"),
    ("CUdriverProcAddressQueryResult", "ProcAddressStatus"),
    ("CUdriverProcAddress_flags", "ProcAddressFlags"),
    ("CUjit_target", "JitTarget"),
    ("CUjit_cacheMode", "JitCacheMode"),
    ("CUjit_fallback", "JitFallback"),
    ("CUjitInputType", "JitInputType"),
    ("CUdevice_attribute", "DeviceAttribute"),
    ("CUfunction_attribute", "FunctionAttribute"),
    ("CUlimit", "Limit"),
    ("CUstream_flags", "StreamFlags"),
    ("CUevent_flags", "EventFlags"),
];

/// Prefixes other than the one the enumerators share, for the constant names users already
/// write (`ErrorCode::OUT_OF_MEMORY`, `CacheConfig::PREFER_L1`, `JitTarget::COMPUTE_80`).
/// An enumerator outside the prefix (`CUDA_SUCCESS`) drops the shared prefix instead.
const PREFIXES: &[(&str, &str)] = &[
    ("CUresult", "CUDA_ERROR_"),
    ("CUfunc_cache", "CU_FUNC_CACHE_"),
    ("CUjit_target", "CU_TARGET_"),
];

/// C enums that are bit masks although their names do not say `flags`: the driver reports
/// or takes a set of them (`CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES`,
/// `cuDeviceGetHostAtomicCapabilities`, `CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK`,
/// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS`).
const BITMASK_ENUMS: &[&str] = &[
    "CUmemAllocationHandleType",
    "CUatomicOperationCapability",
    "CUmemDecompressAlgorithm",
    "CUflushGPUDirectRDMAWritesOptions",
];

/// Raw types wider than the C enum's: `cuGetProcAddress` takes its flags as `cuuint64_t`.
const RAW_TYPES: &[(&str, &str)] = &[("CUdriverProcAddress_flags", "u64")];

/// The `#define` families of cuda.h that are sets of flags: `(Rust name, prefix, doc)`.
/// (`CU_TRSA_OVERRIDE_FORMAT`, the one flag of the deprecated `cuTexRefSetArray`, is left out.)
const DEFINE_FLAGS: &[(&str, &str, &str)] = &[
    (
        "PinnedFlags",
        "CU_MEMHOSTALLOC_",
        "Flags of page-locked host allocations (`cuMemHostAlloc`).",
    ),
    (
        "HostRegisterFlags",
        "CU_MEMHOSTREGISTER_",
        "Flags of host memory registration (`cuMemHostRegister`).",
    ),
    (
        "Array3DFlags",
        "CUDA_ARRAY3D_",
        "Flags of CUDA arrays (`CUDA_ARRAY3D_DESCRIPTOR::Flags`).",
    ),
    (
        "TextureFlags",
        "CU_TRSF_",
        "Flags of texture reads (`CUDA_TEXTURE_DESC::flags`, `cuTexRefSetFlags`).",
    ),
    (
        "ArraySparsePropertiesFlags",
        "CU_ARRAY_SPARSE_PROPERTIES_",
        "Flags of sparse CUDA array properties (`CUDA_ARRAY_SPARSE_PROPERTIES::flags`).",
    ),
    (
        "ExternalMemoryFlags",
        "CUDA_EXTERNAL_MEMORY_",
        "Flags of imported external memory (`CUDA_EXTERNAL_MEMORY_HANDLE_DESC::flags`).",
    ),
    (
        "ExternalSemaphoreSignalFlags",
        "CUDA_EXTERNAL_SEMAPHORE_SIGNAL_",
        "Flags of external semaphore signals (`CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS::flags`).",
    ),
    (
        "ExternalSemaphoreWaitFlags",
        "CUDA_EXTERNAL_SEMAPHORE_WAIT_",
        "Flags of external semaphore waits (`CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS::flags`).",
    ),
    (
        "NvSciSyncAttrFlags",
        "CUDA_NVSCISYNC_ATTR_",
        "Which NvSciSync attributes to fill (`cuDeviceGetNvSciSyncAttributes`).",
    ),
    (
        "MemCreateUsageFlags",
        "CU_MEM_CREATE_USAGE_",
        "Intended uses of a physical allocation (`CUmemAllocationProp::allocFlags.usage`).",
    ),
    (
        "MemPoolCreateUsageFlags",
        "CU_MEM_POOL_CREATE_USAGE_",
        "Intended uses of a memory pool's allocations (`CUmemPoolProps::usage`).",
    ),
    (
        "CooperativeLaunchMultiDeviceFlags",
        "CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_",
        "Flags of `cuLaunchCooperativeKernelMultiDevice`.",
    ),
    (
        "GraphCondAssignFlags",
        "CU_GRAPH_COND_ASSIGN_",
        "Flags of graph conditional handles (`cuGraphConditionalHandleCreate`).",
    ),
];

struct Value {
    c_name: String,
    name: String,
    value: i128,
    doc: String,
}

struct Type {
    c_name: String,
    name: String,
    /// The raw type as the generated code writes it (`sys::CUlimit`, `u32`).
    raw: String,
    /// `as u64` where the raw type is wider than the C one.
    cast: String,
    doc: Vec<String>,
    aliases: Vec<String>,
    flags: bool,
    values: Vec<Value>,
}

/// The text of an item's `#[doc]` attributes on one line (cuda.h's indentation would turn into
/// Markdown code blocks).
fn doc_of(attrs: &[syn::Attribute]) -> String {
    let text: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let text = text.join(" ");
    // A `/**< .. */` comment after the enumerator keeps its `<`.
    let text = text.trim_start().strip_prefix('<').unwrap_or(&text);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `CUaddress_mode` -> `AddressMode`, `CUDA_POINTER_ATTRIBUTE_ACCESS_FLAGS` ->
/// `PointerAttributeAccessFlags`, `cl_event_flags` -> `ClEventFlags`.
pub fn type_name(c: &str) -> String {
    let s = c.strip_suffix("_enum").unwrap_or(c);
    let s = s
        .strip_prefix("CUDA_")
        .or_else(|| s.strip_prefix("CU"))
        .unwrap_or(s);
    let mut out = String::new();
    for word in s.split('_').filter(|w| !w.is_empty()) {
        let mut chars = word.chars();
        let first = chars.next().unwrap();
        out.push(first.to_ascii_uppercase());
        let rest: String = chars.collect();
        if word.len() > 1 && !word.chars().any(|c| c.is_ascii_lowercase()) {
            out.push_str(&rest.to_ascii_lowercase());
        } else {
            out.push_str(&rest);
        }
    }
    out
}

/// The words of a C type name, upper case: `CUipcMem_flags` -> `CU IPC MEM FLAGS`,
/// `CUflushGPUDirectRDMAWritesTarget` -> `CU FLUSH GPU DIRECT RDMA WRITES TARGET`.
fn type_words(c: &str) -> Vec<String> {
    let s = c.strip_suffix("_enum").unwrap_or(c);
    let (mut words, s) = match s.strip_prefix("CU") {
        Some(rest) => (vec!["CU".to_string()], rest),
        None => (Vec::new(), s),
    };
    for part in s.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<char> = part.chars().collect();
        let mut word = String::new();
        for (i, &ch) in chars.iter().enumerate() {
            let boundary = i > 0
                && ch.is_ascii_uppercase()
                && (chars[i - 1].is_ascii_lowercase()
                    || chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase())
                        && chars[i - 1].is_ascii_uppercase());
            if boundary && !word.is_empty() {
                words.push(std::mem::take(&mut word).to_ascii_uppercase());
            }
            word.push(ch);
        }
        if !word.is_empty() {
            words.push(word.to_ascii_uppercase());
        }
    }
    words
}

/// A count or a "force 32 bits" value rather than a value of its own (`CU_LIMIT_MAX`,
/// `CU_JIT_NUM_OPTIONS`); it does not take part in choosing the shared prefix.
fn is_sentinel(name: &str) -> bool {
    name.ends_with("_MAX") || name.contains("_NUM_")
}

/// The longest common prefix of the names that ends with `_`.
fn common_prefix<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut it = names.into_iter();
    let Some(first) = it.next() else {
        return String::new();
    };
    let mut len = first.len();
    for n in it {
        len = first
            .bytes()
            .zip(n.bytes())
            .take(len)
            .take_while(|(a, b)| a == b)
            .count();
    }
    match first[..len].rfind('_') {
        Some(i) => first[..=i].to_string(),
        None => String::new(),
    }
}

/// The prefix an enum's constants drop, and the fallback for enumerators outside it.
fn prefixes(c_type: &str, names: &[&str]) -> (String, String) {
    let all = common_prefix(names.iter().copied());
    if let Some((_, p)) = PREFIXES.iter().find(|(t, _)| *t == c_type) {
        return (p.to_string(), all);
    }
    let core: Vec<&str> = names.iter().copied().filter(|n| !is_sentinel(n)).collect();
    let core = if core.is_empty() {
        names.to_vec()
    } else {
        core
    };
    let prefix = if core.len() >= 2 {
        common_prefix(core.iter().copied())
    } else {
        // One enumerator: drop the words it shares with the type's name
        // (`CUipcMem_flags`: `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS` -> `LAZY_ENABLE_PEER_ACCESS`).
        let tw = type_words(c_type);
        let words: Vec<&str> = core[0].split('_').collect();
        let same = |a: &str, b: &str| a == b || a.trim_end_matches('S') == b.trim_end_matches('S');
        let n = words
            .iter()
            .zip(&tw)
            .take_while(|(a, b)| same(a, b))
            .count()
            .min(words.len() - 1);
        words[..n].iter().map(|w| format!("{w}_")).collect()
    };
    (prefix, all)
}

/// The constant's name: the enumerator without its prefix, upper case; one that would start
/// with a digit keeps the prefix's last word (`CU_TENSOR_MAP_SWIZZLE_32B` -> `SWIZZLE_32B`).
fn const_name(c: &str, prefix: &str, fallback: &str) -> String {
    let rest = c
        .strip_prefix(prefix)
        .or_else(|| c.strip_prefix(fallback))
        .filter(|r| !r.is_empty())
        .unwrap_or(c);
    let name = rest.to_ascii_uppercase();
    if name.starts_with(|ch: char| ch.is_ascii_digit()) {
        let p = if c.starts_with(prefix) {
            prefix
        } else {
            fallback
        };
        let last = p
            .trim_end_matches('_')
            .rsplit('_')
            .next()
            .unwrap_or("VALUE");
        format!("{last}_{name}")
    } else {
        name
    }
}

fn parse_value(c: &syn::ItemConst) -> Result<i128, String> {
    let text = c.expr.to_token_stream().to_string().replace(' ', "");
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.as_str()),
    };
    let v = match digits.strip_prefix("0x") {
        Some(h) => i128::from_str_radix(h, 16),
        None => digits.parse::<i128>(),
    }
    .map_err(|e| format!("{}: value `{text}`: {e}", c.ident))?;
    Ok(if neg { -v } else { v })
}

/// Reads the enums and `#define` flag families out of the bindings' items.
fn collect(items: &[Item], header: &Header) -> Result<Vec<Type>, String> {
    // The integer typedefs, their docs, and the `pub use self::X_enum as X` renames.
    let mut int_alias: HashMap<String, String> = HashMap::new();
    let mut type_docs: HashMap<String, String> = HashMap::new();
    let mut tag_of: HashMap<String, String> = HashMap::new();
    let mut consts: BTreeMap<String, Vec<&syn::ItemConst>> = BTreeMap::new();
    for item in items {
        match item {
            Item::Type(t) => {
                let ty = t.ty.to_token_stream().to_string().replace(' ', "");
                if let Some(int) = ty.strip_prefix("::core::ffi::") {
                    int_alias.insert(t.ident.to_string(), int.to_string());
                }
                type_docs.insert(t.ident.to_string(), doc_of(&t.attrs));
            }
            Item::Use(u) => {
                if let syn::UseTree::Path(p) = &u.tree {
                    if let syn::UseTree::Rename(r) = &*p.tree {
                        tag_of.insert(r.rename.to_string(), r.ident.to_string());
                        let d = doc_of(&u.attrs);
                        if !d.is_empty() {
                            type_docs.insert(r.rename.to_string(), d);
                        }
                    }
                }
            }
            Item::Const(c) => {
                let ty = c.ty.to_token_stream().to_string();
                consts.entry(ty).or_default().push(c);
            }
            _ => {}
        }
    }

    let mut out = Vec::new();
    let mut missing = Vec::new();
    for c_type in &header.enums {
        let Some(values) = consts.get(c_type.as_str()) else {
            missing.push(c_type.clone());
            continue;
        };
        let tag = tag_of.get(c_type).cloned();
        let int = int_alias
            .get(c_type)
            .or_else(|| tag.as_ref().and_then(|t| int_alias.get(t)))
            .ok_or_else(|| format!("{c_type}: bindgen did not make it an integer typedef"))?;
        if !matches!(int.as_str(), "c_uint" | "c_int") {
            return Err(format!("{c_type}: unexpected integer type {int}"));
        }
        let owned: Vec<String> = values.iter().map(|c| c.ident.to_string()).collect();
        let names: Vec<&str> = owned.iter().map(String::as_str).collect();
        let (prefix, fallback) = prefixes(c_type, &names);
        let name = NAMES
            .iter()
            .find(|(c, _)| c == c_type)
            .map_or_else(|| type_name(c_type), |(_, r)| r.to_string());
        let flags = c_type.to_ascii_lowercase().contains("flags")
            || BITMASK_ENUMS.contains(&c_type.as_str());
        let (raw, cast) = match RAW_TYPES.iter().find(|(c, _)| c == c_type) {
            Some((_, r)) => (r.to_string(), format!(" as {r}")),
            None => (format!("sys::{c_type}"), String::new()),
        };
        let c_doc = type_docs
            .get(c_type)
            .filter(|d| !d.is_empty())
            .or_else(|| tag.as_ref().and_then(|t| type_docs.get(t)))
            .cloned()
            .unwrap_or_default();
        let mut doc = Vec::new();
        if !c_doc.is_empty() {
            doc.push(markdown(&sentence(&c_doc)));
            doc.push(String::new());
        }
        doc.push(if flags {
            format!(
                "The flags `{c_type}` of cuda.h. Bits this crate does not name (a newer driver's) \
                 are kept."
            )
        } else {
            format!(
                "The C enum `{c_type}` of cuda.h. Any value is representable, also one of a newer \
                 driver that these constants do not name."
            )
        });
        let mut aliases = vec![c_type.clone()];
        aliases.extend(tag.filter(|t| t != c_type));
        let mut vals = Vec::new();
        for c in values {
            let cn = c.ident.to_string();
            vals.push(Value {
                name: const_name(&cn, &prefix, &fallback),
                value: parse_value(c)?,
                doc: doc_of(&c.attrs),
                c_name: cn,
            });
        }
        out.push(Type {
            c_name: c_type.clone(),
            name,
            raw,
            cast,
            doc,
            aliases,
            flags,
            values: vals,
        });
    }
    if !missing.is_empty() {
        return Err(format!(
            "cuda.h's enums {missing:?} have no constants in the bindings"
        ));
    }
    let tabled = NAMES
        .iter()
        .chain(PREFIXES)
        .chain(RAW_TYPES)
        .map(|(c, _)| c);
    for c_type in tabled.chain(BITMASK_ENUMS) {
        if !out.iter().any(|t| t.c_name == *c_type) {
            return Err(format!(
                "{c_type} is in a table of safe_types.rs but not an enum of cuda.h"
            ));
        }
    }

    let u32_consts = consts.get("u32").map(Vec::as_slice).unwrap_or_default();
    for (name, prefix, what) in DEFINE_FLAGS {
        let mut vals = Vec::new();
        for c in u32_consts {
            let cn = c.ident.to_string();
            if !cn.starts_with(prefix) {
                continue;
            }
            let doc = header.define_docs.get(&cn).cloned().unwrap_or_default();
            vals.push(Value {
                name: const_name(&cn, prefix, prefix),
                value: parse_value(c)?,
                doc,
                c_name: cn,
            });
        }
        if vals.is_empty() {
            return Err(format!("no #define starts with {prefix}"));
        }
        out.push(Type {
            c_name: format!("{prefix}*"),
            name: name.to_string(),
            raw: "u32".into(),
            cast: String::new(),
            doc: vec![
                what.to_string(),
                String::new(),
                format!(
                    "The `#define {prefix}*` flags of cuda.h. Bits this crate does not name (a \
                     newer driver's) are kept."
                ),
            ],
            aliases: Vec::new(),
            flags: true,
            values: vals,
        });
    }

    let mut seen = BTreeSet::new();
    for t in &out {
        if !seen.insert(t.name.clone()) {
            return Err(format!("two types are named {}", t.name));
        }
        let mut consts = BTreeSet::new();
        for v in &t.values {
            if !consts.insert(v.name.clone()) {
                return Err(format!("{}: two constants are named {}", t.name, v.name));
            }
        }
    }
    Ok(out)
}

/// cuda.h's description as a sentence: capitalised, with a full stop.
fn sentence(s: &str) -> String {
    let mut s = s.trim().to_string();
    if let Some(first) = s.get(..1) {
        let up = first.to_ascii_uppercase();
        s.replace_range(..1, &up);
    }
    if !s.ends_with(['.', '!', '?', ':']) {
        s.push('.');
    }
    s
}

/// cuda.h's text as Markdown that says the same: brackets escaped (`Body[0]` is no link) and
/// bare URLs made links.
fn markdown(text: &str) -> String {
    let text = text.replace('[', "\\[").replace(']', "\\]");
    let url = regex::Regex::new(r"https?://[^\s()<>\\]+").unwrap();
    url.replace_all(&text, |c: &regex::Captures<'_>| {
        let u = &c[0];
        let trimmed = u.trim_end_matches(['.', ',', ';', ':']);
        format!("<{trimmed}>{}", &u[trimmed.len()..])
    })
    .into_owned()
}

fn doc(out: &mut String, indent: &str, lines: &[String]) {
    for l in lines {
        if l.is_empty() {
            let _ = writeln!(out, "{indent}///");
        } else {
            let _ = writeln!(out, "{indent}/// {l}");
        }
    }
}

/// The docs of one constant: cuda.h's text, then the C name.
fn value_doc(v: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    if !v.doc.is_empty() {
        lines.push(markdown(&v.doc));
        lines.push(String::new());
    }
    lines.push(format!("`{}`", v.c_name));
    lines
}

/// The value as the generated code writes it: the constant of `cuda_driver_sys`.
fn value_expr(t: &Type, v: &Value) -> String {
    format!("sys::{}{}", v.c_name, t.cast)
}

fn emit_enum(out: &mut String, t: &Type) {
    let Type { name, raw, .. } = t;
    doc(out, "", &t.doc);
    for a in &t.aliases {
        let _ = writeln!(out, "#[doc(alias = \"{a}\")]");
    }
    let _ = writeln!(
        out,
        "#[repr(transparent)]\n#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]\n\
         pub struct {name}(pub(crate) {raw});\n\nimpl {name} {{"
    );
    for v in &t.values {
        doc(out, "    ", &value_doc(v));
        let _ = writeln!(out, "    #[doc(alias = \"{}\")]", v.c_name);
        let _ = writeln!(
            out,
            "    pub const {}: Self = Self({});",
            v.name,
            value_expr(t, v)
        );
    }
    let example = &t.values[0].c_name;
    let _ = write!(
        out,
        "
    /// Wraps a raw value, also one that this crate's cuda.h does not name.
    #[inline]
    pub const fn from_raw(raw: {raw}) -> Self {{
        Self(raw)
    }}

    /// The raw value, for `cuda_driver_sys` calls.
    #[inline]
    pub const fn as_raw(self) -> {raw} {{
        self.0
    }}

    /// The C name of this value (`{example}`), or `None` for a value that cuda.h
    /// {major}.{minor} does not define.
    pub const fn c_name(self) -> Option<&'static str> {{
",
        major = CUDA_VERSION / 1000,
        minor = CUDA_VERSION % 1000 / 10,
    );
    let mut seen = BTreeSet::new();
    let error_code = t.c_name == "CUresult";
    if error_code {
        let _ = writeln!(
            out,
            "        match self.c_info() {{\n            Some((name, _)) => Some(name),\n            \
             None => None,\n        }}\n    }}\n"
        );
        let _ = writeln!(
            out,
            "    /// The C name of this value and cuda.h's description of it, or `None` for a \
             value\n    /// this crate's cuda.h does not define (a newer driver's).\n    \
             pub(crate) const fn c_info(self) -> Option<(&'static str, &'static str)> {{\n        \
             match self.0 {{"
        );
        for v in &t.values {
            if seen.insert(v.value) {
                let _ = writeln!(
                    out,
                    "            sys::{} => Some(({:?}, {:?})),",
                    v.c_name, v.c_name, v.doc
                );
            }
        }
    } else {
        let _ = writeln!(out, "        match self.0 {{");
        for v in &t.values {
            if seen.insert(v.value) {
                let _ = writeln!(
                    out,
                    "            sys::{} => Some({:?}),",
                    v.c_name, v.c_name
                );
            }
        }
    }
    let _ = write!(
        out,
        "            _ => None,
        }}
    }}
}}

impl fmt::Debug for {name} {{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{
        fmt_enum(f, {name:?}, self.c_name(), self.0)
    }}
}}
"
    );
    emit_from(out, t);
}

fn emit_flags(out: &mut String, t: &Type) {
    let Type { name, raw, .. } = t;
    doc(out, "", &t.doc);
    for a in &t.aliases {
        let _ = writeln!(out, "#[doc(alias = \"{a}\")]");
    }
    let _ = writeln!(
        out,
        "#[repr(transparent)]\n#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]\n\
         pub struct {name}(pub(crate) {raw});\n"
    );
    // Masks and counts are constants, not flags: they would otherwise name bits in `Debug`.
    let (named, masks): (Vec<&Value>, Vec<&Value>) = t.values.iter().partition(|v| {
        !(v.name == "MAX" || v.name.starts_with("NUM_") || v.name.ends_with("MASK"))
    });
    // Flags of several bits first, the rest in cuda.h's order, so that `Debug` and `iter` name
    // `READWRITE` rather than `READ | READWRITE` (bitflags yields every flag that covers a bit
    // not yet yielded).
    let mut named = named;
    named.sort_by_key(|v| (v.value as u64).count_ones() < 2);
    let _ = writeln!(out, "bitflags::bitflags! {{\n    impl {name}: {raw} {{");
    for (i, v) in named.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        doc(out, "        ", &value_doc(v));
        let _ = writeln!(out, "        #[doc(alias = \"{}\")]", v.c_name);
        let _ = writeln!(out, "        const {} = {};", v.name, value_expr(t, v));
    }
    let _ = writeln!(out, "    }}\n}}\n\nimpl {name} {{");
    for v in &masks {
        doc(out, "    ", &value_doc(v));
        let _ = writeln!(out, "    #[doc(alias = \"{}\")]", v.c_name);
        let _ = writeln!(
            out,
            "    pub const {}: Self = Self({});\n",
            v.name,
            value_expr(t, v)
        );
    }
    let _ = write!(
        out,
        "    /// Wraps raw bits, also ones that this crate's cuda.h does not name (as
    /// [`from_bits_retain`](Self::from_bits_retain)).
    #[inline]
    pub const fn from_raw(raw: {raw}) -> Self {{
        Self(raw)
    }}

    /// The raw bits, for `cuda_driver_sys` calls (as [`bits`](Self::bits)).
    #[inline]
    pub const fn as_raw(self) -> {raw} {{
        self.0
    }}
}}

impl fmt::Debug for {name} {{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{
        fmt_flags(f, {name:?}, self)
    }}
}}
"
    );
    emit_from(out, t);
}

fn emit_from(out: &mut String, t: &Type) {
    let Type { name, raw, .. } = t;
    let _ = write!(
        out,
        "
impl From<{name}> for {raw} {{
    #[inline]
    fn from(v: {name}) -> {raw} {{
        v.0
    }}
}}

impl From<{raw}> for {name} {{
    #[inline]
    fn from(raw: {raw}) -> {name} {{
        {name}(raw)
    }}
}}
"
    );
}

/// Generates `cuda-driver/src/types.rs`.
pub fn generate(items: &[Item], header: &Header) -> Result<String, String> {
    let types = collect(items, header)?;
    let mut out = format!(
        "// Generated by `cargo xtask bindgen` from cuda.h of CUDA 13.0 (CUDA_VERSION {CUDA_VERSION}).
// Do not edit by hand: regenerate with `cargo xtask bindgen`; CI runs `cargo xtask bindgen --check`.

//! The enums and flags of cuda.h as Rust types: one for every `typedef enum` of cuda.h, and
//! one for each family of `#define` flags (`CU_MEMHOSTALLOC_*` is [`PinnedFlags`]).
//!
//! A C enum is a `#[repr(transparent)]` newtype over its integer type, never a Rust `enum`: a
//! newer driver can return a value that cuda.h {major}.{minor} does not name, and that value is
//! representable too. Each has one associated constant per enumerator, named without the prefix
//! the enumerators share (`CU_TR_ADDRESS_MODE_WRAP` is [`AddressMode::WRAP`]), `from_raw` and
//! `as_raw`, [`c_name`](AddressMode::c_name), and a `Debug` that prints the C name.
//!
//! A C bit mask is a [`bitflags`] set: `|`, `&`, [`contains`](ContextFlags::contains),
//! [`iter`](ContextFlags::iter), [`from_bits_retain`](ContextFlags::from_bits_retain) for bits
//! this crate does not name, `from_raw`/`as_raw` like the enums, and a `Debug` that names the
//! flags: `ContextFlags(SCHED_BLOCKING_SYNC | MAP_HOST)`.
//!
//! ```
//! use cuda_driver::types::{{AddressMode, ContextFlags}};
//!
//! assert_eq!(format!(\"{{:?}}\", AddressMode::CLAMP), \"CU_TR_ADDRESS_MODE_CLAMP\");
//! assert_eq!(format!(\"{{:?}}\", AddressMode::from_raw(77)), \"AddressMode(77)\");
//! let flags = ContextFlags::SCHED_BLOCKING_SYNC | ContextFlags::MAP_HOST;
//! assert!(flags.contains(ContextFlags::MAP_HOST));
//! assert_eq!(format!(\"{{flags:?}}\"), \"ContextFlags(SCHED_BLOCKING_SYNC | MAP_HOST)\");
//! ```
//!
//! Generated by `cargo xtask bindgen` from cuda.h; the names follow one rule (the C name
//! without `CU` and `_enum`, in UpperCamelCase), except for the types this crate named before
//! (`CUresult` is [`ErrorCode`], `CUctx_flags` is [`ContextFlags`]).

use core::fmt;

use cuda_driver_sys as sys;
",
        major = CUDA_VERSION / 1000,
        minor = CUDA_VERSION % 1000 / 10,
    );
    for t in &types {
        out.push('\n');
        if t.flags {
            emit_flags(&mut out, t);
        } else {
            emit_enum(&mut out, t);
        }
    }
    out.push_str(
        "
/// `Debug` of an enum: its C name, or `Type(raw)` for a value cuda.h does not name.
fn fmt_enum(
    f: &mut fmt::Formatter<'_>,
    ty: &str,
    c_name: Option<&str>,
    raw: impl fmt::Display,
) -> fmt::Result {
    match c_name {
        Some(name) => f.write_str(name),
        None => write!(f, \"{ty}({raw})\"),
    }
}

/// `Debug` of a flag set: `Type(A | B | 0x40)`, the bits no flag names in hex; `Type(0x0)`
/// when empty.
fn fmt_flags<F: bitflags::Flags>(f: &mut fmt::Formatter<'_>, ty: &str, flags: &F) -> fmt::Result
where
    F::Bits: fmt::LowerHex,
{
    write!(f, \"{ty}(\")?;
    let mut names = flags.iter_names();
    let mut first = true;
    for (name, _) in &mut names {
        if !first {
            f.write_str(\" | \")?;
        }
        f.write_str(name)?;
        first = false;
    }
    let rest = names.remaining().bits();
    if first || rest != <F::Bits as bitflags::Bits>::EMPTY {
        if !first {
            f.write_str(\" | \")?;
        }
        write!(f, \"{rest:#x}\")?;
    }
    f.write_str(\")\")
}
",
    );
    syn::parse_file(&out).map_err(|e| format!("generated types.rs does not parse: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names() {
        assert_eq!(type_name("CUaddress_mode"), "AddressMode");
        assert_eq!(type_name("CUjit_cacheMode"), "JitCacheMode");
        assert_eq!(type_name("CUjitInputType"), "JitInputType");
        assert_eq!(type_name("CUdevice_attribute"), "DeviceAttribute");
        assert_eq!(
            type_name("CUGPUDirectRDMAWritesOrdering"),
            "GPUDirectRDMAWritesOrdering"
        );
        assert_eq!(
            type_name("CUDA_POINTER_ATTRIBUTE_ACCESS_FLAGS"),
            "PointerAttributeAccessFlags"
        );
        assert_eq!(type_name("cl_event_flags"), "ClEventFlags");
        assert_eq!(
            type_name("CUmemAllocationHandleType"),
            "MemAllocationHandleType"
        );
    }

    #[test]
    fn prefixes_and_constant_names() {
        let (p, f) = prefixes(
            "CUaddress_mode",
            &["CU_TR_ADDRESS_MODE_WRAP", "CU_TR_ADDRESS_MODE_CLAMP"],
        );
        assert_eq!(const_name("CU_TR_ADDRESS_MODE_WRAP", &p, &f), "WRAP");
        // A shared prefix that ends inside a word is cut back to the last `_`.
        let (p, _) = prefixes(
            "CUoccupancy_flags",
            &[
                "CU_OCCUPANCY_DEFAULT",
                "CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE",
            ],
        );
        assert_eq!(p, "CU_OCCUPANCY_");
        // Counts do not choose the prefix, and drop the shared one.
        let names = [
            "CU_JIT_INPUT_CUBIN",
            "CU_JIT_INPUT_PTX",
            "CU_JIT_NUM_INPUT_TYPES",
        ];
        let (p, f) = prefixes("CUjitInputType", &names);
        assert_eq!(const_name(names[0], &p, &f), "CUBIN");
        assert_eq!(const_name(names[2], &p, &f), "NUM_INPUT_TYPES");
        // One enumerator: the words of the type's name go.
        let (p, _) = prefixes("CUipcMem_flags", &["CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS"]);
        assert_eq!(p, "CU_IPC_MEM_");
        let (p, _) = prefixes(
            "CUmemRangeFlags",
            &["CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE"],
        );
        assert_eq!(p, "CU_MEM_RANGE_FLAG_");
        // A name that would start with a digit keeps the prefix's last word.
        let names = ["CU_TENSOR_MAP_SWIZZLE_NONE", "CU_TENSOR_MAP_SWIZZLE_32B"];
        let (p, f) = prefixes("CUtensorMapSwizzle", &names);
        assert_eq!(const_name(names[1], &p, &f), "SWIZZLE_32B");
        // The override table, with the shared prefix for what falls outside it.
        let names = ["CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE"];
        let (p, f) = prefixes("CUresult", &names);
        assert_eq!(const_name(names[0], &p, &f), "SUCCESS");
        assert_eq!(const_name(names[1], &p, &f), "INVALID_VALUE");
    }

    #[test]
    fn cuda_h_text_becomes_markdown_that_says_the_same() {
        assert_eq!(markdown("Body[0] is run"), "Body\\[0\\] is run");
        assert_eq!(
            markdown("(see https://docs.nvidia.com/cuda/gpudirect-rdma for more)."),
            "(see <https://docs.nvidia.com/cuda/gpudirect-rdma> for more)."
        );
        assert_eq!(markdown("at https://x.org/a."), "at <https://x.org/a>.");
    }

    #[test]
    fn type_words_split_camel_case_and_acronyms() {
        assert_eq!(
            type_words("CUflushGPUDirectRDMAWritesTarget"),
            ["CU", "FLUSH", "GPU", "DIRECT", "RDMA", "WRITES", "TARGET"]
        );
        assert_eq!(type_words("CUipcMem_flags"), ["CU", "IPC", "MEM", "FLAGS"]);
    }
}
