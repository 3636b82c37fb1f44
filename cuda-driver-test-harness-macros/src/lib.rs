//! The attributes of [`cuda-driver-test-harness`](../cuda_driver_test_harness/index.html),
//! re-exported there: use them through that crate.
//!
//! Their expansions name everything by its full path (`::core::compile_error!`,
//! `::cuda_driver_test_harness::inventory::submit!`), so that nothing the test's scope
//! defines changes what they do.

use proc_macro::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// Marks a GPU test: `#[gpu_test] fn name() { .. }`, in place of `#[test]`.
///
/// Keeps the function and registers it (with `inventory`) as a test named
/// `<module path without the crate>::<name>`, as libtest would name it. `#[cfg(..)]`
/// attributes of the function apply to the registration too.
#[proc_macro_attribute]
pub fn gpu_test(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_gpu_test(attr.into(), item.into()).into()
}

fn expand_gpu_test(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    if !attr.is_empty() {
        return quote_spanned!(attr.span()=>
            ::core::compile_error!("#[gpu_test] takes no arguments");
        );
    }
    let f = match syn::parse2::<syn::ItemFn>(item) {
        Ok(f) => f,
        Err(e) => return e.into_compile_error(),
    };
    let sig = &f.sig;
    if !sig.inputs.is_empty()
        || !matches!(sig.output, syn::ReturnType::Default)
        || !sig.generics.params.is_empty()
        || sig.asyncness.is_some()
        || sig.unsafety.is_some()
    {
        return quote_spanned!(sig.span()=>
            ::core::compile_error!("a #[gpu_test] is a plain `fn name()`: no arguments, no \
                                    return value, not async, not unsafe, not generic");
        );
    }
    let name = &sig.ident;
    let cfgs = f.attrs.iter().filter(|a| a.path().is_ident("cfg"));
    quote! {
        #f
        #(#cfgs)*
        ::cuda_driver_test_harness::inventory::submit! {
            ::cuda_driver_test_harness::Test::new(
                ::core::module_path!(),
                ::core::stringify!(#name),
                #name,
            )
        }
    }
}

/// Stands in for libtest's `#[test]` in the GPU test binaries, which run without libtest
/// (`harness = false` compiles `#[test]` functions out): a `#[test]` there would never run,
/// so it is a compile error that names the marker to use.
#[proc_macro_attribute]
pub fn test(_attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_test(item.into()).into()
}

fn expand_test(item: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    quote_spanned!(item.span()=>
        ::core::compile_error!("this test binary runs on cuda-driver-test-harness: mark the test \
                                #[gpu_test] instead of #[test] (a #[test] would never run)");
    )
}

#[cfg(test)]
mod tests {
    use super::{expand_gpu_test, expand_test};
    use proc_macro2::{Spacing, TokenTree};
    use quote::quote;

    /// The macros called in `out` by a path that does not start with `::`.
    fn relative_macro_paths(out: &proc_macro2::TokenStream) -> Vec<String> {
        fn walk(tokens: proc_macro2::TokenStream, found: &mut Vec<String>) {
            let t: Vec<TokenTree> = tokens.into_iter().collect();
            let punct = |j: usize, c: char, s: Spacing| match &t[j] {
                TokenTree::Punct(p) => p.as_char() == c && p.spacing() == s,
                _ => false,
            };
            // `::` ending just before `j`.
            let colons = |j: usize| {
                j >= 2 && punct(j - 2, ':', Spacing::Joint) && punct(j - 1, ':', Spacing::Alone)
            };
            for (i, tree) in t.iter().enumerate() {
                match tree {
                    TokenTree::Group(g) => walk(g.stream(), found),
                    TokenTree::Ident(_) if t.len() > i + 1 && punct(i + 1, '!', Spacing::Alone) => {
                        // Back to the path's first segment: `a::b::name`.
                        let mut start = i;
                        while colons(start)
                            && start >= 3
                            && matches!(t[start - 3], TokenTree::Ident(_))
                        {
                            start -= 3;
                        }
                        if !colons(start) {
                            found.push(t[start..=i].iter().map(ToString::to_string).collect());
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut found = Vec::new();
        walk(out.clone(), &mut found);
        found
    }

    #[test]
    fn the_checker_finds_relative_macro_paths() {
        let out = quote!(::core::assert!(a); assert!(b); inventory::submit! {} ::a::b!());
        assert_eq!(relative_macro_paths(&out), ["assert", "inventory::submit"]);
    }

    #[test]
    fn expansions_name_every_macro_by_its_full_path() {
        for out in [
            expand_gpu_test(
                quote!(),
                quote!(
                    fn name() {}
                ),
            ),
            expand_gpu_test(
                quote!(x),
                quote!(
                    fn name() {}
                ),
            ),
            expand_gpu_test(
                quote!(),
                quote!(
                    fn name(a: u32) {}
                ),
            ),
            expand_test(quote!(
                fn name() {}
            )),
        ] {
            assert!(out.to_string().contains(" ! "), "{out}");
            assert_eq!(relative_macro_paths(&out), Vec::<String>::new(), "{out}");
        }
    }
}
