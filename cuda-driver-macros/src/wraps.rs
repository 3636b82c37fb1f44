//! `#[wraps(..)]`: the reference link and the doc aliases of driver names.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, Token};

use crate::names::NAMES;

/// What cuda.h says about a name: the doxygen group that documents it (empty for a function
/// the reference leaves out) and the symbols it stands for.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    pub group: &'static str,
    pub symbols: &'static [&'static str],
}

/// Looks a function or type name of cuda.h up.
pub fn lookup(name: &str) -> Option<Entry> {
    let i = NAMES.binary_search_by(|(n, _, _)| (*n).cmp(name)).ok()?;
    let (_, group, symbols) = NAMES[i];
    Some(Entry { group, symbols })
}

/// The reference page of a doxygen group: `CUDA_MEM` -> `.../group__CUDA__MEM.html`.
pub fn group_url(group: &str) -> String {
    format!(
        "https://docs.nvidia.com/cuda/cuda-driver-api/group__{}.html",
        group.replace('_', "__")
    )
}

/// The name as a Markdown link to its page.
fn link(name: &str, entry: &Entry) -> String {
    if entry.group.is_empty() {
        format!("`{name}` (not in the CUDA Driver API reference)")
    } else {
        format!("[`{name}`]({})", group_url(entry.group))
    }
}

/// An item split after its outer attributes.
struct Item {
    attrs: Vec<Attribute>,
    rest: TokenStream,
}

impl Parse for Item {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        Ok(Item {
            attrs: input.call(Attribute::parse_outer)?,
            rest: input.parse()?,
        })
    }
}

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    expand_as("Wraps", attr, item)
}

/// `verb` starts the docs' line: `Wraps` (`#[wraps]`) or `Calls` (`#[uses]`).
pub fn expand_as(verb: &str, attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let names = Punctuated::<Ident, Token![,]>::parse_terminated.parse2(attr)?;
    if names.is_empty() {
        return Err(syn::Error::new(
            Span::call_site(),
            "#[wraps]/#[uses] needs the names of driver functions: #[wraps(cuMemAlloc)]",
        ));
    }
    let mut entries = Vec::new();
    for ident in &names {
        let name = ident.to_string();
        let Some(entry) = lookup(&name) else {
            let hint = NAMES
                .iter()
                .find(|(n, _, _)| n.eq_ignore_ascii_case(&name))
                .map(|(n, _, _)| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            return Err(syn::Error::new(
                ident.span(),
                format!("`{name}` is not a function or type of cuda.h 13.0{hint}"),
            ));
        };
        entries.push((name, entry));
    }

    let Item { attrs, rest } = syn::parse2(item)?;
    let mut docs = Vec::new();
    if attrs.iter().any(|a| a.path().is_ident("doc")) {
        docs.push(String::new());
    }
    if let [(name, entry)] = entries.as_slice() {
        docs.push(format!(" {verb} {}.", link(name, entry)));
    } else {
        docs.push(format!(" {verb}:"));
        for (name, entry) in &entries {
            docs.push(format!(" * {}", link(name, entry)));
        }
    }
    let mut aliases: Vec<&str> = Vec::new();
    for (name, entry) in &entries {
        for a in std::iter::once(name.as_str()).chain(entry.symbols.iter().copied()) {
            if !aliases.contains(&a) {
                aliases.push(a);
            }
        }
    }
    Ok(quote! {
        #(#attrs)*
        #(#[doc = #docs])*
        #(#[doc(alias = #aliases)])*
        #rest
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_knows_functions_symbols_and_types() {
        assert!(NAMES.windows(2).all(|w| w[0].0 < w[1].0));
        let e = lookup("cuMemAlloc").unwrap();
        assert_eq!(e.group, "CUDA_MEM");
        assert_eq!(e.symbols, ["cuMemAlloc_v2"]);
        // Per-thread default stream symbols are aliases too.
        let e = lookup("cuLaunchKernel").unwrap();
        assert_eq!(e.group, "CUDA_EXEC");
        assert_eq!(e.symbols, ["cuLaunchKernel_ptsz"]);
        assert_eq!(
            lookup("cuKernelGetParamInfo").unwrap().group,
            "CUDA_LIBRARY"
        );
        assert_eq!(lookup("cuCtxCreate").unwrap().symbols, ["cuCtxCreate_v4"]);
        // Versioned symbols are names of their own, documented with their base name.
        assert_eq!(lookup("cuMemAlloc_v2").unwrap().group, "CUDA_MEM");
        assert_eq!(lookup("CUcontext").unwrap().group, "CUDA_TYPES");
        assert_eq!(
            lookup("CUdevResourceType").unwrap().group,
            "CUDA_GREEN_CONTEXTS"
        );
        assert_eq!(lookup("cuMemAllocate"), None);
        assert_eq!(
            group_url("CUDA_TENSOR_MEMORY"),
            "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TENSOR__MEMORY.html"
        );
    }

    #[test]
    fn appends_the_link_after_the_docs_and_adds_the_aliases() {
        let out = expand(
            quote!(cuMemAlloc),
            quote! {
                /// Allocates.
                #[inline]
                pub fn alloc() {}
            },
        )
        .unwrap();
        let expected = quote! {
            /// Allocates.
            #[inline]
            #[doc = ""]
            #[doc = " Wraps [`cuMemAlloc`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html)."]
            #[doc(alias = "cuMemAlloc")]
            #[doc(alias = "cuMemAlloc_v2")]
            pub fn alloc() {}
        };
        assert_eq!(out.to_string(), expected.to_string());
    }

    #[test]
    fn several_names_give_a_list() {
        let out = expand(
            quote!(cuFuncGetParamInfo, cuKernelGetParamInfo),
            quote!(
                fn f() {}
            ),
        )
        .unwrap()
        .to_string();
        assert!(out.contains(r#"" Wraps:""#), "{out}");
        assert!(
            out.contains("* [`cuFuncGetParamInfo`](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html)"),
            "{out}"
        );
        assert!(out.contains(r#"alias = "cuKernelGetParamInfo""#), "{out}");
    }

    #[test]
    fn unknown_and_missing_names_are_errors_naming_them() {
        let e = expand(
            quote!(cuMemalloc),
            quote!(
                fn f() {}
            ),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "`cuMemalloc` is not a function or type of cuda.h 13.0 (did you mean `cuMemAlloc`?)"
        );
        assert!(expand(
            quote!(),
            quote!(
                fn f() {}
            )
        )
        .is_err());
    }
}
