//! `call!(..)`: a driver call that names itself in its error.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::quote;

use crate::wraps::lookup;

/// The driver functions an expression calls by path (`sys::cuX`, `newer::cuX`), in order, with
/// the span of each name and whether it is reached through `newer::`.
fn driver_names(tokens: TokenStream, out: &mut Vec<(String, Span, bool)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Group(g) => driver_names(g.stream(), out),
            TokenTree::Ident(id) => {
                let name = id.to_string();
                let after_path = i >= 2
                    && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == ':')
                    && matches!(&tokens[i - 2], TokenTree::Punct(p) if p.as_char() == ':');
                if after_path && name.starts_with("cu") {
                    let newer =
                        matches!(&tokens[i.saturating_sub(3)], TokenTree::Ident(m) if m == "newer");
                    out.push((name, id.span(), newer));
                }
            }
            _ => {}
        }
    }
}

/// The symbol the library exports for a name of cuda.h: `cuMemAlloc` is `cuMemAlloc_v2`
/// (the per-thread-stream variants `_ptsz`/`_ptds` are not the ones the bindings call).
pub fn symbol(name: &str) -> Option<String> {
    let entry = lookup(name)?;
    Some(
        entry
            .symbols
            .iter()
            .find(|s| !s.ends_with("_ptsz") && !s.ends_with("_ptds"))
            .map_or_else(|| name.to_string(), |s| (*s).to_string()),
    )
}

pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    // rustfmt lays a long call out like a function's arguments, with a trailing comma.
    let mut tokens: Vec<TokenTree> = input.into_iter().collect();
    if matches!(tokens.last(), Some(TokenTree::Punct(p)) if p.as_char() == ',') {
        tokens.pop();
    }
    let input: TokenStream = tokens.into_iter().collect();
    let mut names = Vec::new();
    driver_names(input.clone(), &mut names);
    let Some((first, span, newer)) = names.first().cloned() else {
        return Err(syn::Error::new(
            Span::call_site(),
            "call! needs a driver function called by path: \
             call!(unsafe { sys::cuMemFree(ptr) }) or call!(unsafe { newer::cuX()?(..) })",
        ));
    };
    if let Some((other, span, _)) = names.iter().find(|(n, _, _)| *n != first) {
        return Err(syn::Error::new(
            *span,
            format!("call! takes one driver call; `{first}` and `{other}` are two"),
        ));
    }
    // `newer::cuX_vN` names the symbol it resolves (`_v1`: the unversioned symbol), checked
    // against cuda.h's table by the entry-point unit tests; `sys::cuX` is cuda.h's name, which
    // stands for its newest symbol.
    let symbol = if newer {
        let base = first.strip_suffix("_v1").unwrap_or(&first);
        lookup(base).map(|_| base.to_string())
    } else {
        symbol(&first)
    }
    .ok_or_else(|| syn::Error::new(span, format!("`{first}` is not a function of cuda.h")))?;
    Ok(quote! { crate::error::check(#input, #symbol) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_comes_from_the_call_and_names_the_versioned_symbol() {
        let out = expand(quote! { unsafe { sys::cuMemAlloc(&mut p, n) } }).unwrap();
        assert!(out.to_string().contains("\"cuMemAlloc_v2\""), "{out}");
        let out = expand(quote! { unsafe { sys::cuLaunchKernel(f, 1) }, }).unwrap();
        assert!(out.to_string().contains("\"cuLaunchKernel\""), "{out}");
        let out = expand(quote! { unsafe { newer::cuCtxCreate_v4()?(a, b) } }).unwrap();
        assert!(out.to_string().contains("\"cuCtxCreate_v4\""), "{out}");
        let out = expand(quote! { unsafe { newer::cuGraphGetEdges_v1()?(a, b) } }).unwrap();
        assert!(out.to_string().contains("\"cuGraphGetEdges\""), "{out}");
        let out = expand(quote! { unsafe { sys::cuMemcpyDtoHAsync(a, b, n, s) } }).unwrap();
        assert!(
            out.to_string().contains("\"cuMemcpyDtoHAsync_v2\""),
            "{out}"
        );
    }

    #[test]
    fn no_call_or_two_calls_are_compile_errors() {
        assert!(expand(quote! { unsafe { f(a) } }).is_err());
        assert!(expand(quote! { unsafe { sys::cuMemFree(sys::cuMemAlloc(x)) } }).is_err());
        assert!(expand(quote! { unsafe { sys::cuNoSuchCall(x) } }).is_err());
    }
}
